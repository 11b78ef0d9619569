#include "data/store/payload_hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "base/error.h"

namespace strata::data {
namespace {

std::string digest_hex(const std::function<void(EVP_MD_CTX*)>& feed, const std::string& what) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw IoError("SHA-256 of " + what + ": cannot start the digest");
  feed(ctx.get());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) throw IoError("SHA-256 of " + what + " failed");
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

}  // namespace

std::string sha256_hex(const std::vector<uint8_t>& bytes) {
  return digest_hex([&](EVP_MD_CTX* c) { EVP_DigestUpdate(c, bytes.data(), bytes.size()); }, "a buffer");
}

std::string sha256_hex(const std::string& text) {
  return digest_hex([&](EVP_MD_CTX* c) { EVP_DigestUpdate(c, text.data(), text.size()); }, "a buffer");
}

std::string md5_base64(const std::vector<uint8_t>& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_md5(), nullptr) != 1)
    throw IoError("MD5 of a request body failed");
  std::string out(4 * ((len + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), md, static_cast<int>(len));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string sha256_hex_of_file(const std::filesystem::path& file, int64_t offset, int64_t length) {
  const std::string what =
      file.string() +
      (length >= 0 ? " bytes " + std::to_string(offset) + "+" + std::to_string(length) : std::string());
  return digest_hex(
      [&](EVP_MD_CTX* c) {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw IoError("cannot open " + file.string() + " for upload: " + std::strerror(errno));
        std::unique_ptr<int, void (*)(int*)> guard(new int(fd), [](int* f) {
          ::close(*f);
          delete f;
        });
        std::vector<char> buf(1 << 20);
        int64_t at = offset, left = length;
        for (;;) {
          const size_t want =
              left < 0 ? buf.size() : static_cast<size_t>(std::min<int64_t>(left, buf.size()));
          if (want == 0) break;
          const ssize_t n = ::pread(fd, buf.data(), want, at);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) throw IoError("cannot read " + what + ": " + std::strerror(errno));
          if (n == 0) {
            if (left > 0)
              throw IoError("cannot read " + what + ": the file ends at byte " + std::to_string(at));
            break;
          }
          EVP_DigestUpdate(c, buf.data(), static_cast<size_t>(n));
          at += n;
          if (left > 0) left -= n;
        }
      },
      what);
}

}  // namespace strata::data
