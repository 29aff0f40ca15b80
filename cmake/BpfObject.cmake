# andromeda_bpf_object(NAME SOURCE...)
# Compiles each SOURCE (one entry file per attach point, and the one that defines the load-time
# constants) with clang -target bpf, links them into one NAME.bpf.o with `bpftool gen object`
# and generates NAME.skel.h with `bpftool gen skeleton`. Every header under the calling
# directory and shared/ is a dependency. Defines the INTERFACE target NAME_skel: link it to
# include the skeleton (and libbpf).
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

execute_process(COMMAND uname -m OUTPUT_VARIABLE ANDROMEDA_UNAME_M OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE ANDROMEDA_MULTIARCH
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ANDROMEDA_MULTIARCH)
  set(ANDROMEDA_MULTIARCH "${ANDROMEDA_UNAME_M}-linux-gnu")
endif()

function(andromeda_bpf_object name)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR})
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  file(GLOB_RECURSE bpf_headers ${CMAKE_CURRENT_SOURCE_DIR}/*.h ${PROJECT_SOURCE_DIR}/shared/*.h)
  set(unit_objects)
  foreach(source ${ARGN})
    get_filename_component(src_abs ${source} ABSOLUTE)
    get_filename_component(unit ${source} NAME_WE)
    set(unit_obj ${out_dir}/${name}.${unit}.o)
    add_custom_command(
      OUTPUT ${unit_obj}
      COMMAND ${BPF_CLANG} -g -O2 -target bpf -Wall -Werror
              -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/shared -I/usr/include/${ANDROMEDA_MULTIARCH}
              -c ${src_abs} -o ${unit_obj}
      DEPENDS ${src_abs} ${bpf_headers}
      COMMENT "BPF ${unit}.bpf.c"
      VERBATIM)
    list(APPEND unit_objects ${unit_obj})
  endforeach()
  # One object, one set of maps: the units' maps are __weak definitions of the same map, which
  # the BPF linker merges into one.
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${BPFTOOL} gen object ${obj} ${unit_objects}
    DEPENDS ${unit_objects}
    COMMENT "BPF ${name}.bpf.o (linked)"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${skel}.tmp ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir} ${PROJECT_SOURCE_DIR}/shared)
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
