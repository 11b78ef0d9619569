// Writes the checkpoint that check_checkpoint_h5py.py reads with h5py; the
// values here and there must agree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "core/random.h"
#include "train/checkpoint/checkpoint.h"

using namespace strata;

TEST(CheckpointH5pyWriter, Write) {
  const char* path = std::getenv("STRATA_CKPT_FIXTURE");
  ASSERT_NE(path, nullptr) << "STRATA_CKPT_FIXTURE is not set";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  Checkpoint ck;
  ck.model["fc.weight"] = Tensor::from_vector({0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f}, {2, 3});
  ck.model["fc.bias"] = Tensor::from_vector({-1.0f, 1.0f}, {2});
  ck.model["bn.num_batches_tracked"] = Tensor::from_vector_i64({7}, {});
  ck.optimizer["fc.weight.exp_avg"] = Tensor::full({2, 3}, 0.25);
  ck.optimizer["fc.bias.exp_avg"] = Tensor::full({2}, -0.125);
  ck.ints = {{ckpt_key::step, 1234},           {ckpt_key::epoch, 5},
             {ckpt_key::optimizer_step, 1234}, {ckpt_key::best_epoch, 4},
             {ckpt_key::patience_counter, 1},  {ckpt_key::scaler_growth_tracker, 17}};
  ck.scalars = {{ckpt_key::best_metric, 0.125}, {ckpt_key::metric, 0.25}, {ckpt_key::scaler_scale, 32768.0}};
  ck.rng["default"] = Generator(42).state();
  ck.resolved_yaml = "model:\n  name: mlp\n";
  ck.loader = {{"epoch", 5}, {"position", 640}, {"seed", 42}};
  ck.schedule = {"plateau", {{"lr", 0.01}, {"best", 0.125}, {"num_bad_epochs", 1}, {"cooldown_counter", 0}}};
  save_checkpoint(ck, path);
  EXPECT_EQ(load_checkpoint(path).int_value(ckpt_key::step), 1234);
}
