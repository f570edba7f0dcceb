// Gives malloc's free memory back to the kernel when the server goes idle after work
// (bug-case 64, decision 0036): glibc keeps freed chunks inside its heaps, so a server whose
// live heap stays flat still grew its resident memory request after request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace gs::server {

struct HeapTrimOptions {
  // How often the trimmer looks whether the server is idle (0: never trims, no thread).
  std::chrono::milliseconds check_interval{1000};
  // Under a load that never leaves the server idle, trim anyway once this long has passed
  // since the last trim with work done meanwhile (0: only when idle).
  std::chrono::milliseconds busy_interval{60000};
};

class HeapTrimmer {
 public:
  // `activity` returns a count that changes whenever work was done (responses sent);
  // `idle` says whether nothing runs now. Both are called on the trimmer's thread, once a
  // check. `trim` gives the memory back (default: release_free_heap() of core/host_memory.h).
  // The thread starts here; with check_interval 0 there is none and nothing is trimmed.
  HeapTrimmer(std::function<uint64_t()> activity, std::function<bool()> idle, HeapTrimOptions options,
              std::function<void()> trim = {});
  ~HeapTrimmer();  // stops and joins the thread
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // Trims done since the start (a gauge for /metrics).
  uint64_t trims() const;
  // The activity count the last trim saw (the count at the start before any trim): once it
  // equals the count after some work, a trim has run after that work.
  uint64_t trimmed_at_activity() const;

 private:
  void run();

  std::function<uint64_t()> activity_;
  std::function<bool()> idle_;
  std::function<void()> trim_;
  HeapTrimOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // under mu_
  uint64_t trims_ = 0;    // under mu_
  uint64_t trimmed_at_activity_ = 0;  // under mu_
  std::thread thread_;
};

}  // namespace gs::server
