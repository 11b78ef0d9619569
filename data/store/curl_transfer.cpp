// libcurl transfer + retry. Why the details:
// - easy handles come from a pool (data/store/connection_pool.h), curl_easy_reset
//   between requests: reset keeps the handle's connection cache, so keep-alive
//   connections are reused;
// - a non-2xx body is diverted to HttpResponse::error_body, so an S3 XML error
//   never lands in a caller's download file;
// - download files are truncated and uploads rewound before each try, so a
//   retried transfer starts from byte 0.
#include "data/store/curl_transfer.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "base/error.h"
#include "data/store/connection_pool.h"

namespace strata::data {
namespace {

struct Transfer {
  CURL* curl;
  const HttpRequest* req;
  HttpResponse resp;
  FILE* out_file = nullptr;
  FILE* in_file = nullptr;
  int64_t in_left = 0;  // bytes of in_file still to send
  size_t in_offset = 0;
  int64_t received = 0;
  int write_errno = 0;  // pwrite into req->body_fd failed

  bool success() const {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code >= 200 && code < 300;
  }
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->resp.headers.clear();  // a new response (e.g. after 100 Continue)
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t\r\n");
    t->resp.headers[name] = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (!t->success()) {
    if (t->resp.error_body.size() < 64 * 1024) t->resp.error_body.append(data, len);
    return len;
  }
  const int64_t at = t->req->body_offset + t->received;
  t->received += static_cast<int64_t>(len);
  if (t->req->body_fd >= 0) {
    for (size_t done = 0; done < len;) {
      const ssize_t w = ::pwrite(t->req->body_fd, data + done, len - done, at + static_cast<int64_t>(done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return t->write_errno = w < 0 ? errno : EIO, 0;  // curl aborts the transfer
      done += static_cast<size_t>(w);
    }
    return len;
  }
  if (t->out_file) return std::fwrite(data, 1, len, t->out_file);
  if (t->req->body) t->req->body->insert(t->req->body->end(), data, data + len);
  return len;
}

size_t on_read(char* buf, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->in_file) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(size * n), t->in_left));
    const size_t got = std::fread(buf, 1, want, t->in_file);
    t->in_left -= static_cast<int64_t>(got);
    return got;
  }
  const auto& src = *t->req->upload_bytes;
  const size_t len = std::min(size * n, src.size() - t->in_offset);
  std::copy_n(src.data() + t->in_offset, len, buf);
  t->in_offset += len;
  return len;
}

bool retryable(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
      return true;
    default:
      return false;
  }
}

