// The idle heap trimmer: trims once after each stretch of work, only when idle (or when a
// load never idles, after busy_interval), never before any work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/heap_trimmer.h"

namespace gs::server {
namespace {

using namespace std::chrono_literals;

struct Fake {
  std::atomic<uint64_t> activity{0};
  std::atomic<bool> idle{true};
  std::atomic<int> trims{0};
};

HeapTrimmer make(Fake& f, HeapTrimOptions o) {
  return HeapTrimmer([&f] { return f.activity.load(); }, [&f] { return f.idle.load(); }, o, [&f] { ++f.trims; });
}

// Waits up to 5 s for `n` trims.
bool wait_trims(const Fake& f, int n) {
  for (int i = 0; i < 500 && f.trims.load() < n; ++i) std::this_thread::sleep_for(10ms);
  return f.trims.load() >= n;
}

// Waits up to 5 s for the trimmer to count `n` trims (it counts each just after the trim
// callback returns, so the fake's count can run ahead for a moment).
bool wait_counted(const HeapTrimmer& t, uint64_t n) {
  for (int i = 0; i < 500 && t.trims() < n; ++i) std::this_thread::sleep_for(10ms);
  return t.trims() >= n;
}

TEST(HeapTrimmer, TrimsOnceAfterWorkWhenIdle) {
  Fake f;
  HeapTrimOptions o;
  o.check_interval = 5ms;
  o.busy_interval = 0ms;
  f.activity = 3;  // work before the start is not the trimmer's
  HeapTrimmer t = make(f, o);
  EXPECT_EQ(t.trimmed_at_activity(), 3u);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(f.trims.load(), 0) << "no work yet: nothing to give back";
  f.activity = 4;
  ASSERT_TRUE(wait_trims(f, 1));
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(f.trims.load(), 1) << "one trim per stretch of work";
  EXPECT_EQ(t.trims(), 1u);
  EXPECT_EQ(t.trimmed_at_activity(), 4u) << "the mark is the activity the trim saw";
  f.activity = 5;
  ASSERT_TRUE(wait_counted(t, 2));
  EXPECT_EQ(f.trims.load(), 2);
  EXPECT_EQ(t.trimmed_at_activity(), 5u);
}

TEST(HeapTrimmer, WaitsWhileBusy) {
  Fake f;
  HeapTrimOptions o;
  o.check_interval = 5ms;
  o.busy_interval = 0ms;
  HeapTrimmer t = make(f, o);
  f.idle = false;
  f.activity = 5;
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(f.trims.load(), 0) << "busy: no trim";
  f.idle = true;
  ASSERT_TRUE(wait_trims(f, 1));
}

TEST(HeapTrimmer, TrimsUnderLoadThatNeverIdles) {
  Fake f;
  HeapTrimOptions o;
  o.check_interval = 5ms;
  o.busy_interval = 40ms;
  HeapTrimmer t = make(f, o);
  f.idle = false;
  std::thread worker([&f] {
    for (int i = 0; i < 40; ++i) {
      ++f.activity;
      std::this_thread::sleep_for(5ms);
    }
  });
  worker.join();
  EXPECT_GE(f.trims.load(), 1) << "200 ms of work with busy_interval 40 ms";
  EXPECT_LE(f.trims.load(), 6);
}

TEST(HeapTrimmer, ZeroIntervalMeansNoThread) {
  Fake f;
  HeapTrimOptions o;
  o.check_interval = 0ms;
  HeapTrimmer t = make(f, o);
  f.activity = 1;
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(f.trims.load(), 0);
}

}  // namespace
}  // namespace gs::server
