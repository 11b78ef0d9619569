// Encryption at rest: data keys (files, the environment), encrypted shard
// objects (round trip, wrong key, a flipped byte, truncation, objects swapped
// within and between datasets), the sealed manifest, and staging through the
// cache. No message may hold the key.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstring>
#include <functional>

#include "base/error.h"
#include "data/format/data_key.h"
#include "data/format/manifest_auth.h"
#include "data/format/packer.h"
#include "data/format/shard.h"
#include "data/format/shard_crypt.h"
#include "data/loader/shard_cache.h"
#include "test_util.h"

namespace strata::data {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::scratch_dir;
using testing::write_file;

constexpr const char* kHexKey = "00112233445566778899aabbccddeeff0123456789abcdef0f1e2d3c4b5a6978";
constexpr const char* kOtherHex = "ffeeddccbbaa99887766554433221100fedcba98765432100f1e2d3c4b5a6978";

std::string raw_of(const std::string& hex) {
  std::string raw;
  for (size_t i = 0; i < hex.size(); i += 2)
    raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return raw;
}

// The message of what `f` throws, checked to hold none of the keys' forms.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    const std::string m = e.what();
    for (const char* hex : {kHexKey, kOtherHex}) {
      EXPECT_EQ(m.find(hex), std::string::npos) << "a key in: " << m;
      EXPECT_EQ(m.find(std::string(hex).substr(0, 16)), std::string::npos) << "part of a key in: " << m;
      EXPECT_EQ(m.find(raw_of(hex).substr(0, 8)), std::string::npos) << "raw key bytes in: " << m;
    }
    return m;
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

struct EnvGuard {
  EnvGuard() {
    ::unsetenv(kDataKeyEnv);
    ::unsetenv(kDataKeyFileEnv);
  }
  ~EnvGuard() {
    ::unsetenv(kDataKeyEnv);
    ::unsetenv(kDataKeyFileEnv);
  }
};

TEST(DataKey, FileOfRawBytesOrHexGivesTheSameKey) {
  auto dir = scratch_dir("key-forms");
  write_file(dir / "raw", raw_of(kHexKey));
  write_file(dir / "hex", std::string(kHexKey) + "\n");
  write_file(dir / "HEX",
             "  " + std::string("00112233445566778899AABBCCDDEEFF0123456789ABCDEF0F1E2D3C4B5A6978") + "\r\n");
  const DataKey raw = DataKey::from_file((dir / "raw").string());
  EXPECT_EQ(DataKey::from_file((dir / "hex").string()).id(), raw.id());
  EXPECT_EQ(DataKey::from_file((dir / "HEX").string()).id(), raw.id());
  EXPECT_EQ(std::memcmp(raw.bytes(), raw_of(kHexKey).data(), 32), 0);
  EXPECT_EQ(raw.id().rfind("sha256:", 0), 0u) << raw.id();
  EXPECT_EQ(raw.id().size(), 7u + 16);
  EXPECT_NE(DataKey::from_hex(kOtherHex, "test").id(), raw.id());
  EXPECT_EQ(raw.id().find(std::string(kHexKey).substr(0, 8)), std::string::npos);
  EXPECT_EQ(raw.origin(), "key file " + (dir / "raw").string());
}

TEST(DataKey, WrongSizesNameTheFileAndTheSize) {
  auto dir = scratch_dir("key-sizes");
  const std::string raw = raw_of(kHexKey);
  write_file(dir / "short", raw.substr(0, 31));
  write_file(dir / "long", raw + "x");
  write_file(dir / "hex63", std::string(kHexKey).substr(0, 63) + "\n");
  write_file(dir / "hex128", std::string(kHexKey).substr(0, 32));
  write_file(dir / "empty", "");
  std::string m = message_of<ConfigError>([&] { DataKey::from_file((dir / "short").string()); });
  EXPECT_NE(m.find((dir / "short").string()), std::string::npos) << m;
  EXPECT_NE(m.find("has 31 bytes"), std::string::npos) << m;
  m = message_of<ConfigError>([&] { DataKey::from_file((dir / "long").string()); });
  EXPECT_NE(m.find("has 33 bytes"), std::string::npos) << m;
  m = message_of<ConfigError>([&] { DataKey::from_file((dir / "hex63").string()); });
  EXPECT_NE(m.find("has 64 bytes"), std::string::npos) << m;
  m = message_of<ConfigError>([&] { DataKey::from_file((dir / "hex128").string()); });
  EXPECT_NE(m.find("128-bit"), std::string::npos) << m;
  m = message_of<ConfigError>([&] { DataKey::from_file((dir / "empty").string()); });
  EXPECT_NE(m.find("has 0 bytes"), std::string::npos) << m;
  m = message_of<ConfigError>([&] { DataKey::from_file((dir / "absent").string()); });
  EXPECT_NE(m.find("does not exist"), std::string::npos) << m;
}

TEST(DataKey, ResolvedFromOptionThenFileVariableThenKeyVariable) {
  EnvGuard env;
  auto dir = scratch_dir("key-resolve");
  write_file(dir / "a", kHexKey);
  write_file(dir / "b", kOtherHex);
  EXPECT_EQ(resolve_data_key("", "--encrypt-key-file"), nullptr);
  ::setenv(kDataKeyEnv, kOtherHex, 1);
  EXPECT_EQ(resolve_data_key("", "--x")->origin(), "environment variable STRATA_DATA_KEY");
  ::setenv(kDataKeyFileEnv, (dir / "a").c_str(), 1);
  EXPECT_EQ(resolve_data_key("", "--x")->id(), DataKey::from_hex(kHexKey, "t").id());
  EXPECT_EQ(resolve_data_key((dir / "b").string(), "--x")->id(), DataKey::from_hex(kOtherHex, "t").id());
  // errors say which setting was wrong, not what it held
  ::setenv(kDataKeyFileEnv, (dir / "missing").c_str(), 1);
  std::string m = message_of<ConfigError>([&] { resolve_data_key("", "--x"); });
  EXPECT_EQ(m.rfind("STRATA_DATA_KEY_FILE: ", 0), 0u) << m;
  ::unsetenv(kDataKeyFileEnv);
  ::setenv(kDataKeyEnv, std::string(kHexKey).substr(0, 60).c_str(), 1);
  m = message_of<ConfigError>([&] { resolve_data_key("", "--x"); });
  EXPECT_NE(m.find("environment variable STRATA_DATA_KEY is not 64 hex digits (60 characters)"),
            std::string::npos)
      << m;
  m = message_of<ConfigError>([&] { resolve_data_key((dir / "nope").string(), "data.encryption_key_file"); });
  EXPECT_EQ(m.rfind("data.encryption_key_file: ", 0), 0u) << m;
}

// A small image dataset: `n` samples of 64 bytes (sample i is bytes (i*7+j) % 251
// plus a marker run) and an 8-byte label, `per_shard` samples a shard.
Manifest pack_synthetic(const fs::path& out, int n, int per_shard, std::shared_ptr<const DataKey> key) {
  PackOptions o;
  o.out_url = out.string();
  o.shard_bytes = per_shard * 72;
  o.key = std::move(key);
  DatasetPacker p({{"image", "u8", {8, 8}, false}, {"label", "i64", {}, false}}, o);
  for (int i = 0; i < n; ++i) {
    std::array<uint8_t, 64> img{};
    for (int j = 0; j < 64; ++j) img[j] = static_cast<uint8_t>((i * 7 + j) % 251);
    std::memcpy(img.data() + 40, "PLAINRUN", 8);
    const int64_t label = i % 10;
    p.add({{img.data(), img.size()}, {&label, sizeof label}});
  }
  return p.finish();
}

Manifest read_manifest(const fs::path& dir) {
  return Manifest::from_json(read_file(dir / "manifest.json"), (dir / "manifest.json").string());
}

std::shared_ptr<const DataKey> key_of(const char* hex) {
  return std::make_shared<const DataKey>(DataKey::from_hex(hex, "test key"));
}

TEST(EncryptedPack, ObjectsHoldNoPlaintextAndTheManifestNoKey) {
  auto dir = scratch_dir("enc-pack");
  const Manifest plain = pack_synthetic(dir / "plain", 40, 10, nullptr);
  const Manifest m = pack_synthetic(dir / "enc", 40, 10, key_of(kHexKey));
  ASSERT_EQ(m.shards.size(), 4u);
  EXPECT_FALSE(plain.encrypted());
  EXPECT_NE(read_file(dir / "plain" / "shard-00000.h5").find("PLAINRUN"), std::string::npos)
      << "the marker must be in a plain shard, or its absence below proves nothing";
  const std::string text = read_file(dir / "enc" / "manifest.json");
  EXPECT_EQ(text.find(kHexKey), std::string::npos);
  const Manifest again = read_manifest(dir / "enc");
  EXPECT_TRUE(again.encrypted());
  EXPECT_EQ(again.encryption.algorithm, "aes-256-gcm");
  EXPECT_EQ(again.encryption.key_id, DataKey::from_hex(kHexKey, "t").id());
  for (size_t i = 0; i < m.shards.size(); ++i) {
    const std::string obj = read_file(dir / "enc" / m.shards[i].name);
    EXPECT_EQ(obj.find("PLAINRUN"), std::string::npos) << m.shards[i].name;
    EXPECT_EQ(obj.find("HDF"), std::string::npos) << m.shards[i].name;
    EXPECT_EQ(obj.rfind("STRATAGC", 0), 0u);
    EXPECT_EQ(static_cast<int64_t>(obj.size()), again.shards[i].bytes);
    EXPECT_EQ(again.shards[i].bytes, again.shards[i].plain_bytes + kShardCryptOverhead);
    EXPECT_EQ(checksum_bytes(obj.data(), obj.size()), again.shards[i].checksum);
    EXPECT_EQ(again.shards[i].plain_bytes, plain.shards[i].bytes);
  }
  EXPECT_NO_THROW(check_dataset_key(again, key_of(kHexKey).get()));
}

TEST(EncryptedPack, DecryptsInPlaceToTheShardThatWasPacked) {
  auto dir = scratch_dir("enc-roundtrip");
  const Manifest m = pack_synthetic(dir / "enc", 25, 10, key_of(kHexKey));
  const Manifest again = read_manifest(dir / "enc");
  int64_t sample = 0;
  for (size_t i = 0; i < again.shards.size(); ++i) {
    const fs::path copy = dir / ("staged-" + std::to_string(i));
    fs::copy_file(dir / "enc" / again.shards[i].name, copy);
    decrypt_shard_in_place(copy, *key_of(kHexKey), again, i);
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(copy)), again.shards[i].plain_bytes);
    EXPECT_EQ(checksum_file(copy.string()), again.shards[i].plain_checksum);
    ShardData d = ShardData::read(copy.string(), again.schema, ShardExpectation::of(again.shards[i], again));
    for (int64_t k = 0; k < d.samples(); ++k, ++sample) {
      size_t n = 0;
      const uint8_t* p = d.sample(0, k, &n);
      ASSERT_EQ(n, 64u);
      EXPECT_EQ(p[0], static_cast<uint8_t>(sample * 7 % 251)) << "sample " << sample;
      EXPECT_EQ(std::memcmp(p + 40, "PLAINRUN", 8), 0);
    }
  }
  EXPECT_EQ(sample, 25);
}

