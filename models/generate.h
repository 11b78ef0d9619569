// Autoregressive sampling from a causal language model (ids [B, T] -> logits
// [B, T, V], e.g. the GPT): each step runs the model on the last `context`
// tokens and samples the next from the last position's logits. There is no KV
// cache: a step recomputes the whole window, O(context^2) attention per token,
// which is fine for the models strata trains on a CPU and short samples.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/random.h"
#include "models/sampling.h"

namespace strata::models {

struct GenerateOptions {
  int64_t tokens = 100;  // how many to sample (>= 0)
  int64_t context = 0;   // the model's longest input (> 0)
  int64_t vocab = 0;     // the model's vocabulary, its logits' width (> 0)
  SamplingOptions sampling;
};

// The `opt.tokens` sampled ids (the prompt not included). `prompt` must hold at
// least one id, each in [0, opt.vocab).
// Runs under NoGradGuard; the caller puts the model in eval mode.
std::vector<int64_t> generate_tokens(Module& model, const std::vector<int64_t>& prompt,
                                     const GenerateOptions& opt, Generator& gen);

// Byte-level vocabularies (strata-pack tokens --text): a token is a byte.
inline constexpr int64_t kByteVocab = 256;
// The ids of a text's bytes.
std::vector<int64_t> text_to_byte_ids(const std::string& text);
// Byte ids as printable text: printable ASCII, newline and tab as they are; a
// backslash as "\\" and any other byte as "\xHH" (lowercase hex), so the
// output can be decoded back to the bytes. ConfigError for an id outside [0, 256).
std::string byte_ids_to_text(const std::vector<int64_t>& ids);

}  // namespace strata::models
