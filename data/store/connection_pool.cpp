// CurlHandlePool. Fork safety comes from pthread_atfork: the pool's lock is
// held across fork() (so a child never inherits it locked by a thread that does
// not exist there), and the child sets its inherited handles aside.
#include "data/store/connection_pool.h"

#include <pthread.h>

#include "base/error.h"

namespace strata::data {
namespace {
CurlHandlePool* the_pool = nullptr;
}

CurlHandlePool& CurlHandlePool::process() {
  static std::once_flag once;
  std::call_once(once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    the_pool = new CurlHandlePool;
    pthread_atfork([] { the_pool->mu_.lock(); }, [] { the_pool->mu_.unlock(); },
                   [] {
                     CurlHandlePool& p = *the_pool;
                     p.inherited_.insert(p.inherited_.end(), p.idle_.begin(), p.idle_.end());
                     p.idle_.clear();
                     p.mu_.unlock();
                   });
  });
  return *the_pool;
}

CurlHandlePool::CurlHandlePool() = default;

CurlHandlePool::Lease CurlHandlePool::borrow() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      CURL* c = idle_.back();
      idle_.pop_back();
      return Lease(*this, c);
    }
  }
  CURL* c = curl_easy_init();
  if (!c) throw RemoteError("curl_easy_init failed (out of memory?)", 0, "");
  return Lease(*this, c);
}

size_t CurlHandlePool::idle_handles() {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

void CurlHandlePool::give_back(CURL* curl) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(curl);
}

CurlHandlePool::Lease::~Lease() { pool_.give_back(curl_); }

}  // namespace strata::data
