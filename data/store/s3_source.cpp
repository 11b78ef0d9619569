// S3Source. libcurl 7.88.1 signs the path and query verbatim and does not add
// x-amz-content-sha256 (research/loaders.md d2), so this file: sends that header
// on every request (hex SHA-256 of a PUT body, UNSIGNED-PAYLOAD otherwise),
// percent-encodes keys itself, and writes query strings sorted by key with
// encoded values.
#include "data/store/s3_source.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "data/store/aws_credentials.h"
#include "data/store/curl_transfer.h"
#include "data/store/payload_hash.h"
#include "data/store/ranged_get.h"
#include "data/store/s3_xml.h"

namespace strata::data {
namespace {

// The bucket of an s3:// URL; `prefix` receives the rest ("" or ending in '/').
std::string split_s3_url(const std::string& url, std::string& prefix) {
  std::string rest = url.rfind("s3://", 0) == 0 ? url.substr(5) : url;
  const auto slash = rest.find('/');
  std::string bucket = rest.substr(0, slash);
  prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket.empty()) throw ConfigError("S3 URL '" + url + "' has no bucket (expected s3://bucket/prefix)");
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return bucket;
}

// The common part of every S3 request: endpoint, signing, payload hash, token.
HttpRequest base_request(const SourceOptions& o, const std::string& method, const std::string& url,
                         const std::string& payload_sha256) {
  const AwsCredentials keys = o.credentials->get();  // temporary keys are refreshed here
  HttpRequest r;
  r.method = method;
  r.url = url;
  r.sigv4 = "aws:amz:" + o.region + ":s3";
  r.userpwd = keys.access_key + ":" + keys.secret_key;
  r.ca_bundle = o.ca_bundle;
  r.headers.push_back("x-amz-content-sha256: " + payload_sha256);
  if (!keys.session_token.empty()) r.headers.push_back("x-amz-security-token: " + keys.session_token);
  return r;
}

std::string request_id(const HttpResponse& r) {
  std::string id = r.header("x-amz-request-id");
  return id.empty() ? parse_s3_error(r.error_body).request_id : id;
}

std::string describe(const HttpResponse& r) {
  S3Error e = parse_s3_error(r.error_body);
  const std::string id = request_id(r);
  std::string s = "HTTP " + std::to_string(r.status);
  if (!e.code.empty()) s += " " + e.code;
  if (!e.message.empty()) s += " (" + e.message + ")";
  s += ", request id " + (id.empty() ? std::string("(none)") : id);
  return s;
}

}  // namespace

S3Source::S3Source(const std::string& url, const SourceOptions& options)
    : bucket_(split_s3_url(url, prefix_)),
      opt_(resolve_s3_options(options)),
      endpoint_(opt_.endpoint, bucket_, opt_.addressing) {}

std::string S3Source::url() const { return "s3://" + bucket_ + "/" + prefix_; }

std::string S3Source::object_url(const std::string& full_key) const {
  return endpoint_.object_url(percent_encode(full_key, true));
}

void S3Source::fail(const std::string& op, const std::string& full_key, const HttpResponse& r) const {
  // A refusal is most often the wrong keys: say which ones were used.
  const std::string keys = r.status == 403 ? " (keys from " + opt_.credentials->describe() + ")" : "";
  throw RemoteError(
      "S3 " + op + " s3://" + bucket_ + "/" + full_key + " at " + opt_.endpoint + ": " + describe(r) + keys,
      r.status, request_id(r));
}

std::vector<uint8_t> S3Source::get(const std::string& key) {
  const std::string k = prefix_ + key;
  std::vector<uint8_t> body;
  HttpRequest r = base_request(opt_, "GET", object_url(k), "UNSIGNED-PAYLOAD");
  r.body = &body;
  HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 GET s3://" + bucket_ + "/" + k);
  if (resp.status != 200) fail("GET", k, resp);
  return body;
}

