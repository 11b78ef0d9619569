// A stand-in for the NVIDIA driver's libnvidia-ml.so.1, for tests only: no
// machine of the test suite has a GPU or the driver, so this library exports
// the NVML functions train/logging/nvml_sampler.cpp loads, with the same C
// signatures, and answers with fixed figures the tests check against. It is
// loaded through STRATA_NVML_LIBRARY exactly as the real one would be.
//
// Two GPUs. GPU 0 ("Fake H200", bus 00000000:0A:00.0) answers every query;
// its n-th memory reading (n = 0, 1, ...) is 10 GB + n GB used of 141 GB and
// its utilisation alternates 80% / 90%, starting at 80 (memory 40% / 50%), so a run's peak
// and means are known. Power 512.5 W, SM clock 1980 MHz, memory clock 2619
// MHz, 61 C. GPU 1 ("Fake L4", bus 00000000:1B:00.0) reports 30% (memory
// 20%), 3 of 24 GB, 1410 / 6251 MHz, 47 C, and no power (NOT_SUPPORTED).
// The counts restart when nvmlInit_v2 is called with no other user left.
#include <cstring>

namespace {

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kNotFound = 6;

struct FakeGpu {
  const char* name;
  const char* pci_bus_id;
  unsigned memory_readings, utilization_readings;  // so far
};
FakeGpu gpus[2] = {{"Fake H200", "00000000:0A:00.0", 0, 0}, {"Fake L4", "00000000:1B:00.0", 0, 0}};
int init_count = 0;

FakeGpu* gpu(void* device) {
  for (auto& g : gpus)
    if (device == &g) return &g;
  return nullptr;
}

}  // namespace

extern "C" {

struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

int nvmlInit_v2() {
  if (init_count++ == 0)  // the readings count from the first initialisation of a process's NVML users
    for (auto& g : gpus) g.memory_readings = g.utilization_readings = 0;
  return kSuccess;
}
int nvmlShutdown() { return init_count-- > 0 ? kSuccess : kUninitialized; }
const char* nvmlErrorString(int r) { return r == kNotFound ? "Not Found" : "Fake NVML error"; }

int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return init_count > 0 ? kSuccess : kUninitialized;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= 2) return kInvalidArgument;
  *device = &gpus[index];
  return kSuccess;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
  for (auto& g : gpus)
    if (std::strcmp(g.pci_bus_id, bus_id) == 0) {
      *device = &g;
      return kSuccess;
    }
  return kNotFound;
}

int nvmlDeviceGetIndex(void* device, unsigned int* index) {
  *index = gpu(device) == &gpus[0] ? 0 : 1;
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  std::strncpy(name, gpu(device)->name, length - 1);
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* u) {
  FakeGpu* g = gpu(device);
  if (g == &gpus[1]) {
    *u = {30, 20};
  } else {
    const bool odd = g->utilization_readings % 2 == 1;
    *u = {odd ? 90u : 80u, odd ? 50u : 40u};
  }
  g->utilization_readings++;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  FakeGpu* g = gpu(device);
  const unsigned long long gb = 1000000000ull;
  if (g == &gpus[1]) {
    *m = {24 * gb, 21 * gb, 3 * gb};
  } else {
    const unsigned long long used = (10 + g->memory_readings) * gb;
    *m = {141 * gb, 141 * gb - used, used};
  }
  g->memory_readings++;
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(void* device, unsigned int* milliwatts) {
  if (gpu(device) == &gpus[1]) return kNotSupported;
  *milliwatts = 512500;
  return kSuccess;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned int* mhz) {
  const bool first = gpu(device) == &gpus[0];
  if (type == 1)  // NVML_CLOCK_SM
    *mhz = first ? 1980 : 1410;
  else if (type == 2)  // NVML_CLOCK_MEM
    *mhz = first ? 2619 : 6251;
  else
    return kInvalidArgument;
  return kSuccess;
}

int nvmlDeviceGetTemperature(void* device, int sensor, unsigned int* celsius) {
  if (sensor != 0) return kInvalidArgument;  // NVML_TEMPERATURE_GPU
  *celsius = gpu(device) == &gpus[0] ? 61 : 47;
  return kSuccess;
}

}  // extern "C"
