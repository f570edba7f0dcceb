// Element-wise and small kernels: RMS norm, RoPE (NEOX, freq factors, YaRN), GELU-gated
// product, add, scale, softcap, row gather and copy, embedding lookup, KV stores and copies.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_kv_q8.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_rows.cuh"

namespace gs::cuda {

bool g_pdl = true;
void set_pdl(bool on) { g_pdl = on; }

namespace {

constexpr int kThreads = 256;

inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (1 << 30) ? (1 << 30) : b));
}

// ---- argmax of each row, and its softmax probability (Backend::argmax_rows) ----------------
constexpr int kArgmaxThreads = 1024;

// (v, i) pairs: the larger value wins, the lower column on ties; columns past the row (the
// start value) lose to every column.
__device__ __forceinline__ void argmax_pick(float& v, int64_t& i, float v2, int64_t i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

__global__ void __launch_bounds__(kArgmaxThreads) argmax_rows_kernel(MatF x, int32_t* ids, float* p_top) {
  GS_PDL_ENTRY();
  __shared__ float sv[kArgmaxThreads / 32];
  __shared__ int64_t si[kArgmaxThreads / 32];
  __shared__ double ss[kArgmaxThreads / 32];
  const float* xr = x.data + static_cast<int64_t>(blockIdx.x) * x.stride;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float v = -INFINITY;
  int64_t i = x.cols;  // no column yet
  for (int64_t c = threadIdx.x; c < x.cols; c += kArgmaxThreads) {
    const float e = xr[c];
    if (e > v) {  // false for NaN and for -inf; ascending c keeps the lowest on ties
      v = e;
      i = c;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
    const int64_t i2 = __shfl_xor_sync(0xffffffffu, i, o);
    argmax_pick(v, i, v2, i2);
  }
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  v = sv[0];
  i = si[0];
  for (int w = 1; w < kArgmaxThreads / 32; ++w) argmax_pick(v, i, sv[w], si[w]);
  if (threadIdx.x == 0) ids[blockIdx.x] = static_cast<int32_t>(i < x.cols ? i : 0);
  if (!p_top) return;
  if (!isfinite(v)) {
    if (threadIdx.x == 0) p_top[blockIdx.x] = 0.f;
    return;
  }
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < x.cols; c += kArgmaxThreads) {
    const float e = xr[c];
    if (!isnan(e)) s += __expf(e - v);
  }
  s = warp_sum(s);
  if (lane == 0) ss[warp] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < kArgmaxThreads / 32; ++w) t += ss[w];
    p_top[blockIdx.x] = static_cast<float>(1.0 / t);
  }
}

// ---- RMS norm: one warp per group (small groups) or one block per group -----------------
__global__ void rms_norm_warp_kernel(MatF x, const float* __restrict__ w, int64_t group, float eps, MatF out,
                                     int64_t n_groups_total, int64_t groups_per_row) {
  GS_PDL_ENTRY();
  const int64_t gi = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (gi >= n_groups_total) return;
  const int64_t r = gi / groups_per_row, c0 = (gi % groups_per_row) * group;
  const float* xr = x.data + r * x.stride + c0;
  float* orow = out.data + r * out.stride + c0;
  // The fused attention-input kernel (k_fused.cu) repeats this arithmetic exactly.
  float ss = 0.f;
  for (int64_t i = lane; i < group; i += 32) ss = __fmaf_rn(xr[i], xr[i], ss);
  ss = warp_sum(ss);
  const float inv = rms_inv(ss, group, eps);
  for (int64_t i = lane; i < group; i += 32) {
    const float g = w ? w[i] : 1.0f;
    orow[i] = __fmul_rn(g, __fmul_rn(xr[i], inv));
  }
}