std::vector<uint8_t> S3Source::get_range(const std::string& key, uint64_t offset, uint64_t length) {
  if (length == 0) return {};
  const std::string k = prefix_ + key;
  std::vector<uint8_t> body;
  HttpRequest r = base_request(opt_, "GET", object_url(k), "UNSIGNED-PAYLOAD");
  r.range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  r.body = &body;
  HttpResponse resp =
      perform_with_retry(r, opt_.retry, stats_, "S3 GET (range " + r.range + ") s3://" + bucket_ + "/" + k);
  if (resp.status == 416) return {};  // the range starts at or past the end: clipped to nothing
  if (resp.status == 200) {           // a server that ignores Range: cut the slice out
    if (offset >= body.size()) return {};
    const auto end = std::min<uint64_t>(body.size(), offset + length);
    return std::vector<uint8_t>(body.begin() + static_cast<std::ptrdiff_t>(offset),
                                body.begin() + static_cast<std::ptrdiff_t>(end));
  }
  if (resp.status != 206) fail("GET (range " + r.range + ")", k, resp);
  // Content-Range: bytes first-last/total; the body must be exactly that long.
  unsigned long long first = 0, last = 0;
  const std::string cr = resp.header("content-range");
  if (std::sscanf(cr.c_str(), "bytes %llu-%llu", &first, &last) != 2 || first != offset || last < first ||
      last - first + 1 != body.size() || body.size() > length)
    throw RemoteError("S3 GET (range " + r.range + ") s3://" + bucket_ + "/" + k + ": got " +
                          std::to_string(body.size()) + " bytes with Content-Range '" + cr + "'",
                      resp.status, resp.header("x-amz-request-id"));
  return body;
}

void S3Source::get_to_file(const std::string& key, const std::filesystem::path& dest) {
  const std::string k = prefix_ + key;
  if (opt_.parts.connections > 1) {
    ObjectGet object{[&] { return base_request(opt_, "GET", object_url(k), "UNSIGNED-PAYLOAD"); },
                     [&](const HttpResponse& resp, const std::string& range) {
                       fail(range.empty() ? "GET" : "GET (range " + range + ")", k, resp);
                     },
                     "S3 GET s3://" + bucket_ + "/" + k};
    return get_in_parts(object, dest, opt_.parts, opt_.retry, stats_);
  }
  HttpRequest r = base_request(opt_, "GET", object_url(k), "UNSIGNED-PAYLOAD");
  r.body_file = &dest;
  HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 GET s3://" + bucket_ + "/" + k);
  if (resp.status != 200) fail("GET", k, resp);
}

ObjectInfo S3Source::head(const std::string& key) {
  const std::string k = prefix_ + key;
  HttpRequest r = base_request(opt_, "HEAD", object_url(k), "UNSIGNED-PAYLOAD");
  HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 HEAD s3://" + bucket_ + "/" + k);
  if (resp.status != 200) fail("HEAD", k, resp);
  ObjectInfo info{key, std::strtoull(resp.header("content-length").c_str(), nullptr, 10),
                  resp.header("etag")};
  if (info.etag.size() >= 2 && info.etag.front() == '"')
    info.etag = info.etag.substr(1, info.etag.size() - 2);
  return info;
}

void S3Source::put(const std::string& key, const std::vector<uint8_t>& bytes) {
  const std::string k = prefix_ + key;
  HttpRequest r = base_request(opt_, "PUT", object_url(k), sha256_hex(bytes));
  r.upload_bytes = &bytes;
  HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 PUT s3://" + bucket_ + "/" + k);
  if (resp.status != 200) fail("PUT", k, resp);
}

