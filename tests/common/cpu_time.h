// This thread's CPU time, for tests that bound how work grows (time while the thread is
// preempted on a loaded machine does not count: a full ctest -j2 beside other builds once took
// a wall-clock bound past its limit).
#pragma once

#include <time.h>

#include <algorithm>
#include <functional>

namespace gs::test {

// Seconds of CPU time this thread has used.
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The fastest of `runs` runs of `body`, in this thread's CPU seconds.
inline double fastest_cpu_seconds(const std::function<void()>& body, int runs = 3) {
  double best = 1e9;
  for (int r = 0; r < runs; ++r) {
    const double t0 = thread_cpu_seconds();
    body();
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return best;
}

}  // namespace gs::test
