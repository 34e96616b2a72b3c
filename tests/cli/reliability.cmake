# Reliability regressions of attnscope-cli (test_reliability.py): file names cannot inject code
# into `pytorch` scripts, FIFOs fail at once, damaged PNGs give one message of ours (no libpng
# lines), huge PNGs are read from their chunks (no pixel decoding, big workspace chunks), and
# `export` writes atomically (symlinks, permissions, failures). Included from tests/cli/CMakeLists.txt.
add_test(NAME cli_reliability
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_reliability.py
                 $<TARGET_FILE:attnscope-cli> ${PROJECT_SOURCE_DIR}/assets)
set_tests_properties(cli_reliability PROPERTIES LABELS cli TIMEOUT 180)
