// GPU suite: matmul and linear forward/backward on CUDA (cuBLASLt) against a
// double-precision host GEMM on random data, in f32 (tight: 2e-5, which TF32
// could not meet at K = 1024) and f16/bf16 (loose: their output rounding), with
// odd sizes, batched and broadcast matmuls, the fused bias / GELU epilogues and
// the separate-kernel fallback for a misaligned bias. Outputs are pre-filled with
// NaN so an element the GPU leaves unwritten fails. SKIPPED without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "device_buffer.h"
#include "kernels/backends.h"
#include "kernels/cuda/runtime.h"
#include "kernels/gemm_plan.h"
#include "kernels/runtime/half.h"

#if STRATA_HAVE_CUDA
#include "kernels/cuda/blaslt.h"
#include "kernels/cuda/context.h"
#endif

namespace strata {
namespace {

#if STRATA_HAVE_CUDA

using Vec = std::vector<double>;

double tolerance(DType dt) { return dt == DType::f32 ? 2e-5 : dt == DType::f16 ? 1e-2 : 2.5e-2; }

double round_to(DType dt, double v) {
  float f = static_cast<float>(v);
  if (dt == DType::f16) return static_cast<float>(f16_t(f));
  if (dt == DType::bf16) return static_cast<float>(bf16_t(f));
  return f;
}

// A device buffer of `n` elements of dtype dt (+ `pad` elements before the view,
// to misalign it on purpose), NaN-filled.
struct DeviceBuffer {
  DType dt;
  int64_t n;
  char* base = nullptr;
  void* data = nullptr;
  DeviceBuffer(DType d, int64_t count, int64_t pad = 0) : dt(d), n(count) {
    size_t bytes = static_cast<size_t>(count + pad) * dtype_size(d) + 256;
    STRATA_CUDA_CHECK(cudaMalloc(&base, bytes));
    STRATA_CUDA_CHECK(cudaMemset(base, 0xff, bytes));  // NaN in f32, f16 and bf16
    // cudaMemset runs on the legacy stream, which does not order against the
    // context's non-blocking stream: wait, or the fill could land after a result
    STRATA_CUDA_CHECK(cudaDeviceSynchronize());
    data = base + pad * dtype_size(d);
  }
  ~DeviceBuffer() { cudaFree(base); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  void upload(const Vec& v) {
    std::vector<char> h(static_cast<size_t>(n) * dtype_size(dt));
    for (int64_t i = 0; i < n; ++i) {
      float f = static_cast<float>(v[i]);
      if (dt == DType::f32) reinterpret_cast<float*>(h.data())[i] = f;
      if (dt == DType::f16) reinterpret_cast<uint16_t*>(h.data())[i] = f16_t(f).bits;
      if (dt == DType::bf16) reinterpret_cast<uint16_t*>(h.data())[i] = bf16_t(f).bits;
    }
    STRATA_CUDA_CHECK(cudaMemcpy(data, h.data(), h.size(), cudaMemcpyHostToDevice));
    // a pageable cudaMemcpy may return before its DMA lands, and the legacy stream
    // does not order against the kernels' non-blocking stream
    STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  Vec download() const {
    STRATA_CUDA_CHECK(cudaStreamSynchronize(cuda::context().stream));
    std::vector<char> h(static_cast<size_t>(n) * dtype_size(dt));
    STRATA_CUDA_CHECK(cudaMemcpy(h.data(), data, h.size(), cudaMemcpyDeviceToHost));
    Vec v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (dt == DType::f32) v[i] = reinterpret_cast<const float*>(h.data())[i];
      uint16_t bits = reinterpret_cast<const uint16_t*>(h.data())[i];
      if (dt == DType::f16) v[i] = f16_bits_to_float(bits);
      if (dt == DType::bf16) v[i] = bf16_bits_to_float(bits);
    }
    return v;
  }
  TensorView view(Shape s) const { return {data, dt, std::move(s), Device::cuda}; }
};

// Random values already rounded to dt, so the host reference sees the GPU's inputs.
Vec random_vec(int64_t n, DType dt, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec v(static_cast<size_t>(n));
  for (auto& x : v) x = round_to(dt, u(rng));
  return v;
}

// max |x - y| / max(1, max |y|); NaN anywhere counts as infinite.
double scaled_error(const Vec& x, const Vec& y) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(x[i])) return INFINITY;
    err = std::max(err, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return err / scale;
}

double gelu_ref(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
}

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

struct LinearCase {
  int64_t rows, k, n;
};

// y = x w^T + b, dx = dy w, dw = dy^T x, db = column sums of dy, all on the host in double.
struct LinearRef {
  Vec y, dx, dw, db;
};
LinearRef linear_ref(const LinearCase& c, const Vec& x, const Vec& w, const Vec& b, const Vec& dy) {
  LinearRef r{Vec(c.rows * c.n, 0), Vec(c.rows * c.k, 0), Vec(c.n * c.k, 0), Vec(c.n, 0)};
  for (int64_t i = 0; i < c.rows; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = b[j];
      for (int64_t q = 0; q < c.k; ++q) {
        s += x[i * c.k + q] * w[j * c.k + q];
        r.dx[i * c.k + q] += dy[i * c.n + j] * w[j * c.k + q];
        r.dw[j * c.k + q] += dy[i * c.n + j] * x[i * c.k + q];
      }
      r.y[i * c.n + j] = s;
      r.db[j] += dy[i * c.n + j];
    }
  return r;
}

// linear forward, the full backward, and db alone (the bias-gradient kernel without dw).
void check_linear(const LinearCase& c, DType dt) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + " rows " + std::to_string(c.rows) + " k " + std::to_string(c.k) +
               " n " + std::to_string(c.n));
  Vec x = random_vec(c.rows * c.k, dt, 1), w = random_vec(c.n * c.k, dt, 2), b = random_vec(c.n, dt, 3),
      dy = random_vec(c.rows * c.n, dt, 4);
  LinearRef ref = linear_ref(c, x, w, b, dy);
  DeviceBuffer X(dt, x.size()), W(dt, w.size()), B(dt, b.size()), Y(dt, ref.y.size()), DY(dt, dy.size()),
      DX(dt, x.size()), DW(dt, w.size()), DB(dt, b.size()), DB2(dt, b.size());
  X.upload(x), W.upload(w), B.upload(b), DY.upload(dy);
  TensorView in[3] = {X.view({c.rows, c.k}), W.view({c.n, c.k}), B.view({c.n})};
  TensorView out[1] = {Y.view({c.rows, c.n})};
  kernel_forward(Op::linear, {}, in, out);
  EXPECT_LE(scaled_error(Y.download(), ref.y), tolerance(dt)) << "y";
  TensorView gin[3] = {DX.view({c.rows, c.k}), DW.view({c.n, c.k}), DB.view({c.n})};
  kernel_backward(Op::linear, {}, in, out, DY.view({c.rows, c.n}), gin);
  EXPECT_LE(scaled_error(DX.download(), ref.dx), tolerance(dt)) << "dx";
  EXPECT_LE(scaled_error(DW.download(), ref.dw), tolerance(dt)) << "dw";
  EXPECT_LE(scaled_error(DB.download(), ref.db), tolerance(dt)) << "db";
  TensorView only_db[3] = {{}, {}, DB2.view({c.n})};
  kernel_backward(Op::linear, {}, in, out, DY.view({c.rows, c.n}), only_db);
  EXPECT_LE(scaled_error(DB2.download(), ref.db), tolerance(dt)) << "db without dw";
}

