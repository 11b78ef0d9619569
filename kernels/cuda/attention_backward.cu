// Launchers of the causal attention backward (the kernels and their algorithm:
// attention_backward_kernel.cuh): D = rowsum(dO * O), the FP32 dQ accumulator
// (zeroed, summed by atomics, narrowed), the key-tile kernel on the context's stream.
#include "kernels/backends.h"
#include "kernels/cuda/attention_backward_kernel.cuh"
#include "kernels/cuda/attention_heads.h"
#include "kernels/cuda/attention_launch.cuh"
#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda {
namespace {

using namespace attn_kernels;
using namespace attn_launch;

// ---- launchers ----------------------------------------------------------------

template <typename T, int kDMax, int kDFixed, bool kCompact>
void launch_backward_tiles(const Params<T>& p, int64_t heads) {
  constexpr Tile tl = attn::backward_tile(sizeof(T), kDMax, kCompact);
  constexpr size_t smem = attn::backward_smem(tl, sizeof(T)).total;
  auto kernel = attn_backward_kernel<T, kDMax, kDFixed, kCompact>;
  reserve_smem(kernel, smem, "attention_backward");
  dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(attn::ceil_div(p.t, tl.bc)));
  STRATA_LAUNCH_NAMED("attn_backward_kernel", grid, attn::kThreads, smem, context().stream, kernel)(p);
  STRATA_CUDA_LAUNCH_CHECK();
}

// The full tiles where the device's shared memory holds them, else the compact ones.
template <typename T, int kDMax, int kDFixed>
void launch_backward(const Params<T>& p, int64_t heads) {
  constexpr size_t full = attn::backward_smem(attn::backward_tile(sizeof(T), kDMax), sizeof(T)).total;
  if (full <= smem_limit())
    launch_backward_tiles<T, kDMax, kDFixed, false>(p, heads);
  else
    launch_backward_tiles<T, kDMax, kDFixed, true>(p, heads);
}

template <typename T>
void backward_typed(const Geom& g, const TensorView* in, const TensorView* out, const TensorView& gout,
                    TensorView* gin) {
  Params<T> p = params<T>(g, in, out);
  p.dout = gout.as<const T>();
  p.dq = gin[0].as<T>(), p.dk = gin[1].as<T>(), p.dv = gin[2].as<T>();
  cudaStream_t stream = context().stream;
  const int64_t rows = g.heads * g.t;
  Scratch delta(static_cast<size_t>(rows) * sizeof(float));
  p.delta = delta.as<float>();
  STRATA_LAUNCH(static_cast<unsigned>(attn::ceil_div(rows, attn::kThreads / 32)), attn::kThreads, 0, stream,
                attn_delta_kernel<T>)
  (p.o, p.dout, p.delta, rows, g.dv);
  STRATA_CUDA_LAUNCH_CHECK();
  // dQ is summed over key tiles with FP32 atomics: into dQ itself for f32, else a scratch
  const int64_t nq = rows * g.d;
  constexpr bool kF32 = std::is_same_v<T, float>;
  Scratch dq_acc(p.dq && !kF32 ? static_cast<size_t>(nq) * sizeof(float) : 0);
  if (p.dq) {
    p.dq_acc = kF32 ? reinterpret_cast<float*>(p.dq) : dq_acc.as<float>();
    STRATA_CUDA_CHECK(cudaMemsetAsync(p.dq_acc, 0, static_cast<size_t>(nq) * sizeof(float), stream));
  }
  by_head_dim(g.d, g.dv, [&](auto dmax, auto fixed) {
    launch_backward<T, decltype(dmax)::value, decltype(fixed)::value>(p, g.heads);
  });
  if (p.dq && !kF32) {
    STRATA_LAUNCH(static_cast<unsigned>(attn::ceil_div(nq, 256)), 256, 0, stream, narrow_kernel<T>)
    (p.dq_acc, p.dq, nq);
    STRATA_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace

void attention_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, const TensorView& gout,
                        TensorView* gin) {
  if (a.bthd) {  // [B,T,H,D]: through [B,H,T,D] copies (attention_heads.h)
    HeadMajor q(in[0], true), k(in[1], true), v(in[2], true), o(out[0], true), dout(gout, true);
    HeadMajor dq(gin[0], false), dk(gin[1], false), dv(gin[2], false);
    TensorView hin[3] = {q.view(), k.view(), v.view()}, hout[2] = {o.view(), out[1]};
    TensorView hgin[3] = {dq.view(), dk.view(), dv.view()};
    OpAttrs ha = a;
    ha.bthd = false;
    attention_backward(ha, hin, hout, dout.view(), hgin);
    dq.copy_out(gin[0]), dk.copy_out(gin[1]), dv.copy_out(gin[2]);
    return;
  }
  Geom g = geom("attention_backward", a, in, out);
  if (g.heads * g.t == 0 || !(gin[0].defined() || gin[1].defined() || gin[2].defined())) return;
  by_dtype("attention_backward", in[0].dtype,
           [&](auto tag) { backward_typed<decltype(tag)>(g, in, out, gout, gin); });
}

}  // namespace strata::cuda
