// The building blocks of the tensor-core decode matvecs (k_matvec.cu, k_matvec_pipe.cu): the
// per-format tiles of 256 elements for 16 weight rows, their loads (16-byte, whole sectors per
// row) and the dequantize-and-mma steps. Layout and lane mapping: see k_matvec.cu's header.
#pragma once

#include <cstdint>

#include "backend/cuda/k_common.cuh"

namespace gs::cuda::mv {

constexpr uint32_t kMagic = 0x64006400u;  // f16 1024.0 in both halves: 0x64XX = 1024 + XX
__device__ __forceinline__ uint32_t h2_sub(uint32_t a, float v) {
  return h2_bits(__hsub2(bits_h2(a), __float2half2_rn(v)));
}
__device__ __forceinline__ uint32_t h2_fma(uint32_t a, __half2 s, __half2 m) {
  return h2_bits(__hfma2(bits_h2(a), s, m));
}
__device__ __forceinline__ uint32_t h2_mul(uint32_t a, __half2 s) { return h2_bits(__hmul2(bits_h2(a), s)); }

// One mma step for NT column tiles: A = (rows g, g+8) x (the 4 elements at tile offset xo).
template <int NT>
__device__ __forceinline__ void step(float (&acc)[NT][4], uint32_t r0_02, uint32_t r1_02, uint32_t r0_13,
                                     uint32_t r1_13, const uint16_t* const (&xb)[NT], const bool (&xok)[NT],
                                     int xo) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    uint2 b = make_uint2(0u, 0u);
    if (xok[ct]) b = *reinterpret_cast<const uint2*>(xb[ct] + xo);
    mma_16816(acc[ct], r0_02, r1_02, r0_13, r1_13, b.x, b.y);
  }
}

// A 16-byte weight load (zeros past the last row); pf asks L2 to fetch the surrounding 256 bytes.
__device__ __forceinline__ uint4 ld16(const uint8_t* p, bool ok, bool pf) {
  if (!ok) return make_uint4(0u, 0u, 0u, 0u);
  if (pf) {
    uint4 v;
    asm("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
  }
  return __ldg(reinterpret_cast<const uint4*>(p));
}

struct RowPtrs {
  const uint8_t* main0;
  const uint8_t* main1;
  const uint16_t* meta0;
  const uint16_t* meta1;
  bool ok0;
  bool ok1;
  bool pf;  // L2 prefetch hint on the weight loads
};

// Each format: a Raw struct holding one tile's blocks for rows g and g + 8 (loaded a tile
// ahead, so the next tile's loads are in flight while this one is computed), load(), and
// compute() feeding 16 mma steps. In every load instruction the 4 lanes of a row read 64
// contiguous bytes (whole 32-byte sectors); which elements a lane holds follows from that.
template <WFormat F>
struct Tile;

// Q4_K / Q5_K: lane t holds qs bytes [16t, 16t + 16) (chunk t/2: sub-blocks ka, ka + 1 with
// ka = 2 (t/2)) and [64 + 16t, 80 + 16t) (chunk 2 + t/2: sub-blocks ka + 4, ka + 5); byte l of
// chunk c has element 64c + l in its low nibble and 64c + 32 + l in its high nibble.
template <bool kQ5>
struct TileQK45 {
  struct Raw {
    uint4 h0, h1, qa0, qb0, qa1, qb1, e0, e1;
  };
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    constexpr int kBlock = kQ5 ? 176 : 144, kQs = kQ5 ? 48 : 16;
    const uint8_t* b0 = R.main0 + tile * kBlock;
    const uint8_t* b1 = R.main1 + tile * kBlock;
    r.h0 = ld16(b0, R.ok0, R.pf);
    r.h1 = ld16(b1, R.ok1, R.pf);
    r.qa0 = ld16(b0 + kQs + 16 * t, R.ok0, R.pf);
    r.qb0 = ld16(b0 + kQs + 64 + 16 * t, R.ok0, R.pf);
    r.qa1 = ld16(b1 + kQs + 16 * t, R.ok1, R.pf);
    r.qb1 = ld16(b1 + kQs + 64 + 16 * t, R.ok1, R.pf);
    if constexpr (kQ5) {  // qh bytes [16 (t % 2), +16): the high bits of the lane's l's
      r.e0 = ld16(b0 + 16 + 16 * (t & 1), R.ok0, R.pf);
      r.e1 = ld16(b1 + 16 + 16 * (t & 1), R.ok1, R.pf);
    }
  }
};
template <>
struct Tile<WFormat::kQ4_K> : TileQK45<false> {};
template <>
struct Tile<WFormat::kQ5_K> : TileQK45<true> {};

