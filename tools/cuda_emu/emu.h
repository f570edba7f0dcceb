// A CPU emulator for running CUDA kernels of this repository without a GPU (a development
// aid: tools/cuda_emu/README.md). Every thread of a block is a cooperative fiber (ucontext);
// __syncthreads and the warp-collective operations (shuffles, votes, ldmatrix, mma) are
// rendezvous points where a fiber yields until its block or warp has arrived. Blocks run one
// after another. cp.async copies either land at once ("eager": a buffer overwritten while
// other warps still read it shows up) or only when the issuing thread waits for their group
// ("lazy": data used before it has landed shows up).
#pragma once

#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace emu {

struct Dim {
  unsigned x = 0, y = 0, z = 0;
};

struct Fiber {
  ucontext_t ctx{};
  std::vector<char> stack;
  bool done = false;
};

struct Copy {
  void* dst;
  const void* src;
  int src_bytes;
};

struct State {
  Dim block_idx, grid_dim, block_dim;
  int tid = 0;
  int n = 0;
  std::vector<Fiber> fibers;
  ucontext_t main_ctx{};
  std::function<void()> body;
  // Block barrier.
  int bar_count = 0;
  int bar_gen = 0;
  // Named barriers 1..15 (bar.sync id, count): arrivals and generation of each.
  int nbar_count[16] = {};
  int nbar_gen[16] = {};
  // Warp rendezvous: per warp a counter, a generation and 32 lanes of 64 bytes.
  struct Warp {
    int count = 0;
    int gen = 0;
    alignas(16) uint8_t slot[32][64];
  };
  std::vector<Warp> warps;
  // cp.async: per thread, committed groups and the open one.
  std::vector<std::vector<std::vector<Copy>>> groups;
  std::vector<std::vector<Copy>> open;
  bool lazy = false;
  uint64_t spins = 0;
  // Bulk copies not yet landed (lazy mode), with the mbarrier each completes on.
  struct BulkCopy {
    void* dst;
    const void* src;
    uint32_t bytes;
    uint64_t* bar;
  };
  std::vector<BulkCopy> bulk;
  bool reverse_blocks = false;  // run the grid's blocks from the last to the first
  // Random fiber order: yield() switches to a fiber drawn at random (xorshift64) instead of
  // the next one, so one warp can run far ahead of another, e.g. of the producer warp.
  bool random_order = false;
  uint64_t rng = 0x2545F4914F6CDD1Dull;
  // Called before each block runs (a stand-in's per-block state, e.g. wgmmas in flight).
  std::vector<void (*)()> block_start_hooks;
  // Called as a copy lands (cp.async, bulk and tensor copies) with its destination: a
  // stand-in aborts where the bytes are read by an asynchronous reader still in flight, a
  // race on the device whatever the order (sm90a/k_wgmma.cuh: wgmma operands).
  void (*landing_check)(const void* dst, size_t bytes) = nullptr;
};

inline State& st() {
  static State s;
  return s;
}

inline void yield() {
  State& s = st();
  if (++s.spins > 4000000000ull) {
    std::fprintf(stderr, "emu: no progress (deadlock?) in block (%u, %u, %u)\n", s.block_idx.x, s.block_idx.y,
                 s.block_idx.z);
    std::abort();
  }
  const int cur = s.tid;
  int next = cur;
  int start = cur + 1;
  if (s.random_order) {
    s.rng ^= s.rng << 13;
    s.rng ^= s.rng >> 7;
    s.rng ^= s.rng << 17;
    start = static_cast<int>(s.rng % static_cast<uint64_t>(s.n));
  }
  for (int k = 0; k < s.n; ++k) {
    const int c = (start + k) % s.n;
    if (c != cur && !s.fibers[static_cast<size_t>(c)].done) {
      next = c;
      break;
    }
  }
  if (next == cur) return;
  s.tid = next;
  swapcontext(&s.fibers[static_cast<size_t>(cur)].ctx, &s.fibers[static_cast<size_t>(next)].ctx);
  s.tid = cur;
}

inline void block_sync() {
  State& s = st();
  const int gen = s.bar_gen;
  if (++s.bar_count == s.n) {
    s.bar_count = 0;
    ++s.bar_gen;
    return;
  }
  while (s.bar_gen == gen) yield();
}

// bar.sync id, n: the calling thread waits until n threads have arrived at barrier id.
inline void named_sync(int id, int n) {
  State& s = st();
  if (id < 1 || id > 15 || n <= 0 || n % 32 != 0 || n > s.n) {
    std::fprintf(stderr, "emu: bad named barrier %d of %d threads (block of %d)\n", id, n, s.n);
    std::abort();
  }
  const int gen = s.nbar_gen[id];
  if (++s.nbar_count[id] == n) {
    s.nbar_count[id] = 0;
    ++s.nbar_gen[id];
    return;
  }
  while (s.nbar_gen[id] == gen) yield();
}

