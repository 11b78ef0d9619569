// Reference elementwise ops in double precision, one element at a time.
#include <cmath>

#include "kernels/backends.h"
#include "kernels/reference/common.h"

namespace strata::reference {
namespace {

template <typename F>
void binary_forward(const TensorView* in, TensorView* out, F f) {
  const Shape o = broadcast_shape(in[0].shape, in[1].shape, "reference");
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    double a = D(in[0])[broadcast_source(o, in[0].shape, i)];
    double b = D(in[1])[broadcast_source(o, in[1].shape, i)];
    D(out[0])[i] = f(a, b);
  }
}

// grad_in[k] = sum over broadcast copies of dout * d f / d in_k
template <typename DA, typename DB>
void binary_backward(const TensorView* in, const TensorView& gout, TensorView* gin, DA da, DB db) {
  const Shape o = broadcast_shape(in[0].shape, in[1].shape, "reference");
  for (int k = 0; k < 2; ++k)
    if (gin[k].defined())
      for (int64_t i = 0; i < gin[k].numel(); ++i) D(gin[k])[i] = 0;
  for (int64_t i = 0; i < gout.numel(); ++i) {
    int64_t oa = broadcast_source(o, in[0].shape, i), ob = broadcast_source(o, in[1].shape, i);
    double a = D(in[0])[oa], b = D(in[1])[ob], g = D(gout)[i];
    if (gin[0].defined()) D(gin[0])[oa] += g * da(a, b);
    if (gin[1].defined()) D(gin[1])[ob] += g * db(a, b);
  }
}

template <typename F>
void unary_forward(const TensorView* in, TensorView* out, F f) {
  for (int64_t i = 0; i < out[0].numel(); ++i) D(out[0])[i] = f(D(in[0])[i]);
}

template <typename F>
void unary_backward(const TensorView* in, const TensorView& gout, TensorView* gin, F df) {
  if (!gin[0].defined()) return;
  for (int64_t i = 0; i < gin[0].numel(); ++i) D(gin[0])[i] = D(gout)[i] * df(D(in[0])[i]);
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double gelu_d(double x) {
  double k = std::sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}
double sig(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

void add_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, [](double a, double b) { return a + b; });
}
void add_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  binary_backward(
      in, g, gin, [](double, double) { return 1.0; }, [](double, double) { return 1.0; });
}
void sub_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, [](double a, double b) { return a - b; });
}
void sub_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  binary_backward(
      in, g, gin, [](double, double) { return 1.0; }, [](double, double) { return -1.0; });
}
void mul_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, [](double a, double b) { return a * b; });
}
void mul_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  binary_backward(
      in, g, gin, [](double, double b) { return b; }, [](double a, double) { return a; });
}
void div_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  binary_forward(in, out, [](double a, double b) { return a / b; });
}
void div_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                  TensorView* gin) {
  binary_backward(
      in, g, gin, [](double, double b) { return 1 / b; }, [](double a, double b) { return -a / (b * b); });
}

void relu_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, [](double x) { return x > 0 ? x : 0.0; });
}
void relu_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  unary_backward(in, g, gin, [](double x) { return x > 0 ? 1.0 : 0.0; });
}
void gelu_forward(const OpAttrs&, const TensorView* in, TensorView* out) { unary_forward(in, out, gelu); }
void gelu_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  unary_backward(in, g, gin, gelu_d);
}
void tanh_forward(const OpAttrs&, const TensorView* in, TensorView* out) {
  unary_forward(in, out, [](double x) { return std::tanh(x); });
}
void tanh_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                   TensorView* gin) {
  unary_backward(in, g, gin, [](double x) {
    double t = std::tanh(x);
    return 1 - t * t;
  });
}
void sigmoid_forward(const OpAttrs&, const TensorView* in, TensorView* out) { unary_forward(in, out, sig); }
void sigmoid_backward(const OpAttrs&, const TensorView* in, const TensorView*, const TensorView& g,
                      TensorView* gin) {
  unary_backward(in, g, gin, [](double x) { return sig(x) * (1 - sig(x)); });
}

}  // namespace strata::reference