// Scales and negated mins (f16 pairs) of sub-blocks klo = ka + 4 half and khi = klo + 1 of a
// Q4_K/Q5_K header h (ka = 0 or 2, run-time; half compile-time). The 12 scale bytes are
// h.y (bytes 4..7), h.z (8..11), h.w (12..15): for k < 4, sc = byte(4 + k) & 63 and
// mn = byte(8 + k) & 63; for k >= 4, sc = (byte(8 + k) & 15) | (byte(k) >> 6) << 4 and
// mn = (byte(8 + k) >> 4) | (byte(4 + k) >> 6) << 4 (spec §3, get_scale_min_k4). Shifting the
// three words by 8 ka once puts both sub-blocks' bytes at bits 0..15, so no byte is selected
// by a run-time index.
__device__ __forceinline__ void k_scales2(const uint4& h, int half, int ka, __half2& s_lo, __half2& m_lo,
                                          __half2& s_hi, __half2& m_hi) {
  const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x & 0xffffu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x >> 16)));
  const int sh = 8 * ka;
  const uint32_t y = h.y >> sh, z = h.z >> sh;
  uint32_t sc_lo, sc_hi, mn_lo, mn_hi;
  if (half == 0) {
    sc_lo = y & 63u;
    sc_hi = (y >> 8) & 63u;
    mn_lo = z & 63u;
    mn_hi = (z >> 8) & 63u;
  } else {
    const uint32_t w = h.w >> sh;
    sc_lo = (w & 15u) | ((y >> 2) & 0x30u);
    sc_hi = ((w >> 8) & 15u) | ((y >> 10) & 0x30u);
    mn_lo = ((w >> 4) & 15u) | ((z >> 2) & 0x30u);
    mn_hi = ((w >> 12) & 15u) | ((z >> 10) & 0x30u);
  }
  s_lo = __float2half2_rn(d * static_cast<float>(sc_lo));
  s_hi = __float2half2_rn(d * static_cast<float>(sc_hi));
  m_lo = __float2half2_rn(-(dmin * static_cast<float>(mn_lo)));
  m_hi = __float2half2_rn(-(dmin * static_cast<float>(mn_hi)));
}

