// Matmul for a few activation rows (decode, MTP verify): every weight is read once and fed to
// the tensor cores (mma m16n8k16, f16 in, f32 accumulate) straight from its ggml blocks,
// dequantized in registers. Also the activation conversion it needs and a plain CUDA-core
// matmul (the fallback and cross-check).
//
// Work split: one CTA computes 16 output rows; its warps split the row's 256-element tiles
// (k-split) and add their partial sums through shared memory. In a warp, lane (g, t) =
// (lane / 4, lane % 4) owns weight rows g and g + 8 of the CTA and 64 of the 256 elements of
// each tile. Which 64 depends on the format (chosen so that its loads are 16 bytes wide); the
// dot product does not care about the order of k, so each lane feeds the mma its elements in
// the order they come out of the blocks and reads the matching activations, which the
// conversion kernel stores in (0, 2, 1, 3) order inside each group of 4 so that one 8-byte
// load gives the two B registers of an mma step.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

// ---- activation conversion ----------------------------------------------------------------
__device__ __forceinline__ float block_max(float v, float* sh) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float u = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0.f;
    u = warp_max(u);
    if (threadIdx.x == 0) sh[0] = u;
  }
  __syncthreads();
  const float r = sh[0];
  __syncthreads();
  return r;
}

// Power-of-two factor that brings max |x| to [2^10, 2^11), and its inverse.
__device__ __forceinline__ void pow2_scale(float amax, float& factor, float& undo) {
  if (!(amax <= 3.0e38f)) {  // inf or NaN: let it propagate
    factor = 1.0f;
    undo = __int_as_float(0x7fc00000);
    return;
  }
  int ex = 0;
  frexpf(amax, &ex);  // amax < 2^ex
  if (amax == 0.0f) ex = 0;
  if (ex < -100) ex = -100;  // keeps both factors finite; such rows round to zero in f16
  factor = ldexpf(1.0f, 11 - ex);
  undo = ldexpf(1.0f, ex - 11);
}

__global__ void act_rows_kernel(MatF x, int64_t n_in_pad, uint16_t* __restrict__ xh, float* __restrict__ xscale,
                                bool permute) {
  GS_PDL_ENTRY();
  __shared__ float sh[32];
  const int64_t r = blockIdx.x;
  const float* xr = x.data + r * x.stride;
  float m = 0.f;
  for (int64_t i = threadIdx.x; i < x.cols; i += blockDim.x) m = fmaxf(m, fabsf(xr[i]));
  // fmaxf drops NaN: look for it explicitly so that a NaN input gives NaN outputs.
  bool nan = false;
  for (int64_t i = threadIdx.x; i < x.cols; i += blockDim.x) nan |= isnan(xr[i]);
  if (__syncthreads_or(nan)) m = __int_as_float(0x7fc00000);
  m = block_max(m, sh);
  float factor, undo;
  pow2_scale(m, factor, undo);
  if (threadIdx.x == 0) xscale[r] = undo;
  uint16_t* out = xh + r * n_in_pad;
  for (int64_t g4 = threadIdx.x; g4 < n_in_pad / 4; g4 += blockDim.x) {
    float v[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t c = g4 * 4 + j;
      v[j] = c < x.cols ? xr[c] * factor : 0.f;
    }
    uint2 o;
    if (permute) {
      o.x = pack_f32x2(v[0], v[2]);
      o.y = pack_f32x2(v[1], v[3]);
    } else {
      o.x = pack_f32x2(v[0], v[1]);
      o.y = pack_f32x2(v[2], v[3]);
    }
    *reinterpret_cast<uint2*>(out + g4 * 4) = o;
  }
}

__global__ void act_absmax_kernel(MatF x, unsigned* amax, int64_t total) {
  GS_PDL_ENTRY();
  __shared__ float sh[32];
  float m = 0.f;
  bool nan = false;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x.data[(idx / x.cols) * x.stride + idx % x.cols];
    m = fmaxf(m, fabsf(v));
    nan |= isnan(v);
  }
  if (__syncthreads_or(nan)) m = __int_as_float(0x7fc00000);
  m = block_max(m, sh);
  // Non-negative floats (and NaN above inf) order like their bit patterns.
  if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(m));
}

