// The int8 forms of the Q4_K decode matvec (decision 0028), used by k_matvec_stream.cu when
// GS_MVS_Q4K=1 (measured, not the default: see the decision).
//
// The activations are quantized per block of 32 elements to two int8 planes: with
// s = amax / 127, q1 = round(x / s) and q2 = round(256 (x - s q1) / s), so that
// x ~= xf (256 q1 + q2) with xf = s / 256, off by at most amax / 32512 (s / 512 unless q2
// clamps at 127; finer than the f16 operand's |x| / 2048 for |x| > amax / 16);
// xm = xf * sum (256 q1 + q2).
// Each 32-element sub-block of a Q4_K row gives an exact integer dot product of its nibbles
// with 256 q1 + q2 (two int8 products; |isum| < 2^24). Per (row, sub-block k) the result then
// takes, in f32,
//     + (d sc_k) * (isum_k * xf_k)  - (dmin mn_k) * xm_k            (spec §3: w = d sc q - dmin mn)
// with d sc_k and dmin mn_k rounded to f16 exactly as the f16 form does (k_scales2). The high
// nibbles (odd k) are taken as 16 q and their xf stored as xf / 16, the same product (kHi16 at
// plane_sum).
//
// Forms with the same bits (a verify pass reproduces decode; the emulator and
// CudaMatmul.VerifyRowsReproduceDecode check it):
// - one activation row (decode): no tensor cores. Each lane holds Tile<kQ4_K>'s registers
//   (rows g and g + 8, 16 bytes of chunks t/2 and 2 + t/2) and takes dp4a dot products of its
//   16 nibbles; the two lanes holding the two halves of a sub-block add their integer sums
//   (one shuffle each way), and the lane with t % 2 == 0 goes on with row g, the other with
//   row g + 8. The activations are quantized by the CTA into shared memory.
// - 2..16 activation rows (verify), GS_MVS_Q4K=1: compute_sb, one m16n8k32 u8 x s8 mma a
//   sub-block and plane for 16 weight rows x 8 activation rows (compute_sb4 for 2..4 rows:
//   one mma a sub-block for both planes of 4 activation rows). Its lanes read their own words
//   of the stage (load_sb: lane t of a group holds 8 bytes of every chunk, so the group's 4
//   lanes hold whole chunks and one mma's k range is one sub-block); the activations are
//   quantized into global memory by quantize_x8_kernel first, in the order the mma's k takes
//   them (X8Sb: both planes of a lane's 8 elements in one 16-byte load). Each lane's C fragment
//   (rows g, g + 8 x activation rows 2t, 2t + 1) goes through the one-row form's f32 steps
//   (i8_step), with the scales computed once a warp into a shared scratch.
// - 2..16 activation rows, GS_MVS_Q4K=2: compute_mma8 (twenty-first session), on
//   Tile<kQ4_K>'s registers, whose k ranges mix two chunks, so each mma serves 4 activation
//   rows; kept for the device A/B against compute_sb.
// All add the terms of a row in two sequences, S_0 over sub-blocks (0, 1, 4, 5) and S_2 over
// (2, 3, 6, 7), tile after tile, and S_0 + S_2 at the end of a warp's segment (acc / acc2 of
// the f16 form), so that every f32 operation is the same in all.
// Instructions a tile (SASS, scripts/sass_tile.py; docs/perf-notes.md, forty-third session):
// one row 211; compute_sb4 210 for 2..4 rows; compute_sb 310 for 5..8, 592 for 9..16;
// compute_mma8 338 for 2..4, 660 for 5..8; the f16 form 293 (337 for 9..16).
#pragma once

#include <cstdint>

#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda::mv {

// Where the quantized activations of R rows of K elements lie (shared memory for the
// one-row form, global memory for the others): q1 [R][K] int8, q2 [R][K] int8, then
// xf [R][K / 32] f32, then xm [R][K / 32] f32.
struct X8Rows {
  const int8_t* q;   // q1; q2 is plane elements further on
  int64_t plane;     // R K
  const float* xf;
  const float* xm;
};
__host__ __device__ inline int64_t x8_bytes(int64_t rows, int64_t k) { return 2 * rows * k + rows * (k / 32) * 8; }
__device__ __forceinline__ X8Rows x8_rows(const void* base, int rows, int64_t k) {
  const int8_t* q = static_cast<const int8_t*>(base);
  const float* xf = reinterpret_cast<const float*>(q + 2 * rows * k);
  return X8Rows{q, rows * k, xf, xf + rows * (k / 32)};
}