template <int NT, bool kQ5>
__device__ __forceinline__ void compute_qk45(const typename TileQK45<kQ5>::Raw& r, float (&acc)[NT][4], int t,
                                             const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
  const int ka = 2 * (t >> 1), l0 = 16 * (t & 1);
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // qa (chunk t/2), then qb (chunk 2 + t/2)
    const int klo = ka + 4 * half, khi = klo + 1;
    __half2 s_lo[2], m_lo[2], s_hi[2], m_hi[2];
    k_scales2(r.h0, half, ka, s_lo[0], m_lo[0], s_hi[0], m_hi[0]);
    k_scales2(r.h1, half, ka, s_lo[1], m_lo[1], s_hi[1], m_hi[1]);
    const uint4& q0v = half == 0 ? r.qa0 : r.qb0;
    const uint4& q1v = half == 0 ? r.qa1 : r.qb1;
    const int c = (t >> 1) + 2 * half;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q0 = u4_get(q0v, w), q1 = u4_get(q1v, w);
      uint32_t lo02_0 = q0 & 0x000F000Fu, lo13_0 = (q0 >> 8) & 0x000F000Fu;
      uint32_t hi02_0 = (q0 >> 4) & 0x000F000Fu, hi13_0 = (q0 >> 12) & 0x000F000Fu;
      uint32_t lo02_1 = q1 & 0x000F000Fu, lo13_1 = (q1 >> 8) & 0x000F000Fu;
      uint32_t hi02_1 = (q1 >> 4) & 0x000F000Fu, hi13_1 = (q1 >> 12) & 0x000F000Fu;
      if constexpr (kQ5) {
        const uint32_t e0 = u4_get(r.e0, w), e1 = u4_get(r.e1, w);
        lo02_0 |= ((e0 >> klo) & 0x00010001u) << 4;
        lo13_0 |= ((e0 >> (klo + 8)) & 0x00010001u) << 4;
        hi02_0 |= ((e0 >> khi) & 0x00010001u) << 4;
        hi13_0 |= ((e0 >> (khi + 8)) & 0x00010001u) << 4;
        lo02_1 |= ((e1 >> klo) & 0x00010001u) << 4;
        lo13_1 |= ((e1 >> (klo + 8)) & 0x00010001u) << 4;
        hi02_1 |= ((e1 >> khi) & 0x00010001u) << 4;
        hi13_1 |= ((e1 >> (khi + 8)) & 0x00010001u) << 4;
      }
      const int xo = 64 * c + l0 + 4 * w;
      step<NT>(acc, h2_fma(h2_sub(lo02_0 | kMagic, 1024.f), s_lo[0], m_lo[0]),
               h2_fma(h2_sub(lo02_1 | kMagic, 1024.f), s_lo[1], m_lo[1]),
               h2_fma(h2_sub(lo13_0 | kMagic, 1024.f), s_lo[0], m_lo[0]),
               h2_fma(h2_sub(lo13_1 | kMagic, 1024.f), s_lo[1], m_lo[1]), xb, xok, xo);
      step<NT>(acc, h2_fma(h2_sub(hi02_0 | kMagic, 1024.f), s_hi[0], m_hi[0]),
               h2_fma(h2_sub(hi02_1 | kMagic, 1024.f), s_hi[1], m_hi[1]),
               h2_fma(h2_sub(hi13_0 | kMagic, 1024.f), s_hi[0], m_hi[0]),
               h2_fma(h2_sub(hi13_1 | kMagic, 1024.f), s_hi[1], m_hi[1]), xb, xok, xo + 32);
    }
  }
}

