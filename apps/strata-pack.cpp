// strata-pack: packs a dataset into HDF5 shards + manifest.json (see
// docs/data-format.md). Only option parsing lives here; the work is data/packer.
//   strata-pack <idx|files|raw|tokens> [options]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "apps/command_line.h"
#include "base/error.h"
#include "data/format/packer.h"
#include "data/format/shard_codec.h"
#include "data/format/token_packer.h"
#include "train/logging/progress_bar.h"

namespace {

const char* kDescription = R"(Packs samples into HDF5 shards and writes manifest.json last (a dataset without
manifest.json is incomplete).)";

const char* kSubcommands = R"(Subcommands:
  strata-pack idx   --images FILE --labels FILE --out URL [--shuffle [--seed N]] [common options]
      IDX image file (u8, N x H x W) and label file (u8, N); .gz accepted.
      Fields: "image" u8 [H,W], "label" i64. In the files' order; --shuffle
      writes them in an order permuted with --seed (default 0).
  strata-pack files --root DIR --out URL [--seed N | --no-shuffle] [--skip-bad | --no-verify]
                    [--threads N] [common options]
      One sample per file under DIR/<class>/...; label = index of <class> in
      sorted order. Fields: "bytes" (variable-size u8, the file), "label" i64,
      "name" (variable-size u8, the path under DIR). The manifest lists the
      class names. The files are written in an order permuted with --seed
      (default 0): each shard holds a random draw of all the files, whatever
      their class. --no-shuffle writes them class by class, in sorted path
      order. Every file is decoded first (JPEG or PNG); one that does not decode
      is listed and nothing is published, unless --skip-bad (left out, listed)
      or --no-verify (any files, packed as they are).
  strata-pack raw   --input FILE --sample-bytes N --out URL [common options]
  strata-pack raw   --input FILE --tokens u16|i32 --seq-len N --out URL [common options]
      Fixed-size records: field "data" u8 [N], or token sequences: field
      "tokens" u16/i32 [N] (host byte order). A trailing partial record is dropped.
  strata-pack tokens --text PATH... | --uint16 PATH... | --text-list FILE | --uint16-list FILE --out URL
                     [--val-fraction F] [--vocab-size N] [common options]
      Token shards (a 1-D "tokens" array per shard; default --shard-size 8MiB)
      in URL/train and URL/val; the last F (default 0.01) of the token stream
      is the validation split. --text: byte-level tokens (vocabulary 256), the
      files concatenated. --uint16: llm.c .bin files (magic 20240520) or raw
      uint16 files (nanoGPT); vocabulary = --vocab-size, else largest token + 1.
      A PATH that is a directory stands for every file under it (recursively,
      in sorted path order); --text-list/--uint16-list FILE adds the paths FILE
      lists, one a line (blank lines and lines starting with # skipped), after
      those given. The
      files are streamed in that order, a chunk at a time: the corpus is never
      held in memory, and may be far larger than it.
The common options (the Options above) go before or after the subcommand;
`strata-pack SUBCOMMAND --help` lists each subcommand's own.
S3 credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
AWS_SESSION_TOKEN or the shared credentials file (AWS_SHARED_CREDENTIALS_FILE,
AWS_PROFILE).
Encryption at rest: with --encrypt-key-file, or else a key in the file that
STRATA_DATA_KEY_FILE names or in STRATA_DATA_KEY (64 hex digits), every shard is
stored AES-256-GCM encrypted and the manifest records the key's id (never the
key); strata-train then needs the same key (docs/data-format.md).)";

// Every option of every subcommand, filled by CLI11.
struct PackArgs {
  std::string out, shard_size, prefix = "shard", endpoint, region, key_file, part_size = "16MiB";
  std::string compress = "none";
  int compress_level = 0;
  int deflate = 0, parallel_shards = 4, upload_connections = 8;
  bool quiet = false;
  bool skip_bad = false, no_verify = false;  // files
  int file_threads = 0;
  bool no_shuffle = false, shuffle = false;  // files: permuted unless --no-shuffle; idx: only with --shuffle
  uint64_t seed = 0;
  std::string images, labels, root, input, tokens_dtype;
  int64_t sample_bytes = 0, seq_len = 0, vocab_size = 0;
  double val_fraction = 0.01;
  std::vector<std::string> text, uint16;
  std::string text_list, uint16_list;
};

