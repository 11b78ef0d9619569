# NCCL for the distributed layer's CUDA backend. Only looked for when the CUDA
# backend is on; linked PRIVATE into strata_distributed by the top-level
# CMakeLists.txt as the imported target strata::nccl (no public header includes
# nccl.h), which strataConfig.cmake defines again on the embedder's machine.
set(STRATA_HAVE_NCCL OFF)
if(STRATA_HAVE_CUDA)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  if(NOT NCCL_LIBRARY OR NOT NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "The CUDA backend is on but NCCL was not found (libnccl / nccl.h); install NCCL "
                        "(libnccl-dev or the CUDA toolkit's copy) or configure with STRATA_CUDA=OFF")
  endif()
  if(NOT TARGET strata::nccl)
    add_library(strata::nccl UNKNOWN IMPORTED)
    set_target_properties(strata::nccl PROPERTIES IMPORTED_LOCATION ${NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
  endif()
  set(STRATA_HAVE_NCCL ON)
  message(STATUS "NCCL: ${NCCL_LIBRARY} (headers ${NCCL_INCLUDE_DIR})")
endif()

# Links NCCL into <target> when the CUDA backend is on.
function(strata_link_nccl target)
  if(STRATA_HAVE_NCCL)
    target_link_libraries(${target} PRIVATE strata::nccl)
  endif()
endfunction()
