// NvmlSampler: what the NVIDIA driver says about this rank's GPU (utilisation,
// memory, power, clocks, temperature), read through NVML at each logging
// interval for metrics.jsonl's "gpu" rows, TensorBoard and summary.json
// (docs/monitoring.md). NVML is loaded at run time with dlopen, so the build
// needs neither NVML's headers nor its library, and a machine without the
// driver trains as before: the sampler is then unavailable, with the reason.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace strata {

// One reading. A figure the device does not report (power on some boards,
// utilisation on a MIG instance) is NaN and left out of the rows.
struct GpuSample {
  double utilization = 0;         // [0, 1]: share of the driver's sample period a kernel ran
  double memory_utilization = 0;  // [0, 1]: share of it device memory was read or written
  int64_t memory_used_bytes = 0, memory_total_bytes = 0;  // every process's, as nvidia-smi shows
  double power_watts = 0;
  double sm_clock_mhz = 0, memory_clock_mhz = 0;
  double temperature_c = 0;
};

// The readings of a run: what summary.json's "gpu" block holds.
struct GpuSummary {
  std::string name;  // the device's, e.g. "NVIDIA H200"
  int index = 0;     // NVML's index of it
  int64_t samples = 0;
  int64_t peak_memory_used_bytes = 0, memory_total_bytes = 0;
  double mean_utilization = 0, mean_power_watts = 0;  // NaN when never reported
  double max_temperature_c = 0;
};

// Which GPU to read. NVML numbers every GPU of the machine, whatever
// CUDA_VISIBLE_DEVICES hides, so the PCI bus id of the CUDA device
// (cudaDeviceGetPCIBusId, "0000:1B:00.0") is the exact choice; without one,
// NVML's index, taken modulo the number of GPUs (a local rank may be passed
// as it is, as the device selection wraps it too).
struct NvmlDeviceChoice {
  int index = 0;
  std::string pci_bus_id;  // wins when set
};

class NvmlSampler {
 public:
  // Loads $STRATA_NVML_LIBRARY, else libnvidia-ml.so.1, and opens the device.
  // Never throws for a missing library, driver or device: available() is then
  // false and unavailable_reason() says why ("libnvidia-ml.so.1: <dlerror>").
  explicit NvmlSampler(const NvmlDeviceChoice& device);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const;
  const std::string& unavailable_reason() const { return reason_; }
  // Reads the device and adds the reading to summary(); nullopt when unavailable
  // or when the device stopped answering (then for good: available() turns
  // false and unavailable_reason() says why).
  std::optional<GpuSample> sample();
  GpuSummary summary() const;

 private:
  struct Library;
  std::unique_ptr<Library> lib_;
  std::string reason_;
  GpuSummary summary_;
  double utilization_sum_ = 0, power_sum_ = 0;
  int64_t utilization_count_ = 0, power_count_ = 0;
};

// A reading as the values of a "gpu" row: util, mem_util, mem_used_gb,
// mem_total_gb, power_w, sm_clock_mhz, mem_clock_mhz, temperature_c (GB = 1e9
// bytes); NaN figures are left out.
std::map<std::string, double> gpu_row(const GpuSample& s);

}  // namespace strata
