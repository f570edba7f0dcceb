// The Q4_K and Q6_K tiles of the bulk-copy matvec (k_matvec_stream.cu) in the exact-fma form:
// one HFMA2 per weight pair instead of a subtraction and a multiply-add. Decision 0019.
//
// The LOP3 of k_matvec_tiles.cuh makes M + q out of a nibble (M = 1024 for bits 0..3, 64 for
// bits 4..7); with c = -M s (exact: a power-of-two multiple of the f16 scale s),
// fma(M + q, s, c) = s q with one rounding, the rounding of the older tiles' s q - m less the
// offset. The offset that remains, the Q4_K min m of each sub-block of 32 (w = s q - m) or the
// Q6_K -32 s of each sub-block of 16 (w = s (q - 32)), is linear in the sum of the
// activations over the sub-block, so one (Q4_K) or two (Q6_K) extra mma steps per tile add it:
// A = the per-sub-block offsets of the 16 rows, B = the activation block sums that the
// conversion kernels wrote after the operand (write_block_sums, k_common.cuh), as hi and lo
// f16 parts. Offsets and sums are scaled by powers of two (32 m against sum / 32, -512 s against
// sum / 16) so that the sums stay below 2^11; with the scale limits of scales_fit_exact_fma
// (cuda_weight_repack.h) every f16 here is finite.
//
// Lane mapping and tile contents are those of k_matvec_tiles.cuh (Tile<F>::Raw and load).
// Each activation row (mma column) is computed alone, as there.
#pragma once

#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda::mv {

__device__ __forceinline__ uint32_t ld_u32(const uint16_t* p) { return __ldg(reinterpret_cast<const unsigned*>(p)); }

// The scales s = (s_klo, s_khi) of sub-blocks klo = ka + 4 half and klo + 1 (as k_scales2)
// and 32 times their negated mins.
__device__ __forceinline__ void k_scales2_x32(const uint4& h, int half, uint32_t sel, __half2& s, __half2& m32) {
  __half2 m;
  k_scales2(h, half, sel, s, m);
  m32 = __hmul2(m, __float2half2_rn(32.f));
}

// Q4_K: the 8 sub-blocks of 32 of a tile. Lane t holds sub-blocks ka, ka + 1 (half 0) and
// ka + 4, ka + 5 (half 1), ka = 2 (t / 2); for the min step it contributes the pair
// P = ka + 4 (t % 2) (t = 0..3: 0, 4, 2, 6): A's k = 2t, 2t + 1 and 2t + 8, 2t + 9 are both
// that pair's 32 (-m), B's the hi and the lo parts of its sums.
template <int NT, class XL = GlobalX>
__device__ __forceinline__ void compute_q4k_fma(const Tile<WFormat::kQ4_K>::Raw& r, float (&acc)[NT][4],
                                                float (&acc2)[NT][4], int t, const uint16_t* const (&xb)[NT],
                                                const uint16_t* const (&xs)[NT]) {
  const int ka = 2 * (t >> 1);
  const uint32_t sel = 0x4140u + 0x0101u * static_cast<uint32_t>(ka);
  const uint4* xq[NT];
  x_lane<NT>(xq, xb, 64 * (t >> 1) + 16 * (t & 1));
  const __half2 kc = __halves2half2(__float2half(-1024.f), __float2half(-64.f));  // c = -M s, low / high nibbles
  uint32_t mn0 = 0, mn1 = 0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    __half2 s0, m0, s1, m1;
    k_scales2_x32(r.h0, half, sel, s0, m0);
    k_scales2_x32(r.h1, half, sel, s1, m1);
    if ((t & 1) == half) {
      mn0 = h2_bits(m0);
      mn1 = h2_bits(m1);
    }
    const __half2 c0 = __hmul2(s0, kc), c1 = __hmul2(s1, kc);
    const __half2 s0l = __low2half2(s0), s0h = __high2half2(s0), c0l = __low2half2(c0), c0h = __high2half2(c0);
    const __half2 s1l = __low2half2(s1), s1h = __high2half2(s1), c1l = __low2half2(c1), c1h = __high2half2(c1);
    const uint4& q0v = half == 0 ? r.qa0 : r.qb0;
    const uint4& q1v = half == 0 ? r.qa1 : r.qb1;
    uint4 xlo[NT][2], xhi[NT][2];
    x_load16<NT, XL>(xlo, xq, 16 * half);
    x_load16<NT, XL>(xhi, xq, 16 * half + 4);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint32_t q0 = u4_get(q0v, w), q1 = u4_get(q1v, w);
      const uint32_t q80 = q0 >> 8, q81 = q1 >> 8;
      step_x<NT>(acc, h2_fma(and_or(q0, 0x000F000Fu, kMagic), s0l, c0l), h2_fma(and_or(q1, 0x000F000Fu, kMagic), s1l, c1l),
                 h2_fma(and_or(q80, 0x000F000Fu, kMagic), s0l, c0l), h2_fma(and_or(q81, 0x000F000Fu, kMagic), s1l, c1l),
                 xlo, w);
      step_x<NT>(acc2, h2_fma(and_or(q0, 0x00F000F0u, kMagic64), s0h, c0h),
                 h2_fma(and_or(q1, 0x00F000F0u, kMagic64), s1h, c1h), h2_fma(and_or(q80, 0x00F000F0u, kMagic64), s0h, c0h),
                 h2_fma(and_or(q81, 0x00F000F0u, kMagic64), s1h, c1h), xhi, w);
    }
  }
  const int p = ka + 4 * (t & 1);
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) mma_16816(acc2[ct], mn0, mn1, mn0, mn1, ld_u32(xs[ct] + p), ld_u32(xs[ct] + 8 + p));
}

