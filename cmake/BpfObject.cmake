# andromeda_bpf_object(NAME SOURCE)
# Compiles SOURCE with clang -target bpf into NAME.bpf.o (rebuilt when any header of SOURCE's
# folder or of shared/ changes) and generates NAME.skel.h with
# `bpftool gen skeleton`. Defines the INTERFACE target NAME_skel: link it to include the skeleton
# (and libbpf).
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

execute_process(COMMAND uname -m OUTPUT_VARIABLE ANDROMEDA_UNAME_M OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE ANDROMEDA_MULTIARCH
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ANDROMEDA_MULTIARCH)
  set(ANDROMEDA_MULTIARCH "${ANDROMEDA_UNAME_M}-linux-gnu")
endif()

function(andromeda_bpf_object name source)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR})
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  get_filename_component(src_abs ${source} ABSOLUTE)
  get_filename_component(src_dir ${src_abs} DIRECTORY)
  file(GLOB bpf_headers ${src_dir}/*.h ${PROJECT_SOURCE_DIR}/shared/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -Wall -Werror
            -I${src_dir} -I${PROJECT_SOURCE_DIR}/shared -I/usr/include/${ANDROMEDA_MULTIARCH}
            -c ${src_abs} -o ${obj}
    DEPENDS ${src_abs} ${bpf_headers}
    COMMENT "BPF ${name}.bpf.o"
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
