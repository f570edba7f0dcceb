// Device pieces shared by the norm and RoPE kernels of k_elementwise.cu and the fused
// kernels of k_fused.cu, so that a fused kernel computes bit for bit what the separate
// kernels compute: the RMS norm of a whole row held in registers (one CTA of kRowThreads
// per row, float4 per thread), the f16 matvec operand of such a row, the per-head sum of
// squares of one warp, and the RoPE angles and rotation. Every rounding step is an explicit
// intrinsic: no contraction into FMAs that the separate kernels would not do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

constexpr int kRowThreads = 256;  // threads of a whole-row kernel (one CTA per row)
constexpr int kRowMaxCols = 8192;  // the longest row it holds: 8 float4 per thread

// Float4 per thread that a row of `cols` needs (the kernels are built for 2, 4, 6 and 8).
inline int row_nv(int64_t cols) { return static_cast<int>((cols / 4 + kRowThreads - 1) / kRowThreads); }

// True when every row of m starts 16-byte aligned and has a whole number of float4.
__host__ __device__ inline bool rows_vec4(const MatF& m) {
  return m.cols % 4 == 0 && m.stride % 4 == 0 && (reinterpret_cast<uintptr_t>(m.data) & 15) == 0;
}
__host__ __device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// 1 / sqrt(mean square + eps): the factor of every RMS norm kernel.
__device__ __forceinline__ float rms_inv(float sumsq, int64_t n, float eps) {
  return 1.0f / sqrtf(sumsq / static_cast<float>(n) + eps);
}

// x^2 + y^2 + z^2 + w^2 rounded as nvcc has always compiled it for rms_row_kernel.
__device__ __forceinline__ float sumsq4(float4 v) {
  return __fmaf_rn(v.w, v.w, __fmaf_rn(v.z, v.z, __fmaf_rn(v.x, v.x, __fmul_rn(v.y, v.y))));
}

// Sum over the kRowThreads threads of the CTA (warp sums, then the warps' in order). sh: at
// least kRowThreads / 32 floats of shared memory, free again when this returns.
__device__ __forceinline__ float row_block_sum(float v, float* sh) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0.f;
#pragma unroll
  for (int i = 0; i < kRowThreads / 32; ++i) t = __fadd_rn(t, sh[i]);
  __syncthreads();
  return t;
}

// Float4 c = threadIdx.x + i * kRowThreads (i < NV) of a row of n4 float4; zeros past n4.
template <int NV>
__device__ __forceinline__ void row_load(const float* row, int n4, float4 (&v)[NV]) {
  const float4* r4 = reinterpret_cast<const float4*>(row);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = threadIdx.x + i * kRowThreads;
    v[i] = c < n4 ? r4[c] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

template <int NV>
__device__ __forceinline__ void row_store(float* row, int n4, const float4 (&v)[NV]) {
  float4* r4 = reinterpret_cast<float4*>(row);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = threadIdx.x + i * kRowThreads;
    if (c < n4) r4[c] = v[i];
  }
}

// This thread's part of the sum of squares of the row (the zeros past n4 add nothing).
template <int NV>
__device__ __forceinline__ float row_sumsq(const float4 (&v)[NV]) {
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < NV; ++i) ss = __fadd_rn(ss, sumsq4(v[i]));
  return ss;
}

// The gains g = w[col] (w: [cols], 16-byte aligned) or 1 when w is null, for row_norm_gain:
// the weights are constant, so a kernel may load them before griddepcontrol.wait.
template <int NV>
__device__ __forceinline__ void row_gain_load(const float* __restrict__ w, int n4, float4 (&g)[NV]) {
  const float4* w4 = reinterpret_cast<const float4*>(w);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = threadIdx.x + i * kRowThreads;
    g[i] = w && c < n4 ? w4[c] : make_float4(1.f, 1.f, 1.f, 1.f);
  }
}

// v = g * (v * inv), the gains g from row_gain_load.
template <int NV>
__device__ __forceinline__ void row_norm_gain(float4 (&v)[NV], int n4, const float4 (&g)[NV], float inv) {
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = threadIdx.x + i * kRowThreads;
    if (c < n4)
      v[i] = make_float4(__fmul_rn(g[i].x, __fmul_rn(v[i].x, inv)), __fmul_rn(g[i].y, __fmul_rn(v[i].y, inv)),
                         __fmul_rn(g[i].z, __fmul_rn(v[i].z, inv)), __fmul_rn(g[i].w, __fmul_rn(v[i].w, inv)));
  }
}

// The max of m over the CTA's threads (kRowThreads), NaN when any thread's nan is set (fmaxf
// drops NaN). Every thread calls it and gets the result; sh (kRowThreads / 32 floats) is
// still in use when it returns.
__device__ __forceinline__ float row_block_amax(float m, bool nan, float* sh) {
  m = warp_max(m);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = m;
  const bool any_nan = __syncthreads_or(nan);
  float r = 0.f;
  for (int i = 0; i < kRowThreads / 32; ++i) r = fmaxf(r, sh[i]);
  return any_nan ? __int_as_float(0x7fc00000) : r;
}

