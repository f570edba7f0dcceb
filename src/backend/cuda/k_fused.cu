// Fused kernels of the decode step (k_fused.h): the residual update with the next norm, and
// the attention inputs (per-head norms, RoPE, KV store). Their arithmetic is that of the
// separate kernels (k_rows.cuh pieces, the per-head norm of rms_norm_warp_kernel), so fusing
// changes no bit of the results.
#include <climits>
#include <cstdint>

#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_fused.h"
#include "backend/cuda/k_kv_q8.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_rows.cuh"

namespace gs::cuda {
namespace {

// ---- x = (x + rms_norm(o, wo)) * s; out = rms_norm(x, wx) --------------------------------
// One CTA per row; the two gains are loaded before waiting for the previous kernel (they are
// weights), both rows at once after it (one memory latency), the normed o stays in
// registers, x is written back once and out (and its f16 operand) once.
template <int NV>
__global__ void __launch_bounds__(kRowThreads)
    add_rms_row_kernel(MatF x, MatF o, const float* __restrict__ wo, float s, const float* __restrict__ wx, float eps,
                       MatF out, uint16_t* __restrict__ xh, float* __restrict__ xscale, int64_t n_in_pad) {
  GS_PDL_TRIGGER();
  __shared__ float sh[kRowThreads / 32];
  const int64_t r = blockIdx.x;
  const int n4 = static_cast<int>(x.cols / 4);
  float4 go[NV], gx[NV];
  row_gain_load(wo, n4, go);
  row_gain_load(wx, n4, gx);
  GS_PDL_WAIT();  // x and o are the predecessors'
  float4 v[NV], xv[NV];
  row_load(o.data + r * o.stride, n4, v);
  row_load(x.data + r * x.stride, n4, xv);
  row_norm_gain(v, n4, go, rms_inv(row_block_sum(row_sumsq(v), sh), o.cols, eps));  // rms_norm(o, wo)
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int c = threadIdx.x + i * kRowThreads;
    if (c < n4)  // the zeros past the row stay zeros whatever s is
      xv[i] = make_float4(__fmul_rn(__fadd_rn(xv[i].x, v[i].x), s), __fmul_rn(__fadd_rn(xv[i].y, v[i].y), s),
                          __fmul_rn(__fadd_rn(xv[i].z, v[i].z), s), __fmul_rn(__fadd_rn(xv[i].w, v[i].w), s));
  }
  row_store(x.data + r * x.stride, n4, xv);
  row_norm_gain(xv, n4, gx, rms_inv(row_block_sum(row_sumsq(xv), sh), x.cols, eps));  // rms_norm(x, wx)
  row_store(out.data + r * out.stride, n4, xv);
  if (xh != nullptr) row_write_f16(xv, n4, xh + r * n_in_pad, xscale + r, n_in_pad, sh);
}

// ---- attention inputs ----------------------------------------------------------------------
constexpr int kQkvWarps = 8;  // heads per CTA, one per warp

__device__ __forceinline__ void pool_put(void* pool, bool f16, int64_t idx, float v) {
  if (f16) {
    static_cast<uint16_t*>(pool)[idx] = f32_to_f16_bits(v);
  } else {
    static_cast<float*>(pool)[idx] = v;
  }
}

// CTA b serves row b / ctas_per_row and the kQkvWarps units (b % ctas_per_row) * kQkvWarps +
// warp of it: units [0, n_q) are the q heads, [n_q, n_q + n_kv) the kv heads (k and v of one
// kv head together, so that v can be read from the raw k before k is overwritten). A lane
// holds the elements lane + 32 j (j < NE) of its head: the order in which
// rms_norm_warp_kernel sums them. The normed q/k head goes through shared memory for RoPE
// (pair partners sit in other lanes when n_dims / 2 is not a multiple of 32).
// Shared memory: cos, sin [n_dims / 2] each, then kQkvWarps staging rows of head_dim.
template <int NE>
__global__ void __launch_bounds__(kQkvWarps * 32) qkv_kernel(QkvParams p, int n_q, int n_kv, int ctas_per_row) {
  GS_PDL_TRIGGER();
  extern __shared__ float qkv_sh[];
  const int D = p.rope.head_dim;
  const int half = p.rope.n_dims / 2;
  float* cs_sh = qkv_sh;
  float* sn_sh = qkv_sh + half;
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  float* st = qkv_sh + 2 * half + warp * D;
  const int64_t row = blockIdx.x / ctas_per_row;
  const int unit = static_cast<int>(blockIdx.x % ctas_per_row) * kQkvWarps + warp;
  const bool active = unit < n_q + n_kv;
  const bool is_q = unit < n_q;
  const int h = is_q ? unit : unit - n_q;
  const bool sep_v = !is_q && !p.v_from_k;

  // Before waiting for the previous kernel, what does not depend on it: the RoPE angles of
  // the row's position and its KV slot (inputs of the step, written before it starts, never
  // by a kernel) and the norm gains (weights).
  const double pr = static_cast<double>(p.pos[row]);
  for (int i = static_cast<int>(threadIdx.x); i < half; i += static_cast<int>(blockDim.x))
    rope_cos_sin(p.rope, i, pr, &cs_sh[i], &sn_sh[i]);
  const float* w = is_q ? p.q_weight : p.k_weight;
  float gain[NE];
#pragma unroll
  for (int j = 0; j < NE; ++j) {
    const int i = lane + 32 * j;
    gain[j] = w && active && i < D ? w[i] : 1.0f;
  }
  int64_t slot = -1;
  if (active && !is_q) {
    slot = p.slots[row];
    if (slot < 0 || slot >= p.kv.n_slots) slot = -1;  // as kv_store_kernel: not stored
  }
  GS_PDL_WAIT();  // q, k and v are the predecessors'

  float* dst = nullptr;        // the q or k head, normed and rotated in place
  const float* vsrc = nullptr;  // the separate raw v head
  float a[NE], b[NE];
  if (active) {
    dst = is_q ? p.q.data + row * p.q.stride + static_cast<int64_t>(h) * D
               : p.k.data + row * p.k.stride + static_cast<int64_t>(h) * D;
    if (sep_v) vsrc = p.v.data + row * p.v.stride + static_cast<int64_t>(h) * D;
  }
#pragma unroll
  for (int j = 0; j < NE; ++j) {
    const int i = lane + 32 * j;
    a[j] = active && i < D ? dst[i] : 0.f;
    b[j] = sep_v && active && i < D ? vsrc[i] : 0.f;
  }
  __syncthreads();
  if (!active) return;

  // The head's norm factor, as rms_norm_warp_kernel: lane-strided FMA sums, then the warp's.
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < NE; ++j) ss = __fmaf_rn(a[j], a[j], ss);
  const float inv = rms_inv(warp_sum(ss), D, p.eps);

