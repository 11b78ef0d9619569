# Compiler cache: a rebuild of unchanged sources (a second build directory, a
# fresh clone on the same machine, a CI run after a local one) costs a cache
# look-up instead of a compile. CI builds the tree four times (Release with CUDA,
# the sanitizer build, the GPU bundle, the embedding example); on two cores
# the compiles are most of its time.
#   STRATA_CCACHE=AUTO|ON|OFF   (AUTO: when ccache is installed)
# CCACHE_BASEDIR rewrites absolute paths under the source tree to relative ones
# and CCACHE_NOHASHDIR leaves the working directory out of the hash, so two
# checkouts in different folders share hits (debug info then names the first
# checkout's paths, which only a debugger would notice).
set(STRATA_CCACHE "AUTO" CACHE STRING "Compile through ccache: AUTO, ON or OFF")
set_property(CACHE STRATA_CCACHE PROPERTY STRINGS AUTO ON OFF)
set(STRATA_HAVE_CCACHE OFF)
if(NOT STRATA_CCACHE STREQUAL "OFF")
  find_program(STRATA_CCACHE_PROGRAM ccache)
  if(STRATA_CCACHE_PROGRAM)
    set(_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                  ${STRATA_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_launcher})
    set(STRATA_HAVE_CCACHE ON)
  elseif(STRATA_CCACHE STREQUAL "ON")
    message(FATAL_ERROR "STRATA_CCACHE=ON but ccache was not found (apt-get install ccache)")
  endif()
endif()
