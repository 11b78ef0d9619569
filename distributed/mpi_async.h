// Internal: progress for non-blocking MPI collectives. Open MPI 4.1 makes no
// asynchronous progress on its own (ompi_info: "OMPI progress: no"), so an
// MPI_Iallreduce advances only inside MPI calls. Either the handle is polled
// (CommHandle::test, which calls MPI_Testall) or, with
// STRATA_MPI_PROGRESS_THREAD=1, this engine's thread polls every active request.
#pragma once
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

struct MpiRequestSet {
  std::vector<MPI_Request> reqs;
  std::atomic<bool> done{false};
  int err = MPI_SUCCESS;  // written before done is set
};

class MpiProgressEngine {
 public:
  MpiProgressEngine();
  ~MpiProgressEngine();
  void add(std::shared_ptr<MpiRequestSet> set);
  void wait(MpiRequestSet& set);

 private:
  void run();
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::vector<std::shared_ptr<MpiRequestSet>> active_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata
