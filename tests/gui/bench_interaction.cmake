# `attnscope --bench-interaction`, a smoke test: the book example only, 5 edits,
# under xvfb-run; the JSON must have its keys and sane values (positive times, p50 ≤ p95 ≤ max, at
# least one frame per edit). No timing thresholds: the figures depend on the machine and its load.
# Included from tests/gui/CMakeLists.txt, where it registers the test; ctest runs this same file
# in script mode (cmake -P), which does the run and the checks.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME gui_bench_interaction
           COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:attnscope>
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/bench_interaction -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(gui_bench_interaction PROPERTIES LABELS gui TIMEOUT 180 RESOURCE_LOCK attnscope_gui)
  return()
endif()

# ---- script mode: -DAPP=attnscope -DWORK=folder -------------------------------------------------
function(fail message)
  message(FATAL_ERROR "gui_bench_interaction: ${message}")
endfunction()

find_program(XVFB_RUN xvfb-run)
if(NOT XVFB_RUN)
  fail("xvfb-run is not installed (Debian package xvfb)")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/home)
set(OUT ${WORK}/bench.json)
# A throw-away HOME: nothing of the user's state leaks in.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY HOME=${WORK}/home
          XDG_STATE_HOME=${WORK}/home/state XDG_CONFIG_HOME=${WORK}/home/config
          ${XVFB_RUN} -a -s "-screen 0 1600x1000x24"
          ${APP} --bench-interaction ${OUT} --bench-presets multihead --bench-edits 5
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 150)
if(NOT rc EQUAL 0)
  fail("exit ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT out MATCHES "^multihead: 5 edits, edit→frame p50 [0-9.]+ ms")
  fail("unexpected summary line: ${out}")
endif()
if(NOT EXISTS ${OUT})
  fail("${OUT} was not written")
endif()
file(READ ${OUT} json)

# Reads `path` (JSON keys) from the document into `var`, failing with the key when it is missing.
macro(get var)
  string(JSON ${var} ERROR_VARIABLE json_error GET "${json}" ${ARGN})
  if(json_error)
    fail("${ARGN}: ${json_error}")
  endif()
endmacro()
function(check condition_text)
  if(NOT (${ARGN}))
    fail("${condition_text}\n${json}")
  endif()
endfunction()

string(JSON configs LENGTH "${json}" configs)
check("one config" configs EQUAL 1)
get(preset configs 0 preset)
check("preset multihead" preset STREQUAL "multihead")
get(edits configs 0 edits)
check("5 edits" edits EQUAL 5)
get(tokens configs 0 tokens)
check("6 tokens" tokens EQUAL 6)
get(p50 configs 0 edit_to_frame_ms p50)
get(p95 configs 0 edit_to_frame_ms p95)
get(max configs 0 edit_to_frame_ms max)
check("p50 > 0" p50 GREATER 0)
check("p50 <= p95" p50 LESS_EQUAL p95)
check("p95 <= max" p95 LESS_EQUAL max)
get(f50 configs 0 frames_to_result p50)
get(fmax configs 0 frames_to_result max)
check("frames p50 >= 1" f50 GREATER_EQUAL 1)
check("frames p50 <= max" f50 LESS_EQUAL fmax)
get(fraction configs 0 next_frame_fraction)
check("0 <= next_frame_fraction <= 1" fraction GREATER_EQUAL 0 AND fraction LESS_EQUAL 1)
get(open_ms configs 0 open ms)
check("open ms > 0" open_ms GREATER 0)
get(peak configs 0 peak_rss_mb)
get(rss configs 0 rss_mb)
check("peak RSS > 0" peak GREATER 0)
check("RSS > 0 and <= peak" rss GREATER 0 AND rss LESS_EQUAL peak)
get(width window 0)
get(height window 1)
check("window 1600x1000" width EQUAL 1600 AND height EQUAL 1000)

# Bad use: one clear error line, exit code 2.
execute_process(COMMAND ${APP} --bench-interaction ${OUT} --bench-presets no_such_preset
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^error: --bench-presets: unknown preset 'no_such_preset'")
  fail("unknown preset: exit ${rc}, stderr: ${err}")
endif()
# The trained model's options (the model itself: tests/gui/test_model_view.py), refused before
# anything is opened.
execute_process(COMMAND ${APP} --bench-interaction ${OUT} --bench-tokens 64
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^error: --bench-tokens needs --model")
  fail("--bench-tokens without --model: exit ${rc}, stderr: ${err}")
endif()
execute_process(COMMAND ${APP} --bench-interaction ${OUT} --model ${WORK}/no-model --bench-presets multihead
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^error: --bench-interaction with --model times the model's text edits: --bench-presets")
  fail("--bench-presets with --model: exit ${rc}, stderr: ${err}")
endif()
execute_process(COMMAND ${APP} --model ${WORK}/no-model --bench-tokens 64
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 2 OR NOT err MATCHES "^error: --bench-tokens requires --bench-interaction")
  fail("--bench-tokens without --bench-interaction: exit ${rc}, stderr: ${err}")
endif()
message(STATUS "gui_bench_interaction: ok (p50 ${p50} ms, p95 ${p95} ms, ${f50} frames)")
