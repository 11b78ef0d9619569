// strata-bench upload: MB/s of one large file uploaded to an S3 store and
// downloaded back (a checkpoint saved, then resumed on another node), strata's
// uploader (S3Source::put_file: multipart, parallel parts) and downloader
// (get_to_file: ranged parallel GETs) beside `aws s3 cp` (Debian's awscli) and
// `rclone copyto`, each with its default multipart settings, measured in the
// same run against the same endpoint. Modes alternate within each repeat, so a
// busy machine slows them alike; the median repeat is shown. Every upload
// overwrites one key (the store's garbage collector frees the old one), and
// every download is checked against the file once.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "base/error.h"
#include "bench_args.h"
#include "data/format/manifest.h"
#include "data/store/aws_credentials.h"
#include "data/store/s3_options.h"
#include "data/store/s3_source.h"
#include "loader_peers.h"
#include "registry.h"

extern char** environ;

namespace {
using namespace strata::bench::loader_peers;

struct Mode {
  std::string name;  // "strata", "aws s3 cp", "rclone"
  std::vector<double> up, down;
};

// Runs argv with extra environment entries; throws when it fails.
void run(const std::vector<std::string>& args, const std::vector<std::string>& env, const std::string& log) {
  std::vector<std::string> all_env = env;  // the extra entries replace inherited ones of the same name
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e, name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; }))
      all_env.push_back(entry);
  }
  std::vector<char*> argv, envp;
  for (auto& a : const_cast<std::vector<std::string>&>(args)) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : all_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw strata::IoError("cannot start " + args[0] + ": " + std::strerror(rc));
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    throw strata::IoError(args[0] + " " + args[1] + " failed (exit status " +
                          std::to_string(WEXITSTATUS(st)) + "); its output is in " + log);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

