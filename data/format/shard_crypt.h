// Encrypted shard objects: AES-256-GCM over a whole HDF5 shard, streamed in
// pieces so that neither side ever holds a shard in memory.
//
//   offset 0   8 bytes   magic "STRATAGC"
//          8   4 bytes   format version, u32 little-endian (1)
//         12  12 bytes   nonce (random per object)
//         24   N bytes   ciphertext of the N-byte shard file
//       24+N  16 bytes   GCM tag
//
// The additional authenticated data binds an object to its place: the 24 header
// bytes, the dataset id (16 random bytes per packed dataset), the shard's index
// in the manifest (u64 little-endian) and its name. An object moved to another
// name, index or dataset fails its tag like a modified one. docs/data-format.md
// has the layout and the manifest fields.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "data/format/data_key.h"
#include "data/format/manifest.h"

namespace strata::data {

inline constexpr int64_t kShardCryptHeaderBytes = 24;
inline constexpr int64_t kShardCryptTagBytes = 16;
inline constexpr int64_t kShardCryptOverhead = kShardCryptHeaderBytes + kShardCryptTagBytes;

// Where an object belongs, authenticated with it.
struct ShardPlace {
  std::string dataset_id;  // 32 hex digits (Manifest::encryption.dataset_id)
  std::string name;        // the shard's name in the manifest
  int64_t index = 0;       // its index in the manifest's shards[]
};

// What encrypt_shard wrote: the stored object's size and xxh3 (what a download
// is checked against) and the plaintext's.
struct EncryptedSizes {
  int64_t bytes = 0;
  std::string checksum;
  int64_t plain_bytes = 0;
  std::string plain_checksum;
};

// Encrypts the shard file at `path` in place, with a fresh random nonce: it
// grows by 40 bytes and holds the object. As decryption does, it works piece
// by piece over the file itself, so packing needs no second copy on disk. On
// an error the file holds garbage (strata-pack's temporary, removed).
EncryptedSizes encrypt_shard_in_place(const std::filesystem::path& path, const DataKey& key,
                                      const ShardPlace& place);

// Decrypts shard `index` of the encrypted manifest `m`, stored at `path`, in
// place: on return the file holds the plaintext, whose size and xxh3 match the
// manifest's plain_bytes and plain_checksum. Each piece of plaintext is written
// over the ciphertext it came from, so a staged shard needs no second copy on
// disk. On any error (a key of another id, a tag mismatch, a wrong size) it
// throws and the file holds garbage: the caller stages into a temporary and
// removes it, so plaintext that failed its tag is never used.
void decrypt_shard_in_place(const std::filesystem::path& path, const DataKey& key, const Manifest& m,
                            size_t index);

// True when the file starts with the encrypted object's magic.
bool is_encrypted_shard_file(const std::filesystem::path& path);

}  // namespace strata::data
