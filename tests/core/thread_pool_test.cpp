// ThreadPool::parallel_for: covers every index once, with any thread count and chunk size.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace gs {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      for (int64_t min_chunk : {1, 16, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, [&](int64_t b, int64_t e, int t) {
          EXPECT_GE(t, 0);
          EXPECT_LT(t, threads);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        }, min_chunk);
        for (auto& h : hits) EXPECT_EQ(h.load(), 1);
      }
    }
  }
}

// `--threads 100000000` once started threads until the system refused one, and the
// std::system_error escaped the constructor (abort).
TEST(ThreadPool, AbsurdThreadCountsAreCapped) {
  ThreadPool pool(100000000);
  EXPECT_GE(pool.n_threads(), 1);
  EXPECT_LE(pool.n_threads(), ThreadPool::kMaxThreads);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100000, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), int64_t{100000} * 99999 / 2);
}

TEST(ThreadPool, ManyCallsInARow) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int r = 0; r < 500; ++r) {
    pool.parallel_for(64, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
  }
  EXPECT_EQ(sum.load(), 500 * (63 * 64 / 2));
}

}  // namespace
}  // namespace gs
