#include "distributed/mpi_detail.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "base/error.h"
#include "kernels/runtime/half.h"

namespace strata::mpi_detail {
namespace {

// inout = round16(float(in) + float(inout)), in blocks through the vectorised bulk
// conversions (kernels/runtime/half.h).
template <bool BF16>
void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  constexpr int kBlock = 1024;
  float a[kBlock], b[kBlock];
  auto* x = static_cast<const uint16_t*>(in);
  auto* y = static_cast<uint16_t*>(inout);
  for (int off = 0; off < *len; off += kBlock) {
    size_t n = static_cast<size_t>(std::min(kBlock, *len - off));
    if (BF16) {
      bf16_to_f32(x + off, a, n);
      bf16_to_f32(y + off, b, n);
    } else {
      f16_to_f32(x + off, a, n);
      f16_to_f32(y + off, b, n);
    }
    for (size_t i = 0; i < n; ++i) b[i] += a[i];
    if (BF16)
      f32_to_bf16(b, y + off, n);
    else
      f32_to_f16(b, y + off, n);
  }
}

}  // namespace

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::u8:
      return MPI_UINT8_T;
    case DType::u16:
      return MPI_UINT16_T;
    case DType::f16:
    case DType::bf16:
      break;
  }
  throw CommError(std::string("no MPI datatype for ") + dtype_name(t));
}

MPI_Op half_sum_op(DType t) {
  // Created once after MPI_Init; freed by MPI_Finalize.
  static MPI_Op f16 = MPI_OP_NULL, bf16 = MPI_OP_NULL;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&half_sum<false>, 1, &f16);
    MPI_Op_create(&half_sum<true>, 1, &bf16);
  });
  return t == DType::f16 ? f16 : bf16;
}

std::string describe(const char* op, size_t count, DType dtype, const ReduceOp* rop) {
  std::string s = std::string(op) + " " + dtype_name(dtype);
  if (rop) s += *rop == ReduceOp::sum ? " sum" : " avg";
  return s + " count=" + std::to_string(count);
}

std::string error_string(int err) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(err);
  return std::string(buf, static_cast<size_t>(len));
}

void half_to_f32(DType t, const void* src, float* dst, size_t n) {
  if (t == DType::f16)
    f16_to_f32(static_cast<const uint16_t*>(src), dst, n);
  else
    bf16_to_f32(static_cast<const uint16_t*>(src), dst, n);
}

void f32_to_half(DType t, const float* src, void* dst, size_t n) {
  if (t == DType::f16)
    f32_to_f16(src, static_cast<uint16_t*>(dst), n);
  else
    f32_to_bf16(src, static_cast<uint16_t*>(dst), n);
}

void scale_by_inverse(void* data, size_t count, DType t, int n) {
  switch (t) {
    case DType::f32: {
      float s = 1.0f / static_cast<float>(n);
      auto* p = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) p[i] *= s;
      return;
    }
    case DType::f64: {
      double s = 1.0 / n;
      auto* p = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) p[i] *= s;
      return;
    }
    case DType::f16:
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(data);
      float s = 1.0f / static_cast<float>(n);
      bool h = t == DType::f16;
      for (size_t i = 0; i < count; ++i)
        p[i] = h ? float_to_f16_bits(f16_bits_to_float(p[i]) * s)
                 : float_to_bf16_bits(bf16_bits_to_float(p[i]) * s);
      return;
    }
    default:
      throw CommError(std::string("avg is defined for floating dtypes only, not ") + dtype_name(t));
  }
}

}  // namespace strata::mpi_detail