// Q6_K (device layout ql[128] qh[64] scales[16], d in meta): lane t holds ql bytes
// [16t, 16t + 16) (half 0) and [64 + 16t, 80 + 16t) (half 1); byte l (0..63) of half h has
// element 128h + l in its low nibble and 128h + 64 + l in its high one; their two high bits
// are in qh[32h + l % 32] at bit 2 (l / 32) (low) and 4 + 2 (l / 32) (high); scales
// sc[8h + t] (low) and sc[8h + 4 + t] (high).
template <>
struct Tile<WFormat::kQ6_K> {
  struct Raw {
    uint4 la0, lb0, la1, lb1, ha0, hb0, ha1, hb1, sc0, sc1;
    float d0, d1;
  };
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 208;
    const uint8_t* b1 = R.main1 + tile * 208;
    r.la0 = ld16(b0 + 16 * t, R.ok0, R.pf);
    r.lb0 = ld16(b0 + 64 + 16 * t, R.ok0, R.pf);
    r.la1 = ld16(b1 + 16 * t, R.ok1, R.pf);
    r.lb1 = ld16(b1 + 64 + 16 * t, R.ok1, R.pf);
    r.ha0 = ld16(b0 + 128 + 16 * (t & 1), R.ok0, R.pf);
    r.hb0 = ld16(b0 + 160 + 16 * (t & 1), R.ok0, R.pf);
    r.ha1 = ld16(b1 + 128 + 16 * (t & 1), R.ok1, R.pf);
    r.hb1 = ld16(b1 + 160 + 16 * (t & 1), R.ok1, R.pf);
    r.sc0 = ld16(b0 + 192, R.ok0, R.pf);
    r.sc1 = ld16(b1 + 192, R.ok1, R.pf);
    r.d0 = R.ok0 ? __half2float(__ushort_as_half(R.meta0[tile])) : 0.f;
    r.d1 = R.ok1 ? __half2float(__ushort_as_half(R.meta1[tile])) : 0.f;
  }
  template <int NT>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
    const int sh_lo = 2 * (t >> 1), sh_hi = 4 + 2 * (t >> 1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // sc[8h + t] is byte t of word 2h, sc[8h + 4 + t] byte t of word 2h + 1 (t run-time).
      const int bt = 8 * t;
      const __half2 slo0 = __float2half2_rn(r.d0 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc0, 2 * h) >> bt)));
      const __half2 shi0 = __float2half2_rn(r.d0 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc0, 2 * h + 1) >> bt)));
      const __half2 slo1 = __float2half2_rn(r.d1 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc1, 2 * h) >> bt)));
      const __half2 shi1 = __float2half2_rn(r.d1 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc1, 2 * h + 1) >> bt)));
      const uint4& l0v = h == 0 ? r.la0 : r.lb0;
      const uint4& l1v = h == 0 ? r.la1 : r.lb1;
      const uint4& e0v = h == 0 ? r.ha0 : r.hb0;
      const uint4& e1v = h == 0 ? r.ha1 : r.hb1;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t q0 = u4_get(l0v, w), q1 = u4_get(l1v, w);
        const uint32_t e0 = u4_get(e0v, w), e1 = u4_get(e1v, w);
        const uint32_t lo02_0 = (q0 & 0x000F000Fu) | (((e0 >> sh_lo) & 0x00030003u) << 4);
        const uint32_t lo13_0 = ((q0 >> 8) & 0x000F000Fu) | (((e0 >> (sh_lo + 8)) & 0x00030003u) << 4);
        const uint32_t hi02_0 = ((q0 >> 4) & 0x000F000Fu) | (((e0 >> sh_hi) & 0x00030003u) << 4);
        const uint32_t hi13_0 = ((q0 >> 12) & 0x000F000Fu) | (((e0 >> (sh_hi + 8)) & 0x00030003u) << 4);
        const uint32_t lo02_1 = (q1 & 0x000F000Fu) | (((e1 >> sh_lo) & 0x00030003u) << 4);
        const uint32_t lo13_1 = ((q1 >> 8) & 0x000F000Fu) | (((e1 >> (sh_lo + 8)) & 0x00030003u) << 4);
        const uint32_t hi02_1 = ((q1 >> 4) & 0x000F000Fu) | (((e1 >> sh_hi) & 0x00030003u) << 4);
        const uint32_t hi13_1 = ((q1 >> 12) & 0x000F000Fu) | (((e1 >> (sh_hi + 8)) & 0x00030003u) << 4);
        const int xo = 128 * h + 16 * t + 4 * w;
        step<NT>(acc, h2_mul(h2_sub(lo02_0 | kMagic, 1056.f), slo0), h2_mul(h2_sub(lo02_1 | kMagic, 1056.f), slo1),
                 h2_mul(h2_sub(lo13_0 | kMagic, 1056.f), slo0), h2_mul(h2_sub(lo13_1 | kMagic, 1056.f), slo1), xb,
                 xok, xo);
        step<NT>(acc, h2_mul(h2_sub(hi02_0 | kMagic, 1056.f), shi0), h2_mul(h2_sub(hi02_1 | kMagic, 1056.f), shi1),
                 h2_mul(h2_sub(hi13_0 | kMagic, 1056.f), shi0), h2_mul(h2_sub(hi13_1 | kMagic, 1056.f), shi1), xb,
                 xok, xo + 64);
      }
    }
  }
};

