#include "data/store/s3_multipart.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "data/store/payload_hash.h"
#include "data/store/s3_xml.h"

namespace strata::data {
namespace {

constexpr int64_t kMaxParts = 10000;
constexpr int64_t kMiB = int64_t{1} << 20;

struct PartError {
  int part = 0;  // 1-based
  std::string message;
};

std::string range_text(int64_t first, int64_t bytes) {
  return "bytes " + std::to_string(first) + "-" + std::to_string(first + bytes - 1);
}

std::string start_upload(const MultipartTarget& t, const RetryPolicy& retry, SourceStats& stats) {
  // "uploads=": SigV4 signs a valueless parameter as "uploads=", and curl signs the query verbatim.
  HttpRequest r = t.request("POST", "uploads=", sha256_hex(std::string()));
  const std::vector<uint8_t> empty;
  std::vector<uint8_t> body;
  r.upload_bytes = &empty;
  r.body = &body;
  r.headers.push_back("Content-Type: application/octet-stream");
  const HttpResponse resp = perform_with_retry(r, retry, stats, "S3 CreateMultipartUpload " + t.what);
  const std::string xml(body.begin(), body.end());
  const std::string id = xml_element_text(xml, "UploadId");
  if (resp.status != 200 || id.empty())
    throw RemoteError("S3 CreateMultipartUpload " + t.what + ": " +
                          (resp.status != 200 ? t.describe(resp) : "the answer names no UploadId"),
                      resp.status, resp.header("x-amz-request-id"));
  return id;
}

// Sends part `n` (1-based) and returns its ETag, quotes included.
std::string put_part(const MultipartTarget& t, const std::filesystem::path& src, const std::string& id, int n,
                     int64_t first, int64_t bytes, const RetryPolicy& retry, SourceStats& stats) {
  const std::string what =
      "S3 UploadPart " + std::to_string(n) + " (" + range_text(first, bytes) + ") of " + t.what;
  HttpRequest r =
      t.request("PUT", "partNumber=" + std::to_string(n) + "&uploadId=" + percent_encode(id, false),
                sha256_hex_of_file(src, first, bytes));
  r.upload_file = &src;
  r.upload_offset = first;
  r.upload_length = bytes;
  const HttpResponse resp = perform_with_retry(r, retry, stats, what);
  const std::string etag = resp.header("etag");
  if (resp.status != 200 || etag.empty())
    throw RemoteError(what + ": " + (resp.status != 200 ? t.describe(resp) : "the answer has no ETag"),
                      resp.status, resp.header("x-amz-request-id"));
  return etag;
}

void complete_upload(const MultipartTarget& t, const std::string& id, const std::vector<std::string>& etags,
                     const RetryPolicy& retry, SourceStats& stats) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i)
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] + "</ETag></Part>";
  xml += "</CompleteMultipartUpload>";
  const std::vector<uint8_t> payload(xml.begin(), xml.end());
  std::vector<uint8_t> body;
  HttpRequest r = t.request("POST", "uploadId=" + percent_encode(id, false), sha256_hex(payload));
  r.upload_bytes = &payload;
  r.body = &body;
  r.headers.push_back("Content-Type: application/xml");
  const HttpResponse resp = perform_with_retry(r, retry, stats, "S3 CompleteMultipartUpload " + t.what);
  // S3 may answer 200 and then report the failure in the body (it has already
  // sent the status while it assembles the parts).
  const std::string answer(body.begin(), body.end());
  if (resp.status == 200 && answer.find("<Error>") == std::string::npos) return;
  HttpResponse failed = resp;
  if (resp.status == 200) failed.error_body = answer;
  throw RemoteError("S3 CompleteMultipartUpload " + t.what + ": " + t.describe(failed), resp.status,
                    resp.header("x-amz-request-id"));
}

