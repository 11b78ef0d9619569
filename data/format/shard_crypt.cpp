// AES-256-GCM shard objects with OpenSSL's EVP interface, 4 MiB at a time.
// GCM's counter mode keeps ciphertext and plaintext the same length, which is
// what lets decryption write each piece over the bytes it just read (the write
// position trails the read position by the 24 header bytes).
#include "data/format/shard_crypt.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "base/error.h"
#include "base/file_write.h"

namespace strata::data {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'G', 'C'};
constexpr uint32_t kVersion = 1;
constexpr size_t kNonceBytes = 12;
constexpr size_t kPiece = size_t{4} << 20;
// GCM encrypts at most 2^39 - 256 bits under one nonce.
constexpr int64_t kMaxPlainBytes = (int64_t{1} << 36) - 32;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

using Ctx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

std::string aad_of(const uint8_t* header, const ShardPlace& place) {
  std::string aad(reinterpret_cast<const char*>(header), kShardCryptHeaderBytes);
  const std::string& id = place.dataset_id;
  for (size_t i = 0; i < id.size() && id.size() == 32; i += 2) {
    if (hex_digit(id[i]) < 0 || hex_digit(id[i + 1]) < 0) break;
    aad += static_cast<char>(hex_digit(id[i]) * 16 + hex_digit(id[i + 1]));
  }
  if (aad.size() != kShardCryptHeaderBytes + 16)
    throw Error("shard " + place.name + ": dataset id '" + id + "' is not 32 lowercase hex digits");
  for (int i = 0; i < 8; ++i) aad += static_cast<char>(static_cast<uint64_t>(place.index) >> (8 * i));
  aad += place.name;
  return aad;
}

Ctx start(bool encrypt, const DataKey& key, const uint8_t* nonce, const std::string& aad,
          const std::string& what) {
  Ctx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  auto init = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex;
  int n = 0;
  if (!ctx || init(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) != 1 ||
      init(ctx.get(), nullptr, nullptr, key.bytes(), nonce) != 1 ||
      (encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate)(ctx.get(), nullptr, &n,
                                                        reinterpret_cast<const uint8_t*>(aad.data()),
                                                        static_cast<int>(aad.size())) != 1)
    throw Error(what + ": OpenSSL could not set up AES-256-GCM");
  return ctx;
}

std::string format_xxh3(XXH64_hash_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "xxh3:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

using Xxh = std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)>;
Xxh new_xxh() {
  Xxh st(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(st.get());
  return st;
}

[[noreturn]] void io_failure(const std::string& what, const fs::path& p) {
  throw IoError(what + " " + p.string() + ": " + std::strerror(errno));
}

size_t pread_full(int fd, uint8_t* p, size_t n, int64_t off, const fs::path& path) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, off + static_cast<int64_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) io_failure("cannot read", path);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