void S3Source::put_file(const std::string& key, const std::filesystem::path& src) {
  const std::string k = prefix_ + key;
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(src, ec));
  if (ec)
    throw IoError("cannot upload " + src.string() + " to s3://" + bucket_ + "/" + k + ": " + ec.message());
  UploadReport report;
  if (size > opt_.upload.part_bytes) {
    report = put_in_parts(multipart_target(k), src, opt_.upload, opt_.retry, stats_);
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    HttpRequest r = base_request(opt_, "PUT", object_url(k), sha256_hex_of_file(src));
    r.upload_file = &src;
    HttpResponse resp = perform_with_retry(r, opt_.retry, stats_,
                                           "S3 PUT s3://" + bucket_ + "/" + k + " from " + src.string());
    if (resp.status != 200) fail("PUT", k, resp);
    report = {1, size, size, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  }
  std::lock_guard<std::mutex> lock(upload_mu_);
  last_upload_ = report;
}

UploadReport S3Source::last_upload() const {
  std::lock_guard<std::mutex> lock(upload_mu_);
  return last_upload_;
}

MultipartTarget S3Source::multipart_target(const std::string& full_key) const {
  const std::string url = object_url(full_key);
  return {[this, url](const std::string& method, const std::string& query, const std::string& sha256) {
            return base_request(opt_, method, query.empty() ? url : url + "?" + query, sha256);
          },
          [](const HttpResponse& r) { return describe(r); }, "s3://" + bucket_ + "/" + full_key};
}

std::vector<OpenUpload> S3Source::open_uploads(const std::string& prefix) {
  const std::string full = prefix_ + prefix;
  std::vector<OpenUpload> out;
  std::string key_marker, id_marker;
  for (;;) {
    // Sorted by parameter name, as curl 7.88 signs the query verbatim.
    std::string q;
    if (!key_marker.empty()) q += "key-marker=" + percent_encode(key_marker, false) + "&";
    q += "prefix=" + percent_encode(full, false);
    if (!id_marker.empty()) q += "&upload-id-marker=" + percent_encode(id_marker, false);
    q += "&uploads=";
    std::vector<uint8_t> body;
    HttpRequest r = base_request(opt_, "GET", endpoint_.bucket_resource() + "?" + q, "UNSIGNED-PAYLOAD");
    r.body = &body;
    HttpResponse resp =
        perform_with_retry(r, opt_.retry, stats_, "S3 ListMultipartUploads s3://" + bucket_ + "/" + full);
    if (resp.status != 200) fail("ListMultipartUploads", full + "*", resp);
    bool truncated = false;
    auto page = parse_open_uploads(std::string(body.begin(), body.end()), truncated, key_marker, id_marker);
    for (auto& u : page)
      if (u.key.compare(0, prefix_.size(), prefix_) == 0)
        out.push_back({u.key.substr(prefix_.size()), u.upload_id, u.initiated});
    if (!truncated) break;
    if (key_marker.empty())
      throw RemoteError(
          "S3 ListMultipartUploads s3://" + bucket_ + "/" + full + ": truncated page without NextKeyMarker",
          resp.status, resp.header("x-amz-request-id"));
  }
  return out;
}

void S3Source::abort_upload(const OpenUpload& upload) {
  const std::string k = prefix_ + upload.key;
  HttpRequest r =
      base_request(opt_, "DELETE", object_url(k) + "?uploadId=" + percent_encode(upload.upload_id, false),
                   sha256_hex(std::string()));
  HttpResponse resp =
      perform_with_retry(r, opt_.retry, stats_, "S3 AbortMultipartUpload s3://" + bucket_ + "/" + k);
  if (resp.status != 204 && resp.status != 200 && resp.status != 404) fail("AbortMultipartUpload", k, resp);
}

