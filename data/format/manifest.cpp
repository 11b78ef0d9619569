// Manifest <-> JSON. from_json checks every field it reads so that a bad or
// hand-edited manifest fails at load time with the origin and the field named,
// instead of failing later inside the loader.
#include "data/format/manifest.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "data/format/shard_codec.h"

namespace strata::data {
namespace {

using nlohmann::json;

int64_t dtype_size(const std::string& dtype) {
  if (dtype == "u8") return 1;
  if (dtype == "f16" || dtype == "bf16" || dtype == "u16") return 2;
  if (dtype == "i32" || dtype == "f32") return 4;
  if (dtype == "i64") return 8;
  return 0;
}

[[noreturn]] void bad(const std::string& origin, const std::string& field, const std::string& why) {
  throw IoError("manifest " + origin + ": field '" + field + "' " + why);
}

const json& member(const json& obj, const char* key, const std::string& origin, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(origin, path + key, "is missing");
  return *it;
}

std::string get_string(const json& obj, const char* key, const std::string& origin, const std::string& path) {
  const json& v = member(obj, key, origin, path);
  if (!v.is_string()) bad(origin, path + key, "must be a string, got " + v.dump());
  return v.get<std::string>();
}

int64_t get_count(const json& obj, const char* key, const std::string& origin, const std::string& path) {
  const json& v = member(obj, key, origin, path);
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    bad(origin, path + key, "must be a non-negative integer, got " + v.dump());
  return v.get<int64_t>();
}

// dtype size x shape, or -1 when the product does not fit in int64 (a manifest
// that says so would otherwise wrap into a small or negative size, or become a
// huge allocation later).
int64_t checked_bytes(int64_t elem, const std::vector<int64_t>& shape) {
  int64_t n = elem;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

std::string get_checksum(const json& obj, const char* key, const std::string& origin,
                         const std::string& path) {
  std::string c = get_string(obj, key, origin, path);
  if (c.rfind("xxh3:", 0) != 0 || c.size() != 5 + 16 ||
      c.find_first_not_of("0123456789abcdef", 5) != std::string::npos)
    bad(origin, path + key, "must be \"xxh3:\" and 16 lowercase hex digits, got '" + c + "'");
  return c;
}

bool lower_hex(const std::string& s, size_t from, size_t digits) {
  return s.size() == from + digits && s.find_first_not_of("0123456789abcdef", from) == std::string::npos;
}

// Header and tag of an encrypted shard object (data/format/shard_crypt.h).
constexpr int64_t kEncryptionOverhead = 40;

void read_encryption(const json& e, const std::string& origin, DatasetEncryption& out) {
  if (!e.is_object()) bad(origin, "encryption", "must be an object");
  const std::string p = "encryption.";
  out.algorithm = get_string(e, "algorithm", origin, p);
  if (out.algorithm != "aes-256-gcm")
    bad(origin, p + "algorithm", "is '" + out.algorithm + "'; this build reads \"aes-256-gcm\"");
  out.key_id = get_string(e, "key_id", origin, p);
  if (out.key_id.rfind("sha256:", 0) != 0 || !lower_hex(out.key_id, 7, 16))
    bad(origin, p + "key_id", "must be \"sha256:\" and 16 lowercase hex digits, got '" + out.key_id + "'");
  out.dataset_id = get_string(e, "dataset_id", origin, p);
  if (!lower_hex(out.dataset_id, 0, 32))
    bad(origin, p + "dataset_id", "must be 32 lowercase hex digits, got '" + out.dataset_id + "'");
  out.manifest_mac = get_string(e, "manifest_mac", origin, p);
  if (out.manifest_mac.rfind("hmac-sha256:", 0) != 0 || !lower_hex(out.manifest_mac, 12, 64))
    bad(origin, p + "manifest_mac", "must be \"hmac-sha256:\" and 64 lowercase hex digits");
}

std::string join(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t k = 0; k < v.size(); ++k) {
    if (k) out += ',';
    out += std::to_string(v[k]);
  }
  out += ']';
  return out;
}

}  // namespace

int64_t FieldSpec::bytes_per_sample() const {
  if (variable) throw ConfigError("field '" + name + "' is variable-size: it has no fixed bytes per sample");
  int64_t n = dtype_size(dtype);
  if (n == 0) throw ConfigError("field '" + name + "': unknown dtype '" + dtype + "'");
  n = checked_bytes(n, shape);
  if (n < 0)
    throw ConfigError("field '" + name + "': shape " + join(shape) + " of " + dtype +
                      " is more than 2^63-1 bytes per sample");
  return n;
}

int64_t Manifest::total_samples() const {
  int64_t n = 0;
  for (const auto& s : shards) n += s.samples;
  return n;
}

int64_t Manifest::total_bytes() const {
  int64_t n = 0;
  for (const auto& s : shards) n += s.bytes;
  return n;
}

int64_t Manifest::total_staged_bytes() const {
  int64_t n = 0;
  for (const auto& s : shards) n += s.staged_bytes();
  return n;
}

const FieldSpec& Manifest::field(const std::string& name) const {
  for (const auto& f : schema)
    if (f.name == name) return f;
  std::string names;
  for (const auto& f : schema) names += (names.empty() ? "" : ", ") + f.name;
  throw ConfigError("dataset has no field '" + name + "' (fields: " + names + ")");
}

std::string Manifest::to_json() const {
  json j;
  j["format_version"] = object_compressed() ? kCompressedManifestFormatVersion : kManifestFormatVersion;
  j["compression"] = compression;
  if (object_compressed()) j["object_compression"] = object_compression;
  j["schema"] = json::array();
  for (const auto& f : schema)
    j["schema"].push_back(
        {{"name", f.name}, {"dtype", f.dtype}, {"shape", f.shape}, {"variable", f.variable}});
  j["shards"] = json::array();
  for (const auto& s : shards) {
    json e = {{"name", s.name}, {"samples", s.samples}, {"bytes", s.bytes}, {"checksum", s.checksum}};
    if (encrypted() || object_compressed()) {
      e["plain_bytes"] = s.plain_bytes;
      e["plain_checksum"] = s.plain_checksum;
    }
    j["shards"].push_back(std::move(e));
  }
  if (!class_names.empty()) j["class_names"] = class_names;
  if (vocab_size > 0) j["vocab_size"] = vocab_size;
  if (encrypted())
    j["encryption"] = {{"algorithm", encryption.algorithm},
                       {"key_id", encryption.key_id},
                       {"dataset_id", encryption.dataset_id},
                       {"manifest_mac", encryption.manifest_mac}};
  return j.dump(1) + "\n";
}

Manifest Manifest::from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 2e606
    throw IoError("manifest " + origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw IoError("manifest " + origin + ": top level must be a JSON object");
  Manifest m;
  m.origin = origin;
  const json& ver = member(j, "format_version", origin, "");
  if (!ver.is_number_integer()) bad(origin, "format_version", "must be an integer, got " + ver.dump());
  m.format_version = ver.get<int>();
  if (m.format_version != kManifestFormatVersion && m.format_version != kCompressedManifestFormatVersion)
    bad(origin, "format_version",
        "is " + std::to_string(m.format_version) + "; this build reads versions " +
            std::to_string(kManifestFormatVersion) + " and " +
            std::to_string(kCompressedManifestFormatVersion));
  m.compression = j.contains("compression") ? get_string(j, "compression", origin, "") : "none";
  if (m.compression != "none" && m.compression != "deflate")
    bad(origin, "compression", "must be \"none\" or \"deflate\", got \"" + m.compression + "\"");
  if (j.contains("object_compression")) {
    m.object_compression = get_string(j, "object_compression", origin, "");
    if (!is_object_codec(m.object_compression))
      bad(origin, "object_compression",
          "must be \"none\", \"zstd\" or \"lz4\", got \"" + m.object_compression + "\"");
  }

  const json& schema = member(j, "schema", origin, "");
  if (!schema.is_array() || schema.empty()) bad(origin, "schema", "must be a non-empty array");
  for (size_t i = 0; i < schema.size(); ++i) {
    const std::string path = "schema[" + std::to_string(i) + "].";
    const json& e = schema[i];
    if (!e.is_object()) bad(origin, "schema[" + std::to_string(i) + "]", "must be an object");
    FieldSpec f;
    f.name = get_string(e, "name", origin, path);
    if (f.name.empty()) bad(origin, path + "name", "must not be empty");
    for (const auto& prev : m.schema)
      if (prev.name == f.name) bad(origin, path + "name", "repeats field name '" + f.name + "'");
    f.dtype = get_string(e, "dtype", origin, path);
    if (dtype_size(f.dtype) == 0)
      bad(origin, path + "dtype", "is '" + f.dtype + "'; expected one of u8 u16 i32 i64 f16 bf16 f32");
    if (e.contains("variable")) {
      if (!e["variable"].is_boolean()) bad(origin, path + "variable", "must be true or false");
      f.variable = e["variable"].get<bool>();
    }
    if (e.contains("shape")) {
      const json& sh = e["shape"];
      if (!sh.is_array()) bad(origin, path + "shape", "must be an array of positive integers");
      for (const auto& d : sh) {
        if (!d.is_number_integer() || d.get<int64_t>() <= 0)
          bad(origin, path + "shape", "must be an array of positive integers, got " + sh.dump());
        f.shape.push_back(d.get<int64_t>());
      }
    }
    if (f.variable && f.dtype != "u8") bad(origin, path + "dtype", "of a variable-size field must be u8");
    if (!f.variable && checked_bytes(dtype_size(f.dtype), f.shape) < 0)
      bad(origin, path + "shape",
          "is " + join(f.shape) + " of " + f.dtype + ": more than 2^63-1 bytes per sample");
    m.schema.push_back(std::move(f));
  }

  if (j.contains("encryption")) read_encryption(j["encryption"], origin, m.encryption);
  const bool encrypted = m.encrypted();
  if (encrypted && m.object_compressed())
    bad(origin, "object_compression",
        "is \"" + m.object_compression +
            "\" in an encrypted dataset; this build reads compressed or encrypted "
            "shard objects, not both");
  const json& shards = member(j, "shards", origin, "");
  if (!shards.is_array()) bad(origin, "shards", "must be an array");
  // Fixed bytes per sample; a shard of `samples` samples must not overflow it either.
  int64_t sample_bytes = 0;
  for (const auto& f : m.schema)
    if (!f.variable) sample_bytes = std::max(sample_bytes, f.bytes_per_sample());
  std::map<std::string, size_t> seen;  // shard name -> index of its first entry
  int64_t total_samples = 0, total_bytes = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string path = "shards[" + std::to_string(i) + "].";
    const json& e = shards[i];
    if (!e.is_object()) bad(origin, "shards[" + std::to_string(i) + "]", "must be an object");
    ShardInfo s;
    s.name = get_string(e, "name", origin, path);
    if (s.name.empty() || s.name.front() == '/' || s.name.find("..") != std::string::npos)
      bad(origin, path + "name", "must be a relative key without '..', got '" + s.name + "'");
    if (auto [it, fresh] = seen.emplace(s.name, i); !fresh)
      bad(origin, path + "name",
          "repeats shard '" + s.name + "' of shards[" + std::to_string(it->second) +
              "]: a shard would be read twice per epoch");
    s.samples = get_count(e, "samples", origin, path);
    int64_t ignored = 0;
    if (__builtin_mul_overflow(s.samples, sample_bytes, &ignored))
      bad(origin, path + "samples",
          "is " + std::to_string(s.samples) + ": times " + std::to_string(sample_bytes) +
              " bytes per sample, more than 2^63-1 bytes");
    s.bytes = get_count(e, "bytes", origin, path);
    if (s.bytes == 0) bad(origin, path + "bytes", "is 0: a shard file is never empty");
    if (__builtin_add_overflow(total_samples, s.samples, &total_samples))
      bad(origin, path + "samples", "makes the dataset's total sample count overflow int64");
    if (__builtin_add_overflow(total_bytes, s.bytes, &total_bytes))
      bad(origin, path + "bytes", "makes the dataset's total bytes overflow int64");
    s.checksum = get_checksum(e, "checksum", origin, path);
    if (encrypted || m.object_compressed()) {
      s.plain_bytes = get_count(e, "plain_bytes", origin, path);
      s.plain_checksum = get_checksum(e, "plain_checksum", origin, path);
    }
    if (encrypted) {
      if (s.bytes != s.plain_bytes + kEncryptionOverhead)
        bad(origin, path + "bytes",
            "is " + std::to_string(s.bytes) + ": an encrypted object of " + std::to_string(s.plain_bytes) +
                " plain bytes has " + std::to_string(s.plain_bytes + kEncryptionOverhead));
    }
    m.shards.push_back(std::move(s));
  }

  if (j.contains("class_names")) {
    const json& c = j["class_names"];
    if (!c.is_array()) bad(origin, "class_names", "must be an array of strings");
    for (const auto& n : c) {
      if (!n.is_string()) bad(origin, "class_names", "must be an array of strings");
      m.class_names.push_back(n.get<std::string>());
    }
  }
  if (j.contains("vocab_size")) {
    m.vocab_size = get_count(j, "vocab_size", origin, "");
    if (m.vocab_size == 0) bad(origin, "vocab_size", "must be positive");
    const FieldSpec& f = m.schema.front();
    if (m.schema.size() != 1 || f.name != "tokens" || !f.shape.empty() || f.variable ||
        (f.dtype != "u16" && f.dtype != "i32"))
      bad(origin, "schema",
          "of a token dataset (with vocab_size) must be one scalar field 'tokens' of u16 or i32");
    if (f.dtype == "u16" && m.vocab_size > 65536)
      bad(origin, "vocab_size", "is " + std::to_string(m.vocab_size) + ", too large for u16 tokens");
  }
  return m;
}

}  // namespace strata::data
