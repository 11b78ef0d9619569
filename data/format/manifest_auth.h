// The key check and the authentication of an encrypted dataset's manifest. The
// GCM tag vouches for each shard object; the manifest's HMAC vouches for the
// list of them (which shards, in which order, how many samples each, the
// schema), so that a store a key holder does not control cannot drop, reorder
// or relabel shards either.
#pragma once
#include "data/format/data_key.h"
#include "data/format/manifest.h"

namespace strata::data {

// Sets m.encryption.manifest_mac: HMAC-SHA256, under a key derived from the
// data key, of m.to_json() with the field empty.
void seal_manifest(Manifest& m, const DataKey& key);

// Before any shard of `m` is read: refuses an encrypted dataset without a key
// or with a key of another id, an unencrypted dataset when a key is given (a
// job that holds a key reads only data the key authenticates), and a manifest
// whose HMAC does not match. `key` may be null.
void check_dataset_key(const Manifest& m, const DataKey* key);

}  // namespace strata::data
