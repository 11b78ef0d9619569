// CurlHandlePool: the process's libcurl easy handles, lent one transfer at a
// time. A handle keeps its connection cache across transfers (curl_easy_reset
// leaves it alone), so whichever thread borrows a returned handle next reuses
// its keep-alive connection. Ranged parts run on short-lived threads: with a
// handle per thread, every part of every shard would open a new connection.
#pragma once
#include <curl/curl.h>

#include <mutex>
#include <vector>

namespace strata::data {

class CurlHandlePool {
 public:
  // One borrowed handle; returned to the pool when the lease ends.
  class Lease {
   public:
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    CURL* get() const { return curl_; }

   private:
    friend class CurlHandlePool;
    Lease(CurlHandlePool& pool, CURL* curl) : pool_(pool), curl_(curl) {}
    CurlHandlePool& pool_;
    CURL* curl_;
  };

  // The pool of this process (never destroyed: transfers on detached threads
  // may still return handles while static objects are torn down at exit).
  static CurlHandlePool& process();

  // The most recently returned handle (its connection is the likeliest to be
  // alive), or a new one. Throws RemoteError when libcurl cannot make one.
  Lease borrow();
  size_t idle_handles();

 private:
  CurlHandlePool();
  void give_back(CURL* curl);

  std::mutex mu_;
  std::vector<CURL*> idle_;
  // A forked child must not use the handles it inherited: two processes on one
  // socket interleave their requests (seen as "Received HTTP/0.9" from RGW). Nor
  // may it clean them up (that could send a TLS close on the parent's
  // connection). They are kept here, untouched, reachable for the leak checker.
  std::vector<CURL*> inherited_;
};

}  // namespace strata::data