__global__ void act_global_kernel(MatF x, int64_t n_in_pad, const unsigned* __restrict__ amax,
                                  uint16_t* __restrict__ xh, float* __restrict__ alpha, int64_t total4) {
  GS_PDL_ENTRY();
  float factor, undo;
  pow2_scale(__uint_as_float(*amax), factor, undo);
  if (blockIdx.x == 0 && threadIdx.x == 0) *alpha = undo;
  const int64_t per_row = n_in_pad / 4;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total4;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / per_row, g4 = idx % per_row;
    const float* xr = x.data + r * x.stride;
    float v[4];
    for (int j = 0; j < 4; ++j) {
      const int64_t c = g4 * 4 + j;
      v[j] = c < x.cols ? xr[c] * factor : 0.f;
    }
    uint2 o;
    o.x = pack_f32x2(v[0], v[1]);
    o.y = pack_f32x2(v[2], v[3]);
    *reinterpret_cast<uint2*>(xh + r * n_in_pad + g4 * 4) = o;
  }
}

// ---- the tensor-core matvec ---------------------------------------------------------------
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

__device__ __forceinline__ uint4 ld16(const uint8_t* p, bool ok) {
  return ok ? __ldg(reinterpret_cast<const uint4*>(p)) : make_uint4(0u, 0u, 0u, 0u);
}

struct RowPtrs {
  const uint8_t* main0;
  const uint8_t* main1;
  const uint16_t* meta0;
  const uint16_t* meta1;
  bool ok0;
  bool ok1;
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
    r.h0 = ld16(b0, R.ok0);
    r.h1 = ld16(b1, R.ok1);
    r.qa0 = ld16(b0 + kQs + 16 * t, R.ok0);
    r.qb0 = ld16(b0 + kQs + 64 + 16 * t, R.ok0);
    r.qa1 = ld16(b1 + kQs + 16 * t, R.ok1);
    r.qb1 = ld16(b1 + kQs + 64 + 16 * t, R.ok1);
    if constexpr (kQ5) {  // qh bytes [16 (t % 2), +16): the high bits of the lane's l's
      r.e0 = ld16(b0 + 16 + 16 * (t & 1), R.ok0);
      r.e1 = ld16(b1 + 16 + 16 * (t & 1), R.ok1);
    }
  }
};
template <>
struct Tile<WFormat::kQ4_K> : TileQK45<false> {};
template <>
struct Tile<WFormat::kQ5_K> : TileQK45<true> {};

// Scale and negated min (f16 pairs) of sub-block k (0..7) of a Q4_K/Q5_K header h.
__device__ __forceinline__ void k_scale(const uint4& h, int k, __half2& s2, __half2& m2) {
  const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x & 0xffffu)));
  const float dmin = __half2float(__ushort_as_half(static_cast<uint16_t>(h.x >> 16)));
  int sc, mn;
  if (k < 4) {
    sc = u4_byte(h, 4 + k) & 63;
    mn = u4_byte(h, 8 + k) & 63;
  } else {
    sc = (u4_byte(h, 8 + k) & 15) | ((u4_byte(h, k) >> 6) << 4);
    mn = (u4_byte(h, 8 + k) >> 4) | ((u4_byte(h, 4 + k) >> 6) << 4);
  }
  s2 = __float2half2_rn(d * static_cast<float>(sc));
  m2 = __float2half2_rn(-(dmin * static_cast<float>(mn)));
}

