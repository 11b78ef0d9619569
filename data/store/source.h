// Object sources behind one interface: file:// (a directory standing in for the
// object store), s3:// (S3-compatible REST, SigV4) and http(s):// (GET, Range).
// Keys are relative to the URL the source was opened with.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace strata::data {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;
};

// Counters every source keeps (thread-safe); the loader reports them per epoch.
struct SourceStats {
  std::atomic<int64_t> requests{0};  // remote requests sent (each retry counts)
  std::atomic<int64_t> bytes{0};     // payload bytes received or sent
  std::atomic<int64_t> retries{0};
  std::atomic<int64_t> connections{0};  // TCP connections opened for them (the rest reused one)
};

struct RetryPolicy {
  int max_attempts = 6;       // first try included
  double base_delay_s = 0.1;  // exponential backoff with full jitter
  double max_delay_s = 5.0;
  double connect_timeout_s = 10.0;
  double low_speed_timeout_s = 30.0;  // abort a transfer below 1 KB/s for this long
};

class CredentialProvider;  // data/aws_credentials.h

// How an S3 request names its bucket: path style (https://host/bucket/key) or
// virtual-host style (https://bucket.host/key); auto picks per endpoint
// (docs/object-store.md, "Addressing").
enum class AddressingStyle { kUnset, kAuto, kPath, kVirtual };

// How s3:// downloads a whole object (get_to_file, the shard cache's path): an
// object larger than part_bytes comes in ranged GETs of part_bytes, up to
// `connections` at a time (data/ranged_get.h); connections = 1 sends one plain
// GET per object. The defaults are measured: docs/loader.md, "Transfer from the store".
struct PartedTransfer {
  int connections = 4;
  int64_t part_bytes = int64_t{8} << 20;
};

// Options for s3://. Unset fields come from the AWS configuration chain: the
// environment, AWS_CONFIG_FILE (~/.aws/config) and AWS_SHARED_CREDENTIALS_FILE
// (~/.aws/credentials) for the profile, as the AWS CLI reads them; a field set
// here wins over all of those (docs/object-store.md has the full order).
struct SourceOptions {
  std::string endpoint;  // e.g. http://127.0.0.1:7480
  std::string region;
  std::string profile;  // the AWS profile; "" = AWS_PROFILE, else "default"
  AddressingStyle addressing = AddressingStyle::kUnset;
  std::string ca_bundle;     // PEM file of CAs trusted for https:// endpoints
  std::string sts_endpoint;  // STS for web-identity credentials; "" = from the chain
  std::string access_key;    // static keys: set both to skip the credential chain
  std::string secret_key;
  std::string session_token;
  // Where signing keys come from; the chain fills it, or a caller plugs in its own.
  std::shared_ptr<CredentialProvider> credentials;
  RetryPolicy retry;
  PartedTransfer parts;
  // How s3:// uploads a file (put_file): a file larger than part_bytes goes up
  // as a multipart upload of part_bytes parts, `connections` at a time
  // (data/store/s3_multipart.h). The defaults are measured: docs/object-store.md,
  // "Uploads".
  PartedTransfer upload{8, int64_t{16} << 20};
};

class Source {
 public:
  virtual ~Source() = default;
  // The URL this source was opened with (for messages).
  virtual std::string url() const = 0;
  // Whole object.
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  // Bytes [offset, offset+length) of an object (clipped at its end).
  virtual std::vector<uint8_t> get_range(const std::string& key, uint64_t offset, uint64_t length) = 0;
  // Whole object streamed into `dest` (created or truncated). Not atomic: the
  // cache writes to a temporary name and renames after verifying.
  virtual void get_to_file(const std::string& key, const std::filesystem::path& dest) = 0;
  virtual ObjectInfo head(const std::string& key) = 0;
  virtual void put(const std::string& key, const std::vector<uint8_t>& bytes) = 0;
  virtual void put_file(const std::string& key, const std::filesystem::path& src) = 0;
  // Every object whose key starts with `prefix`, in key order.
  virtual std::vector<ObjectInfo> list(const std::string& prefix) = 0;
  // Deletes these objects; one that is not there is not an error. s3:// sends
  // them in DeleteObjects requests of up to 1,000 keys.
  virtual void remove(const std::vector<std::string>& keys) = 0;

  SourceStats& stats() { return stats_; }

 protected:
  SourceStats stats_;
};

// Opens a source for a URL: "s3://bucket/prefix", "file:///dir", "/dir" or
// "dir" (a local path), "http://host/prefix". Throws strata::ConfigError for an
// unknown scheme or missing credentials.
std::unique_ptr<Source> open_source(const std::string& url, const SourceOptions& options = {});

}  // namespace strata::data
