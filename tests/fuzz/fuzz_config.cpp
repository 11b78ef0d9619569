// YAML training configs: parse, then validate (cross-key checks included).
#include "fuzz_target.h"
#include "train/config/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return strata::fuzz::run_one([&] { strata::validate_config(strata::parse_config(text, "fuzz.yaml")); });
}
