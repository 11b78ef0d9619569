// safetensors reading and writing (see safetensors.h for the layout).
#include "train/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"

namespace strata {
namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

constexpr uint64_t kMaxHeader = uint64_t{100} << 20;  // the reference reader's limit
constexpr const char* kMetadataKey = "__metadata__";

[[noreturn]] void fail(const fs::path& path, const std::string& what) {
  throw IoError("safetensors '" + path.string() + "': " + what);
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // by begin offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + header length
  uint64_t data_size = 0;
};

uint64_t byte_size(const Shape& shape, DType dt) {
  uint64_t n = dtype_size(dt);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

Entry parse_entry(const fs::path& path, const std::string& name, const json& v) {
  const std::string where = "tensor '" + name + "': ";
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    fail(path, where + "expected an object with dtype, shape and data_offsets");
  const json &dt = v["dtype"], &shape = v["shape"], &off = v["data_offsets"];
  if (!dt.is_string()) fail(path, where + "dtype is not a string");
  Entry e;
  e.name = name;
  try {
    e.dtype = safetensors_dtype(dt.get<std::string>());
  } catch (const IoError& err) {
    fail(path, where + err.what());
  }
  if (!shape.is_array()) fail(path, where + "shape is not an array");
  for (const json& d : shape) {
    if (!d.is_number_unsigned())
      fail(path, where + "shape " + shape.dump() + " has a non-integer or negative dim");
    e.shape.push_back(d.get<int64_t>());
  }
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(path, where + "data_offsets " + off.dump() + " is not a pair of byte offsets");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.end < e.begin || e.end - e.begin != byte_size(e.shape, e.dtype))
    fail(path, where + "data_offsets " + off.dump() + " do not hold " + shape.dump() + " " +
                   dt.get<std::string>() + " (" + std::to_string(byte_size(e.shape, e.dtype)) + " bytes)");
  return e;
}

// Reads and checks the header; `file_size` is the whole file's.
Header read_header(const fs::path& path, std::ifstream& in, uint64_t file_size) {
  uint64_t n = 0;
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(&n), 8))
    fail(path, "shorter than the 8-byte header length (" + std::to_string(file_size) + " bytes)");
  if (n > kMaxHeader || n > file_size - 8)
    fail(path, "header length " + std::to_string(n) + " exceeds the file (" + std::to_string(file_size) +
                   " bytes) or the 100 MiB limit");
  std::string text(n, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(n))) fail(path, "cannot read the header");
  json h = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!h.is_object()) fail(path, "the header is not a JSON object");
  Header out;
  out.data_start = 8 + n;
  out.data_size = file_size - out.data_start;
  for (auto& [name, v] : h.items()) {
    if (name == kMetadataKey) {
      if (!v.is_object()) fail(path, "__metadata__ is not an object");
      for (auto& [k, s] : v.items()) {
        if (!s.is_string()) fail(path, "__metadata__ '" + k + "' is not a string");
        out.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    out.entries.push_back(parse_entry(path, name, v));
  }
  std::sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t at = 0;
  for (const Entry& e : out.entries) {
    if (e.begin != at)
      fail(path, "tensor '" + e.name + "' starts at byte " + std::to_string(e.begin) + ", expected " +
                     std::to_string(at) + " (the data must be contiguous, without overlaps or gaps)");
    at = e.end;
  }
  if (at != out.data_size)
    fail(path, "the tensors hold " + std::to_string(at) + " bytes but the file has " +
                   std::to_string(out.data_size) + " after the header (truncated or padded)");
  return out;
}

uint64_t size_of(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size: " + ec.message());
  return size;
}

// The host bytes of `t` as written: on the host, contiguous, in the file's dtype.
Tensor prepared(const Tensor& t, std::optional<DType> float_dtype) {
  Tensor h = t.to(Device::cpu).detach();
  if (float_dtype && is_floating(h.dtype()) && h.dtype() != *float_dtype) return h.to(*float_dtype);
  return h.contiguous();
}

void write_all(std::ofstream& out, const fs::path& path, const void* p, size_t n) {
  if (n > 0 && !out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n)))
    fail(path, "write failed after " + std::to_string(static_cast<long long>(out.tellp())) + " bytes");
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::f64:
      return "F64";
    case DType::i64:
      return "I64";
    case DType::i32:
      return "I32";
    case DType::u8:
      return "U8";
    case DType::u16:
      return "U16";
  }
  throw IoError("safetensors: no dtype name for dtype " + std::to_string(static_cast<int>(t)));
}

DType safetensors_dtype(const std::string& name) {
  for (DType t :
       {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32, DType::u8, DType::u16})
    if (name == safetensors_dtype_name(t)) return t;
  throw IoError("dtype '" + name + "' is not one strata reads (F32, F16, BF16, F64, I64, I32, U8, U16)");
}

void write_safetensors(const fs::path& path, const SafetensorsContent& content,
                       std::optional<DType> float_dtype) {
  if (float_dtype && !is_floating(*float_dtype))
    fail(path, std::string("float_dtype ") + dtype_name(*float_dtype) + " is not a floating dtype");
  // Everything is converted before the file is opened: a bad tensor fails early.
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [name, t] : content.tensors) {
    if (name.empty() || name == kMetadataKey) fail(path, "'" + name + "' cannot name a tensor");
    if (!t.defined()) fail(path, "tensor '" + name + "' is undefined");
    tensors.emplace_back(name, prepared(t, float_dtype));
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  json header = json::object();
  uint64_t at = 0;
  for (auto& [name, t] : tensors) {
    const uint64_t n = byte_size(t.shape(), t.dtype());
    header[name] = {
        {"dtype", safetensors_dtype_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  if (!content.metadata.empty()) header[kMetadataKey] = content.metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    fail(path, std::string("cannot encode the header (names and metadata must be UTF-8): ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_len = text.size(), total = 8 + header_len + at;

  write_file_atomically(
      path,
      [&](const fs::path& tmp) {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) fail(tmp, "cannot create the file");
        write_all(out, tmp, &header_len, 8);
        write_all(out, tmp, text.data(), text.size());
        for (auto& [name, t] : tensors) write_all(out, tmp, t.raw_data(), byte_size(t.shape(), t.dtype()));
        out.close();
        if (!out) fail(tmp, "closing the file failed");
      },
      [&](const fs::path& tmp) {
        // Read back what a loader reads first: a header that parses and a size that fits.
        const uint64_t size = size_of(tmp);
        if (size != total)
          fail(tmp, "wrote " + std::to_string(size) + " bytes, expected " + std::to_string(total));
        std::ifstream in(tmp, std::ios::binary);
        Header h = read_header(tmp, in, size);
        if (h.entries.size() != tensors.size())
          fail(tmp, "the header read back lists a different tensor count");
      });
}

SafetensorsContent read_safetensors(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file");
  Header h = read_header(path, in, size_of(path));
  SafetensorsContent out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries) {  // by offset: one forward pass through the file
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin &&
        !in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(e.end - e.begin)))
      fail(path, "cannot read the data of tensor '" + e.name + "'");
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace strata
