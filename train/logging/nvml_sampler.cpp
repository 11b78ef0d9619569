// NVML through dlopen. The few types and functions used are declared here from
// NVML's documented C ABI (nvml.h, NVML API Reference): every function returns
// nvmlReturn_t (an int, 0 = NVML_SUCCESS), a device is an opaque pointer, and
// enums are passed as ints. The _v2 entry points are those nvml.h has mapped
// the plain names to for many driver releases (any driver new enough for
// CUDA 12 has them); the symbols are looked up by those names.
#include "train/logging/nvml_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

namespace strata {
namespace {

using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;
struct NvmlUtilization {  // nvmlUtilization_t, percents
  unsigned int gpu, memory;
};
struct NvmlMemory {  // nvmlMemory_t (v1), bytes
  unsigned long long total, free, used;
};
constexpr int kClockSm = 1, kClockMem = 2;  // nvmlClockType_t: NVML_CLOCK_SM, NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;          // nvmlTemperatureSensors_t: NVML_TEMPERATURE_GPU
constexpr unsigned kNameBufferSize = 96;    // NVML_DEVICE_NAME_V2_BUFFER_SIZE

}  // namespace

struct NvmlSampler::Library {
  void* handle = nullptr;
  bool initialised = false;
  NvmlDevice device = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*device_count)(unsigned*) = nullptr;
  NvmlReturn (*handle_by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*index)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;             // milliwatts
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;        // MHz
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;  // degrees C

  std::string error(const std::string& call, NvmlReturn r) const {
    return call + ": " + (error_string ? error_string(r) : "error " + std::to_string(r));
  }

  // Empty when every symbol was found, else the first one missing.
  std::string resolve() {
    std::string missing;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (!fn && missing.empty()) missing = name;
    };
    sym(init, "nvmlInit_v2");
    sym(shutdown, "nvmlShutdown");
    sym(error_string, "nvmlErrorString");
    sym(device_count, "nvmlDeviceGetCount_v2");
    sym(handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    sym(handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    sym(index, "nvmlDeviceGetIndex");
    sym(name, "nvmlDeviceGetName");
    sym(utilization, "nvmlDeviceGetUtilizationRates");
    sym(memory, "nvmlDeviceGetMemoryInfo");
    sym(power, "nvmlDeviceGetPowerUsage");
    sym(clock, "nvmlDeviceGetClockInfo");
    sym(temperature, "nvmlDeviceGetTemperature");
    return missing;
  }

  ~Library() {
    if (initialised) shutdown();
    if (handle) dlclose(handle);
  }
};

NvmlSampler::NvmlSampler(const NvmlDeviceChoice& choice) : lib_(std::make_unique<Library>()) {
  summary_.mean_utilization = summary_.mean_power_watts = NAN;  // until a reading reports them
  const char* override_path = std::getenv("STRATA_NVML_LIBRARY");
  const std::string path = override_path && *override_path ? override_path : "libnvidia-ml.so.1";
  Library& l = *lib_;
  l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!l.handle) {
    const std::string why = dlerror();
    reason_ = why.rfind(path, 0) == 0 ? why : path + ": " + why;  // dlerror names the file itself
    return;
  }
  if (const std::string missing = l.resolve(); !missing.empty()) {
    reason_ = path + ": no " + missing + " (not NVML, or a driver too old)";
    return;
  }
  if (NvmlReturn r = l.init(); r != kNvmlSuccess) {
    reason_ = l.error("nvmlInit_v2", r);
    return;
  }
  l.initialised = true;
  unsigned count = 0;
  if (NvmlReturn r = l.device_count(&count); r != kNvmlSuccess || count == 0) {
    reason_ = r != kNvmlSuccess ? l.error("nvmlDeviceGetCount_v2", r) : "the driver sees no GPU";
    return;
  }
  NvmlReturn r;
  if (!choice.pci_bus_id.empty()) {
    r = l.handle_by_pci_bus_id(choice.pci_bus_id.c_str(), &l.device);
    if (r != kNvmlSuccess)
      reason_ = l.error("nvmlDeviceGetHandleByPciBusId_v2(" + choice.pci_bus_id + ")", r);
  } else {
    summary_.index = static_cast<int>(static_cast<unsigned>(std::max(0, choice.index)) % count);
    r = l.handle_by_index(static_cast<unsigned>(summary_.index), &l.device);
    if (r != kNvmlSuccess)
      reason_ = l.error("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(summary_.index) + ")", r);
  }
  if (r != kNvmlSuccess) {
    l.device = nullptr;
    return;
  }
  unsigned index = 0;
  if (l.index(l.device, &index) == kNvmlSuccess) summary_.index = static_cast<int>(index);
  char name[kNameBufferSize] = {};
  summary_.name = l.name(l.device, name, kNameBufferSize) == kNvmlSuccess ? name : "unknown";
}