// The several-row form's layout of the same numbers (X8Sb, global memory): per activation row
// and block of 32, 64 bytes: for each 8-element piece P = 0..3 (elements 8P..8P+7), its 8 q1
// then its 8 q2 bytes, so that one 16-byte load gives a lane both planes of the piece it
// feeds the mma (compute_sb); then (xf, xm) as a float2 per row and block. x8_bytes of it.
struct X8Sb {
  const int8_t* q;    // [R][K / 32][4][16]
  const float2* fm;   // [R][K / 32]
};
__device__ __forceinline__ X8Sb x8_sb(const void* base, int rows, int64_t k) {
  const int8_t* q = static_cast<const int8_t*>(base);
  return X8Sb{q, reinterpret_cast<const float2*>(q + 2 * rows * k)};
}

// Quantizes 32-element blocks of the f16 operand (xh, rows of K elements with each group of 4
// stored as (0, 2, 1, 3), see row_write_f16) into the two planes q / q + plane (element
// order), or with kSb into the X8Sb layout (q, and xf / xm as float2 at xf; plane and xm
// unused). Block b of the flat [rows][K / 32] range goes to the 4 lanes 4 (b % 8).. of the warp
// whose turn it is: warp `wi` of `nw` takes blocks 8 wi + 8 nw i. The whole warp must call it
// (shuffles). Both layouts hold the same numbers (the same operations).
template <bool kSb = false>
__device__ __forceinline__ void quantize_x8_warp(const uint16_t* xh, int64_t K, int rows, int8_t* q, int64_t plane,
                                                 float* xf, float* xm, int64_t wi, int64_t nw, int lane) {
  const int64_t nblk = rows * (K / 32);
  for (int64_t b0 = wi * 8; b0 < nblk; b0 += nw * 8) {
    const int64_t b = b0 + (lane >> 2);
    const int p = lane & 3;
    const bool ok = b < nblk;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (ok) v = *reinterpret_cast<const uint4*>(xh + b * 32 + p * 8);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float f[8];
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 h = __half22float2(bits_h2(w[i]));
      f[2 * i] = h.x;
      f[2 * i + 1] = h.y;
      amax = fmaxf(amax, fmaxf(fabsf(h.x), fabsf(h.y)));
    }
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float s = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f, inv256 = inv * 256.f;
    uint32_t pk[2] = {0u, 0u}, pk2[2] = {0u, 0u};
    int sum = 0;  // of 256 q1 + q2, |sum| < 2^21
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int src = (i & 4) | ((i & 1) << 1) | ((i >> 1) & 1);  // 0 2 1 3 within a group of 4
      const int q1 = max(-127, min(127, __float2int_rn(__fmul_rn(f[src], inv))));
      const float r = fmaf(-s, static_cast<float>(q1), f[src]);  // the remainder, |r| <~ s / 2
      const int q2 = max(-127, min(127, __float2int_rn(__fmul_rn(r, inv256))));
      sum += 256 * q1 + q2;
      pk[i >> 2] |= (static_cast<uint32_t>(q1) & 0xffu) << (8 * (i & 3));
      pk2[i >> 2] |= (static_cast<uint32_t>(q2) & 0xffu) << (8 * (i & 3));
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (ok) {
      const float unit = s * (1.f / 256.f);
      // The xf of an odd block (the high nibbles of a Q4_K chunk, which the forms take as 16 q)
      // is unit / 16: float(16 isum) (xf / 16) is the product float(isum) xf, rounded once.
      const float f = (b & 1) ? unit * (1.f / 16.f) : unit;
      if constexpr (kSb) {
        *reinterpret_cast<uint4*>(q + b * 64 + p * 16) = make_uint4(pk[0], pk[1], pk2[0], pk2[1]);
        if (p == 0) reinterpret_cast<float2*>(xf)[b] = make_float2(f, __fmul_rn(unit, static_cast<float>(sum)));
      } else {
        *reinterpret_cast<uint2*>(q + b * 32 + p * 8) = make_uint2(pk[0], pk[1]);
        *reinterpret_cast<uint2*>(q + plane + b * 32 + p * 8) = make_uint2(pk2[0], pk2[1]);
        if (p == 0) {
          xf[b] = f;
          xm[b] = __fmul_rn(unit, static_cast<float>(sum));
        }
      }
    }
  }
}

