// A model rebuilt from a checkpoint (models/checkpoint_model.h) and a checkpoint
// exported as safetensors (models/checkpoint_export.h): weights and outputs
// equal the saved model's exactly; mismatched checkpoints fail naming the tensor.
#include <gtest/gtest.h>

#include "base/error.h"
#include "core/autograd.h"
#include "core/random.h"
#include "models/checkpoint_export.h"
#include "models/checkpoint_model.h"
#include "tiny_gpt.h"
#include "train/checkpoint/safetensors.h"
#include "train/config/load.h"

using namespace strata;
namespace fs = std::filesystem;

namespace {

std::vector<float> values(const Tensor& t) { return t.to_float_vector(); }

template <typename E>
void expect_error(const std::function<void()>& f, const std::string& says) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one saying '" << says << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(CheckpointModel, GptComesBackWithTheSameWeightsAndLogits) {
  test_ckpt::TempDir dir("strata-ckm");
  const TrainConfig cfg = test_ckpt::gpt_config(40, 8);
  auto saved = test_ckpt::save_model_checkpoint(cfg, dir.path() / "ck.h5");
  auto m = models::load_checkpoint_model(dir.path() / "ck.h5");
  EXPECT_EQ(m.config, cfg);
  EXPECT_EQ(m.spec.name, "gpt");
  EXPECT_EQ(m.path, dir.path() / "ck.h5");
  EXPECT_FALSE(m.model->is_training());
  auto want = saved->named_parameters(), got = m.model->named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_EQ(values(got[i].second), values(want[i].second)) << want[i].first;
  }
  NoGradGuard no_grad;
  saved->eval();
  Tensor ids = Tensor::from_vector_i64({1, 5, 39, 0, 7}, {1, 5});
  EXPECT_EQ(values((*m.model)(ids)), values((*saved)(ids)));
}

TEST(CheckpointModel, ImageModelsTakeTheirInputShape) {
  test_ckpt::TempDir dir("strata-ckm");
  TrainConfig cfg;
  cfg.model.name = "mlp";
  cfg.model.hidden = {12};
  cfg.model.num_classes = 3;
  auto saved = test_ckpt::save_model_checkpoint(cfg, dir.path() / "ck.h5", {1, 4, 4});
  auto m = models::load_checkpoint_model(dir.path() / "ck.h5", {1, 4, 4});
  Generator gen(1);
  Tensor x = Tensor::normal({2, 1, 4, 4}, 0, 1, gen);
  saved->eval();
  EXPECT_EQ(values((*m.model)(x)), values((*saved)(x)));
  // the wrong sample shape builds a first layer of another width
  expect_error<ShapeError>(
      [&] {
        models::load_checkpoint_model(dir.path() / "ck.h5", {1, 5, 5});
      },
      "has shape [12, 16]");
}

TEST(CheckpointModel, RunDirectoryMeansItsLatestCheckpoint) {
  test_ckpt::TempDir dir("strata-ckm");
  const TrainConfig cfg = test_ckpt::gpt_config(20, 4);
  fs::create_directories(dir.path() / "checkpoints");
  test_ckpt::save_model_checkpoint(cfg, dir.path() / "checkpoints" / "ckpt-5.h5", {}, 5);
  test_ckpt::save_model_checkpoint(cfg, dir.path() / "checkpoints" / "ckpt-12.h5", {}, 12);
  test_ckpt::save_model_checkpoint(cfg, dir.path() / "checkpoints" / "ckpt-9.h5", {}, 9);
  EXPECT_EQ(models::resolve_checkpoint_path(dir.path()), dir.path() / "checkpoints" / "ckpt-12.h5");
  EXPECT_EQ(models::resolve_checkpoint_path(dir.path() / "checkpoints"),
            dir.path() / "checkpoints" / "ckpt-12.h5");
  EXPECT_EQ(models::resolve_checkpoint_path(dir.path() / "checkpoints" / "ckpt-5.h5"),
            dir.path() / "checkpoints" / "ckpt-5.h5");
  fs::create_directories(dir.path() / "empty");
  expect_error<IoError>([&] { models::resolve_checkpoint_path(dir.path() / "empty"); },
                        "no valid checkpoint");
  expect_error<IoError>([&] { models::resolve_checkpoint_path(dir.path() / "nothing"); }, "no such file");
}

TEST(CheckpointModel, MismatchedTensorsAreNamed) {
  const TrainConfig cfg = test_ckpt::gpt_config(20, 4);
  auto model = models::build_model(models::spec_from_config(cfg));
  const Checkpoint good = test_ckpt::checkpoint_of(*model, cfg);
  Checkpoint missing = good, extra = good, reshaped = good, noconfig = good;
  missing.model.erase("h.1.mlp.c_fc.bias");
  extra.model["lm_head.weight"] = good.model.at("wte.weight");
  reshaped.model["wpe.weight"] = Tensor::zeros({5, 16});
  noconfig.resolved_yaml.clear();
  expect_error<IoError>([&] { models::load_checkpoint_model(missing); },
                        "'h.1.mlp.c_fc.bias' [64] is missing");
  expect_error<IoError>([&] { models::load_checkpoint_model(extra); },
                        "/model/lm_head.weight [20, 16] is not a tensor");
  expect_error<ShapeError>([&] { models::load_checkpoint_model(reshaped); },
                           "/model/wpe.weight has shape [5, 16], the model's tensor has [4, 16]");
  expect_error<ConfigError>([&] { models::load_checkpoint_model(noconfig); }, "no /config/resolved_yaml");
  EXPECT_NO_THROW(models::load_checkpoint_model(good));
}

TEST(CheckpointExport, GptFileHoldsTheCheckpointTensorsExactly) {
  test_ckpt::TempDir dir("strata-ckm");
  const TrainConfig cfg = test_ckpt::gpt_config(30, 6);
  auto model = models::build_model(models::spec_from_config(cfg));
  const Checkpoint ck = test_ckpt::checkpoint_of(*model, cfg, 42);
  models::export_safetensors(ck, dir.path() / "gpt.safetensors");
  auto st = read_safetensors(dir.path() / "gpt.safetensors");
  // the tied head is wte itself: one tensor per parameter, no lm_head copy
  ASSERT_EQ(st.tensors.size(), model->named_parameters().size());
  EXPECT_FALSE(st.tensors.count("lm_head.weight"));
  for (auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(st.tensors.count(name)) << name;
    EXPECT_EQ(st.tensors.at(name).dtype(), DType::f32) << name;
    EXPECT_EQ(st.tensors.at(name).shape(), p.shape()) << name;
    EXPECT_EQ(values(st.tensors.at(name)), values(p)) << name;
  }
  EXPECT_EQ(st.metadata.at("format"), "pt");
  EXPECT_EQ(st.metadata.at("strata.model"), "gpt");
  EXPECT_EQ(st.metadata.at("strata.step"), "42");
  EXPECT_EQ(st.metadata.at("strata.format_version"), std::to_string(models::kExportFormatVersion));
  EXPECT_EQ(parse_config(st.metadata.at("strata.config")), cfg);

  models::export_safetensors(ck, dir.path() / "gpt16.safetensors", DType::f16);
  auto h = read_safetensors(dir.path() / "gpt16.safetensors");
  for (auto& [name, p] : model->named_parameters())
    EXPECT_EQ(values(h.tensors.at(name)), values(p.to(DType::f16))) << name;
}
