// Next-token sampling (models/sampling.h): argmax at top-k 1, reproducible
// draws, option checks, and draws that follow softmax(logits / T) over the top k.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "models/sampling.h"

using namespace strata;
using models::sample_token;
using models::SamplingOptions;

namespace {

// Frequencies of `n` draws from `logits` with `opt`, seed fixed.
std::vector<double> frequencies(const std::vector<float>& logits, const SamplingOptions& opt, int n) {
  Generator gen(2024);
  std::vector<double> f(logits.size());
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(sample_token(logits, opt, gen))] += 1.0 / n;
  return f;
}

// softmax(logits / T) restricted to `keep` (renormalised), computed directly.
std::vector<double> expected(const std::vector<float>& logits, double T, const std::vector<bool>& keep) {
  std::vector<double> p(logits.size());
  double z = 0;
  for (size_t i = 0; i < logits.size(); ++i) z += p[i] = keep[i] ? std::exp(logits[i] / T) : 0.0;
  for (double& v : p) v /= z;
  return p;
}

}  // namespace

TEST(Sampling, TopKOneIsArgmaxWhateverTheSeed) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 2.9f, 3.0f};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Generator gen(seed);
    EXPECT_EQ(sample_token(logits, {0.7, 1}, gen), 1) << "the lower id wins a tie";
  }
}

TEST(Sampling, FixedSeedGivesTheSameSequence) {
  std::vector<float> logits(64);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 1.3));
  auto draw = [&](uint64_t seed) {
    Generator gen(seed);
    std::vector<int64_t> s;
    for (int i = 0; i < 200; ++i) s.push_back(sample_token(logits, {1.5, 0}, gen));
    return s;
  };
  EXPECT_EQ(draw(11), draw(11));
  EXPECT_NE(draw(11), draw(12));
}

TEST(Sampling, OptionsAreChecked) {
  const std::vector<float> logits = {1, 2, 3};
  Generator gen(0);
  for (double t : {0.0, -1.0, double(NAN), double(INFINITY)}) {
    try {
      sample_token(logits, {t, 0}, gen);
      ADD_FAILURE() << "temperature " << t << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("temperature must be a finite number > 0"), std::string::npos)
          << e.what();
    }
  }
  for (int64_t k : {-1, 4}) {
    try {
      sample_token(logits, {1.0, k}, gen);
      ADD_FAILURE() << "top_k " << k << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("top_k must be in [1, 3] or 0"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(sample_token(logits, {1.0, 3}, gen));
  EXPECT_THROW(sample_token(std::vector<float>{1, NAN, 0}, {1.0, 0}, gen), ShapeError);
  EXPECT_THROW(sample_token(std::vector<float>{-INFINITY, -INFINITY}, {1.0, 0}, gen), ShapeError);
  EXPECT_EQ(sample_token(std::vector<float>{-INFINITY, 0, -INFINITY}, {1.0, 0}, gen), 1);
}

// 200,000 draws: each frequency's standard deviation is at most
// sqrt(0.25 / 200000) ~ 0.0011, so a bound of 0.01 is 9 standard deviations
// (a false failure is below 1e-18), while a wrong temperature or a missed
// top-k cut moves some probability by more than 0.05.
TEST(Sampling, DrawsFollowTheSoftmaxOfTheKeptLogits) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f};
  const int n = 200000;
  struct Case {
    SamplingOptions opt;
    std::vector<bool> keep;
  };
  for (const Case& c : {Case{{1.0, 0}, {true, true, true}}, Case{{0.5, 0}, {true, true, true}},
                        Case{{2.0, 0}, {true, true, true}}, Case{{1.0, 2}, {true, true, false}}}) {
    auto got = frequencies(logits, c.opt, n);
    auto want = expected(logits, c.opt.temperature, c.keep);
    for (size_t i = 0; i < logits.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 0.01)
          << "token " << i << ", temperature " << c.opt.temperature << ", top_k " << c.opt.top_k;
  }
}