// The activations of `rows` rows quantized into global memory before a several-row int8
// matvec: the x8_rows layout at out (compute_mma8), or with kSb the X8Sb one (compute_sb).
// Any grid; 256 threads.
template <bool kSb>
__global__ void __launch_bounds__(256) quantize_x8_kernel(const uint16_t* __restrict__ xh, int64_t K, int rows,
                                                          uint8_t* __restrict__ out) {
  GS_PDL_TRIGGER();  // the matvec's weights may start streaming
  GS_PDL_WAIT();     // xh is the predecessor's
  int8_t* q = reinterpret_cast<int8_t*>(out);
  float* xf = reinterpret_cast<float*>(out + 2 * rows * K);
  float* xm = xf + rows * (K / 32);
  const int64_t wi = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nw = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  quantize_x8_warp<kSb>(xh, K, rows, q, rows * K, xf, xm, wi, nw, threadIdx.x & 31);
}

// The two planes' integer sum of a sub-block: 256 i1 + i2. kHi16: every form takes the high
// nibbles of a byte as they lie, 16 q (one AND, no shift), so the sum of an odd sub-block is
// 16 times its value and the quantizer stores that block's xf divided by 16 (exact, a power of
// two far from underflow): float(16 isum) (xf / 16) and float(isum) xf are the same product,
// rounded once. |.| <= 257 * 32 * 240 * 127 < 2^28 with at most 24 significant bits (a
// multiple of 16 past 2^24), so exact as an int and as a float.
__device__ __forceinline__ int plane_sum(int i1, int i2) { return 256 * i1 + i2; }

// One chunk's step of a sequence: sub-blocks klo = 2c and khi = 2c + 1 of one row, with
// s = (d sc_lo, d sc_hi), m = (-dmin mn_lo, -dmin mn_hi) (k_scales2), the integer sums
// il / ih, and the activations' xf / xm of the two sub-blocks. Both forms call exactly this.
__device__ __forceinline__ float i8_step(float v, float2 s, float2 m, int il, int ih, float2 f, float2 xm) {
  v = fmaf(s.x, __fmul_rn(__int2float_rn(il), f.x), v);
  v = fmaf(s.y, __fmul_rn(__int2float_rn(ih), f.y), v);
  v = fmaf(m.x, xm.x, v);
  v = fmaf(m.y, xm.y, v);
  return v;
}

__device__ __forceinline__ void k_scales2_f(const uint4& h, int half, uint32_t sel, float2& s, float2& m) {
  __half2 sh, mh;
  k_scales2(h, half, sel, sh, mh);
  s = __half22float2(sh);
  m = __half22float2(mh);
}

