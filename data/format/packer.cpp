// DatasetPacker and the three input readers of strata-pack.
#include "data/format/packer.h"

#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <future>
#include <thread>

#include "base/error.h"
#include "data/format/idx.h"
#include "data/format/image_codec.h"
#include "data/format/manifest_auth.h"
#include "data/format/plan_rng.h"
#include "data/format/shard.h"
#include "data/format/shard_codec.h"
#include "data/format/shard_crypt.h"

namespace strata::data {
namespace fs = std::filesystem;

namespace {

// 16 random bytes naming one packed dataset in its shards' authenticated data:
// an object copied from another dataset packed with the same key fails its tag.
std::string random_dataset_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1)
    throw Error("strata-pack: no random bytes from OpenSSL for the dataset id");
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

}  // namespace

struct DatasetPacker::Impl {
  std::vector<FieldSpec> schema;
  PackOptions opt;
  std::unique_ptr<Source> out;
  fs::path tmp_dir;
  std::unique_ptr<ShardWriter> writer;
  fs::path writer_path;
  Manifest manifest;
  // Sealed shards being uploaded, oldest first, with their log lines.
  std::deque<std::pair<std::future<void>, std::string>> uploads;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  int64_t bytes_stored = 0;

  // Waits for the oldest upload; its error (if any) propagates.
  void collect_one() {
    auto [done, line] = std::move(uploads.front());
    uploads.pop_front();
    done.get();
    if (opt.log) opt.log(line);
  }
  // Waits for every upload; the first error propagates after all have ended.
  void collect_all() {
    std::exception_ptr first;
    while (!uploads.empty()) try {
        collect_one();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    if (first) std::rethrow_exception(first);
  }
};

DatasetPacker::DatasetPacker(std::vector<FieldSpec> schema, PackOptions options)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  if (options.shard_bytes <= 0) throw ConfigError("shard size must be positive");
  if (options.parallel_shards < 1)
    throw ConfigError("shards uploading at a time must be >= 1, got " +
                      std::to_string(options.parallel_shards));
  if (options.prefix.empty() || options.prefix.find('/') == 0)
    throw ConfigError("shard prefix must be a non-empty relative name, got '" + options.prefix + "'");
  if (!is_object_codec(options.compress))
    throw ConfigError("--compress '" + options.compress + "': expected one of " + kObjectCodecs);
  if (options.compress != "none" && options.key)
    throw ConfigError(
        "--compress " + options.compress +
        " with an encryption key (--encrypt-key-file, STRATA_DATA_KEY_FILE or STRATA_DATA_KEY): "
        "a dataset's shards are stored compressed or encrypted, not both; drop one");
  if (options.compress != "none" && options.deflate_level > 0)
    throw ConfigError("--compress " + options.compress + " with --deflate " +
                      std::to_string(options.deflate_level) +
                      ": the shard object is compressed whole already; drop --deflate");
  m.schema = std::move(schema);
  m.opt = std::move(options);
  m.out = open_source(m.opt.out_url, m.opt.source);
  static std::atomic<int> packers{0};  // several packers may run in one process
  m.tmp_dir = fs::temp_directory_path() /
              ("strata-pack-" + std::to_string(::getpid()) + "-" + std::to_string(packers++));
  fs::create_directories(m.tmp_dir);
  m.manifest.schema = m.schema;
  m.manifest.compression = m.opt.deflate_level > 0 ? "deflate" : "none";
  m.manifest.object_compression = m.opt.compress;
  if (m.opt.key) m.manifest.encryption = {"aes-256-gcm", m.opt.key->id(), random_dataset_id(), ""};
}

DatasetPacker::~DatasetPacker() {
  std::error_code ec;
  for (auto& u : impl_->uploads) u.first.wait();  // their files are in tmp_dir
  impl_->writer.reset();
  fs::remove_all(impl_->tmp_dir, ec);
}

void DatasetPacker::add(const std::vector<std::pair<const void*, size_t>>& fields) {
  auto& m = *impl_;
  if (!m.writer) {
    char name[64];
    std::snprintf(name, sizeof name, "-%05zu.h5", m.manifest.shards.size());
    const std::string shard = m.opt.prefix + name;
    m.writer_path = m.tmp_dir / fs::path(shard).filename();
    m.writer = std::make_unique<ShardWriter>(m.writer_path.string(), m.schema, m.opt.deflate_level);
    m.manifest.shards.push_back(ShardInfo{shard, 0, 0, "", 0, ""});
  }
  m.writer->add(fields);
  if (m.writer->bytes_buffered() >= m.opt.shard_bytes) seal();
}

