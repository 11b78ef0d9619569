#include "core/ops.h"

#include <string>

#include "base/error.h"
#include "core/autograd.h"
#include "kernels/backends.h"

namespace strata {
namespace {

// The generic node: saves the op's inputs and outputs and calls the backend's backward.
class OpNode : public Node {
 public:
  OpNode(Op op, OpAttrs attrs) : op_(op), attrs_(std::move(attrs)) {}
  const char* name() const override { return op_info(op_).name; }

  std::vector<Tensor> apply(const Tensor& grad_out) override {
    const OpInfo& info = op_info(op_);
    std::vector<TensorView> in, out, gin(static_cast<size_t>(info.inputs));
    for (auto& t : inputs) in.push_back(t.view());
    for (auto& t : outputs) out.push_back(t.view());
    std::vector<Tensor> grads(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!needs_grad[i]) continue;
      grads[i] = Tensor::empty(inputs[i].shape(), inputs[i].dtype(), inputs[i].device());
      gin[i] = grads[i].view();
    }
    Tensor g =
        grad_out.dtype() == outputs[0].dtype() ? grad_out.contiguous() : grad_out.to(outputs[0].dtype());
    kernel_backward(op_, attrs_, in.data(), out.data(), g.view(), gin.data());
    return grads;
  }

  void release() override {
    Node::release();
    outputs.clear();
  }

  std::vector<Tensor> outputs;  // detached: no reference cycle through grad_fn

 private:
  Op op_;
  OpAttrs attrs_;
};

class CastNode : public Node {
 public:
  explicit CastNode(DType from) : from_(from) {}
  const char* name() const override { return "cast"; }
  std::vector<Tensor> apply(const Tensor& g) override { return {g.to(from_)}; }

 private:
  DType from_;
};

// reshape's backward: the gradient viewed in the input's shape, no copy. The
// view shares the buffer of the gradient it came from. autograd accumulates in
// place into the first gradient a node receives (core/autograd.cpp), which is
// safe here: it hands each node's gradient on once and drops it, and every
// other node returns new buffers, so a gradient buffer is shared only along a
// chain of reshapes whose earlier links are done with it.
class ReshapeNode : public Node {
 public:
  explicit ReshapeNode(Shape from) : from_(std::move(from)) {}
  const char* name() const override { return "reshape"; }
  std::vector<Tensor> apply(const Tensor& g) override { return {g.contiguous().view_as_shape(from_)}; }

 private:
  Shape from_;
};

// Promotes mixed float dtypes to f32 (e.g. an f16 activation plus an f32 bias).
std::pair<Tensor, Tensor> promote(const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return {a, b};
  return {cast(a, DType::f32), cast(b, DType::f32)};
}

// Every input on one device, checked before anything is allocated or dispatched.
Device common_device(const OpInfo& info, const std::vector<Tensor>& inputs) {
  const Device d = inputs[0].device();
  bool mixed = false;
  for (const Tensor& t : inputs) mixed |= t.device() != d;
  if (!mixed) return d;
  std::string msg = std::string(info.name) + ": inputs on different devices:";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    msg += (i ? ", " : " ") + (t.name().empty() ? "input " + std::to_string(i) : "'" + t.name() + "'") + " " +
           shape_str(t.shape()) + " " + dtype_name(t.dtype()) + " on " + device_name(t.device());
  }
  throw Error(msg + " (move them with Tensor::to or Module::to)");
}

}  // namespace