// The one-row form on a tile that Tile<kQ4_K>::load left in r: adds lane t's sequence
// S_{2 (t / 2)} terms of row g (t even) or g + 8 (t odd) to v. q / xf / xm: the activations
// at the tile's first element / block (q2 `plane` bytes after q). The whole warp must call it
// (shuffles).
__device__ __forceinline__ void compute_dp4a(const Tile<WFormat::kQ4_K>::Raw& r, const int8_t* q, int64_t plane,
                                             const float* xf, const float* xm, float& v, int t) {
  const int p = t & 1, ka = 2 * (t >> 1);
  const uint32_t sel = 0x4140u + 0x0101u * static_cast<uint32_t>(ka);
  const uint4 hd = p ? r.h1 : r.h0;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int c = (ka >> 1) + 2 * half;
    const int8_t* xa = q + 64 * c + 16 * p;  // sub-block 2c, half p (2c + 1: 32 further on)
    const uint4 xl = *reinterpret_cast<const uint4*>(xa), xu = *reinterpret_cast<const uint4*>(xa + 32);
    const uint4 xl2 = *reinterpret_cast<const uint4*>(xa + plane), xu2 = *reinterpret_cast<const uint4*>(xa + plane + 32);
    const uint4& q0 = half == 0 ? r.qa0 : r.qb0;  // row g
    const uint4& q1 = half == 0 ? r.qa1 : r.qb1;  // row g + 8
    int al0 = 0, ah0 = 0, al1 = 0, ah1 = 0, bl0 = 0, bh0 = 0, bl1 = 0, bh1 = 0;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const int xw = static_cast<int>(u4_get(xl, w)), xv = static_cast<int>(u4_get(xu, w));
      const int yw = static_cast<int>(u4_get(xl2, w)), yv = static_cast<int>(u4_get(xu2, w));
      const uint32_t w0 = u4_get(q0, w), w1 = u4_get(q1, w);
      const int n0 = static_cast<int>(w0 & 0x0F0F0F0Fu), n1 = static_cast<int>(w1 & 0x0F0F0F0Fu);
      const uint32_t m0 = w0 & 0xF0F0F0F0u, m1 = w1 & 0xF0F0F0F0u;  // 16 q (kHi16)
      al0 = __dp4a(n0, xw, al0);
      ah0 = dp4a_us(m0, xv, ah0);
      al1 = __dp4a(n1, xw, al1);
      ah1 = dp4a_us(m1, xv, ah1);
      bl0 = __dp4a(n0, yw, bl0);
      bh0 = dp4a_us(m0, yv, bh0);
      bl1 = __dp4a(n1, yw, bl1);
      bh1 = dp4a_us(m1, yv, bh1);
    }
    al0 = plane_sum(al0, bl0);
    ah0 = plane_sum(ah0, bh0);
    al1 = plane_sum(al1, bl1);
    ah1 = plane_sum(ah1, bh1);
    // Lane t ^ 1 holds the other half of the same sub-blocks: each lane sends the sums of the
    // row its partner goes on with.
    const int rl = __shfl_xor_sync(0xffffffffu, p ? al0 : al1, 1);
    const int rh = __shfl_xor_sync(0xffffffffu, p ? ah0 : ah1, 1);
    const int il = (p ? al1 : al0) + rl, ih = (p ? ah1 : ah0) + rh;
    float2 s, m;
    k_scales2_f(hd, half, sel, s, m);
    v = i8_step(v, s, m, il, ih, *reinterpret_cast<const float2*>(xf + 2 * c),
                *reinterpret_cast<const float2*>(xm + 2 * c));
  }
}

// The one-row form's sums at a segment's end, in the f16 form's accumulator places (lane
// t = 0 of each row pair: acc[0] row g, acc[2] row g + 8; S_0 in acc, S_2 in acc2).
__device__ __forceinline__ void dp4a_gather(float v, float (&acc)[4], float (&acc2)[4], int lane) {
  const int base = lane & ~3;
  const float v1 = __shfl_sync(0xffffffffu, v, base + 1);
  const float v2 = __shfl_sync(0xffffffffu, v, base + 2);
  const float v3 = __shfl_sync(0xffffffffu, v, base + 3);
  acc[0] = v;
  acc[2] = v1;
  acc2[0] = v2;
  acc2[2] = v3;
}

