// Parsing, overrides, the resolved.yaml round trip and the sample configs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "source_dir.h"
#include "train/config/config.h"

namespace strata {
namespace {

std::string source_dir() { return strata_test_source_dir(); }

TEST(ConfigParse, EmptyTextGivesDefaults) {
  EXPECT_EQ(parse_config(""), TrainConfig{});
  TrainConfig c = parse_config("{}");
  EXPECT_EQ(c.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(c.data.cache_bytes, int64_t{4} << 30);
  EXPECT_DOUBLE_EQ(c.precision.init_scale, 65536.0);
  EXPECT_EQ(c.precision.growth_interval, 2000);
  EXPECT_EQ(c.seed, 42);
}

TEST(ConfigParse, ReadsEveryKind) {
  TrainConfig c = parse_config(R"(
model: {name: cnn, channels: [16, 32, 64], dropout: 0.25}
data:
  train_url: s3://bucket/train
  cache_bytes: 1.5GiB
  lookahead_bytes: 1000
  normalize_mean: [0.5]
  normalize_std: [0.25]
optimizer:
  name: sgd
  lr: 1e-2
  nesterov: yes
schedule: {name: multistep, milestones: [100, 200]}
early_stopping:
checkpoint: {resume: }
logging: {console: off}
seed: 7
)");
  EXPECT_EQ(c.model.name, "cnn");
  EXPECT_EQ(c.model.channels, (std::vector<int64_t>{16, 32, 64}));
  EXPECT_DOUBLE_EQ(c.model.dropout, 0.25);
  EXPECT_EQ(c.data.train_url, "s3://bucket/train");
  EXPECT_EQ(c.data.cache_bytes, int64_t{3} << 29);
  EXPECT_EQ(c.data.lookahead_bytes, 1000);
  EXPECT_EQ(c.data.normalize_std, std::vector<double>{0.25});
  EXPECT_EQ(c.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
  EXPECT_TRUE(c.optimizer.nesterov);
  EXPECT_EQ(c.schedule.milestones, (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(c.checkpoint.resume, "");
  EXPECT_EQ(c.logging.console, "off");
  EXPECT_EQ(c.seed, 7);
}

TEST(ConfigParse, DottedKeysInTheFile) {
  TrainConfig c = parse_config("optimizer.lr: 0.5\nmodel:\n  hidden: [64]\n");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.5);
  EXPECT_EQ(c.model.hidden, std::vector<int64_t>{64});
}

// A group of keys inside a section ("data.s3") nests like a section, or is dotted.
TEST(ConfigParse, KeyGroupsNestOrTakeDots) {
  TrainConfig c = parse_config("data:\n  s3:\n    connections: 8\n    part_bytes: 16MiB\n");
  EXPECT_EQ(c.data.s3_connections, 8);
  EXPECT_EQ(c.data.s3_part_bytes, int64_t{16} << 20);
  EXPECT_EQ(parse_config("data: {s3.connections: 2}\n").data.s3_connections, 2);
  EXPECT_THROW(parse_config("data: {s3: {connection: 2}}\n"), ConfigError);
}

TEST(ConfigParse, OverridesScalarsAndLists) {
  TrainConfig c = parse_config("optimizer: {lr: 0.1}\n", "x.yaml",
                               {"optimizer.lr=0.02", "model.hidden=[512,256]", "data.cache_bytes=2GiB",
                                "data.normalize_mean=[0.1, 0.2]", "data.normalize_std=[1,2]",
                                "checkpoint.resume=", "data.train_url=file://runs/data/a=b",
                                "optimizer.nesterov=true", "trainer.epochs=3", "logging.console=plain"});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.02);
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{512, 256}));
  EXPECT_EQ(c.data.cache_bytes, int64_t{2} << 30);
  EXPECT_EQ(c.data.normalize_mean, (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(c.checkpoint.resume, "");
  EXPECT_EQ(c.data.train_url, "file://runs/data/a=b");
  EXPECT_TRUE(c.optimizer.nesterov);
  EXPECT_EQ(c.trainer.epochs, 3);
  EXPECT_EQ(c.logging.console, "plain");
}

TEST(ConfigParse, DataS3IsANestedMapping) {
  TrainConfig c =
      parse_config("data:\n  s3:\n    endpoint: http://localhost:7480\n    addressing_style: virtual\n",
                   "x.yaml", {"data.s3.region=eu-west-1", "data.s3.profile=dev"});
  EXPECT_EQ(c.data.s3_endpoint, "http://localhost:7480");
  EXPECT_EQ(c.data.s3_addressing_style, "virtual");
  EXPECT_EQ(c.data.s3_region, "eu-west-1");
  EXPECT_EQ(c.data.s3_profile, "dev");
  EXPECT_NE(to_yaml(c).find("\n  s3:\n    endpoint: http://localhost:7480  #"), std::string::npos)
      << to_yaml(c);
  EXPECT_THROW(parse_config("data: {s3: {addressing_style: host}}"), ConfigError);
  EXPECT_THROW(parse_config("data: {s3: {endpiont: x}}"), ConfigError);
  EXPECT_THROW(parse_config("", "x", {"data.s3=x"}), ConfigError);
}

TEST(ConfigParse, OverridesApplyInOrder) {
  TrainConfig c = parse_config("", "x.yaml", {"seed=1", "seed=2"});
  EXPECT_EQ(c.seed, 2);
}

// Sets every key to a value other than its default, so the round trip covers all.
TrainConfig every_key_changed() {
  TrainConfig c;
  c.model = {"cnn", {7, 9, 11}, {3}, {4, 5}, 0.125, 100, 1000, 64, 3, 2, 48};
  c.data = {"s3://b/train data",
            "http://h:80/test",
            "file:///val set",
            "/nvme/cache dir",
            3 * (int64_t{1} << 30) + 5,
            "persistent",
            33,
            4,
            int64_t{1} << 20,
            8,
            7.5,
            3,
            {0.1, 1.0 / 3.0},
            {0.3, 1e-7},
            "pad",
            3,
            true,
            96,
            1,
            {0.25, 0.75},
            {0.5, 2.0},
            {0.25, 0.125, 0.5},
            0.75,
            true,
            "/etc/strata/data.key",
            "https://obs.cn-north-4.myhuaweicloud.com",
            "cn-north-4",
            "virtual",
            "/etc/ca bundle.pem",
            "obs",
            16,
            int64_t{3} << 20,
            9,
            2.5};
  c.optimizer = {"sgd", 0.1 + 0.2, 0.5, true, 0.1, 0.0, 0.8, 0.99, 1e-6, true};
  c.schedule = {"onecycle", 5,    0.01,           7, {1, 2, 3}, 0.5,  1e-5, 0.4,  0.25, 10.0,
                100.0,      1000, "val_accuracy", 2, 0.2,       0.01, 3,    "max"};
  c.precision = {"bf16", 1024.0, 3.0, 0.25, 100, true, 0.5};
  c.trainer = {12, 4, 2, 500, 2, 10000, 9.9e14};
  c.clipping = {1.0};
  c.early_stopping = {true, "val_accuracy", "max", 3, 0.001, false};
  c.checkpoint = {100, 2, 0, false, "auto", true, 12.5};
  c.outputs = {"/nvme/stage", 5.5,    int64_t{32} << 20, 3, "https://s3.example",
               "eu-west-1",   "runs", "/ca.pem"};
  c.logging = {10, false, "off", 9400, "0.0.0.0"};
  c.distributed = {"nccl", "bf16"};
  c.seed = 123456789012;
  c.device = "cuda";
  return c;
}

TEST(ConfigRoundTrip, DefaultsAndEveryKeyChanged) {
  for (const TrainConfig& c : {TrainConfig{}, every_key_changed()}) {
    std::string text = to_yaml(c);
    EXPECT_EQ(parse_config(text, "resolved.yaml"), c) << text;
    EXPECT_EQ(to_yaml(parse_config(text, "resolved.yaml")), text);
  }
}

TEST(ConfigRoundTrip, EveryKeyChangedDiffersFromDefaultsInEveryKey) {
  const TrainConfig a, b = every_key_changed();
  for (const ConfigKey& key : config_schema())
    EXPECT_NE(format_config_value(key, a), format_config_value(key, b)) << key.path;
}

TEST(ConfigRoundTrip, StringsThatLookLikeOtherTypesStayStrings) {
  TrainConfig c;
  for (std::string s :
       {"off", "true", "123", "1e3", "a: b", "x # y", "null", "~", "-", "'q'", "\"dq\"", "\\", ""}) {
    c.checkpoint.resume = s;
    EXPECT_EQ(parse_config(to_yaml(c)).checkpoint.resume, s) << s;
  }
}

TEST(ConfigRoundTrip, ResolvedYamlListsEveryKeyWithItsDoc) {
  std::string text = to_yaml(TrainConfig{});
  EXPECT_NE(text.find("optimizer:\n  name: adamw  # Optimizer\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nseed: 42  # "), std::string::npos) << text;
  EXPECT_NE(text.find("  cache_bytes: 4GiB  # "), std::string::npos) << text;
}

TEST(ConfigSamples, BothFashionMnistConfigsParse) {
  for (const char* name : {"fashion_mnist_mlp", "fashion_mnist_cnn"}) {
    SCOPED_TRACE(name);
    TrainConfig c = load_config(source_dir() + "/configs/" + name + ".yaml");
    EXPECT_EQ(c.model.num_classes, 10);
    EXPECT_NE(c.data.train_url.find("fashion-mnist"), std::string::npos);
    EXPECT_EQ(parse_config(to_yaml(c)), c);
  }
  EXPECT_EQ(load_config(source_dir() + "/configs/fashion_mnist_mlp.yaml").model.name, "mlp");
  EXPECT_EQ(load_config(source_dir() + "/configs/fashion_mnist_cnn.yaml").model.name, "cnn");
}

TEST(ConfigBytes, ParseAndFormat) {
  EXPECT_EQ(parse_byte_size("1GiB"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000);
  EXPECT_EQ(parse_byte_size("4K"), 4096);
  EXPECT_EQ(parse_byte_size("100"), 100);
  EXPECT_EQ(parse_byte_size("100B"), 100);
  EXPECT_THROW(parse_byte_size("lots"), ConfigError);
  EXPECT_THROW(parse_byte_size("-1GiB"), ConfigError);
  EXPECT_THROW(parse_byte_size("GiB"), ConfigError);
  EXPECT_EQ(format_byte_size(int64_t{4} << 30), "4GiB");
  EXPECT_EQ(format_byte_size(1536 * 1024), "1536KiB");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(0), "0");
}

}  // namespace
}  // namespace strata
