# The packet playground (web/, docs/playground.md): when Emscripten is installed, the normal build
# configures a sub-build of the same sources with its toolchain and writes the page to
# <build>/playground/. Without Emscripten nothing happens (the rest of the build does not need it).
if(NOT ANDROMEDA_PLAYGROUND)
  return()
endif()
find_program(EMCMAKE emcmake)
set(ANDROMEDA_EMSCRIPTEN_TOOLCHAIN "/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake"
    CACHE FILEPATH "Emscripten's CMake toolchain file")
if(NOT EMCMAKE OR NOT EXISTS "${ANDROMEDA_EMSCRIPTEN_TOOLCHAIN}")
  message(STATUS "playground: Emscripten not found (Debian: emscripten); the page is not built")
  return()
endif()
include(ExternalProject)
ExternalProject_Add(playground
  SOURCE_DIR "${PROJECT_SOURCE_DIR}"
  BINARY_DIR "${CMAKE_BINARY_DIR}/playground-wasm"
  # MinSizeRel (-Os): what a web page wants, a smaller module (2.27 MB of JavaScript and
  # WebAssembly at -O3, 1.53 MB), and less to compile: the sub-build was a fifth of build/'s
  # compile time at -O3 (520 of 2,600 CPU seconds from cold), 430 at -Os.
  CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${ANDROMEDA_EMSCRIPTEN_TOOLCHAIN} -DCMAKE_BUILD_TYPE=MinSizeRel
             -DANDROMEDA_PLAYGROUND_OUT=${CMAKE_BINARY_DIR}/playground
  # Emscripten's JavaScript optimiser needs acorn: Debian's node-acorn, in /usr/share/nodejs.
  BUILD_COMMAND ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs ${CMAKE_COMMAND} --build .
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  USES_TERMINAL_BUILD ON)
set(ANDROMEDA_PLAYGROUND_PAGE "${CMAKE_BINARY_DIR}/playground/index.html")