__global__ void rms_norm_block_kernel(MatF x, const float* __restrict__ w, int64_t group, float eps, MatF out,
                                      int64_t groups_per_row) {
  GS_PDL_ENTRY();
  const int64_t gi = blockIdx.x;
  const int64_t r = gi / groups_per_row, c0 = (gi % groups_per_row) * group;
  const float* xr = x.data + r * x.stride + c0;
  float* orow = out.data + r * out.stride + c0;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < group; i += blockDim.x) ss += xr[i] * xr[i];
  __shared__ float part[32];
  ss = warp_sum(ss);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) part[0] = v;
  }
  __syncthreads();
  const float inv = 1.0f / sqrtf(part[0] / static_cast<float>(group) + eps);
  for (int64_t i = threadIdx.x; i < group; i += blockDim.x) {
    const float g = w ? w[i] : 1.0f;
    orow[i] = g * (xr[i] * inv);
  }
}

// One row per block, the row held in registers (one read): x is read once, out written once,
// and, when xh is given, out also as the f16 matvec operand (permuted, power-of-two scaled;
// see launch_act_to_f16_rows), which saves the matmul that follows its conversion pass.
// The fused add_rms_norm kernel (k_fused.cu) is built from the same pieces (k_rows.cuh).
template <int NV>
__global__ void __launch_bounds__(kRowThreads) rms_row_kernel(MatF x, const float* __restrict__ w, float eps, MatF out,
                                                              uint16_t* __restrict__ xh, float* __restrict__ xscale,
                                                              int64_t n_in_pad) {
  GS_PDL_ENTRY();
  __shared__ float sh[kRowThreads / 32];
  const int64_t r = blockIdx.x;
  const int n4 = static_cast<int>(x.cols / 4);
  float4 v[NV];
  row_load(x.data + r * x.stride, n4, v);
  const float inv = rms_inv(row_block_sum(row_sumsq(v), sh), x.cols, eps);
  float4 g[NV];
  row_gain_load(w, n4, g);
  row_norm_gain(v, n4, g, inv);
  row_store(out.data + r * out.stride, n4, v);
  if (xh != nullptr) row_write_f16(v, n4, xh + r * n_in_pad, xscale + r, n_in_pad, sh);
}

// GELU-gated product of whole rows, one block per row, also writing the f16 matvec operand
// of the result (the down projection's input) like rms_row_kernel.
__global__ void __launch_bounds__(256) gelu_rows_kernel(MatF gate, MatF up, MatF out, uint16_t* __restrict__ xh,
                                                        float* __restrict__ xscale, int64_t n_in_pad) {
  GS_PDL_ENTRY();
  __shared__ float sh[32];
  const int64_t r = blockIdx.x;
  const int n4 = static_cast<int>(out.cols / 4);
  const float4* g4 = reinterpret_cast<const float4*>(gate.data + r * gate.stride);
  const float4* u4 = reinterpret_cast<const float4*>(up.data + r * up.stride);
  float4* o4 = reinterpret_cast<float4*>(out.data + r * out.stride);
  float amax = 0.f;
  bool nan = false;
  for (int c = threadIdx.x; c < n4; c += 256) {
    const float4 g = g4[c], u = u4[c];
    const float4 o = gelu_mul4(g, u);
    o4[c] = o;
    amax = fmaxf(amax, fmaxf(fmaxf(fabsf(o.x), fabsf(o.y)), fmaxf(fabsf(o.z), fabsf(o.w))));
    nan |= isnan(o.x) || isnan(o.y) || isnan(o.z) || isnan(o.w);
  }
  float factor, undo;
  act_pow2_scale(row_block_amax(amax, nan, sh), factor, undo);
  if (threadIdx.x == 0) xscale[r] = undo;
  uint2* hrow = reinterpret_cast<uint2*>(xh + r * n_in_pad);
  for (int c = threadIdx.x; c < n4; c += 256) {
    const float4 o = o4[c];  // this thread's own writes
    hrow[c] = make_uint2(pack_f32x2(o.x * factor, o.z * factor), pack_f32x2(o.y * factor, o.w * factor));
  }
  for (int c = n4 + threadIdx.x; c < n_in_pad / 4; c += 256) hrow[c] = make_uint2(0u, 0u);
}

// ---- RoPE ---------------------------------------------------------------------------------
// One CTA per (token, group of kRopeHeads heads). The cos/sin of the token's n_dims / 2
// angles are computed once (in double, rope_cos_sin) into shared memory, then every (head,
// pair) of the group is rotated by its own thread, loads before stores.
constexpr int kRopeHeads = 4;

