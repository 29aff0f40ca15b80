# The header-only libraries the I/O-free code uses, for the Emscripten sub-build: Debian's own
# headers (nlohmann-json, toml11, fmt in header-only mode), staged in a directory of their own so
# the compiler never sees the host's libc headers beside them. Threads::Threads is empty: the
# module is single-threaded (std::mutex works without pthreads there).
set(ANDROMEDA_HOST_INCLUDE "/usr/include" CACHE PATH "where the host's nlohmann/, toml/ and fmt/ headers are")
set(staged "${CMAKE_BINARY_DIR}/host-headers")
file(MAKE_DIRECTORY "${staged}")
foreach(entry nlohmann toml toml.hpp fmt)
  if(NOT EXISTS "${ANDROMEDA_HOST_INCLUDE}/${entry}")
    message(FATAL_ERROR "the playground needs ${ANDROMEDA_HOST_INCLUDE}/${entry} "
                        "(Debian: nlohmann-json3-dev, libtoml11-dev, libfmt-dev; scripts/install-deps.sh)")
  endif()
  file(CREATE_LINK "${ANDROMEDA_HOST_INCLUDE}/${entry}" "${staged}/${entry}" SYMBOLIC)
endforeach()

add_library(andromeda_host_headers INTERFACE)
target_include_directories(andromeda_host_headers SYSTEM INTERFACE "${staged}")
foreach(name nlohmann_json::nlohmann_json toml11::toml11 fmt::fmt Threads::Threads)
  add_library(${name} ALIAS andromeda_host_headers)
endforeach()
target_compile_definitions(andromeda_host_headers INTERFACE FMT_HEADER_ONLY)

# C++ exceptions are off by default in Emscripten; the fabric loader and JSON need them.
add_compile_options(-fexceptions)
add_link_options(-fexceptions)