// The several-row form on the same registers as the one-row form (Tile<kQ4_K>::load: lane t
// holds 16 bytes of chunk t/2 + 2 half of rows g and g + 8). Lanes t = 0, 1 hold the chunk
// 2 half, lanes 2, 3 the chunk 2 half + 1, so one m16n8k32 over the lanes' words mixes two
// sub-blocks; the B columns keep them apart: column 2 j + s is activation row 4 ct + j
// against the chunk of lanes t / 2 == s, its other lanes' B being zero. Two mma (words 0-1,
// words 2-3) add a sub-block's 32 products per plane. Lane t then holds, for activation row
// 4 ct + t, the integer sums of chunks 2 half (column 2t) and 2 half + 1 (column 2t + 1) of
// rows g and g + 8, and takes them into the four sequences of that row:
//     v = (S_0 row g, S_2 row g, S_0 row g + 8, S_2 row g + 8)
// with i8_step, in the one-row form's order (chunk 0 then 2 for S_0, 1 then 3 for S_2).
// One column tile (4 activation rows) a call: the caller goes over the tiles of 4 rows in
// turn (mma8_rotate). Rows past n inside a tile get zero B and row 0's scales (computed,
// never stored).
// x8: the activations; xo: the element offset of this lane's B at element 0 (the row of
// column g, plus 64 (g % 2) + 16 (t % 2)), -1 where the lane's B is zero; fo: the block
// offset of activation row 4 ct + t's xf / xm. e0: the tile's first element.
__device__ __forceinline__ void compute_mma8(const Tile<WFormat::kQ4_K>::Raw& r, const X8Rows& x8, int xo, int fo,
                                             int e0, float (&v)[4]) {
  const int b0 = e0 / 32;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const uint4& q0 = half == 0 ? r.qa0 : r.qb0;  // row g
    const uint4& q1 = half == 0 ? r.qa1 : r.qb1;  // row g + 8
    // nib 0: the low nibbles (sub-block 2c of chunk c), 1: the high ones (2c + 1)
    int is[2][4];
#pragma unroll
    for (int nib = 0; nib < 2; ++nib) {
      uint4 b = make_uint4(0u, 0u, 0u, 0u), b2 = b;
      if (xo >= 0) {
        const int8_t* x = x8.q + xo + e0 + 128 * half + 32 * nib;  // chunk 2 half + g % 2
        b = *reinterpret_cast<const uint4*>(x);
        b2 = *reinterpret_cast<const uint4*>(x + x8.plane);
      }
      const uint32_t mk = nib ? 0xF0F0F0F0u : 0x0F0F0F0Fu;  // high nibbles as 16 q (kHi16)
      const uint32_t a00 = q0.x & mk, a01 = q1.x & mk;
      const uint32_t a10 = q0.y & mk, a11 = q1.y & mk;
      const uint32_t a20 = q0.z & mk, a21 = q1.z & mk;
      const uint32_t a30 = q0.w & mk, a31 = q1.w & mk;
      // 256 i1 + i2 (plane_sum) in one accumulator: the first plane's sums times 256, then
      // the second plane's products added (exact integers either way).
      int(&i)[4] = is[nib];
      i[0] = i[1] = i[2] = i[3] = 0;
      mma_16832_u8s8_acc(i, a00, a01, a10, a11, b.x, b.y);
      mma_16832_u8s8_acc(i, a20, a21, a30, a31, b.z, b.w);
#pragma unroll
      for (int e = 0; e < 4; ++e) i[e] = plane_sum(i[e], 0);
      mma_16832_u8s8_acc(i, a00, a01, a10, a11, b2.x, b2.y);
      mma_16832_u8s8_acc(i, a20, a21, a30, a31, b2.z, b2.w);
    }
    // Scales of chunks 2 half (S_0) and 2 half + 1 (S_2) of rows g and g + 8.
    float2 s00, m00, s02, m02, s10, m10, s12, m12;
    k_scales2_f(r.h0, half, 0x4140u, s00, m00);
    k_scales2_f(r.h0, half, 0x4342u, s02, m02);
    k_scales2_f(r.h1, half, 0x4140u, s10, m10);
    k_scales2_f(r.h1, half, 0x4342u, s12, m12);
    const int k0 = fo + b0 + 4 * half;  // sub-block of chunk 2 half's low nibbles
    const float2 f0 = *reinterpret_cast<const float2*>(x8.xf + k0);
    const float2 f2 = *reinterpret_cast<const float2*>(x8.xf + k0 + 2);
    const float2 x0 = *reinterpret_cast<const float2*>(x8.xm + k0);
    const float2 x2 = *reinterpret_cast<const float2*>(x8.xm + k0 + 2);
    v[0] = i8_step(v[0], s00, m00, is[0][0], is[1][0], f0, x0);
    v[1] = i8_step(v[1], s02, m02, is[0][1], is[1][1], f2, x2);
    v[2] = i8_step(v[2], s10, m10, is[0][2], is[1][2], f0, x0);
    v[3] = i8_step(v[3], s12, m12, is[0][3], is[1][3], f2, x2);
  }
}

// The column tiles' state moved one place down (tile 0 goes last), so that a loop that is
// not unrolled works on tile 0 each time and ends where it began: an unrolled loop over two
// tiles lets the compiler hoist both tiles' loads and spill under the two-CTA register cap.
template <int NC>
__device__ __forceinline__ void mma8_rotate(int (&xo)[NC], int (&fo)[NC], float (&v)[NC][4]) {
  const int x = xo[0], f = fo[0];
  const float v0 = v[0][0], v1 = v[0][1], v2 = v[0][2], v3 = v[0][3];
#pragma unroll
  for (int c = 0; c + 1 < NC; ++c) {
    xo[c] = xo[c + 1];
    fo[c] = fo[c + 1];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[c][i] = v[c + 1][i];
  }
  xo[NC - 1] = x;
  fo[NC - 1] = f;
  v[NC - 1][0] = v0;
  v[NC - 1][1] = v1;
  v[NC - 1][2] = v2;
  v[NC - 1][3] = v3;
}

