// strata::Error: the one exception family users see. Each error says what failed
// and where (config key path, file, shard, HTTP status and request id).
// Lives in base/, below every other room: kernels, core, data and distributed all
// throw it, and nothing in base/ includes anything of strata above it.
#pragma once
#include <stdexcept>
#include <string>

namespace strata {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A configuration value or command-line option is invalid.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Reading or writing a file, shard or checkpoint failed.
class IoError : public Error {
 public:
  using Error::Error;
};

// A remote object store or HTTP server refused or failed a request.
class RemoteError : public Error {
 public:
  RemoteError(const std::string& what, long http_status, std::string request_id)
      : Error(what), http_status_(http_status), request_id_(std::move(request_id)) {}
  long http_status() const { return http_status_; }
  const std::string& request_id() const { return request_id_; }

 private:
  long http_status_;
  std::string request_id_;
};

// Shapes, dtypes or arguments of an op do not fit together.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A collective operation failed or timed out.
class CommError : public Error {
 public:
  using Error::Error;
};

}  // namespace strata

#define STRATA_CHECK(cond, ErrType, msg)                                                                   \
  do {                                                                                                     \
    if (!(cond)) throw ErrType(std::string(msg) + " (" + __FILE__ + ":" + std::to_string(__LINE__) + ")"); \
  } while (0)
