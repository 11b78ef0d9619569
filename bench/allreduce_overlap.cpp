// strata-bench allreduce_overlap: how much of an async allreduce hides behind
// compute, for the three ways an MPI_Iallreduce can make progress here (Open MPI
// 4.1 has no asynchronous progress of its own):
//   wait    start, compute, wait: the library advances only inside wait()
//   poll    compute in ~1 ms slices, calling handle->test() between slices
//   thread  STRATA_MPI_PROGRESS_THREAD: a thread polls every active request
// hidden = (t_comm + t_compute - t_overlapped) / min(t_comm, t_compute); 1.0 is full overlap.
//   mpirun -np 2 build/bin/strata-bench allreduce_overlap [--size 64M] [--reps 5]
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

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double slowest(double t) {
  double w = 0;
  MPI_Allreduce(&t, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return w;
}

// One compute slice: a saxpy pass over a 4 MB working set (about 1 ms here).
void compute_slice(std::vector<float>& x, float a) {
  for (float& v : x) v = v * a + 1e-3f;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

STRATA_BENCH(allreduce_overlap, "async allreduce overlap with compute: wait vs poll vs progress thread") {
  using namespace strata;
  std::string size = "64M";
  int reps = 5;
  cli.app.add_option("--size", size, "Message size (4K, 64M, 1G)")->capture_default_str();
  cli.app.add_option("--reps", reps, "Repetitions per mode")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  size_t bytes = bench::parse_bytes(size);
  MpiOptions base = MpiOptions::from_env();
  base.progress_thread = false;
  MpiOptions threaded = base;
  threaded.progress_thread = true;
  MpiCommunicator plain(base), progressed(threaded);
  size_t count = bytes / 4;
  std::vector<float> buf(count, 0.0f), work(1 << 20, 1.0f);

  // Calibrate: compute slices to match one blocking allreduce.
  plain.allreduce(buf.data(), count, DType::f32, ReduceOp::sum);
  std::vector<double> tc;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = Clock::now();
    plain.allreduce(buf.data(), count, DType::f32, ReduceOp::sum);
    tc.push_back(slowest(seconds_since(t0)));
  }
  double t_comm = median(tc);
  auto t0 = Clock::now();
  int probe = 50;
  for (int i = 0; i < probe; ++i) compute_slice(work, 0.999f);
  double slice = slowest(seconds_since(t0)) / probe;
  int slices = std::max(1, static_cast<int>(t_comm / slice));

  auto run = [&](MpiCommunicator& c, bool poll) {
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto s = Clock::now();
      auto h = c.allreduce_async(buf.data(), count, DType::f32, ReduceOp::sum);
      for (int i = 0; i < slices; ++i) {
        compute_slice(work, 0.999f);
        if (poll) h->test();
      }
      h->wait();
      v.push_back(slowest(seconds_since(s)));
    }
    return median(v);
  };
  std::vector<double> tp;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto s = Clock::now();
    for (int i = 0; i < slices; ++i) compute_slice(work, 0.999f);
    tp.push_back(slowest(seconds_since(s)));
  }
  double t_comp = median(tp);
  double t_wait = run(plain, false), t_poll = run(plain, true), t_thread = run(progressed, false);
  if (plain.rank() == 0) {
    std::printf("strata-bench allreduce_overlap: %d ranks, %s f32, reps %d (median)\n", plain.size(),
                bench::format_bytes(bytes).c_str(), reps);
    std::printf("allreduce alone %.1f ms, compute alone %.1f ms (%d slices of %.2f ms)\n", t_comm * 1e3,
                t_comp * 1e3, slices, slice * 1e3);
    auto row = [&](const char* m, double t) {
      std::printf("%-8s overlapped %.1f ms  hidden %.2f\n", m, t * 1e3,
                  (t_comm + t_comp - t) / std::min(t_comm, t_comp));
    };
    row("wait", t_wait);
    row("poll", t_poll);
    row("thread", t_thread);
  }
  return 0;
}
