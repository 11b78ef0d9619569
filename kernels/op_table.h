// The op table: every op is declared once here. Each backend (reference, cpu,
// and cuda when built) must define <op>_forward and <op>_backward for every
// entry, or the build fails at link time; tests walk the table so that a new op
// is tested on every backend and dtype without editing a test.
//
// Conventions for all ops:
// - inputs/outputs are contiguous TensorViews; output 0 is the op's result,
//   further outputs are saved auxiliaries for backward (e.g. argmax indices).
// - backward receives the forward inputs and outputs, the gradient of output 0,
//   and writes (assigns, not accumulates) the gradient of each differentiable
//   input whose grad_in[i].data is non-null.
// - reference kernels take f64 floating buffers; cpu kernels take f32 (f16/bf16
//   storage is converted at the dispatch boundary: FP32 arithmetic); cuda kernels
//   read and write f16/bf16 storage directly with FP32 accumulation; integer
//   inputs (labels, token ids) are i64 everywhere.
// - "(stat)" marks a statistic kept in FP32 whatever the input's storage dtype:
//   its dtype is stat_dtype(x) (f32, or f64 for the reference's f64 buffers).
//   Saved auxiliaries are O(rows), not O(rows x cols): backward recomputes the
//   softmax from the log-sum-exp, as fused GPU kernels do.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/runtime/tensor_view.h"

