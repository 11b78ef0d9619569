// HMAC of the canonical manifest text. Manifest::to_json writes the fields in a
// fixed order (nlohmann's objects are sorted), and from_json reads back exactly
// what to_json wrote, so the text a reader re-serialises is the text the packer
// sealed.
#include "data/format/manifest_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/error.h"

namespace strata::data {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// The MAC key is HMAC(data key, label), so that the AES key itself never keys
// another algorithm.
std::string mac_of(const Manifest& m, const DataKey& key) {
  static const std::string kLabel = "strata manifest mac key v1";
  unsigned char mac_key[32], md[32];
  unsigned int n = 0;
  Manifest blank = m;
  blank.encryption.manifest_mac.clear();
  const std::string text = blank.to_json();
  const bool ok =
      HMAC(EVP_sha256(), key.bytes(), DataKey::kBytes, reinterpret_cast<const unsigned char*>(kLabel.data()),
           kLabel.size(), mac_key, &n) != nullptr &&
      HMAC(EVP_sha256(), mac_key, sizeof mac_key, reinterpret_cast<const unsigned char*>(text.data()),
           text.size(), md, &n) != nullptr;
  OPENSSL_cleanse(mac_key, sizeof mac_key);
  if (!ok) throw Error("manifest " + m.origin + ": HMAC-SHA256 is unavailable in this OpenSSL");
  return "hmac-sha256:" + hex(md, sizeof md);
}

}  // namespace

void seal_manifest(Manifest& m, const DataKey& key) { m.encryption.manifest_mac = mac_of(m, key); }

void check_dataset_key(const Manifest& m, const DataKey* key) {
  const std::string& origin = m.origin;
  if (!m.encrypted()) {
    if (key)
      throw ConfigError("dataset " + origin + " is not encrypted, but a data key was given (" +
                        key->origin() +
                        "): a job with a key reads only data that key authenticates; unset it to read this "
                        "dataset");
    return;
  }
  if (!key)
    throw ConfigError("dataset " + origin + " is encrypted (key id " + m.encryption.key_id +
                      "): give its key with data.encryption_key_file, " + kDataKeyFileEnv + " or " +
                      kDataKeyEnv);
  if (key->id() != m.encryption.key_id)
    throw ConfigError("dataset " + origin + " was encrypted with key id " + m.encryption.key_id +
                      ", the key given (" + key->origin() + ") has id " + key->id());
  const std::string want = mac_of(m, *key);
  if (want.size() != m.encryption.manifest_mac.size() ||
      CRYPTO_memcmp(want.data(), m.encryption.manifest_mac.data(), want.size()) != 0)
    throw IoError("manifest " + origin +
                  " fails its authentication: its manifest_mac does not match its "
                  "contents under key id " +
                  key->id() + "; it was modified after strata-pack wrote it");
}

}  // namespace strata::data
