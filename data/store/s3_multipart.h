// Whole-file uploads as S3 multipart uploads, several parts at a time. One
// PUT is capped by one TCP stream and by S3's 5 GB limit per request; a
// multipart upload sends the file in parts of part_bytes (the last shorter), up
// to `connections` PUTs at a time, each read in place from the file (no copy
// in memory beyond curl's buffer) and signed with its own SHA-256, so the store
// checks every part's bytes. Every part goes through perform_with_retry (the
// retry policy of a single request: backoff with jitter on 5xx, resets and
// stalls; a part that sends or receives nothing for retry.low_speed_timeout_s
// is a stall). When a part still fails, no new part starts, the parts in
// flight finish, every part's error is kept, the upload is aborted (S3 then
// drops the parts it holds: nothing is left open) and the error names the
// first part that failed and counts the others. The object appears only when
// CompleteMultipartUpload succeeds: a reader never sees part of it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/store/curl_transfer.h"
#include "data/store/source.h"

namespace strata::data {

// What an upload needs from its source: `request` makes a signed request on
// the object ("?" + query appended when the query is not empty; queries are
// written sorted by name), `describe` turns a failed answer into
// "HTTP 403 AccessDenied (...), request id ..", `what` names the object
// ("s3://bucket/key") in messages.
struct MultipartTarget {
  std::function<HttpRequest(const std::string& method, const std::string& query,
                            const std::string& payload_sha256)>
      request;
  std::function<std::string(const HttpResponse&)> describe;
  std::string what;
};

struct UploadReport {
  int parts = 0;
  int64_t part_bytes = 0;  // the size used (grown when the file needs more than 10,000 parts)
  int64_t bytes = 0;
  double seconds = 0;
  double megabytes_per_second() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
};

// S3 allows 10,000 parts per upload: a file that needs more with part_bytes
// gets parts of ceil(size / 10,000) rounded up to a MiB.
int64_t multipart_part_bytes(int64_t file_bytes, int64_t part_bytes);

// Uploads `src` (its size when called) to the target. Throws RemoteError (or
// IoError for the local file) after aborting the upload.
UploadReport put_in_parts(const MultipartTarget& target, const std::filesystem::path& src,
                          const PartedTransfer& parts, const RetryPolicy& retry, SourceStats& stats);

// A multipart upload that was started and neither completed nor aborted
// (ListMultipartUploads); keys are the store's full keys.
struct OpenUpload {
  std::string key, upload_id, initiated;
};
std::vector<OpenUpload> parse_open_uploads(const std::string& xml, bool& truncated, std::string& next_key,
                                           std::string& next_upload_id);

}  // namespace strata::data
