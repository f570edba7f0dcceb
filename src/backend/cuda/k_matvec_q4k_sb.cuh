// Q4_K tiles with the sub-block scales applied after the mma (decision 0024), for the
// bulk-copy matvec (k_matvec_stream.cu). The weights enter the mma as stored: a low nibble q
// as the f16 1024 + q, a high nibble as 64 + q (one LOP3 for two weights, no f16 arithmetic).
// For a sub-block j of 32 weights w_k = s_j q_k - m_j (s = d sc_j, m = dmin mn_j, spec §5.2)
// and activations x_k:
//   sum_k w_k x_k = s_j P'_j + c_j S_j,  P'_j = sum_k (bias + q_k) x_k,  S_j = sum_k x_k,
//   c_j = -m_j - bias s_j  (bias 1024 for even j, the low nibbles; 64 for odd j).
// P' comes from the weight mma, S from a second mma on the same activation operand with an
// all-ones A; s, c are f32 and applied by four FFMAs a row and sub-block pair.
//
// The mma cannot keep sub-blocks apart along k, so they are kept apart in the columns:
//  - one activation row (decode, q4k_sb_decode_tile): column n of the mma is sub-block n of
//    the tile. Lane (g, t) supplies its activations to column g only where its elements are
//    sub-block g (at most one of its four 16-element runs), zeros elsewhere; its result
//    columns 2t, 2t + 1 are then sub-blocks 2t (low-nibble chain) and 2t + 1 (high), the pair
//    q = t.
//  - 2..16 rows (verify, q4k_sb_verify_tile): passes of 4 rows; column n is (row 4p + n / 2,
//    the lanes t / 2 == n % 2), one chain per (half, nibble); lane (g, t) gets row 4p + t's
//    sums of all four pairs.
// Each column sums the same products in the same order in both (the decode column also adds
// all-zero steps, which leave it unchanged), the pair terms are accumulated in the same order
// (sb_accumulate) and the four pairs of a row summed as (q0 + q1) + (q2 + q3), so a verify row
// equals the row decoded alone bit for bit.
#pragma once

#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda::mv {

constexpr uint32_t kOnesH2 = 0x3C003C00u;  // f16 1.0 in both halves

// The f32 terms of sub-blocks 2q (low nibbles: se, ce) and 2q + 1 (high: so, co) of a Q4_K
// header h (d, dmin in h.x; the 12 scale bytes in h.y, h.z, h.w; get_scale_min_k4 of spec
// §5.2). q may differ between lanes. Exact up to ce / co (d sc is a 17-bit product).
struct SbScale {
  float se, ce, so, co;
};
__device__ __forceinline__ float small_uint_f32(uint32_t u) {  // exact for u < 2^23
  return __uint_as_float(u | 0x4B000000u) - 8388608.f;
}
__device__ __forceinline__ SbScale q4k_pair_scale(const uint4& h, int q) {
  // Bytes 2 (q & 1) and + 1 of each word into the two 16-bit halves.
  const uint32_t sel = 0x4140u + 0x0202u * static_cast<uint32_t>(q & 1);
  const uint32_t y = __byte_perm(h.y, 0u, sel), z = __byte_perm(h.z, 0u, sel), w = __byte_perm(h.w, 0u, sel);
  const bool upper = q >= 2;  // sub-blocks 4..7: 4 bits from h.w, the top 2 from the top of h.y / h.z
  const uint32_t sh = upper ? 2u : 0u;
  const uint32_t sc = ((upper ? w : y) & 0x000F000Fu) | ((y >> sh) & 0x00300030u);
  const uint32_t mn = ((upper ? (w >> 4) : z) & 0x000F000Fu) | ((z >> sh) & 0x00300030u);
  const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x & 0xFFFFu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x >> 16)));
  SbScale s;
  s.se = d * small_uint_f32(sc & 0xFFFFu);
  s.so = d * small_uint_f32(sc >> 16);
  s.ce = fmaf(-1024.f, s.se, -(dmin * small_uint_f32(mn & 0xFFFFu)));
  s.co = fmaf(-64.f, s.so, -(dmin * small_uint_f32(mn >> 16)));
  return s;
}

// A row's sum over one sub-block pair: acc += se P'e + ce Se + so P'o + co So, in this order
// (decode and verify both call this).
__device__ __forceinline__ void sb_accumulate(float& acc, const SbScale& s, float pe, float se_sum, float po,
                                              float so_sum) {
  acc = fmaf(s.se, pe, acc);
  acc = fmaf(s.ce, se_sum, acc);
  acc = fmaf(s.so, po, acc);
  acc = fmaf(s.co, so_sum, acc);
}