void DatasetPacker::seal() {
  auto& m = *impl_;
  if (!m.writer) return;
  ShardInfo& info = m.manifest.shards.back();
  info.samples = m.writer->samples();
  m.writer->finish();
  m.writer.reset();
  if (m.opt.key) {
    // The plaintext never leaves this machine: only the encrypted object is uploaded.
    const auto index = static_cast<int64_t>(m.manifest.shards.size()) - 1;
    const EncryptedSizes e = encrypt_shard_in_place(m.writer_path, *m.opt.key,
                                                    {m.manifest.encryption.dataset_id, info.name, index});
    info.bytes = e.bytes;
    info.checksum = e.checksum;
    info.plain_bytes = e.plain_bytes;
    info.plain_checksum = e.plain_checksum;
  } else if (m.manifest.object_compressed()) {
    // Only the frame is uploaded; the shard file is removed once compressed.
    fs::path frame = m.writer_path;
    frame += ".z";
    const CompressedSizes c = compress_shard_file(m.writer_path, frame, m.opt.compress, m.opt.compress_level);
    fs::rename(frame, m.writer_path);
    info.bytes = c.bytes;
    info.checksum = c.checksum;
    info.plain_bytes = c.plain_bytes;
    info.plain_checksum = c.plain_checksum;
  } else {
    info.bytes = static_cast<int64_t>(fs::file_size(m.writer_path));
    info.checksum = checksum_file(m.writer_path.string());
  }
  while (static_cast<int>(m.uploads.size()) >= m.opt.parallel_shards) m.collect_one();
  Source* out = m.out.get();
  m.uploads.emplace_back(std::async(std::launch::async,
                                    [out, key = info.name, path = m.writer_path] {
                                      out->put_file(key, path);
                                      fs::remove(path);
                                    }),
                         "wrote " + info.name + ": " + std::to_string(info.samples) + " samples, " +
                             std::to_string(info.bytes) + " bytes" +
                             (m.manifest.object_compressed()
                                  ? " (" + m.opt.compress + " of " + std::to_string(info.plain_bytes) + ")"
                                  : ""));
  m.bytes_stored += info.bytes;
}

int64_t DatasetPacker::shards_sealed() const {
  const auto& m = *impl_;
  return static_cast<int64_t>(m.manifest.shards.size()) - (m.writer ? 1 : 0);
}

Manifest DatasetPacker::finish(std::vector<std::string> class_names, int64_t vocab_size) {
  auto& m = *impl_;
  seal();
  m.collect_all();  // manifest.json names only shards that are stored
  m.manifest.class_names = std::move(class_names);
  m.manifest.vocab_size = vocab_size;
  if (m.opt.key) seal_manifest(m.manifest, *m.opt.key);
  const std::string text = m.manifest.to_json();
  m.out->put("manifest.json", std::vector<uint8_t>(text.begin(), text.end()));
  if (m.opt.log) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m.started).count();
    char rate[96];
    std::snprintf(rate, sizeof rate, "%.1f MB of shards in %.1f s (%.1f MB/s, packing and storing)",
                  m.bytes_stored / 1e6, s, s > 0 ? m.bytes_stored / 1e6 / s : 0.0);
    m.opt.log(rate);
  }
  if (m.opt.log)
    m.opt.log("wrote manifest.json: " + std::to_string(m.manifest.shards.size()) + " shards, " +
              std::to_string(m.manifest.total_samples()) + " samples, to " + m.out->url() +
              (m.opt.key ? ", encrypted (AES-256-GCM, key id " + m.opt.key->id() + ")" : ""));
  return m.manifest;
}

int64_t parse_size(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw ConfigError("invalid size '" + text + "' (examples: 4096, 64MB, 8MiB)");
  }
  std::string unit = text.substr(pos);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool binary = unit.size() == 3 && unit.substr(1) == "IB";
  const double base = binary ? 1024.0 : 1000.0;
  if (unit.empty() || unit == "B") return static_cast<int64_t>(v);
  if (unit.size() > 3 || (unit.size() == 2 && unit[1] != 'B') || (unit.size() == 3 && !binary))
    throw ConfigError("invalid size unit in '" + text + "' (use B, KB, MB, GB, KiB, MiB, GiB)");
  const std::string prefixes = "KMGT";
  const auto p = prefixes.find(unit[0]);
  if (p == std::string::npos) throw ConfigError("invalid size unit in '" + text + "'");
  double f = v;
  for (size_t i = 0; i <= p; ++i) f *= (unit.size() == 1 ? 1024.0 : base);
  if (v <= 0) throw ConfigError("size must be positive, got '" + text + "'");
  return static_cast<int64_t>(f);
}

