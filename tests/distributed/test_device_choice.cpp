// The `device` key's rules (distributed/device_choice.h) over made-up CUDA
// statuses: auto follows what the rank sees, cuda without a GPU is an error
// naming the key and the reason, the index follows the local rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "distributed/device_choice.h"

namespace strata {
namespace {

cuda::DeviceStatus gpus(int n) {
  cuda::DeviceStatus s;
  s.device_count = n;
  if (n == 0) s.reason = "no CUDA device: cudaGetDeviceCount returned 0";
  if (n > 0) s.name = "NVIDIA H200";
  return s;
}

LaunchEnv rank(int r, int local) {
  LaunchEnv e;
  e.rank = r;
  e.size = 16;
  e.local_rank = local;
  e.local_size = 8;
  e.source = "ompi-env";
  return e;
}

TEST(DeviceChoice, AutoTakesTheRanksGpuOrTheCpu) {
  unsetenv("STRATA_DEVICE");
  DeviceChoice c = choose_device("auto", rank(11, 3), gpus(8));
  EXPECT_EQ(c.device, Device::cuda);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.label, "cuda:3 (NVIDIA H200)");
  // one visible GPU per task (CUDA_VISIBLE_DEVICES per task): always index 0
  EXPECT_EQ(choose_device("auto", rank(11, 3), gpus(1)).index, 0);
  DeviceChoice none = choose_device("auto", rank(11, 3), gpus(0));
  EXPECT_EQ(none.device, Device::cpu);
  EXPECT_EQ(none.label, "cpu");
}

TEST(DeviceChoice, CpuIgnoresGpus) {
  EXPECT_EQ(choose_device("cpu", rank(0, 0), gpus(8)).device, Device::cpu);
}

TEST(DeviceChoice, CudaWithoutAGpuIsAClearError) {
  try {
    choose_device("cuda", rank(5, 1), gpus(0));
    FAIL() << "device: cuda without a GPU was accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device: cuda"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 5 sees no CUDA device"), std::string::npos) << m;
    EXPECT_NE(m.find("cudaGetDeviceCount returned 0"), std::string::npos) << m;
  }
}

TEST(DeviceChoice, StrataDeviceWinsAndIsChecked) {
  setenv("STRATA_DEVICE", "2", 1);
  EXPECT_EQ(choose_device("cuda", rank(0, 0), gpus(4)).index, 2);
  EXPECT_THROW(choose_device("cuda", rank(0, 0), gpus(2)), CommError);
  unsetenv("STRATA_DEVICE");
}

TEST(DeviceChoice, RefusesAnUnknownSetting) {
  EXPECT_THROW(choose_device("gpu", rank(0, 0), gpus(1)), ConfigError);
}

TEST(DeviceChoice, ThisMachineWithoutAGpuTrainsOnTheCpu) {
  const cuda::DeviceStatus here = cuda::device_status();
  if (here.device_count > 0) GTEST_SKIP() << "a GPU is visible here: the no-GPU path is not this machine's";
  EXPECT_EQ(use_device("auto", rank(0, 0)).device, Device::cpu);
  EXPECT_THROW(use_device("cuda", rank(0, 0)), ConfigError);
}

}  // namespace
}  // namespace strata