std::vector<ObjectInfo> S3Source::list(const std::string& prefix) {
  const std::string full = prefix_ + prefix;
  std::vector<ObjectInfo> out;
  std::string token;
  for (;;) {
    // Sorted by parameter name, values encoded ('/' too): curl 7.88 signs this verbatim.
    std::string q;
    if (!token.empty()) q += "continuation-token=" + percent_encode(token, false) + "&";
    q += "list-type=2&max-keys=" + std::to_string(page_size_) + "&prefix=" + percent_encode(full, false);
    std::vector<uint8_t> body;
    HttpRequest r = base_request(opt_, "GET", endpoint_.bucket_resource() + "?" + q, "UNSIGNED-PAYLOAD");
    r.body = &body;
    HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 LIST s3://" + bucket_ + "/" + full);
    if (resp.status != 200) fail("LIST (ListObjectsV2)", full + "*", resp);
    ListPage page = parse_list_page(std::string(body.begin(), body.end()));
    for (auto& o : page.objects) {
      if (o.key.compare(0, prefix_.size(), prefix_) != 0) continue;
      o.key = o.key.substr(prefix_.size());
      out.push_back(std::move(o));
    }
    if (!page.truncated) break;
    if (page.next_token.empty())
      throw RemoteError(
          "S3 LIST s3://" + bucket_ + "/" + full + ": truncated page without NextContinuationToken",
          resp.status, resp.header("x-amz-request-id"));
    token = page.next_token;
  }
  return out;
}

void S3Source::remove(const std::vector<std::string>& keys) {
  constexpr size_t kBatch = 1000;  // DeleteObjects' limit
  for (size_t b = 0; b < keys.size(); b += kBatch) {
    std::string xml = "<Delete><Quiet>true</Quiet>";
    for (size_t i = b; i < std::min(keys.size(), b + kBatch); ++i)
      xml += "<Object><Key>" + xml_escape(prefix_ + keys[i]) + "</Key></Object>";
    xml += "</Delete>";
    const std::vector<uint8_t> payload(xml.begin(), xml.end());
    std::vector<uint8_t> body;
    HttpRequest r = base_request(opt_, "POST", endpoint_.bucket_resource() + "?delete=", sha256_hex(payload));
    r.upload_bytes = &payload;
    r.body = &body;
    r.headers.push_back("Content-Type: application/xml");
    r.headers.push_back("Content-MD5: " + md5_base64(payload));  // DeleteObjects requires it
    const std::string first = prefix_ + keys[b];
    HttpResponse resp =
        perform_with_retry(r, opt_.retry, stats_, "S3 DeleteObjects s3://" + bucket_ + "/" + first);
    if (resp.status != 200)
      fail("DeleteObjects (" + std::to_string(std::min(kBatch, keys.size() - b)) + " keys)", first, resp);
    // Quiet mode lists only the keys that could not be deleted.
    const std::string answer(body.begin(), body.end());
    if (answer.find("<Error>") != std::string::npos) {
      const size_t e = answer.find("<Error>");
      const std::string one = answer.substr(e, answer.find("</Error>", e) - e);
      throw RemoteError("S3 DeleteObjects s3://" + bucket_ + "/" + prefix_ + ": could not delete '" +
                            xml_element_text(one, "Key") + "': " + xml_element_text(one, "Code") + " (" +
                            xml_element_text(one, "Message") + ")",
                        resp.status, request_id(resp));
    }
  }
}

void create_bucket(const std::string& s3_url_or_bucket, const SourceOptions& options) {
  std::string prefix;
  const std::string bucket = split_s3_url(s3_url_or_bucket, prefix);
  const SourceOptions o = resolve_s3_options(options);
  const S3Endpoint at(o.endpoint, bucket, o.addressing);
  SourceStats stats;
  HttpRequest r = base_request(o, "PUT", at.bucket_resource(), sha256_hex(std::string()));
  const std::vector<uint8_t> empty;
  r.upload_bytes = &empty;
  HttpResponse resp = perform_with_retry(r, o.retry, stats, "S3 create bucket " + bucket);
  if (resp.status == 200) return;
  if (resp.status == 409 && parse_s3_error(resp.error_body).code == "BucketAlreadyOwnedByYou") return;
  throw RemoteError("S3 create bucket '" + bucket + "' at " + o.endpoint + ": " + describe(resp), resp.status,
                    request_id(resp));
}

}  // namespace strata::data