__global__ void __launch_bounds__(kThreads) rope_kernel(MatF x, const int32_t* __restrict__ pos, RopeParams p,
                                                        int64_t n_heads) {
  GS_PDL_ENTRY();
  __shared__ float cs_sh[kRopeMaxPairs], sn_sh[kRopeMaxPairs];
  const int half = p.n_dims / 2;
  const int64_t r = blockIdx.x;
  const double pr = static_cast<double>(pos[r]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) rope_cos_sin(p, i, pr, &cs_sh[i], &sn_sh[i]);
  __syncthreads();
  const int64_t h0 = static_cast<int64_t>(blockIdx.y) * kRopeHeads;
  const int64_t nh = n_heads - h0 < kRopeHeads ? n_heads - h0 : kRopeHeads;
  const int total = static_cast<int>(nh) * half;
  float* row = x.data + r * x.stride + h0 * p.head_dim;
  constexpr int kBatch = 4;  // pairs per thread loaded before any is stored
  for (int base = threadIdx.x; base < total; base += kBatch * blockDim.x) {
    float va[kBatch], vb[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int idx = base + j * static_cast<int>(blockDim.x);
      if (idx < total) {
        const float* v = row + (idx / half) * p.head_dim + idx % half;
        va[j] = v[0];
        vb[j] = v[half];
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int idx = base + j * static_cast<int>(blockDim.x);
      if (idx < total) {
        const int i = idx % half;
        float* v = row + (idx / half) * p.head_dim + i;
        rope_rotate(va[j], vb[j], cs_sh[i], sn_sh[i], &v[0], &v[half]);
      }
    }
  }
}

// ---- element-wise -------------------------------------------------------------------------

enum class Ew { kGeluMul, kAdd, kCopy, kScale, kSoftcap };

template <Ew kOp>
__device__ __forceinline__ float ew(float a, float b, float s) {
  if constexpr (kOp == Ew::kGeluMul) return gelu_tanh(a) * b;
  if constexpr (kOp == Ew::kAdd) return a + b;
  if constexpr (kOp == Ew::kCopy) return a;
  if constexpr (kOp == Ew::kScale) return a * s;
  if constexpr (kOp == Ew::kSoftcap) return s * tanhf(a / s);
  return a;
}

// Rows over grid.y (strided), columns over grid.x; float4 when every row start is 16-byte
// aligned (vec), scalar otherwise. `out` may alias a or b (each element read then written by
// one thread).
template <Ew kOp, bool kVec>
__global__ void ew_kernel(MatF a, MatF b, MatF out, float s) {
  GS_PDL_ENTRY();
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = blockIdx.y; r < out.rows; r += gridDim.y) {
    const float* ar = a.data + r * a.stride;
    const float* br = b.data + r * b.stride;
    float* orow = out.data + r * out.stride;
    if constexpr (kVec) {
      const int64_t n4 = out.cols / 4;
      for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < n4; c += step) {
        const float4 va = reinterpret_cast<const float4*>(ar)[c];
        float4 vb = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kOp == Ew::kGeluMul || kOp == Ew::kAdd) vb = reinterpret_cast<const float4*>(br)[c];
        float4 o;
        o.x = ew<kOp>(va.x, vb.x, s);
        o.y = ew<kOp>(va.y, vb.y, s);
        o.z = ew<kOp>(va.z, vb.z, s);
        o.w = ew<kOp>(va.w, vb.w, s);
        reinterpret_cast<float4*>(orow)[c] = o;
      }
    } else {
      for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < out.cols; c += step) {
        float vb = 0.f;
        if constexpr (kOp == Ew::kGeluMul || kOp == Ew::kAdd) vb = br[c];
        orow[c] = ew<kOp>(ar[c], vb, s);
      }
    }
  }
}

bool vec_ok(const MatF& m) {
  return m.cols % 4 == 0 && m.stride % 4 == 0 && (reinterpret_cast<uintptr_t>(m.data) & 15) == 0;
}