void backoff(const RetryPolicy& p, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double cap = std::min(p.max_delay_s, p.base_delay_s * std::pow(2.0, attempt - 1));
  const double s = std::uniform_real_distribution<double>(0.0, std::max(cap, 0.0))(rng);  // full jitter
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

bool tls_failure(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CONNECT_ERROR ||
         rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM;
}

// "https://host:port" of a URL, for messages that name the endpoint.
std::string origin_of(const std::string& url) {
  const auto scheme = url.find("://");
  const auto path = url.find_first_of("/?", scheme == std::string::npos ? 0 : scheme + 3);
  return url.substr(0, path);
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::string percent_encode(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

HttpResponse perform_with_retry(const HttpRequest& req, const RetryPolicy& policy, SourceStats& stats,
                                const std::string& what) {
  const CurlHandlePool::Lease lease = CurlHandlePool::process().borrow();
  CURL* curl = lease.get();
  const int attempts = std::max(policy.max_attempts, 1);
  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(curl);
    Transfer t{curl, &req, {}};
    std::unique_ptr<FILE, FileCloser> out, in;
    if (req.body) req.body->clear();
    if (req.body_file) {
      out.reset(std::fopen(req.body_file->c_str(), "wb"));
      if (!out) throw IoError(what + ": cannot create " + req.body_file->string());
      t.out_file = out.get();
    }
    int64_t upload_size = 0;
    if (req.upload_file) {
      in.reset(std::fopen(req.upload_file->c_str(), "rb"));
      if (!in) throw IoError(what + ": cannot open " + req.upload_file->string());
      t.in_file = in.get();
      const auto file_size = static_cast<int64_t>(std::filesystem::file_size(*req.upload_file));
      upload_size = req.upload_length >= 0 ? req.upload_length : file_size - req.upload_offset;
      if (req.upload_offset < 0 || upload_size < 0 || req.upload_offset + upload_size > file_size ||
          fseeko(in.get(), req.upload_offset, SEEK_SET) != 0)
        throw IoError(what + ": bytes " + std::to_string(req.upload_offset) + "+" +
                      std::to_string(upload_size) + " are not in " + req.upload_file->string() + " (" +
                      std::to_string(file_size) + " bytes)");
      t.in_left = upload_size;
    } else if (req.upload_bytes) {
      upload_size = static_cast<int64_t>(req.upload_bytes->size());
    }
    curl_slist* headers = nullptr;
    for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
    std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_guard(headers, &curl_slist_free_all);
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    // libcurl reads 16 KiB at a time by default: 16k socket reads and write
    // callbacks for a 256 MiB shard. The curl tool reads 100 KiB; 256 KiB per
    // pooled handle is little memory.
    curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L * 1024);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(policy.connect_timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::ceil(policy.low_speed_timeout_s)));
    if (!req.sigv4.empty()) {
      curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, req.sigv4.c_str());
      curl_easy_setopt(curl, CURLOPT_USERPWD, req.userpwd.c_str());
    }
    if (!req.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, req.ca_bundle.c_str());
    if (!req.range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, req.range.c_str());
    if (req.method == "HEAD") {
      curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (req.method == "PUT") {
      // UPLOAD + a known size: RGW refuses chunked PUTs (411 MissingContentLength).
      curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload_size));
      curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    } else if (req.method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(upload_size));
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req.upload_bytes ? req.upload_bytes->data() : nullptr);
    } else if (req.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    }

    ++stats.requests;
    const CURLcode rc = curl_easy_perform(curl);
    long connects = 0;
    if (curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK) stats.connections += connects;
    if (out && std::fflush(out.get()) != 0)
      throw IoError(what + ": write error on " + req.body_file->string());
    if (t.write_errno)
      throw IoError(what + ": cannot write at offset " + std::to_string(req.body_offset) + ": " +
                    std::strerror(t.write_errno));
    if (rc == CURLE_OK) {
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t.resp.status);
      if (t.resp.status >= 500 && attempt < attempts) {
        ++stats.retries;
        backoff(policy, attempt);
        continue;
      }
      if (t.resp.status >= 200 && t.resp.status < 300) {
        t.resp.body_bytes = t.received;
        stats.bytes += t.received + (req.method == "PUT" ? upload_size : 0);
      }
      return std::move(t.resp);
    }
    if (retryable(rc) && attempt < attempts) {
      ++stats.retries;
      backoff(policy, attempt);
      continue;
    }
    if (tls_failure(rc))  // verification is never switched off: say what to trust instead
      throw RemoteError(what + ": TLS with " + origin_of(req.url) + " failed: " + curl_easy_strerror(rc) +
                            (errbuf[0] ? std::string(" (") + errbuf + ")" : "") + "; CA bundle: " +
                            (req.ca_bundle.empty() ? std::string("the system's (set AWS_CA_BUNDLE or "
                                                                 "data.s3.ca_bundle to trust another CA)")
                                                   : req.ca_bundle),
                        0, "");
    throw RemoteError(what + ": " + curl_easy_strerror(rc) +
                          (errbuf[0] ? std::string(" (") + errbuf + ")" : "") + " after " +
                          std::to_string(attempt) + " attempt(s)",
                      0, "");
  }
}

}  // namespace strata::data
