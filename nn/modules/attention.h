// CausalSelfAttention: multi-head causal self-attention over the `attention` op.
// x [B, T, C] -> qkv = x Wqkv^T + b [B, T, 3C] -> q, k, v [B, H, T, D] (D = C / H)
// -> causal softmax(q k^T / sqrt(D)) v [B, H, T, D] -> [B, T, C] -> out-projection
// -> dropout. Parameters: "c_attn" (Linear C -> 3C, q|k|v along the output) and
// "c_proj" (Linear C -> C), GPT-2's names, so weights map one to one.
#pragma once
#include <memory>

#include "core/module.h"
#include "core/random.h"
#include "nn/modules/dropout.h"
#include "nn/modules/linear.h"

namespace strata {

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t width, int64_t heads, double dropout = 0.0, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [B, T, C] -> [B, T, C]
  std::string type_name() const override { return "CausalSelfAttention"; }

  const std::shared_ptr<Linear>& qkv() const { return c_attn_; }
  const std::shared_ptr<Linear>& out_proj() const { return c_proj_; }

 private:
  int64_t width_, heads_;
  std::shared_ptr<Linear> c_attn_, c_proj_;
  std::shared_ptr<Dropout> drop_;  // null when the probability is 0
};

}  // namespace strata
