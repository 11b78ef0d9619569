// strata-inspect FILE [--json] [--same-as OTHER]: what is inside a checkpoint
// or a shard, or whether two checkpoints hold the same state to the bit (see
// docs/cli.md). Wiring only: train/checkpoint/checkpoint reads checkpoints,
// data/shard_inspect reads shards; here both become one JSON value, printed
// as it is (--json) or as text.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/command_line.h"
#include "base/error.h"
#include "data/format/shard_codec.h"
#include "data/format/shard_crypt.h"
#include "data/format/shard_inspect.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/checkpoint_compare.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace strata;

namespace {

const char* kDescription =
    "Prints what a checkpoint (.h5 written by strata-train) or a dataset shard (.h5 written by strata-pack)\n"
    "holds. A checkpoint: its tensors with dtypes and shapes, the trainer's counters, the loader's "
    "position,\n"
    "the schedule's state and the resolved config. A shard: its datasets with dtypes and shapes, its sample\n"
    "count, its checksum and whether it agrees with the manifest.json beside it. Exit status 1 when the "
    "file\n"
    "cannot be read, or a shard has a manifest beside it that does not list it as it is.";

json shape_json(const Shape& s) { return json(std::vector<int64_t>(s.begin(), s.end())); }

json tensors_json(const std::map<std::string, Tensor>& tensors) {
  json out = json::array();
  for (auto& [name, t] : tensors)
    out.push_back({{"name", name}, {"dtype", dtype_name(t.dtype())}, {"shape", shape_json(t.shape())}});
  return out;
}

json checkpoint_json(const fs::path& path) {
  const Checkpoint ck = load_checkpoint(path);
  int64_t parameters = 0;
  for (auto& [name, t] : ck.model) parameters += t.numel();
  json trainer = json::object();
  for (auto& [k, v] : ck.ints) trainer[k] = v;
  for (auto& [k, v] : ck.scalars) trainer[k] = v;
  json rng = json::object();
  for (auto& [k, v] : ck.rng) rng[k] = v.size();  // states are opaque: their sizes say they are there
  json schedule = {{"name", ck.schedule.name}};
  for (auto& [k, v] : ck.schedule.values) schedule[k] = v;
  return {{"kind", "checkpoint"},
          {"path", path.string()},
          {"bytes", fs::file_size(path)},
          {"model_values", parameters},
          {"model", tensors_json(ck.model)},
          {"optimizer", tensors_json(ck.optimizer)},
          {"trainer", trainer},
          {"loader", ck.loader},
          {"schedule", schedule},
          {"rng_state_bytes", rng},
          {"config", ck.resolved_yaml}};
}

json shard_json(const std::string& path) {
  const data::ShardReport r = data::inspect_shard(path);
  json datasets = json::array();
  for (auto& d : r.datasets) datasets.push_back({{"name", d.name}, {"dtype", d.dtype}, {"shape", d.shape}});
  json schema = json::array();
  for (auto& f : r.schema)
    schema.push_back({{"name", f.name}, {"dtype", f.dtype}, {"shape", f.shape}, {"variable", f.variable}});
  json entry = nullptr;
  if (r.manifest_entry)
    entry = {{"name", r.manifest_entry->name},
             {"samples", r.manifest_entry->samples},
             {"bytes", r.manifest_entry->bytes},
             {"checksum", r.manifest_entry->checksum}};
  return {{"kind", "shard"},
          {"path", r.path},
          {"bytes", r.bytes},
          {"strata_format", r.format_version},
          {"samples", r.samples},
          {"datasets", datasets},
          {"checksum", r.checksum},
          {"manifest", r.manifest_path.empty() ? json(nullptr) : json(r.manifest_path)},
          {"manifest_entry", entry},
          {"schema", schema},
          {"mismatches", r.mismatches},
          {"verified", r.verified()}};
}

std::string shape_text(const json& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i].get<int64_t>());
  return s + "]";
}