inline void warp_sync() {
  State& s = st();
  State::Warp& w = s.warps[static_cast<size_t>(s.tid / 32)];
  const int gen = w.gen;
  if (++w.count == 32) {
    w.count = 0;
    ++w.gen;
    return;
  }
  while (w.gen == gen) yield();
}

// Every lane deposits `in`, then computes its result from all 32 deposits.
template <class In, class F>
auto warp_collective(const In& in, F f) {
  static_assert(sizeof(In) <= 64, "slot size");
  State& s = st();
  const int lane = s.tid & 31;
  State::Warp& w = s.warps[static_cast<size_t>(s.tid / 32)];
  std::memcpy(w.slot[lane], &in, sizeof(In));
  warp_sync();
  const In* all = reinterpret_cast<const In*>(&w.slot[0][0]);  // stride 64 bytes
  auto lane_in = [&](int l) -> In {
    In v;
    std::memcpy(&v, w.slot[l], sizeof(In));
    return v;
  };
  (void)all;
  auto r = f(lane, lane_in);
  warp_sync();
  return r;
}

inline void do_copy(const Copy& c) {
  if (st().landing_check) st().landing_check(c.dst, 16);
  if (c.src_bytes > 0) std::memcpy(c.dst, c.src, static_cast<size_t>(c.src_bytes));
  if (c.src_bytes < 16) std::memset(static_cast<uint8_t*>(c.dst) + c.src_bytes, 0, static_cast<size_t>(16 - c.src_bytes));
}

inline void cp_async(void* dst, const void* src, int src_bytes) {
  State& s = st();
  const Copy c{dst, src, src_bytes};
  if (!s.lazy) do_copy(c);
  else s.open[static_cast<size_t>(s.tid)].push_back(c);
}
inline void cp_commit() {
  State& s = st();
  auto& open = s.open[static_cast<size_t>(s.tid)];
  s.groups[static_cast<size_t>(s.tid)].push_back(open);
  open.clear();
}
inline void cp_wait(int n) {
  State& s = st();
  auto& g = s.groups[static_cast<size_t>(s.tid)];
  while (static_cast<int>(g.size()) > n) {
    for (const Copy& c : g.front()) do_copy(c);
    g.erase(g.begin());
  }
}

inline void fiber_entry() {
  State& s = st();
  s.body();
  s.fibers[static_cast<size_t>(s.tid)].done = true;
  // Pending lazy copies of a finished thread land now (a kernel that never waits).
  for (auto& grp : s.groups[static_cast<size_t>(s.tid)])
    for (const Copy& c : grp) do_copy(c);
  for (const Copy& c : s.open[static_cast<size_t>(s.tid)]) do_copy(c);
  for (int k = 1; k <= s.n; ++k) {
    const int c = (s.tid + k) % s.n;
    if (!s.fibers[static_cast<size_t>(c)].done) {
      s.tid = c;
      setcontext(&s.fibers[static_cast<size_t>(c)].ctx);
    }
  }
  setcontext(&s.main_ctx);
}

// Runs body() as `threads` fibers of block `b`.
inline void run_block(Dim b, int threads, const std::function<void()>& body) {
  State& s = st();
  for (auto* hook : s.block_start_hooks) hook();
  s.block_idx = b;
  s.n = threads;
  s.block_dim = Dim{static_cast<unsigned>(threads), 1, 1};
  s.body = body;
  s.bar_count = 0;
  std::memset(s.nbar_count, 0, sizeof(s.nbar_count));
  s.warps.assign(static_cast<size_t>((threads + 31) / 32), State::Warp{});
  s.groups.assign(static_cast<size_t>(threads), {});
  s.bulk.clear();
  s.open.assign(static_cast<size_t>(threads), {});
  s.fibers.resize(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    Fiber& f = s.fibers[static_cast<size_t>(i)];
    f.done = false;
    f.stack.resize(512 * 1024);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.data();
    f.ctx.uc_stack.ss_size = f.stack.size();
    f.ctx.uc_link = &s.main_ctx;
    makecontext(&f.ctx, fiber_entry, 0);
  }
  s.tid = 0;
  swapcontext(&s.main_ctx, &s.fibers[0].ctx);
  if ((threads % 32) != 0) {
    std::fprintf(stderr, "emu: block of %d threads (whole warps only)\n", threads);
    std::abort();
  }
}

inline Dim thread_idx() { return Dim{static_cast<unsigned>(st().tid), 0, 0}; }

}  // namespace emu