// Q8_0 (32 int8 per block in main, d in meta): load i (0..3) gives lane t bytes
// [64i + 16t, +16) of the tile: block 2i + t/2, elements 64i + 16t ..
template <>
struct Tile<WFormat::kQ8_0> {
  struct Raw {
    uint4 q0[4], q1[4];
    uint16_t d0[4], d1[4];
  };
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 256 + 16 * t;
    const uint8_t* b1 = R.main1 + tile * 256 + 16 * t;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      r.q0[i] = ld16(b0 + 64 * i, R.ok0, R.pf);
      r.q1[i] = ld16(b1 + 64 * i, R.ok1, R.pf);
      r.d0[i] = R.ok0 ? R.meta0[tile * 8 + 2 * i + (t >> 1)] : 0;
      r.d1[i] = R.ok1 ? R.meta1[tile * 8 + 2 * i + (t >> 1)] : 0;
    }
  }
  template <int NT>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __half2 d0 = __half2half2(__ushort_as_half(r.d0[i])), d1 = __half2half2(__ushort_as_half(r.d1[i]));
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t u0 = u4_get(r.q0[i], w) ^ 0x80808080u;
        const uint32_t u1 = u4_get(r.q1[i], w) ^ 0x80808080u;
        step<NT>(acc, h2_mul(h2_sub(__byte_perm(u0, 0x64646464u, 0x4240), 1152.f), d0),
                 h2_mul(h2_sub(__byte_perm(u1, 0x64646464u, 0x4240), 1152.f), d1),
                 h2_mul(h2_sub(__byte_perm(u0, 0x64646464u, 0x4341), 1152.f), d0),
                 h2_mul(h2_sub(__byte_perm(u1, 0x64646464u, 0x4341), 1152.f), d1), xb, xok, 64 * i + 16 * t + 4 * w);
      }
    }
  }
};

// Q4_0 (16 nibble bytes per block in main, d in meta): load i (0, 1) gives lane t the whole
// block b = 4i + t: byte j holds elements 32b + j (low) and 32b + 16 + j (high).
template <>
struct Tile<WFormat::kQ4_0> {
  struct Raw {
    uint4 qa0, qb0, qa1, qb1;
    uint16_t d0[2], d1[2];
  };
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 128 + 16 * t;
    const uint8_t* b1 = R.main1 + tile * 128 + 16 * t;
    r.qa0 = ld16(b0, R.ok0, R.pf);
    r.qb0 = ld16(b0 + 64, R.ok0, R.pf);
    r.qa1 = ld16(b1, R.ok1, R.pf);
    r.qb1 = ld16(b1 + 64, R.ok1, R.pf);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      r.d0[i] = R.ok0 ? R.meta0[tile * 8 + 4 * i + t] : 0;
      r.d1[i] = R.ok1 ? R.meta1[tile * 8 + 4 * i + t] : 0;
    }
  }
  template <int NT>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const __half2 d0 = __half2half2(__ushort_as_half(r.d0[i])), d1 = __half2half2(__ushort_as_half(r.d1[i]));
      const uint4& a = i == 0 ? r.qa0 : r.qb0;
      const uint4& b = i == 0 ? r.qa1 : r.qb1;
      const int blk = 4 * i + t;
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t v0 = u4_get(a, w), v1 = u4_get(b, w);
        const int xo = 32 * blk + 4 * w;
        step<NT>(acc, h2_mul(h2_sub((v0 & 0x000F000Fu) | kMagic, 1032.f), d0),
                 h2_mul(h2_sub((v1 & 0x000F000Fu) | kMagic, 1032.f), d1),
                 h2_mul(h2_sub(((v0 >> 8) & 0x000F000Fu) | kMagic, 1032.f), d0),
                 h2_mul(h2_sub(((v1 >> 8) & 0x000F000Fu) | kMagic, 1032.f), d1), xb, xok, xo);
        step<NT>(acc, h2_mul(h2_sub(((v0 >> 4) & 0x000F000Fu) | kMagic, 1032.f), d0),
                 h2_mul(h2_sub(((v1 >> 4) & 0x000F000Fu) | kMagic, 1032.f), d1),
                 h2_mul(h2_sub(((v0 >> 12) & 0x000F000Fu) | kMagic, 1032.f), d0),
                 h2_mul(h2_sub(((v1 >> 12) & 0x000F000Fu) | kMagic, 1032.f), d1), xb, xok, xo + 16);
      }
    }
  }
};

