// IDX reader over zlib's gz* API, which reads plain and gzip files alike.
#include "data/format/idx.h"

#include <zlib.h>

#include <algorithm>
#include <memory>

#include "base/error.h"

namespace strata::data {

size_t IdxArray::element_size() const {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

namespace {

void read_exact(gzFile f, void* dst, size_t n, const std::string& path, const char* what) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const unsigned piece = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f, p, piece);
    if (got < 0) {
      int err = 0;
      throw IoError("IDX file " + path + ": read error in " + what + ": " + gzerror(f, &err));
    }
    if (got == 0) throw IoError("IDX file " + path + ": file ends inside the " + what + " (truncated?)");
    p += got;
    n -= static_cast<size_t>(got);
  }
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), &gzclose);
  if (!f) throw IoError("cannot open IDX file " + path);
  gzbuffer(f.get(), 1 << 20);
  uint8_t magic[4];
  read_exact(f.get(), magic, 4, path, "header");
  IdxArray a;
  a.type = magic[2];
  const int rank = magic[3];
  char hex[16];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", magic[0], magic[1], magic[2], magic[3]);
  if (magic[0] != 0 || magic[1] != 0 || a.element_size() == 0 || rank < 1 || rank > 8)
    throw IoError("IDX file " + path + ": bad magic number 0x" + hex +
                  " (expected 0x0000TTRR with a known type TT and rank RR 1..8)");
  // The header's dimensions are not trusted: their product must fit the
  // limit, and memory grows only as the data actually arrives, so a header
  // claiming terabytes fails on the data it lacks, not in the allocator.
  constexpr uint64_t kMaxBytes = uint64_t{1} << 40;
  uint64_t n = a.element_size();
  for (int i = 0; i < rank; ++i) {
    uint8_t b[4];
    read_exact(f.get(), b, 4, path, "header");
    const uint64_t d = (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
    a.dims.push_back(static_cast<int64_t>(d));
    if (d != 0 && n > kMaxBytes / d)
      throw IoError("IDX file " + path + ": dimensions describe more than 1 TiB of data (bad header?)");
    n *= d;
  }
  constexpr size_t kPiece = size_t{64} << 20;
  for (size_t have = 0; have < n;) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(n - have, kPiece));
    a.data.resize(have + piece);
    read_exact(f.get(), a.data.data() + have, piece, path, "data");
    have += piece;
  }
  uint8_t extra;
  if (gzread(f.get(), &extra, 1) > 0)
    throw IoError("IDX file " + path + ": more data than the header's dimensions describe");
  const size_t es = a.element_size();
  if (es > 1)  // IDX is big-endian
    for (size_t i = 0; i < n; i += es) std::reverse(a.data.begin() + i, a.data.begin() + i + es);
  return a;
}

}  // namespace strata::data