// The A fragments of word w of a lane's qs run (rows g and g + 8): low nibbles as 1024 + q,
// high nibbles as 64 + q (elements 0, 2 of the word's 4 and 1, 3, as compute_qk45 pairs them).
struct SbWeights {
  uint32_t lo02_0, lo02_1, lo13_0, lo13_1, hi02_0, hi02_1, hi13_0, hi13_1;
};
__device__ __forceinline__ SbWeights sb_weights(uint32_t q0, uint32_t q1) {
  const uint32_t q80 = q0 >> 8, q81 = q1 >> 8;
  SbWeights a;
  a.lo02_0 = and_or(q0, 0x000F000Fu, kMagic);
  a.lo13_0 = and_or(q80, 0x000F000Fu, kMagic);
  a.hi02_0 = and_or(q0, 0x00F000F0u, kMagic64);
  a.hi13_0 = and_or(q80, 0x00F000F0u, kMagic64);
  a.lo02_1 = and_or(q1, 0x000F000Fu, kMagic);
  a.lo13_1 = and_or(q81, 0x000F000Fu, kMagic);
  a.hi02_1 = and_or(q1, 0x00F000F0u, kMagic64);
  a.hi13_1 = and_or(q81, 0x00F000F0u, kMagic64);
  return a;
}

// The weight mma and the ones mma of one step on the activation words (b0, b1).
__device__ __forceinline__ void sb_step(float (&d)[4], float (&o)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
  mma_16816(d, a0, a1, a2, a3, b0, b1);
  mma_16816(o, kOnesH2, kOnesH2, kOnesH2, kOnesH2, b0, b1);
}

// Decode: one tile for one activation row. xp[2 h + hi] points to the 16 activations the lane
// supplies to the (half h, low / high nibble) steps: its own run where that run is sub-block g,
// else 16 zeros. acc[r] accumulates pair q = t of row g + 8 r.
template <class XL>
__device__ __forceinline__ void q4k_sb_decode_tile(const typename TileQK45<false>::Raw& r, float (&acc)[2], int t,
                                                   const uint16_t* const (&xp)[4]) {
  float dlo[4] = {0.f, 0.f, 0.f, 0.f}, olo[4] = {0.f, 0.f, 0.f, 0.f};
  float dhi[4] = {0.f, 0.f, 0.f, 0.f}, ohi[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint4* plo = reinterpret_cast<const uint4*>(xp[2 * h]);
    const uint4* phi = reinterpret_cast<const uint4*>(xp[2 * h + 1]);
    const uint4 xlo[2] = {XL::ld(plo), XL::ld(plo + 1)};
    const uint4 xhi[2] = {XL::ld(phi), XL::ld(phi + 1)};
    const uint4& q0v = h == 0 ? r.qa0 : r.qb0;
    const uint4& q1v = h == 0 ? r.qa1 : r.qb1;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const SbWeights a = sb_weights(u4_get(q0v, w), u4_get(q1v, w));
      const uint4& l = xlo[w >> 1];
      const uint4& u = xhi[w >> 1];
      sb_step(dlo, olo, a.lo02_0, a.lo02_1, a.lo13_0, a.lo13_1, (w & 1) ? l.z : l.x, (w & 1) ? l.w : l.y);
      sb_step(dhi, ohi, a.hi02_0, a.hi02_1, a.hi13_0, a.hi13_1, (w & 1) ? u.z : u.x, (w & 1) ? u.w : u.y);
    }
  }
  const SbScale s0 = q4k_pair_scale(r.h0, t), s1 = q4k_pair_scale(r.h1, t);
  sb_accumulate(acc[0], s0, dlo[0], olo[0], dhi[1], ohi[1]);  // row g: columns 2t (low), 2t + 1 (high)
  sb_accumulate(acc[1], s1, dlo[2], olo[2], dhi[3], ohi[3]);  // row g + 8
}

// Verify's exchange of the pair terms: lane l's SbScale of rows g, g + 8 as two float4 (low
// nibbles: se0 ce0 se1 ce1; high: so0 co0 so1 co1) at kSbLaneStride l + 16 (l / 4) bytes of its
// warp's kSbWarpBytes, so that the 8 lanes (g, q) a load reads hit distinct banks.
constexpr int kSbLaneStride = 32;
constexpr int kSbWarpBytes = 32 * kSbLaneStride + 8 * 16;
__device__ __forceinline__ float4* sb_slot(uint8_t* warp_base, int l, int hi) {
  return reinterpret_cast<float4*>(warp_base + kSbLaneStride * l + 16 * (l >> 2) + 16 * hi);
}

