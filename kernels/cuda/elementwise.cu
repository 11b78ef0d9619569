// CUDA elementwise ops: add sub mul div with numpy broadcasting, and relu gelu
// tanh sigmoid; forward and backward. Storage f32/f16/bf16 is read directly and
// the arithmetic is FP32 through the shared scalar math (kernels/scalar_math.h).
// Same-shape operands take a contiguous map kernel that moves 16 bytes per
// operand per step when the pointers allow (load_vec); broadcasts decode each
// output index through a collapsed BinaryMap (a bias over [N, T, C] collapses
// to two dimensions). Every pass reads each input once and writes each output
// once. The gradient of a broadcast operand is g * df reduced over the broadcast
// axes by reduce_sum (kernels/cuda/reduce.cuh): add and sub reduce grad_out
// directly; mul and div first write g * df for the full shape to an FP32 scratch.
// tanh and sigmoid differentiate from the saved output, as the CPU kernels do.
#include <string>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/half_io.cuh"
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

struct Relu {
  __device__ float operator()(float x) const { return math::relu(x); }
};
struct Gelu {
  __device__ float operator()(float x) const { return math::gelu(x); }
};
struct Tanh {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct Sigmoid {
  __device__ float operator()(float x) const { return math::sigmoid(x); }
};
// backward from the input x or the output y: g * f'(.)
struct ReluGrad {
  __device__ float operator()(float x, float g) const { return g * math::relu_grad(x); }
};
struct GeluGrad {
  __device__ float operator()(float x, float g) const { return g * math::gelu_grad(x); }
};
struct TanhGrad {
  __device__ float operator()(float y, float g) const { return math::tanh_backward(g, y); }
};
struct SigmoidGrad {
  __device__ float operator()(float y, float g) const { return math::sigmoid_backward(g, y); }
};

template <typename T, int N>
struct Inputs {
  const T* p[N];
};

// ---- kernels -------------------------------------------------------------------

template <int N, typename F>
__device__ __forceinline__ float apply(const F& f, const float* v) {
  if constexpr (N == 1)
    return f(v[0]);
  else if constexpr (N == 2)
    return f(v[0], v[1]);
  else
    return f(v[0], v[1], v[2]);
}

// out[i] = f(in_0[i], ..., in_{N-1}[i]) over contiguous buffers; VEC: 16-byte
// steps (all pointers aligned), the tail element by element.
template <int N, bool VEC, typename T, typename O, typename F>
__global__ void map_kernel(Inputs<T, N> in, O* out, int64_t n, F f) {
  constexpr int V = VEC ? kVec<T> : 1;
  static_assert(!VEC || kVec<T> == kVec<O>, "vector steps need equal element sizes");
  int64_t stride = int64_t(gridDim.x) * blockDim.x, nv = n / V;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < nv; j += stride) {
    float v[N][V], r[V];
    if constexpr (VEC) {
#pragma unroll
      for (int k = 0; k < N; ++k) load_vec(in.p[k], j * V, v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) v[k][0] = load(in.p[k], j);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float a[N];
#pragma unroll
      for (int k = 0; k < N; ++k) a[k] = v[k][e];
      r[e] = apply<N>(f, a);
    }
    if constexpr (VEC)
      store_vec(out, j * V, r);
    else
      store(out, j, r[0]);
  }
  for (int64_t i = nv * V + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float a[N];
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = load(in.p[k], i);
    store(out, i, apply<N>(f, a));
  }
}

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

unsigned blocks(int64_t n, int per_thread = 1) {
  return static_cast<unsigned>(
      launch::blocks_for(n, launch::grid_cap(context().sm_count), launch::kThreads, per_thread));
}

template <int N, typename T, typename O, typename F>
void map(Inputs<T, N> in, O* out, int64_t n, F f) {
  if (n == 0) return;
  cudaStream_t s = context().stream;
  bool vec = vec_aligned(out) && sizeof(T) == sizeof(O);
  for (int k = 0; k < N; ++k) vec = vec && vec_aligned(in.p[k]);
  if constexpr (sizeof(T) == sizeof(O)) {
    if (vec) {
      map_kernel<N, true><<<blocks(n, kVec<T>), launch::kThreads, 0, s>>>(in, out, n, f);
      STRATA_CUDA_LAUNCH_CHECK();
      return;
    }
  }
  map_kernel<N, false><<<blocks(n), launch::kThreads, 0, s>>>(in, out, n, f);
  STRATA_CUDA_LAUNCH_CHECK();
}

template <typename T, typename O, typename F>
void broadcast(const T* a, const T* b, const T* g, const BroadcastPlan& p, O* out, F f, const char* what) {
  int64_t n = shape_numel(p.out);
  if (n == 0) return;
  launch::BinaryMap m = launch::pack_broadcast(p, what);
  broadcast_kernel<<<blocks(n), launch::kThreads, 0, context().stream>>>(a, b, g, m, out, n, f);
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
      map<2>(Inputs<T, 2>{{a, b}}, o, n, f);
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
      if (same) return map<3>(Inputs<T, 3>{{a, b, go}}, data_as<T>(gk), n, Chain<D>{});
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

template <typename F>
void unary_forward(const TensorView* in, TensorView* out, F f, const char* what) {
  dispatch_float(out[0].dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<1>(Inputs<T, 1>{{data_as<const T>(in[0])}}, data_as<T>(out[0]), out[0].numel(), f);
  });
}

// gin = df(src, g) with src the forward input (relu, gelu) or output (tanh, sigmoid)
template <typename DF>
void unary_backward(const TensorView& src, const TensorView& g, TensorView* gin, DF df, const char* what) {
  if (!gin[0].defined()) return;
  dispatch_float(g.dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<2>(Inputs<T, 2>{{data_as<const T>(src), data_as<const T>(g)}}, data_as<T>(gin[0]), g.numel(), df);
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

void relu_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, Relu{}, "cuda relu_forward");
}
void relu_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  unary_backward(in[0], g, gin, ReluGrad{}, "cuda relu_backward");
}
void gelu_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, Gelu{}, "cuda gelu_forward");
}
void gelu_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  unary_backward(in[0], g, gin, GeluGrad{}, "cuda gelu_backward");
}
void tanh_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, Tanh{}, "cuda tanh_forward");
}
void tanh_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                   TensorView* gin) {
  unary_backward(out[0], g, gin, TanhGrad{}, "cuda tanh_backward");
}
void sigmoid_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, Sigmoid{}, "cuda sigmoid_forward");
}
void sigmoid_backward(const OpAttrs&, const TensorView*, const TensorView* out, const TensorView& g,
                      TensorView* gin) {
  unary_backward(out[0], g, gin, SigmoidGrad{}, "cuda sigmoid_backward");
}

}  // namespace strata::cuda