  const int64_t width = static_cast<int64_t>(n_kv) * D;
  const int64_t pool_base = slot * width + static_cast<int64_t>(h) * D;
  // q8_0 pools: the head's row, quantized by the warp once all its values are known.
  const int64_t q8_row = (slot * n_kv + h) * kv_head_row_bytes(p.kv);

  if (!is_q) {  // v: weightless norm of the raw v (or the raw k), stored
    float inv_v = inv;  // v_from_k: the same elements as k, the same factor
    if (sep_v) {
      float sv = 0.f;
#pragma unroll
      for (int j = 0; j < NE; ++j) sv = __fmaf_rn(b[j], b[j], sv);
      inv_v = rms_inv(warp_sum(sv), D, p.eps);
    }
    float* vdst = p.v.data + row * p.v.stride + static_cast<int64_t>(h) * D;
    float vy[NE];
#pragma unroll
    for (int j = 0; j < NE; ++j) {
      const int i = lane + 32 * j;
      vy[j] = 0.f;
      if (i < D) {
        const float y = __fmul_rn(sep_v ? b[j] : a[j], inv_v);  // gain 1: g * y == y
        vy[j] = y;
        vdst[i] = y;
        if (slot >= 0 && !p.kv.q8) pool_put(p.kv.v, p.kv.f16, pool_base + i, y);
      }
    }
    if (slot >= 0 && p.kv.q8) q8_head_store_warp(static_cast<uint8_t*>(p.kv.v) + q8_row, vy, D, lane);
  }

#pragma unroll
  for (int j = 0; j < NE; ++j) {
    const int i = lane + 32 * j;
    if (i < D) st[i] = __fmul_rn(gain[j], __fmul_rn(a[j], inv));
  }
  __syncwarp();
  const bool k_q8 = !is_q && slot >= 0 && p.kv.q8;  // uniform over the warp
  for (int i = lane; i < half; i += 32) {
    float y0, y1;
    rope_rotate(st[i], st[i + half], cs_sh[i], sn_sh[i], &y0, &y1);
    dst[i] = y0;
    dst[i + half] = y1;
    if (k_q8) {  // the rotated pair back in the staging row (this lane's own two elements)
      st[i] = y0;
      st[i + half] = y1;
    } else if (slot >= 0) {
      pool_put(p.kv.k, p.kv.f16, pool_base + i, y0);
      pool_put(p.kv.k, p.kv.f16, pool_base + i + half, y1);
    }
  }
  for (int i = 2 * half + lane; i < D; i += 32) {  // past n_dims: normed, not rotated
    const float y = st[i];
    dst[i] = y;
    if (slot >= 0 && !k_q8) pool_put(p.kv.k, p.kv.f16, pool_base + i, y);
  }
  if (k_q8) {
    __syncwarp();
    float ky[NE];
#pragma unroll
    for (int j = 0; j < NE; ++j) ky[j] = lane + 32 * j < D ? st[lane + 32 * j] : 0.f;
    q8_head_store_warp(static_cast<uint8_t*>(p.kv.k) + q8_row, ky, D, lane);
  }
}

}  // namespace

bool launch_add_rms_norm_rows(cudaStream_t s, MatF x, MatF o, const float* o_weight, float scale,
                              const float* out_weight, float eps, MatF out, uint16_t* xh, float* xscale,
                              int64_t n_in_pad) {
  const bool ok = x.rows > 0 && x.cols > 0 && x.cols <= kRowMaxCols && o.rows == x.rows && o.cols == x.cols &&
                  out.rows == x.rows && out.cols == x.cols && rows_vec4(x) && rows_vec4(o) && rows_vec4(out) &&
                  aligned16(o_weight) && aligned16(out_weight) && x.rows <= INT_MAX;
  if (!ok) return false;
  const int nv = row_nv(x.cols);
  const unsigned grid = static_cast<unsigned>(x.rows);
  if (nv <= 2) {
    launch_k(add_rms_row_kernel<2>, grid, kRowThreads, 0, s, x, o, o_weight, scale, out_weight, eps, out, xh, xscale,
             n_in_pad);
  } else if (nv <= 4) {
    launch_k(add_rms_row_kernel<4>, grid, kRowThreads, 0, s, x, o, o_weight, scale, out_weight, eps, out, xh, xscale,
             n_in_pad);
  } else if (nv <= 6) {
    launch_k(add_rms_row_kernel<6>, grid, kRowThreads, 0, s, x, o, o_weight, scale, out_weight, eps, out, xh, xscale,
             n_in_pad);
  } else {
    launch_k(add_rms_row_kernel<8>, grid, kRowThreads, 0, s, x, o, o_weight, scale, out_weight, eps, out, xh, xscale,
             n_in_pad);
  }
  return true;
}

bool launch_qkv_norm_rope_store(cudaStream_t s, const QkvParams& p) {
  const int D = p.rope.head_dim, nd = p.rope.n_dims;
  if (D <= 0 || D > kQkvMaxHeadDim || nd < 2 || nd % 2 != 0 || nd > D || nd > 2 * kRopeMaxPairs) return false;
  if (p.q.cols % D != 0 || p.k.cols % D != 0) return false;
  const int64_t rows = p.q.rows;
  const int64_t n_q = p.q.cols / D, n_kv = p.k.cols / D;
  if (n_kv > 0 && (p.kv.n_head_kv != n_kv || p.kv.head_dim != D || p.k.rows != rows || p.v.rows != rows ||
                   p.v.cols != p.k.cols || !p.kv.k || !p.kv.v || !p.slots))
    return false;
  if (n_q + n_kv > INT_MAX / 2) return false;
  const int units = static_cast<int>(n_q + n_kv);
  if (rows == 0 || units == 0) return true;
  const int cpr = (units + kQkvWarps - 1) / kQkvWarps;
  if (rows > INT_MAX / cpr) return false;
  const unsigned grid = static_cast<unsigned>(rows * cpr);
  const size_t smem = static_cast<size_t>(2 * (nd / 2) + kQkvWarps * D) * sizeof(float);  // <= 36 KiB
  const int nq = static_cast<int>(n_q), nkv = static_cast<int>(n_kv);
  if (D <= 64) launch_k(qkv_kernel<2>, grid, kQkvWarps * 32, smem, s, p, nq, nkv, cpr);
  else if (D <= 128) launch_k(qkv_kernel<4>, grid, kQkvWarps * 32, smem, s, p, nq, nkv, cpr);
  else if (D <= 256) launch_k(qkv_kernel<8>, grid, kQkvWarps * 32, smem, s, p, nq, nkv, cpr);
  else if (D <= 512) launch_k(qkv_kernel<16>, grid, kQkvWarps * 32, smem, s, p, nq, nkv, cpr);
  else launch_k(qkv_kernel<32>, grid, kQkvWarps * 32, smem, s, p, nq, nkv, cpr);
  return true;
}

}  // namespace gs::cuda
