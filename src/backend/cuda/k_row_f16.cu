// The f16 matvec operand of a few activation rows, written by several CTAs per row: the
// conversion of launch_act_to_f16_rows (permute = true) and the GELU-gated product of
// launch_gelu_mul_rows, for decode and verify sizes (rows <= kRowSyncRows).
//
// Why: the one-CTA-per-row kernels run each row on one SM. Measured on the H200 with Nsight
// Compute (docs/perf-notes.md, sixth session), in a 31B decode step the conversion of the
// attention output (8192 or 16384 floats) took ~20 us a call and the GELU product (21504)
// ~15 us, 2.1 ms of a 10.7 ms step together. Here each row is cut into chunks of kRowChunk
// elements, one CTA each, every thread holding its 8 elements in registers (one load each,
// all in flight at once).
//
// The power-of-two scale of the operand needs the row's max |v| before any element is
// written. Each CTA leaves its chunk's max in RowSync::partial and counts itself in
// RowSync::arrive[row]; once all the row's CTAs have arrived, each reads the partials (max is
// order-free, so the result does not depend on timing) and counts itself out in depart[row];
// the last one out sets both counters back to zero for the next launch. Every CTA of the grid
// is resident before the next kernel can start (each triggers the dependent launch at its
// start), and the launchers take this path only for grids the GPU can hold at once
// (RowSync::max_ctas, from the occupancy calculator), so the wait cannot deadlock; a lost
// partner traps after 10 s instead of hanging. Decision 0021.
//
// Outputs are element for element those of the one-CTA kernels: the same expressions for
// each value, the same max, the same scale.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/k_bulk.cuh"
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_rows.cuh"