// F16 and BF16: load i (0..7) gives lane t elements [32i + 8t, +8) of the tile.
template <WFormat F, int NT>
__device__ __forceinline__ void tile_half(float (&acc)[NT][4], const RowPtrs& R, int64_t tile, int t,
                                          const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    uint4 v0[4], v1[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t e = tile * 256 + 32 * (4 * half + i) + 8 * t;
      v0[i] = ld16(R.main0 + e * 2, R.ok0, R.pf);
      v1[i] = ld16(R.main1 + e * 2, R.ok1, R.pf);
    }
#pragma unroll
    for (int s = 0; s < 8; ++s) {  // 4 elements per step: words 2(s%2), 2(s%2)+1 of v[s/2]
      uint32_t p02[2], p13[2];
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const uint4& v = (rr == 0 ? v0 : v1)[s / 2];
        const uint32_t a = (s % 2 == 0) ? v.x : v.z, b = (s % 2 == 0) ? v.y : v.w;
        if constexpr (F == WFormat::kF16) {
          p02[rr] = __byte_perm(a, b, 0x5410);
          p13[rr] = __byte_perm(a, b, 0x7632);
        } else {
          p02[rr] = pack_f32x2(__uint_as_float(a << 16), __uint_as_float(b << 16));
          p13[rr] = pack_f32x2(__uint_as_float(a & 0xffff0000u), __uint_as_float(b & 0xffff0000u));
        }
      }
      step<NT>(acc, p02[0], p02[1], p13[0], p13[1], xb, xok, 32 * (4 * half + s / 2) + 8 * t + 4 * (s % 2));
    }
  }
}

// F32: load s (0..15) gives lane t elements [16s + 4t, +4).
template <int NT>
__device__ __forceinline__ void tile_f32(float (&acc)[NT][4], const RowPtrs& R, int64_t tile, int t,
                                         const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
#pragma unroll 4
  for (int s = 0; s < 16; ++s) {
    const int64_t e = tile * 256 + 16 * s + 4 * t;
    const float4 a = R.ok0 ? __ldg(reinterpret_cast<const float4*>(R.main0 + e * 4)) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 b = R.ok1 ? __ldg(reinterpret_cast<const float4*>(R.main1 + e * 4)) : make_float4(0.f, 0.f, 0.f, 0.f);
    step<NT>(acc, pack_f32x2(a.x, a.z), pack_f32x2(b.x, b.z), pack_f32x2(a.y, a.w), pack_f32x2(b.y, b.w), xb, xok,
             16 * s + 4 * t);
  }
}

constexpr int kMaxWarps = 16;

struct MvGrid {
  int wr;         // warps along rows (16 rows each)
  int wk;         // warps along k (tiles wk, wk + WK, ...)
  int l2pf = 1;   // weight loads ask L2 for 256-byte fetches (GS_CUDA_L2PF=0 turns it off)
};

// The rows a lane owns: row0 (g of the warp's 16) and row0 + 8, clamped to row 0 past n_out
// (their loads then read zeros, ld16's ok flag), with their main and meta pointers.
__device__ __forceinline__ RowPtrs row_ptrs(const uint8_t* w, const WeightLayout& L, int64_t row0,
                                            const MvGrid& G) {
  const int64_t row1 = row0 + 8;
  RowPtrs R;
  R.ok0 = row0 < L.n_out;
  R.ok1 = row1 < L.n_out;
  R.pf = G.l2pf != 0;
  R.main0 = w + (R.ok0 ? row0 : 0) * L.main_row_bytes;
  R.main1 = w + (R.ok1 ? row1 : 0) * L.main_row_bytes;
  const uint16_t* meta = reinterpret_cast<const uint16_t*>(w + L.meta_offset);
  R.meta0 = meta + (R.ok0 ? row0 : 0) * L.meta_per_row;
  R.meta1 = meta + (R.ok1 ? row1 : 0) * L.meta_per_row;
  return R;
}

