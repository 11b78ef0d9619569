// strata-generate end to end: a tiny GPT saved as the trainer saves one, then
// sampled by the binary. The same seed gives the same text; top-k 1 gives the
// greedy decoding computed here by running the saved model itself; bad options
// fail with a message. Also generate_tokens and the byte-text escaping directly.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "base/error.h"
#include "core/autograd.h"
#include "models/generate.h"
#include "tiny_gpt.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {

struct CliRun {
  int rc = -1;
  std::string out, err;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs strata-generate with `args` (already shell-quoted).
CliRun generate(const std::string& args, const fs::path& scratch) {
  const char* bin = std::getenv("STRATA_BIN_DIR");
  const std::string exe = std::string(bin && *bin ? bin : STRATA_TEST_BIN_DIR) + "/strata-generate";
  const fs::path out = scratch / "stdout", err = scratch / "stderr";
  const std::string cmd = "'" + exe + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  CliRun r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// Greedy decoding by hand: the argmax of the last position over the last `context` ids.
std::vector<int64_t> greedy(Module& model, std::vector<int64_t> seq, int64_t n, int64_t context) {
  NoGradGuard no_grad;
  model.eval();
  const size_t start = seq.size();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t T = std::min<int64_t>(static_cast<int64_t>(seq.size()), context);
    std::vector<int64_t> w(seq.end() - T, seq.end());
    auto logits = model(Tensor::from_vector_i64(w, {1, T})).to_float_vector();
    const int64_t V = static_cast<int64_t>(logits.size()) / T;
    const float* row = logits.data() + (T - 1) * V;
    seq.push_back(std::max_element(row, row + V) - row);
  }
  return {seq.begin() + static_cast<long>(start), seq.end()};
}

size_t distinct(const std::vector<int64_t>& ids) { return std::set<int64_t>(ids.begin(), ids.end()).size(); }

std::string ids_csv(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace

TEST(StrataGenerate, ByteModelSameSeedSameTextAndTopKOneIsGreedy) {
  test_ckpt::TempDir dir("strata-gen");
  const TrainConfig cfg = test_ckpt::gpt_config(256, 8, 2, 2, 32);
  fs::create_directories(dir.path() / "run" / "checkpoints");
  auto model = models::build_model(models::spec_from_config(cfg));
  test_ckpt::scramble(*model, 1);
  save_checkpoint(test_ckpt::checkpoint_of(*model, cfg, 3), dir.path() / "run" / "checkpoints" / "ckpt-3.h5");
  const std::string common =
      "--checkpoint '" + (dir.path() / "run").string() + "' --prompt 'Hi, ' --tokens 20";

  CliRun a = generate(common + " --seed 5 --temperature 1.3", dir.path());
  CliRun b = generate(common + " --seed 5 --temperature 1.3", dir.path());
  CliRun c = generate(common + " --seed 6 --temperature 1.3", dir.path());
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out) << "the seed changes nothing";
  EXPECT_NE(a.err.find("ckpt-3.h5"), std::string::npos) << a.err;
  EXPECT_EQ(a.out.rfind("Hi, ", 0), 0u) << "the prompt comes first: " << a.out;

  // 20 tokens > context 8: the window slides
  CliRun g = generate(common + " --top-k 1 --seed 99", dir.path());
  ASSERT_EQ(g.rc, 0) << g.err;
  std::vector<int64_t> all = models::text_to_byte_ids("Hi, ");
  const auto want = greedy(*model, all, 20, cfg.model.context);
  ASSERT_GE(distinct(want), 4u) << "a degenerate model: greedy decoding barely depends on the window";
  all.insert(all.end(), want.begin(), want.end());
  EXPECT_EQ(g.out, models::byte_ids_to_text(all) + "\n");
}

TEST(StrataGenerate, IdModelTakesPromptIdsAndPrintsIds) {
  test_ckpt::TempDir dir("strata-gen");
  const TrainConfig cfg = test_ckpt::gpt_config(50, 6);
  const fs::path ck = dir.path() / "ck.h5";
  auto model = models::build_model(models::spec_from_config(cfg));
  test_ckpt::scramble(*model, 2);
  save_checkpoint(test_ckpt::checkpoint_of(*model, cfg), ck);
  const std::string base = "--checkpoint '" + ck.string() + "' ";
  CliRun g = generate(base + "--prompt-ids 3,14,15 --tokens 9 --top-k 1", dir.path());
  ASSERT_EQ(g.rc, 0) << g.err;
  std::vector<int64_t> all = {3, 14, 15};
  const auto want = greedy(*model, all, 9, cfg.model.context);
  ASSERT_GE(distinct(want), 3u) << "a degenerate model: greedy decoding barely depends on the window";
  all.insert(all.end(), want.begin(), want.end());
  EXPECT_EQ(g.out, ids_csv(all) + "\n");

  auto fails = [&](const std::string& args, const std::string& says) {
    CliRun r = generate(base + args, dir.path());
    EXPECT_EQ(r.rc, 1) << args;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  };
  fails("--prompt-ids 1 --temperature 0", "temperature must be a finite number > 0");
  fails("--prompt-ids 1 --top-k 51", "top_k must be in [1, 50]");
  fails("--prompt-ids 1,50", "prompt id 50 is outside the vocabulary [0, 50)");
  fails("--prompt-ids 1,x", "--prompt-ids: 'x' is not an integer");
  fails("--prompt hello", "--prompt needs a byte-level model");
  EXPECT_EQ(generate(base, dir.path()).rc, 2) << "no prompt: usage";
}

TEST(Generate, SamplesFromTheWindowAndChecksThePrompt) {
  const TrainConfig cfg = test_ckpt::gpt_config(30, 4);
  auto model = models::build_model(models::spec_from_config(cfg));
  test_ckpt::scramble(*model, 4);
  models::GenerateOptions opt;
  opt.tokens = 12;
  opt.context = 4;
  opt.vocab = 30;
  opt.sampling.top_k = 1;
  Generator gen(0);
  const auto want = greedy(*model, {1, 2}, 12, 4);
  ASSERT_GE(distinct(want), 3u) << "a degenerate model: greedy decoding barely depends on the window";
  EXPECT_EQ(models::generate_tokens(*model, {1, 2}, opt, gen), want);
  EXPECT_THROW(models::generate_tokens(*model, {}, opt, gen), ConfigError);
  EXPECT_THROW(models::generate_tokens(*model, {30}, opt, gen), ConfigError);
  opt.vocab = 31;  // the model's logits are 30 wide
  EXPECT_THROW(models::generate_tokens(*model, {1}, opt, gen), ShapeError);
}

TEST(Generate, ByteTextEscapesAndDecodesBack) {
  EXPECT_EQ(models::byte_ids_to_text({72, 105, 10, 9, 92, 0, 255, 127}), "Hi\n\t\\\\\\x00\\xff\\x7f");
  EXPECT_EQ(models::text_to_byte_ids("a\xff"), (std::vector<int64_t>{97, 255}));
  EXPECT_THROW(models::byte_ids_to_text({256}), ConfigError);
}
