// mpi_hello: the probe the two-"node" tests launch through scripts/netns-cluster.sh.
//
//   mpi_hello                 every rank prints one line
//                               RANK <r> SIZE <n> HOST <hostname> NETNS <inode> LOCAL_RANK <l>
//                               NODE <STRATA_NODE> CACHE <STRATA_CACHE_DIR>
//                             then an int allreduce (sum of ranks) and a 16 MB float allreduce,
//                             each checked on every rank; rank 0 prints
//                               CHECK allreduce_int ok|FAIL ...   CHECK allreduce_16MB ok|FAIL ...
//                             exit 0 only if both are right everywhere.
//   mpi_hello --loop SECONDS  allreduce 1 MB in a loop for SECONDS, rank 0 prints
//                             HEARTBEAT <iter> every 20 iterations; exit 0 at the end.
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

unsigned long netns_inode() {
  struct stat st {};
  return stat("/proc/self/ns/net", &st) == 0 ? static_cast<unsigned long>(st.st_ino) : 0UL;
}

// Every value and every partial sum is a small integer, so the float sum is exact.
float contribution(int rank, std::size_t i) { return static_cast<float>(rank + 1 + static_cast<int>(i % 7)); }

int hello(int rank, int size) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::printf("RANK %d SIZE %d HOST %s NETNS %lu LOCAL_RANK %s NODE %s CACHE %s\n", rank, size, host,
              netns_inode(), env_or("OMPI_COMM_WORLD_LOCAL_RANK", "-"), env_or("STRATA_NODE", "-"),
              env_or("STRATA_CACHE_DIR", "-"));
  std::fflush(stdout);

  // 1. one int: the sum of the ranks
  int mine = rank, sum = -1;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const int want = size * (size - 1) / 2;
  int bad_int = sum == want ? 0 : 1, any_bad_int = 0;
  MPI_Allreduce(&bad_int, &any_bad_int, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  // 2. 16 MB of floats, checked element by element on every rank
  const std::size_t n = (16u << 20) / sizeof(float);
  std::vector<float> in(n), out(n, -1.0f);
  for (std::size_t i = 0; i < n; ++i) in[i] = contribution(rank, i);
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  long bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float expect = 0.0f;
    for (int r = 0; r < size; ++r) expect += contribution(r, i);
    if (out[i] != expect) ++bad;
  }
  long total_bad = 0;
  MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

  if (rank == 0) {
    if (any_bad_int == 0)
      std::printf("CHECK allreduce_int ok (sum %d)\n", sum);
    else
      std::printf("CHECK allreduce_int FAIL (rank 0 got %d, want %d)\n", sum, want);
    if (total_bad == 0)
      std::printf("CHECK allreduce_16MB ok (%zu floats)\n", n);
    else
      std::printf("CHECK allreduce_16MB FAIL (%ld bad elements over all ranks)\n", total_bad);
    std::fflush(stdout);
  }
  return any_bad_int == 0 && total_bad == 0 ? 0 : 1;
}

int loop(int rank, double seconds) {
  const std::size_t n = (1u << 20) / sizeof(float);
  std::vector<float> in(n, 1.0f), out(n);
  const auto t0 = std::chrono::steady_clock::now();
  long iter = 0;
  while (true) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int stop = el >= seconds ? 1 : 0, any_stop = 0;
    MPI_Allreduce(&stop, &any_stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // all ranks stop together
    if (any_stop != 0) break;
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && ++iter % 20 == 0) {
      std::printf("HEARTBEAT %ld t=%.2f\n", iter, el);
      std::fflush(stdout);
    }
  }
  if (rank == 0) std::printf("LOOP done after %ld iterations\n", iter);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  if (argc >= 3 && std::strcmp(argv[1], "--loop") == 0)
    rc = loop(rank, std::atof(argv[2]));
  else
    rc = hello(rank, size);
  MPI_Finalize();
  return rc;
}