// Writes a lane's accumulators (mma C fragment: columns 2t, 2t + 1 of each 8-column tile, rows
// row0 and row0 + 8) to y [activation row][output row], undoing the activation scaling.
template <int NT>
__device__ __forceinline__ void store_rows(const float (&acc)[NT][4], const RowPtrs& R, int64_t row0, int t,
                                           const float* __restrict__ xscale, MatF y) {
  const int n = static_cast<int>(y.rows);
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int col = ct * 8 + 2 * t + jj;
      if (col >= n) continue;
      const float s = xscale[col];
      float* yr = y.data + static_cast<int64_t>(col) * y.stride;
      if (R.ok0) yr[row0] = acc[ct][jj] * s;
      if (R.ok1) yr[row0 + 8] = acc[ct][2 + jj] * s;
    }
  }
}

// The activation operands of one tile: column tile ct of the mma reads activation row
// ct * 8 + g (xok false past the last row: its B operand is zero).
template <int NT>
__device__ __forceinline__ void x_operands(const uint16_t* xh, const WeightLayout& L, int64_t tile, int g, int n,
                                           const uint16_t* (&xb)[NT], bool (&xok)[NT]) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    const int col = ct * 8 + g;
    xok[ct] = col < n;
    xb[ct] = xh + static_cast<int64_t>(xok[ct] ? col : 0) * L.n_in_pad + tile * kTileElems;
  }
}

// Dequantize-and-mma of one loaded tile of a block format (the Tile<F> formats).
template <WFormat F, int NT>
__device__ __forceinline__ void compute_tile(const typename Tile<F>::Raw& cur, float (&acc)[NT][4], int t,
                                             const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
  if constexpr (F == WFormat::kQ4_K) {
    compute_qk45<NT, false>(cur, acc, t, xb, xok);
  } else if constexpr (F == WFormat::kQ5_K) {
    compute_qk45<NT, true>(cur, acc, t, xb, xok);
  } else {
    Tile<F>::template compute<NT>(cur, acc, t, xb, xok);
  }
}

// The k-split sum: warps with wk > 0 leave their accumulators in their own part of shared
// memory (warp w's at scratch + w * warp_stride floats, laid out [ct * 4 + i][lane]) and the
// wk == 0 warp of each row group adds them up. Returns false to the warps that are done.
// Every thread of the CTA must call it (it holds a barrier).
template <int NT>
__device__ __forceinline__ bool ksplit_sum(float (&acc)[NT][4], float* scratch, size_t warp_stride, const MvGrid& G,
                                           int warp, int lane) {
  if (G.wk <= 1) return true;
  const int wr = warp % G.wr, wk = warp / G.wr;
  if (wk > 0) {
    float* mine = scratch + static_cast<size_t>(warp) * warp_stride;
#pragma unroll
    for (int ct = 0; ct < NT; ++ct)
      for (int i = 0; i < 4; ++i) mine[(ct * 4 + i) * 32 + lane] = acc[ct][i];
  }
  __syncthreads();
  if (wk != 0) return false;
  for (int k = 1; k < G.wk; ++k) {
    const float* other = scratch + static_cast<size_t>(k * G.wr + wr) * warp_stride;
#pragma unroll
    for (int ct = 0; ct < NT; ++ct)
      for (int i = 0; i < 4; ++i) acc[ct][i] += other[(ct * 4 + i) * 32 + lane];
  }
  return true;
}

}  // namespace gs::cuda::mv
