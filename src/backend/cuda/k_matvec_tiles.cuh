// The building blocks of the tensor-core decode matvecs (k_matvec.cu, k_matvec_pipe.cu,
// k_matvec_stream.cu): the
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
constexpr uint32_t kMagic64 = 0x54005400u;  // f16 64.0 in both halves: mantissa bits 4.. count 1 each

// Where the activation operand lives: global memory (read-only path) or a shared-memory copy
// of it (the bulk-copy matvec's, for one activation row).
struct GlobalX {
  static __device__ __forceinline__ uint4 ld(const uint4* p) { return __ldg(p); }
};
struct SharedX {
  static __device__ __forceinline__ uint4 ld(const uint4* p) { return *p; }
};

// 16 consecutive activations (2 x 16 bytes) from uint4 index `idx` of each column tile's
// per-lane operand pointer. The pointers are always valid (x_operands points the column tiles
// past the last activation row at row 0; those columns are computed and never stored), so
// the loads need no predicate.
template <int NT, class XL = GlobalX>
__device__ __forceinline__ void x_load16(uint4 (&v)[NT][2], const uint4* const (&xq)[NT], int idx) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    v[ct][0] = XL::ld(xq[ct] + idx);
    v[ct][1] = XL::ld(xq[ct] + idx + 1);
  }
}

// The per-lane operand pointers of a tile: each column tile's activations from element `off`.
template <int NT>
__device__ __forceinline__ void x_lane(const uint4* (&xq)[NT], const uint16_t* const (&xb)[NT], int off) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) xq[ct] = reinterpret_cast<const uint4*>(xb[ct] + off);
}

// One mma step whose B operand is the 4 activations of word w (0..3) of x_load16's 16.
template <int NT>
__device__ __forceinline__ void step_x(float (&acc)[NT][4], uint32_t r0_02, uint32_t r1_02, uint32_t r0_13,
                                       uint32_t r1_13, const uint4 (&v)[NT][2], int w) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    const uint4& u = v[ct][w >> 1];
    mma_16816(acc[ct], r0_02, r1_02, r0_13, r1_13, (w & 1) ? u.z : u.x, (w & 1) ? u.w : u.y);
  }
}

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
  if (pf) return ld_nc_l2_256(p);
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// Where a tile's blocks are read from: global memory (ld16, with its L2 hint) or a
// shared-memory copy that the bulk-copy matvec (k_matvec_stream.cu) made of them. Tile<F>::load
// takes either; the pointers in RowPtrs then point into that memory.
struct GlobalLd {
  static __device__ __forceinline__ uint4 ld(const uint8_t* p, bool ok, bool pf) { return ld16(p, ok, pf); }
  static __device__ __forceinline__ uint16_t meta(const uint16_t* p, bool ok) { return ok ? *p : uint16_t{0}; }
};
// Rows past the last one hold stale bytes of earlier stages: they are computed (each mma row
// is independent of the others) and never stored, so shared loads need no predicate either.
struct SharedLd {
  static __device__ __forceinline__ uint4 ld(const uint8_t* p, bool, bool) { return *reinterpret_cast<const uint4*>(p); }
  static __device__ __forceinline__ uint16_t meta(const uint16_t* p, bool) { return *p; }
};

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
  template <class Ld = GlobalLd>
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    constexpr int kBlock = kQ5 ? 176 : 144, kQs = kQ5 ? 48 : 16;
    const uint8_t* b0 = R.main0 + tile * kBlock;
    const uint8_t* b1 = R.main1 + tile * kBlock;
    r.h0 = Ld::ld(b0, R.ok0, R.pf);
    r.h1 = Ld::ld(b1, R.ok1, R.pf);
    r.qa0 = Ld::ld(b0 + kQs + 16 * t, R.ok0, R.pf);
    r.qb0 = Ld::ld(b0 + kQs + 64 + 16 * t, R.ok0, R.pf);
    r.qa1 = Ld::ld(b1 + kQs + 16 * t, R.ok1, R.pf);
    r.qb1 = Ld::ld(b1 + kQs + 64 + 16 * t, R.ok1, R.pf);
    if constexpr (kQ5) {  // qh bytes [16 (t % 2), +16): the high bits of the lane's l's
      r.e0 = Ld::ld(b0 + 16 + 16 * (t & 1), R.ok0, R.pf);
      r.e1 = Ld::ld(b1 + 16 + 16 * (t & 1), R.ok1, R.pf);
    }
  }
};
// Q4_K is tile-major (cuda_weight_layout.h): for it RowPtrs holds main0 = the lane's qs
// fragment run of tile 0 (group + 16 lane) and main1 = row g's header of tile 0 (group +
// 2048 + 16 g); a tile is kQ4KTileBytes further on. The registers hold what TileQK45's do.
template <>
struct Tile<WFormat::kQ4_K> : TileQK45<false> {
  template <class Ld = GlobalLd>
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int) {
    const uint8_t* f = R.main0 + tile * kQ4KTileBytes;
    const uint8_t* h = R.main1 + tile * kQ4KTileBytes;
    r.qa0 = Ld::ld(f, R.ok0, R.pf);  // past n_out: zeros, no load (the row group may not exist)
    r.qb0 = Ld::ld(f + 512, R.ok0, R.pf);
    r.qa1 = Ld::ld(f + 1024, R.ok1, R.pf);
    r.qb1 = Ld::ld(f + 1536, R.ok1, R.pf);
    r.h0 = Ld::ld(h, R.ok0, R.pf);
    r.h1 = Ld::ld(h + 128, R.ok1, R.pf);
  }
};
template <>
struct Tile<WFormat::kQ5_K> : TileQK45<true> {};