namespace gs::cuda {
namespace {

constexpr int kThreads = kRowThreads;
constexpr int kPerThread = 2;  // float4 per thread
constexpr uint64_t kWaitTimeoutNs = 10000000000ull;

// The row's max |v| (NaN when any element of the row is NaN) from this thread's m and nan;
// every thread of the CTA calls it.
__device__ float row_amax_across_ctas(float m, bool nan, const RowSync& sync, int row, int chunk, int n_chunks) {
  __shared__ float sh[kThreads / 32];
  __shared__ float row_max;
  const float cta = row_block_amax(m, nan, sh);
  if (threadIdx.x == 0) {
    float r = cta;
    if (n_chunks > 1) {
      float* part = sync.partial + static_cast<int64_t>(row) * kRowSyncChunks;
      __stcg(part + chunk, cta);
      __threadfence();
      atomicAdd(sync.arrive + row, 1);
      const uint64_t t0 = global_timer_ns();
      while (ld_acquire_gpu(sync.arrive + row) < n_chunks) {
        __nanosleep(32);
        if (global_timer_ns() - t0 > kWaitTimeoutNs) __trap();
      }
      bool n = false;
      r = 0.f;
      for (int i = 0; i < n_chunks; ++i) {
        const float v = __ldcg(part + i);
        n |= isnan(v);
        r = fmaxf(r, v);
      }
      if (n) r = __int_as_float(0x7fc00000);
      __threadfence();  // the partials are read before this CTA counts itself out
      if (atomicAdd(sync.depart + row, 1) == n_chunks - 1) {  // every CTA of the row has read
        sync.arrive[row] = 0;
        sync.depart[row] = 0;
      }
    }
    row_max = r;
  }
  __syncthreads();
  return row_max;
}

// kGelu: v = GELU(gate) * up, also stored to out (f32); else v = x (= gate). Grid: rows x
// n_chunks CTAs, CTA b = row b / n_chunks, chunk b % n_chunks of kRowChunk elements.
template <bool kGelu>
__global__ void __launch_bounds__(kThreads) row_f16_kernel(MatF x, MatF up, MatF out, uint16_t* __restrict__ xh,
                                                           float* __restrict__ xscale, int64_t n_in_pad, int n_chunks,
                                                           RowSync sync) {
  GS_PDL_ENTRY();
  const int row = static_cast<int>(blockIdx.x / n_chunks), chunk = static_cast<int>(blockIdx.x % n_chunks);
  const int n4 = static_cast<int>(x.cols / 4);
  const int c0 = chunk * (kRowChunk / 4) + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x.data + row * x.stride);
  float4 v[kPerThread];
  if constexpr (kGelu) {
    const float4* u4 = reinterpret_cast<const float4*>(up.data + row * up.stride);
    float4 g[kPerThread], u[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = c0 + i * kThreads;
      g[i] = c < n4 ? x4[c] : make_float4(0.f, 0.f, 0.f, 0.f);
      u[i] = c < n4 ? u4[c] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float4* o4 = reinterpret_cast<float4*>(out.data + row * out.stride);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      v[i] = gelu_mul4(g[i], u[i]);
      const int c = c0 + i * kThreads;
      if (c < n4) o4[c] = v[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = c0 + i * kThreads;
      v[i] = c < n4 ? x4[c] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  float m = 0.f;
  bool nan = false;
  row_amax_nan(v, c0, n4, m, nan);
  const float amax = row_amax_across_ctas(m, nan, sync, row, chunk, n_chunks);
  float factor, undo;
  act_pow2_scale(amax, factor, undo);
  if (chunk == 0 && threadIdx.x == 0) xscale[row] = undo;
  uint2* hrow = reinterpret_cast<uint2*>(xh + row * n_in_pad);
  row_put_f16(v, c0, n4, hrow, factor);
  const int pad4 = static_cast<int>(n_in_pad / 4);
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int c = c0 + i * kThreads;
    if (c >= n4 && c < pad4) hrow[c] = make_uint2(0u, 0u);
  }
}

static_assert(kRowChunk == kThreads * kPerThread * 4, "a chunk is kPerThread float4 per thread");

// Chunks per row, or 0 when the shapes are not the kernel's or the grid could not be resident
// as a whole (its CTAs wait for each other).
int chunks_for(const MatF& x, int64_t n_in_pad, const RowSync& sync) {
  if (!sync.partial || x.rows < 1 || x.rows > kRowSyncRows || !rows_vec4(x) || n_in_pad < x.cols ||
      n_in_pad % 4 != 0)
    return 0;
  const int64_t n = (n_in_pad + kRowChunk - 1) / kRowChunk;
  if (n > kRowSyncChunks || x.rows * n > sync.max_ctas) return 0;
  return static_cast<int>(n);
}

}  // namespace

int row_f16_resident_ctas(int n_sm) {
  int a = 0, b = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, row_f16_kernel<false>, kThreads, 0) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, row_f16_kernel<true>, kThreads, 0) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return std::min(a, b) * n_sm;
}

bool launch_act_to_f16_rows_coop(cudaStream_t s, MatF x, int64_t n_in_pad, uint16_t* xh, float* xscale,
                                 const RowSync& sync) {
  const int n = chunks_for(x, n_in_pad, sync);
  if (n == 0) return false;
  launch_k(row_f16_kernel<false>, static_cast<unsigned>(x.rows * n), kThreads, 0, s, x, x, x, xh, xscale, n_in_pad,
           n, sync);
  return true;
}

bool launch_gelu_mul_rows_coop(cudaStream_t s, MatF gate, MatF up, MatF out, uint16_t* xh, float* xscale,
                               int64_t n_in_pad, const RowSync& sync) {
  const int n = chunks_for(out, n_in_pad, sync);
  if (n == 0 || !rows_vec4(gate) || !rows_vec4(up) || gate.cols != out.cols || up.cols != out.cols ||
      gate.rows != out.rows || up.rows != out.rows)
    return false;
  launch_k(row_f16_kernel<true>, static_cast<unsigned>(out.rows * n), kThreads, 0, s, gate, up, out, xh, xscale,
           n_in_pad, n, sync);
  return true;
}

}  // namespace gs::cuda
