// strata-bench image_augment: the decode threads' work on encoded images, alone:
// decode (JPEG through TurboJPEG at the smallest DCT scale that keeps the crop at
// least S x S, PNG through libspng) + RandomResizedCrop(S, scale (0.08, 1),
// ratio (3/4, 4/3)) + horizontal flip (p = 1/2) + normalise to f32 with
// ImageNet's mean and std, through the loader's own FieldTransform::decode
// (data/loader/transforms.h, image_decode.h), into one slot of a per-thread
// batch buffer as the loader's collation does. Training normalises on the
// device; here it is done on the host so the work equals torchvision's
// ToTensor + Normalize and DALI's crop_mirror_normalize.
//
// The files (an ImageFolder: every .jpg/.jpeg/.png under --dir, sorted) are read
// into memory first; each pass runs every file once over T threads (each takes
// the next file index from a shared counter) and prints images/s and images/s
// per thread, the CPU seconds the pass used (getrusage), and a "json {...}" line for scripts
// (bench/images_vs_peers.sh). Sample i of pass p is drawn from augment_key(seed, p, i), as in the loader.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "data/loader/augment.h"
#include "data/loader/transforms.h"
#include "registry.h"

namespace {

struct Args {
  std::string dir, threads = "1,2";
  int64_t size = 224, batch = 64, warmup = 64;
  int passes = 1;
  uint64_t seed = 1;
};

std::vector<int> parse_threads(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(std::stoi(t));
  return out;
}

// user + system CPU seconds of this process so far, all threads
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return tv(u.ru_utime) + tv(u.ru_stime);
}

std::vector<std::string> image_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

STRATA_BENCH(image_augment,
             "decode + RandomResizedCrop + flip + normalise of JPEG/PNG files, images/s at T threads") {
  using namespace strata::data;
  Args a;
  cli.app.add_option("--dir", a.dir, "An ImageFolder (every .jpg/.jpeg/.png under it)")->required();
  cli.app.add_option("--threads", a.threads, "Comma-separated thread counts, one pass set each")
      ->capture_default_str();
  cli.app.add_option("--passes", a.passes, "Timed passes over all files per thread count")
      ->capture_default_str();
  cli.app.add_option("--size", a.size, "Output height and width")->capture_default_str();
  cli.app.add_option("--batch", a.batch, "Slots in each thread's batch buffer")->capture_default_str();
  cli.app.add_option("--warmup", a.warmup, "Images decoded before timing (per thread count)")
      ->capture_default_str();
  cli.app.add_option("--seed", a.seed, "Seed of the crop and flip draws")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;

  const std::vector<std::string> paths = image_files(a.dir);
  if (paths.empty()) throw std::runtime_error("no .jpg/.jpeg/.png files under " + a.dir);
  std::vector<std::vector<uint8_t>> files;
  size_t total_bytes = 0;
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    total_bytes += files.back().size();
  }
  ImageDecodeOptions dec;
  dec.size = a.size;
  dec.channels = 3;
  dec.random_crop = true;  // crop_scale (0.08, 1), crop_ratio (3/4, 4/3): torchvision's defaults
  dec.hflip = 0.5;
  NormalizeU8 norm{"image", {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  const FieldSpec bytes_field{"bytes", "u8", {}, true};
  const FieldTransform ft(bytes_field, &norm, nullptr, &dec);
  std::printf("image_augment: %zu files (%.1f MiB) from %s, out f32 [3, %lld, %lld]\n", files.size(),
              static_cast<double>(total_bytes) / (1 << 20), a.dir.c_str(), static_cast<long long>(a.size),
              static_cast<long long>(a.size));

  const auto n = static_cast<int64_t>(files.size());
  for (int T : parse_threads(a.threads)) {
    // per thread: a batch buffer of f32 images and the u8 scratch the decoder writes
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(T)), scratch(static_cast<size_t>(T));
    for (int t = 0; t < T; ++t) {
      out[static_cast<size_t>(t)].assign(static_cast<size_t>(ft.out_bytes() * a.batch), 0);
      scratch[static_cast<size_t>(t)].assign(static_cast<size_t>(ft.in_bytes()), 0);
    }
    auto run = [&](int64_t begin, int64_t end, int64_t pass) {
      std::atomic<int64_t> next{begin};
      std::vector<std::thread> pool;
      for (int t = 0; t < T; ++t)
        pool.emplace_back([&, t] {
          uint8_t* o = out[static_cast<size_t>(t)].data();
          uint8_t* s = scratch[static_cast<size_t>(t)].data();
          int64_t slot = 0;
          for (int64_t i; (i = next.fetch_add(1)) < end;) {
            const auto& f = files[static_cast<size_t>(i % n)];
            ft.decode(f.data(), f.size(), o + ft.out_bytes() * slot, augment_key(a.seed, pass, i % n), s);
            slot = (slot + 1) % a.batch;
          }
        });
      for (auto& th : pool) th.join();
    };
    run(0, std::min<int64_t>(a.warmup, n), -1);
    for (int p = 0; p < a.passes; ++p) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      run(0, n, p);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpu_seconds() - c0;
      const double ips = static_cast<double>(n) / s;
      // a checksum of the last slots, so the work cannot be elided
      double sum = 0;
      for (const auto& o : out)
        for (size_t k = 0; k < o.size(); k += 4099) sum += reinterpret_cast<const float*>(o.data())[k / 4];
      std::printf(
          "threads %d pass %d: %lld images in %.3f s (%.3f CPU s): %.1f images/s, %.1f images/s per thread, "
          "%.1f images per CPU second (sum %.3g)\n",
          T, p, static_cast<long long>(n), s, cpu, ips, ips / T, static_cast<double>(n) / cpu, sum);
      std::printf(
          "json {\"contestant\": \"strata\", \"threads\": %d, \"pass\": %d, \"images\": %lld, \"seconds\": "
          "%.4f, "
          "\"images_per_s\": %.2f, \"cpu_s\": %.3f, \"images_per_cpu_s\": %.2f}\n",
          T, p, static_cast<long long>(n), s, ips, cpu, static_cast<double>(n) / cpu);
      std::fflush(stdout);
    }
  }
  return 0;
}