// Scales and negated mins of sub-blocks klo = ka + 4 half and khi = klo + 1 of a Q4_K/Q5_K
// header h as f16 pairs s = (s_lo, s_hi), m = (-m_lo, -m_hi) (ka = 0 or 2, run-time; half
// compile-time). The 12 scale bytes are h.y (bytes 4..7), h.z (8..11), h.w (12..15): for
// k < 4, sc = byte(4 + k) & 63 and mn = byte(8 + k) & 63; for k >= 4, sc = (byte(8 + k) & 15)
// | (byte(k) >> 6) << 4 and mn = (byte(8 + k) >> 4) | (byte(4 + k) >> 6) << 4 (spec §3,
// get_scale_min_k4). `sel` (byte_perm selector 0x4140 + 0x0101 ka) puts bytes ka and ka + 1
// of a word into the two 16-bit halves, so both sub-blocks are decoded at once as exact f16
// integers; one f16 product rounds d * sc (and dmin * mn) exactly as an f32 product would.
__device__ __forceinline__ void k_scales2(const uint4& h, int half, uint32_t sel, __half2& s, __half2& m) {
  const __half2 dd = bits_h2(h.x);  // (d, dmin)
  uint32_t sc, mn;
  if (half == 0) {
    sc = and_or(__byte_perm(h.y, 0u, sel), 0x003F003Fu, kMagic);
    mn = and_or(__byte_perm(h.z, 0u, sel), 0x003F003Fu, kMagic);
  } else {
    const uint32_t w = __byte_perm(h.w, 0u, sel), y = __byte_perm(h.y, 0u, sel), z = __byte_perm(h.z, 0u, sel);
    sc = and_or(w, 0x000F000Fu, and_or(y >> 2, 0x00300030u, kMagic));
    mn = and_or(w >> 4, 0x000F000Fu, and_or(z >> 2, 0x00300030u, kMagic));
  }
  const __half2 k1024 = __float2half2_rn(1024.f);
  s = __hmul2(__hsub2(bits_h2(sc), k1024), __low2half2(dd));
  m = __hmul2(__hsub2(bits_h2(mn), k1024), __hneg2(__high2half2(dd)));
}

