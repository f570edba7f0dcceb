// Emulator stand-in for src/backend/cuda/sm90a/k_wgmma.cuh: the same descriptor encoding, and
// each wgmma step as a warpgroup-collective operation on the emulator's fibers. The 128
// threads of a warpgroup arrive with their accumulators (and A registers); the last one to
// arrive computes the product for all of them from shared memory, decoding the descriptors
// with the reading established on the H200 (tests/cuda/cuda_wgmma_test.cpp): without swizzle
// the leading byte offset is the distance between core matrices adjacent in K, the stride byte
// offset between those adjacent in M or N, for K-major and MN-major operands alike. A K-major
// core matrix is 8 rows (M or N) of 16 bytes (8 consecutive k); an MN-major one 8 rows (k) of
// 8 consecutive m or n. The accumulator layout is mma.sync's m16n8 layout repeated along N,
// warp w of the group holding rows 16 w .. 16 w + 15. The instruction is asynchronous as on
// the device (Op below: results land at wait_group); shared-memory reads outside the
// emulator's buffer abort.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include "backend/cuda/k_common.cuh"
#include "emu.h"

namespace gs::cuda::wg {

// Shared addresses are offsets into the emulator's dynamic shared memory.
inline uint32_t smem_addr(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (b < smem || b >= smem + sizeof(smem)) {
    std::fprintf(stderr, "emu: wgmma operand outside dynamic shared memory\n");
    std::abort();
  }
  return static_cast<uint32_t>(b - smem);
}
inline uint64_t smem_desc(uint32_t addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((addr >> 4) & 0x3FFF) | (static_cast<uint64_t>((lead_bytes >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((stride_bytes >> 4) & 0x3FFF) << 32);
}
inline uint64_t smem_desc_sw128(uint32_t addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return smem_desc(addr, lead_bytes, stride_bytes) | (1ull << 62);
}
inline void fence_proxy_async() {}
inline void fence() {}
template <int N>
inline void fence_operand(float (&)[N]) {}

namespace emu_detail {

struct Desc {
  uint32_t start, lead, stride;
  int swizzle;  // bits 62-63: 0 none, 1 128-byte (the only swizzle modelled)
};
inline Desc decode(uint64_t d) {
  const int sw = static_cast<int>(d >> 62);
  if (sw != 0 && sw != 1) {
    std::fprintf(stderr, "emu: wgmma swizzle mode %d is not modelled\n", sw);
    std::abort();
  }
  if (((d >> 49) & 7) != 0) {
    std::fprintf(stderr, "emu: wgmma descriptor base offset is not modelled\n");
    std::abort();
  }
  return {static_cast<uint32_t>(d & 0x3FFF) << 4, static_cast<uint32_t>((d >> 16) & 0x3FFF) << 4,
          static_cast<uint32_t>((d >> 32) & 0x3FFF) << 4, sw};
}
// The 128-byte swizzle on a shared address: the 16-byte chunk (bits 4-6) XOR the row within
// the 1024-byte pattern (bits 7-9), the pattern on 1024-byte boundaries (base offset 0).
inline uint32_t swizzle128(uint32_t at) { return at ^ (((at >> 7) & 7) << 4); }
inline float load_f16(uint32_t at) {
  if (at + 2 > sizeof(smem)) {
    std::fprintf(stderr, "emu: wgmma read past shared memory (byte %u)\n", at);
    std::abort();
  }
  uint16_t u;
  std::memcpy(&u, smem + at, 2);
  return h_lo(u);
}
// Element (r, k) of a K-major operand (r: m or n), and (k, c) of an MN-major one (c: m or n).
// Swizzled (PTX ISA canonical layouts, 128-byte swizzle): K-major rows of 128 bytes, 8-row
// groups `stride` apart, k along the row from the start address; MN-major rows (k) of 128
// bytes, 64-column blocks `lead` apart, 8-row groups `stride` apart; then swizzle128.
inline uint32_t k_major_at(const Desc& d, int r, int k) {
  if (d.swizzle) return swizzle128(d.start + (r / 8) * d.stride + (r % 8) * 128 + k * 2);
  return d.start + (k / 8) * d.lead + (r / 8) * d.stride + (r % 8) * 16 + (k % 8) * 2;
}
inline uint32_t mn_major_at(const Desc& d, int k, int c) {
  if (d.swizzle) return swizzle128(d.start + (c / 64) * d.lead + (k / 8) * d.stride + (k % 8) * 128 + (c % 64) * 2);
  return d.start + (k / 8) * d.lead + (c / 8) * d.stride + (k % 8) * 16 + (c % 8) * 2;
}
inline float k_major(const Desc& d, int r, int k) { return load_f16(k_major_at(d, r, k)); }
inline float mn_major(const Desc& d, int k, int c) { return load_f16(mn_major_at(d, k, c)); }

// One wgmma of a warpgroup, from issue to landing. The instruction is asynchronous: its
// accumulators hold NaN from issue until a wait_group lands it, so a read before the wait
// shows. Its shared-memory operands are read at the opposite time to cp.async's landing: in
// the emulator's eager mode (cp.async lands at issue) at the wgmma's landing, so a buffer that
// a copy refills while the wgmma is in flight shows; in lazy mode (cp.async lands at the
// issuing thread's wait) at the wgmma's issue, so an operand whose copy was not waited for
// before the issue shows (NaN).
struct Op {
  int N = 0;                       // columns; each thread holds N / 2 accumulators
  float* acc[128] = {};            // each thread's accumulator registers
  std::vector<float> c;            // [128][N / 2]: C at issue (a chain's first op)
  bool chained = false;            // an earlier op in flight has the same accumulators
  uint64_t desc_a = 0, desc_b = 0;
  bool a_in_regs = false, trans_b = false, accumulate = false;
  uint32_t a[128][4] = {};
  std::vector<float> result;       // [128][N / 2], empty until computed
  int group = -1;                  // commit group (-1: not committed yet)
  std::vector<uint64_t> reads;     // the 16-byte chunks of shared memory its operands read (bits)
};

// Marks in op.reads every 16-byte chunk its shared-memory operands read.
inline void mark_reads(Op& op) {
  op.reads.assign(sizeof(smem) / 16 / 64, 0);
  auto mark = [&](uint32_t at) {
    if (at / 16 / 64 < op.reads.size()) op.reads[at / 16 / 64] |= 1ull << ((at / 16) % 64);
  };
  const Desc da = decode(op.desc_a), db = decode(op.desc_b);
  if (!op.a_in_regs)
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) mark(k_major_at(da, m, k));
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < op.N; ++c) mark(op.trans_b ? mn_major_at(db, k, c) : k_major_at(db, c, k));
}

// A warpgroup's state: a rendezvous for its collective instructions, the deposits of one
// instruction, and its wgmmas in flight.
struct Group {
  int count = 0, gen = 0;
  float* acc_in[128] = {};
  uint32_t a_in[128][4] = {};
  std::deque<Op> ops;
  int committed = 0;
};
// A block that ends with a wgmma in flight is an error (its results would land nowhere); the
// next block starts with no state.
inline void block_start(Group* g, int n) {
  for (int i = 0; i < n; ++i) {
    if (!g[i].ops.empty()) {
      std::fprintf(stderr, "emu: a block ended with %zu wgmma in flight (warpgroup %d)\n", g[i].ops.size(), i);
      std::abort();
    }
    g[i] = Group{};
  }
}
inline Group* groups() {
  static Group g[32];
  return g;
}
// emu::State::landing_check: a copy that lands in a chunk an issued wgmma still reads (not
// yet landed by a wait) races with it on the device, whichever mode the emulator runs in.
inline void check_landing(const void* dst, size_t bytes) {
  const auto* d = static_cast<const uint8_t*>(dst);
  if (d < smem || d >= smem + sizeof(smem) || bytes == 0) return;
  const size_t lo = static_cast<size_t>(d - smem) / 16, hi = (static_cast<size_t>(d - smem) + bytes - 1) / 16;
  for (int w = 0; w < 32; ++w)
    for (const Op& op : groups()[w].ops)
      for (size_t ch = lo; ch <= hi; ++ch)
        if (ch / 64 < op.reads.size() && ((op.reads[ch / 64] >> (ch % 64)) & 1u)) {
          std::fprintf(stderr, "emu: a copy lands in shared byte %zu, which a wgmma of warpgroup %d in flight reads\n",
                       ch * 16, w);
          std::abort();
        }
}
inline Group& group() {
  static const bool hooked = [] {
    ::emu::st().block_start_hooks.push_back([] { block_start(groups(), 32); });
    ::emu::st().landing_check = &check_landing;
    return true;
  }();
  (void)hooked;
  return groups()[::emu::st().tid / 128];
}
// Every thread of the warpgroup arrives; the last one runs f, then all go on.
template <class F>
inline void collective(Group& G, F f) {
  const int gen = G.gen;
  if (++G.count < 128) {
    while (G.gen == gen) ::emu::yield();
    return;
  }
  f();
  G.count = 0;
  ++G.gen;
}

inline void compute(Group& G, Op& op) {
  const int N = op.N, n = N / 2;
  const Op* src = nullptr;  // the chain's previous op (computed before this one)
  if (op.chained)
    for (const Op& o : G.ops) {
      if (&o == &op) break;
      if (o.acc[0] == op.acc[0]) src = &o;
    }
  std::vector<float> A(64 * 16), B(16 * static_cast<size_t>(N));
  const Desc da = decode(op.desc_a), db = decode(op.desc_b);
  if (op.a_in_regs) {
    for (int th = 0; th < 128; ++th) {
      const int w = th / 32, g = (th % 32) / 4, t = th % 4, r = 16 * w + g;
      const uint32_t* v = op.a[th];
      const int at[4][2] = {{r, 2 * t}, {r + 8, 2 * t}, {r, 2 * t + 8}, {r + 8, 2 * t + 8}};
      for (int q = 0; q < 4; ++q) {
        A[static_cast<size_t>(at[q][0] * 16 + at[q][1])] = h_lo(v[q]);
        A[static_cast<size_t>(at[q][0] * 16 + at[q][1] + 1)] = h_hi(v[q]);
      }
    }
  } else {
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) A[static_cast<size_t>(m * 16 + k)] = k_major(da, m, k);
  }
  for (int k = 0; k < 16; ++k)
    for (int c = 0; c < N; ++c) B[static_cast<size_t>(k * N + c)] = op.trans_b ? mn_major(db, k, c) : k_major(db, c, k);
  op.result.assign(static_cast<size_t>(128 * n), 0.f);
  for (int th = 0; th < 128; ++th) {
    const int w = th / 32, g = (th % 32) / 4, t = th % 4;
    for (int jb = 0; jb < N / 8; ++jb)
      for (int e = 0; e < 4; ++e) {
        const int r = 16 * w + g + (e >= 2 ? 8 : 0), c = 8 * jb + 2 * t + (e & 1), i = 4 * jb + e;
        float sum = 0.f;
        for (int k = 0; k < 16; ++k) sum += A[static_cast<size_t>(r * 16 + k)] * B[static_cast<size_t>(k * N + c)];
        const float prev = src ? src->result[static_cast<size_t>(th * n + i)] : op.c[static_cast<size_t>(th * n + i)];
        op.result[static_cast<size_t>(th * n + i)] = (op.accumulate ? prev : 0.f) + sum;
      }
  }
}

// d (+)= A B, m64 nN k16, issued for the calling thread's whole warpgroup.
template <int N>
inline void mma(float* d, const uint32_t* a_regs, uint64_t desc_a, bool a_in_regs, uint64_t desc_b, bool trans_b,
                bool accumulate) {
  Group& G = group();
  const int me = ::emu::st().tid % 128;
  G.acc_in[me] = d;
  if (a_in_regs)
    for (int i = 0; i < 4; ++i) G.a_in[me][i] = a_regs[i];
  collective(G, [&] {
    Op op;
    op.N = N;
    for (int th = 0; th < 128; ++th) op.acc[th] = G.acc_in[th];
    for (const Op& o : G.ops) op.chained = op.chained || o.acc[0] == op.acc[0];
    if (!op.chained) {
      op.c.resize(static_cast<size_t>(128 * (N / 2)));
      for (int th = 0; th < 128; ++th)
        for (int i = 0; i < N / 2; ++i) op.c[static_cast<size_t>(th * (N / 2) + i)] = op.acc[th][i];
    }
    op.desc_a = desc_a;
    op.desc_b = desc_b;
    op.a_in_regs = a_in_regs;
    op.trans_b = trans_b;
    op.accumulate = accumulate;
    std::memcpy(op.a, G.a_in, sizeof op.a);
    mark_reads(op);
    G.ops.push_back(std::move(op));
    if (::emu::st().lazy) compute(G, G.ops.back());
    for (int th = 0; th < 128; ++th)
      for (int i = 0; i < N / 2; ++i) G.ops.back().acc[th][i] = NAN;  // in flight
  });
}

}  // namespace emu_detail

