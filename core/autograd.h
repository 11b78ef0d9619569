// Reverse-mode autodiff. Every differentiable op records a Node holding what its
// backward needs; Tensor::backward() orders the recorded nodes topologically and
// runs them in reverse, accumulating gradients into leaf tensors (parameters).
#pragma once
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace strata {

class Node {
 public:
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  // Gradients of the inputs given the gradient of the node's output; an entry
  // may be undefined when that input needs none.
  virtual std::vector<Tensor> apply(const Tensor& grad_out) = 0;
  // Drops saved tensors once backward has run.
  virtual void release() { inputs.clear(); }

  std::vector<Tensor> inputs;    // the op's inputs (carry their own grad_fn)
  std::vector<bool> needs_grad;  // per input
};

// True while gradients are recorded on this thread (the default).
bool grad_enabled();

// Scope in which no graph is recorded (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// True when `t` takes part in the graph (a leaf with requires_grad or an op result).
inline bool tracks_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

// Records `node` as the producer of `out` when any of its inputs tracks gradients.
void record(Tensor& out, std::shared_ptr<Node> node);

// Backward from `root`; `grad` defaults to 1 for a single-element root.
void run_backward(const Tensor& root, const Tensor& grad);

// a += b (any float dtypes; b converted to a's dtype). Shapes must have equal numel.
void accumulate_into(Tensor& a, const Tensor& b);

}  // namespace strata