// The several-row form's sums at a segment's end, in the f16 form's accumulator places: acc /
// acc2 [ct][e] of lane (g, t) hold row g (e < 2) or g + 8 of activation row 8 ct + 2 t +
// (e % 2), which compute_mma8 left in lane 2 (t % 2) + e % 2 of column tile 2 ct + t / 2.
template <int NT>
__device__ __forceinline__ void mma8_gather(const float (&v)[2 * NT][4], float (&acc)[NT][4], float (&acc2)[NT][4],
                                            int lane) {
  const int t = lane & 3, base = lane & ~3;
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int src = base + 2 * (t & 1) + (e & 1), r = e < 2 ? 0 : 2;
      const float a0 = __shfl_sync(0xffffffffu, v[2 * ct][r], src), a1 = __shfl_sync(0xffffffffu, v[2 * ct + 1][r], src);
      const float b0 = __shfl_sync(0xffffffffu, v[2 * ct][r + 1], src);
      const float b1 = __shfl_sync(0xffffffffu, v[2 * ct + 1][r + 1], src);
      acc[ct][e] = t < 2 ? a0 : a1;
      acc2[ct][e] = t < 2 ? b0 : b1;
    }
}

// ---- The several-row form with one sub-block an mma (compute_sb) ----------------------------
// Its own registers of a tile, read from the stage in shared memory (load_sb): lane (g, t)
// with p = t % 2, h = t / 2 holds, of each chunk c (0..3) of rows g and g + 8, the qs bytes
// [16 p + 8 h, +8) of the chunk. The 4 lanes of a group hold all 32 bytes of every chunk, so
// an m16n8k32 over one chunk's low (high) nibbles is exactly sub-block 2c (2c + 1) of 16 rows,
// and its 8 B columns are 8 activation rows. Lane t's k = 4t..4t+3 and 16+4t..16+4t+3 are the
// sub-block's elements 8 P + 0..3 and 8 P + 4..7, P = 2p + h: the piece that X8Sb keeps both
// planes of in 16 bytes. hd: the header of row g + 8 (t % 2), the row whose scales the lane
// computes for the warp (compute_sb).
struct SbRaw {
  uint2 q0[4], q1[4];  // chunk c of row g / of row g + 8
  uint4 hd;
};
// `tile`: the tile's first byte in the stage (tile-major layout, cuda_weight_layout.h: qs byte
// b of row r at 512 (2 (r / 8) + b / 64) + 16 (4 (r % 8) + (b % 64) / 16) + b % 16, headers at
// 2048 + 16 r). 8-byte loads: 4-way bank conflicts (rows g, g + 2, .. share banks), 16 wavefronts
// more a tile than Tile<kQ4_K>::load's 16-byte ones, for no shuffles.
__device__ __forceinline__ void load_sb(SbRaw& r, const uint8_t* tile, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const uint8_t* f = tile + 64 * g + 16 * (t & 1) + 8 * (t >> 1);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    r.q0[c] = *reinterpret_cast<const uint2*>(f + 512 * (c >> 1) + 32 * (c & 1));
    r.q1[c] = *reinterpret_cast<const uint2*>(f + 1024 + 512 * (c >> 1) + 32 * (c & 1));
  }
  r.hd = *reinterpret_cast<const uint4*>(tile + 2048 + 16 * (g + 8 * (t & 1)));
}
// One word of each of load_sb's loads, XORed (consume_raw's role, k_matvec_stream.cu).
__device__ __forceinline__ uint32_t sb_loaded_words(const SbRaw& r) {
  return (r.q0[0].x ^ r.q0[1].x ^ r.q0[2].x) ^ (r.q0[3].x ^ r.q1[0].x ^ r.q1[1].x) ^ (r.q1[2].x ^ r.q1[3].x ^ r.hd.x);
}
// A warp's scale scratch in shared memory: (s_lo, s_hi, m_lo, m_hi) of chunk c of row r at
// [16 c + r] (k_scales2_f of sub-blocks 2c, 2c + 1).
constexpr int kSbScaleFloat4s = 4 * 16;