bool is_encrypted_shard_file(const fs::path& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  uint8_t head[sizeof kMagic];
  return f.fd >= 0 && pread_full(f.fd, head, sizeof head, 0, path) == sizeof head &&
         std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

EncryptedSizes encrypt_shard_in_place(const fs::path& path, const DataKey& key, const ShardPlace& place) {
  Fd f{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) io_failure("cannot open", path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) io_failure("cannot stat", path);
  const int64_t n = st.st_size;
  if (n > kMaxPlainBytes)
    throw ConfigError(
        "shard " + place.name + " has " + std::to_string(n) +
        " bytes, more than AES-GCM encrypts under one nonce (64 GiB): use a smaller --shard-size");
  const auto total = static_cast<uint64_t>(n + kShardCryptOverhead);
  auto write_at = [&](const uint8_t* p, size_t len, int64_t off) {
    for (size_t put = 0; put < len;) {
      const ssize_t w = ::pwrite(f.fd, p + put, len - put, off + static_cast<int64_t>(put));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw IoError(write_failure(path, errno, total, static_cast<uint64_t>(off) + put));
      put += static_cast<size_t>(w);
    }
  };

  uint8_t header[kShardCryptHeaderBytes];
  std::memcpy(header, kMagic, sizeof kMagic);
  put_u32(header + 8, kVersion);
  if (RAND_bytes(header + 12, kNonceBytes) != 1)
    throw Error("shard " + place.name + ": no random nonce from OpenSSL");
  const std::string what = "encrypting shard " + place.name;
  Ctx ctx = start(true, key, header + 12, aad_of(header, place), what);

  // Piece k's ciphertext lands 24 bytes further on, over the start of piece
  // k + 1: that piece is read before piece k is written.
  EncryptedSizes r;
  Xxh stored = new_xxh(), plain_sum = new_xxh();
  XXH3_64bits_update(stored.get(), header, sizeof header);
  std::vector<uint8_t> cur(kPiece), next(kPiece), enc(kPiece);
  size_t cur_n = pread_full(f.fd, cur.data(), kPiece, 0, path);
  write_at(header, sizeof header, 0);  // over piece 0's first bytes, read already
  for (int64_t off = 0; cur_n > 0;) {
    const size_t next_n = pread_full(f.fd, next.data(), kPiece, off + static_cast<int64_t>(cur_n), path);
    int len = 0;
    if (EVP_EncryptUpdate(ctx.get(), enc.data(), &len, cur.data(), static_cast<int>(cur_n)) != 1 ||
        len != static_cast<int>(cur_n))
      throw Error(what + ": AES-256-GCM failed");
    XXH3_64bits_update(plain_sum.get(), cur.data(), cur_n);
    XXH3_64bits_update(stored.get(), enc.data(), cur_n);
    write_at(enc.data(), cur_n, kShardCryptHeaderBytes + off);
    off += static_cast<int64_t>(cur_n);
    std::swap(cur, next);
    cur_n = next_n;
  }
  int len = 0;
  uint8_t tag[kShardCryptTagBytes];
  if (EVP_EncryptFinal_ex(ctx.get(), enc.data(), &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, sizeof tag, tag) != 1)
    throw Error(what + ": AES-256-GCM could not finish");
  XXH3_64bits_update(stored.get(), tag, sizeof tag);
  write_at(tag, sizeof tag, kShardCryptHeaderBytes + n);
  if (::close(f.fd) != 0) {
    f.fd = -1;
    throw IoError(write_failure(path, errno, total, total));
  }
  f.fd = -1;
  r.plain_bytes = n;
  r.bytes = n + kShardCryptOverhead;
  r.checksum = format_xxh3(XXH3_64bits_digest(stored.get()));
  r.plain_checksum = format_xxh3(XXH3_64bits_digest(plain_sum.get()));
  return r;
}

void decrypt_shard_in_place(const fs::path& path, const DataKey& key, const Manifest& m, size_t index) {
  if (index >= m.shards.size())
    throw Error("manifest " + m.origin + " has " + std::to_string(m.shards.size()) + " shards, no shard " +
                std::to_string(index));
  const ShardInfo& shard = m.shards[index];
  const std::string where = "shard " + shard.name + " of manifest " + m.origin;
  if (!m.encrypted()) throw Error(where + ": the dataset is not encrypted; nothing to decrypt");
  if (key.id() != m.encryption.key_id)
    throw ConfigError(where + " was encrypted with key id " + m.encryption.key_id + ", the key given (" +
                      key.origin() + ") has id " + key.id());
  Fd f{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) io_failure("cannot open", path);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) io_failure("cannot stat", path);
  const int64_t expected = shard.plain_bytes + kShardCryptOverhead;
  if (st.st_size != expected)
    throw IoError(where + ": the encrypted object has " + std::to_string(st.st_size) +
                  " bytes, the manifest's " + std::to_string(shard.plain_bytes) +
                  " bytes of plaintext make " + std::to_string(expected) +
                  ": the object was modified or truncated");
  uint8_t header[kShardCryptHeaderBytes], tag[kShardCryptTagBytes];
  if (pread_full(f.fd, header, sizeof header, 0, path) != sizeof header ||
      pread_full(f.fd, tag, sizeof tag, st.st_size - kShardCryptTagBytes, path) != sizeof tag)
    throw IoError(where + ": " + path.string() + " shrank while it was decrypted");
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0)
    throw IoError(where + ": not an encrypted shard object (no \"STRATAGC\" magic at its start)");
  if (header[8] != kVersion || header[9] != 0 || header[10] != 0 || header[11] != 0)
    throw IoError(where + ": encrypted object version " + std::to_string(header[8]) + ", this build reads 1");

  const ShardPlace place{m.encryption.dataset_id, shard.name, static_cast<int64_t>(index)};
  Ctx ctx = start(false, key, header + 12, aad_of(header, place), "decrypting " + where);
  Xxh plain_sum = new_xxh();
  std::vector<uint8_t> buf(kPiece), dec(kPiece);
  for (int64_t off = 0; off < shard.plain_bytes;) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(kPiece, shard.plain_bytes - off));
    if (pread_full(f.fd, buf.data(), want, kShardCryptHeaderBytes + off, path) != want)
      throw IoError(where + ": " + path.string() + " shrank while it was decrypted");
    int len = 0;
    if (EVP_DecryptUpdate(ctx.get(), dec.data(), &len, buf.data(), static_cast<int>(want)) != 1 ||
        len != static_cast<int>(want))
      throw Error("decrypting " + where + ": AES-256-GCM failed");
    XXH3_64bits_update(plain_sum.get(), dec.data(), want);
    size_t put = 0;
    while (put < want) {
      const ssize_t w = ::pwrite(f.fd, dec.data() + put, want - put, off + static_cast<int64_t>(put));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) io_failure("cannot write the decrypted shard to", path);
      put += static_cast<size_t>(w);
    }
    off += static_cast<int64_t>(want);
  }
  int len = 0;
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, sizeof tag, tag) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), dec.data(), &len) != 1)
    throw IoError("authentication tag mismatch in " + where +
                  ": the object was modified or truncated, or is another shard's");
  if (::ftruncate(f.fd, shard.plain_bytes) != 0) io_failure("cannot truncate", path);
  const std::string got = format_xxh3(XXH3_64bits_digest(plain_sum.get()));
  if (got != shard.plain_checksum)
    throw IoError(where + ": the decrypted shard's checksum is " + got +
                  ", the manifest's plain_checksum says " + shard.plain_checksum);
}

}  // namespace strata::data
