// CUDA binary elementwise ops: add sub mul div with numpy broadcasting, forward
// and backward (the activations are in elementwise_activation.cu). Storage f32/f16/bf16 is
// read directly and the arithmetic is FP32. Same-shape operands take the
// contiguous map (kernels/cuda/map.cuh), which moves 16 bytes per operand per
// step when the pointers allow; broadcasts decode each output index through a
// collapsed BinaryMap (a bias over [N, T, C] collapses to two dimensions). Every
// pass reads each input once and writes each output once. The gradient of a
// broadcast operand is g * df reduced over its broadcast axes by reduce_sum
// (kernels/cuda/reduce.cuh): add and sub reduce grad_out directly; mul and div
// first write g * df for the full shape to an FP32 scratch.
#include <string>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/kernel_macros.cuh"
#include "kernels/cuda/map.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/launch_shape.h"
#include "kernels/scalar_math.h"

namespace strata::cuda {
namespace {

// ---- per-element functors ----------------------------------------------------------

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Sub {
  __device__ float operator()(float a, float b) const { return a - b; }
};
struct Mul {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct Div {
  __device__ float operator()(float a, float b) const { return a / b; }
};
struct DMulA {  // d(a*b)/da
  __device__ float operator()(float, float b) const { return b; }
};
struct DMulB {
  __device__ float operator()(float a, float) const { return a; }
};
struct DDivA {
  __device__ float operator()(float a, float b) const { return math::div_grad_a(a, b); }
};
struct DDivB {
  __device__ float operator()(float a, float b) const { return math::div_grad_b(a, b); }
};
// g * df(a, b)
template <typename D>
struct Chain {
  __device__ float operator()(float a, float b, float g) const { return g * D()(a, b); }
};

// ---- kernels -------------------------------------------------------------------

// out[i] = f(a[oa], b[ob]) (g == nullptr) or g[i] * f(a[oa], b[ob]) under broadcasting
template <typename T, typename O, typename F>
__global__ void broadcast_kernel(const T* a, const T* b, const T* g, launch::BinaryMap m, O* out, int64_t n,
                                 F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oa, ob;
    m.offsets(i, oa, ob);
    float r = f(load(a, oa), load(b, ob));
    store(out, i, g ? load(g, i) * r : r);
  }
}

// ---- launchers -------------------------------------------------------------------

template <typename T, typename O, typename F>
void broadcast(const T* a, const T* b, const T* g, const BroadcastPlan& p, O* out, F f, const char* what) {
  int64_t n = shape_numel(p.out);
  if (n == 0) return;
  launch::BinaryMap m = launch::pack_broadcast(p, what);
  STRATA_LAUNCH(elementwise_blocks(n), launch::kThreads, 0, context().stream, broadcast_kernel)
  (a, b, g, m, out, n, f);
  STRATA_CUDA_LAUNCH_CHECK();
}

template <typename F>
void binary_forward(const TensorView* in, TensorView* out, F f, const char* what) {
  dispatch_float(out[0].dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *a = data_as<const T>(in[0]), *b = data_as<const T>(in[1]);
    T* o = data_as<T>(out[0]);
    int64_t n = out[0].numel();
    if (in[0].numel() == n && in[1].numel() == n)
      map_elements<2>(MapInputs<T, 2>{{a, b}}, o, n, f);
    else
      broadcast(a, b, static_cast<const T*>(nullptr), broadcast_plan(in[0].shape, in[1].shape, what), o, f,
                what);
  });
}

// Gradient of operand k of a binary op whose partial derivative is the constant
// `sign` (add, sub): grad_out itself, summed over k's broadcast axes.
void constant_grad(const TensorView& g, const TensorView& gin, const Shape& shape_k, float sign,
                   const char* what) {
  launch::ReducePlan p = launch::broadcast_reduce_plan(g.shape, shape_k, what);
  reduce_sum(g.data, g.dtype, gin.data, gin.dtype, p, sign, what);
}

// add and sub: d/da = 1, d/db = sign_b
void linear_backward(const TensorView* in, const TensorView& g, TensorView* gin, float sign_b,
                     const char* what) {
  for (int k = 0; k < 2; ++k)
    if (gin[k].defined()) constant_grad(g, gin[k], in[k].shape, k == 0 ? 1.0f : sign_b, what);
}

// mul and div: gin[k] = g * dk(a, b), reduced over k's broadcast axes when k broadcasts
template <typename DA, typename DB>
void product_backward(const TensorView* in, const TensorView& g, TensorView* gin, const char* what) {
  dispatch_float(g.dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *a = data_as<const T>(in[0]), *b = data_as<const T>(in[1]), *go = data_as<const T>(g);
    int64_t n = g.numel();
    bool same = in[0].numel() == n && in[1].numel() == n;
    BroadcastPlan p = broadcast_plan(in[0].shape, in[1].shape, what);
    auto one = [&](auto d, const TensorView& gk) {
      if (!gk.defined()) return;
      using D = decltype(d);
      if (same) return map_elements<3>(MapInputs<T, 3>{{a, b, go}}, data_as<T>(gk), n, Chain<D>{});
      if (gk.numel() == n) return broadcast(a, b, go, p, data_as<T>(gk), d, what);
      Scratch full(static_cast<size_t>(n) * sizeof(float));
      broadcast(a, b, go, p, full.as<float>(), d, what);
      reduce_sum(full.data(), DType::f32, gk.data, gk.dtype,
                 launch::broadcast_reduce_plan(p.out, gk.shape, what), 1.0, what);
    };
    one(DA{}, gin[0]);
    one(DB{}, gin[1]);
  });
}

}  // namespace

void add_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, Add{}, "cuda add_forward");
}
void add_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  linear_backward(in, g, gin, 1.0f, "cuda add_backward");
}
void sub_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, Sub{}, "cuda sub_forward");
}
void sub_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  linear_backward(in, g, gin, -1.0f, "cuda sub_backward");
}
void mul_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, Mul{}, "cuda mul_forward");
}
void mul_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  product_backward<DMulA, DMulB>(in, g, gin, "cuda mul_backward");
}
void div_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, Div{}, "cuda div_forward");
}
void div_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  product_backward<DDivA, DDivB>(in, g, gin, "cuda div_backward");
}

}  // namespace strata::cuda