// "" when the upload was aborted, else why not.
std::string abort_upload(const MultipartTarget& t, const std::string& id, const RetryPolicy& retry,
                         SourceStats& stats) {
  try {
    HttpRequest r = t.request("DELETE", "uploadId=" + percent_encode(id, false), sha256_hex(std::string()));
    const HttpResponse resp = perform_with_retry(r, retry, stats, "S3 AbortMultipartUpload " + t.what);
    if (resp.status == 204 || resp.status == 200 || resp.status == 404) return "";
    return t.describe(resp);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

int64_t multipart_part_bytes(int64_t file_bytes, int64_t part_bytes) {
  if (part_bytes <= 0)
    throw ConfigError("upload part size must be > 0 bytes, got " + std::to_string(part_bytes));
  if ((file_bytes + part_bytes - 1) / part_bytes <= kMaxParts) return part_bytes;
  const int64_t need = (file_bytes + kMaxParts - 1) / kMaxParts;
  return (need + kMiB - 1) / kMiB * kMiB;
}

UploadReport put_in_parts(const MultipartTarget& target, const std::filesystem::path& src,
                          const PartedTransfer& parts, const RetryPolicy& retry, SourceStats& stats) {
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(src, ec));
  if (ec) throw IoError("cannot upload " + src.string() + ": " + ec.message());
  UploadReport report;
  report.bytes = size;
  report.part_bytes = multipart_part_bytes(size, parts.part_bytes);
  const int nparts =
      static_cast<int>(std::max<int64_t>(1, (size + report.part_bytes - 1) / report.part_bytes));
  report.parts = nparts;

  const std::string id = start_upload(target, retry, stats);
  std::vector<std::string> etags(static_cast<size_t>(nparts));
  std::vector<PartError> errors;  // in the order they happened
  std::mutex mu;
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (int i; !failed && (i = next++) < nparts;) {
      const int64_t first = int64_t{i} * report.part_bytes;
      const int64_t bytes = std::min(report.part_bytes, size - first);
      try {
        etags[static_cast<size_t>(i)] = put_part(target, src, id, i + 1, first, bytes, retry, stats);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back({i + 1, e.what()});
        failed = true;
      }
    }
  };
  const int nthreads = std::clamp(parts.connections, 1, nparts);
  std::vector<std::thread> pool;
  for (int k = 1; k < nthreads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();

  try {
    if (errors.empty()) complete_upload(target, id, etags, retry, stats);
  } catch (const std::exception& e) {
    errors.push_back({0, e.what()});
  }
  if (!errors.empty()) {
    const std::string not_aborted = abort_upload(target, id, retry, stats);
    std::string msg = "upload of " + src.string() + " to " + target.what + " in " + std::to_string(nparts) +
                      " parts failed: " + errors.front().message;
    if (errors.size() > 1)
      msg += "; " + std::to_string(errors.size() - 1) + " more part(s) failed too, first: part " +
             std::to_string(errors[1].part) + ": " + errors[1].message;
    msg += not_aborted.empty() ? "; the upload was aborted (no parts left in the store)"
                               : "; aborting the upload (id " + id + ") failed too: " + not_aborted +
                                     " (its parts stay in the store until aborted)";
    throw RemoteError(msg, 0, "");
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::vector<OpenUpload> parse_open_uploads(const std::string& xml, bool& truncated, std::string& next_key,
                                           std::string& next_upload_id) {
  truncated = xml_element_text(xml, "IsTruncated") == "true";
  next_key = xml_element_text(xml, "NextKeyMarker");
  next_upload_id = xml_element_text(xml, "NextUploadIdMarker");
  std::vector<OpenUpload> out;
  for (size_t pos = 0; (pos = xml.find("<Upload>", pos)) != std::string::npos;) {
    const size_t end = xml.find("</Upload>", pos);
    if (end == std::string::npos) break;
    const std::string one = xml.substr(pos, end - pos);
    out.push_back({xml_element_text(one, "Key"), xml_element_text(one, "UploadId"),
                   xml_element_text(one, "Initiated")});
    pos = end;
  }
  return out;
}

}  // namespace strata::data
