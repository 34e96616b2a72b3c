# Teaching, files and slides (issues 4 and 5): the desktop app driven by --commands (and by xdotool
# where the point is the mouse or a key) and
# read back through --dump-layout; screenshots checked for size, theme and the carried workspace.
# Included from tests/gui/CMakeLists.txt.
add_test(NAME gui_teaching
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_teaching.py
                 --app $<TARGET_FILE:attnscope> --cli $<TARGET_FILE:attnscope-cli>
                 --presets ${PROJECT_SOURCE_DIR}/assets/presets)
set_tests_properties(gui_teaching PROPERTIES LABELS gui TIMEOUT 240)

add_test(NAME gui_files_and_slides
         COMMAND ${ATTNSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/test_files_and_slides.py
                 --app $<TARGET_FILE:attnscope> --cli $<TARGET_FILE:attnscope-cli>
                 --presets ${PROJECT_SOURCE_DIR}/assets/presets)
set_tests_properties(gui_files_and_slides PROPERTIES LABELS gui TIMEOUT 240)