TEST(CudaLinear, ForwardAndBackwardMatchHostGemm) {
  STRATA_SKIP_WITHOUT_DEVICE();
  ASSERT_FALSE(cuda::context().allow_tf32) << "TF32 must be off by default";
  // odd sizes, K = 1, one row, aligned sizes (fused epilogues), K = 1024 (TF32 would miss 2e-5), K = 0
  const LinearCase cases[] = {{37, 129, 67}, {5, 1, 3}, {1, 16, 8}, {64, 128, 96}, {64, 1024, 64}, {4, 0, 3}};
  for (const LinearCase& c : cases)
    for (DType dt : kDtypes) check_linear(c, dt);
  auto st = cuda::blaslt::cache_stats();
  std::printf("cuBLASLt cache: %zu problems, %zu epilogue fallbacks\n", st.entries, st.epilogue_fallbacks);
  // the same problems again: every one is found in the cache
  for (const LinearCase& c : cases)
    for (DType dt : kDtypes) check_linear(c, dt);
  EXPECT_EQ(cuda::blaslt::cache_stats().entries, st.entries);
}

TEST(CudaLinear, GeluEpiloguesAndMisalignedBiasFallback) {
  STRATA_SKIP_WITHOUT_DEVICE();
  const LinearCase c{48, 64, 40};
  for (DType dt : kDtypes) {
    for (gemm::Epilogue e : {gemm::Epilogue::gelu, gemm::Epilogue::gelu_bias, gemm::Epilogue::bias}) {
      for (int64_t pad : {0, 1}) {  // pad 1: the bias is 2 or 4 bytes off 16, so it takes the fallback kernel
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + gemm::epilogue_name(e) + " bias pad " +
                     std::to_string(pad));
        Vec x = random_vec(c.rows * c.k, dt, 5), w = random_vec(c.n * c.k, dt, 6), b = random_vec(c.n, dt, 7);
        Vec zero_dy(c.rows * c.n, 0);
        Vec want = linear_ref(c, x, w, gemm::epilogue_has_bias(e) ? b : Vec(c.n, 0), zero_dy).y;
        if (gemm::epilogue_has_gelu(e))
          for (double& v : want) v = gelu_ref(v);
        DeviceBuffer X(dt, x.size()), W(dt, w.size()), B(dt, b.size(), pad), Y(dt, want.size());
        X.upload(x), W.upload(w), B.upload(b);
        size_t before = cuda::blaslt::cache_stats().epilogue_fallbacks;
        cuda::blaslt::run(gemm::linear_forward_plan(c.rows, c.k, c.n, e), dt,
                          {.x = X.data, .y = W.data, .c = Y.data, .bias = B.data}, "test");
        // cuBLASLt's GELU may use its own approximation of the tanh form: 1e-3 more
        double tol = tolerance(dt) + (gemm::epilogue_has_gelu(e) ? 1e-3 : 0);
        EXPECT_LE(scaled_error(Y.download(), want), tol);
        if (pad && gemm::epilogue_has_bias(e)) {
          EXPECT_GT(cuda::blaslt::cache_stats().epilogue_fallbacks, before);
        }
      }
    }
  }
}

