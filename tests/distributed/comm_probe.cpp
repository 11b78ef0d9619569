// comm_probe: an MPI job the failure-test drivers launch.
//   comm_probe stall <rank> <seconds> [async]
//                                      every rank allreduces once (async: allreduce_async
//                                      + wait); <rank> first sleeps, so the others'
//                                      watchdog must end the job
//   comm_probe loop                    prints "probe rank R pid P", then allreduces
//                                      1 MiB forever with a heartbeat per second
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "distributed/mpi_communicator.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: comm_probe stall <rank> <seconds> [async] | loop\n");
    return 2;
  }
  std::string mode = argv[1];
  strata::MpiCommunicator comm;
  std::vector<float> buf(1 << 18, 1.0f);
  if (mode == "stall" && (argc == 4 || argc == 5)) {
    int who = std::atoi(argv[2]);
    bool async = argc == 5 && std::string(argv[4]) == "async";
    comm.barrier();
    if (comm.rank() == who) std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[3])));
    if (async)
      comm.allreduce_async(buf.data(), buf.size(), strata::DType::f32, strata::ReduceOp::sum)->wait();
    else
      comm.allreduce(buf.data(), buf.size(), strata::DType::f32, strata::ReduceOp::sum);
    std::printf("probe rank %d: allreduce completed\n", comm.rank());
    return 0;
  }
  if (mode == "loop") {
    std::printf("probe rank %d pid %d\n", comm.rank(), static_cast<int>(getpid()));
    std::fflush(stdout);
    auto last = std::chrono::steady_clock::now();
    for (long i = 0;; ++i) {
      comm.allreduce(buf.data(), buf.size(), strata::DType::f32, strata::ReduceOp::avg);
      auto now = std::chrono::steady_clock::now();
      if (now - last > std::chrono::seconds(1)) {
        std::printf("probe rank %d heartbeat %ld\n", comm.rank(), i);
        std::fflush(stdout);
        last = now;
      }
    }
  }
  std::fprintf(stderr, "comm_probe: bad arguments\n");
  return 2;
}
