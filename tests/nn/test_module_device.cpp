// Module::to and the buffers it moves, as far as a machine without a GPU allows:
// a bias-less Linear/Conv2d holds its zero bias as a non-persistent buffer (it
// moves with the module, but is neither saved nor synchronised), to(cpu) keeps
// every handle, and to(cuda) without a device fails loudly and moves nothing.
// The move to a real device is checked by tests/nn/test_device_mlp.cpp.
#include <gtest/gtest.h>

#include "base/error.h"
#include "core/ops.h"
#include "core/random.h"
#include "kernels/cuda/runtime.h"
#include "nn/modules/modules.h"
#include "nn/optim/sgd.h"

using namespace strata;

namespace {
std::shared_ptr<Sequential> small_net(Generator& g) {
  auto net = std::make_shared<Sequential>();
  net->emplace<Conv2d>(2, 3, 3, 1, 1, /*bias=*/false, &g).emplace<ReLU>().emplace<Flatten>();
  net->emplace<Linear>(3 * 4 * 4, 5, /*bias=*/false, &g);
  return net;
}
}  // namespace

TEST(ModuleDevice, ZeroBiasIsATransientBufferNotAStateEntry) {
  Generator g(1);
  auto net = small_net(g);
  for (auto& [n, t] : net->named_buffers()) ADD_FAILURE() << "unexpected persistent buffer " << n;
  EXPECT_EQ(net->named_parameters().size(), 2u);  // the two weights only
  Tensor y = (*net)(Tensor::ones({2, 2, 4, 4}));
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
}

TEST(ModuleDevice, ToTheCurrentDeviceKeepsEveryHandle) {
  Generator g(2);
  auto net = small_net(g);
  auto before = net->named_parameters();
  SGD opt(net->named_parameters(), SGDOptions{});
  net->to(Device::cpu);
  EXPECT_EQ(net->device(), Device::cpu);
  auto after = net->named_parameters();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(before[i].second.same(after[i].second));
    EXPECT_TRUE(opt.params()[i].second.same(after[i].second));
  }
}

TEST(ModuleDevice, InPlaceMoveOfATensorKeepsItsImplAndGradient) {
  Tensor t = Tensor::from_vector({1, 2, 3}, {3});
  t.set_requires_grad(true);
  t.set_grad(Tensor::ones({3}));
  Tensor alias = t;
  auto storage = t.storage();
  t.to_(Device::cpu);  // already there: nothing changes
  EXPECT_TRUE(alias.storage() == storage);
  EXPECT_TRUE(alias.grad().defined());
}

TEST(ModuleDevice, MovingToCudaWithoutADeviceFailsAndLeavesTheModuleOnTheHost) {
  if (cuda::device_status().device_count > 0)
    GTEST_SKIP() << "a CUDA device is present (see tests/nn/test_device_mlp.cpp)";
  Generator g(3);
  auto net = small_net(g);
  auto w0 = net->parameters()[0].to_float_vector();
  EXPECT_THROW(net->to(Device::cuda), Error);
  EXPECT_EQ(net->device(), Device::cpu);
  EXPECT_EQ(net->parameters()[0].to_float_vector(), w0);
}
