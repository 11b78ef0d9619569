// Packing token streams into token shards (strata-pack tokens). The inputs are
// read in order as one stream of tokens; the last `val_fraction` of the stream
// becomes the validation dataset <out>/val, the rest <out>/train. Each dataset is
// a normal strata dataset (manifest.json + HDF5 shards, docs/data-format.md) whose
// one field "tokens" is a scalar per sample, so a shard holds a 1-D token array
// and the manifest records the vocabulary size.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/format/manifest.h"
#include "data/format/packer.h"

namespace strata::data {

enum class TokenFormat {
  text,    // any file; byte-level tokens: token = byte value (vocabulary 256)
  uint16,  // llm.c .bin (header with magic 20240520) or nanoGPT .bin (raw uint16)
};

struct TokenInput {
  std::string path;
  TokenFormat format = TokenFormat::text;
};

struct TokenPackOptions {
  PackOptions pack;            // out_url is the parent of train/ and val/; shard_bytes per split
  double val_fraction = 0.01;  // in [0, 1)
  // 0: 256 for text inputs, (largest token + 1) for uint16 inputs. Otherwise every
  // token must be below it; above 65536 the shards store i32 instead of u16.
  int64_t vocab_size = 0;
};

struct TokenPackResult {
  Manifest train, val;
};

TokenPackResult pack_tokens(const std::vector<TokenInput>& inputs, const TokenPackOptions& options);

// Where the tokens of a uint16 token file are: llm.c's format (a 256 x int32
// little-endian header: magic 20240520, version 1, token count; then the uint16
// tokens) when the file starts with the magic, else raw uint16 (nanoGPT). Throws
// IoError naming the file when it is truncated or its header is not usable (an
// llm.c LLaMA-3 file, magic 20240801, holds uint32 tokens and is refused).
struct Uint16FileLayout {
  bool llmc = false;
  int64_t offset = 0;  // byte offset of the first token
  int64_t tokens = 0;
};
Uint16FileLayout inspect_uint16_file(const std::string& path);

inline constexpr int32_t kLlmcMagic = 20240520;
inline constexpr int32_t kLlmcLlama3Magic = 20240801;  // uint32 tokens: refused
inline constexpr int64_t kLlmcHeaderBytes = 256 * 4;

}  // namespace strata::data
