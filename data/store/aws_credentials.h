// Signing keys for S3 and where they come from. A CredentialProvider is asked
// for keys before every request (loader threads ask concurrently); providers
// of temporary keys (credential_process, web identity) cache them and fetch new
// ones a margin before they expire.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/error.h"

namespace strata::data {

// Credentials could not be obtained: a failing credential_process, an STS
// refusal, an unreadable token file. The message names the source.
class CredentialError : public Error {
 public:
  using Error::Error;
};

using WallClock = std::chrono::system_clock;

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;                     // sent as x-amz-security-token when set
  std::optional<WallClock::time_point> expires;  // none: never
};

class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  // Keys valid now. Thread-safe. Throws CredentialError.
  virtual AwsCredentials get() = 0;
  // Where the keys come from, e.g. "credential_process of profile 'dev' in
  // /home/u/.aws/config (/opt/bin/creds)".
  virtual std::string describe() const = 0;
};

class StaticCredentialProvider final : public CredentialProvider {
 public:
  StaticCredentialProvider(AwsCredentials keys, std::string where)
      : keys_(std::move(keys)), where_(std::move(where)) {}
  AwsCredentials get() override { return keys_; }
  std::string describe() const override { return where_; }

 private:
  AwsCredentials keys_;
  std::string where_;
};

// When cached temporary keys are replaced: `margin` before they expire, judged
// by `now` (injectable so tests can move time).
struct RefreshPolicy {
  std::chrono::seconds margin{300};
  std::function<WallClock::time_point()> now = [] { return WallClock::now(); };
};

// Caches what fetch() returns until `margin` before its expiry. One thread
// fetches while the others wait for its result, so a refresh is one request.
// A failed refresh while the cached keys have not yet expired returns those
// keys (and tries again on the next call); once they have expired it throws.
class RefreshingCredentialProvider : public CredentialProvider {
 public:
  explicit RefreshingCredentialProvider(RefreshPolicy policy) : policy_(std::move(policy)) {}
  AwsCredentials get() final;
  // How many times fetch() has been called (the first, and failed ones, included).
  int64_t fetches() const;

 protected:
  virtual AwsCredentials fetch() = 0;

 private:
  RefreshPolicy policy_;
  mutable std::mutex mu_;
  std::optional<AwsCredentials> cached_;
  int64_t fetches_ = 0;
};

// "2026-12-01T20:15:00Z", with optional fractional seconds and a "+hh:mm" /
// "-hh:mm" offset instead of Z. Throws CredentialError naming `what`.
WallClock::time_point parse_iso8601(const std::string& text, const std::string& what);

}  // namespace strata::data