// Lane t covers chunks c = t/2 (half 0) and 2 + t/2 (half 1) of 64 elements, bytes
// [16 (t % 2), +16) of each: word w's low nibbles are elements 64c + 16 (t % 2) + 4w + (0..3)
// of sub-block 2c, its high nibbles the same of sub-block 2c + 1 (spec §5.2). Low nibbles
// become 1024 + q (mantissa bits 0..3 under the 1024 exponent), high nibbles 64 + q (bits 4..7
// under the 64 exponent), so one LOP3 each; the subtraction is exact and the one rounding is
// that of s q - m. Low-nibble steps accumulate into acc, high-nibble ones into acc2 (two
// independent mma chains).
template <int NT, bool kQ5, class XL = GlobalX>
__device__ __forceinline__ void compute_qk45(const typename TileQK45<kQ5>::Raw& r, float (&acc)[NT][4],
                                             float (&acc2)[NT][4], int t, const uint16_t* const (&xb)[NT]) {
  const int ka = 2 * (t >> 1);
  const uint32_t sel = 0x4140u + 0x0101u * static_cast<uint32_t>(ka);
  const uint4* xq[NT];
  x_lane<NT>(xq, xb, 64 * (t >> 1) + 16 * (t & 1));
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // qa (chunk t/2), then qb (chunk 2 + t/2)
    const int klo = ka + 4 * half, khi = klo + 1;
    __half2 s0, m0, s1, m1;
    k_scales2(r.h0, half, sel, s0, m0);
    k_scales2(r.h1, half, sel, s1, m1);
    const __half2 s0l = __low2half2(s0), s0h = __high2half2(s0), m0l = __low2half2(m0), m0h = __high2half2(m0);
    const __half2 s1l = __low2half2(s1), s1h = __high2half2(s1), m1l = __low2half2(m1), m1h = __high2half2(m1);
    const uint4& q0v = half == 0 ? r.qa0 : r.qb0;
    const uint4& q1v = half == 0 ? r.qa1 : r.qb1;
    uint4 xlo[NT][2], xhi[NT][2];
    x_load16<NT, XL>(xlo, xq, 16 * half);
    x_load16<NT, XL>(xhi, xq, 16 * half + 4);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q0 = u4_get(q0v, w), q1 = u4_get(q1v, w);
      const uint32_t q80 = q0 >> 8, q81 = q1 >> 8;
      uint32_t lo02_0 = and_or(q0, 0x000F000Fu, kMagic), lo13_0 = and_or(q80, 0x000F000Fu, kMagic);
      uint32_t hi02_0 = and_or(q0, 0x00F000F0u, kMagic64), hi13_0 = and_or(q80, 0x00F000F0u, kMagic64);
      uint32_t lo02_1 = and_or(q1, 0x000F000Fu, kMagic), lo13_1 = and_or(q81, 0x000F000Fu, kMagic);
      uint32_t hi02_1 = and_or(q1, 0x00F000F0u, kMagic64), hi13_1 = and_or(q81, 0x00F000F0u, kMagic64);
      if constexpr (kQ5) {  // the fifth bit: 16 in either representation (bit 4 / bit 8)
        const uint32_t e0 = u4_get(r.e0, w), e1 = u4_get(r.e1, w);
        lo02_0 |= ((e0 >> klo) & 0x00010001u) << 4;
        lo13_0 |= ((e0 >> (klo + 8)) & 0x00010001u) << 4;
        hi02_0 |= ((e0 >> khi) & 0x00010001u) << 8;
        hi13_0 |= ((e0 >> (khi + 8)) & 0x00010001u) << 8;
        lo02_1 |= ((e1 >> klo) & 0x00010001u) << 4;
        lo13_1 |= ((e1 >> (klo + 8)) & 0x00010001u) << 4;
        hi02_1 |= ((e1 >> khi) & 0x00010001u) << 8;
        hi13_1 |= ((e1 >> (khi + 8)) & 0x00010001u) << 8;
      }
      step_x<NT>(acc, h2_fma(h2_sub(lo02_0, 1024.f), s0l, m0l), h2_fma(h2_sub(lo02_1, 1024.f), s1l, m1l),
                 h2_fma(h2_sub(lo13_0, 1024.f), s0l, m0l), h2_fma(h2_sub(lo13_1, 1024.f), s1l, m1l), xlo, w);
      step_x<NT>(acc2, h2_fma(h2_sub(hi02_0, 64.f), s0h, m0h), h2_fma(h2_sub(hi02_1, 64.f), s1h, m1h),
                 h2_fma(h2_sub(hi13_0, 64.f), s0h, m0h), h2_fma(h2_sub(hi13_1, 64.f), s1h, m1h), xhi, w);
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
  template <class Ld = GlobalLd>
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 208;
    const uint8_t* b1 = R.main1 + tile * 208;
    r.la0 = Ld::ld(b0 + 16 * t, R.ok0, R.pf);
    r.lb0 = Ld::ld(b0 + 64 + 16 * t, R.ok0, R.pf);
    r.la1 = Ld::ld(b1 + 16 * t, R.ok1, R.pf);
    r.lb1 = Ld::ld(b1 + 64 + 16 * t, R.ok1, R.pf);
    r.ha0 = Ld::ld(b0 + 128 + 16 * (t & 1), R.ok0, R.pf);
    r.hb0 = Ld::ld(b0 + 160 + 16 * (t & 1), R.ok0, R.pf);
    r.ha1 = Ld::ld(b1 + 128 + 16 * (t & 1), R.ok1, R.pf);
    r.hb1 = Ld::ld(b1 + 160 + 16 * (t & 1), R.ok1, R.pf);
    r.sc0 = Ld::ld(b0 + 192, R.ok0, R.pf);
    r.sc1 = Ld::ld(b1 + 192, R.ok1, R.pf);
    r.d0 = __half2float(__ushort_as_half(Ld::meta(R.meta0 + tile, R.ok0)));
    r.d1 = __half2float(__ushort_as_half(Ld::meta(R.meta1 + tile, R.ok1)));
  }
  // Low nibbles become 1024 + q6 with their two high bits at bits 4, 5; high nibbles 64 + q6
  // with theirs at bits 8, 9 (one shift of qh puts both pairs in place); q6 - 32 exactly, then
  // one rounding of s (q6 - 32). Low-nibble steps go to acc, high-nibble ones to acc2.
  template <int NT, class XL = GlobalX>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], float (&acc2)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT]) {
    const int el = 4 - 2 * (t >> 1);  // qh bits (2 (t/2), +1) -> 4, 5 and (4 + 2 (t/2), +1) -> 8, 9
    const uint4* xq[NT];
    x_lane<NT>(xq, xb, 16 * t);
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
      uint4 xlo[NT][2], xhi[NT][2];
      x_load16<NT, XL>(xlo, xq, 16 * h);
      x_load16<NT, XL>(xhi, xq, 16 * h + 8);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t q0 = u4_get(l0v, w), q1 = u4_get(l1v, w);
        const uint32_t er0 = u4_get(e0v, w), er1 = u4_get(e1v, w);
        const uint32_t e0 = er0 << el, e1 = er1 << el;                 // bytes 0, 2 (byte 2's bits stay below 32)
        const uint32_t e80 = (er0 >> 8) << el, e81 = (er1 >> 8) << el;  // bytes 1, 3
        const uint32_t q80 = q0 >> 8, q81 = q1 >> 8;
        const uint32_t lo02_0 = and_or(q0, 0x000F000Fu, and_or(e0, 0x00300030u, kMagic));
        const uint32_t lo13_0 = and_or(q80, 0x000F000Fu, and_or(e80, 0x00300030u, kMagic));
        const uint32_t hi02_0 = and_or(q0, 0x00F000F0u, and_or(e0, 0x03000300u, kMagic64));
        const uint32_t hi13_0 = and_or(q80, 0x00F000F0u, and_or(e80, 0x03000300u, kMagic64));
        const uint32_t lo02_1 = and_or(q1, 0x000F000Fu, and_or(e1, 0x00300030u, kMagic));
        const uint32_t lo13_1 = and_or(q81, 0x000F000Fu, and_or(e81, 0x00300030u, kMagic));
        const uint32_t hi02_1 = and_or(q1, 0x00F000F0u, and_or(e1, 0x03000300u, kMagic64));
        const uint32_t hi13_1 = and_or(q81, 0x00F000F0u, and_or(e81, 0x03000300u, kMagic64));
        step_x<NT>(acc, h2_mul(h2_sub(lo02_0, 1056.f), slo0), h2_mul(h2_sub(lo02_1, 1056.f), slo1),
                   h2_mul(h2_sub(lo13_0, 1056.f), slo0), h2_mul(h2_sub(lo13_1, 1056.f), slo1), xlo, w);
        step_x<NT>(acc2, h2_mul(h2_sub(hi02_0, 96.f), shi0), h2_mul(h2_sub(hi02_1, 96.f), shi1),
                   h2_mul(h2_sub(hi13_0, 96.f), shi0), h2_mul(h2_sub(hi13_1, 96.f), shi1), xhi, w);
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
  template <class Ld = GlobalLd>
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 256 + 16 * t;
    const uint8_t* b1 = R.main1 + tile * 256 + 16 * t;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      r.q0[i] = Ld::ld(b0 + 64 * i, R.ok0, R.pf);
      r.q1[i] = Ld::ld(b1 + 64 * i, R.ok1, R.pf);
      r.d0[i] = Ld::meta(R.meta0 + tile * 8 + 2 * i + (t >> 1), R.ok0);
      r.d1[i] = Ld::meta(R.meta1 + tile * 8 + 2 * i + (t >> 1), R.ok1);
    }
  }
  template <int NT, class XL = GlobalX>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], float (&acc2)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT]) {
    const uint4* xq[NT];
    x_lane<NT>(xq, xb, 16 * t);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __half2 d0 = __half2half2(__ushort_as_half(r.d0[i])), d1 = __half2half2(__ushort_as_half(r.d1[i]));
      uint4 xv[NT][2];
      x_load16<NT, XL>(xv, xq, 8 * i);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t u0 = u4_get(r.q0[i], w) ^ 0x80808080u;
        const uint32_t u1 = u4_get(r.q1[i], w) ^ 0x80808080u;
        step_x<NT>((w & 1) ? acc2 : acc, h2_mul(h2_sub(__byte_perm(u0, 0x64646464u, 0x4240), 1152.f), d0),
                   h2_mul(h2_sub(__byte_perm(u1, 0x64646464u, 0x4240), 1152.f), d1),
                   h2_mul(h2_sub(__byte_perm(u0, 0x64646464u, 0x4341), 1152.f), d0),
                   h2_mul(h2_sub(__byte_perm(u1, 0x64646464u, 0x4341), 1152.f), d1), xv, w);
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
  template <class Ld = GlobalLd>
  static __device__ __forceinline__ void load(Raw& r, const RowPtrs& R, int64_t tile, int t) {
    const uint8_t* b0 = R.main0 + tile * 128 + 16 * t;
    const uint8_t* b1 = R.main1 + tile * 128 + 16 * t;
    r.qa0 = Ld::ld(b0, R.ok0, R.pf);
    r.qb0 = Ld::ld(b0 + 64, R.ok0, R.pf);
    r.qa1 = Ld::ld(b1, R.ok1, R.pf);
    r.qb1 = Ld::ld(b1 + 64, R.ok1, R.pf);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      r.d0[i] = Ld::meta(R.meta0 + tile * 8 + 4 * i + t, R.ok0);
      r.d1[i] = Ld::meta(R.meta1 + tile * 8 + 4 * i + t, R.ok1);
    }
  }
  // Low nibbles as 1024 + q, high nibbles as 64 + q (see compute_qk45); q - 8 exactly.
  template <int NT, class XL = GlobalX>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], float (&acc2)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT]) {
    const uint4* xq[NT];
    x_lane<NT>(xq, xb, 32 * t);  // block 4i + t starts at element 128 i + 32 t
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const __half2 d0 = __half2half2(__ushort_as_half(r.d0[i])), d1 = __half2half2(__ushort_as_half(r.d1[i]));
      const uint4& a = i == 0 ? r.qa0 : r.qb0;
      const uint4& b = i == 0 ? r.qa1 : r.qb1;
      uint4 xlo[NT][2], xhi[NT][2];
      x_load16<NT, XL>(xlo, xq, 16 * i);
      x_load16<NT, XL>(xhi, xq, 16 * i + 2);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t v0 = u4_get(a, w), v1 = u4_get(b, w);
        const uint32_t v80 = v0 >> 8, v81 = v1 >> 8;
        step_x<NT>(acc, h2_mul(h2_sub(and_or(v0, 0x000F000Fu, kMagic), 1032.f), d0),
                   h2_mul(h2_sub(and_or(v1, 0x000F000Fu, kMagic), 1032.f), d1),
                   h2_mul(h2_sub(and_or(v80, 0x000F000Fu, kMagic), 1032.f), d0),
                   h2_mul(h2_sub(and_or(v81, 0x000F000Fu, kMagic), 1032.f), d1), xlo, w);
        step_x<NT>(acc2, h2_mul(h2_sub(and_or(v0, 0x00F000F0u, kMagic64), 72.f), d0),
                   h2_mul(h2_sub(and_or(v1, 0x00F000F0u, kMagic64), 72.f), d1),
                   h2_mul(h2_sub(and_or(v80, 0x00F000F0u, kMagic64), 72.f), d0),
                   h2_mul(h2_sub(and_or(v81, 0x00F000F0u, kMagic64), 72.f), d1), xhi, w);
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
// (their loads then read zeros, ld16's ok flag), with their main and meta pointers; for a
// tile-major layout the pointers Tile<kQ4_K> takes (lane = threadIdx.x % 32).
__device__ __forceinline__ RowPtrs row_ptrs(const uint8_t* w, const WeightLayout& L, int64_t row0,
                                            const MvGrid& G) {
  const int64_t row1 = row0 + 8;
  RowPtrs R;
  R.ok0 = row0 < L.n_out;
  R.ok1 = row1 < L.n_out;
  R.pf = G.l2pf != 0;
  if (L.tile_major) {  // Tile<kQ4_K>'s pointers; rows past n_out are not loaded (ok flags)
    const uint8_t* group = w + (row0 / kRowGroupRows) * kRowGroupRows * L.main_row_bytes;
    R.main0 = group + 16 * (threadIdx.x & 31);
    R.main1 = group + 2048 + 16 * (row0 % kRowGroupRows);
    R.meta0 = R.meta1 = nullptr;
    return R;
  }
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
// ct * 8 + g. Past the last row xok is false and the pointer is row 0's: the F16/BF16/F32
// tiles then feed zeros, the block formats row 0 again (a column that is never stored).
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

// Dequantize-and-mma of one loaded tile of a block format (the Tile<F> formats), into two
// accumulator sets (two independent mma chains; the caller adds acc2 into acc at the end).
template <WFormat F, int NT, class XL = GlobalX>
__device__ __forceinline__ void compute_tile(const typename Tile<F>::Raw& cur, float (&acc)[NT][4],
                                             float (&acc2)[NT][4], int t, const uint16_t* const (&xb)[NT]) {
  if constexpr (F == WFormat::kQ4_K) {
    compute_qk45<NT, false, XL>(cur, acc, acc2, t, xb);
  } else if constexpr (F == WFormat::kQ5_K) {
    compute_qk45<NT, true, XL>(cur, acc, acc2, t, xb);
  } else {
    Tile<F>::template compute<NT, XL>(cur, acc, acc2, t, xb);
  }
}

// acc += acc2.
template <int NT>
__device__ __forceinline__ void add_acc(float (&acc)[NT][4], const float (&acc2)[NT][4]) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    for (int i = 0; i < 4; ++i) acc[ct][i] += acc2[ct][i];
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
