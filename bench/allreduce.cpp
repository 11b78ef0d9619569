// strata-bench allreduce: bus bandwidth of strata's MPI allreduce beside a plain
// MPI_Allreduce loop on the same buffer in the same run (nccl-tests convention:
// busbw = 2(n-1)/n * bytes / time). Per size: warm-up iterations, then several
// repetitions, each timed as the slowest rank's mean over `iters` calls, strata
// and plain MPI interleaved (order alternating) so that drift hits both alike;
// the median repetition is reported.
//   mpirun -np 2 build/bin/strata-bench allreduce [--min 4K] [--max 256M] [--reps 7]
//          [--warmup 3] [--dtype f32|f16|bf16] [--half auto|convert|op] [--op sum|avg]
// For f16/bf16 the plain-MPI peer reduces an f32 buffer of the same element count
// (MPI has no 16-bit float type); bytes are the 16-bit payload.
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

// Mean seconds per call over `iters` calls, the slowest rank's.
template <class F>
double time_calls(int iters, F&& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  double t = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  double worst = 0;
  MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

STRATA_BENCH(allreduce, "allreduce bus bandwidth, strata vs plain MPI_Allreduce (run under mpirun)") {
  using namespace strata;
  std::string min_s = "4K", max_s = "256M", dtype_s = "f32", op = "sum", half = "auto";
  int reps = 7, warmup = 3;
  cli.app.add_option("--min", min_s, "Smallest message (4K, 64M, 1G)")->capture_default_str();
  cli.app.add_option("--max", max_s, "Largest message; sizes double from --min")->capture_default_str();
  cli.app.add_option("--reps", reps, "Timed repetitions per size (the median is reported)")
      ->capture_default_str();
  cli.app.add_option("--warmup", warmup, "Untimed repetitions first")->capture_default_str();
  cli.app.add_option("--dtype", dtype_s, "Element type (f32, f16, bf16, f64, ...)")->capture_default_str();
  cli.app.add_option("--op", op, "Reduction")->check(CLI::IsMember({"sum", "avg"}))->capture_default_str();
  cli.app
      .add_option("--half", half,
                  "fp16/bf16: reduce with an MPI user op (op), convert to f32 and back "
                  "(convert), or as MpiOptions::from_env says (auto)")
      ->check(CLI::IsMember({"auto", "convert", "op"}))
      ->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  size_t min_b = bench::parse_bytes(min_s);
  size_t max_b = bench::parse_bytes(max_s);
  DType dtype = dtype_from_name(dtype_s);
  ReduceOp rop = op == "avg" ? ReduceOp::avg : ReduceOp::sum;
  MpiOptions opts = MpiOptions::from_env();
  if (half != "auto") opts.half_reduce_op = half == "op";
  MpiCommunicator comm(opts);
  const int n = comm.size();
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (comm.rank() == 0) {
    std::printf("strata-bench allreduce: %d ranks, dtype %s, op %s%s, reps %d (median), warm-up %d\n", n,
                dtype_name(dtype), rop == ReduceOp::sum ? "sum" : "avg",
                is_half(dtype)
                    ? (comm.uses_half_op() ? ", half reduce: custom MPI_Op" : ", half reduce: convert to f32")
                    : "",
                reps, warmup);
    std::printf("%10s %6s %12s %14s %12s %14s %8s\n", "size", "iters", "strata_us", "strata_busbw", "mpi_us",
                "mpi_busbw", "ratio");
  }
  const size_t esz = dtype_size(dtype);
  std::vector<uint8_t> buf(max_b, 0);
  std::vector<float> peer(max_b / esz, 0.0f);  // f32 peer buffer (same element count)
  for (size_t bytes = min_b; bytes <= max_b; bytes *= 4) {
    size_t count = bytes / esz;
    int iters = static_cast<int>(std::clamp<size_t>((size_t{512} << 20) / bytes, 2, 200));
    auto strata_call = [&] { comm.allreduce(buf.data(), count, dtype, rop); };
    MPI_Datatype peer_type = is_half(dtype) ? MPI_FLOAT : (dtype == DType::f64 ? MPI_DOUBLE : MPI_FLOAT);
    void* peer_buf = is_half(dtype) ? static_cast<void*>(peer.data()) : static_cast<void*>(buf.data());
    auto mpi_call = [&] {
      MPI_Allreduce(MPI_IN_PLACE, peer_buf, static_cast<int>(count), peer_type, MPI_SUM, MPI_COMM_WORLD);
    };
    for (int i = 0; i < warmup; ++i) {
      strata_call();
      mpi_call();
    }
    std::vector<double> ts, tm;
    for (int r = 0; r < reps; ++r) {
      if (r % 2 == 0) {
        ts.push_back(time_calls(iters, strata_call));
        tm.push_back(time_calls(iters, mpi_call));
      } else {
        tm.push_back(time_calls(iters, mpi_call));
        ts.push_back(time_calls(iters, strata_call));
      }
    }
    double s = median(ts), m = median(tm);
    if (comm.rank() == 0)
      std::printf("%10s %6d %12.1f %11.3f GB/s %12.1f %11.3f GB/s %8.3f\n",
                  bench::format_bytes(bytes).c_str(), iters, s * 1e6, bus * bytes / s / 1e9, m * 1e6,
                  bus * bytes / m / 1e9, m / s);
    std::fflush(stdout);
  }
  if (comm.rank() == 0) std::printf("ratio = strata busbw / plain MPI busbw (1.0 = parity)\n");
  return 0;
}
