// allreduce_async: MPI_Iallreduce into the caller's buffer (or an FP32 staging
// buffer owned by the handle for f16/bf16), completed by polling or by the
// progress engine's thread. The watchdog ticket lives until the handle completes.
#include "distributed/mpi_async.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "distributed/mpi_communicator.h"
#include "distributed/mpi_detail.h"

namespace strata {
using namespace mpi_detail;

MpiProgressEngine::MpiProgressEngine() : thread_([this] { run(); }) {}

MpiProgressEngine::~MpiProgressEngine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void MpiProgressEngine::add(std::shared_ptr<MpiRequestSet> set) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    active_.push_back(std::move(set));
  }
  work_.notify_one();
}

void MpiProgressEngine::wait(MpiRequestSet& set) {
  std::unique_lock<std::mutex> lk(mu_);
  done_.wait(lk, [&] { return set.done.load(); });
}

void MpiProgressEngine::run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_.wait(lk, [&] { return stop_ || !active_.empty(); });
    if (active_.empty()) return;  // stop_ with nothing left
    bool any_done = false;
    for (auto& s : active_) {
      int flag = 0;
      int err = MPI_Testall(static_cast<int>(s->reqs.size()), s->reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag || err != MPI_SUCCESS) {
        s->err = err;
        s->done = true;
        any_done = true;
      }
    }
    if (any_done) {
      std::erase_if(active_, [](const auto& s) { return s->done.load(); });
      done_.notify_all();
    }
    // Poll without monopolising a core that compute threads want.
    lk.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lk.lock();
  }
}

namespace {

class MpiAllreduceHandle final : public CommHandle {
 public:
  MpiAllreduceHandle(std::shared_ptr<CollectiveWatchdog> wd, std::shared_ptr<MpiProgressEngine> engine,
                     int rank, int size, void* data, size_t count, DType dtype, ReduceOp op, bool convert,
                     std::string what)
      : wd_(std::move(wd)),
        engine_(std::move(engine)),
        set_(std::make_shared<MpiRequestSet>()),
        rank_(rank),
        size_(size),
        data_(data),
        count_(count),
        dtype_(dtype),
        op_(op),
        convert_(convert),
        what_(std::move(what)) {
    ticket_ = wd_->begin(what_);
  }

  ~MpiAllreduceHandle() override {
    if (finished_) return;
    try {
      wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata: error completing an abandoned %s: %s\n", what_.c_str(), e.what());
    }
  }

  // Starts the requests; called once by allreduce_async.
  void start(MPI_Comm comm) {
    void* buf = data_;
    size_t esz = dtype_size(dtype_);
    MPI_Datatype type;
    MPI_Op mop = MPI_SUM;
    if (convert_) {
      f32_.resize(count_);
      half_to_f32(dtype_, data_, f32_.data(), count_);
      buf = f32_.data();
      type = MPI_FLOAT;
      esz = 4;
    } else if (is_half(dtype_)) {
      type = MPI_UINT16_T;
      mop = half_sum_op(dtype_);
    } else {
      type = mpi_type(dtype_);
    }
    for (size_t off = 0; off < count_; off += kMaxCount) {
      int n = static_cast<int>(std::min(kMaxCount, count_ - off));
      MPI_Request r;
      int err = MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(buf) + off * esz, n, type, mop, comm, &r);
      if (err != MPI_SUCCESS) {
        // Complete what was started so that no request outlives its buffer.
        MPI_Waitall(static_cast<int>(set_->reqs.size()), set_->reqs.data(), MPI_STATUSES_IGNORE);
        finished_ = true;
        wd_->end(ticket_);
        throw CommError("MPI_Iallreduce failed on rank " + std::to_string(rank_) + " (" + what_ +
                        "): " + error_string(err));
      }
      set_->reqs.push_back(r);
    }
    if (engine_) engine_->add(set_);
  }

  bool test() override {
    if (finished_) return true;
    if (engine_) {
      if (!set_->done) return false;
      finish(set_->err);
      return true;
    }
    int flag = 0;
    int err = MPI_Testall(static_cast<int>(set_->reqs.size()), set_->reqs.data(), &flag, MPI_STATUSES_IGNORE);
    if (!flag && err == MPI_SUCCESS) return false;
    finish(err);
    return true;
  }

  void wait() override {
    if (!finished_) {
      int err;
      if (engine_) {
        engine_->wait(*set_);
        err = set_->err;
      } else {
        err = MPI_Waitall(static_cast<int>(set_->reqs.size()), set_->reqs.data(), MPI_STATUSES_IGNORE);
      }
      finish(err);
    }
    if (!error_.empty()) throw CommError(error_);
  }

 private:
  void finish(int err) {
    finished_ = true;
    wd_->end(ticket_);
    if (err != MPI_SUCCESS) {
      error_ =
          "MPI_Iallreduce failed on rank " + std::to_string(rank_) + " (" + what_ + "): " + error_string(err);
      return;
    }
    void* buf = convert_ ? static_cast<void*>(f32_.data()) : data_;
    if (op_ == ReduceOp::avg && size_ > 1)
      scale_by_inverse(buf, count_, convert_ ? DType::f32 : dtype_, size_);
    if (convert_) f32_to_half(dtype_, f32_.data(), data_, count_);
  }

  std::shared_ptr<CollectiveWatchdog> wd_;
  std::shared_ptr<MpiProgressEngine> engine_;
  std::shared_ptr<MpiRequestSet> set_;
  int rank_, size_;
  void* data_;
  size_t count_;
  DType dtype_;
  ReduceOp op_;
  bool convert_;
  std::string what_;
  uint64_t ticket_ = 0;
  bool finished_ = false;
  std::string error_;
  std::vector<float> f32_;
};

class CompletedHandle final : public CommHandle {
 public:
  void wait() override {}
  bool test() override { return true; }
};

}  // namespace

std::unique_ptr<CommHandle> MpiCommunicator::allreduce_async(void* data, size_t count, DType dtype,
                                                             ReduceOp op) {
  check_thread("allreduce_async");
  if (op == ReduceOp::avg && !is_floating(dtype)) scale_by_inverse(data, 0, dtype, size_);  // throws
  if (count == 0) return std::make_unique<CompletedHandle>();
  bool convert = is_half(dtype) && !half_op_;
  auto h = std::make_unique<MpiAllreduceHandle>(watchdog_, progress_, rank_, size_, data, count, dtype, op,
                                                convert, describe("allreduce_async", count, dtype, &op));
  h->start(comm_);
  return h;
}

}  // namespace strata