// This thread's max |v| and NaN flag over its float4 v[i] at columns c0 + i kRowThreads < n4.
template <int NV>
__device__ __forceinline__ void row_amax_nan(const float4 (&v)[NV], int c0, int n4, float& amax, bool& nan) {
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    if (c0 + i * kRowThreads < n4) {
      amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v[i].x), fabsf(v[i].y)), fmaxf(fabsf(v[i].z), fabsf(v[i].w))));
      nan |= isnan(v[i].x) || isnan(v[i].y) || isnan(v[i].z) || isnan(v[i].w);
    }
  }
}

// This thread's float4 v[i] at columns c0 + i kRowThreads < n4 into the f16 operand row hrow:
// each element times factor, each group of 4 stored as (0, 2, 1, 3).
template <int NV>
__device__ __forceinline__ void row_put_f16(const float4 (&v)[NV], int c0, int n4, uint2* __restrict__ hrow,
                                            float factor) {
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = c0 + i * kRowThreads;
    if (c < n4)
      hrow[c] = make_uint2(pack_f32x2(__fmul_rn(v[i].x, factor), __fmul_rn(v[i].z, factor)),
                           pack_f32x2(__fmul_rn(v[i].y, factor), __fmul_rn(v[i].w, factor)));
  }
}

// Writes the row v (n4 float4) as the f16 matvec operand, as launch_act_to_f16_rows
// (permute = true) does: every element times the power of two that puts max |v| near 2^11,
// each group of 4 stored as (0, 2, 1, 3), zeros up to n_in_pad; *xscale = the factor that
// undoes it (NaN when the row holds a NaN or an infinity). Every thread of the CTA calls it;
// sh (kRowThreads / 32 floats) is still in use when it returns.
template <int NV>
__device__ __forceinline__ void row_write_f16(const float4 (&v)[NV], int n4, uint16_t* __restrict__ xh_row,
                                              float* __restrict__ xscale, int64_t n_in_pad, float* sh) {
  float amax = 0.f;
  bool nan = false;
  row_amax_nan(v, static_cast<int>(threadIdx.x), n4, amax, nan);
  float factor, undo;
  act_pow2_scale(row_block_amax(amax, nan, sh), factor, undo);
  if (threadIdx.x == 0) *xscale = undo;
  uint2* hrow = reinterpret_cast<uint2*>(xh_row);
  row_put_f16(v, static_cast<int>(threadIdx.x), n4, hrow, factor);
  for (int c = n4 + threadIdx.x; c < n_in_pad / 4; c += kRowThreads) hrow[c] = make_uint2(0u, 0u);
}

// GELU with the tanh approximation (spec §3.1.2): 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
// GELU(g) * u, element by element.
__device__ __forceinline__ float4 gelu_mul4(float4 g, float4 u) {
  return make_float4(gelu_tanh(g.x) * u.x, gelu_tanh(g.y) * u.y, gelu_tanh(g.z) * u.z, gelu_tanh(g.w) * u.w);
}

// The cosine and sine (times the YaRN magnitude scale) of RoPE pair i at position pos,
// computed in double (positions up to 2^20 times the fastest frequency need more than f32's
// 24 bits; spec §3.1.3, §6.2). theta_extrap = pos / (theta^(2i / n_dims) * freq_factor_i),
// theta_interp = freq_scale * theta_extrap; YaRN mixes them by the ramp over [corr_lo,
// corr_hi] and scales by attn_factor (1 + 0.1 ln(1 / freq_scale)).
__device__ __forceinline__ void rope_cos_sin(const RopeParams& p, int i, double pos, float* cs, float* sn) {
  const double inv_freq = pow(static_cast<double>(p.theta), -2.0 * i / static_cast<double>(p.n_dims));
  double theta_extrap = pos * inv_freq;
  if (p.freq_factors) theta_extrap /= static_cast<double>(p.freq_factors[i]);
  const double theta_interp = static_cast<double>(p.freq_scale) * theta_extrap;
  double theta = theta_interp;
  double mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) {
    const double y = (i - static_cast<double>(p.corr_lo)) / fmax(0.001, static_cast<double>(p.corr_hi - p.corr_lo));
    const double ramp = 1.0 - fmin(1.0, fmax(0.0, y));
    const double mix = ramp * p.ext_factor;
    theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
    mscale *= 1.0 + 0.1 * log(1.0 / p.freq_scale);
  }
  double s, c;
  sincos(theta, &s, &c);
  *cs = static_cast<float>(c * mscale);
  *sn = static_cast<float>(s * mscale);
}

// The rotation of the pair (a, b) by the angle of (c, s).
__device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float* out_a, float* out_b) {
  *out_a = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  *out_b = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
}

}  // namespace gs::cuda