// The warp's scale scratch for one tile (compute_sb, compute_sb4): lane (g, t) computes the
// one-row form's two k_scales2 calls for row g + 8 (t % 2), chunks t / 2 and 2 + t / 2 (r.hd is
// that row's header), into sc (kSbScaleFloat4s, layout above). The caller's __syncwarp follows.
__device__ __forceinline__ void sb_write_scales(const SbRaw& r, float4* sc, int g, int t) {
  const int ka = 2 * (t >> 1), row = g + 8 * (t & 1);
  const uint32_t sel = 0x4140u + 0x0101u * static_cast<uint32_t>(ka);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float2 s, m;
    k_scales2_f(r.hd, half, sel, s, m);
    sc[16 * ((ka >> 1) + 2 * half) + row] = make_float4(s.x, s.y, m.x, m.y);
  }
}

// The several-row form on load_sb's registers, for NC column tiles of 8 activation rows.
// First the scales: each lane computes those the one-row form's lane t computes (row g + 8 (t
// % 2), chunks t / 2 and 2 + t / 2), into the warp's scratch `sc` (kSbScaleFloat4s), so each
// is computed once, not by all four lanes of a group. Then per chunk c and column tile, two
// m16n8k32 a nibble half (the planes, B from one 16-byte load: column g is activation row
// 8 ct + g), and the C fragment's four integer sums (rows g, g + 8 x activation rows 8 ct + 2t,
// + 1) go through i8_step into the sequence of the chunk, S_0 (acc, chunks 0 and 2) or S_2
// (acc2, chunks 1 and 3), in the one-row form's order. So acc / acc2 end a segment in the
// places the f16 form keeps them (store_rows' C fragment), with no gather. x8: X8Sb's base;
// xo[ct]: the byte offset of the lane's piece of the tile's block 0 (activation row 8 ct + g,
// rows past the last clamped to it, so their loads coalesce); fo: the float2 index of (xf, xm)
// of activation row 2t at the tile's block 0, K the rows' length (activation rows past the
// last read what the scratch holds there, inside it: x8_bytes(16, K) <= kMatvecX8Bytes; they
// are never stored). The whole warp must call it (__syncwarp); the caller's __syncwarp between
// tiles keeps one tile's scale reads before the next one's writes.
template <int NC>
__device__ __forceinline__ void compute_sb(const SbRaw& r, float4* sc, const X8Sb& x8, const int (&xo)[NC], int fo,
                                           int K, float (&acc)[NC][4], float (&acc2)[NC][4], int lane) {
  const int g = lane >> 2, t = lane & 3;
  sb_write_scales(r, sc, g, t);
  __syncwarp();
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint2 w0 = r.q0[c], w1 = r.q1[c];
#pragma unroll
    for (int ct = 0; ct < NC; ++ct) {
      int is[2][4];  // [nibble half][C element]: 256 i1 + i2
#pragma unroll
      for (int nib = 0; nib < 2; ++nib) {
        const uint32_t mk = nib ? 0xF0F0F0F0u : 0x0F0F0F0Fu;  // high nibbles as 16 q (kHi16)
        const uint32_t a0 = w0.x & mk, a1 = w1.x & mk, a2 = w0.y & mk, a3 = w1.y & mk;
        const uint4 b = __ldg(reinterpret_cast<const uint4*>(x8.q + xo[ct] + 64 * (2 * c + nib)));
        int i1[4] = {0, 0, 0, 0}, i2[4] = {0, 0, 0, 0};
        mma_16832_u8s8_acc(i1, a0, a1, a2, a3, b.x, b.y);
        mma_16832_u8s8_acc(i2, a0, a1, a2, a3, b.z, b.w);
#pragma unroll
        for (int e = 0; e < 4; ++e) is[nib][e] = plane_sum(i1[e], i2[e]);
      }
      const float4 x0 = __ldg(reinterpret_cast<const float4*>(x8.fm + fo + (8 * ct) * (K / 32) + 2 * c));
      const float4 x1 = __ldg(reinterpret_cast<const float4*>(x8.fm + fo + (8 * ct + 1) * (K / 32) + 2 * c));
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {  // rows g, g + 8: their scales, then activation rows 8 ct + 2t + j
        const float4 k = sc[16 * c + g + 8 * rr];
        const float2 sk = make_float2(k.x, k.y), mk = make_float2(k.z, k.w);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float4& x = j ? x1 : x0;
          const int e = 2 * rr + j;
          float& v = (c & 1) ? acc2[ct][e] : acc[ct][e];
          v = i8_step(v, sk, mk, is[0][e], is[1][e], make_float2(x.x, x.z), make_float2(x.y, x.w));
        }
      }
    }
  }
}

// compute_sb for 2..4 activation rows: one m16n8k32 a sub-block whose 8 B columns are both
// planes of 4 activation rows (column 2j: q1 of activation row j, 2j + 1: its q2; lane g loads
// the 8 bytes of its plane, X8Sb's piece at + 8 (g % 2)), so lane t's C fragment holds q1 and
// q2 sums of activation row t for rows g and g + 8, plane_sum'd there: half compute_sb's mma
// and f32 steps a tile. The same integers and i8_step sequences, so the same bits. Its sums:
// acc / acc2 [0][0] row g, [0][2] row g + 8 of activation row t (sb4_gather moves them to the
// C fragment's places at the segment's end). Arguments as compute_sb's.
__device__ __forceinline__ void compute_sb4(const SbRaw& r, float4* sc, const X8Sb& x8, int T, int n, int K,
                                            float (&acc)[1][4], float (&acc2)[1][4], int lane) {
  const int g = lane >> 2, t = lane & 3;
  sb_write_scales(r, sc, g, t);
  // B: plane g % 2 of activation row g / 2 (past the last clamped to it); (xf, xm): row t.
  const int xo = min(g >> 1, n - 1) * 2 * K + 512 * T + 16 * (2 * (t & 1) + (t >> 1)) + 8 * (g & 1);
  const int fo = t * (K / 32) + 8 * T;
  __syncwarp();
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const float4 k0 = sc[16 * c + g], k1 = sc[16 * c + g + 8];
    const uint2 w0 = r.q0[c], w1 = r.q1[c];
    int is[2][2];  // [nibble half][row g, g + 8]: 256 i1 + i2
#pragma unroll
    for (int nib = 0; nib < 2; ++nib) {
      const uint32_t mk = nib ? 0xF0F0F0F0u : 0x0F0F0F0Fu;  // high nibbles as 16 q (kHi16)
      const uint2 b = __ldg(reinterpret_cast<const uint2*>(x8.q + xo + 64 * (2 * c + nib)));
      int i[4] = {0, 0, 0, 0};
      mma_16832_u8s8_acc(i, w0.x & mk, w1.x & mk, w0.y & mk, w1.y & mk, b.x, b.y);
      is[nib][0] = plane_sum(i[0], i[1]);
      is[nib][1] = plane_sum(i[2], i[3]);
    }
    const float4 x = __ldg(reinterpret_cast<const float4*>(x8.fm + fo + 2 * c));
    const float2 f = make_float2(x.x, x.z), xm = make_float2(x.y, x.w);
    float(&v)[4] = (c & 1) ? acc2[0] : acc[0];
    v[0] = i8_step(v[0], make_float2(k0.x, k0.y), make_float2(k0.z, k0.w), is[0][0], is[1][0], f, xm);
    v[2] = i8_step(v[2], make_float2(k1.x, k1.y), make_float2(k1.z, k1.w), is[0][1], is[1][1], f, xm);
  }
}

// compute_sb4's sums at a segment's end, into the C fragment's places (store_rows): lane t's
// [e] (row g or g + 8 as e / 2, activation row 2t + e % 2) from lane 2t + e % 2 of the group
// (activation rows 4.. are never stored).
__device__ __forceinline__ void sb4_gather(float (&acc)[1][4], float (&acc2)[1][4], int lane) {
  const int base = lane & ~3, src0 = base + ((2 * lane) & 3), src1 = src0 + 1;
  const float a0 = acc[0][0], a2 = acc[0][2], b0 = acc2[0][0], b2 = acc2[0][2];
  acc[0][0] = __shfl_sync(0xffffffffu, a0, src0);
  acc[0][1] = __shfl_sync(0xffffffffu, a0, src1);
  acc[0][2] = __shfl_sync(0xffffffffu, a2, src0);
  acc[0][3] = __shfl_sync(0xffffffffu, a2, src1);
  acc2[0][0] = __shfl_sync(0xffffffffu, b0, src0);
  acc2[0][1] = __shfl_sync(0xffffffffu, b0, src1);
  acc2[0][2] = __shfl_sync(0xffffffffu, b2, src0);
  acc2[0][3] = __shfl_sync(0xffffffffu, b2, src1);
}

}  // namespace gs::cuda::mv
