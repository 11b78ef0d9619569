// strata-bench pingpong: the point-to-point limit of the transport the allreduce
// runs over (shared memory between local ranks, TCP between nodes), measured with
// plain MPI_Send/MPI_Recv between ranks 0 and 1 so that strata's allreduce bus
// bandwidth has a machine limit beside it. Per size: warm-up round trips, then
// `reps` repetitions of `iters` round trips; one-way time = round trip / 2, the
// median repetition is reported. Bandwidth = bytes / one-way time, which is what
// an allreduce's bus bandwidth (nccl-tests) approaches on a link of that speed.
// A second figure sends both ways at once (MPI_Sendrecv), as an allreduce does on
// 2 ranks: bytes / time of the exchange, each direction's rate while the other
// runs too, the closer limit for the allreduce's bus bandwidth. Ranks other than
// 0 and 1 wait at the barriers.
//   mpirun -np 2 build/bin/strata-bench pingpong [--min 4K] [--max 64M] [--reps 5]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench_args.h"
#include "distributed/mpi_communicator.h"
#include "registry.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

STRATA_BENCH(pingpong,
             "MPI point-to-point bandwidth between ranks 0 and 1: the transport's limit (mpirun -np 2)") {
  using namespace strata;
  std::string min_s = "4K", max_s = "64M";
  int reps = 5, warmup = 2;
  cli.app.add_option("--min", min_s, "Smallest message (4K, 64M, 1G)")->capture_default_str();
  cli.app.add_option("--max", max_s, "Largest message; sizes go up x4 from --min")->capture_default_str();
  cli.app.add_option("--reps", reps, "Timed repetitions per size (the median is reported)")
      ->capture_default_str();
  cli.app.add_option("--warmup", warmup, "Untimed round trips first")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  const size_t min_b = bench::parse_bytes(min_s), max_b = bench::parse_bytes(max_s);
  MpiCommunicator comm(MpiOptions::from_env());  // initialises MPI as every strata process does
  const int rank = comm.rank();
  if (comm.size() < 2) {
    if (rank == 0) std::fprintf(stderr, "strata-bench pingpong: needs 2 ranks (mpirun -np 2)\n");
    return 2;
  }
  const int peer = rank == 0 ? 1 : rank == 1 ? 0 : -1;
  std::vector<char> send(max_b, 1), recv(max_b, 0);
  if (rank == 0) {
    std::printf("strata-bench pingpong: plain MPI between ranks 0 and 1 of %d, reps %d (median)\n",
                comm.size(), reps);
    std::printf("%10s %6s %12s %14s %16s\n", "size", "iters", "one-way us", "one-way GB/s", "exchange GB/s");
  }
  for (size_t bytes = min_b; bytes <= max_b; bytes *= 4) {
    const int n = static_cast<int>(bytes);
    const int iters = static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 2, 200));
    auto round_trip = [&] {
      if (rank == 0) {
        MPI_Send(send.data(), n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(recv.data(), n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(recv.data(), n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(send.data(), n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    };
    auto exchange = [&] {  // both directions at once, as each step of a 2-rank ring
      if (peer >= 0)
        MPI_Sendrecv(send.data(), n, MPI_BYTE, peer, 1, recv.data(), n, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    };
    auto timed = [&](auto&& f) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) f();
      double t = std::chrono::duration<double>(Clock::now() - t0).count() / iters, worst = 0;
      MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return worst;
    };
    for (int i = 0; i < warmup; ++i) {
      round_trip();
      exchange();
    }
    std::vector<double> one_way, both;
    for (int r = 0; r < reps; ++r) {
      one_way.push_back(timed(round_trip) / 2);
      both.push_back(timed(exchange));
    }
    const double t = median(one_way), tb = median(both);
    if (rank == 0)
      std::printf("%10s %6d %12.1f %11.3f GB/s %13.3f GB/s\n", bench::format_bytes(bytes).c_str(), iters,
                  t * 1e6, bytes / t / 1e9, bytes / tb / 1e9);
    std::fflush(stdout);
  }
  if (rank == 0)
    std::printf(
        "one-way = bytes / (round trip / 2); exchange = bytes / time of a simultaneous exchange (each "
        "direction's rate)\n");
  return 0;
}