STRATA_BENCH(upload, "MB/s of a large file uploaded to S3 and downloaded back, vs aws s3 cp and rclone") {
  std::string url = "s3://strata-bench/upload", endpoint, size_text = "1G",
              dir_text = "/dev/shm/strata-bench-upload";
  std::string aws = "/usr/bin/aws", rclone = "/usr/bin/rclone";
  int repeats = 3;
  strata::data::SourceOptions so;
  std::string part_text = "16M";
  cli.app.add_option("--url", url, "Where the object goes (the bucket is created)")->capture_default_str();
  cli.app.add_option("--endpoint", endpoint,
                     "S3 endpoint; default from the AWS/S3 environment (as the keys)");
  cli.app.add_option("--size", size_text, "Bytes of the file, e.g. 1G")->capture_default_str();
  cli.app.add_option("--repeat", repeats, "Repeats of every mode")->capture_default_str();
  cli.app.add_option("--part", part_text, "strata's upload part size")->capture_default_str();
  cli.app.add_option("--connections", so.upload.connections, "strata's parts in flight")
      ->capture_default_str();
  cli.app.add_option("--dir", dir_text, "Where the file and downloads live (RAM: the disk is not measured)")
      ->capture_default_str();
  cli.app.add_option("--aws", aws, "The aws CLI ('' to leave it out)")->capture_default_str();
  cli.app.add_option("--rclone", rclone, "rclone ('' to leave it out)")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  so.endpoint = endpoint;
  so.upload.part_bytes = static_cast<int64_t>(strata::bench::parse_bytes(part_text));
  so = strata::data::resolve_s3_options(so);
  const auto size = static_cast<int64_t>(strata::bench::parse_bytes(size_text));
  const fs::path dir = dir_text;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "checkpoint.bin", back = dir / "download.bin", log = dir / "peers.log";
  {
    std::ofstream out(file, std::ios::binary);
    std::mt19937_64 rng(1);
    std::vector<uint64_t> block(1 << 17);
    for (int64_t done = 0; done < size;) {
      for (auto& w : block) w = rng();
      const auto n = std::min<int64_t>(size - done, static_cast<int64_t>(block.size() * 8));
      out.write(reinterpret_cast<const char*>(block.data()), n);
      done += n;
    }
  }
  const std::string sum = strata::data::checksum_file(file.string());
  strata::data::create_bucket(url, so);
  strata::data::S3Source s3(url, so);
  const std::string bucket = s3.bucket(), key = url.substr(5 + bucket.size() + 1) + "/object";
  const std::string object_url = "s3://" + bucket + "/" + key;
  const strata::data::AwsCredentials keys = so.credentials->get();  // the peers get the same keys
  const std::vector<std::string> aws_env = {"AWS_ACCESS_KEY_ID=" + keys.access_key,
                                            "AWS_SECRET_ACCESS_KEY=" + keys.secret_key,
                                            "AWS_DEFAULT_REGION=" + so.region, "AWS_CONFIG_FILE=/dev/null",
                                            "AWS_SHARED_CREDENTIALS_FILE=/dev/null"};
  const std::vector<std::string> rclone_env = {"RCLONE_CONFIG_BENCH_TYPE=s3",
                                               "RCLONE_CONFIG_BENCH_PROVIDER=Ceph",
                                               "RCLONE_CONFIG_BENCH_ENDPOINT=" + so.endpoint,
                                               "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=" + keys.access_key,
                                               "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=" + keys.secret_key,
                                               "RCLONE_CONFIG_BENCH_REGION=" + so.region,
                                               "RCLONE_CONFIG=/dev/null"};
  std::vector<Mode> modes = {{"strata", {}, {}}};
  if (!aws.empty()) modes.push_back({"aws s3 cp", {}, {}});
  if (!rclone.empty()) modes.push_back({"rclone copyto", {}, {}});
  const std::string rclone_object = "bench:" + bucket + "/" + key;

  for (int r = 0; r < repeats; ++r) {
    for (Mode& m : modes) {
      auto t0 = Clock::now();
      if (m.name == "strata")
        s3.put_file(key, file);
      else if (m.name == "aws s3 cp")
        run({aws, "s3", "cp", "--only-show-errors", "--endpoint-url", so.endpoint, file.string(), object_url},
            aws_env, log.string());
      else
        run({rclone, "copyto", file.string(), rclone_object}, rclone_env, log.string());
      m.up.push_back(since(t0));
      if (s3.head(key).size != static_cast<uint64_t>(size))
        throw strata::IoError(m.name + ": the stored object is not " + std::to_string(size) + " bytes");
      fs::remove(back);
      t0 = Clock::now();
      if (m.name == "strata")
        s3.get_to_file(key, back);
      else if (m.name == "aws s3 cp")
        run({aws, "s3", "cp", "--only-show-errors", "--endpoint-url", so.endpoint, object_url, back.string()},
            aws_env, log.string());
      else
        run({rclone, "copyto", rclone_object, back.string()}, rclone_env, log.string());
      m.down.push_back(since(t0));
      if (r == 0 && strata::data::checksum_file(back.string()) != sum)
        throw strata::IoError(m.name + ": what came back differs from the file");
    }
  }
  fs::remove_all(dir);

  const double mb = static_cast<double>(size) / 1e6;
  std::printf("upload: a %.0f MB file to %s (%s), median of %d repeats, load average %.1f\n", mb,
              so.endpoint.c_str(), object_url.c_str(), repeats, load_average());
  std::printf(
      "strata: %d parts of %.0f MiB in flight (downloads: %d ranged GETs of %.0f MiB); peers: their "
      "defaults\n",
      so.upload.connections, so.upload.part_bytes / 1048576.0, so.parts.connections,
      so.parts.part_bytes / 1048576.0);
  std::printf("%-14s %10s %12s %12s %14s\n", "tool", "up MB/s", "strata vs it", "down MB/s", "strata vs it");
  const double su = mb / median(modes[0].up), sd = mb / median(modes[0].down);
  for (const Mode& m : modes) {
    const double u = mb / median(m.up), d = mb / median(m.down);
    std::printf("%-14s %10.0f %11.2fx %12.0f %13.2fx\n", m.name.c_str(), u, su / u, d, sd / d);
  }
  std::printf("(MB = 1e6 bytes; \"strata vs it\": strata's MB/s over that tool's)\n");
  return 0;
}
