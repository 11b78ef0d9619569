# NCCL for the distributed layer's CUDA backend. Only looked for when the CUDA
# backend is on; linked into strata_distributed by the top-level CMakeLists.txt
# (by path, so that the installed export needs no extra find module).
set(STRATA_HAVE_NCCL OFF)
if(STRATA_HAVE_CUDA)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  if(NOT NCCL_LIBRARY OR NOT NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "The CUDA backend is on but NCCL was not found (libnccl / nccl.h); install NCCL "
                        "(libnccl-dev or the CUDA toolkit's copy) or configure with STRATA_CUDA=OFF")
  endif()
  set(STRATA_HAVE_NCCL ON)
  message(STATUS "NCCL: ${NCCL_LIBRARY} (headers ${NCCL_INCLUDE_DIR})")
endif()

# Links NCCL into <target> when the CUDA backend is on.
function(strata_link_nccl target)
  if(STRATA_HAVE_NCCL)
    target_include_directories(${target} PRIVATE ${NCCL_INCLUDE_DIR})
    target_link_libraries(${target} PUBLIC ${NCCL_LIBRARY})
  endif()
endfunction()