std::vector<Tensor> run_op(Op op, const std::vector<Tensor>& inputs_in, const OpAttrs& attrs) {
  const OpInfo& info = op_info(op);
  if (static_cast<int>(inputs_in.size()) != info.inputs)
    throw Error(std::string(info.name) + ": expected " + std::to_string(info.inputs) + " inputs, got " +
                std::to_string(inputs_in.size()));
  for (size_t i = 0; i < inputs_in.size(); ++i)
    if (!inputs_in[i].defined())
      throw Error(std::string(info.name) + ": input " + std::to_string(i) + " is undefined");
  const Device device = inputs_in.empty() ? Device::cpu : common_device(info, inputs_in);
  std::vector<Tensor> inputs;
  std::vector<OutputSpec> specs;
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    inputs.push_back(inputs_in[i].contiguous());
    specs.push_back({inputs.back().shape(), inputs.back().dtype()});
  }
  auto out_specs = info.infer(specs, attrs);
  std::vector<Tensor> outputs;
  std::vector<TensorView> in_views, out_views;
  for (auto& t : inputs) in_views.push_back(t.view());
  for (auto& s : out_specs) {
    outputs.push_back(Tensor::empty(s.shape, s.dtype, device));
    out_views.push_back(outputs.back().view());
  }
  kernel_forward(op, attrs, in_views.data(), out_views.data());
  if (grad_enabled()) {
    auto node = std::make_shared<OpNode>(op, attrs);
    node->inputs = inputs;
    node->needs_grad.resize(inputs.size());
    for (int i = 0; i < info.inputs; ++i) node->needs_grad[i] = (info.differentiable >> i) & 1u;
    for (auto& o : outputs) node->outputs.push_back(o.detach());
    record(outputs[0], node);
  }
  return outputs;
}

namespace {
Tensor op1(Op op, std::vector<Tensor> in, const OpAttrs& a = {}) { return run_op(op, in, a)[0]; }
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return op1(Op::add, {x, y});
}
Tensor sub(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return op1(Op::sub, {x, y});
}
Tensor mul(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return op1(Op::mul, {x, y});
}
Tensor div(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return op1(Op::div, {x, y});
}
Tensor relu(const Tensor& x) { return op1(Op::relu, {x}); }
Tensor gelu(const Tensor& x) { return op1(Op::gelu, {x}); }
Tensor tanh(const Tensor& x) { return op1(Op::tanh, {x}); }
Tensor sigmoid(const Tensor& x) { return op1(Op::sigmoid, {x}); }
Tensor scale(const Tensor& x, double s) { return mul(x, Tensor::scalar(s, x.dtype(), x.device())); }

Tensor sum(const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
  OpAttrs a;
  a.axes = std::move(axes);
  a.keepdim = keepdim;
  return op1(Op::sum, {x}, a);
}
Tensor mean(const Tensor& x, std::vector<int64_t> axes, bool keepdim) {
  OpAttrs a;
  a.axes = std::move(axes);
  a.keepdim = keepdim;
  return op1(Op::mean, {x}, a);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  auto [x, y] = promote(a, b);
  return op1(Op::matmul, {x, y});
}
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (x.dtype() != w.dtype() || x.dtype() != b.dtype())
    return op1(Op::linear, {cast(x, DType::f32), cast(w, DType::f32), cast(b, DType::f32)});
  return op1(Op::linear, {x, w, b});
}

Tensor softmax(const Tensor& x) { return op1(Op::softmax, {x}); }
Tensor log_softmax(const Tensor& x) { return op1(Op::log_softmax, {x}); }
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, double label_smoothing) {
  OpAttrs a;
  a.label_smoothing = label_smoothing;
  return op1(Op::cross_entropy, {logits, labels}, a);
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t padding) {
  OpAttrs a;
  a.stride[0] = a.stride[1] = stride;
  a.padding[0] = a.padding[1] = padding;
  if (x.dtype() != w.dtype() || x.dtype() != b.dtype())
    return op1(Op::conv2d, {cast(x, DType::f32), cast(w, DType::f32), cast(b, DType::f32)}, a);
  return op1(Op::conv2d, {x, w, b}, a);
}

namespace {
OpAttrs pool_attrs(int64_t kernel, int64_t stride, int64_t padding) {
  OpAttrs a;
  a.kernel[0] = a.kernel[1] = kernel;
  a.stride[0] = a.stride[1] = stride > 0 ? stride : kernel;
  a.padding[0] = a.padding[1] = padding;
  return a;
}
}  // namespace