// Both directions work piece by piece over one file (4 MiB pieces, the
// ciphertext 24 bytes behind or ahead of the plaintext): a file of several
// pieces and a ragged end comes back byte for byte.
TEST(EncryptedPack, FilesOfManyPiecesRoundTripInPlace) {
  auto dir = scratch_dir("enc-pieces");
  std::string data(9 * (1 << 20) + 123, '\0');
  uint64_t x = 88172645463325252ull;
  for (char& c : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  write_file(dir / "s", data);
  Manifest m;
  m.origin = "pieces";
  m.encryption = {"aes-256-gcm", key_of(kHexKey)->id(), "0123456789abcdef0123456789abcdef", ""};
  const EncryptedSizes e =
      encrypt_shard_in_place(dir / "s", *key_of(kHexKey), {m.encryption.dataset_id, "big.h5", 0});
  const std::string obj = read_file(dir / "s");
  EXPECT_EQ(static_cast<int64_t>(obj.size()), e.bytes);
  EXPECT_EQ(e.plain_bytes, static_cast<int64_t>(data.size()));
  EXPECT_EQ(checksum_bytes(obj.data(), obj.size()), e.checksum);
  EXPECT_EQ(checksum_bytes(data.data(), data.size()), e.plain_checksum);
  EXPECT_EQ(obj.find(data.substr(5 << 20, 64)), std::string::npos);
  m.shards.push_back(ShardInfo{"big.h5", 1, e.bytes, e.checksum, e.plain_bytes, e.plain_checksum});
  decrypt_shard_in_place(dir / "s", *key_of(kHexKey), m, 0);
  EXPECT_TRUE(read_file(dir / "s") == data);
}

// Decrypting shard `index` from a copy of `object` damaged by `damage`.
std::string decrypt_error(const fs::path& dir, const Manifest& m, size_t index, const fs::path& object,
                          const std::function<void(std::string&)>& damage, const char* hex = kHexKey) {
  std::string bytes = read_file(object);
  damage(bytes);
  const fs::path copy = dir / "damaged";
  fs::remove(copy);
  write_file(copy, bytes);
  return message_of<Error>([&] { decrypt_shard_in_place(copy, *key_of(hex), m, index); });
}

TEST(EncryptedPack, ModifiedTruncatedOrSwappedObjectsFailTheirTag) {
  auto dir = scratch_dir("enc-damage");
  pack_synthetic(dir / "a", 30, 10, key_of(kHexKey));
  pack_synthetic(dir / "b", 30, 10, key_of(kHexKey));  // the same key, another dataset
  const Manifest m = read_manifest(dir / "a");
  ASSERT_EQ(m.shards.size(), 3u);
  ASSERT_EQ(m.shards[0].bytes, m.shards[1].bytes) << "equal sizes, so only the tag can tell them apart";
  const fs::path s0 = dir / "a" / m.shards[0].name, s1 = dir / "a" / m.shards[1].name;
  const std::string tag_error = "authentication tag mismatch in shard " + m.shards[0].name + " of manifest " +
                                m.origin + ": the object was modified or truncated";
  auto flip = [](size_t at) {
    return [at](std::string& b) { b[at < b.size() ? at : b.size() - 1] ^= 0x01; };
  };
  for (size_t at : {size_t{30}, size_t{2000}, size_t{12}, size_t{1} << 40}) {  // ciphertext, nonce, tag
    const std::string e = decrypt_error(dir, m, 0, s0, flip(at));
    EXPECT_EQ(e.rfind(tag_error, 0), 0u) << "byte " << at << ": " << e;
  }
  EXPECT_NE(decrypt_error(dir, m, 0, s0, [](std::string& b) { b[8] = 2; }).find("encrypted object version 2"),
            std::string::npos);
  // truncated: the size no longer fits the manifest
  std::string e = decrypt_error(dir, m, 0, s0, [](std::string& b) { b.resize(b.size() - 16); });
  EXPECT_NE(e.find("the object was modified or truncated"), std::string::npos) << e;
  EXPECT_NE(e.find(m.shards[0].name), std::string::npos) << e;
  // shard 1's object in shard 0's place, and dataset b's shard 0 in a's
  EXPECT_EQ(decrypt_error(dir, m, 0, s1, [](std::string&) {}).rfind(tag_error, 0), 0u);
  EXPECT_EQ(decrypt_error(dir, m, 0, dir / "b" / m.shards[0].name, [](std::string&) {}).rfind(tag_error, 0),
            0u);
  // the undamaged object still decrypts: the checks above failed for their damage
  EXPECT_NO_THROW(decrypt_shard_in_place(
      [&] {
        fs::copy_file(s0, dir / "good");
        return dir / "good";
      }(),
      *key_of(kHexKey), m, 0));
}

TEST(EncryptedPack, AWrongKeyNamesBothKeyIds) {
  auto dir = scratch_dir("enc-wrong-key");
  pack_synthetic(dir / "a", 10, 10, key_of(kHexKey));
  const Manifest m = read_manifest(dir / "a");
  const std::string want = "was encrypted with key id " + key_of(kHexKey)->id() +
                           ", the key given (test key) has id " + key_of(kOtherHex)->id();
  std::string e = message_of<ConfigError>([&] { check_dataset_key(m, key_of(kOtherHex).get()); });
  EXPECT_NE(e.find("dataset " + m.origin + " " + want), std::string::npos) << e;
  e = decrypt_error(
      dir, m, 0, dir / "a" / m.shards[0].name, [](std::string&) {}, kOtherHex);
  EXPECT_NE(e.find("shard " + m.shards[0].name), std::string::npos) << e;
  EXPECT_NE(e.find(want), std::string::npos) << e;
  e = message_of<ConfigError>([&] { check_dataset_key(m, nullptr); });
  EXPECT_NE(e.find("is encrypted (key id " + key_of(kHexKey)->id() + "): give its key"), std::string::npos)
      << e;
  pack_synthetic(dir / "plain", 10, 10, nullptr);
  e = message_of<ConfigError>(
      [&] { check_dataset_key(read_manifest(dir / "plain"), key_of(kHexKey).get()); });
  EXPECT_NE(e.find("is not encrypted, but a data key was given"), std::string::npos) << e;
}

TEST(EncryptedPack, AnEditedManifestFailsItsAuthentication) {
  auto dir = scratch_dir("enc-manifest");
  pack_synthetic(dir / "a", 30, 10, key_of(kHexKey));
  const Manifest m = read_manifest(dir / "a");
  const auto key = key_of(kHexKey);
  Manifest fewer = m;  // the last shard dropped
  fewer.shards.pop_back();
  Manifest relabelled = m;
  relabelled.shards[1].samples = 9;
  Manifest reordered = m;
  std::swap(reordered.shards[0], reordered.shards[2]);
  for (const Manifest* bad : {&fewer, &relabelled, &reordered}) {
    const Manifest parsed = Manifest::from_json(bad->to_json(), "edited");
    const std::string e = message_of<IoError>([&] { check_dataset_key(parsed, key.get()); });
    EXPECT_NE(e.find("manifest edited fails its authentication"), std::string::npos) << e;
  }
  EXPECT_NO_THROW(check_dataset_key(Manifest::from_json(m.to_json(), "again"), key.get()));
}

// Staging through ShardCache: decrypted after the download's checksum, the
// cache holds the plaintext shard; a wrong key stops before any download.
TEST(EncryptedPack, CacheStagesDecryptedShards) {
  auto dir = scratch_dir("enc-cache");
  pack_synthetic(dir / "a", 30, 10, key_of(kHexKey));
  auto src = open_source((dir / "a").string());
  ShardCacheOptions o{.dir = dir / "cache", .capacity_bytes = 1 << 20, .key = key_of(kHexKey)};
  {
    ShardCache cache(*src, o);
    for (const ShardInfo& s : cache.manifest().shards) {
      ShardCache::Pin pin = cache.acquire(s);
      EXPECT_EQ(checksum_file(pin.path().string()), s.plain_checksum);
      EXPECT_NE(read_file(pin.path()).find("PLAINRUN"), std::string::npos);
      EXPECT_EQ(ShardData::read(pin.path().string(), cache.manifest().schema).samples(), 10);
    }
    EXPECT_EQ(cache.stats().misses.load(), 3);
    EXPECT_TRUE(fs::is_empty(dir / "cache" / ".tmp"));
  }
  o.key = key_of(kOtherHex);
  const int64_t gets = src->stats().requests.load();
  const std::string e = message_of<ConfigError>([&] { ShardCache cache(*src, o); });
  EXPECT_NE(e.find("was encrypted with key id"), std::string::npos) << e;
  EXPECT_EQ(src->stats().requests.load(), gets + 1) << "only the manifest is fetched";
  // a damaged object is refetched once and refused, and nothing is left staged
  const Manifest m = read_manifest(dir / "a");
  std::string obj = read_file(dir / "a" / m.shards[1].name);
  obj[100] ^= 0x40;
  write_file(dir / "a" / m.shards[1].name, obj);
  o.key = key_of(kHexKey);
  ShardCache cache(*src, o);
  const std::string d = message_of<IoError>([&] { cache.acquire(cache.manifest().shards[1]); });
  EXPECT_NE(d.find("failed its checksum twice"), std::string::npos) << d;
  EXPECT_FALSE(fs::exists(cache.shard_path(m.shards[1].name)));
  EXPECT_TRUE(fs::is_empty(dir / "cache" / ".tmp"));
}

}  // namespace
}  // namespace strata::data
