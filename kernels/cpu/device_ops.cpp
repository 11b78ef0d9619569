// CPU device ops (kernels/device_ops.h): fill, convert, strided and host copies,
// axpy and scale. Streaming loops over host memory; the f32 and half cases take
// dedicated loops (the bulk F16C converters of kernels/runtime/half.h), other dtypes go
// through one element switch. Work above detail::kGrain elements is split over
// the thread pool; element order never changes a result, so the split does not
// either.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/device_elements.h"
#include "kernels/device_ops_backends.h"
#include "kernels/pixel_math.h"
#include "kernels/runtime/parallel.h"

namespace strata::cpu_dev {
using namespace detail;

namespace {

template <typename T>
void fill_typed(T* p, int64_t n, T v) {
  parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) p[i] = v;
  });
}

// Converts [s, e) of n contiguous elements between dtypes.
void convert_range(const void* src, DType st, void* dst, DType dt, int64_t s, int64_t e) {
  const size_t n = static_cast<size_t>(e - s);
  auto* s16 = static_cast<const uint16_t*>(src) + s;
  auto* d16 = static_cast<uint16_t*>(dst) + s;
  auto* s32 = static_cast<const float*>(src) + s;
  auto* d32 = static_cast<float*>(dst) + s;
  if (st == DType::f16 && dt == DType::f32) return f16_to_f32(s16, d32, n);
  if (st == DType::bf16 && dt == DType::f32) return bf16_to_f32(s16, d32, n);
  if (st == DType::f32 && dt == DType::f16) return f32_to_f16(s32, d16, n);
  if (st == DType::f32 && dt == DType::bf16) return f32_to_bf16(s32, d16, n);
  for (int64_t i = s; i < e; ++i) store(dst, dt, i, load(src, st, i));
}

}  // namespace

void fill(const TensorView& dst, double value) {
  const int64_t n = dst.numel();
  switch (dst.dtype) {
    case DType::f32:
      return fill_typed(dst.as<float>(), n, static_cast<float>(value));
    case DType::f64:
      return fill_typed(dst.as<double>(), n, value);
    case DType::f16:
      return fill_typed(dst.as<uint16_t>(), n, float_to_f16_bits(static_cast<float>(value)));
    case DType::bf16:
      return fill_typed(dst.as<uint16_t>(), n, float_to_bf16_bits(static_cast<float>(value)));
    case DType::i32:
      return fill_typed(dst.as<int32_t>(), n, static_cast<int32_t>(value));
    case DType::i64:
      return fill_typed(dst.as<int64_t>(), n, static_cast<int64_t>(value));
    case DType::u8:
      return fill_typed(dst.as<uint8_t>(), n, static_cast<uint8_t>(value));
    case DType::u16:
      return fill_typed(dst.as<uint16_t>(), n, static_cast<uint16_t>(value));
  }
}

void convert(const TensorView& src, const TensorView& dst) {
  require(src.numel() == dst.numel(), "convert",
          "source " + describe(src) + " and destination " + describe(dst) + " differ in element count");
  const int64_t n = src.numel();
  if (n == 0) return;
  if (src.dtype == dst.dtype) {
    if (src.data != dst.data) std::memcpy(dst.data, src.data, src.bytes());
    return;
  }
  parallel_for(n, kGrain * 4,
               [&](int64_t s, int64_t e) { convert_range(src.data, src.dtype, dst.data, dst.dtype, s, e); });
}

void strided_copy(const TensorView& src, const std::vector<int64_t>& strides, const TensorView& dst) {
  require(src.dtype == dst.dtype && src.numel() == dst.numel(), "strided_copy",
          "source " + describe(src) + " and destination " + describe(dst) + " must match in dtype and count");
  require(strides.size() == src.shape.size(), "strided_copy",
          std::to_string(strides.size()) + " strides for shape " + shape_str(src.shape));
  const int64_t n = dst.numel();
  if (n == 0) return;
  const size_t es = dtype_size(src.dtype);
  const auto* from = static_cast<const char*>(src.data);
  auto* to = static_cast<char*>(dst.data);
  if (src.shape.empty()) {
    std::memcpy(to, from, es);
    return;
  }
  // Rows along the innermost dimension: each output row starts at the offset of
  // its outer multi-index and steps by the innermost stride.
  const size_t rank = src.shape.size();
  const int64_t inner = src.shape[rank - 1], inner_stride = strides[rank - 1];
  const int64_t rows = n / inner;
  parallel_for(rows, (kGrain + inner - 1) / inner, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rem = r, off = 0;
      for (size_t d = rank - 1; d-- > 0;) {
        off += (rem % src.shape[d]) * strides[d];
        rem /= src.shape[d];
      }
      const char* s = from + off * static_cast<int64_t>(es);
      char* o = to + r * inner * static_cast<int64_t>(es);
      if (inner_stride == 1) {
        std::memcpy(o, s, static_cast<size_t>(inner) * es);
      } else {
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(o + i * static_cast<int64_t>(es), s + i * inner_stride * static_cast<int64_t>(es), es);
      }
    }
  });
}

