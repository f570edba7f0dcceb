// Emulator stand-in for src/backend/cuda/sm90a/k_wgmma.cuh: the same descriptor encoding, and
// each wgmma step as a warpgroup-collective operation on the emulator's fibers. The 128
// threads of a warpgroup arrive with their accumulators (and A registers); the last one to
// arrive computes the product for all of them from shared memory, decoding the descriptors
// with the reading established on the H200 (tests/cuda/cuda_wgmma_test.cpp): without swizzle
// the leading byte offset is the distance between core matrices adjacent in K, the stride byte
// offset between those adjacent in M or N, for K-major and MN-major operands alike. A K-major
// core matrix is 8 rows (M or N) of 16 bytes (8 consecutive k); an MN-major one 8 rows (k) of
// 8 consecutive m or n. The accumulator layout is mma.sync's m16n8 layout repeated along N,
// warp w of the group holding rows 16 w .. 16 w + 15. The instruction's asynchrony is not
// modelled (results land at issue); shared memory reads outside the emulator's buffer abort.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

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
inline void fence_proxy_async() {}
inline void fence() {}
inline void commit() {}
template <int N>
inline void wait() {}
template <int N>
inline void fence_operand(float (&)[N]) {}

namespace emu_detail {

struct Desc {
  uint32_t start, lead, stride;
};
inline Desc decode(uint64_t d) {
  return {static_cast<uint32_t>(d & 0x3FFF) << 4, static_cast<uint32_t>((d >> 16) & 0x3FFF) << 4,
          static_cast<uint32_t>((d >> 32) & 0x3FFF) << 4};
}
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
inline float k_major(const Desc& d, int r, int k) {
  return load_f16(d.start + (k / 8) * d.lead + (r / 8) * d.stride + (r % 8) * 16 + (k % 8) * 2);
}
inline float mn_major(const Desc& d, int k, int c) {
  return load_f16(d.start + (k / 8) * d.lead + (c / 8) * d.stride + (k % 8) * 16 + (c % 8) * 2);
}

// A warpgroup's rendezvous: each thread deposits its accumulators and A registers.
struct Group {
  int count = 0, gen = 0;
  float* acc[128];
  uint32_t a[128][4];
};
inline Group& group() {
  static Group g[32];
  return g[::emu::st().tid / 128];
}

// d (+)= A B, m64 nN k16, for the calling thread's whole warpgroup.
template <int N>
inline void mma(float* d, const uint32_t* a_regs, uint64_t desc_a, bool a_in_regs, uint64_t desc_b, bool trans_b,
                bool accumulate) {
  Group& G = group();
  const int me = ::emu::st().tid % 128;
  G.acc[me] = d;
  if (a_in_regs)
    for (int i = 0; i < 4; ++i) G.a[me][i] = a_regs[i];
  const int gen = G.gen;
  if (++G.count < 128) {
    while (G.gen == gen) ::emu::yield();
    return;
  }
  float A[64][16], B[16][N];
  const Desc da = decode(desc_a), db = decode(desc_b);
  if (a_in_regs) {
    for (int th = 0; th < 128; ++th) {
      const int w = th / 32, g = (th % 32) / 4, t = th % 4, r = 16 * w + g;
      const uint32_t* v = G.a[th];
      A[r][2 * t] = h_lo(v[0]), A[r][2 * t + 1] = h_hi(v[0]);
      A[r + 8][2 * t] = h_lo(v[1]), A[r + 8][2 * t + 1] = h_hi(v[1]);
      A[r][2 * t + 8] = h_lo(v[2]), A[r][2 * t + 9] = h_hi(v[2]);
      A[r + 8][2 * t + 8] = h_lo(v[3]), A[r + 8][2 * t + 9] = h_hi(v[3]);
    }
  } else {
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < 16; ++k) A[m][k] = k_major(da, m, k);
  }
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < N; ++n) B[k][n] = trans_b ? mn_major(db, k, n) : k_major(db, n, k);
  for (int th = 0; th < 128; ++th) {
    const int w = th / 32, g = (th % 32) / 4, t = th % 4;
    float* acc = G.acc[th];
    for (int jb = 0; jb < N / 8; ++jb)
      for (int e = 0; e < 4; ++e) {
        const int r = 16 * w + g + (e >= 2 ? 8 : 0), c = 8 * jb + 2 * t + (e & 1);
        float sum = 0.f;
        for (int k = 0; k < 16; ++k) sum += A[r][k] * B[k][c];
        acc[4 * jb + e] = (accumulate ? acc[4 * jb + e] : 0.f) + sum;
      }
  }
  G.count = 0;
  ++G.gen;
}

}  // namespace emu_detail

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
