#include "models/generate.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "core/autograd.h"

namespace strata::models {

std::vector<int64_t> generate_tokens(Module& model, const std::vector<int64_t>& prompt,
                                     const GenerateOptions& opt, Generator& gen) {
  if (prompt.empty()) throw ConfigError("generate: the prompt must hold at least one token");
  if (opt.tokens < 0) throw ConfigError("generate: tokens must be >= 0, got " + std::to_string(opt.tokens));
  if (opt.context <= 0)
    throw ConfigError("generate: context must be > 0, got " + std::to_string(opt.context));
  if (opt.vocab <= 0) throw ConfigError("generate: vocab must be > 0, got " + std::to_string(opt.vocab));
  for (int64_t id : prompt)
    if (id < 0 || id >= opt.vocab)
      throw ConfigError("generate: prompt id " + std::to_string(id) + " is outside the vocabulary [0, " +
                        std::to_string(opt.vocab) + ")");
  NoGradGuard no_grad;
  std::vector<int64_t> seq = prompt, out;
  for (int64_t step = 0; step < opt.tokens; ++step) {
    const int64_t T = std::min<int64_t>(static_cast<int64_t>(seq.size()), opt.context);
    std::vector<int64_t> window(seq.end() - T, seq.end());
    Tensor logits = model(Tensor::from_vector_i64(window, {1, T})).to(Device::cpu).contiguous();
    const int64_t V = opt.vocab;
    if (logits.shape() != Shape{1, T, V})
      throw ShapeError("generate: the model returned " + logits.str() + " for ids [1, " + std::to_string(T) +
                       "], expected [1, " + std::to_string(T) + ", " + std::to_string(V) + "]");
    if (logits.dtype() != DType::f32) logits = logits.to(DType::f32);
    const int64_t next = sample_token(logits.data<float>() + (T - 1) * V, V, opt.sampling, gen);
    seq.push_back(next);
    out.push_back(next);
  }
  return out;
}

std::vector<int64_t> text_to_byte_ids(const std::string& text) {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string byte_ids_to_text(const std::vector<int64_t>& ids) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= kByteVocab)
      throw ConfigError("generate: token " + std::to_string(id) + " is not a byte (vocabulary 256)");
    const auto c = static_cast<unsigned char>(id);
    if (c == '\\') {
      out += "\\\\";
    } else if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace strata::models
