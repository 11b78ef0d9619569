// Module: the base of every layer and model. A module owns named parameters (FP32
// leaf tensors that take gradients), named buffers (state that is saved but not
// trained, e.g. BatchNorm running statistics) and named child modules. Names are
// dotted paths through the children ("features.1.running_mean"), as PyTorch's.
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

 protected:
  // Registers `t` (made an FP32 leaf with requires_grad) and returns the handle.
  Tensor register_parameter(const std::string& name, Tensor t);
  Tensor register_buffer(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void check_name(const std::string& name) const;
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;

  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace strata