template <int NT, bool kQ5>
__device__ __forceinline__ void compute_qk45(const typename TileQK45<kQ5>::Raw& r, float (&acc)[NT][4], int t,
                                             const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
  const int ka = 2 * (t >> 1), l0 = 16 * (t & 1);
#pragma unroll
  for (int half = 0; half < 2; ++half) {  // qa (chunk t/2), then qb (chunk 2 + t/2)
    const int klo = ka + 4 * half, khi = klo + 1;
    __half2 s_lo[2], m_lo[2], s_hi[2], m_hi[2];
    k_scale(r.h0, klo, s_lo[0], m_lo[0]);
    k_scale(r.h1, klo, s_lo[1], m_lo[1]);
    k_scale(r.h0, khi, s_hi[0], m_hi[0]);
    k_scale(r.h1, khi, s_hi[1], m_hi[1]);
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
    r.la0 = ld16(b0 + 16 * t, R.ok0);
    r.lb0 = ld16(b0 + 64 + 16 * t, R.ok0);
    r.la1 = ld16(b1 + 16 * t, R.ok1);
    r.lb1 = ld16(b1 + 64 + 16 * t, R.ok1);
    r.ha0 = ld16(b0 + 128 + 16 * (t & 1), R.ok0);
    r.hb0 = ld16(b0 + 160 + 16 * (t & 1), R.ok0);
    r.ha1 = ld16(b1 + 128 + 16 * (t & 1), R.ok1);
    r.hb1 = ld16(b1 + 160 + 16 * (t & 1), R.ok1);
    r.sc0 = ld16(b0 + 192, R.ok0);
    r.sc1 = ld16(b1 + 192, R.ok1);
    r.d0 = R.ok0 ? __half2float(__ushort_as_half(R.meta0[tile])) : 0.f;
    r.d1 = R.ok1 ? __half2float(__ushort_as_half(R.meta1[tile])) : 0.f;
  }
  template <int NT>
  static __device__ __forceinline__ void compute(const Raw& r, float (&acc)[NT][4], int t,
                                                 const uint16_t* const (&xb)[NT], const bool (&xok)[NT]) {
    const int sh_lo = 2 * (t >> 1), sh_hi = 4 + 2 * (t >> 1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const __half2 slo0 = __float2half2_rn(r.d0 * static_cast<float>(static_cast<int8_t>(u4_byte(r.sc0, 8 * h + t))));
      const __half2 shi0 = __float2half2_rn(r.d0 * static_cast<float>(static_cast<int8_t>(u4_byte(r.sc0, 8 * h + 4 + t))));
      const __half2 slo1 = __float2half2_rn(r.d1 * static_cast<float>(static_cast<int8_t>(u4_byte(r.sc1, 8 * h + t))));
      const __half2 shi1 = __float2half2_rn(r.d1 * static_cast<float>(static_cast<int8_t>(u4_byte(r.sc1, 8 * h + 4 + t))));
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
      r.q0[i] = ld16(b0 + 64 * i, R.ok0);
      r.q1[i] = ld16(b1 + 64 * i, R.ok1);
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
    r.qa0 = ld16(b0, R.ok0);
    r.qb0 = ld16(b0 + 64, R.ok0);
    r.qa1 = ld16(b1, R.ok1);
    r.qb1 = ld16(b1 + 64, R.ok1);
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
      v0[i] = ld16(R.main0 + e * 2, R.ok0);
      v1[i] = ld16(R.main1 + e * 2, R.ok1);
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
  int wr;  // warps along rows (16 rows each)
  int wk;  // warps along k (tiles wk, wk + WK, ...)
};

template <WFormat F, int NT>
__global__ void __launch_bounds__(kMaxWarps * 32) matvec_mma_kernel(const uint8_t* __restrict__ w, WeightLayout L,
                                                                   const uint16_t* __restrict__ xh,
                                                                   const float* __restrict__ xscale, MatF y,
                                                                   MvGrid G) {
  GS_PDL_ENTRY();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wr = warp % G.wr, wk = warp / G.wr;
  const int g = lane >> 2, t = lane & 3;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * G.wr + wr) * 16 + g, row1 = row0 + 8;
  RowPtrs R;
  R.ok0 = row0 < L.n_out;
  R.ok1 = row1 < L.n_out;
  R.main0 = w + (R.ok0 ? row0 : 0) * L.main_row_bytes;
  R.main1 = w + (R.ok1 ? row1 : 0) * L.main_row_bytes;
  const uint16_t* meta = reinterpret_cast<const uint16_t*>(w + L.meta_offset);
  R.meta0 = meta + (R.ok0 ? row0 : 0) * L.meta_per_row;
  R.meta1 = meta + (R.ok1 ? row1 : 0) * L.meta_per_row;
  const int n = static_cast<int>(y.rows);
  const int64_t n_tiles = L.n_in_pad / kTileElems;

  float acc[NT][4];
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    for (int i = 0; i < 4; ++i) acc[ct][i] = 0.f;

  auto xptrs = [&](int64_t tile, const uint16_t* (&xb)[NT], bool (&xok)[NT]) {
#pragma unroll
    for (int ct = 0; ct < NT; ++ct) {
      const int col = ct * 8 + g;
      xok[ct] = col < n;
      xb[ct] = xh + static_cast<int64_t>(xok[ct] ? col : 0) * L.n_in_pad + tile * kTileElems;
    }
  };

  if constexpr (F == WFormat::kQ4_K || F == WFormat::kQ5_K || F == WFormat::kQ6_K || F == WFormat::kQ8_0 ||
                F == WFormat::kQ4_0) {
    using T = Tile<F>;
    typename T::Raw cur, nxt;
    int64_t tile = wk;
    if (tile < n_tiles) T::load(cur, R, tile, t);
    for (; tile < n_tiles; tile += G.wk) {
      if (tile + G.wk < n_tiles) T::load(nxt, R, tile + G.wk, t);
      const uint16_t* xb[NT];
      bool xok[NT];
      xptrs(tile, xb, xok);
      if constexpr (F == WFormat::kQ4_K) {
        compute_qk45<NT, false>(cur, acc, t, xb, xok);
      } else if constexpr (F == WFormat::kQ5_K) {
        compute_qk45<NT, true>(cur, acc, t, xb, xok);
      } else {
        T::template compute<NT>(cur, acc, t, xb, xok);
      }
      cur = nxt;
    }
  } else {
    for (int64_t tile = wk; tile < n_tiles; tile += G.wk) {
      const uint16_t* xb[NT];
      bool xok[NT];
      xptrs(tile, xb, xok);
      if constexpr (F == WFormat::kF32) tile_f32<NT>(acc, R, tile, t, xb, xok);
      else tile_half<F, NT>(acc, R, tile, t, xb, xok);
    }
  }

  // k-split partial sums: warps with wk > 0 hand theirs to the wk == 0 warp of their rows.
  __shared__ float red[kMaxWarps][NT * 4][32];
  if (G.wk > 1) {
    if (wk > 0) {
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
        for (int i = 0; i < 4; ++i) red[warp][ct * 4 + i][lane] = acc[ct][i];
    }
    __syncthreads();
    if (wk != 0) return;
    for (int k = 1; k < G.wk; ++k)
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
        for (int i = 0; i < 4; ++i) acc[ct][i] += red[k * G.wr + wr][ct * 4 + i][lane];
  }
#pragma unroll
  for (int ct = 0; ct < NT; ++ct) {
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int col = ct * 8 + 2 * t + jj;
      if (col >= n) continue;
      const float s = xscale[col];
      float* yr = y.data + static_cast<int64_t>(col) * y.stride;
      if (R.ok0) yr[row0] = acc[ct][jj] * s;
      if (R.ok1) yr[row1] = acc[ct][2 + jj] * s;
    }
  }
}