// strata-pack tokens' inputs: each path, a directory's files (recursively, in
// sorted path order), then the paths a list file names.
std::vector<std::string> token_input_paths(const std::vector<std::string>& given, const std::string& list) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths = given;
  if (!list.empty()) {
    std::ifstream in(list);
    if (!in) throw strata::ConfigError("strata-pack tokens: cannot read the list file " + list);
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty() && line[0] != '#') paths.push_back(line);
    }
  }
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      files.push_back(p);  // a missing file is named by the packer
      continue;
    }
    std::vector<std::string> under;
    for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) under.push_back(it->path().string());
    if (ec) throw strata::ConfigError("strata-pack tokens: cannot list " + p + ": " + ec.message());
    if (under.empty()) throw strata::ConfigError("strata-pack tokens: directory " + p + " holds no files");
    std::sort(under.begin(), under.end());
    files.insert(files.end(), under.begin(), under.end());
  }
  if (files.empty()) throw strata::ConfigError("strata-pack tokens: no input files");
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strata::data;
  PackArgs a;
  CLI::App app(kDescription, "strata-pack");
  strata::cli::add_version_flag(app);
  app.footer(kSubcommands);
  app.require_subcommand(1);
  app.add_option("--out", a.out, "Destination: a directory, file:///dir or s3://bucket/prefix")
      ->option_text("URL");
  app.add_option("--shard-size", a.shard_size,
                 "Seal a shard when its samples reach SIZE (default 64MiB, tokens 8MiB); units B, KB, MB, GB "
                 "(powers of 1000), KiB, MiB, GiB, K, M, G (powers of 1024)")
      ->option_text("SIZE");
  app.add_option("--deflate", a.deflate, "Deflate level 1..9 (chunked datasets); 0 = none")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  app.add_option("--compress", a.compress,
                 "Store each shard object compressed whole: zstd or lz4 (none: as it is); the loader "
                 "decompresses it into the node cache. Not with --deflate or encryption")
      ->option_text("CODEC")
      ->capture_default_str();
  app.add_option("--compress-level", a.compress_level,
                 "Level of --compress: zstd 1..19, lz4 1..12 (3 and up: LZ4-HC); 0 = the codec's default")
      ->capture_default_str();
  app.add_option("--prefix", a.prefix, "Shard names NAME-00000.h5, ...")
      ->option_text("NAME")
      ->capture_default_str();
  app.add_option("--endpoint", a.endpoint, "S3 endpoint (default: AWS_ENDPOINT_URL or S3_ENDPOINT)")
      ->option_text("URL");
  app.add_option("--region", a.region, "S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1)")
      ->option_text("NAME");
  app.add_option(
         "--encrypt-key-file", a.key_file,
         "Encrypt every shard (AES-256-GCM) with the key in FILE: 32 raw bytes or 64 hex digits "
         "(default: the file STRATA_DATA_KEY_FILE names, else STRATA_DATA_KEY; neither: no encryption)")
      ->option_text("FILE");
  app.add_option("--parallel-shards", a.parallel_shards,
                 "Shards uploading at a time while the next ones are packed")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option(
         "--part-size", a.part_size,
         "s3://: a shard larger than SIZE goes up as a multipart upload of SIZE parts (S3 allows 5MiB "
         "to 5GiB; grown when a shard needs more than 10,000 parts)")
      ->option_text("SIZE")
      ->capture_default_str();
  app.add_option("--upload-connections", a.upload_connections,
                 "s3://: parts of one shard uploading at a time")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--quiet", a.quiet, "No progress lines");

  CLI::App* idx = app.add_subcommand("idx", "IDX images and labels (Fashion-MNIST, MNIST)");
  idx->add_option("--images", a.images, "IDX image file (u8, N x H x W; .gz accepted)")->required();
  idx->add_option("--labels", a.labels, "IDX label file (u8, N; .gz accepted)")->required();
  CLI::Option* idx_shuffle = idx->add_flag(
      "--shuffle", a.shuffle, "Write the images in an order permuted with --seed, not the file's");
  idx->add_option("--seed", a.seed, "Seed of the permuted order (with --shuffle)")
      ->capture_default_str()
      ->needs(idx_shuffle);
  CLI::App* files = app.add_subcommand("files", "One sample per file under DIR/<class>/...");
  files->add_option("--root", a.root, "The directory of class subdirectories")
      ->required()
      ->option_text("DIR");
  CLI::Option* files_seed =
      files
          ->add_option(
              "--seed", a.seed,
              "Seed of the order the files are written in: a permutation, so that each shard holds a "
              "random draw of all the files, whatever their class")
          ->capture_default_str();
  files
      ->add_flag("--no-shuffle", a.no_shuffle,
                 "Write the files class by class in sorted path order (shard k then holds few classes)")
      ->excludes(files_seed);
  CLI::Option* skip_bad = files->add_flag(
      "--skip-bad", a.skip_bad, "Leave out (and list) files that do not decode as JPEG or PNG images");
  files->add_flag("--no-verify", a.no_verify, "Do not decode the files: pack any files as they are")
      ->excludes(skip_bad);
  files->add_option("--threads", a.file_threads, "Threads reading and decoding files (0: one per core)")
      ->capture_default_str();
  CLI::App* raw = app.add_subcommand("raw", "Fixed-size records, or token sequences, from one file");
  raw->add_option("--input", a.input, "The file of records")->required()->option_text("FILE");
  CLI::Option* sample_bytes =
      raw->add_option("--sample-bytes", a.sample_bytes, "Bytes per record (field data)");
  CLI::Option* tokens =
      raw->add_option("--tokens", a.tokens_dtype, "Token records (field tokens) of this dtype")
          ->check(CLI::IsMember({"u16", "i32"}));
  CLI::Option* seq_len = raw->add_option("--seq-len", a.seq_len, "Tokens per record (with --tokens)");
  sample_bytes->excludes(tokens);
  tokens->needs(seq_len);
  seq_len->needs(tokens);
  CLI::App* tok = app.add_subcommand("tokens", "Token shards for language models, split into train and val");
  CLI::Option* text = tok->add_option(
      "--text", a.text, "Text files or directories of them: byte-level tokens (vocabulary 256)");
  CLI::Option* u16 =
      tok->add_option("--uint16", a.uint16, "llm.c .bin or raw uint16 token files, or directories of them");
  text->excludes(u16);
  CLI::Option* text_list =
      tok->add_option("--text-list", a.text_list, "A file naming more --text inputs, one path a line")
          ->option_text("FILE");
  CLI::Option* u16_list =
      tok->add_option("--uint16-list", a.uint16_list, "A file naming more --uint16 inputs, one path a line")
          ->option_text("FILE");
  text->excludes(u16_list);
  text_list->excludes(u16);
  text_list->excludes(u16_list);
  tok->add_option("--val-fraction", a.val_fraction, "The last F of the token stream is the validation split")
      ->option_text("F")
      ->capture_default_str();
  tok->add_option("--vocab-size", a.vocab_size, "Vocabulary for --uint16 (default: largest token + 1)");
  for (CLI::App* sub : {idx, files, raw, tok}) sub->fallthrough();  // common options after the subcommand
  if (int rc = strata::cli::parse(app, argc, argv); rc >= 0) return rc;
  const std::string cmd = app.get_subcommands().front()->get_name();
  try {
    if (a.out.empty()) throw strata::ConfigError("strata-pack " + cmd + " needs --out");
    if (!is_object_codec(a.compress))
      throw strata::ConfigError("strata-pack: --compress '" + a.compress + "': expected one of " +
                                kObjectCodecs);
    PackOptions p;
    // progress on stderr: a redrawn bar on a terminal, else a line every 10 s
    strata::ConsoleBars bars(stderr, isatty(fileno(stderr)) != 0);
    strata::TransferBar bar(bars, "packing");
    if (!a.quiet) {
      p.log = [&bars](const std::string& line) { bars.print("strata-pack: " + line); };
      p.progress = [&bar](const PackProgress& q) {
        bar.update(q.inputs_done, q.inputs_total, q.unit, q.bytes_done, q.bytes_total,
                   std::to_string(q.shards_sealed) + " shards");
      };
    }
    p.out_url = a.out;
    p.shard_bytes = parse_size(!a.shard_size.empty() ? a.shard_size : cmd == "tokens" ? "8MiB" : "64MiB");
    p.deflate_level = a.deflate;
    p.compress = a.compress;
    p.compress_level = a.compress_level;
    p.prefix = a.prefix;
    p.source.endpoint = a.endpoint;
    p.source.region = a.region;
    p.source.upload.part_bytes = parse_size(a.part_size);
    p.source.upload.connections = a.upload_connections;
    p.parallel_shards = a.parallel_shards;
    p.key = resolve_data_key(a.key_file, "--encrypt-key-file");
    if (p.key && p.log)
      p.log("encrypting every shard with key id " + p.key->id() + " from " + p.key->origin());
    Manifest m;
    if (cmd == "idx") {
      if (a.shuffle) p.shuffle_seed = a.seed;
      m = pack_idx(a.images, a.labels, p);
    } else if (cmd == "files") {
      if (!a.no_shuffle) p.shuffle_seed = a.seed;
      p.check_images = a.no_verify  ? strata::data::ImageCheck::kNone
                       : a.skip_bad ? strata::data::ImageCheck::kSkip
                                    : strata::data::ImageCheck::kRefuse;
      p.file_threads = a.file_threads;
      m = pack_files(a.root, p);
    } else if (cmd == "raw") {
      if (tokens->count() == 0 && sample_bytes->count() == 0)
        throw strata::ConfigError("strata-pack raw needs --sample-bytes, or --tokens and --seq-len");
      m = tokens->count() > 0 ? pack_raw(a.input, a.tokens_dtype, a.seq_len, p)
                              : pack_raw(a.input, "u8", a.sample_bytes, p);
    } else {
      const bool from_text = text->count() > 0 || text_list->count() > 0;
      if (!from_text && u16->count() == 0 && u16_list->count() == 0)
        throw strata::ConfigError("strata-pack tokens needs either --text or --uint16 files");
      const std::vector<std::string>& given = from_text ? a.text : a.uint16;
      TokenPackOptions t;
      t.val_fraction = a.val_fraction;
      t.vocab_size = a.vocab_size;
      std::vector<TokenInput> inputs;
      for (const std::string& f : token_input_paths(given, from_text ? a.text_list : a.uint16_list))
        inputs.push_back({f, from_text ? TokenFormat::text : TokenFormat::uint16});
      t.pack = p;
      const TokenPackResult r = pack_tokens(inputs, t);
      std::cout << r.train.total_samples() << " train and " << r.val.total_samples()
                << " validation tokens (vocabulary " << r.train.vocab_size << ") -> " << p.out_url << "\n";
      return 0;
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
