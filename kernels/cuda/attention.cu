// Launchers of the causal attention forward (the kernel and its algorithm:
// attention_forward_kernel.cuh): tile configuration by dtype and head dim, the
// shared-memory opt-in, one launch on the context's stream.
#include "kernels/backends.h"
#include "kernels/cuda/attention_forward_kernel.cuh"
#include "kernels/cuda/attention_heads.h"
#include "kernels/cuda/attention_launch.cuh"
#include "kernels/cuda/kernel_macros.cuh"

namespace strata::cuda {
namespace {

using namespace attn_kernels;
using namespace attn_launch;

// ---- launchers ----------------------------------------------------------------

template <typename T, int kDMax, int kDFixed, bool kCompact>
void launch_forward_tiles(const Params<T>& p, int64_t heads) {
  constexpr Tile tl = attn::forward_tile(sizeof(T), kDMax, kCompact);
  constexpr size_t smem = attn::forward_smem(tl, sizeof(T)).total;
  auto kernel = attn_forward_kernel<T, kDMax, kDFixed, kCompact>;
  reserve_smem(kernel, smem, "attention_forward");
  dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(attn::ceil_div(p.t, tl.br)));
  STRATA_LAUNCH_NAMED("attn_forward_kernel", grid, attn::kThreads, smem, context().stream, kernel)(p);
  STRATA_CUDA_LAUNCH_CHECK();
}

// The full tiles where the device's shared memory holds them, else the compact ones.
template <typename T, int kDMax, int kDFixed>
void launch_forward(const Params<T>& p, int64_t heads) {
  constexpr size_t full = attn::forward_smem(attn::forward_tile(sizeof(T), kDMax), sizeof(T)).total;
  if (full <= smem_limit())
    launch_forward_tiles<T, kDMax, kDFixed, false>(p, heads);
  else
    launch_forward_tiles<T, kDMax, kDFixed, true>(p, heads);
}

}  // namespace

void attention_forward(const OpAttrs& a, const TensorView* in, TensorView* out) {
  if (a.bthd) {  // [B,T,H,D]: through [B,H,T,D] copies (attention_heads.h)
    HeadMajor q(in[0], true), k(in[1], true), v(in[2], true), o(out[0], false);
    TensorView hin[3] = {q.view(), k.view(), v.view()}, hout[2] = {o.view(), out[1]};
    OpAttrs ha = a;
    ha.bthd = false;
    attention_forward(ha, hin, hout);
    o.copy_out(out[0]);
    return;
  }
  Geom g = geom("attention_forward", a, in, out);
  if (g.heads * g.t == 0) return;
  by_dtype("attention_forward", in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p = params<T>(g, in, out);
    by_head_dim(g.d, g.dv, [&](auto dmax, auto fixed) {
      launch_forward<T, decltype(dmax)::value, decltype(fixed)::value>(p, g.heads);
    });
  });
}

}  // namespace strata::cuda
