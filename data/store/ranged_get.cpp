#include "data/store/ranged_get.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "base/error.h"

namespace strata::data {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct ContentRange {
  uint64_t first = 0, last = 0, total = 0;
};

// "bytes first-last/total" (RFC 9110 14.4); false for "*" totals or junk.
bool parse_content_range(const std::string& s, ContentRange& cr) {
  unsigned long long f = 0, l = 0, t = 0;
  if (std::sscanf(s.c_str(), "bytes %llu-%llu/%llu", &f, &l, &t) != 3 || l < f || l >= t) return false;
  cr = {f, l, t};
  return true;
}

std::string span(uint64_t first, uint64_t last) { return std::to_string(first) + "-" + std::to_string(last); }

// One ranged GET of bytes [first, last] written at offset `first`; returns the
// Content-Range it was answered with, checked against the request.
HttpResponse get_part(const ObjectGet& object, int fd, uint64_t first, uint64_t last,
                      const std::string& if_match, const std::string& label, const RetryPolicy& retry,
                      SourceStats& stats) {
  HttpRequest r = object.request();
  r.range = span(first, last);
  r.body_fd = fd;
  r.body_offset = static_cast<int64_t>(first);
  if (!if_match.empty()) r.headers.push_back("If-Match: " + if_match);
  HttpResponse resp = perform_with_retry(r, retry, stats, label);
  if (resp.status != 206 && resp.status != 200 && resp.status != 416) object.fail(resp, r.range);
  return resp;
}

[[noreturn]] void bad_answer(const std::string& label, const HttpResponse& resp, const std::string& why) {
  throw RemoteError(label + ": " + why + " (HTTP " + std::to_string(resp.status) + ", Content-Range '" +
                        resp.header("content-range") + "', " + std::to_string(resp.body_bytes) + " bytes)",
                    resp.status, resp.header("x-amz-request-id"));
}

}  // namespace

void get_in_parts(const ObjectGet& object, const std::filesystem::path& dest, const PartedTransfer& parts,
                  const RetryPolicy& retry, SourceStats& stats) {
  Fd out{::open(dest.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (out.fd < 0)
    throw IoError(object.what + ": cannot create " + dest.string() + ": " + std::strerror(errno));
  const uint64_t part = static_cast<uint64_t>(std::max<int64_t>(parts.part_bytes, 1));
  const std::string into = " into " + dest.string();

  // Part 0 tells the size. 200: the server ignored Range and sent it all;
  // 416: there is no byte 0, the object is empty: a plain GET says so for sure.
  const std::string label0 = object.what + " bytes " + span(0, part - 1) + into;
  HttpResponse first = get_part(object, out.fd, 0, part - 1, "", label0, retry, stats);
  if (first.status == 200) return;
  if (first.status == 416) {
    HttpRequest r = object.request();
    r.body_fd = out.fd;
    HttpResponse whole = perform_with_retry(r, retry, stats, object.what + into);
    if (whole.status != 200) object.fail(whole, "");
    return;
  }
  ContentRange cr;
  if (!parse_content_range(first.header("content-range"), cr) || cr.first != 0 ||
      cr.last != std::min(part, cr.total) - 1 || first.body_bytes != static_cast<int64_t>(cr.last + 1))
    bad_answer(label0, first, "the answer is not the range asked for");
  const uint64_t total = cr.total;
  const uint64_t count = (total + part - 1) / part;
  if (count == 1) return;
  if (::ftruncate(out.fd, static_cast<off_t>(total)) != 0)  // the size at once: a full disk fails here
    throw IoError(object.what + ": cannot size " + dest.string() + " to " + std::to_string(total) +
                  " bytes: " + std::strerror(errno));

  // Parts 1..count-1 on `workers` threads (this one included), taken in order.
  const std::string etag = first.header("etag");
  std::atomic<uint64_t> next{1};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr error;
  auto work = [&] {
    for (uint64_t k; !failed && (k = next++) < count;) {
      const uint64_t lo = k * part, hi = std::min(lo + part, total) - 1;
      const std::string label = object.what + " bytes " + span(lo, hi) + " (part " + std::to_string(k + 1) +
                                " of " + std::to_string(count) + ")" + into;
      try {
        HttpResponse resp = get_part(object, out.fd, lo, hi, etag, label, retry, stats);
        ContentRange got;
        if (resp.status != 206 || !parse_content_range(resp.header("content-range"), got) ||
            got.first != lo || got.last != hi || got.total != total ||
            resp.body_bytes != static_cast<int64_t>(hi - lo + 1))
          bad_answer(label, resp,
                     "the answer is not the range asked for (object of " + std::to_string(total) + " bytes)");
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const uint64_t workers = std::min<uint64_t>(std::max(parts.connections, 1), count - 1);
  std::vector<std::thread> threads;
  for (uint64_t i = 1; i < workers; ++i) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running take the remaining parts
    }
  }
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace strata::data
