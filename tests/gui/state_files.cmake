# The app's state files and file writes under failure (test_state_files.py): state files with
# fields of the wrong type and file names that are not UTF-8 start normally; a killed --open
# session's unsaved edits are recovered, another document's autosave and a damaged one are kept
# aside; save_pytorch escapes the file name; failed screenshots give one error line (also under the
# sanitizer build when build-asan/attnscope exists); FIFOs fail at once; saves are atomic (long
# names, symlinks, permissions, failures). Included from tests/gui/CMakeLists.txt.
add_test(NAME gui_state_files
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_state_files.py
                 --app $<TARGET_FILE:attnscope> --cli $<TARGET_FILE:attnscope-cli>
                 --asan-app ${PROJECT_SOURCE_DIR}/build-asan/attnscope)
set_tests_properties(gui_state_files PROPERTIES LABELS gui TIMEOUT 180)