Tensor max_pool2d(const Tensor& x, int64_t k, int64_t s, int64_t p) {
  return op1(Op::max_pool2d, {x}, pool_attrs(k, s, p));
}
Tensor avg_pool2d(const Tensor& x, int64_t k, int64_t s, int64_t p) {
  return op1(Op::avg_pool2d, {x}, pool_attrs(k, s, p));
}
Tensor global_avg_pool2d(const Tensor& x) { return op1(Op::global_avg_pool2d, {x}); }

// gamma, beta and the running statistics go to the op in their own storage:
// FP32 masters and statistics beside half activations are the op's contract, so
// there is no cast of the parameters and no half copy of the statistics.
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, double momentum, double eps, bool relu,
                  bool max_pool_2x2) {
  OpAttrs a;
  a.training = training;
  a.relu = relu;
  a.max_pool_2x2 = max_pool_2x2;
  a.momentum = momentum;
  a.eps = eps;
  // updated in place by the kernel: run_op's contiguous() would update a copy
  if (!running_mean.is_contiguous() || !running_var.is_contiguous())
    throw Error("batch_norm: running statistics must be contiguous");
  return op1(Op::batch_norm, {x, gamma, beta, running_mean, running_var}, a);
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  OpAttrs a;
  a.eps = eps;
  return op1(Op::layer_norm, {x, gamma, beta}, a);
}

Tensor embedding(const Tensor& ids, const Tensor& table) { return op1(Op::embedding, {ids, table}); }

Tensor dropout(const Tensor& x, double p, bool training, uint64_t seed) {
  if (!training || p == 0.0) return x;
  OpAttrs a;
  a.p = p;
  a.training = training;
  a.seed = seed;
  return op1(Op::dropout, {x}, a);
}

// A contiguous tensor is reshaped as a view of its storage, both ways (the
// tiny GPT's step spent about 2% copying its heads and logits in reshapes); a
// strided one goes through the op table's reshape, which copies.
Tensor reshape(const Tensor& x, const Shape& shape) {
  OpAttrs a;
  a.shape = shape;
  if (!x.defined() || !x.is_contiguous()) return op1(Op::reshape, {x}, a);
  Tensor y = x.view_as_shape(op_info(Op::reshape).infer({{x.shape(), x.dtype()}}, a)[0].shape);
  if (grad_enabled() && tracks_grad(x)) {
    auto node = std::make_shared<ReshapeNode>(x.shape());
    node->inputs = {x};
    node->needs_grad = {true};
    record(y, node);
  }
  return y;
}

Tensor flatten(const Tensor& x, int64_t start_dim) {
  Shape s(x.shape().begin(), x.shape().begin() + start_dim);
  int64_t rest = 1;
  for (int64_t d = start_dim; d < x.dim(); ++d) rest *= x.size(d);
  s.push_back(rest);
  return reshape(x, s);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& order) {
  OpAttrs a;
  a.axes = order;
  return op1(Op::permute, {x}, a);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  std::vector<int64_t> order(static_cast<size_t>(x.dim()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  int64_t n = x.dim();
  std::swap(order[static_cast<size_t>(d0 < 0 ? d0 + n : d0)],
            order[static_cast<size_t>(d1 < 0 ? d1 + n : d1)]);
  return permute(x, order);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw Error("concat: no tensors");
  OpAttrs a;
  a.axis = axis;
  Tensor acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) acc = op1(Op::concat, {acc, xs[i]}, a);
  return acc;
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end) {
  OpAttrs a;
  a.axis = axis;
  a.start = start;
  a.end = end;
  return op1(Op::slice, {x}, a);
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, bool bthd) {
  OpAttrs a;
  a.scale = scale;
  a.bthd = bthd;
  return op1(Op::attention, {q, k, v}, a);
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = x.to(dtype);
  if (grad_enabled() && tracks_grad(x) && is_floating(dtype)) {
    auto node = std::make_shared<CastNode>(x.dtype());
    node->inputs = {x};
    node->needs_grad = {true};
    record(out, node);
  }
  return out;
}

}  // namespace strata
