// strata-pack: packs a dataset into HDF5 shards + manifest.json (see
// docs/data-format.md). Only option parsing lives here; the work is data/packer.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "base/error.h"
#include "core/logging/progress_bar.h"
#include "data/packer.h"
#include "data/token_packer.h"

namespace {

const char* kUsage = R"(usage: strata-pack <idx|files|raw|tokens> [options]

Packs samples into HDF5 shards and writes manifest.json last (a dataset without
manifest.json is incomplete).

  strata-pack idx   --images FILE --labels FILE --out URL [common options]
      IDX image file (u8, N x H x W) and label file (u8, N); .gz accepted.
      Fields: "image" u8 [H,W], "label" i64.
  strata-pack files --root DIR --out URL [common options]
      One sample per file under DIR/<class>/...; label = index of <class> in
      sorted order. Fields: "bytes" (variable-size u8), "label" i64. The manifest
      lists the class names.
  strata-pack raw   --input FILE --sample-bytes N --out URL [common options]
  strata-pack raw   --input FILE --tokens u16|i32 --seq-len N --out URL [common options]
      Fixed-size records: field "data" u8 [N], or token sequences: field
      "tokens" u16/i32 [N] (host byte order). A trailing partial record is dropped.
  strata-pack tokens --text FILE... | --uint16 FILE... --out URL
                     [--val-fraction F] [--vocab-size N] [common options]
      Token shards (a 1-D "tokens" array per shard; default --shard-size 8MiB)
      in URL/train and URL/val; the last F (default 0.01) of the token stream
      is the validation split. --text: byte-level tokens (vocabulary 256), the
      files concatenated. --uint16: llm.c .bin files (magic 20240520) or raw
      uint16 files (nanoGPT); vocabulary = --vocab-size, else largest token + 1.

common options:
  --out URL           destination: a directory, file:///dir or s3://bucket/prefix
  --shard-size SIZE   seal a shard when its samples reach SIZE (default 64MiB);
                      units B, KB, MB, GB (powers of 1000), KiB, MiB, GiB, K, M, G
                      (powers of 1024)
  --deflate N         deflate level 1..9 (chunked datasets); default 0 = none
  --prefix NAME       shard names NAME-00000.h5, ... (default "shard")
  --endpoint URL      S3 endpoint (default: AWS_ENDPOINT_URL or S3_ENDPOINT)
  --region NAME       S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1)
  --quiet             no progress lines
  --help              this text
S3 credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
AWS_SESSION_TOKEN or the shared credentials file (AWS_SHARED_CREDENTIALS_FILE,
AWS_PROFILE).
)";

std::map<std::string, std::string> parse(int argc, char** argv) {
  std::map<std::string, std::string> opts;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "--quiet") {
      opts[a] = "1";
      continue;
    }
    if (a.rfind("--", 0) != 0) throw strata::ConfigError("unexpected argument '" + a + "'");
    if (a == "--text" || a == "--uint16") {  // a list: every argument up to the next option
      std::string& list = opts[a];
      for (; i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0; ++i) {
        if (!list.empty()) list.push_back('\n');
        list.append(argv[i + 1]);
      }
      if (list.empty()) throw strata::ConfigError("option " + a + " needs at least one file");
      continue;
    }
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      opts[a.substr(0, eq)] = a.substr(eq + 1);
    } else {
      if (i + 1 >= argc) throw strata::ConfigError("option " + a + " needs a value");
      opts[a] = argv[++i];
    }
  }
  return opts;
}

std::string need(std::map<std::string, std::string>& o, const std::string& key, const std::string& cmd) {
  auto it = o.find(key);
  if (it == o.end()) throw strata::ConfigError("strata-pack " + cmd + " needs " + key);
  std::string v = it->second;
  o.erase(it);
  return v;
}

std::string take(std::map<std::string, std::string>& o, const std::string& key, const std::string& def) {
  auto it = o.find(key);
  if (it == o.end()) return def;
  std::string v = it->second;
  o.erase(it);
  return v;
}

int64_t to_int(const std::string& key, const std::string& v) {
  try {
    size_t pos = 0;
    long long n = std::stoll(v, &pos);
    if (pos == v.size()) return n;
  } catch (const std::exception&) {
  }
  throw strata::ConfigError("option " + key + " needs an integer, got '" + v + "'");
}

