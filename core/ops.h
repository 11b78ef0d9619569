// The differentiable functional API over the op table. Each function runs the
// op's kernel (through cpu dispatch) and records an autograd node when an input
// tracks gradients. Shapes are written (B, T, C) style where it helps.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "kernels/op_table.h"

namespace strata {

// Runs any op of the table on `inputs`; returns all its outputs (output 0 first).
std::vector<Tensor> run_op(Op op, const std::vector<Tensor>& inputs, const OpAttrs& attrs);

// elementwise (numpy broadcasting); mixed float dtypes are promoted to f32
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor scale(const Tensor& x, double s);  // x * s

// reductions
Tensor sum(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> axes = {}, bool keepdim = false);

// linear algebra
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);  // x (.., K), w (N, K), b (N)

// softmax family (last axis)
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// Mean cross-entropy of logits (N, C) against i64 labels (N).
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, double label_smoothing = 0.0);

// convolution and pooling (NCHW)
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride = 1, int64_t padding = 0);
Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride = 0,
                  int64_t padding = 0);  // stride 0 = kernel
Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride = 0, int64_t padding = 0);
Tensor global_avg_pool2d(const Tensor& x);

// normalisation; batch_norm updates running_mean/var in place when training;
// relu: relu(batch_norm(x)) as one op (one pass over x instead of two, and the
// same on the backward pass); max_pool_2x2: max_pool2d(., 2) of that, still one
// op, of [N, C, H, W] (writes only the pooled output and each window's maximum's
// index, no full-size activation)
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5,
                  bool relu = false, bool max_pool_2x2 = false);
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
Tensor embedding(const Tensor& ids, const Tensor& table);
Tensor dropout(const Tensor& x, double p, bool training, uint64_t seed);

// layout
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 1);  // (N, ...) -> (N, prod)
Tensor permute(const Tensor& x, const std::vector<int64_t>& order);
Tensor transpose(const Tensor& x, int64_t a, int64_t b);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);

// causal scaled-dot-product attention, q/k/v (B, H, T, D), or with bthd (B, T, H, D):
// the heads of a (B, T, C) projection reshaped, read in place (the output is in
// the same layout)
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale = 0.0, bool bthd = false);

// differentiable dtype cast (mixed precision: FP32 master weights -> compute dtype)
Tensor cast(const Tensor& x, DType dtype);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

}  // namespace strata
