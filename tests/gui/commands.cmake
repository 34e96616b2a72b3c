# `attnscope --commands` (scripted runs): the reproductions of the crash when the token count went
# down, refused commands and bad command files (test_commands.py); and a seeded random stream of
# 2,000 commands in one run, checked for crashes, sanitizer reports, stray stderr lines and the
# final maps' shapes (test_command_stream.py). Included from tests/gui/CMakeLists.txt.
add_test(NAME gui_commands
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_commands.py
                 --app $<TARGET_FILE:attnscope> --cli $<TARGET_FILE:attnscope-cli>
                 --presets ${PROJECT_SOURCE_DIR}/assets/presets)
set_tests_properties(gui_commands PROPERTIES LABELS gui TIMEOUT 180)

add_test(NAME gui_commands_stream
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_command_stream.py
                 --app $<TARGET_FILE:attnscope> --cli $<TARGET_FILE:attnscope-cli>
                 --presets ${PROJECT_SOURCE_DIR}/assets/presets --seed 1 --count 2000 --timeout 280)
set_tests_properties(gui_commands_stream PROPERTIES LABELS gui TIMEOUT 300)
