# Every dependency comes from a Debian package installed by scripts/setup.sh.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(CURL REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(PkgConfig REQUIRED)
find_package(prometheus-cpp REQUIRED)  # Debian prometheus-cpp-dev: the optional metrics endpoint
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
if(NOT TARGET strata::xxhash)
  add_library(strata::xxhash INTERFACE IMPORTED)
  target_link_libraries(strata::xxhash INTERFACE PkgConfig::XXHASH)
endif()
# Image decoding (data/format/image_codec.cpp): libjpeg-turbo's TurboJPEG API
# (libturbojpeg0-dev) and libspng (libspng-dev); strata:: names, as for xxhash,
# so that the installed package's config can make them again.
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
# Compressed shard objects (data/format/shard_codec.cpp): libzstd (libzstd-dev) and
# LZ4's frame API (liblz4-dev).
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
foreach(_img turbojpeg spng zstd lz4)
  string(TOUPPER ${_img} _IMG)
  if(NOT TARGET strata::${_img})
    add_library(strata::${_img} INTERFACE IMPORTED)
    target_link_libraries(strata::${_img} INTERFACE PkgConfig::${_IMG})
  endif()
endforeach()
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_DEFINITIONS})
endif()
if(STRATA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(STRATA_BUILD_APPS)
  find_package(CLI11 2 CONFIG REQUIRED)  # the binaries' option parsing (libcli11-dev)
endif()

# GEMM provider of the CPU kernels, chosen by measurement (docs/kernels.md):
# openblas (default when found) or eigen.
set(STRATA_GEMM "openblas" CACHE STRING "CPU GEMM provider: openblas or eigen")
set_property(CACHE STRATA_GEMM PROPERTY STRINGS openblas eigen)
if(STRATA_GEMM STREQUAL "openblas")
  find_path(STRATA_OPENBLAS_INCLUDE_DIR cblas.h
    PATH_SUFFIXES openblas-pthread openblas-openmp openblas
    PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
  # BLAS::BLAS (FindBLAS), not the library's path: the exported targets name it, and
  # strataConfig.cmake finds it again on the embedder's machine.
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS)
  if(NOT STRATA_OPENBLAS_INCLUDE_DIR OR NOT TARGET BLAS::BLAS)
    message(WARNING "STRATA_GEMM=openblas but OpenBLAS (libopenblas-dev) was not found: using Eigen")
    set(STRATA_GEMM "eigen")
  endif()
elseif(NOT STRATA_GEMM STREQUAL "eigen")
  message(FATAL_ERROR "STRATA_GEMM must be openblas or eigen (got '${STRATA_GEMM}')")
endif()

# conv2d on the CPU through oneDNN (Debian libdnnl-dev, what PyTorch uses on CPUs;
# measured in docs/kernels.md): AUTO when found, ON requires it, OFF keeps the
# im2col + GEMM kernels alone. Found as a library and a header rather than by
# Debian's dnnl-config.cmake, which requires OpenCL's headers (only a Recommends
# of libdnnl-dev, and never used by the CPU primitives).
set(STRATA_DNNL "AUTO" CACHE STRING "CPU convolution through oneDNN (libdnnl-dev): AUTO, ON or OFF")
set_property(CACHE STRATA_DNNL PROPERTY STRINGS AUTO ON OFF)
if(NOT STRATA_DNNL MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_DNNL must be AUTO, ON or OFF (got '${STRATA_DNNL}')")
endif()
set(STRATA_HAVE_DNNL OFF)
if(NOT STRATA_DNNL STREQUAL "OFF")
  find_path(STRATA_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  find_library(STRATA_DNNL_LIBRARY dnnl)
  if(STRATA_DNNL_INCLUDE_DIR AND STRATA_DNNL_LIBRARY)
    set(STRATA_HAVE_DNNL ON)
    if(NOT TARGET strata::dnnl)
      add_library(strata::dnnl UNKNOWN IMPORTED)
      set_target_properties(strata::dnnl PROPERTIES IMPORTED_LOCATION "${STRATA_DNNL_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${STRATA_DNNL_INCLUDE_DIR}")
    endif()
  elseif(STRATA_DNNL STREQUAL "ON")
    message(FATAL_ERROR "STRATA_DNNL=ON but oneDNN was not found (Debian: libdnnl-dev)")
  endif()
endif()