namespace strata {

// Attributes of an op call. Each op reads only the fields named in its table entry.
struct OpAttrs {
  std::vector<int64_t> axes;    // sum/mean: reduced axes (empty = all); permute: new order
  std::vector<int64_t> shape;   // reshape: target shape
  bool keepdim = false;         // sum/mean
  int64_t axis = 0;             // concat, slice
  int64_t start = 0, end = 0;   // slice: [start, end) along axis
  int64_t kernel[2] = {1, 1};   // pools
  int64_t stride[2] = {1, 1};   // conv2d, pools
  int64_t padding[2] = {0, 0};  // conv2d, pools (zero padding; pools ignore padded cells)
  double eps = 1e-5;            // batch_norm, layer_norm
  double momentum = 0.1;        // batch_norm running stats: new = (1-m) old + m batch
  double p = 0.0;               // dropout probability
  double label_smoothing = 0;   // cross_entropy
  double scale = 0.0;           // attention: score scale, 0 = 1/sqrt(head_dim)
  bool bthd = false;  // attention: q, k, v, output [B,T,H,D] (a projection's heads in place), not [B,H,T,D]
  bool training = false;  // batch_norm, dropout
  bool relu = false;      // batch_norm: a ReLU on the output, in the same pass (y = max(0, bn(x)))
  // batch_norm: a 2x2 stride-2 max pool on the output (after the ReLU), in the same
  // pass: [N, C, H, W] -> [N, C, H/2, W/2], a last odd row or column dropped as
  // max_pool2d drops it; saves where each window's maximum was (i32, its plane's index)
  bool max_pool_2x2 = false;
  uint64_t seed = 0;  // dropout
};

// The dtype of "(stat)" outputs and FP32 parameters: f64 for f64 inputs, else f32.
inline DType stat_dtype(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

struct OutputSpec {
  Shape shape;
  DType dtype;
};

//  X(name, inputs, outputs, differentiable-input mask (bit i = input i))
//  Attributes used are listed after each entry.
#define STRATA_OP_LIST(X)                                                                                 \
  /* elementwise, numpy broadcasting */                                                                   \
  X(add, 2, 1, 0b11)                                                                                      \
  X(sub, 2, 1, 0b11)                                                                                      \
  X(mul, 2, 1, 0b11)                                                                                      \
  X(div, 2, 1, 0b11)                                                                                      \
  X(relu, 1, 1, 0b1)                                                                                      \
  X(gelu, 1, 1, 0b1) /* tanh form */                                                                      \
  X(tanh, 1, 1, 0b1)                                                                                      \
  X(sigmoid, 1, 1, 0b1)                                                                                   \
  /* reductions: axes, keepdim */                                                                         \
  X(sum, 1, 1, 0b1)                                                                                       \
  X(mean, 1, 1, 0b1)                                                                                      \
  /* linear algebra */                                                                                    \
  X(matmul, 2, 1, 0b11)  /* a[..., M, K] @ b[..., K, N] or b[K, N] */                                     \
  X(linear, 3, 1, 0b111) /* x[..., K], w[N, K], b[N] -> x w^T + b */                                      \
  /* softmax family over the last axis */                                                                 \
  X(softmax, 1, 1, 0b1)                                                                                   \
  X(log_softmax, 1, 1, 0b1)                                                                               \
  /* logits[N, C], labels i64[N] -> mean loss [] (stat); aux: lse [N] (stat); label_smoothing */          \
  X(cross_entropy, 2, 2, 0b01)                                                                            \
  /* convolution and pooling, NCHW */                                                                     \
  X(conv2d, 3, 1, 0b111)          /* x[N,C,H,W], w[O,C,kh,kw], b[O]; stride, padding */                   \
  X(max_pool2d, 1, 2, 0b1)        /* kernel, stride, padding; aux: argmax i64 */                          \
  X(avg_pool2d, 1, 1, 0b1)        /* kernel, stride, padding (divides by valid cells) */                  \
  X(global_avg_pool2d, 1, 1, 0b1) /* [N,C,H,W] -> [N,C] */                                                \
  /* normalisation */                                                                                     \
  /* x[N,C,...], gamma, beta, running_mean, running_var (each x's dtype or f32); training, momentum, eps, \
     relu, max_pool_2x2; aux: mean, invstd (stat), and with max_pool_2x2 i32 [N,C,H/2,W/2] the flat index \
     in its plane of each window's first maximum of bn(x) (else i32 [0]) */                               \
  X(batch_norm, 5, 4, 0b111)                                                                              \
  /* x[..., D], gamma[D], beta[D] (x's dtype or f32); eps; aux: mean, rstd per row (stat) */              \
  X(layer_norm, 3, 3, 0b111)                                                                              \
  X(embedding, 2, 1, 0b10) /* ids i64[...], table[V, D] -> [..., D] */                                    \
  X(dropout, 1, 2, 0b1)    /* p, training, seed; aux: the scale mask */                                   \
  /* shape */                                                                                             \
  X(reshape, 1, 1, 0b1) /* shape (-1 allowed once) */                                                     \
  X(permute, 1, 1, 0b1) /* axes = new order */                                                            \
  X(concat, 2, 1, 0b11) /* axis */                                                                        \
  X(slice, 1, 1, 0b1)   /* axis, start, end */                                                            \
  /* attention */                                                                                         \
  /* q,k,v [B,H,T,D], causal; scale; aux: lse [B,H,T] (stat) of the scaled masked scores */               \
  X(attention, 3, 2, 0b111)

enum class Op : uint16_t {
#define STRATA_X(name, nin, nout, mask) name,
  STRATA_OP_LIST(STRATA_X)
#undef STRATA_X
};

#define STRATA_X(name, nin, nout, mask) +1
inline constexpr int kOpCount = 0 STRATA_OP_LIST(STRATA_X);
#undef STRATA_X

// Output shapes and dtypes from the inputs'; throws ShapeError naming the op.
using InferFn = std::vector<OutputSpec> (*)(const std::vector<OutputSpec>& in, const OpAttrs& a);
using ForwardFn = void (*)(const OpAttrs& a, const TensorView* in, TensorView* out);
using BackwardFn = void (*)(const OpAttrs& a, const TensorView* in, const TensorView* out,
                            const TensorView& grad_out, TensorView* grad_in);

struct OpInfo {
  const char* name;
  int inputs;
  int outputs;
  uint32_t differentiable;  // bit i: input i takes a gradient
  InferFn infer;
};

const OpInfo& op_info(Op op);
const std::array<OpInfo, kOpCount>& op_table();

struct OpKernels {
  ForwardFn forward;
  BackwardFn backward;
};

struct Backend {
  const char* name;
  std::array<OpKernels, kOpCount> ops;
};

// Declares <op>_infer in strata::shape, and <op>_forward / <op>_backward in a backend namespace.
#define STRATA_DECLARE_INFER(name, nin, nout, mask) \
  std::vector<OutputSpec> name##_infer(const std::vector<OutputSpec>& in, const OpAttrs& a);
#define STRATA_DECLARE_KERNELS(name, nin, nout, mask)                                 \
  void name##_forward(const OpAttrs& a, const TensorView* in, TensorView* out);       \
  void name##_backward(const OpAttrs& a, const TensorView* in, const TensorView* out, \
                       const TensorView& grad_out, TensorView* grad_in);

namespace shape {
STRATA_OP_LIST(STRATA_DECLARE_INFER)
}

}  // namespace strata