template <Ew kOp>
void launch_ew(cudaStream_t st, MatF a, MatF b, MatF out, float s) {
  if (out.rows == 0 || out.cols == 0) return;
  const bool vec = vec_ok(a) && vec_ok(out) && (kOp == Ew::kCopy || kOp == Ew::kScale || kOp == Ew::kSoftcap || vec_ok(b));
  const int64_t work = vec ? out.cols / 4 : out.cols;
  int64_t gx = (work + kThreads - 1) / kThreads;
  int64_t gy = out.rows;
  // Keep the grid near a few waves; rows loop inside.
  if (gx > 4096) gx = 4096;
  if (gy > 65535) gy = 65535;
  if (gx * gy > 65536 && gy > 1) gy = std::max<int64_t>(1, 65536 / gx);
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  if (vec) {
    launch_k(ew_kernel<kOp, true>, grid, kThreads, 0, st, a, b, out, s);
  } else {
    launch_k(ew_kernel<kOp, false>, grid, kThreads, 0, st, a, b, out, s);
  }
}

__global__ void gather_kernel(MatF src, const int32_t* __restrict__ rows, MatF dst, int64_t total) {
  GS_PDL_ENTRY();
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / dst.cols, c = idx % dst.cols;
    const int64_t sr = rows[r];
    dst.data[r * dst.stride + c] = (sr >= 0 && sr < src.rows) ? src.data[sr * src.stride + c] : 0.0f;
  }
}

__global__ void embed_kernel(const uint8_t* __restrict__ w, WeightLayout L, const int32_t* __restrict__ ids,
                             float scale, MatF out) {
  GS_PDL_ENTRY();
  const int64_t r = blockIdx.y;
  const int64_t id = ids[r];
  const bool ok = id >= 0 && id < L.n_out;
  for (int64_t e = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8; e < L.n_in;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x * 8) {
    float v[8];
    if (ok) {
      load8(w, L, id, e, v);
    } else {
      for (int i = 0; i < 8; ++i) v[i] = 0.f;
    }
    for (int i = 0; i < 8 && e + i < L.n_in; ++i) out.data[r * out.stride + e + i] = v[i] * scale;
  }
}

__global__ void kv_store_kernel(MatF k, MatF v, KvView kv, const int32_t* __restrict__ slots, int64_t width,
                                int64_t total) {
  GS_PDL_ENTRY();
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = idx / width, c = idx % width;
    const int64_t slot = slots[t];
    if (slot < 0 || slot >= kv.n_slots) continue;
    const float kvv = k.data[t * k.stride + c], vvv = v.data[t * v.stride + c];
    if (kv.f16) {
      static_cast<uint16_t*>(kv.k)[slot * width + c] = f32_to_f16_bits(kvv);
      static_cast<uint16_t*>(kv.v)[slot * width + c] = f32_to_f16_bits(vvv);
    } else {
      static_cast<float*>(kv.k)[slot * width + c] = kvv;
      static_cast<float*>(kv.v)[slot * width + c] = vvv;
    }
  }
}

// q8_0 pools: one warp per block of 32 values (row t, kv head, block b), lane i on value i.
__global__ void kv_store_q8_kernel(MatF k, MatF v, KvView kv, const int32_t* __restrict__ slots, int64_t n_blocks) {
  GS_PDL_ENTRY();
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int D = kv.head_dim, bpr = D / 32;  // blocks per head row
  const int64_t hb = kv_head_row_bytes(kv);
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; w < n_blocks;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x / 32) {
    const int64_t t = w / (static_cast<int64_t>(kv.n_head_kv) * bpr);
    const int rest = static_cast<int>(w % (static_cast<int64_t>(kv.n_head_kv) * bpr));
    const int j = rest / bpr, b = rest % bpr;
    const int64_t slot = slots[t];
    if (slot < 0 || slot >= kv.n_slots) continue;  // uniform over the warp
    const int64_t c = static_cast<int64_t>(j) * D + 32 * b + lane;
    const int64_t row = (slot * kv.n_head_kv + j) * hb;
    auto* krow = static_cast<uint8_t*>(kv.k) + row;
    auto* vrow = static_cast<uint8_t*>(kv.v) + row;
    q8_block_store_warp(k.data[t * k.stride + c], reinterpret_cast<int8_t*>(krow) + 32 * b,
                        reinterpret_cast<uint16_t*>(krow + D) + b, lane);
    q8_block_store_warp(v.data[t * v.stride + c], reinterpret_cast<int8_t*>(vrow) + 32 * b,
                        reinterpret_cast<uint16_t*>(vrow + D) + b, lane);
  }
}

