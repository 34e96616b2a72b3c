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
  attnscope_precompiled_headers(${target} code)
endfunction()

# Precompiled headers (ATTNSCOPE_PCH, CMakeLists.txt). GCC takes them only from a file compiled with
# the same flags and macros, so each group of targets built alike has its own: a translation unit of
# nothing but the headers (attnscope_pch_<group>), whose copy the group's targets reuse. A group names
# what its targets all get: OPTIONS, LIBRARIES (for their usage requirements), DEFINITIONS, and
# HEADERS beyond ATTNSCOPE_PCH_HEADERS.
#
#   attnscope_pch_group(<group> [OPTIONS …] [LIBRARIES …] [DEFINITIONS …] [HEADERS …])
#   attnscope_precompiled_headers(<target> <group>)
function(attnscope_pch_group group)
  if(NOT ATTNSCOPE_PCH)
    return()
  endif()
  cmake_parse_arguments(G "" "" "OPTIONS;LIBRARIES;DEFINITIONS;HEADERS" ${ARGN})
  set(source ${PROJECT_BINARY_DIR}/pch/${group}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "// The precompiled headers of the group ${group} (cmake/AttnscopeLayers.cmake).\n")
  add_library(attnscope_pch_${group} OBJECT ${source})
  target_compile_options(attnscope_pch_${group} PRIVATE ${G_OPTIONS})
  target_compile_definitions(attnscope_pch_${group} PRIVATE ${G_DEFINITIONS})
  target_link_libraries(attnscope_pch_${group} PRIVATE ${G_LIBRARIES})
  target_precompile_headers(attnscope_pch_${group} PRIVATE ${ATTNSCOPE_PCH_HEADERS} ${G_HEADERS})
endfunction()

function(attnscope_precompiled_headers target group)
  if(ATTNSCOPE_PCH)
    # The property, not target_precompile_headers(REUSE_FROM), which wants the group made first:
    # the layers are declared before the libraries their group's flags come from.
    set_property(TARGET ${target} PROPERTY PRECOMPILE_HEADERS_REUSE_FROM attnscope_pch_${group})
  endif()
endfunction()