template <int NT>
void launch_mma_nt(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh, const float* xscale,
                   MatF y, dim3 grid, int threads, MvGrid G) {
  const auto* wb = static_cast<const uint8_t*>(w);
  switch (L.format) {
    case WFormat::kF32: launch_k(matvec_mma_kernel<WFormat::kF32, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kF16: launch_k(matvec_mma_kernel<WFormat::kF16, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kBF16: launch_k(matvec_mma_kernel<WFormat::kBF16, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kQ8_0: launch_k(matvec_mma_kernel<WFormat::kQ8_0, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kQ4_0: launch_k(matvec_mma_kernel<WFormat::kQ4_0, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kQ4_K: launch_k(matvec_mma_kernel<WFormat::kQ4_K, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kQ5_K: launch_k(matvec_mma_kernel<WFormat::kQ5_K, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
    case WFormat::kQ6_K: launch_k(matvec_mma_kernel<WFormat::kQ6_K, NT>, grid, threads, 0, s, wb, L, xh, xscale, y, G); break;
  }
}

// ---- plain CUDA-core matmul: one warp per output row, any number of activation rows ---------
__global__ void matvec_simple_kernel(const uint8_t* __restrict__ w, WeightLayout L, MatF x, MatF y) {
  GS_PDL_ENTRY();
  const int64_t o = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (o >= L.n_out) return;
  for (int64_t r0 = 0; r0 < x.rows; r0 += 8) {
    const int nr = static_cast<int>(x.rows - r0 < 8 ? x.rows - r0 : 8);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int64_t e = static_cast<int64_t>(lane) * 8; e < L.n_in; e += 256) {
      float wv[8];
      load8(w, L, o, e, wv);
      for (int r = 0; r < nr; ++r) {
        const float* xr = x.data + (r0 + r) * x.stride;
        float s = 0.f;
        for (int i = 0; i < 8; ++i)
          if (e + i < L.n_in) s += wv[i] * xr[e + i];
        acc[r] += s;
      }
    }
    for (int r = 0; r < nr; ++r) {
      const float v = warp_sum(acc[r]);
      if (lane == 0) y.data[(r0 + r) * y.stride + o] = v;
    }
  }
}

}  // namespace

void launch_act_to_f16_rows(cudaStream_t s, MatF x, int64_t n_in_pad, uint16_t* xh, float* xscale, bool permute) {
  if (x.rows == 0) return;
  launch_k(act_rows_kernel, static_cast<unsigned>(x.rows), 256, 0, s, x, n_in_pad, xh, xscale, permute);
}

void launch_matvec_mma(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh, const float* xscale,
                       MatF y, int n_sm) {
  if (y.rows == 0 || L.n_out == 0) return;
  const int64_t row_groups = (L.n_out + 15) / 16;
  const int64_t n_tiles = L.n_in_pad / kTileElems;
  // Two sizing rules (GS_CUDA_MV=grid picks the second; the device notes compare them):
  //  "split" (default): 16 rows per CTA, 4 warps along k (8 when there are few row groups);
  //  "grid": up to 64 rows per CTA (warps along rows share activation loads through L1)
  //          while every SM gets a CTA, then warps along k until the grid is about one wave.
  static const bool grid_rule = [] {
    const char* e = std::getenv("GS_CUDA_MV");
    return e && std::string(e) == "grid";
  }();
  MvGrid G{1, 1};
  if (grid_rule) {
    for (int wr : {4, 2}) {
      if ((row_groups + wr - 1) / wr >= n_sm) {
        G.wr = wr;
        break;
      }
    }
    const int64_t c = (row_groups + G.wr - 1) / G.wr;
    const int64_t target_warps = static_cast<int64_t>(n_sm) * 16;  // ~one wave at <= 128 registers
    int64_t wk = (target_warps + c * G.wr - 1) / (c * G.wr);
    wk = std::min<int64_t>(wk, kMaxWarps / G.wr);
    wk = std::min<int64_t>(wk, std::max<int64_t>(1, n_tiles / 2));
    G.wk = static_cast<int>(std::max<int64_t>(1, wk));
  } else {
    G.wk = static_cast<int>(std::min<int64_t>(row_groups >= 4LL * n_sm ? 4 : 8, n_tiles));
  }
  const int64_t ctas = (row_groups + G.wr - 1) / G.wr;
  const dim3 grid(static_cast<unsigned>(ctas));
  const int threads = G.wr * G.wk * 32;
  if (y.rows <= 8) {
    launch_mma_nt<1>(s, w, L, xh, xscale, y, grid, threads, G);
  } else {
    launch_mma_nt<2>(s, w, L, xh, xscale, y, grid, threads, G);
  }
}

void launch_matvec_simple(cudaStream_t s, const void* w, const WeightLayout& L, MatF x, MatF y) {
  if (x.rows == 0 || L.n_out == 0) return;
  const int64_t threads = L.n_out * 32;
  const unsigned blocks = static_cast<unsigned>((threads + 255) / 256);
  launch_k(matvec_simple_kernel, blocks, 256, 0, s, static_cast<const uint8_t*>(w), L, x, y);
}

void launch_act_absmax(cudaStream_t s, MatF x, unsigned* amax) {
  const int64_t total = x.rows * x.cols;
  if (total == 0) return;
  int64_t blocks = (total + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  launch_k(act_absmax_kernel, static_cast<unsigned>(blocks), 256, 0, s, x, amax, total);
}

void launch_act_to_f16_global(cudaStream_t s, MatF x, int64_t n_in_pad, const unsigned* amax, uint16_t* xh,
                              float* alpha) {
  const int64_t total4 = x.rows * (n_in_pad / 4);
  if (total4 == 0) return;
  int64_t blocks = (total4 + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  launch_k(act_global_kernel, static_cast<unsigned>(blocks), 256, 0, s, x, n_in_pad, amax, xh, alpha, total4);
}

}  // namespace gs::cuda
