# Layers the build enforces (docs/DESIGN.md §1 "Layers"): every folder of core/ and app/ is a static
# library `attnscope_<folder>` of its .cpp files, which links only to the folders below it. Its
# headers are reachable as "<folder>/x.h" only through its own include directory — a folder of the
# build tree holding one link, <folder> → the source folder — so a file can include a header of its
# own folder and of the folders it links to, and nothing else: an include that runs back up (or
# sideways) fails to compile, naming the file.
#
#   attnscope_layer(<folder> [DEPENDS <lower folder>…])
#
# DEPENDS are folders of the same tree (core's or app's) or of core (for app's layers); the links are
# PUBLIC, so what a layer may use is what its dependencies may use too.
function(attnscope_layer folder)
  cmake_parse_arguments(L "" "" "DEPENDS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cpp)
  set(target attnscope_${folder})
  add_library(${target} STATIC ${sources})
  set(include_dir ${CMAKE_CURRENT_BINARY_DIR}/layers/${folder})
  file(MAKE_DIRECTORY ${include_dir})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${folder} ${include_dir}/${folder} SYMBOLIC)
  target_include_directories(${target} PUBLIC ${include_dir})
  foreach(dependency ${L_DEPENDS})
    target_link_libraries(${target} PUBLIC attnscope_${dependency})
  endforeach()
  target_compile_options(${target} PRIVATE ${ATTNSCOPE_WARNINGS})
endfunction()
