// Why a file does not open as HDF5, told from its bytes: HDF5's own message
// for a cut file ("truncated file: eof = ...") names neither the size the file
// should have in words a user reads nor the difference between a cut copy and
// a file that was never HDF5, and resume needs to say which.
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>

#include "train/checkpoint/checkpoint_h5.h"

namespace strata::h5 {
namespace fs = std::filesystem;

namespace {

constexpr std::array<unsigned char, 8> kSignature = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

// `n` little-endian bytes at `at`, or nullopt past the end of the file.
std::optional<uint64_t> read_le(std::ifstream& f, uint64_t at, unsigned n) {
  if (n == 0 || n > 8) return std::nullopt;
  unsigned char b[8] = {};
  f.clear();
  f.seekg(static_cast<std::streamoff>(at));
  if (!f.read(reinterpret_cast<char*>(b), n)) return std::nullopt;
  uint64_t v = 0;
  for (unsigned i = n; i-- > 0;) v = v << 8 | b[i];
  return v;
}

// Where the superblock starts: offset 0, or after a user block of 512, 1024, ... bytes.
std::optional<uint64_t> find_signature(std::ifstream& f, uint64_t size) {
  for (uint64_t at = 0; at + kSignature.size() <= size; at = at == 0 ? 512 : at * 2) {
    std::array<unsigned char, 8> b{};
    f.clear();
    f.seekg(static_cast<std::streamoff>(at));
    if (f.read(reinterpret_cast<char*>(b.data()), b.size()) && b == kSignature) return at;
  }
  return std::nullopt;
}

// The end-of-file address the superblock at `sb` records (relative to `sb`).
// Versions 0 and 1 keep it after the base and free-space addresses, 2 and 3
// after the base and superblock-extension addresses (HDF5 file format spec,
// "Superblock"); nullopt when the file ends first or the version is unknown.
std::optional<uint64_t> recorded_eof(std::ifstream& f, uint64_t sb) {
  auto version = read_le(f, sb + 8, 1);
  if (!version) return std::nullopt;
  uint64_t fields = 0;  // where the base address is
  std::optional<uint64_t> offset_size;
  if (*version <= 1) {
    offset_size = read_le(f, sb + 13, 1);
    fields = sb + (*version == 0 ? 24 : 28);
  } else if (*version <= 3) {
    offset_size = read_le(f, sb + 9, 1);
    fields = sb + 12;
  } else {
    return std::nullopt;
  }
  if (!offset_size || *offset_size == 0 || *offset_size > 8) return std::nullopt;
  const auto o = static_cast<unsigned>(*offset_size);
  return read_le(f, fields + 2 * o, o);
}

}  // namespace

std::string why_unopenable(const fs::path& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  const std::string h5 = last_error();
  const std::string h5_said = h5.empty() ? "" : "; HDF5: " + h5;
  if (ec) return "cannot tell its size (" + ec.message() + ")" + h5_said;
  const std::string bytes = std::to_string(size) + " bytes";
  if (size == 0) return "empty (0 bytes)";
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot read it (" + bytes + ")" + h5_said;
  const auto sb = find_signature(f, size);
  if (!sb) return "not an HDF5 file (" + bytes + ", no HDF5 signature)";
  const auto eof = recorded_eof(f, *sb);
  if (!eof) return "truncated: " + bytes + ", which ends inside the HDF5 superblock";
  if (*eof != ~uint64_t{0} && *sb + *eof > size)
    return "truncated: " + bytes + " of the " + std::to_string(*sb + *eof) + " its HDF5 superblock records";
  return "corrupt (" + bytes + h5_said + ")";
}

}  // namespace strata::h5
