// GPT (GPT-2 layout): token + learned position embeddings -> dropout -> `layers`
// pre-LayerNorm blocks x += attn(ln_1(x)); x += mlp(ln_2(x)) -> ln_f -> logits
// through the token embedding itself (tied head: one parameter, one gradient).
// ids i64 [B, T] (T <= context) -> logits [B, T, V]. Parameter names follow
// GPT-2/nanoGPT without the "transformer." prefix: wte, wpe, h.<i>.ln_1,
// h.<i>.attn.c_attn, h.<i>.attn.c_proj, h.<i>.ln_2, h.<i>.mlp.c_fc,
// h.<i>.mlp.c_proj, ln_f. GPT-2 init: N(0, 0.02) for linear weights and
// embeddings, N(0, 0.02 / sqrt(2 layers)) for the two residual projections, zero
// biases, LayerNorm 1 / 0.
#include <cmath>

#include "base/error.h"
#include "core/init.h"
#include "core/ops.h"
#include "core/precision.h"
#include "core/random.h"
#include "models/registry.h"
#include "nn/modules/modules.h"

namespace strata::models {
namespace {

void init_linear(const Linear& l, Generator& gen, double std) {
  Tensor w = l.weight(), b = l.bias();
  init::normal_(w, gen, 0.0, std);
  if (b.defined()) init::zeros_(b);
}

// The 4x-wide GELU (tanh form, as GPT-2) MLP: [.., C] -> [.., 4C] -> [.., C].
class Mlp : public Module {
 public:
  Mlp(int64_t width, double dropout, Generator& gen) {
    c_fc_ = register_module("c_fc", std::make_shared<Linear>(width, 4 * width, true, &gen));
    c_proj_ = register_module("c_proj", std::make_shared<Linear>(4 * width, width, true, &gen));
    if (dropout > 0) drop_ = register_module("drop", std::make_shared<Dropout>(dropout, &gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*c_proj_)(gelu((*c_fc_)(x)));
    return drop_ ? (*drop_)(y) : y;
  }
  std::string type_name() const override { return "Mlp"; }
  std::shared_ptr<Linear> c_fc_, c_proj_;
  std::shared_ptr<Dropout> drop_;
};

class Block : public Module {
 public:
  Block(const ModelSpec& s, Generator& gen) {
    ln_1_ = register_module("ln_1", std::make_shared<LayerNorm>(s.width));
    attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(s.width, s.heads, s.dropout, &gen));
    ln_2_ = register_module("ln_2", std::make_shared<LayerNorm>(s.width));
    mlp_ = register_module("mlp", std::make_shared<Mlp>(s.width, s.dropout, gen));
    const double std = 0.02, resid_std = 0.02 / std::sqrt(2.0 * static_cast<double>(s.layers));
    init_linear(*attn_->qkv(), gen, std);
    init_linear(*attn_->out_proj(), gen, resid_std);
    init_linear(*mlp_->c_fc_, gen, std);
    init_linear(*mlp_->c_proj_, gen, resid_std);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x + (*attn_)((*ln_1_)(x));
    return h + (*mlp_)((*ln_2_)(h));
  }
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<LayerNorm> ln_1_, ln_2_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<Mlp> mlp_;
};

class Gpt : public Module {
 public:
  explicit Gpt(const ModelSpec& s) : context_(s.context), vocab_(s.vocab_size) {
    Generator gen(s.seed);
    wte_ = register_module("wte", std::make_shared<Embedding>(s.vocab_size, s.width, &gen));
    wpe_ = register_module("wpe", std::make_shared<Embedding>(s.context, s.width, &gen));
    for (auto* e : {wte_.get(), wpe_.get()}) {
      Tensor w = e->weight();
      init::normal_(w, gen, 0.0, 0.02);
    }
    if (s.dropout > 0) drop_ = register_module("drop", std::make_shared<Dropout>(s.dropout, &gen));
    h_ = register_module("h", std::make_shared<Sequential>());
    for (int64_t i = 0; i < s.layers; ++i) h_->add(std::make_shared<Block>(s, gen));
    ln_f_ = register_module("ln_f", std::make_shared<LayerNorm>(s.width));
    zero_bias_ = register_buffer("zero_bias", Tensor::zeros({s.vocab_size}), /*persistent=*/false);
  }

  Tensor forward(const Tensor& ids) override {
    if (ids.dim() != 2 || ids.size(1) < 1 || ids.size(1) > context_)
      throw ShapeError("gpt: ids " + ids.str() + " must be [B, T] with 1 <= T <= context " +
                       std::to_string(context_));
    const int64_t T = ids.size(1);
    std::vector<int64_t> pos(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[static_cast<size_t>(t)] = t;
    Tensor p = Tensor::from_vector_i64(pos, {T});
    if (ids.device() != Device::cpu) p.to_(ids.device());
    Tensor x = (*wte_)(ids) + (*wpe_)(p);  // [B, T, C] + [T, C]
    if (drop_) x = (*drop_)(x);
    x = (*ln_f_)((*h_)(x));
    // tied head: logits = x wte^T, [B, T, C] -> [B, T, V]
    DType cd = compute_dtype();
    return linear(cast(x, cd), cast(wte_->weight(), cd), cast(zero_bias_, cd));
  }
  std::string type_name() const override { return "GPT"; }

 private:
  int64_t context_, vocab_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::shared_ptr<Dropout> drop_;
  std::shared_ptr<Sequential> h_;
  std::shared_ptr<LayerNorm> ln_f_;
  Tensor zero_bias_;
};

std::shared_ptr<Module> build_gpt(const ModelSpec& s) {
  auto positive = [](const char* key, int64_t v) {
    if (v <= 0)
      throw ConfigError(std::string("model gpt: ") + key + " must be positive, got " + std::to_string(v));
  };
  positive("model.vocab_size", s.vocab_size);
  positive("model.context", s.context);
  positive("model.layers", s.layers);
  positive("model.heads", s.heads);
  positive("model.width", s.width);
  if (s.width % s.heads != 0)
    throw ConfigError("model gpt: model.width " + std::to_string(s.width) +
                      " must be a multiple of model.heads " + std::to_string(s.heads));
  return std::make_shared<Gpt>(s);
}

// Per token, the 6N + 12 L T C estimate (Kaplan et al.; PaLM appendix B): N is
// every parameter a token's forward multiplies by (all but the position table;
// the tied head counts once, as V * C), 6 = 2 (multiply-add) x 3 (forward and
// two backward products); 12 L T C is attention's QK^T and PV, forward and
// backward, for the full T x T score matrix (the causal half is not discounted,
// as in the published MFU figures this is compared with).
double gpt_train_flops(const ModelSpec& s) {
  const double L = static_cast<double>(s.layers), C = static_cast<double>(s.width);
  const double V = static_cast<double>(s.vocab_size), T = static_cast<double>(s.context);
  const double n = L * (12 * C * C + 13 * C) + V * C + 2 * C;
  return 6 * n + 12 * L * T * C;
}

}  // namespace

void register_gpt_model() { model_registry()["gpt"] = {build_gpt, gpt_train_flops, "causal_lm"}; }

}  // namespace strata::models