__global__ void kv_copy_kernel(KvView kv, const int32_t* __restrict__ src, const int32_t* __restrict__ dst,
                               int64_t row_bytes, int64_t total_words) {
  GS_PDL_ENTRY();
  // row_bytes is a multiple of 4 (launch_kv_copy_slots).
  const int64_t words = row_bytes / 4;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total_words;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / words, c = idx % words;
    const int64_t s = src[i], d = dst[i];
    if (s < 0 || s >= kv.n_slots || d < 0 || d >= kv.n_slots) continue;
    uint32_t* kk = static_cast<uint32_t*>(kv.k);
    uint32_t* vv = static_cast<uint32_t*>(kv.v);
    kk[d * words + c] = kk[s * words + c];
    vv[d * words + c] = vv[s * words + c];
  }
}

__global__ void kv_copy_bytes_kernel(KvView kv, const int32_t* __restrict__ src, const int32_t* __restrict__ dst,
                                     int64_t row_bytes, int64_t total) {
  GS_PDL_ENTRY();
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx / row_bytes, c = idx % row_bytes;
    const int64_t s = src[i], d = dst[i];
    if (s < 0 || s >= kv.n_slots || d < 0 || d >= kv.n_slots) continue;
    uint8_t* kk = static_cast<uint8_t*>(kv.k);
    uint8_t* vv = static_cast<uint8_t*>(kv.v);
    kk[d * row_bytes + c] = kk[s * row_bytes + c];
    vv[d * row_bytes + c] = vv[s * row_bytes + c];
  }
}

}  // namespace

bool launch_rms_norm_rows(cudaStream_t s, MatF x, const float* weight, float eps, MatF out, uint16_t* xh,
                          float* xscale, int64_t n_in_pad) {
  const bool aligned = x.cols % 4 == 0 && x.stride % 4 == 0 && out.stride % 4 == 0 &&
                       (reinterpret_cast<uintptr_t>(x.data) & 15) == 0 && (reinterpret_cast<uintptr_t>(out.data) & 15) == 0 &&
                       (weight == nullptr || (reinterpret_cast<uintptr_t>(weight) & 15) == 0);
  if (!aligned || x.cols > kRowMaxCols || x.rows == 0) return false;
  const int nv = row_nv(x.cols);
  const unsigned grid = static_cast<unsigned>(x.rows);
  if (nv <= 2) launch_k(rms_row_kernel<2>, grid, kRowThreads, 0, s, x, weight, eps, out, xh, xscale, n_in_pad);
  else if (nv <= 4) launch_k(rms_row_kernel<4>, grid, kRowThreads, 0, s, x, weight, eps, out, xh, xscale, n_in_pad);
  else if (nv <= 6) launch_k(rms_row_kernel<6>, grid, kRowThreads, 0, s, x, weight, eps, out, xh, xscale, n_in_pad);
  else launch_k(rms_row_kernel<8>, grid, kRowThreads, 0, s, x, weight, eps, out, xh, xscale, n_in_pad);
  return true;
}

void launch_rms_norm(cudaStream_t s, MatF x, const float* weight, int64_t group, float eps, MatF out) {
  if (x.rows == 0 || group <= 0) return;
  if (group == x.cols && group > 1024 && launch_rms_norm_rows(s, x, weight, eps, out, nullptr, nullptr, 0)) return;
  const int64_t gpr = x.cols / group;
  const int64_t n = x.rows * gpr;
  if (group <= 1024) {
    const int64_t threads = n * 32;
    launch_k(rms_norm_warp_kernel, grid_for(threads), kThreads, 0, s, x, weight, group, eps, out, n, gpr);
  } else {
    launch_k(rms_norm_block_kernel, static_cast<unsigned>(n), 512, 0, s, x, weight, group, eps, out, gpr);
  }
}

