#include "models/checkpoint_export.h"

#include "base/error.h"
#include "models/checkpoint_model.h"

namespace strata::models {

std::map<std::string, std::string> export_metadata(const Checkpoint& ck) {
  const TrainConfig cfg = checkpoint_config(ck);  // also checks that the config parses
  std::map<std::string, std::string> m;
  m["format"] = "pt";
  m["strata.format_version"] = std::to_string(kExportFormatVersion);
  m["strata.model"] = cfg.model.name;
  m["strata.config"] = ck.resolved_yaml;
  if (auto it = ck.ints.find(ckpt_key::step); it != ck.ints.end())
    m["strata.step"] = std::to_string(it->second);
  return m;
}

void export_safetensors(const Checkpoint& ck, const std::filesystem::path& out,
                        std::optional<DType> float_dtype) {
  if (ck.model.empty())
    throw IoError("checkpoint '" + ck.source + "': /model holds no tensors, nothing to export");
  if (float_dtype && *float_dtype != DType::f32 && *float_dtype != DType::f16 && *float_dtype != DType::bf16)
    throw ConfigError(std::string("export: dtype must be f32, f16 or bf16, got ") + dtype_name(*float_dtype));
  SafetensorsContent c;
  c.tensors = ck.model;
  c.metadata = export_metadata(ck);
  write_safetensors(out, c, float_dtype);
}

}  // namespace strata::models
