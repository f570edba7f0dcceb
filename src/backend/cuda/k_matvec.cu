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
#include "backend/cuda/k_matvec_pipe.h"
#include "backend/cuda/k_matvec_stream.h"
#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda {
namespace {
using namespace mv;

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
  act_pow2_scale(m, factor, undo);
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
  act_pow2_scale(__uint_as_float(*amax), factor, undo);
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

template <WFormat F, int NT>
__global__ void __launch_bounds__(kMaxWarps * 32) matvec_mma_kernel(const uint8_t* __restrict__ w, WeightLayout L,
                                                                   const uint16_t* __restrict__ xh,
                                                                   const float* __restrict__ xscale, MatF y,
                                                                   MvGrid G) {
  GS_PDL_ENTRY();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wr = warp % G.wr, wk = warp / G.wr;
  const int g = lane >> 2, t = lane & 3;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * G.wr + wr) * 16 + g;
  const RowPtrs R = row_ptrs(w, L, row0, G);
  const int n = static_cast<int>(y.rows);
  const int64_t n_tiles = L.n_in_pad / kTileElems;

  float acc[NT][4], acc2[NT][4];
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    for (int i = 0; i < 4; ++i) acc[ct][i] = acc2[ct][i] = 0.f;

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
      x_operands<NT>(xh, L, tile, g, n, xb, xok);
      compute_tile<F, NT>(cur, acc, acc2, t, xb);
      cur = nxt;
    }
  } else {
    for (int64_t tile = wk; tile < n_tiles; tile += G.wk) {
      const uint16_t* xb[NT];
      bool xok[NT];
      x_operands<NT>(xh, L, tile, g, n, xb, xok);
      if constexpr (F == WFormat::kF32) tile_f32<NT>(acc, R, tile, t, xb, xok);
      else tile_half<F, NT>(acc, R, tile, t, xb, xok);
    }
  }

  // k-split partial sums: warps with wk > 0 hand theirs to the wk == 0 warp of their rows.
  add_acc<NT>(acc, acc2);
  __shared__ float red[kMaxWarps][NT * 4][32];
  if (!ksplit_sum<NT>(acc, &red[0][0][0], NT * 4 * 32, G, warp, lane)) return;
  store_rows<NT>(acc, R, row0, t, xscale, y);
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
                       MatF y, int n_sm, const MatvecSync& sync) {
  if (y.rows == 0 || L.n_out == 0) return;
  if (launch_matvec_stream(s, w, L, xh, xscale, y, n_sm, sync)) return;
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
  static const int l2pf = [] {
    const char* e = std::getenv("GS_CUDA_L2PF");
    return e && std::string(e) == "0" ? 0 : 1;
  }();
  G.l2pf = l2pf;
  const int64_t ctas = (row_groups + G.wr - 1) / G.wr;
  const dim3 grid(static_cast<unsigned>(ctas));
  const int threads = G.wr * G.wk * 32;
  if (launch_matvec_pipe(s, w, L, xh, xscale, y, grid, threads, G)) return;
  if (y.rows <= 8) {
    launch_mma_nt<1>(s, w, L, xh, xscale, y, grid, threads, G);
  } else {
    launch_mma_nt<2>(s, w, L, xh, xscale, y, grid, threads, G);
  }
}

cudaError_t matvec_prepare() {
  const cudaError_t a = matvec_pipe_prepare(), b = matvec_stream_prepare();
  return a != cudaSuccess ? a : b;
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