namespace {

std::string shape_text(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += " x ";
    s += std::to_string(d[i]);
  }
  return s;
}

// The order the `count` inputs are written in: 0, 1, ... or, with a seed, a
// Fisher-Yates permutation of them (a stream of its own, apart from the loader's).
std::vector<int64_t> packing_order(int64_t count, const PackOptions& o) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
  if (!o.shuffle_seed) return order;
  PlanRng rng(*o.shuffle_seed ^ 0x7061636B6F726465ull);  // "packorde"
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(rng.below(i))]);
  if (o.log)
    o.log("writing the " + std::to_string(count) + " samples in an order permuted with seed " +
          std::to_string(*o.shuffle_seed));
  return order;
}

// Tells options.progress of one more input of `bytes` bytes.
class ProgressReport {
 public:
  ProgressReport(const PackOptions& o, std::string unit, int64_t inputs_total, int64_t bytes_total) : o_(o) {
    p_.unit = std::move(unit);
    p_.inputs_total = inputs_total;
    p_.bytes_total = bytes_total;
  }
  void input_done(int64_t bytes, const DatasetPacker& packer) {
    if (!o_.progress) return;
    p_.inputs_done++;
    p_.bytes_done += bytes;
    p_.shards_sealed = packer.shards_sealed();
    o_.progress(p_);
  }
  // After DatasetPacker::finish: the last shard is sealed too.
  Manifest finished(Manifest m) {
    p_.shards_sealed = static_cast<int64_t>(m.shards.size());
    if (o_.progress) o_.progress(p_);
    return m;
  }

 private:
  const PackOptions& o_;
  PackProgress p_;
};

}  // namespace

Manifest pack_idx(const std::string& images, const std::string& labels, const PackOptions& options) {
  const IdxArray img = read_idx(images);
  const IdxArray lab = read_idx(labels);
  if (img.type != 0x08 || img.dims.size() < 2)
    throw IoError("IDX images " + images + ": expected unsigned bytes with rank >= 2, got type 0x" +
                  std::to_string(img.type) + " of shape " + shape_text(img.dims));
  if (lab.type != 0x08 || lab.dims.size() != 1)
    throw IoError("IDX labels " + labels + ": expected unsigned bytes of rank 1, got shape " +
                  shape_text(lab.dims));
  if (img.count() != lab.count())
    throw IoError("IDX image/label count mismatch: " + images + " has " + std::to_string(img.count()) +
                  " images, " + labels + " has " + std::to_string(lab.count()) + " labels");
  FieldSpec image{"image", "u8", std::vector<int64_t>(img.dims.begin() + 1, img.dims.end()), false};
  const auto per = static_cast<size_t>(image.bytes_per_sample());
  DatasetPacker packer({image, {"label", "i64", {}, false}}, options);
  ProgressReport report(options, "images", img.count(), img.count() * static_cast<int64_t>(per));
  for (const int64_t i : packing_order(img.count(), options)) {
    const int64_t label = lab.data[static_cast<size_t>(i)];
    packer.add({{img.data.data() + static_cast<size_t>(i) * per, per}, {&label, sizeof label}});
    report.input_done(static_cast<int64_t>(per), packer);
  }
  return report.finished(packer.finish());
}