// Q6_K: the 16 sub-blocks of 16 of a tile. Lane t holds sub-blocks t, 4 + t (half 0) and
// 8 + t, 12 + t (half 1); for the -32 steps A's k = 2t, 2t + 1 are -512 s of sub-blocks t,
// 4 + t and k = 2t + 8, 2t + 9 those of 8 + t, 12 + t, in the order of write_block_sums's
// sums of 16 (one step with the hi parts, one with the lo parts).
template <int NT, class XL = GlobalX>
__device__ __forceinline__ void compute_q6k_fma(const Tile<WFormat::kQ6_K>::Raw& r, float (&acc)[NT][4],
                                                float (&acc2)[NT][4], int t, const uint16_t* const (&xb)[NT],
                                                const uint16_t* const (&xs)[NT]) {
  const int el = 4 - 2 * (t >> 1);
  const uint4* xq[NT];
  x_lane<NT>(xq, xb, 16 * t);
  const __half2 kc = __halves2half2(__float2half(-1024.f), __float2half(-64.f));
  const __half2 k512 = __float2half2_rn(-512.f);
  uint32_t off0[2], off1[2];  // -512 (s_lo, s_hi) of rows g, g + 8, per half
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int bt = 8 * t;
    // (s of sub-block 8h + t, s of 8h + 4 + t) of each row, each one f16 rounding of d * sc.
    const __half2 sp0 = __floats2half2_rn(r.d0 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc0, 2 * h) >> bt)),
                                          r.d0 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc0, 2 * h + 1) >> bt)));
    const __half2 sp1 = __floats2half2_rn(r.d1 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc1, 2 * h) >> bt)),
                                          r.d1 * static_cast<float>(static_cast<int8_t>(u4_get(r.sc1, 2 * h + 1) >> bt)));
    off0[h] = h2_bits(__hmul2(sp0, k512));
    off1[h] = h2_bits(__hmul2(sp1, k512));
    const __half2 cp0 = __hmul2(sp0, kc), cp1 = __hmul2(sp1, kc);
    const __half2 slo0 = __low2half2(sp0), shi0 = __high2half2(sp0), clo0 = __low2half2(cp0), chi0 = __high2half2(cp0);
    const __half2 slo1 = __low2half2(sp1), shi1 = __high2half2(sp1), clo1 = __low2half2(cp1), chi1 = __high2half2(cp1);
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
      const uint32_t e0 = er0 << el, e1 = er1 << el;
      const uint32_t e80 = (er0 >> 8) << el, e81 = (er1 >> 8) << el;
      const uint32_t q80 = q0 >> 8, q81 = q1 >> 8;
      // 1024 + q6 (low nibbles) and 64 + q6 (high nibbles), as Tile<kQ6_K>::compute.
      const uint32_t lo02_0 = and_or(q0, 0x000F000Fu, and_or(e0, 0x00300030u, kMagic));
      const uint32_t lo13_0 = and_or(q80, 0x000F000Fu, and_or(e80, 0x00300030u, kMagic));
      const uint32_t hi02_0 = and_or(q0, 0x00F000F0u, and_or(e0, 0x03000300u, kMagic64));
      const uint32_t hi13_0 = and_or(q80, 0x00F000F0u, and_or(e80, 0x03000300u, kMagic64));
      const uint32_t lo02_1 = and_or(q1, 0x000F000Fu, and_or(e1, 0x00300030u, kMagic));
      const uint32_t lo13_1 = and_or(q81, 0x000F000Fu, and_or(e81, 0x00300030u, kMagic));
      const uint32_t hi02_1 = and_or(q1, 0x00F000F0u, and_or(e1, 0x03000300u, kMagic64));
      const uint32_t hi13_1 = and_or(q81, 0x00F000F0u, and_or(e81, 0x03000300u, kMagic64));
      step_x<NT>(acc, h2_fma(lo02_0, slo0, clo0), h2_fma(lo02_1, slo1, clo1), h2_fma(lo13_0, slo0, clo0),
                 h2_fma(lo13_1, slo1, clo1), xlo, w);
      step_x<NT>(acc2, h2_fma(hi02_0, shi0, chi0), h2_fma(hi02_1, shi1, chi1), h2_fma(hi13_0, shi0, chi0),
                 h2_fma(hi13_1, shi1, chi1), xhi, w);
    }
  }
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    mma_16816(acc[ct], off0[0], off1[0], off0[1], off1[1], ld_u32(xs[ct] + 16 + 2 * t), ld_u32(xs[ct] + 24 + 2 * t));
    mma_16816(acc2[ct], off0[0], off1[0], off0[1], off1[1], ld_u32(xs[ct] + 32 + 2 * t), ld_u32(xs[ct] + 40 + 2 * t));
  }
}

// The block sums of one tile for each column tile (as x_operands: past the last activation
// row, row 0's).
template <int NT>
__device__ __forceinline__ void xs_operands(const uint16_t* xsum, int64_t row_stride, int64_t tile, int g, int n,
                                            const uint16_t* (&xs)[NT]) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
    const int col = ct * 8 + g;
    xs[ct] = xsum + static_cast<int64_t>(col < n ? col : 0) * row_stride + tile * kXsumPerTile;
  }
}

}  // namespace gs::cuda::mv
