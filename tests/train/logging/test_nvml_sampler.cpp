// NvmlSampler against a stand-in for the driver's NVML (fake_nvml.cpp, loaded
// through STRATA_NVML_LIBRARY as the real library would be): the figures it
// reads, the device it picks, the reasons it gives when NVML is missing; then
// a real Trainer run on the CPU with the sampler given, whose metrics.jsonl
// "gpu" rows, TensorBoard tags and summary.json "gpu" block must carry them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/communicator.h"
#include "train/logging/nvml_sampler.h"
#include "train/trainer/trainer.h"
#include "trainer_fixture.h"

namespace strata::testing {
namespace {

class NvmlLibrary {
 public:
  explicit NvmlLibrary(const char* path) { setenv("STRATA_NVML_LIBRARY", path, 1); }
  ~NvmlLibrary() { unsetenv("STRATA_NVML_LIBRARY"); }
};

TEST(NvmlSampler, ReadsEveryFigureOfTheDevice) {
  NvmlLibrary fake(STRATA_FAKE_NVML);
  NvmlSampler s(NvmlDeviceChoice{0, ""});
  ASSERT_TRUE(s.available()) << s.unavailable_reason();
  auto a = s.sample();
  ASSERT_TRUE(a);
  EXPECT_DOUBLE_EQ(a->utilization, 0.80);
  EXPECT_DOUBLE_EQ(a->memory_utilization, 0.40);
  EXPECT_EQ(a->memory_used_bytes, 10'000'000'000);
  EXPECT_EQ(a->memory_total_bytes, 141'000'000'000);
  EXPECT_DOUBLE_EQ(a->power_watts, 512.5);
  EXPECT_DOUBLE_EQ(a->sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(a->memory_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(a->temperature_c, 61);
  const auto row = gpu_row(*a);
  const std::map<std::string, double> expected = {
      {"util", 0.80},     {"mem_util", 0.40},     {"mem_used_gb", 10.0},   {"mem_total_gb", 141.0},
      {"power_w", 512.5}, {"sm_clock_mhz", 1980}, {"mem_clock_mhz", 2619}, {"temperature_c", 61}};
  EXPECT_EQ(row, expected);
  auto b = s.sample();
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->utilization, 0.90);
  EXPECT_EQ(b->memory_used_bytes, 11'000'000'000);
  const GpuSummary g = s.summary();
  EXPECT_EQ(g.name, "Fake H200");
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.samples, 2);
  EXPECT_EQ(g.peak_memory_used_bytes, 11'000'000'000);
  EXPECT_EQ(g.memory_total_bytes, 141'000'000'000);
  EXPECT_DOUBLE_EQ(g.mean_utilization, 0.85);
  EXPECT_DOUBLE_EQ(g.mean_power_watts, 512.5);
  EXPECT_DOUBLE_EQ(g.max_temperature_c, 61);
}

TEST(NvmlSampler, PicksTheDeviceByIndexModuloTheCountOrByBusId) {
  NvmlLibrary fake(STRATA_FAKE_NVML);
  {
    NvmlSampler s(NvmlDeviceChoice{3, ""});  // local rank 3 on a node of two GPUs
    ASSERT_TRUE(s.available()) << s.unavailable_reason();
    EXPECT_EQ(s.summary().index, 1);
    EXPECT_EQ(s.summary().name, "Fake L4");
    auto r = s.sample();
    ASSERT_TRUE(r);
    EXPECT_DOUBLE_EQ(r->utilization, 0.30);
    EXPECT_TRUE(std::isnan(r->power_watts)) << "the L4 stand-in reports no power";
    EXPECT_EQ(gpu_row(*r).count("power_w"), 0u);
    EXPECT_EQ(gpu_row(*r).at("mem_used_gb"), 3.0);
    EXPECT_TRUE(std::isnan(s.summary().mean_power_watts));
  }
  {
    NvmlSampler s(NvmlDeviceChoice{0, "00000000:1B:00.0"});  // the bus id wins over the index
    ASSERT_TRUE(s.available()) << s.unavailable_reason();
    EXPECT_EQ(s.summary().index, 1);
  }
  NvmlSampler s(NvmlDeviceChoice{0, "00000000:99:00.0"});
  EXPECT_FALSE(s.available());
  EXPECT_EQ(s.unavailable_reason(), "nvmlDeviceGetHandleByPciBusId_v2(00000000:99:00.0): Not Found");
  EXPECT_FALSE(s.sample());
}

TEST(NvmlSampler, AMissingLibraryIsNoErrorAndSaysWhy) {
  NvmlLibrary missing("/nonexistent/libnvidia-ml.so.1");
  NvmlSampler s(NvmlDeviceChoice{});
  EXPECT_FALSE(s.available());
  EXPECT_EQ(s.unavailable_reason().rfind("/nonexistent/libnvidia-ml.so.1: ", 0), 0u)
      << s.unavailable_reason();
  EXPECT_NE(s.unavailable_reason().find("No such file"), std::string::npos) << s.unavailable_reason();
  EXPECT_FALSE(s.sample());
}

TEST(NvmlSampler, ALibraryWithoutNvmlSaysWhichFunctionIsMissing) {
  NvmlLibrary not_nvml("libm.so.6");
  NvmlSampler s(NvmlDeviceChoice{});
  EXPECT_FALSE(s.available());
  EXPECT_EQ(s.unavailable_reason(), "libm.so.6: no nvmlInit_v2 (not NVML, or a driver too old)");
}

constexpr int64_t kDim = 16;

std::vector<nlohmann::json> rows(const std::string& dir, const std::string& kind) {
  std::vector<nlohmann::json> out;
  std::ifstream f(dir + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);)
    if (auto j = nlohmann::json::parse(line); j["kind"] == kind) out.push_back(j);
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), {}};
}

// 512 samples in batches of 64: 8 steps, a logging interval every 2.
void train_on_cpu(const std::string& dir, std::unique_ptr<NvmlSampler> sampler) {
  TrainConfig c = quiet_config();
  c.logging.every_steps = 2;
  c.logging.tensorboard = true;
  c.trainer.peak_flops = 1e12;
  std::vector<float> x;
  std::vector<int64_t> y;
  synthetic_data(512, kDim, 4, 7, x, y);
  MemoryBatchSource src(x, y, {kDim}, 64, 3, false);
  SingleProcessCommunicator comm;
  Trainer t(c, dir, build(c, {kDim}), {kDim}, comm);
  t.set_flops_per_item(1e6);
  if (sampler) t.set_gpu_sampler(std::move(sampler));
  t.fit(src, nullptr, nullptr);
}

TEST(TrainerGpuRows, EveryLoggingIntervalWritesTheGpuReading) {
  NvmlLibrary fake(STRATA_FAKE_NVML);
  const std::string dir = temp_dir("nvml-rows");
  train_on_cpu(dir, std::make_unique<NvmlSampler>(NvmlDeviceChoice{0, ""}));
  const auto gpu = rows(dir, "gpu");
  const auto train = rows(dir, "train");
  ASSERT_EQ(train.size(), 4u);
  ASSERT_EQ(gpu.size(), train.size()) << "one gpu row per logging interval";
  for (size_t k = 0; k < gpu.size(); ++k) {
    EXPECT_EQ(gpu[k]["step"], train[k]["step"]);
    EXPECT_DOUBLE_EQ(gpu[k]["mem_used_gb"].get<double>(), 10.0 + static_cast<double>(k));
    EXPECT_DOUBLE_EQ(gpu[k]["util"].get<double>(), k % 2 == 0 ? 0.80 : 0.90);
    EXPECT_DOUBLE_EQ(gpu[k]["power_w"].get<double>(), 512.5);
    EXPECT_DOUBLE_EQ(gpu[k]["temperature_c"].get<double>(), 61);
  }
  // the allocator's figures and MFU ride in every train row
  for (auto& r : train) {
    EXPECT_GT(r["memory_peak_bytes"].get<double>(), 0) << r.dump();
    EXPECT_GE(r["memory_peak_bytes"].get<double>(), r["memory_in_use_bytes"].get<double>());
    EXPECT_TRUE(r.contains("memory_cached_bytes")) << r.dump();
    EXPECT_GT(r["mfu"].get<double>(), 0) << r.dump();
  }
  auto s = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  ASSERT_TRUE(s["gpu"].is_object()) << s.dump();
  EXPECT_EQ(s["gpu"]["name"], "Fake H200");
  EXPECT_EQ(s["gpu"]["index"], 0);
  EXPECT_EQ(s["gpu"]["samples"], 4);
  EXPECT_EQ(s["gpu"]["peak_memory_used_bytes"], 13'000'000'000);
  EXPECT_EQ(s["gpu"]["memory_total_bytes"], 141'000'000'000);
  EXPECT_DOUBLE_EQ(s["gpu"]["mean_utilization"].get<double>(), 0.85);
  EXPECT_DOUBLE_EQ(s["gpu"]["mean_power_watts"].get<double>(), 512.5);
  EXPECT_NE(read_all(dir + "/train.log").find("nvml: GPU 0 (Fake H200) read at every logging interval"),
            std::string::npos);
  std::string events;
  for (auto& e : std::filesystem::directory_iterator(dir + "/tensorboard")) events += read_all(e.path());
  for (const char* tag : {"gpu/util", "gpu/mem_used_gb", "gpu/power_w", "train/memory_peak_bytes"})
    EXPECT_NE(events.find(tag), std::string::npos) << tag;
}

TEST(TrainerGpuRows, WithoutNvmlOneLineSaysSoAndNoGpuRows) {
  NvmlLibrary missing("/nonexistent/libnvidia-ml.so.1");
  const std::string dir = temp_dir("nvml-missing");
  train_on_cpu(dir, std::make_unique<NvmlSampler>(NvmlDeviceChoice{}));
  EXPECT_TRUE(rows(dir, "gpu").empty());
  EXPECT_EQ(rows(dir, "train").size(), 4u);
  const std::string log = read_all(dir + "/train.log");
  EXPECT_NE(log.find("nvml: not available (/nonexistent/libnvidia-ml.so.1: "), std::string::npos) << log;
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["gpu"].is_null());
}

TEST(TrainerGpuRows, AModelOnTheHostReadsNoGpu) {
  NvmlLibrary fake(STRATA_FAKE_NVML);  // there, but a CPU run does not even try
  const std::string dir = temp_dir("nvml-cpu");
  train_on_cpu(dir, nullptr);
  EXPECT_TRUE(rows(dir, "gpu").empty());
  EXPECT_EQ(read_all(dir + "/train.log").find("nvml"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["gpu"].is_null());
}

}  // namespace
}  // namespace strata::testing