std::string scalar_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void print_tensors(const char* title, const json& tensors) {
  std::printf("%s: %zu tensors\n", title, tensors.size());
  for (auto& t : tensors)
    std::printf("  %-40s %-4s %s\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(), shape_text(t["shape"]).c_str());
}

void print_map(const char* title, const json& m) {
  std::printf("%s:", title);
  if (m.empty()) std::printf(" (none)");
  std::printf("\n");
  for (auto& [k, v] : m.items()) std::printf("  %-28s %s\n", k.c_str(), scalar_text(v).c_str());
}

void print_checkpoint(const json& j) {
  std::printf("checkpoint %s (%s bytes)\n", j["path"].get<std::string>().c_str(), j["bytes"].dump().c_str());
  print_map("trainer", j["trainer"]);
  print_map("loader position", j["loader"]);
  print_map("schedule", j["schedule"]);
  print_map("rng states (bytes)", j["rng_state_bytes"]);
  std::printf("model: %s values\n", j["model_values"].dump().c_str());
  print_tensors("model tensors", j["model"]);
  print_tensors("optimizer tensors", j["optimizer"]);
  std::printf("config (resolved):\n");
  const std::string yaml = j["config"];
  for (size_t b = 0; b < yaml.size();) {
    const size_t e = std::min(yaml.find('\n', b), yaml.size());
    std::printf(e > b ? "  %s\n" : "%s\n", yaml.substr(b, e - b).c_str());
    b = e + 1;
  }
}

void print_shard(const json& j) {
  std::printf("shard %s (%s bytes, strata_format %s)\n", j["path"].get<std::string>().c_str(),
              j["bytes"].dump().c_str(), j["strata_format"].dump().c_str());
  std::printf("samples: %s\n", j["samples"].dump().c_str());
  std::printf("datasets:\n");
  for (auto& d : j["datasets"])
    std::printf("  %-24s %-4s %s\n", d["name"].get<std::string>().c_str(),
                d["dtype"].get<std::string>().c_str(), shape_text(d["shape"]).c_str());
  std::printf("checksum: %s\n", j["checksum"].get<std::string>().c_str());
  if (j["manifest"].is_null()) {
    std::printf("manifest: none beside the shard; the checksum is not verified\n");
    return;
  }
  const std::string manifest = j["manifest"];
  std::printf("schema (%s):\n", manifest.c_str());
  for (auto& f : j["schema"])
    std::printf("  %-24s %-4s %s\n", f["name"].get<std::string>().c_str(),
                f["dtype"].get<std::string>().c_str(),
                f["variable"].get<bool>() ? "variable size" : shape_text(f["shape"]).c_str());
  if (j["manifest_entry"].is_null())
    std::printf("verified: no: %s has no entry for this file\n", manifest.c_str());
  else if (j["verified"].get<bool>())
    std::printf("verified: yes: size, samples and checksum agree with %s\n", manifest.c_str());
  else
    for (auto& m : j["mismatches"]) std::printf("verified: NO: %s\n", m.get<std::string>().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  bool as_json = false;
  CLI::App app(kDescription, "strata-inspect");
  cli::add_version_flag(app);
  app.add_option("file", file, "A checkpoint or a shard (.h5)")->required()->option_text("FILE");
  app.add_flag("--json", as_json, "Print one JSON object instead of text");
  std::string other;
  app.add_option("--same-as", other,
                 "Compare two checkpoints instead: exit 0 when their model and optimizer tensors and trainer "
                 "counters are identical to the bit, 1 naming the first difference")
      ->option_text("CHECKPOINT");
  if (int rc = cli::parse(app, argc, argv); rc >= 0) return rc;
  try {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) throw IoError(file + ": no such file");
    if (!other.empty()) {
      if (!fs::is_regular_file(other, ec)) throw IoError(other + ": no such file");
      const CheckpointComparison c = compare_checkpoints(load_checkpoint(file), load_checkpoint(other));
      if (c.identical)
        std::printf("identical: %ld tensors, %ld values, and the trainer counters\n",
                    static_cast<long>(c.tensors), static_cast<long>(c.values));
      else
        std::printf("differ: %s\n", c.first_difference.c_str());
      return c.identical ? 0 : 1;
    }
    json j;
    if (data::is_encrypted_shard_file(file))
      throw IoError(file +
                    ": an encrypted shard object (AES-256-GCM, docs/data-format.md \"Encrypted datasets\"); "
                    "the loader's cache holds it decrypted, inspect it there");
    if (const std::string codec = data::object_codec_of_file(file); !codec.empty())
      throw IoError(
          file + ": a " + codec +
          "-compressed shard object (docs/data-format.md \"Compressed shard objects\"); the loader's "
          "cache holds it decompressed, inspect it there or decompress it (" +
          (codec == "zstd" ? "zstd -d" : "lz4 -d") + ")");
    if (data::is_shard_file(file)) {
      j = shard_json(file);
    } else {
      try {
        j = checkpoint_json(file);
      } catch (const IoError& e) {
        throw IoError(file +
                      ": neither a shard (no root attribute strata_format) nor a checkpoint: " + e.what());
      }
    }
    if (as_json)
      std::cout << j.dump(2) << "\n";
    else if (j["kind"] == "shard")
      print_shard(j);
    else
      print_checkpoint(j);
    // a shard its own manifest does not vouch for is a failure scripts can test for
    return j["kind"] == "shard" && !j["manifest"].is_null() && !j["verified"].get<bool>() ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-inspect: %s\n", e.what());
    return 1;
  }
}
