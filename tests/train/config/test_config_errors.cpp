// Every kind of config error, and what its message must say: the key path, where
// it came from (file:line or the override), what was expected, and suggestions.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "train/config/config.h"

namespace strata {
namespace {

// The message of the ConfigError that parsing throws (fails the test if none).
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, "configs/x.yaml", overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for:\n" << yaml;
  return "";
}

void expect_has(const std::string& msg, const std::vector<std::string>& parts) {
  for (const std::string& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(ConfigErrors, UnknownKeyNamesPathFileLineAndNearestKey) {
  expect_has(error_of("model:\n  name: mlp\noptimizer:\n  lrr: 0.1\n"),
             {"unknown config key 'optimizer.lrr'", "configs/x.yaml:4", "did you mean 'optimizer.lr'?"});
  expect_has(error_of("optimiser:\n  lr: 0.1\n"),
             {"'optimiser'", "configs/x.yaml:1", "did you mean 'optimizer'?"});
  expect_has(error_of("trainer:\n  epochs: 3\n  accumulation: 2\n"),
             {"'trainer.accumulation'", "x.yaml:3", "did you mean 'trainer.accumulate'?"});
  expect_has(error_of("lr: 0.1\n"), {"'lr'", "x.yaml:1", "did you mean 'optimizer.lr'?"});
  expect_has(error_of("model:\n  hidden:\n    - 1\n  dropuot: 0.1\n"), {"x.yaml:4", "'model.dropout'"});
}

TEST(ConfigErrors, WrongTypeNamesKeyLineExpectedAndValue) {
  expect_has(error_of("optimizer:\n  lr: fast\n"),
             {"config key 'optimizer.lr'", "configs/x.yaml:2", "expected float > 0", "got 'fast'"});
  expect_has(error_of("trainer:\n\n  epochs: 2.5\n"),
             {"'trainer.epochs'", "x.yaml:3", "expected int >= 1", "'2.5'"});
  expect_has(error_of("optimizer: {nesterov: maybe}\n"),
             {"'optimizer.nesterov'", "x.yaml:1", "expected bool", "'maybe'"});
  expect_has(error_of("model: {hidden: 256}\n"), {"'model.hidden'", "expected list<int> >= 1", "got '256'"});
  expect_has(error_of("model: {hidden: [256, x]}\n"), {"'model.hidden[1]'", "x.yaml:1", "got 'x'"});
  expect_has(error_of("model: {name: [mlp]}\n"), {"'model.name'", "expected string", "got a list"});
  expect_has(error_of("data: {cache_bytes: lots}\n"), {"'data.cache_bytes'", "x.yaml:1", "'lots'"});
  expect_has(error_of("model: 3\n"), {"'model'", "x.yaml:1", "expected a mapping of model.* keys"});
  expect_has(error_of("optimizer:\n  lr: .nan\n"), {"'optimizer.lr'", "x.yaml:2", "finite"});
}

TEST(ConfigErrors, BadEnumValueListsChoices) {
  expect_has(error_of("optimizer:\n  name: adam\n"),
             {"'optimizer.name'", "x.yaml:2", "expected enum: sgd | adamw", "got 'adam'"});
  expect_has(error_of("precision: {dtype: fp8}\n"), {"'precision.dtype'", "fp32 | fp16 | bf16", "'fp8'"});
}

TEST(ConfigErrors, OutOfRangeNamesKeyRangeAndValue) {
  expect_has(error_of("optimizer:\n  lr: -0.1\n"),
             {"config key 'optimizer.lr'", "x.yaml:2", "value -0.1 is out of range", "float > 0"});
  expect_has(error_of("model:\n  dropout: 1\n"), {"'model.dropout'", "x.yaml:2", "[0, 1)"});
  expect_has(error_of("data: {batch_size: 0}\n"), {"'data.batch_size'", "int >= 1", "value 0"});
  expect_has(error_of("schedule: {milestones: [10, -1]}\n"),
             {"'schedule.milestones[1]'", "value -1", ">= 0"});
}

TEST(ConfigErrors, OverrideErrorsNameTheOverride) {
  expect_has(error_of("", {"optimizer.lrr=0.1"}),
             {"unknown config key 'optimizer.lrr'", "command line override 'optimizer.lrr=0.1'",
              "did you mean 'optimizer.lr'?"});
  expect_has(error_of("", {"optimizer.lr=abc"}),
             {"'optimizer.lr'", "command line override 'optimizer.lr=abc'", "expected float > 0", "'abc'"});
  expect_has(error_of("", {"optimizer.lr=-1"}), {"command line override 'optimizer.lr=-1'", "out of range"});
  expect_has(error_of("", {"model.hidden=[1,"}), {"command line override 'model.hidden=[1,'", "list<int>"});
  expect_has(error_of("", {"optimizer.lr"}), {"command line override 'optimizer.lr'", "expected key=value"});
  expect_has(error_of("", {"trainer.epochs=[3]"}), {"'trainer.epochs'", "got a list"});
  expect_has(error_of("", {"optimizer={lr: 1}"}),
             {"config section 'optimizer'", "one at a time", "optimizer."});
}

TEST(ConfigErrors, CrossKeyAndSyntaxAndFileErrors) {
  expect_has(error_of("data: {normalize_mean: [0.5, 0.5], normalize_std: [0.2]}\n"),
             {"'data.normalize_mean'", "'data.normalize_std'", "same length", "configs/x.yaml"});
  expect_has(error_of("model:\n  hidden: [1, 2\n"), {"configs/x.yaml:", "YAML syntax error"});
  expect_has(error_of("- a\n- b\n"), {"configs/x.yaml", "mapping"});
  try {
    load_config("/nonexistent/strata.yaml");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    expect_has(e.what(), {"/nonexistent/strata.yaml"});
  }
}

TEST(ConfigErrors, LoadConfigNamesTheFilePath) {
  std::string path = ::testing::TempDir() + "strata_bad_config.yaml";
  std::ofstream(path) << "seed: 1\ntrainer:\n  epoch: 3\n";
  try {
    load_config(path);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    expect_has(e.what(), {path + ":3", "'trainer.epoch'", "did you mean 'trainer.epochs'?"});
  }
  std::remove(path.c_str());
}

TEST(ConfigErrors, DuplicateKeyNamesBothLines) {
  expect_has(error_of("optimizer:\n  lr: 0.1\n  momentum: 0.9\n  lr: 0.5\n"),
             {"config key 'optimizer.lr' appears twice", "configs/x.yaml:2", "configs/x.yaml:4"});
  expect_has(error_of("seed: 1\ntrainer: {epochs: 2}\nseed: 2\n"),
             {"'seed' appears twice", "x.yaml:1", "x.yaml:3"});
  expect_has(error_of("trainer:\n  epochs: 2\ntrainer:\n  max_steps: 5\n"),
             {"'trainer' appears twice", "x.yaml:1", "x.yaml:3"});
}

TEST(ConfigErrors, DirectoryAsConfigIsRefused) {
  const std::string dir = ::testing::TempDir() + "strata_config_dir.yaml";
  std::filesystem::create_directories(dir);
  try {
    load_config(dir);
    ADD_FAILURE() << "no error for a directory";
  } catch (const ConfigError& e) {
    expect_has(e.what(), {dir, "is a directory"});
  }
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace strata
