// Compressed shard objects: a whole HDF5 shard file stored as one zstd frame or
// one LZ4 frame (Manifest::object_compression, docs/data-format.md). The node
// cache holds the decompressed shard, so token shards stay memory-mapped and the
// cache counts the shard's own size; only the wire and the store see the frame.
// Both directions stream in pieces of a few hundred KiB (bounded memory whatever
// the shard's size) through the libraries' streaming APIs (libzstd, lz4frame).
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace strata::data {

// The codecs of a shard object: "none", "zstd", "lz4".
bool is_object_codec(const std::string& codec);
inline constexpr const char* kObjectCodecs = "none, zstd, lz4";

// What compress_shard_file wrote: the object's size and xxh3, and the shard's.
struct CompressedSizes {
  int64_t bytes = 0;
  std::string checksum;
  int64_t plain_bytes = 0;
  std::string plain_checksum;
};

// Compresses the shard file `in` into the object `out` as one frame of `codec`
// ("zstd" or "lz4") at `level` (0: the codec's default; zstd 1..19, lz4 1..12,
// 3 and up being LZ4-HC). The frame records the content size and a content
// checksum. Throws ConfigError for an unknown codec or level, IoError on I/O.
CompressedSizes compress_shard_file(const std::filesystem::path& in, const std::filesystem::path& out,
                                    const std::string& codec, int level);

// Reads compressed bytes into (buffer, capacity) and returns how many; 0 at the end.
using CodecRead = std::function<size_t(uint8_t*, size_t)>;
// Takes decompressed bytes.
using CodecWrite = std::function<void(const uint8_t*, size_t)>;

// Decodes one frame of `codec` from `read` to `write` and returns the
// decompressed byte count. Throws IoError, starting with `what`, when the frame
// is corrupt, truncated, followed by other bytes, or would decode to more than
// `max_bytes` (so a bad object can never fill a disk).
int64_t decompress_stream(const std::string& codec, const CodecRead& read, const CodecWrite& write,
                          int64_t max_bytes, const std::string& what);

// decompress_stream from the file `in` into a new file `out` (truncated first).
int64_t decompress_shard_file(const std::filesystem::path& in, const std::filesystem::path& out,
                              const std::string& codec, int64_t max_bytes, const std::string& what);

// decompress_stream from the frame in memory (`frame`, `n` bytes) into a new
// file `out` (truncated first).
int64_t decompress_shard_bytes(const uint8_t* frame, size_t n, const std::filesystem::path& out,
                               const std::string& codec, int64_t max_bytes, const std::string& what);

// "zstd" or "lz4" when the file starts with that frame's magic number, else "".
std::string object_codec_of_file(const std::filesystem::path& path);

}  // namespace strata::data
