// STRATA_HD marks a function callable from host code and from CUDA device code
// (__host__ __device__ under nvcc, nothing elsewhere): what lets one definition
// of a conversion or a formula serve the CPU kernels, the CUDA kernels and the
// host tests that run the CUDA kernels' code.
#pragma once

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif
