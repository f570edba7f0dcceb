// The integer path of the bulk-copy decode matvec for Q4_K (decision 0024): the activations
// as two int8 planes per block of 32, the weights' 4-bit codes used as they are, and exact
// integer dot products per sub-block (dp4a for one activation row, the m16n8k32 u8 x s8
// tensor-core mma for 2..16), then the block scales in f32.
//
// The x8 operand of n activation rows of n_in_pad elements (n_in_pad a multiple of 256):
//   codes: [n][n_in_pad / 32][64 bytes]: per block, for t = 0..3, bytes [16t, 16t + 8) hold
//          plane 1 of elements 8t..8t+7 and bytes [16t + 8, 16t + 16) plane 2 of the same;
//   meta:  [n][n_in_pad / 32] float2 {dxs, S} after all codes.
// Element i of a block is x_i ~= dxs * (128 q1_i + q2_i) with dx = amax / 127, dxs = dx / 128,
// q1 = rint(x / dx) in [-127, 127] and q2 = rint(128 (x / dx - q1)) in [-64, 64]: an error of
// at most amax / 32512 (+ f32 rounding), below the f16 operand's 2^-11 |x| for all but the
// block's smallest elements. S is the f32 sum of the block's 32 exact inputs (for the
// Q4_K mins).
//
// The arithmetic is the same for every activation row count, so a verify pass reproduces
// decode exactly (k_matvec_stream.cu's contract). For weight row r, activation row a and
// sub-block j of a tile, I_j = sum of code_w * (128 q1 + q2) over the sub-block is an exact
// integer (code_w = the low nibble, or the high nibble times 16, as the weights store them);
// then with dsc_j = d * sc_j (/ 16 for high nibbles) and dmm_j = dmin * m_j (spec §5.2),
//   P_c = fma(-dmm_j, S_j, fma(I_j dxs_j, dsc_j, P_c))
// for j = 2c, then j = 2c + 1 (c = 0..3, one partial per 64-element chunk c), tile after tile
// in the warp's order; the warp's result is (P_0 + P_1) + (P_2 + P_3). The dp4a lane t holds
// P_t itself (chunk t of its rows); the mma lane holds all four P_c of its (row, column)
// entries. Each step is one IEEE rounding (fmul_rn / fma_rn), never contracted differently.
#pragma once

#include <cstdint>

#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda::mv {

constexpr int kX8Block = 32;       // activations per block (one Q4_K sub-block)
constexpr int kX8BlockBytes = 64;  // two int8 planes
// Bytes of the x8 operand of n rows of n_in_pad activations.
__host__ __device__ constexpr int64_t x8_bytes(int64_t n, int64_t n_in_pad) {
  return n * (n_in_pad / kX8Block) * (kX8BlockBytes + 8);
}

// Quantizes block b of the f16 operand (xh + 32 b, 16-byte aligned; each group of 4 stored
// in the order 0, 2, 1, 3, cuda_kernels.h) into codes + 64 b and meta[b]. Deterministic: the
// same block always gives the same bytes.
__device__ __forceinline__ void x8_quantize_block(const uint16_t* __restrict__ xh, int64_t b, uint8_t* codes,
                                                  float2* meta) {
  const uint4* src = reinterpret_cast<const uint4*>(xh + b * kX8Block);
  float v[32];  // in element order
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 u = __ldg(src + i);
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // word k: stored positions 8i + 2k, +1 of group 2i + k / 2
      const int e = 8 * i + 4 * (k >> 1) + (k & 1);
      v[e] = f16_bits_to_f32(static_cast<uint16_t>(w[k] & 0xffffu));
      v[e + 2] = f16_bits_to_f32(static_cast<uint16_t>(w[k] >> 16));
    }
  }
  float amax = 0.f, s = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    amax = fmaxf(amax, fabsf(v[i]));
    s = fadd_rn(s, v[i]);
  }
  const float dx = fdiv_rn(amax, 127.f);
  const float inv = amax > 0.f ? fdiv_rn(127.f, amax) : 0.f;
  uint32_t p1[8], p2[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) p1[i] = p2[i] = 0u;
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const float y = fmul_rn(v[i], inv);
    const int q1 = max(-127, min(127, f2i_rn(y)));
    const int q2 = max(-64, min(64, f2i_rn(fmul_rn(y - static_cast<float>(q1), 128.f))));
    p1[i / 4] |= (static_cast<uint32_t>(q1) & 0xffu) << (8 * (i % 4));
    p2[i / 4] |= (static_cast<uint32_t>(q2) & 0xffu) << (8 * (i % 4));
  }
  uint4* dst = reinterpret_cast<uint4*>(codes + b * kX8BlockBytes);
#pragma unroll
  for (int t = 0; t < 4; ++t) dst[t] = make_uint4(p1[2 * t], p1[2 * t + 1], p2[2 * t], p2[2 * t + 1]);
  meta[b] = make_float2(fmul_rn(dx, 1.f / 128.f), s);
}

// Where the x8 operand is read from (the bulk-copy matvec's shared copy or global memory).
template <class XL>
__device__ __forceinline__ float4 x8_meta4(const float2* p) {
  const uint4 u = XL::ld(reinterpret_cast<const uint4*>(p));
  return make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z), __uint_as_float(u.w));
}

// Scales of sub-blocks 2c and 2c + 1 of a Q4_K header h (d, dmin, 12 scale bytes) in f32:
// dsc = d sc (the high nibble's divided by 16: its codes are stored times 16) and dmm = dmin m.
// half = c / 2, ka = 2 (c % 2) (see k_scales2 for the byte positions).
__device__ __forceinline__ void k_scales_f32(const uint4& h, int half, int ka, float& dsc_lo, float& dsc_hi,
                                             float& dmm_lo, float& dmm_hi) {
  const uint32_t sel = 0x4140u + 0x0101u * static_cast<uint32_t>(ka);
  // Both halves' formulas, then a select (half is run-time in the dp4a lanes: no branch).
  const uint32_t w = __byte_perm(h.w, 0u, sel), y = __byte_perm(h.y, 0u, sel), z = __byte_perm(h.z, 0u, sel);
  const uint32_t sc = half == 0 ? (y & 0x003F003Fu) : ((w & 0x000F000Fu) | ((y >> 2) & 0x00300030u));
  const uint32_t mn = half == 0 ? (z & 0x003F003Fu) : (((w >> 4) & 0x000F000Fu) | ((z >> 2) & 0x00300030u));
  const float d = f16_bits_to_f32(static_cast<uint16_t>(h.x & 0xffffu));
  const float dmin = f16_bits_to_f32(static_cast<uint16_t>(h.x >> 16));
  dsc_lo = fmul_rn(d, static_cast<float>(sc & 0xffffu));
  dsc_hi = fmul_rn(fmul_rn(d, static_cast<float>(sc >> 16)), 0.0625f);
  dmm_lo = fmul_rn(dmin, static_cast<float>(mn & 0xffffu));
  dmm_hi = fmul_rn(dmin, static_cast<float>(mn >> 16));
}

// One sub-block's step of a partial (the contract above).
__device__ __forceinline__ float x8_step(float p, int isum, float dxs, float dsc, float dmm, float s) {
  return fma_rn(-dmm, s, fma_rn(fmul_rn(static_cast<float>(isum), dxs), dsc, p));
}

// ---- one activation row: dp4a ---------------------------------------------------------------
// Lane (g, t) takes chunk t (sub-blocks 2t, 2t + 1: bytes [32t, 32t + 32) of the qs) of rows
// g and g + 8 of the tile-major Q4_K tile (cuda_weight_layout.h: 32 contiguous bytes at
// (t / 2) 512 + 64 g + 32 (t % 2), row g + 8 1024 further on; headers at 2048 + 16 row).
struct X8DpRaw {
  uint4 a0, b0, a1, b1;  // row g: qs bytes [32t, +16), [32t + 16, +16); row g + 8 the same
  uint4 h0, h1;          // the two rows' headers
};
__device__ __forceinline__ int x8_dp_offset(int g, int t) { return (t >> 1) * 512 + 64 * g + 32 * (t & 1); }
__device__ __forceinline__ void x8_dp_load(X8DpRaw& r, const uint8_t* tile, int woff, int g) {
  const uint8_t* p = tile + woff;
  r.a0 = *reinterpret_cast<const uint4*>(p);
  r.b0 = *reinterpret_cast<const uint4*>(p + 16);
  r.a1 = *reinterpret_cast<const uint4*>(p + 1024);
  r.b1 = *reinterpret_cast<const uint4*>(p + 1040);
  r.h0 = *reinterpret_cast<const uint4*>(tile + 2048 + 16 * g);
  r.h1 = *reinterpret_cast<const uint4*>(tile + 2048 + 16 * (g + 8));
}
// I for one row and both sub-blocks of the chunk: word w (bytes 4w..4w+3) pairs with
// elements 4w..4w+3 of the block, i.e. group w / 2 of x8's layout, half w % 2.
__device__ __forceinline__ void x8_dp_isums(const uint4& qa, const uint4& qb, const uint4 (&xl)[4],
                                            const uint4 (&xh)[4], int& ilo, int& ihi) {
  const uint32_t q[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
  int l1 = 0, h1 = 0;
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    const uint4& a = xl[w >> 1];
    const uint4& b = xh[w >> 1];
    l1 = dp4a_us(q[w] & 0x0F0F0F0Fu, (w & 1) ? a.y : a.x, l1);
    h1 = dp4a_us(q[w] & 0xF0F0F0F0u, (w & 1) ? b.y : b.x, h1);
  }
  int l2 = l1 << 7, h2 = h1 << 7;
#pragma unroll
  for (int w = 0; w < 8; ++w) {
    const uint4& a = xl[w >> 1];
    const uint4& b = xh[w >> 1];
    l2 = dp4a_us(q[w] & 0x0F0F0F0Fu, (w & 1) ? a.w : a.z, l2);
    h2 = dp4a_us(q[w] & 0xF0F0F0F0u, (w & 1) ? b.w : b.z, h2);
  }
  ilo = l2;
  ihi = h2;
}
// acc0 / acc1: lane t's partial P_t of rows g / g + 8 (activation row 0). xq: the activation
// row's codes of block 8 T + 2t (this tile's), xm: its meta of that block.
template <class XL>
__device__ __forceinline__ void x8_dp_tile(const X8DpRaw& r, float& acc0, float& acc1, int t, const uint8_t* xq,
                                           const float2* xm) {
  uint4 xl[4], xh[4];
  const uint4* xv = reinterpret_cast<const uint4*>(xq);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    xl[i] = XL::ld(xv + i);
    xh[i] = XL::ld(xv + 4 + i);
  }
  const float4 m = x8_meta4<XL>(xm);  // {dxs_lo, S_lo, dxs_hi, S_hi}
  const int half = t >> 1, ka = 2 * (t & 1);
  float s0l, s0h, m0l, m0h, s1l, s1h, m1l, m1h;
  k_scales_f32(r.h0, half, ka, s0l, s0h, m0l, m0h);
  k_scales_f32(r.h1, half, ka, s1l, s1h, m1l, m1h);
  int i0l, i0h, i1l, i1h;
  x8_dp_isums(r.a0, r.b0, xl, xh, i0l, i0h);
  x8_dp_isums(r.a1, r.b1, xl, xh, i1l, i1h);
  acc0 = x8_step(acc0, i0l, m.x, s0l, m0l, m.y);
  acc0 = x8_step(acc0, i0h, m.z, s0h, m0h, m.w);
  acc1 = x8_step(acc1, i1l, m.x, s1l, m1l, m.y);
  acc1 = x8_step(acc1, i1h, m.z, s1h, m1h, m.w);
}
// The warp's sum (P_0 + P_1) + (P_2 + P_3) of a dp4a lane's partial, in every lane of the quad.
__device__ __forceinline__ float x8_dp_reduce(float p) {
  p += __shfl_xor_sync(0xffffffffu, p, 1);
  p += __shfl_xor_sync(0xffffffffu, p, 2);
  return p;
}

// ---- 2..16 activation rows: m16n8k32 -------------------------------------------------------
// The mma's k slots 4t..4t+3 hold elements 8t..8t+3 of the sub-block and slots 16+4t.. hold
// 8t+4..8t+7 (any pairing of slots and elements gives the same exact sum, as long as A and B
// agree), so lane (g, t) reads qs bytes [8t, 8t + 8) of each chunk of rows g and g + 8, and
// the B operand of column g is group t of the block in x8's layout.
struct X8MmaRaw {
  uint2 w0[4], w1[4];  // chunk c: row g, row g + 8
  uint4 h0, h1;
};
__device__ __forceinline__ int x8_mma_offset(int g, int t) { return 64 * g + 8 * t; }
__device__ __forceinline__ void x8_mma_load(X8MmaRaw& r, const uint8_t* tile, int woff, int g) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint8_t* p = tile + woff + (c >> 1) * 512 + 32 * (c & 1);
    r.w0[c] = *reinterpret_cast<const uint2*>(p);
    r.w1[c] = *reinterpret_cast<const uint2*>(p + 1024);
  }
  r.h0 = *reinterpret_cast<const uint4*>(tile + 2048 + 16 * g);
  r.h1 = *reinterpret_cast<const uint4*>(tile + 2048 + 16 * (g + 8));
}
// P[c][ct][e]: partial c of the lane's C-fragment entry e (rows g, g, g+8, g+8; columns 2t,
// 2t+1 of column tile ct). xb[ct]: the codes of column ct * 8 + g at this tile's block 0 plus
// 16 t; xmc[ct][jj]: the meta of column ct * 8 + 2t + jj at this tile's block 0.
template <int NT, class XL>
__device__ __forceinline__ void x8_mma_tile(const X8MmaRaw& r, float (&P)[4][NT][4], const uint8_t* const (&xb)[NT],
                                            const float2* const (&xmc)[NT][2]) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    float s0l, s0h, m0l, m0h, s1l, s1h, m1l, m1h;
    k_scales_f32(r.h0, c >> 1, 2 * (c & 1), s0l, s0h, m0l, m0h);
    k_scales_f32(r.h1, c >> 1, 2 * (c & 1), s1l, s1h, m1l, m1h);
    float4 mm[NT][2];  // {dxs, S} of blocks 2c and 2c + 1 of each column
#pragma unroll
    for (int ct = 0; ct < NT; ++ct)
      for (int jj = 0; jj < 2; ++jj) mm[ct][jj] = x8_meta4<XL>(xmc[ct][jj] + 2 * c);
#pragma unroll
    for (int nib = 0; nib < 2; ++nib) {
      const uint32_t mask = nib ? 0xF0F0F0F0u : 0x0F0F0F0Fu;
      const uint32_t a0 = r.w0[c].x & mask, a2 = r.w0[c].y & mask, a1 = r.w1[c].x & mask, a3 = r.w1[c].y & mask;
      const int j = 2 * c + nib;  // the sub-block
      const float dsc0 = nib ? s0h : s0l, dsc1 = nib ? s1h : s1l, dmm0 = nib ? m0h : m0l, dmm1 = nib ? m1h : m1l;
#pragma unroll
      for (int ct = 0; ct < NT; ++ct) {
        const uint4 b = XL::ld(reinterpret_cast<const uint4*>(xb[ct] + j * kX8BlockBytes));
        int C[4] = {0, 0, 0, 0};
        mma_16832_u8s8(C, a0, a1, a2, a3, b.x, b.y);
#pragma unroll
        for (int e = 0; e < 4; ++e) C[e] <<= 7;
        mma_16832_u8s8(C, a0, a1, a2, a3, b.z, b.w);
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const float dxs = nib ? mm[ct][jj].z : mm[ct][jj].x, sum = nib ? mm[ct][jj].w : mm[ct][jj].y;
          P[c][ct][jj] = x8_step(P[c][ct][jj], C[jj], dxs, dsc0, dmm0, sum);
          P[c][ct][2 + jj] = x8_step(P[c][ct][2 + jj], C[2 + jj], dxs, dsc1, dmm1, sum);
        }
      }
    }
  }
}
// The warp's sums (P_0 + P_1) + (P_2 + P_3) into the C-fragment accumulators; P cleared.
template <int NT>
__device__ __forceinline__ void x8_mma_reduce(float (&P)[4][NT][4], float (&acc)[NT][4]) {
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      acc[ct][e] = (P[0][ct][e] + P[1][ct][e]) + (P[2][ct][e] + P[3][ct][e]);
      P[0][ct][e] = P[1][ct][e] = P[2][ct][e] = P[3][ct][e] = 0.f;
    }
}

}  // namespace gs::cuda::mv
