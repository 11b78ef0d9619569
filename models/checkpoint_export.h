// A checkpoint's model tensors (parameters and persistent buffers, by their
// PyTorch-style dotted names) as a safetensors file (train/checkpoint/safetensors.h), for
// loading into PyTorch or Hugging Face code. Tied weights are one tensor in a
// checkpoint (the GPT head is wte), so they are written once, as PyTorch's own
// save_file requires. strata-export is this plus option parsing.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/safetensors.h"

namespace strata::models {

// Bumped when the names, layout or metadata keys of exported files change.
inline constexpr int kExportFormatVersion = 1;

// The header's __metadata__: "format" = "pt" (what transformers expects of a
// PyTorch-layout file), "strata.format_version", "strata.model" (model.name),
// "strata.config" (the resolved YAML), and "strata.step" when the checkpoint
// has /trainer/step.
std::map<std::string, std::string> export_metadata(const Checkpoint& ck);

// ck.model with export_metadata(ck); floating tensors converted to
// `float_dtype` when given (f32, f16, bf16). Written atomically.
void export_safetensors(const Checkpoint& ck, const std::filesystem::path& out,
                        std::optional<DType> float_dtype = std::nullopt);

}  // namespace strata::models
