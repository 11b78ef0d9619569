// DataKey: the 256-bit key that encrypts a dataset's shards at rest
// (docs/data-format.md, "Encrypted datasets"). It is read from a file or from
// the environment, never from a config file, and it never appears in a message,
// a log or a manifest: what is shown is its key id, a one-way digest of it.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace strata::data {

// Where a key comes from, besides an explicit file: the file's path, or the key
// itself as 64 hex digits.
inline constexpr const char* kDataKeyFileEnv = "STRATA_DATA_KEY_FILE";
inline constexpr const char* kDataKeyEnv = "STRATA_DATA_KEY";

class DataKey {
 public:
  static constexpr size_t kBytes = 32;

  // A key file holds exactly 32 raw bytes, or 64 hex digits (surrounding
  // whitespace, such as a trailing newline, is ignored). Anything else is a
  // ConfigError naming the file and its size.
  static DataKey from_file(const std::string& path);
  // 64 hex digits, from `origin` (named in errors; the text never is).
  static DataKey from_hex(const std::string& text, const std::string& origin);
  static DataKey from_bytes(const std::array<uint8_t, kBytes>& bytes, std::string origin);

  DataKey(const DataKey&) = default;
  DataKey& operator=(const DataKey&) = default;
  ~DataKey();  // wipes the key bytes

  const uint8_t* bytes() const { return key_.data(); }
  // "sha256:" + 16 hex digits of SHA-256("strata data key id v1" || key): tells
  // keys apart in manifests and messages without revealing them.
  const std::string& id() const { return id_; }
  // Where it was read: "key file /etc/k", "environment variable STRATA_DATA_KEY".
  const std::string& origin() const { return origin_; }

 private:
  DataKey() = default;
  std::array<uint8_t, kBytes> key_{};
  std::string id_, origin_;
};

// The data key of a job or a pack, or null when there is none: `explicit_file`
// (a command-line option or a config key) if not empty, else the file named by
// STRATA_DATA_KEY_FILE, else STRATA_DATA_KEY. `explicit_what` names the option
// or key in errors ("--encrypt-key-file", "data.encryption_key_file").
std::shared_ptr<const DataKey> resolve_data_key(const std::string& explicit_file,
                                                const std::string& explicit_what);

}  // namespace strata::data