void launch_rope(cudaStream_t s, MatF x, const int32_t* pos, const RopeParams& p) {
  if (x.rows == 0 || p.n_dims < 2) return;
  const int64_t n_heads = x.cols / p.head_dim;
  const dim3 grid(static_cast<unsigned>(x.rows), static_cast<unsigned>((n_heads + kRopeHeads - 1) / kRopeHeads));
  launch_k(rope_kernel, grid, kThreads, 0, s, x, pos, p, n_heads);
}

void launch_gelu_mul(cudaStream_t s, MatF gate, MatF up, MatF out) {
  launch_ew<Ew::kGeluMul>(s, gate, up, out, 0.f);
}

bool launch_gelu_mul_rows(cudaStream_t s, MatF gate, MatF up, MatF out, uint16_t* xh, float* xscale,
                          int64_t n_in_pad) {
  if (!(vec_ok(gate) && vec_ok(up) && vec_ok(out)) || out.rows == 0) return false;
  launch_k(gelu_rows_kernel, static_cast<unsigned>(out.rows), 256, 0, s, gate, up, out, xh, xscale, n_in_pad);
  return true;
}

void launch_add(cudaStream_t s, MatF a, MatF b, MatF out) {
  launch_ew<Ew::kAdd>(s, a, b, out, 0.f);
}

void launch_copy(cudaStream_t s, MatF src, MatF dst) {
  launch_ew<Ew::kCopy>(s, src, src, dst, 0.f);
}

void launch_scale(cudaStream_t s, MatF x, float factor) {
  launch_ew<Ew::kScale>(s, x, x, x, factor);
}

void launch_softcap(cudaStream_t s, MatF x, float cap) {
  launch_ew<Ew::kSoftcap>(s, x, x, x, cap);
}

void launch_argmax_rows(cudaStream_t s, MatF x, int32_t* ids, float* p_top) {
  if (x.rows == 0) return;
  launch_k(argmax_rows_kernel, static_cast<unsigned>(x.rows), kArgmaxThreads, 0, s, x, ids, p_top);
}

void launch_gather_rows(cudaStream_t s, MatF src, const int32_t* rows, MatF dst) {
  const int64_t total = dst.rows * dst.cols;
  if (total == 0) return;
  launch_k(gather_kernel, grid_for(total), kThreads, 0, s, src, rows, dst, total);
}

void launch_embed(cudaStream_t s, const void* w, const WeightLayout& L, const int32_t* ids, float scale, MatF out) {
  if (out.rows == 0) return;
  const int64_t per_row_threads = (L.n_in + 7) / 8;
  const unsigned gx = grid_for(per_row_threads, 128);
  launch_k(embed_kernel, dim3(gx, static_cast<unsigned>(out.rows)), 128, 0, s, static_cast<const uint8_t*>(w), L, ids,
                                                                          scale, out);
}

void launch_kv_store(cudaStream_t s, MatF k, MatF v, const KvView& kv, const int32_t* slots) {
  const int64_t width = static_cast<int64_t>(kv.n_head_kv) * kv.head_dim;
  const int64_t total = k.rows * width;
  if (total == 0) return;
  if (kv.q8) {  // one warp a block of 32 (head_dim % 32 == 0)
    launch_k(kv_store_q8_kernel, grid_for(total), kThreads, 0, s, k, v, kv, slots, total / 32);
    return;
  }
  launch_k(kv_store_kernel, grid_for(total), kThreads, 0, s, k, v, kv, slots, width, total);
}

void launch_kv_copy_slots(cudaStream_t s, const KvView& kv, const int32_t* src, const int32_t* dst, int n) {
  if (n <= 0) return;
  const int64_t row_bytes = kv.n_head_kv * kv_head_row_bytes(kv);
  if (row_bytes % 4 == 0) {
    const int64_t total = n * (row_bytes / 4);
    launch_k(kv_copy_kernel, grid_for(total), kThreads, 0, s, kv, src, dst, row_bytes, total);
  } else {
    const int64_t total = n * row_bytes;
    launch_k(kv_copy_bytes_kernel, grid_for(total), kThreads, 0, s, kv, src, dst, row_bytes, total);
  }
}

}  // namespace gs::cuda
