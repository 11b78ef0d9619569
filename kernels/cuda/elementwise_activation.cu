// CUDA activations: relu, gelu (tanh form), tanh, sigmoid; forward and backward,
// each one pass of the contiguous map (kernels/cuda/map.cuh): 16-byte vector
// loads and stores where aligned, FP32 arithmetic through the shared scalar math
// (kernels/scalar_math.h) on f32/f16/bf16 storage. Forward reads x and writes y;
// backward reads the saved tensor and grad_out and writes grad_in. relu and gelu
// differentiate from the input, tanh and sigmoid from the saved output, as the
// CPU kernels do.
#include "kernels/backends.h"
#include "kernels/cuda/half_io.cuh"
#include "kernels/cuda/map.cuh"
#include "kernels/scalar_math.h"

namespace strata::cuda {
namespace {

// ---- per-element functors ----------------------------------------------------------

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

// ---- launchers -------------------------------------------------------------------

template <typename F>
void unary_forward(const TensorView* in, TensorView* out, F f, const char* what) {
  dispatch_float(out[0].dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<1>(MapInputs<T, 1>{{data_as<const T>(in[0])}}, data_as<T>(out[0]), out[0].numel(), f);
  });
}

// gin = df(src, g) with src the forward input (relu, gelu) or output (tanh, sigmoid)
template <typename DF>
void unary_backward(const TensorView& src, const TensorView& g, TensorView* gin, DF df, const char* what) {
  if (!gin[0].defined()) return;
  dispatch_float(g.dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<2>(MapInputs<T, 2>{{data_as<const T>(src), data_as<const T>(g)}}, data_as<T>(gin[0]),
                    g.numel(), df);
  });
}

}  // namespace

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