// c = a @ b with numpy batch broadcasting, and its gradients, on the host.
struct MatmulRef {
  Vec c, da, db;
};
MatmulRef matmul_ref(const Shape& sa, const Shape& sb, const Shape& sc, const Vec& a, const Vec& b,
                     const Vec& dc) {
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape batch(sc.begin(), sc.end() - 2);
  MatmulRef r{Vec(dc.size(), 0), Vec(a.size(), 0), Vec(b.size(), 0)};
  auto index = [&](const Shape& s, int64_t t) {  // operand matrix of output batch t
    Shape ob(s.begin(), s.end() - 2);
    std::vector<int64_t> idx(batch.size());
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d)
      idx[d] = t % batch[d], t /= batch[d];
    int64_t flat = 0;
    for (size_t d = 0; d < ob.size(); ++d)
      flat = flat * ob[d] + (ob[d] == 1 ? 0 : idx[batch.size() - ob.size() + d]);
    return flat;
  };
  for (int64_t t = 0; t < shape_numel(batch); ++t) {
    int64_t ia = index(sa, t) * m * k, ib = index(sb, t) * k * n, ic = t * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t q = 0; q < k; ++q) {
          r.c[ic + i * n + j] += a[ia + i * k + q] * b[ib + q * n + j];
          r.da[ia + i * k + q] += dc[ic + i * n + j] * b[ib + q * n + j];
          r.db[ib + q * n + j] += a[ia + i * k + q] * dc[ic + i * n + j];
        }
  }
  return r;
}

TEST(CudaMatmul, BatchedAndBroadcastForwardBackwardMatchHostGemm) {
  STRATA_SKIP_WITHOUT_DEVICE();
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{33, 17}, {17, 9}},          {{1, 64}, {64, 1}},      {{3, 2, 33, 17}, {3, 2, 17, 9}},
      {{4, 31, 16}, {16, 24}},      {{31, 16}, {4, 16, 24}}, {{2, 1, 8, 5}, {1, 3, 5, 7}},
      {{2, 64, 128}, {2, 128, 64}}, {{7, 1}, {1, 5}},        {{3, 0}, {0, 4}},
  };
  for (const auto& [sa, sb] : cases) {
    auto sc = shape::matmul_infer({{sa, DType::f32}, {sb, DType::f32}}, {})[0].shape;
    for (DType dt : kDtypes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(sa) + " @ " + shape_str(sb));
      Vec a = random_vec(shape_numel(sa), dt, 8), b = random_vec(shape_numel(sb), dt, 9),
          dc = random_vec(shape_numel(sc), dt, 10);
      MatmulRef ref = matmul_ref(sa, sb, sc, a, b, dc);
      DeviceBuffer A(dt, a.size()), B(dt, b.size()), C(dt, ref.c.size()), DC(dt, dc.size()), DA(dt, a.size()),
          DB(dt, b.size());
      A.upload(a), B.upload(b), DC.upload(dc);
      TensorView in[2] = {A.view(sa), B.view(sb)};
      TensorView out[1] = {C.view(sc)};
      kernel_forward(Op::matmul, {}, in, out);
      EXPECT_LE(scaled_error(C.download(), ref.c), tolerance(dt)) << "c";
      TensorView gin[2] = {DA.view(sa), DB.view(sb)};
      kernel_backward(Op::matmul, {}, in, out, DC.view(sc), gin);
      EXPECT_LE(scaled_error(DA.download(), ref.da), tolerance(dt)) << "da";
      EXPECT_LE(scaled_error(DB.download(), ref.db), tolerance(dt)) << "db";
    }
  }
}

#else  // a build without the CUDA backend

TEST(CudaBlasLt, NeedsTheCudaBackend) {
  STRATA_SKIP_WITHOUT_DEVICE();
  FAIL() << "a device is present but strata was built without CUDA";
}

#endif

}  // namespace
}  // namespace strata