inline void commit() {
  emu_detail::Group& G = emu_detail::group();
  emu_detail::collective(G, [&] {
    ++G.committed;
    for (auto& op : G.ops)
      if (op.group < 0) op.group = G.committed;
  });
}
// Lands every committed group but the N most recent, in issue order.
template <int N>
inline void wait() {
  emu_detail::Group& G = emu_detail::group();
  emu_detail::collective(G, [&] {
    while (!G.ops.empty() && G.ops.front().group >= 0 && G.ops.front().group <= G.committed - N) {
      emu_detail::Op& op = G.ops.front();
      if (op.result.empty()) emu_detail::compute(G, op);
      const int n = op.N / 2;
      bool later = false;  // a later op in flight on the same accumulators keeps them NaN
      for (size_t k = 1; k < G.ops.size(); ++k) later = later || G.ops[k].acc[0] == op.acc[0];
      for (int th = 0; th < 128; ++th)
        for (int i = 0; i < n; ++i) op.acc[th][i] = later ? NAN : op.result[static_cast<size_t>(th * n + i)];
      if (later)  // the next op of the chain takes this result as its C
        for (size_t k = 1; k < G.ops.size(); ++k)
          if (G.ops[k].acc[0] == op.acc[0] && G.ops[k].chained && G.ops[k].c.empty()) {
            G.ops[k].c = op.result;
            G.ops[k].chained = false;
            break;
          }
      G.ops.pop_front();
    }
  });
}

template <int TransB>
inline void mma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  emu_detail::mma<64>(d, nullptr, desc_a, false, desc_b, TransB != 0, accumulate);
}
template <int TransB>
inline void mma_m64n32k16_ss(float (&d)[16], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  emu_detail::mma<32>(d, nullptr, desc_a, false, desc_b, TransB != 0, accumulate);
}
template <int TransB>
inline void mma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b, bool accumulate) {
  emu_detail::mma<64>(d, a, 0, true, desc_b, TransB != 0, accumulate);
}
template <int TransB>
inline void mma_m64n256k16_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc_b, bool accumulate) {
  emu_detail::mma<256>(d, a, 0, true, desc_b, TransB != 0, accumulate);
}

}  // namespace gs::cuda::wg