NvmlSampler::~NvmlSampler() = default;

bool NvmlSampler::available() const { return lib_->device != nullptr; }

std::optional<GpuSample> NvmlSampler::sample() {
  if (!available()) return std::nullopt;
  Library& l = *lib_;
  NvmlMemory mem{};
  // Every board reports its memory: failing here means the GPU is lost, not a missing figure.
  if (NvmlReturn r = l.memory(l.device, &mem); r != kNvmlSuccess) {
    reason_ = l.error("nvmlDeviceGetMemoryInfo", r);
    l.device = nullptr;  // a lost GPU does not come back within a run
    return std::nullopt;
  }
  GpuSample s;
  s.memory_used_bytes = static_cast<int64_t>(mem.used);
  s.memory_total_bytes = static_cast<int64_t>(mem.total);
  NvmlUtilization u{};
  const bool have_util = l.utilization(l.device, &u) == kNvmlSuccess;
  s.utilization = have_util ? u.gpu / 100.0 : NAN;
  s.memory_utilization = have_util ? u.memory / 100.0 : NAN;
  unsigned v = 0;
  s.power_watts = l.power(l.device, &v) == kNvmlSuccess ? v / 1000.0 : NAN;
  s.sm_clock_mhz = l.clock(l.device, kClockSm, &v) == kNvmlSuccess ? v : NAN;
  s.memory_clock_mhz = l.clock(l.device, kClockMem, &v) == kNvmlSuccess ? v : NAN;
  s.temperature_c = l.temperature(l.device, kTemperatureGpu, &v) == kNvmlSuccess ? v : NAN;

  GpuSummary& g = summary_;
  g.samples++;
  g.peak_memory_used_bytes = std::max(g.peak_memory_used_bytes, s.memory_used_bytes);
  g.memory_total_bytes = s.memory_total_bytes;
  if (std::isfinite(s.utilization)) {
    utilization_sum_ += s.utilization;
    g.mean_utilization = utilization_sum_ / static_cast<double>(++utilization_count_);
  }
  if (std::isfinite(s.power_watts)) {
    power_sum_ += s.power_watts;
    g.mean_power_watts = power_sum_ / static_cast<double>(++power_count_);
  }
  if (std::isfinite(s.temperature_c)) g.max_temperature_c = std::max(g.max_temperature_c, s.temperature_c);
  return s;
}

GpuSummary NvmlSampler::summary() const { return summary_; }

std::map<std::string, double> gpu_row(const GpuSample& s) {
  const std::pair<const char*, double> figures[] = {
      {"util", s.utilization},
      {"mem_util", s.memory_utilization},
      {"mem_used_gb", static_cast<double>(s.memory_used_bytes) / 1e9},
      {"mem_total_gb", static_cast<double>(s.memory_total_bytes) / 1e9},
      {"power_w", s.power_watts},
      {"sm_clock_mhz", s.sm_clock_mhz},
      {"mem_clock_mhz", s.memory_clock_mhz},
      {"temperature_c", s.temperature_c},
  };
  std::map<std::string, double> row;
  for (auto& [name, value] : figures)
    if (std::isfinite(value)) row[name] = value;
  return row;
}

}  // namespace strata
