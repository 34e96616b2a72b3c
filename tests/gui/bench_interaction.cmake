# `attnscope --bench-interaction`, a smoke test: the book example only, 5 edits, then --bench-learn's
# frames while a model trains, briefly, under xvfb-run; the JSON must have its keys and sane values
# (positive times, p50 ≤ p95 ≤ max, at least one frame per edit, frames and steps counted), and bad
# option combinations give one error line, exit 2. No timing thresholds: the figures depend on the
# machine and its load.
# Included from tests/gui/CMakeLists.txt, where it registers the test; ctest runs this same file
# in script mode (cmake -P), which does the run and the checks.
if(NOT CMAKE_SCRIPT_MODE_FILE)
  add_test(NAME gui_bench_interaction
           COMMAND ${CMAKE_COMMAND} -DAPP=$<TARGET_FILE:attnscope>
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/bench_interaction -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(gui_bench_interaction PROPERTIES LABELS gui TIMEOUT 180)
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

# ---- --bench-learn: the frames drawn while the default induction task trains (docs/DESIGN.md §3.9),
# briefly (the Learn tab 1 s, each other tab 0.3 s): every tab recorded, frames and steps counted.
set(TASK ${WORK}/induction.json)
file(WRITE ${TASK} "{\"task\": \"induction\"}\n")
set(LEARN_OUT ${WORK}/learn.json)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY HOME=${WORK}/home
          XDG_STATE_HOME=${WORK}/home/state XDG_CONFIG_HOME=${WORK}/home/config
          ${XVFB_RUN} -a -s "-screen 0 1600x1000x24"
          ${APP} --bench-interaction ${LEARN_OUT} --bench-learn ${TASK} --bench-seconds 1 --size 1280x800
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  fail("--bench-learn: exit ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT out MATCHES "^learn induction at 1280x800: learn [0-9.]+ fps \\(interval p50 [0-9.]+ ms")
  fail("--bench-learn: unexpected summary line: ${out}")
endif()
file(READ ${LEARN_OUT} json)
get(mode mode)
check("mode learn" mode STREQUAL "learn")
get(task task task)
check("the induction task" task STREQUAL "induction")
get(width window 0)
get(height window 1)
check("window 1280x800" width EQUAL 1280 AND height EQUAL 800)
string(JSON tab_count LENGTH "${json}" tab_order)
check("four tabs recorded" tab_count EQUAL 4)
foreach(tab learn layers heatmaps lines)
  get(frames tabs ${tab} frames)
  get(fps tabs ${tab} fps)
  get(seconds tabs ${tab} seconds)
  check("${tab}: frames > 0, fps > 0, seconds > 0" frames GREATER 0 AND fps GREATER 0 AND seconds GREATER 0)
  get(i50 tabs ${tab} interval_ms p50)
  get(i95 tabs ${tab} interval_ms p95)
  get(imax tabs ${tab} interval_ms max)
  check("${tab}: 0 < interval p50 <= p95 <= max" i50 GREATER 0 AND i50 LESS_EQUAL i95 AND i95 LESS_EQUAL imax)
  get(d50 tabs ${tab} draw_ms p50)
  get(d95 tabs ${tab} draw_ms p95)
  check("${tab}: 0 < draw p50 <= p95 <= interval max" d50 GREATER 0 AND d50 LESS_EQUAL d95 AND d95 LESS_EQUAL imax)
  get(tab_steps tabs ${tab} steps)
  check("${tab}: steps >= 0" tab_steps GREATER_EQUAL 0)
endforeach()
get(learn_frames tabs learn frames)
get(learn_fps tabs learn fps)
get(steps steps)
get(steps_per_s steps_per_s)
check("steps > 0 and steps/s > 0" steps GREATER 0 AND steps_per_s GREATER 0)

# Bad use of the learn mode: one error line, exit 2, before a window opens.
function(refused what expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  if(NOT rc EQUAL 2 OR NOT lines EQUAL 1 OR NOT err MATCHES "^error: ${expected}")
    fail("${what}: exit ${rc}, stderr: ${err}")
  endif()
endfunction()
refused("--bench-learn with --model" "--bench-learn records the frames drawn while a model trains, with no edits: --model"
        ${APP} --bench-interaction ${LEARN_OUT} --bench-learn ${TASK} --model ${WORK}/no-model)
refused("--bench-learn with --bench-presets" "--bench-learn records .* --bench-presets does not combine"
        ${APP} --bench-interaction ${LEARN_OUT} --bench-learn ${TASK} --bench-presets multihead)
refused("--bench-learn without --bench-interaction" "--bench-learn requires --bench-interaction"
        ${APP} --bench-learn ${TASK})
refused("--bench-seconds without --bench-learn" "--bench-seconds requires --bench-learn"
        ${APP} --bench-interaction ${LEARN_OUT} --bench-seconds 5)
file(WRITE ${WORK}/bad-task.json "{\"task\": \"induction\", \"heads\": 0}\n")
refused("a TASK the parser refuses" "--bench-learn: ${WORK}/bad-task.json: task.heads"
        ${APP} --bench-interaction ${LEARN_OUT} --bench-learn ${WORK}/bad-task.json)
message(STATUS "gui_bench_interaction: ok (p50 ${p50} ms, p95 ${p95} ms, ${f50} frames; learning: "
               "${learn_frames} frames on the Learn tab, ${learn_fps} fps, ${steps_per_s} steps/s)")
