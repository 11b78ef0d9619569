// TaskSums (train/trainer/task_sums.h) on the CPU: host and device parts add up,
// a read happens only when the device part changed, and assign() resumes a sum
// so that later adds give the bits an uninterrupted run gives.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "train/trainer/task_sums.h"

namespace strata {
namespace {

TEST(TaskSums, AddsHostAndDeviceParts) {
  TaskSums s(3, Device::cpu);
  s.add_scaled(0, Tensor::scalar(0.25), 8.0);
  s.add(2, 8.0);
  Tensor logits = Tensor::from_vector({1, 0, 0, 1}, {2, 2});
  s.add_hits(1, TaskSums::npos, logits, Tensor::from_vector_i64({0, 0}, {2}));
  EXPECT_EQ(s.read(), (std::vector<double>{2.0, 1.0, 8.0}));
  s.zero();
  EXPECT_EQ(s.read(), (std::vector<double>{0.0, 0.0, 0.0}));
}

TEST(TaskSums, AssignContinuesInTheUninterruptedOrder) {
  const std::vector<float> losses = {0.1f, 0.7f, 0.3f, 1.9f};
  double uninterrupted = 0;
  for (float l : losses) uninterrupted += 64.0 * static_cast<double>(l);
  TaskSums first(2, Device::cpu);
  for (int i = 0; i < 2; ++i) {
    first.add_scaled(0, Tensor::scalar(losses[i]), 64.0);
    first.add(1, 64.0);
  }
  TaskSums resumed(2, Device::cpu);
  resumed.assign(first.read());  // what a checkpoint carries
  for (int i = 2; i < 4; ++i) {
    resumed.add_scaled(0, Tensor::scalar(losses[i]), 64.0);
    resumed.add(1, 64.0);
  }
  EXPECT_EQ(resumed.read()[0], uninterrupted);  // bits, not a tolerance
  EXPECT_EQ(resumed.read()[1], 256.0);
  EXPECT_THROW(resumed.assign({1.0, 2.0, 3.0}), Error);
}

TEST(TaskSums, NamesAnOutOfRangeSum) {
  TaskSums s(2, Device::cpu);
  EXPECT_THROW(s.add(2, 1.0), Error);
  EXPECT_THROW(s.add_scaled(5, Tensor::scalar(1.0), 1.0), Error);
}

}  // namespace
}  // namespace strata
