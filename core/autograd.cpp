#include "core/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "kernels/device_ops.h"

namespace strata {

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

void record(Tensor& out, std::shared_ptr<Node> node) {
  bool any = false;
  node->needs_grad.resize(node->inputs.size());
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    bool n = node->needs_grad[i] && tracks_grad(node->inputs[i]);
    node->needs_grad[i] = n;
    any = any || n;
  }
  if (!any || !grad_enabled()) return;
  out.impl()->requires_grad = true;
  out.set_grad_fn(std::move(node));
}

void accumulate_into(Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel()) throw ShapeError("gradient accumulation: " + a.str() + " += " + b.str());
  if (a.device() != b.device())
    throw Error("gradient accumulation: " + a.str() + " on " + device_name(a.device()) + " += " + b.str() +
                " on " + device_name(b.device()));
  if (!a.is_contiguous()) throw Error("gradient accumulation into " + a.str() + ", which is not contiguous");
  // a += b in FP32 arithmetic on the device, b read in its own dtype
  dev::axpy(1.0, b.contiguous().view(), a.view());
}

void run_backward(const Tensor& root, const Tensor& grad_in) {
  if (!root.requires_grad())
    throw Error("backward() on " + root.str() +
                ", which does not require grad (no parameter contributed to it)");
  Tensor grad = grad_in;
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw Error("backward() without a gradient needs a single-element tensor, got " + root.str());
    grad = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  if (!root.grad_fn()) {  // a leaf: its gradient is the seed
    Tensor r = root;
    if (r.grad().defined()) {
      Tensor g = r.grad();
      accumulate_into(g, grad);
    } else {
      r.set_grad(grad.to(root.dtype()));
    }
    return;
  }
  // topological order by iterative DFS (post-order)
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::shared_ptr<Node>> keep{root.grad_fn()};  // alive until the pass ends:
  // release() below drops a node's inputs, which may hold the last reference to an upstream node
  std::vector<std::pair<Node*, size_t>> stack{{root.grad_fn().get(), 0}};
  seen.insert(root.grad_fn().get());
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->inputs.size()) {
      const Tensor& in = n->inputs[i++];
      if (in.defined() && in.grad_fn() && !seen.count(in.grad_fn().get())) {
        seen.insert(in.grad_fn().get());
        keep.push_back(in.grad_fn());
        stack.push_back({in.grad_fn().get(), 0});
      }
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  // pending gradient contributions per leaf, so grad-ready hooks fire once, at the last
  std::unordered_map<TensorImpl*, int> pending;
  for (Node* n : order)
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (n->needs_grad[i] && n->inputs[i].defined() && !n->inputs[i].grad_fn() &&
          n->inputs[i].requires_grad())
        ++pending[n->inputs[i].impl()];
  auto leaf_done = [&](Tensor& leaf) {
    if (--pending[leaf.impl()] == 0)
      for (auto& hook : leaf.impl()->grad_ready_hooks) hook(leaf);
  };
  std::unordered_map<Node*, Tensor> grads;
  grads[root.grad_fn().get()] = grad;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    auto g = grads.find(n);
    if (g == grads.end()) {  // contributes nothing to root; its leaves' counts still drop
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        Tensor in = n->inputs[i];
        if (n->needs_grad[i] && in.defined() && !in.grad_fn() && in.requires_grad()) leaf_done(in);
      }
      continue;
    }
    Tensor gout = g->second;
    grads.erase(g);
    auto gin = n->apply(gout);
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Tensor in = n->inputs[i];
      bool leaf = in.defined() && !in.grad_fn() && in.requires_grad() && n->needs_grad[i];
      if (i >= gin.size() || !gin[i].defined() || !n->needs_grad[i]) {
        if (leaf) leaf_done(in);
        continue;
      }
      if (in.grad_fn()) {
        auto& slot = grads[in.grad_fn().get()];
        if (!slot.defined())
          slot = gin[i];
        else {
          if (slot.same(gin[i])) slot = slot.clone();
          accumulate_into(slot, gin[i]);
        }
      } else if (in.requires_grad()) {
        Tensor existing = in.grad();
        if (!existing.defined())
          in.set_grad(gin[i].dtype() == in.dtype() ? gin[i].contiguous() : gin[i].to(in.dtype()));
        else
          accumulate_into(existing, gin[i]);
        leaf_done(in);
      }
    }
    n->release();
  }
}

}  // namespace strata
