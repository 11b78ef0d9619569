// xxh3-64 checksums in the manifest's notation. Files are hashed in 1 MiB
// pieces with the streaming API, so checking a multi-GB shard needs no big buffer.
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/error.h"
#include "data/format/manifest.h"

namespace strata::data {
namespace {

std::string format(XXH64_hash_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "xxh3:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string checksum_bytes(const void* data, size_t size) { return format(XXH3_64bits(data, size)); }

std::string checksum_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw IoError("cannot open " + path + " to checksum it: " + std::strerror(errno));
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(st.get());
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
    XXH3_64bits_update(st.get(), buf.data(), n);
  if (std::ferror(f.get()))
    throw IoError("read error while checksumming " + path + ": " + std::strerror(errno));
  return format(XXH3_64bits_digest(st.get()));
}

}  // namespace strata::data
