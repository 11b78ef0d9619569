// An NVTX tool for tests: NVTX 3 loads the library named by
// NVTX_INJECTION64_PATH at a process's first NVTX call and calls its
// InitializeInjectionNvtx2, as it loads Nsight Systems' own. This one takes
// the push and pop of the core module and appends "push <name>" / "pop" lines
// to the file named by STRATA_NVTX_LOG, so a test can read which ranges ran.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace {

std::FILE* log_file = nullptr;

int record_push(const char* name) {
  std::fprintf(log_file, "push %s\n", name);
  std::fflush(log_file);
  return 0;
}

int record_pop() {
  std::fprintf(log_file, "pop\n");
  std::fflush(log_file);
  return 0;
}

}  // namespace

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* path = std::getenv("STRATA_NVTX_LOG");
  if (!path || !(log_file = std::fopen(path, "w"))) return 0;  // no tool then
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&record_push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&record_pop);
  return 1;
}
