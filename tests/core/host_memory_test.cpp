// Host memory counters read from /proc/self/status and malloc, and glibc's trim.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/host_memory.h"

namespace gs {
namespace {

TEST(HostMemory, ReadsTheProcessCounters) {
  const HostMemory m = read_host_memory();
  EXPECT_GT(m.resident_bytes, 0u);
  EXPECT_GT(m.resident_anon_bytes, 0u);
  EXPECT_LE(m.resident_anon_bytes, m.resident_bytes);
  EXPECT_GE(m.threads, 1);
#if defined(__GLIBC__)
  EXPECT_TRUE(m.have_malloc_counters);
  EXPECT_GT(m.malloc_in_use_bytes, 0u);
#endif
}

// Touched and freed small chunks stay resident inside the heap until a trim gives their
// pages back; release_free_heap() does.
TEST(HostMemory, ReleaseFreeHeapGivesFreedPagesBack) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "glibc malloc only";
#else
  constexpr size_t kChunks = 64 * 1024;  // 64 Ki chunks of 1 KiB: 64 MiB, below the mmap threshold
  std::vector<char*> chunks(kChunks);
  for (auto& c : chunks) {
    c = static_cast<char*>(std::malloc(1024));
    std::memset(c, 1, 1024);
  }
  // Free all but every 256th chunk: the heap's top cannot shrink past the survivors.
  for (size_t i = 0; i < kChunks; ++i) {
    if (i % 256 != 255) {
      std::free(chunks[i]);
      chunks[i] = nullptr;
    }
  }
  const uint64_t before = read_host_memory().resident_anon_bytes;
  EXPECT_TRUE(release_free_heap());
  const uint64_t after = read_host_memory().resident_anon_bytes;
  EXPECT_LT(after + (32u << 20), before) << "before " << before << " after " << after;
  for (char* c : chunks) std::free(c);
#endif
}

TEST(HostMemory, ArenaLimitRefusesZero) { EXPECT_FALSE(limit_malloc_arenas(0)); }

}  // namespace
}  // namespace gs
