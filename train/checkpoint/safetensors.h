// safetensors files: the tensor format Hugging Face and PyTorch users load
// (safetensors.torch.load_file, safetensors.numpy.load_file).
//
//   u64 little-endian N | N bytes of JSON header, padded with spaces to a multiple of 8 |
//   data: each tensor's elements, row-major, little-endian, back to back
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end)} (byte offsets into the data) and may hold "__metadata__", a map of
// strings to strings. The writer orders the data by element size, largest first,
// then by name, so that every tensor starts aligned to its element size (the
// data starts 8-aligned); the header's own key order carries no meaning.
//
// write_safetensors writes atomically (base/atomic_file.h): a temporary in the
// destination's directory, fsynced, its header read back and checked, then
// renamed into place, so an interrupted export never leaves a file at `path`
// that passes for whole. read_safetensors checks every header entry against the
// file (dtype known, shape and range agree, ranges contiguous and covering the
// data exactly) and throws IoError naming the file and the tensor otherwise.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/tensor.h"

namespace strata {

// Tensors by name and the header's __metadata__.
struct SafetensorsContent {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// safetensors' dtype names: "F32", "F16", "BF16", "F64", "I64", "I32", "U8".
const char* safetensors_dtype_name(DType t);
// The inverse; throws IoError for a name strata has no dtype for.
DType safetensors_dtype(const std::string& name);

// Writes `content` to `path`. With `float_dtype` set (f32, f16 or bf16), every
// floating tensor is converted to it (round to nearest even); integer tensors
// keep their dtype. Tensors may live on any device. Throws IoError on a name
// that is empty or "__metadata__", an undefined tensor, or a failed write.
void write_safetensors(const std::filesystem::path& path, const SafetensorsContent& content,
                       std::optional<DType> float_dtype = std::nullopt);

// Reads a whole file into host tensors of the stored dtypes.
SafetensorsContent read_safetensors(const std::filesystem::path& path);

}  // namespace strata