// Verify: one tile for up to 4 NP activation rows (passes p < ceil(n / 4)). xp[p] points to
// the lane's run of pass p's row 4p + g / 2 at the tile (for lanes t / 2 == g % 2 of rows
// < n; others to 512 zero bytes): the (half h, nibble hi) run is at element 128 h + 32 hi.
// acc[p][q][r] accumulates pair q of row g + 8 r for activation row 4p + t. xchg: the warp's
// kSbWarpBytes of shared memory.
template <int NP, class XL>
__device__ __forceinline__ void q4k_sb_verify_tile(const typename TileQK45<false>::Raw& r, float (&acc)[NP][4][2],
                                                   int t, int lane, int n, const uint16_t* const (&xp)[NP],
                                                   uint8_t* xchg) {
  {
    const SbScale s0 = q4k_pair_scale(r.h0, t), s1 = q4k_pair_scale(r.h1, t);
    __syncwarp();  // the previous tile's reads of the exchange are done
    *sb_slot(xchg, lane, 0) = make_float4(s0.se, s0.ce, s1.se, s1.ce);
    *sb_slot(xchg, lane, 1) = make_float4(s0.so, s0.co, s1.so, s1.co);
    __syncwarp();
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint4& q0v = h == 0 ? r.qa0 : r.qb0;
    const uint4& q1v = h == 0 ? r.qa1 : r.qb1;
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      uint32_t a[4][4];  // the A fragments of words 0..3 for this nibble
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const SbWeights v = sb_weights(u4_get(q0v, w), u4_get(q1v, w));
        a[w][0] = hi ? v.hi02_0 : v.lo02_0;
        a[w][1] = hi ? v.hi02_1 : v.lo02_1;
        a[w][2] = hi ? v.hi13_0 : v.lo13_0;
        a[w][3] = hi ? v.hi13_1 : v.lo13_1;
      }
#pragma unroll
      for (int p = 0; p < NP; ++p) {
        if (p > 0 && 4 * p >= n) break;
        const uint4* px = reinterpret_cast<const uint4*>(xp[p]) + 16 * h + 4 * hi;
        const uint4 xv[2] = {XL::ld(px), XL::ld(px + 1)};
        float d[4] = {0.f, 0.f, 0.f, 0.f}, o[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const uint4& v = xv[w >> 1];
          sb_step(d, o, a[w][0], a[w][1], a[w][2], a[w][3], (w & 1) ? v.z : v.x, (w & 1) ? v.w : v.y);
        }
        // Columns 2t (pair 2h + k, k = 0) and 2t + 1 (k = 1) of rows g (i = k) and g + 8
        // (i = 2 + k); pair 2h + k's terms of rows g, g + 8 come from lane (g, 2h + k).
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const float4 sc = *sb_slot(xchg, (lane & ~3) | (2 * h + k), hi);
#pragma unroll
          for (int rr = 0; rr < 2; ++rr) {
            // sb_accumulate's terms in its order: the low nibbles' two, then (hi) the high ones'.
            float& A = acc[p][2 * h + k][rr];
            A = fmaf(rr ? sc.z : sc.x, d[2 * rr + k], A);
            A = fmaf(rr ? sc.w : sc.y, o[2 * rr + k], A);
          }
        }
      }
    }
  }
}

// Writes a lane's row sums in the pass layout of the two functions above (acc[p / 2][2 (p % 2)
// + r]: activation row 4p + t, output row row0 + 8 r) to y, undoing the activation scaling.
template <int NT>
__device__ __forceinline__ void store_rows_passes(const float (&acc)[NT][4], const RowPtrs& R, int64_t row0, int t,
                                                  const float* __restrict__ xscale, MatF y) {
  const int n = static_cast<int>(y.rows);
#pragma unroll
  for (int p = 0; p < 2 * NT; ++p) {
    const int col = 4 * p + t;
    if (col >= n) continue;
    const float s = xscale[col];
    float* yr = y.data + static_cast<int64_t>(col) * y.stride;
    if (R.ok0) yr[row0] = acc[p >> 1][2 * (p & 1)] * s;
    if (R.ok1) yr[row0 + 8] = acc[p >> 1][2 * (p & 1) + 1] * s;
  }
}

}  // namespace gs::cuda::mv
