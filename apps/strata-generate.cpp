// strata-generate: samples text from a GPT checkpoint (see docs/models.md,
// "Generate"). Option parsing and printing only; the work is models/generate.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/checkpoint_model.h"
#include "models/generate.h"

namespace {

const char* kUsage = R"(usage: strata-generate --checkpoint PATH|RUN_DIR (--prompt TEXT | --prompt-ids 1,2,3)
                       [--tokens N] [--temperature T] [--top-k K] [--seed S]

Loads a causal language model (model gpt) from a checkpoint, or a run
directory's latest, and samples N tokens after the prompt, each from the model's
logits at the last position over the last `model.context` tokens: divided by T,
cut to the K most likely (0: all), softmax, one seeded draw. Prints the prompt
and the sample: as text for byte-level models (vocabulary 256; bytes other than
printable ASCII, newline and tab as \xHH, a backslash as \\), else as
comma-separated ids.

  --checkpoint PATH  a checkpoint file (.h5) or a run directory
  --prompt TEXT      byte-level models: the text's bytes are the prompt
  --prompt-ids IDS   comma-separated token ids (any vocabulary)
  --tokens N         tokens to sample (default 200)
  --temperature T    > 0 (default 1.0)
  --top-k K          1..vocab, or 0 for all (default 0); 1 is greedy decoding
  --seed S           the sampler's seed (default 0)
  --help             this text
)";

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

double to_double(const std::string& opt, const std::string& v) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size()) throw strata::ConfigError(opt + ": '" + v + "' is not a number");
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
  try {
    std::map<std::string, std::string> o;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      static const char* known[] = {"--checkpoint",  "--prompt", "--prompt-ids", "--tokens",
                                    "--temperature", "--top-k",  "--seed"};
      if (std::find(std::begin(known), std::end(known), a) == std::end(known))
        throw ConfigError("unknown argument '" + a + "'");
      if (i + 1 >= argc) throw ConfigError("option " + a + " needs a value");
      o[a] = argv[++i];
    }
    if (!o.count("--checkpoint") || o.count("--prompt") == o.count("--prompt-ids")) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    auto get = [&](const char* k, const char* d) { return o.count(k) ? o[k] : std::string(d); };

    models::CheckpointModel m =
        models::load_checkpoint_model(models::resolve_checkpoint_path(o["--checkpoint"]));
    if (models::model_entry(m.spec.name).task != "causal_lm")
      throw ConfigError("strata-generate: the checkpoint's model '" + m.spec.name +
                        "' is not a language model (task " + models::model_entry(m.spec.name).task +
                        ", needs causal_lm)");
    const bool bytes = m.spec.vocab_size == models::kByteVocab;
    if (o.count("--prompt") && !bytes)
      throw ConfigError("--prompt needs a byte-level model (vocabulary 256); this one has " +
                        std::to_string(m.spec.vocab_size) + " tokens: use --prompt-ids");
    const std::vector<int64_t> prompt =
        o.count("--prompt") ? models::text_to_byte_ids(o["--prompt"]) : parse_ids(o["--prompt-ids"]);

    models::GenerateOptions g;
    g.tokens = to_int("--tokens", get("--tokens", "200"));
    g.context = m.spec.context;
    g.vocab = m.spec.vocab_size;
    g.sampling.temperature = to_double("--temperature", get("--temperature", "1.0"));
    g.sampling.top_k = to_int("--top-k", get("--top-k", "0"));
    models::check_sampling_options(g.sampling, g.vocab);
    const auto seed = static_cast<uint64_t>(to_int("--seed", get("--seed", "0")));
    Generator gen(seed);
    std::cerr << "strata-generate: " << m.path.string() << ", " << m.spec.name << " vocab " << g.vocab
              << " context " << g.context << ", " << g.tokens << " tokens, temperature "
              << g.sampling.temperature << ", top-k " << g.sampling.top_k << ", seed " << seed << "\n";

    std::vector<int64_t> all = prompt;
    for (int64_t id : models::generate_tokens(*m.model, prompt, g, gen)) all.push_back(id);
    std::cout << (bytes ? models::byte_ids_to_text(all) : join_ids(all)) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "strata-generate: " << e.what() << "\n";
    return 1;
  }
}
