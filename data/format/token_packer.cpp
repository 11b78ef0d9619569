// strata-pack tokens: byte-level text and llm.c / nanoGPT uint16 files into token
// shards. Input sizes are known before reading (file size, or llm.c's header), so
// the train/validation boundary is fixed up front and the inputs are streamed once
// in chunks; both manifests are written at the end, when the vocabulary (largest
// token + 1, unless given) is known.
#include "data/format/token_packer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/error.h"

namespace strata::data {
namespace fs = std::filesystem;

namespace {

constexpr size_t kChunkTokens = 1 << 20;

int64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  if (ec) throw IoError("cannot read token input " + path + ": " + ec.message());
  return static_cast<int64_t>(n);
}

int64_t token_count(const TokenInput& in) {
  return in.format == TokenFormat::text ? file_size(in.path) : inspect_uint16_file(in.path).tokens;
}

// Routes the token stream: the first `train_tokens` to train, the rest to val.
class SplitSink {
 public:
  SplitSink(const std::string& dtype, const TokenPackOptions& o, int64_t train_tokens)
      : i32_(dtype == "i32"), train_left_(train_tokens) {
    const std::vector<FieldSpec> schema = {{"tokens", dtype, {}, false}};
    PackOptions t = o.pack, v = o.pack;
    t.out_url += "/train";
    v.out_url += "/val";
    train_ = std::make_unique<DatasetPacker>(schema, t);
    val_ = std::make_unique<DatasetPacker>(schema, v);
  }

  void put(const uint16_t* tokens, size_t n) {
    std::vector<std::pair<const void*, size_t>> field(1);
    for (size_t i = 0; i < n; ++i) {
      const int32_t wide = tokens[i];
      field[0] =
          i32_ ? std::pair<const void*, size_t>{&wide, 4} : std::pair<const void*, size_t>{&tokens[i], 2};
      (train_left_ > 0 ? *train_ : *val_).add(field);
      if (train_left_ > 0) --train_left_;
    }
  }

  int64_t shards_sealed() const { return train_->shards_sealed() + val_->shards_sealed(); }

  TokenPackResult finish(int64_t vocab_size) {
    TokenPackResult r;
    r.train = train_->finish({}, vocab_size);
    r.val = val_->finish({}, vocab_size);
    return r;
  }

 private:
  bool i32_;
  int64_t train_left_;
  std::unique_ptr<DatasetPacker> train_, val_;
};

}  // namespace

