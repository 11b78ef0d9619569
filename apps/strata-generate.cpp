// strata-generate: samples text from a GPT checkpoint (see docs/models.md,
// "Generate"). Option parsing and printing only; the work is models/generate.
//   strata-generate --checkpoint PATH|RUN_DIR (--prompt TEXT | --prompt-ids 1,2,3)
//                   [--tokens N] [--temperature T] [--top-k K] [--seed S]
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "apps/command_line.h"
#include "base/error.h"
#include "models/checkpoint_model.h"
#include "models/generate.h"

namespace {

const char* kDescription =
    "Loads a causal language model (model gpt) from a checkpoint, or a run directory's latest, and samples\n"
    "N tokens after the prompt, each from the model's logits at the last position over the last\n"
    "`model.context` tokens: divided by T, cut to the K most likely (0: all), softmax, one seeded draw.\n"
    "Prints the prompt and the sample: as text for byte-level models (vocabulary 256; bytes other than\n"
    "printable ASCII, newline and tab as \\xHH, a backslash as \\\\), else as comma-separated ids.";

int64_t to_int(const std::string& opt, const std::string& v) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw strata::ConfigError(opt + ": '" + v + "' is not an integer");
  return x;
}

std::vector<int64_t> parse_ids(const std::string& list) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    ids.push_back(to_int("--prompt-ids", list.substr(at, comma - at)));
    at = comma + 1;
  }
  return ids;
}

std::string join_ids(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata;
  std::string checkpoint, prompt_text, prompt_ids;
  int64_t tokens = 200, top_k = 0;
  double temperature = 1.0;
  uint64_t seed = 0;
  CLI::App app(kDescription, "strata-generate");
  cli::add_version_flag(app);
  app.add_option("--checkpoint", checkpoint, "A checkpoint file (.h5) or a run directory")
      ->required()
      ->option_text("PATH|RUN_DIR");
  CLI::Option_group* prompt = app.add_option_group("prompt", "Exactly one of");
  CLI::Option* text =
      prompt->add_option("--prompt", prompt_text, "Byte-level models: the text's bytes are the prompt");
  prompt->add_option("--prompt-ids", prompt_ids, "Comma-separated token ids (any vocabulary)")
      ->option_text("1,2,3");
  prompt->require_option(1);
  app.add_option("--tokens", tokens, "Tokens to sample")->capture_default_str();
  app.add_option("--temperature", temperature, "Softmax temperature, > 0")->capture_default_str();
  app.add_option("--top-k", top_k,
                 "Sample from the K most likely: 1..vocab, or 0 for all; 1 is greedy decoding")
      ->capture_default_str();
  app.add_option("--seed", seed, "The sampler's seed")->capture_default_str();
  if (int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  const bool from_text = text->count() > 0;
  try {
    models::CheckpointModel m = models::load_checkpoint_model(models::resolve_checkpoint_path(checkpoint));
    if (models::model_entry(m.spec.name).task != "causal_lm")
      throw ConfigError("strata-generate: the checkpoint's model '" + m.spec.name +
                        "' is not a language model (task " + models::model_entry(m.spec.name).task +
                        ", needs causal_lm)");
    const bool bytes = m.spec.vocab_size == models::kByteVocab;
    if (from_text && !bytes)
      throw ConfigError("--prompt needs a byte-level model (vocabulary 256); this one has " +
                        std::to_string(m.spec.vocab_size) + " tokens: use --prompt-ids");
    const std::vector<int64_t> prompt_tokens =
        from_text ? models::text_to_byte_ids(prompt_text) : parse_ids(prompt_ids);

    models::GenerateOptions g;
    g.tokens = tokens;
    g.context = m.spec.context;
    g.vocab = m.spec.vocab_size;
    g.sampling.temperature = temperature;
    g.sampling.top_k = top_k;
    models::check_sampling_options(g.sampling, g.vocab);
    Generator gen(seed);
    std::cerr << "strata-generate: " << m.path.string() << ", " << m.spec.name << " vocab " << g.vocab
              << " context " << g.context << ", " << g.tokens << " tokens, temperature "
              << g.sampling.temperature << ", top-k " << g.sampling.top_k << ", seed " << seed << "\n";

    std::vector<int64_t> all = prompt_tokens;
    for (int64_t id : models::generate_tokens(*m.model, prompt_tokens, g, gen)) all.push_back(id);
    std::cout << (bytes ? models::byte_ids_to_text(all) : join_ids(all)) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "strata-generate: " << e.what() << "\n";
    return 1;
  }
}
