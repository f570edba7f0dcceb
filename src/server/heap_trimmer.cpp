// The idle heap trimmer: one thread that wakes every check_interval and calls malloc_trim
// once after each stretch of work, when nothing runs.
#include "server/heap_trimmer.h"

#include <utility>

#include "core/host_memory.h"

namespace gs::server {

HeapTrimmer::HeapTrimmer(std::function<uint64_t()> activity, std::function<bool()> idle, HeapTrimOptions options,
                         std::function<void()> trim)
    : activity_(std::move(activity)),
      idle_(std::move(idle)),
      trim_(trim ? std::move(trim) : [] { release_free_heap(); }),
      options_(options) {
  if (options_.check_interval.count() > 0) {
    trimmed_at_activity_ = activity_();  // nothing to give back before any work
    thread_ = std::thread([this] { run(); });
  }
}

HeapTrimmer::~HeapTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t HeapTrimmer::trims() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trims_;
}

uint64_t HeapTrimmer::trimmed_at_activity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trimmed_at_activity_;
}

void HeapTrimmer::run() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_trim = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t trimmed_at_activity = trimmed_at_activity_;
  for (;;) {
    if (cv_.wait_for(lock, options_.check_interval, [this] { return stop_; })) return;
    lock.unlock();
    const uint64_t activity = activity_();
    bool trimmed = false;
    if (activity != trimmed_at_activity) {
      const bool overdue = options_.busy_interval.count() > 0 && Clock::now() - last_trim >= options_.busy_interval;
      if (overdue || idle_()) {
        trim_();
        trimmed_at_activity = activity;
        last_trim = Clock::now();
        trimmed = true;
      }
    }
    lock.lock();
    if (trimmed) {
      ++trims_;
      trimmed_at_activity_ = trimmed_at_activity;
    }
  }
}

}  // namespace gs::server
