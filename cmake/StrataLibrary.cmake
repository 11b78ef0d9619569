# One copy of the CUDA kernels in a shared libstrata_kernels.so instead of one per
# test binary: what keeps the GPU bundle small (scripts/gpu-bundle.sh).
option(STRATA_SHARED_LIBS "Build the strata layer libraries as shared libraries" OFF)
if(STRATA_SHARED_LIBS)
  set(STRATA_LIBRARY_TYPE SHARED)
else()
  set(STRATA_LIBRARY_TYPE STATIC)
endif()

# Include directories of every layer. The sources include "core/tensor.h" from the
# source root. Installed, the headers sit in <prefix>/include/strata/<layer>/: an
# embedder writes <strata/core/tensor.h> (found from <prefix>/include), and the
# headers' own "core/..." includes resolve from <prefix>/include/strata.
set(_strata_include_dirs
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:include> $<INSTALL_INTERFACE:include/strata>)

# strata_add_library(<layer> DIR <dir> [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Builds library strata_<layer> (static; shared with STRATA_SHARED_LIBS=ON) from every .cpp under <dir> (and .cu files
# under <dir>/cuda when the CUDA backend is on).
function(strata_add_library layer)
  cmake_parse_arguments(A "" "DIR" "PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB_RECURSE _src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${A_DIR}/*.cpp)
  list(FILTER _src EXCLUDE REGEX "/cuda(_stub)?/")
  if(STRATA_HAVE_CUDA)
    file(GLOB_RECURSE _cu CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${A_DIR}/cuda/*.cu ${PROJECT_SOURCE_DIR}/${A_DIR}/cuda/*.cpp)
  else()
    file(GLOB_RECURSE _cu CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${A_DIR}/cuda_stub/*.cpp)
  endif()
  list(APPEND _src ${_cu})
  set(t strata_${layer})
  if(_src)
    add_library(${t} ${STRATA_LIBRARY_TYPE} ${_src})
    target_include_directories(${t} PUBLIC ${_strata_include_dirs})
    target_link_libraries(${t} PUBLIC ${A_PUBLIC_DEPS} PRIVATE ${A_PRIVATE_DEPS} strata_options)
  else()
    add_library(${t} INTERFACE)
    target_include_directories(${t} INTERFACE ${_strata_include_dirs})
    target_link_libraries(${t} INTERFACE ${A_PUBLIC_DEPS})
  endif()
  if(STRATA_HAVE_CUDA AND _cu AND IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${A_DIR}/cuda)
    target_compile_definitions(${t} PUBLIC STRATA_HAVE_CUDA=1)
    target_link_libraries(${t} PUBLIC CUDA::cudart CUDA::cublasLt CUDA::cublas CUDA::cudnn CUDA::nvtx3)
    set_target_properties(${t} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  add_library(strata::${layer} ALIAS ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${layer})  # installed as strata::<layer> too
  set_property(GLOBAL APPEND PROPERTY STRATA_LAYER_TARGETS ${t})
  set_property(GLOBAL APPEND PROPERTY STRATA_LAYER_DIRS ${A_DIR})
endfunction()