Manifest pack_files(const fs::path& root, const PackOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw IoError("input directory " + root.string() + " does not exist");
  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw IoError("input directory " + root.string() + " has no subdirectories (expected one per class)");
  DatasetPacker packer({{"bytes", "u8", {}, true}, {"label", "i64", {}, false}, {"name", "u8", {}, true}},
                       options);
  // every file listed first (sorted class by class), so that the progress knows
  // the total and the order can be permuted
  std::vector<std::pair<fs::path, int64_t>> files;  // (file, label)
  int64_t bytes = 0;
  for (size_t c = 0; c < classes.size(); ++c) {
    const size_t first = files.size();
    for (const auto& e : fs::recursive_directory_iterator(root / classes[c]))
      if (e.is_regular_file()) {
        files.emplace_back(e.path(), static_cast<int64_t>(c));
        bytes += static_cast<int64_t>(e.file_size());
      }
    std::sort(files.begin() + static_cast<std::ptrdiff_t>(first), files.end());
  }
  const auto count = static_cast<int64_t>(files.size());
  ProgressReport report(options, "files", count, bytes);
  // Files are read (and decoded, to check them) by `threads` threads a block at
  // a time, then added in the packing order: the shards do not depend on the
  // number of threads.
  const int threads =
      std::max(1, options.file_threads > 0 ? options.file_threads
                                           : static_cast<int>(std::thread::hardware_concurrency()));
  const std::vector<int64_t> order = packing_order(count, options);
  constexpr size_t kBlock = 512;
  struct Read {
    std::vector<char> data;
    std::string error;  // why the file does not decode; empty = fine
  };
  std::vector<Read> block;
  std::vector<std::string> bad;  // "path: why"
  for (size_t b0 = 0; b0 < order.size(); b0 += kBlock) {
    const size_t b1 = std::min(order.size(), b0 + kBlock);
    block.assign(b1 - b0, Read{});
    std::atomic<size_t> next{b0};
    auto work = [&] {
      for (size_t k; (k = next.fetch_add(1)) < b1;) {
        const fs::path& f = files[static_cast<size_t>(order[k])].first;
        Read& r = block[k - b0];
        std::ifstream in(f, std::ios::binary);
        r.data.assign(std::istreambuf_iterator<char>(in), {});
        if (in.bad() || !in.is_open()) {
          r.error = "cannot read the file";
          continue;
        }
        if (options.check_images == ImageCheck::kNone) continue;
        try {
          decode_image(reinterpret_cast<const uint8_t*>(r.data.data()), r.data.size(), 3);
        } catch (const std::exception& e) {
          r.error = e.what();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (size_t k = b0; k < b1; ++k) {
      const auto& [f, label] = files[static_cast<size_t>(order[k])];
      Read& r = block[k - b0];
      if (!r.error.empty()) {
        if (options.check_images == ImageCheck::kNone) throw IoError("cannot read " + f.string());
        bad.push_back(f.string() + ": " + r.error);
        if (options.log && options.check_images == ImageCheck::kSkip)
          options.log("left out " + f.string() + ": " + r.error);
        report.input_done(static_cast<int64_t>(r.data.size()), packer);
        continue;
      }
      // the name relative to the root, as in the ImageFolder: "<class>/.../<file>"
      const std::string name = f.lexically_relative(root).generic_string();
      packer.add({{r.data.data(), r.data.size()}, {&label, sizeof label}, {name.data(), name.size()}});
      report.input_done(static_cast<int64_t>(r.data.size()), packer);
    }
  }
  if (!bad.empty() && options.check_images == ImageCheck::kRefuse) {
    std::string list;
    for (size_t i = 0; i < bad.size() && i < 50; ++i) list += "\n  " + bad[i];
    if (bad.size() > 50) list += "\n  ... and " + std::to_string(bad.size() - 50) + " more";
    throw IoError(std::to_string(bad.size()) + " of " + std::to_string(count) +
                  " files are not images that decode (JPEG or PNG); no manifest written (--skip-bad leaves "
                  "them out):" +
                  list);
  }
  if (options.log && !bad.empty())
    options.log("left out " + std::to_string(bad.size()) + " of " + std::to_string(count) +
                " files that do not decode");
  return report.finished(packer.finish(classes));
}

Manifest pack_raw(const std::string& input, const std::string& dtype, int64_t sample_elems,
                  const PackOptions& options) {
  if (sample_elems <= 0)
    throw ConfigError("record length must be positive, got " + std::to_string(sample_elems));
  FieldSpec field{dtype == "u8" ? "data" : "tokens", dtype, {sample_elems}, false};
  if (dtype != "u8" && dtype != "u16" && dtype != "i32")
    throw ConfigError("raw element type must be u8, u16 or i32, got '" + dtype + "'");
  const auto per = static_cast<size_t>(field.bytes_per_sample());
  std::ifstream in(input, std::ios::binary);
  if (!in) throw IoError("cannot open raw input " + input);
  DatasetPacker packer({field}, options);
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(input, ec));
  ProgressReport report(options, "records", ec ? 0 : size / static_cast<int64_t>(per),
                        ec ? 0 : size / static_cast<int64_t>(per) * static_cast<int64_t>(per));
  std::vector<char> rec(per);
  int64_t n = 0;
  while (in.read(rec.data(), static_cast<std::streamsize>(per))) {
    packer.add({{rec.data(), per}});
    report.input_done(static_cast<int64_t>(per), packer);
    ++n;
  }
  if (in.bad()) throw IoError("read error in raw input " + input);
  if (in.gcount() > 0 && options.log)
    options.log("dropped a trailing partial record of " + std::to_string(in.gcount()) +
                " bytes at the end of " + input);
  if (n == 0)
    throw IoError("raw input " + input + " holds no complete record of " + std::to_string(per) + " bytes");
  return report.finished(packer.finish());
}

}  // namespace strata::data
