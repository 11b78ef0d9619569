// S3Source. libcurl 7.88.1 signs the path and query verbatim and does not add
// x-amz-content-sha256 (research/loaders.md d2), so this file: sends that header
// on every request (hex SHA-256 of a PUT body, UNSIGNED-PAYLOAD otherwise),
// percent-encodes keys itself, and writes query strings sorted by key with
// encoded values.
#include "data/s3_source.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>

#include "base/error.h"
#include "data/curl_transfer.h"
#include "data/ranged_get.h"
#include "data/s3_xml.h"

namespace strata::data {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string sha256_hex(const std::function<bool(EVP_MD_CTX*)>& feed, const std::string& what) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 || !feed(ctx.get()) ||
      EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    throw IoError("SHA-256 of " + what + " failed");
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

std::string sha256_bytes(const std::vector<uint8_t>& v) {
  return sha256_hex([&](EVP_MD_CTX* c) { return EVP_DigestUpdate(c, v.data(), v.size()) == 1; }, "a buffer");
}

std::string sha256_file(const std::filesystem::path& p) {
  return sha256_hex(
      [&](EVP_MD_CTX* c) {
        std::ifstream in(p, std::ios::binary);
        if (!in) throw IoError("cannot open " + p.string() + " for upload");
        std::vector<char> buf(1 << 20);
        while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
          if (EVP_DigestUpdate(c, buf.data(), static_cast<size_t>(in.gcount())) != 1) return false;
        return !in.bad();
      },
      p.string());
}

// The [profile] section of an AWS shared credentials (ini) file.
void read_credentials_file(SourceOptions& o) {
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.aws/credentials";
  std::ifstream in(path);
  if (path.empty() || !in) return;
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (section != profile || eq == std::string::npos) continue;
    const std::string k = trim(line.substr(0, eq)), v = trim(line.substr(eq + 1));
    if (k == "aws_access_key_id")
      o.access_key = v;
    else if (k == "aws_secret_access_key")
      o.secret_key = v;
    else if (k == "aws_session_token")
      o.session_token = v;
  }
}

void split_s3_url(const std::string& url, std::string& bucket, std::string& prefix) {
  std::string rest = url.rfind("s3://", 0) == 0 ? url.substr(5) : url;
  const auto slash = rest.find('/');
  bucket = rest.substr(0, slash);
  prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket.empty()) throw ConfigError("S3 URL '" + url + "' has no bucket (expected s3://bucket/prefix)");
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
}

// The common part of every S3 request: endpoint, signing, payload hash, token.
HttpRequest base_request(const SourceOptions& o, const std::string& method, const std::string& url,
                         const std::string& payload_sha256) {
  HttpRequest r;
  r.method = method;
  r.url = url;
  r.sigv4 = "aws:amz:" + o.region + ":s3";
  r.userpwd = o.access_key + ":" + o.secret_key;
  r.headers.push_back("x-amz-content-sha256: " + payload_sha256);
  if (!o.session_token.empty()) r.headers.push_back("x-amz-security-token: " + o.session_token);
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

SourceOptions resolve_s3_options(const SourceOptions& options) {
  SourceOptions o = options;
  for (const char* v : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT"})
    if (o.endpoint.empty()) o.endpoint = env(v);
  for (const char* v : {"AWS_REGION", "AWS_DEFAULT_REGION"})
    if (o.region.empty()) o.region = env(v);
  if (o.region.empty()) o.region = "us-east-1";
  if (o.endpoint.empty()) o.endpoint = "https://s3." + o.region + ".amazonaws.com";
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  if (o.access_key.empty() && o.secret_key.empty()) {
    o.access_key = env("AWS_ACCESS_KEY_ID");
    o.secret_key = env("AWS_SECRET_ACCESS_KEY");
    if (o.session_token.empty()) o.session_token = env("AWS_SESSION_TOKEN");
  }
  if (o.access_key.empty() || o.secret_key.empty()) read_credentials_file(o);
  if (o.access_key.empty() || o.secret_key.empty())
    throw ConfigError(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in "
        "AWS_SHARED_CREDENTIALS_FILE / ~/.aws/credentials (AWS_PROFILE)");
  return o;
}

S3Source::S3Source(const std::string& url, const SourceOptions& options) : opt_(resolve_s3_options(options)) {
  split_s3_url(url, bucket_, prefix_);
}

std::string S3Source::url() const { return "s3://" + bucket_ + "/" + prefix_; }

std::string S3Source::object_url(const std::string& full_key) const {
  return opt_.endpoint + "/" + bucket_ + "/" + percent_encode(full_key, true);
}

void S3Source::fail(const std::string& op, const std::string& full_key, const HttpResponse& r) const {
  throw RemoteError(
      "S3 " + op + " s3://" + bucket_ + "/" + full_key + " at " + opt_.endpoint + ": " + describe(r),
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
  HttpRequest r = base_request(opt_, "PUT", object_url(k), sha256_bytes(bytes));
  r.upload_bytes = &bytes;
  HttpResponse resp = perform_with_retry(r, opt_.retry, stats_, "S3 PUT s3://" + bucket_ + "/" + k);
  if (resp.status != 200) fail("PUT", k, resp);
}

void S3Source::put_file(const std::string& key, const std::filesystem::path& src) {
  const std::string k = prefix_ + key;
  HttpRequest r = base_request(opt_, "PUT", object_url(k), sha256_file(src));
  r.upload_file = &src;
  HttpResponse resp =
      perform_with_retry(r, opt_.retry, stats_, "S3 PUT s3://" + bucket_ + "/" + k + " from " + src.string());
  if (resp.status != 200) fail("PUT", k, resp);
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
    HttpRequest r = base_request(opt_, "GET", opt_.endpoint + "/" + bucket_ + "?" + q, "UNSIGNED-PAYLOAD");
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

void create_bucket(const std::string& s3_url_or_bucket, const SourceOptions& options) {
  std::string bucket, prefix;
  split_s3_url(s3_url_or_bucket, bucket, prefix);
  const SourceOptions o = resolve_s3_options(options);
  SourceStats stats;
  HttpRequest r = base_request(o, "PUT", o.endpoint + "/" + bucket, sha256_bytes({}));
  const std::vector<uint8_t> empty;
  r.upload_bytes = &empty;
  HttpResponse resp = perform_with_retry(r, o.retry, stats, "S3 create bucket " + bucket);
  if (resp.status == 200) return;
  if (resp.status == 409 && parse_s3_error(resp.error_body).code == "BucketAlreadyOwnedByYou") return;
  throw RemoteError("S3 create bucket '" + bucket + "' at " + o.endpoint + ": " + describe(resp), resp.status,
                    request_id(resp));
}

}  // namespace strata::data
