#include "data/store/http_source.h"

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "data/store/curl_transfer.h"

namespace strata::data {
namespace {

[[noreturn]] void fail(const std::string& op, const std::string& url, const HttpResponse& r) {
  throw RemoteError("HTTP " + op + " " + url + ": status " + std::to_string(r.status), r.status,
                    r.header("x-amz-request-id"));
}

}  // namespace

HttpSource::HttpSource(std::string url, const SourceOptions& options)
    : base_(std::move(url)), retry_(options.retry) {
  if (base_.back() != '/') base_ += '/';
}

std::string HttpSource::object_url(const std::string& key) const { return base_ + percent_encode(key, true); }

std::vector<uint8_t> HttpSource::get(const std::string& key) {
  std::vector<uint8_t> body;
  HttpRequest r;
  r.url = object_url(key);
  r.body = &body;
  HttpResponse resp = perform_with_retry(r, retry_, stats_, "HTTP GET " + r.url);
  if (resp.status != 200) fail("GET", r.url, resp);
  return body;
}

std::vector<uint8_t> HttpSource::get_range(const std::string& key, uint64_t offset, uint64_t length) {
  if (length == 0) return {};
  std::vector<uint8_t> body;
  HttpRequest r;
  r.url = object_url(key);
  r.range = std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  r.body = &body;
  HttpResponse resp = perform_with_retry(r, retry_, stats_, "HTTP GET (range " + r.range + ") " + r.url);
  if (resp.status == 416) return {};
  if (resp.status == 200) {  // server without Range support
    if (offset >= body.size()) return {};
    const auto end = std::min<uint64_t>(body.size(), offset + length);
    return std::vector<uint8_t>(body.begin() + static_cast<std::ptrdiff_t>(offset),
                                body.begin() + static_cast<std::ptrdiff_t>(end));
  }
  if (resp.status != 206) fail("GET (range " + r.range + ")", r.url, resp);
  unsigned long long first = 0, last = 0;
  if (std::sscanf(resp.header("content-range").c_str(), "bytes %llu-%llu", &first, &last) != 2 ||
      first != offset || last < first || last - first + 1 != body.size() || body.size() > length)
    throw RemoteError("HTTP GET (range " + r.range + ") " + r.url + ": body of " +
                          std::to_string(body.size()) + " bytes does not match Content-Range '" +
                          resp.header("content-range") + "'",
                      resp.status, "");
  return body;
}

void HttpSource::get_to_file(const std::string& key, const std::filesystem::path& dest) {
  HttpRequest r;
  r.url = object_url(key);
  r.body_file = &dest;
  HttpResponse resp = perform_with_retry(r, retry_, stats_, "HTTP GET " + r.url);
  if (resp.status != 200) fail("GET", r.url, resp);
}

ObjectInfo HttpSource::head(const std::string& key) {
  HttpRequest r;
  r.method = "HEAD";
  r.url = object_url(key);
  HttpResponse resp = perform_with_retry(r, retry_, stats_, "HTTP HEAD " + r.url);
  if (resp.status != 200) fail("HEAD", r.url, resp);
  std::string etag = resp.header("etag");
  if (etag.size() >= 2 && etag.front() == '"') etag = etag.substr(1, etag.size() - 2);
  return ObjectInfo{key, std::strtoull(resp.header("content-length").c_str(), nullptr, 10), etag};
}

void HttpSource::put(const std::string& key, const std::vector<uint8_t>&) {
  throw ConfigError("cannot write '" + key + "' to " + base_ +
                    ": http(s) sources are read-only (use s3:// or a directory)");
}

void HttpSource::put_file(const std::string& key, const std::filesystem::path&) { put(key, {}); }

void HttpSource::remove(const std::vector<std::string>& keys) {
  if (!keys.empty()) put(keys.front(), {});
}

std::vector<ObjectInfo> HttpSource::list(const std::string& prefix) {
  throw ConfigError("cannot list '" + prefix + "' under " + base_ +
                    ": http(s) sources have no listing (read manifest.json for the shard names)");
}

}  // namespace strata::data
