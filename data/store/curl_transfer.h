// One HTTP request through libcurl with the project's retry policy. Shared by
// S3Source and HttpSource. Each request borrows an easy handle from the
// process's CurlHandlePool, so requests reuse keep-alive connections whichever
// thread sends them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "data/store/source.h"

namespace strata::data {

struct HttpRequest {
  std::string method = "GET";                          // GET, HEAD, PUT, POST or DELETE
  std::string url;                                     // already percent-encoded
  std::vector<std::string> headers;                    // "Name: value"
  std::string range;                                   // "first-last" for a Range GET, else empty
  std::string sigv4;                                   // CURLOPT_AWS_SIGV4 value, e.g. "aws:amz:us-east-1:s3"
  std::string userpwd;                                 // "access:secret" for SigV4
  std::string ca_bundle;                               // PEM CAs for https (CURLOPT_CAINFO); "" = system
  const std::vector<uint8_t>* upload_bytes = nullptr;  // PUT or POST body from memory
  const std::filesystem::path* upload_file = nullptr;  // or from a file: bytes [upload_offset,
  int64_t upload_offset = 0;                           //   upload_offset + upload_length)
  int64_t upload_length = -1;                          //   (-1: to the end)
  std::vector<uint8_t>* body = nullptr;                // 2xx body into memory
  const std::filesystem::path* body_file = nullptr;    // or into a file (truncated per attempt)
  int body_fd = -1;                                    // or into an open file at body_offset
  int64_t body_offset = 0;                             // (pwrite: each attempt rewrites from there)
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-case; last value wins
  std::string error_body;                      // body of a non-2xx answer (S3 XML error)
  int64_t body_bytes = 0;                      // payload bytes of a 2xx answer
  std::string header(const std::string& lower_name) const;
};

// Sends `req`, retrying timeouts, connection errors and HTTP 5xx with
// exponential backoff and full jitter (policy.max_attempts tries in all). Each
// try counts in stats.requests, each retry in stats.retries, payload bytes in
// stats.bytes, connections it had to open (CURLINFO_NUM_CONNECTS) in
// stats.connections. Returns the last response (a 4xx or, once tries run out, a
// 5xx; the caller turns it into an error). Throws RemoteError (status 0) when
// the transport failed on every try; `what` names the operation for that message.
HttpResponse perform_with_retry(const HttpRequest& req, const RetryPolicy& policy, SourceStats& stats,
                                const std::string& what);

// RFC 3986 percent-encoding: unreserved characters stay, '/' stays if keep_slash.
std::string percent_encode(const std::string& s, bool keep_slash);

}  // namespace strata::data
