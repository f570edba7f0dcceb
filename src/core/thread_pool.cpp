// ThreadPool: workers wait for a generation counter, run their chunk, and report back.
#include "core/thread_pool.h"

#include <algorithm>
#include <system_error>

namespace gs {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = std::min(n_threads, kMaxThreads);
  for (int i = 1; i < n_threads_; ++i) {
    try {
      workers_.emplace_back([this, i] { worker(i); });
    } catch (const std::system_error&) {
      // The system gave no more threads (limits, memory): run with those it gave.
      n_threads_ = i;
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

static void run_chunk(const std::function<void(int64_t, int64_t, int)>& fn, int64_t n, int chunks,
                      int index) {
  if (index >= chunks) return;
  const int64_t begin = n * index / chunks;
  const int64_t end = n * (index + 1) / chunks;
  if (begin < end) fn(begin, end, index);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t min_chunk) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int chunks = static_cast<int>(std::min<int64_t>(n_threads_, (n + min_chunk - 1) / min_chunk));
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  run_chunk(fn, n, chunks, 0);
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t, int)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    run_chunk(*job, n, chunks, index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

}  // namespace gs
