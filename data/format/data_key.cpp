// Reading the data key. Every error names where the key was looked for and what
// was wrong with its shape (a size, a count of characters), never its content:
// a key mistyped by one digit is still almost all of the key.
#include "data/format/data_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace strata::data {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool all_hex(const std::string& s) {
  for (char c : s)
    if (hex_value(c) < 0) return false;
  return !s.empty();
}

// false when `text` is not exactly 64 hex digits
bool parse_hex(const std::string& text, std::array<uint8_t, DataKey::kBytes>& out) {
  if (text.size() != 2 * DataKey::kBytes || !all_hex(text)) return false;
  for (size_t i = 0; i < DataKey::kBytes; ++i)
    out[i] = static_cast<uint8_t>(hex_value(text[2 * i]) * 16 + hex_value(text[2 * i + 1]));
  return true;
}

std::string key_id(const uint8_t* key) {
  // A domain-separated digest: the id of a key is no digest anyone else computes of it.
  static const std::string kLabel = "strata data key id v1";
  std::string msg = kLabel;
  msg.append(reinterpret_cast<const char*>(key), DataKey::kBytes);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const bool ok = EVP_Digest(msg.data(), msg.size(), md, &n, EVP_sha256(), nullptr) == 1;
  OPENSSL_cleanse(msg.data(), msg.size());
  if (!ok) throw Error("data key: SHA-256 is unavailable in this OpenSSL");
  static const char* hex = "0123456789abcdef";
  std::string id = "sha256:";
  for (int i = 0; i < 8; ++i) {
    id += hex[md[i] >> 4];
    id += hex[md[i] & 15];
  }
  return id;
}

}  // namespace

DataKey::~DataKey() { OPENSSL_cleanse(key_.data(), key_.size()); }

DataKey DataKey::from_bytes(const std::array<uint8_t, kBytes>& bytes, std::string origin) {
  DataKey k;
  k.key_ = bytes;
  k.id_ = key_id(k.key_.data());
  k.origin_ = std::move(origin);
  return k;
}

DataKey DataKey::from_hex(const std::string& text, const std::string& origin) {
  std::array<uint8_t, kBytes> bytes{};
  const std::string t = trimmed(text);
  if (!parse_hex(t, bytes))
    throw ConfigError("data key in " + origin + " is not 64 hex digits (" + std::to_string(t.size()) +
                      " characters" + (all_hex(t) ? "" : ", not all of them hex digits") + ")");
  DataKey k = from_bytes(bytes, origin);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return k;
}

DataKey DataKey::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string origin = "key file " + path;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ConfigError("data key file " + path +
                      (fs::exists(path, ec) ? " is not a regular file" : " does not exist"));
  const auto size = fs::file_size(path, ec);
  const std::string expected = ": expected 32 raw bytes or 64 hex digits (a newline after them is fine)";
  if (ec || size > 4096)
    throw ConfigError("data key file " + path + " has " + std::to_string(size) + " bytes" + expected);
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  if (!in.eof() && in.fail()) throw IoError("cannot read data key file " + path);
  std::array<uint8_t, kBytes> bytes{};
  std::string error;
  if (text.size() == kBytes && all_hex(text)) {
    // 32 hex digits are a 128-bit key written as text, not 32 raw bytes: random
    // raw bytes are all hex digits with probability (22/256)^32.
    error = "data key file " + path +
            " holds 32 hex digits, a 128-bit key: AES-256 needs 64 hex digits or 32 "
            "raw bytes";
  } else if (text.size() == kBytes) {
    std::copy(text.begin(), text.end(), bytes.begin());
  } else if (!parse_hex(trimmed(text), bytes)) {
    error = "data key file " + path + " has " + std::to_string(text.size()) + " bytes" + expected;
  }
  OPENSSL_cleanse(text.data(), text.size());
  if (!error.empty()) throw ConfigError(error);
  DataKey k = from_bytes(bytes, origin);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return k;
}

std::shared_ptr<const DataKey> resolve_data_key(const std::string& explicit_file,
                                                const std::string& explicit_what) {
  if (!explicit_file.empty()) {
    try {
      return std::make_shared<const DataKey>(DataKey::from_file(explicit_file));
    } catch (const ConfigError& e) {
      throw ConfigError(explicit_what + ": " + e.what());
    }
  }
  if (const char* f = std::getenv(kDataKeyFileEnv); f && *f) {
    try {
      return std::make_shared<const DataKey>(DataKey::from_file(f));
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(kDataKeyFileEnv) + ": " + e.what());
    }
  }
  if (const char* k = std::getenv(kDataKeyEnv); k && *k)
    return std::make_shared<const DataKey>(
        DataKey::from_hex(k, std::string("environment variable ") + kDataKeyEnv));
  return nullptr;
}

}  // namespace strata::data
