// Module: the base of every layer and model. A module owns named parameters (FP32
// leaf tensors that take gradients), named buffers (state that is saved but not
// trained, e.g. BatchNorm running statistics) and named child modules. Names are
// dotted paths through the children ("features.1.running_mean"), as PyTorch's.
// A module lives on one device: to(Device) moves every parameter and buffer in
// place, so handles held elsewhere (an optimizer's parameter list) stay valid.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace strata {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // A short type name for messages and summaries ("Linear").
  virtual std::string type_name() const { return "Module"; }

  // Recursive, in registration order: own entries first, then each child's.
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  int64_t num_parameters() const;  // total element count

  // Training mode (the default) vs evaluation; recursive. Affects BatchNorm and Dropout.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();  // drops every parameter's gradient

  // Moves every parameter (with its gradient) and buffer, persistent or not, to
  // `device`, recursively; each tensor keeps its TensorImpl (Tensor::to_).
  void to(Device device);
  // The device of the first parameter or buffer (cpu for a module with none).
  Device device() const;

 protected:
  // Registers `t` (made an FP32 leaf with requires_grad) and returns the handle.
  Tensor register_parameter(const std::string& name, Tensor t);
  // A buffer is state that takes no gradient. Persistent buffers are listed by
  // named_buffers() (saved in checkpoints, synchronised across ranks);
  // non-persistent ones (constants such as a zero bias) only move with to().
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  NamedTensors params_, buffers_, transient_buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace strata