void copy(const TensorView& src, const TensorView& dst) {
  require(
      src.device == Device::cpu && dst.device == Device::cpu, "copy",
      std::string("host copy asked to move ") + device_name(src.device) + " -> " + device_name(dst.device));
  require(src.dtype == dst.dtype && src.numel() == dst.numel(), "copy",
          "source " + describe(src) + " and destination " + describe(dst) + " must match in dtype and count");
  if (src.bytes() && src.data != dst.data) std::memcpy(dst.data, src.data, src.bytes());
}

void axpy(double alpha, const TensorView& x, const TensorView& y) {
  require(x.numel() == y.numel(), "axpy", "x " + describe(x) + " and y " + describe(y) + " differ in count");
  require(is_floating(x.dtype) && is_floating(y.dtype), "axpy",
          "x " + describe(x) + " and y " + describe(y) + " must be floating");
  const int64_t n = y.numel();
  if (y.dtype == DType::f64) {
    double* py = y.as<double>();
    parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) py[i] += alpha * load(x.data, x.dtype, i);
    });
    return;
  }
  const float a = static_cast<float>(alpha);
  if (y.dtype == DType::f32 && x.dtype == DType::f32) {
    float* py = y.as<float>();
    const float* px = x.as<float>();
    if (a == 1.0f) {  // gradient accumulation: a plain sum
      parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) py[i] += px[i];
      });
    } else {
      parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) py[i] += a * px[i];
      });
    }
    return;
  }
  parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      float xv = static_cast<float>(load(x.data, x.dtype, i));
      store_float(y.data, y.dtype, i, load_float(y.data, y.dtype, i) + a * xv);
    }
  });
}

void scale(const TensorView& x, double s) {
  require(is_floating(x.dtype), "scale", describe(x) + " is not floating");
  const int64_t n = x.numel();
  if (x.dtype == DType::f64) {
    double* p = x.as<double>();
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] *= s;
    });
    return;
  }
  const float f = static_cast<float>(s);
  if (x.dtype == DType::f32) {
    float* p = x.as<float>();
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] *= f;
    });
    return;
  }
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) store_float(x.data, x.dtype, i, load_float(x.data, x.dtype, i) * f);
  });
}

// Rows of one channel each ((B, C, ...) -> B * C rows; B rows for one mean/std), as the loader's
// FieldTransform walks a sample: a multiply-add per element the compiler vectorises.
void normalize_u8(const TensorView& src, const TensorView& dst, const float* mean, const float* std,
                  size_t channels) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const int64_t rows = channels > 1 ? src.shape[0] * src.shape[1] : src.shape.empty() ? 1 : src.shape[0];
  const int64_t per_row = n / rows;
  const auto* in = src.as<uint8_t>();
  const DType dt = dst.dtype;
  parallel_for(rows, (kGrain + per_row - 1) / per_row, [&](int64_t r0, int64_t r1) {
    constexpr int64_t kChunk = 1024;
    float chunk[kChunk];  // a half dst: a run of f32 values, then convert's bulk rounding
    for (int64_t r = r0; r < r1; ++r) {
      const size_t c = channels > 1 ? static_cast<size_t>(r) % channels : 0;
      const float a = math::u8_scale(mean[c], std[c]), b = math::u8_bias(mean[c], std[c]);
      const uint8_t* __restrict x = in + r * per_row;
      if (dt == DType::f32) {
        float* __restrict o = dst.as<float>() + r * per_row;
        for (int64_t i = 0; i < per_row; ++i) o[i] = math::normalize_u8(x[i], a, b);
        continue;
      }
      uint16_t* o = dst.as<uint16_t>() + r * per_row;
      for (int64_t i0 = 0; i0 < per_row; i0 += kChunk) {
        const int64_t m = std::min(kChunk, per_row - i0);
        for (int64_t i = 0; i < m; ++i) chunk[i] = math::normalize_u8(x[i0 + i], a, b);
        if (dt == DType::bf16)
          f32_to_bf16(chunk, o + i0, static_cast<size_t>(m));
        else
          f32_to_f16(chunk, o + i0, static_cast<size_t>(m));
      }
    }
  });
}

void synchronize() {}

void register_kernels(DeviceOpStubs& s) {
#define STRATA_X(fn) s.fn.set(Device::cpu, &fn);
  STRATA_DEVICE_OP_LIST(STRATA_X)
#undef STRATA_X
  s.synchronize.set(Device::cpu, &synchronize);
}

}  // namespace strata::cpu_dev
