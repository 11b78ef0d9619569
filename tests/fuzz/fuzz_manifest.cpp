// Dataset manifests (manifest.json), as read from the object store.
#include "data/format/manifest.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return strata::fuzz::run_one([&] { strata::data::Manifest::from_json(text, "s3://fuzz/manifest.json"); });
}
