// A fixed pool of worker threads running parallel-for loops (the CPU backend's threading).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gs {

class ThreadPool {
 public:
  // At most this many threads; more only adds switching and memory.
  static constexpr int kMaxThreads = 1024;

  // n_threads <= 0 means std::thread::hardware_concurrency(); at most kMaxThreads, and
  // fewer when the system refuses to start more (n_threads() tells how many run).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(begin, end, thread_index) over contiguous chunks of [0, n) on all threads and
  // returns when every chunk is done. `min_chunk` bounds the work per chunk from below.
  // Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t min_chunk = 1);

 private:
  void worker(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::mutex call_mu_;  // serialises parallel_for callers
};

}  // namespace gs