double to_double(const std::string& key, const std::string& v) {
  try {
    size_t pos = 0;
    const double d = std::stod(v, &pos);
    if (pos == v.size()) return d;
  } catch (const std::exception&) {
  }
  throw strata::ConfigError("option " + key + " needs a number, got '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata::data;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  try {
    const std::string cmd = argv[1];
    auto o = parse(argc, argv);
    if (o.count("--help") || o.count("-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    PackOptions p;
    const bool quiet = o.erase("--quiet") > 0;
    // progress on stderr: a redrawn bar on a terminal, else a line every 10 s
    strata::ConsoleBars bars(stderr, isatty(fileno(stderr)) != 0);
    strata::TransferBar bar(bars, "packing");
    if (!quiet) {
      p.log = [&bars](const std::string& line) { bars.print("strata-pack: " + line); };
      p.progress = [&bar](const PackProgress& q) {
        bar.update(q.inputs_done, q.inputs_total, q.unit, q.bytes_done, q.bytes_total,
                   std::to_string(q.shards_sealed) + " shards");
      };
    }
    p.out_url = need(o, "--out", cmd);
    p.shard_bytes = parse_size(take(o, "--shard-size", cmd == "tokens" ? "8MiB" : "64MiB"));
    p.deflate_level = static_cast<int>(to_int("--deflate", take(o, "--deflate", "0")));
    if (p.deflate_level < 0 || p.deflate_level > 9) throw strata::ConfigError("--deflate must be 0..9");
    p.prefix = take(o, "--prefix", "shard");
    p.source.endpoint = take(o, "--endpoint", "");
    p.source.region = take(o, "--region", "");
    Manifest m;
    if (cmd == "idx") {
      const std::string images = need(o, "--images", cmd), labels = need(o, "--labels", cmd);
      if (!o.empty()) throw strata::ConfigError("unknown option " + o.begin()->first + " for idx");
      m = pack_idx(images, labels, p);
    } else if (cmd == "files") {
      const std::string root = need(o, "--root", cmd);
      if (!o.empty()) throw strata::ConfigError("unknown option " + o.begin()->first + " for files");
      m = pack_files(root, p);
    } else if (cmd == "raw") {
      const std::string input = need(o, "--input", cmd);
      std::string dtype = "u8";
      int64_t n = 0;
      if (o.count("--tokens")) {
        dtype = take(o, "--tokens", "");
        n = to_int("--seq-len", need(o, "--seq-len", cmd));
      } else {
        n = to_int("--sample-bytes", need(o, "--sample-bytes", cmd));
      }
      if (!o.empty()) throw strata::ConfigError("unknown option " + o.begin()->first + " for raw");
      m = pack_raw(input, dtype, n, p);
    } else if (cmd == "tokens") {
      TokenPackOptions t;
      t.val_fraction = to_double("--val-fraction", take(o, "--val-fraction", "0.01"));
      t.vocab_size = to_int("--vocab-size", take(o, "--vocab-size", "0"));
      const bool text = o.count("--text") > 0;
      if (text == (o.count("--uint16") > 0))
        throw strata::ConfigError("strata-pack tokens needs either --text or --uint16 files");
      const std::string list = take(o, text ? "--text" : "--uint16", "");
      if (!o.empty()) throw strata::ConfigError("unknown option " + o.begin()->first + " for tokens");
      std::vector<TokenInput> inputs;
      for (size_t b = 0, e; b <= list.size(); b = e + 1) {
        e = std::min(list.find('\n', b), list.size());
        inputs.push_back({list.substr(b, e - b), text ? TokenFormat::text : TokenFormat::uint16});
      }
      t.pack = p;
      const TokenPackResult r = pack_tokens(inputs, t);
      std::cout << r.train.total_samples() << " train and " << r.val.total_samples()
                << " validation tokens (vocabulary " << r.train.vocab_size << ") -> " << p.out_url << "\n";
      return 0;
    } else {
      throw strata::ConfigError("unknown subcommand '" + cmd +
                                "' (expected idx, files, raw or tokens; see --help)");
    }
    bars.finish();
    std::cout << m.shards.size() << " shards, " << m.total_samples() << " samples, " << m.total_bytes()
              << " bytes -> " << p.out_url << "\n";
    return 0;
  } catch (const strata::ConfigError& e) {
    std::cerr << "strata-pack: " << e.what() << "\n(see strata-pack --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "strata-pack: " << e.what() << "\n";
    return 1;
  }
}
