// Internal helpers shared by the MPI communicator files (not installed API).
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <string>

#include "core/communicator.h"

namespace strata::mpi_detail {

// Largest element count passed to one MPI call (MPI counts are int).
constexpr size_t kMaxCount = size_t{1} << 30;

// The MPI datatype for a non-half dtype (f32, f64, i32, i64, u8).
MPI_Datatype mpi_type(DType t);
// The custom 16-bit sum (FP32 add, rounded per step) for f16 or bf16.
MPI_Op half_sum_op(DType t);
std::string describe(const char* op, size_t count, DType dtype, const ReduceOp* rop = nullptr);
std::string error_string(int err);

// n elements of f16/bf16 <-> FP32.
void half_to_f32(DType t, const void* src, float* dst, size_t n);
void f32_to_half(DType t, const float* src, void* dst, size_t n);
// data[i] /= n in the dtype (f32, f64 or half via FP32).
void scale_by_inverse(void* data, size_t count, DType t, int n);

}  // namespace strata::mpi_detail
