// The fuzz targets without libFuzzer: each file of a corpus directory, then
// `mutations` seeded mutations of each (byte flips, interesting values,
// truncation, duplication, splices of two inputs). Deterministic for a seed, so
// a finding reproduces; the failing input is written to fuzz-finding-<target>.
//   usage: fuzz_X CORPUS_DIR [mutations=200] [seed=1]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

Bytes mutate(const Bytes& in, const Bytes& other, std::mt19937_64& rng) {
  Bytes b = in;
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1: {  // an interesting value over 1, 2, 4 or 8 bytes
        static const uint64_t vals[] = {
            0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x8000000000000000ull, ~0ull};
        const uint64_t v = vals[rng() % std::size(vals)];
        const size_t w = size_t{1} << (rng() % 4);
        if (b.size() >= w) {
          const size_t at = pick(b.size() - w + 1);
          for (size_t i = 0; i < w; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
        }
        break;
      }
      case 2:  // truncate
        b.resize(pick(b.size() + 1));
        break;
      case 3: {  // duplicate a range
        if (b.empty()) break;
        const size_t from = pick(b.size()), len = 1 + pick(std::min<size_t>(64, b.size() - from));
        const Bytes chunk(b.begin() + static_cast<long>(from), b.begin() + static_cast<long>(from + len));
        b.insert(b.begin() + static_cast<long>(pick(b.size() + 1)), chunk.begin(), chunk.end());
        break;
      }
      case 4: {  // erase a range
        if (b.empty()) break;
        const size_t from = pick(b.size()), len = 1 + pick(std::min<size_t>(64, b.size() - from));
        b.erase(b.begin() + static_cast<long>(from), b.begin() + static_cast<long>(from + len));
        break;
      }
      case 5:  // a random byte
        if (!b.empty()) b[pick(b.size())] = static_cast<uint8_t>(rng());
        break;
      default: {  // splice: our head, the other input's tail
        const size_t cut = pick(b.size() + 1), from = pick(other.size() + 1);
        b.resize(cut);
        b.insert(b.end(), other.begin() + static_cast<long>(from), other.end());
      }
    }
  }
  return b;
}

// One line for docs/reliability.md's figures (tests/reliability/figures_lib.sh
// writes the same format), when the suite asks for them.
void record_figure(const std::string& target, long runs) {
  const char* path = std::getenv("STRATA_RELIABILITY_FIGURES");
  if (path == nullptr || *path == '\0') return;
  std::ofstream(path, std::ios::app) << "fuzz_runs\t" << target
                                     << "_replay\tcorpus inputs and seeded mutations parsed\t" << runs
                                     << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [mutations] [seed]\n", argv[0]);
    return 2;
  }
  const int mutations = argc > 2 ? std::atoi(argv[2]) : 200;
  std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files in %s\n", argv[0], argv[1]);
    return 2;
  }
  std::vector<Bytes> corpus;
  for (auto& f : files) corpus.push_back(read_file(f));
  const std::string target = std::filesystem::path(argv[0]).filename().string();
  long runs = 0;
  auto run = [&](const Bytes& b) {
    std::ofstream(std::string("fuzz-finding-") + target, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<long>(b.size()));
    LLVMFuzzerTestOneInput(b.data(), b.size());
    ++runs;
  };
  for (auto& b : corpus) run(b);
  for (size_t i = 0; i < corpus.size(); ++i)
    for (int m = 0; m < mutations; ++m) run(mutate(corpus[i], corpus[rng() % corpus.size()], rng));
  std::filesystem::remove(std::string("fuzz-finding-") + target);
  std::printf("%s: %zu corpus inputs and %ld runs, no finding\n", target.c_str(), corpus.size(), runs);
  record_figure(target, runs);
  return 0;
}