Uint16FileLayout inspect_uint16_file(const std::string& path) {
  const int64_t size = file_size(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot open token file " + path);
  int32_t head[3] = {0, 0, 0};
  Uint16FileLayout l;
  if (size >= 4) in.read(reinterpret_cast<char*>(head), 4);
  if (head[0] == kLlmcLlama3Magic)
    throw IoError("token file " + path + " is an llm.c LLaMA-3 file (magic " +
                  std::to_string(kLlmcLlama3Magic) + "): its uint32 tokens are not supported");
  if (head[0] == kLlmcMagic) {
    l.llmc = true;
    l.offset = kLlmcHeaderBytes;
    if (size < kLlmcHeaderBytes)
      throw IoError("llm.c token file " + path + " is truncated: " + std::to_string(size) +
                    " bytes, shorter than its " + std::to_string(kLlmcHeaderBytes) + "-byte header");
    in.read(reinterpret_cast<char*>(head + 1), 8);
    if (head[1] != 1)
      throw IoError("llm.c token file " + path + ": header version " + std::to_string(head[1]) +
                    " is not supported (version 1 holds uint16 tokens)");
    if (head[2] < 0)
      throw IoError("llm.c token file " + path + ": negative token count " + std::to_string(head[2]));
    l.tokens = head[2];
    const int64_t want = kLlmcHeaderBytes + 2 * l.tokens;
    if (size < want)
      throw IoError("llm.c token file " + path + " is truncated: its header says " +
                    std::to_string(l.tokens) + " tokens (" + std::to_string(want) +
                    " bytes) but the file has " + std::to_string(size) + " bytes");
    if (size > want)
      throw IoError("llm.c token file " + path + " has " + std::to_string(size - want) + " bytes after the " +
                    std::to_string(l.tokens) + " tokens its header announces");
    return l;
  }
  if (size % 2 != 0)
    throw IoError("raw uint16 token file " + path + " is truncated: odd size of " + std::to_string(size) +
                  " bytes");
  l.tokens = size / 2;
  return l;
}

TokenPackResult pack_tokens(const std::vector<TokenInput>& inputs, const TokenPackOptions& o) {
  if (inputs.empty()) throw ConfigError("strata-pack tokens: no input files");
  if (!(o.val_fraction >= 0 && o.val_fraction < 1))
    throw ConfigError("validation fraction must be in [0, 1), got " + std::to_string(o.val_fraction));
  if (o.vocab_size < 0) throw ConfigError("vocabulary size must be positive");
  bool text = false, u16 = false;
  int64_t total = 0;
  for (const auto& in : inputs) {
    (in.format == TokenFormat::text ? text : u16) = true;
    total += token_count(in);
  }
  if (text && u16) throw ConfigError("strata-pack tokens: mix of text and uint16 inputs");
  if (text && o.vocab_size != 0 && o.vocab_size != 256)
    throw ConfigError("text is tokenised byte-level (vocabulary 256); got a vocabulary size of " +
                      std::to_string(o.vocab_size));
  const auto val_tokens = static_cast<int64_t>(std::llround(static_cast<double>(total) * o.val_fraction));
  if (total - val_tokens <= 0)
    throw IoError("token inputs hold " + std::to_string(total) + " tokens: nothing left for training");

  SplitSink sink(o.vocab_size > 65536 ? "i32" : "u16", o, total - val_tokens);
  std::vector<uint16_t> buf(kChunkTokens);
  std::vector<char> bytes(kChunkTokens);
  int64_t max_token = -1;
  PackProgress progress;
  progress.unit = "tokens";
  progress.inputs_total = total;
  progress.bytes_total = text ? total : 2 * total;
  for (const auto& in : inputs) {
    std::ifstream f(in.path, std::ios::binary);
    if (!f) throw IoError("cannot open token input " + in.path);
    int64_t left = token_count(in), pos = 0;
    if (in.format == TokenFormat::uint16) f.seekg(inspect_uint16_file(in.path).offset);
    while (left > 0) {
      const auto n = static_cast<size_t>(std::min<int64_t>(left, kChunkTokens));
      if (in.format == TokenFormat::text) {
        f.read(bytes.data(), static_cast<std::streamsize>(n));
        for (size_t i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>(bytes[i]);
      } else {
        f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(2 * n));
      }
      if (!f) throw IoError("read error in token input " + in.path + " (did it change while packing?)");
      for (size_t i = 0; i < n; ++i) {
        if (o.vocab_size > 0 && buf[i] >= o.vocab_size)
          throw IoError("token input " + in.path + ": token " +
                        std::to_string(pos + static_cast<int64_t>(i)) + " is " + std::to_string(buf[i]) +
                        ", not below the vocabulary size " + std::to_string(o.vocab_size));
        max_token = std::max<int64_t>(max_token, buf[i]);
      }
      sink.put(buf.data(), n);
      left -= static_cast<int64_t>(n);
      pos += static_cast<int64_t>(n);
      if (o.pack.progress) {
        progress.inputs_done += static_cast<int64_t>(n);
        progress.bytes_done += static_cast<int64_t>(text ? n : 2 * n);
        progress.shards_sealed = sink.shards_sealed();
        o.pack.progress(progress);
      }
    }
    if (o.pack.log) o.pack.log("read " + std::to_string(pos) + " tokens from " + in.path);
  }
  const int64_t vocab = o.vocab_size > 0 ? o.vocab_size : (text ? 256 : max_token + 1);
  return sink.finish(vocab);
}

}  // namespace strata::data
