// The max |v| of one activation row whose elements several CTAs of a grid hold (RowSync,
// cuda_kernels.h): the exchange behind the f16 operand kernels of k_row_f16.cu and the
// attention combine's (k_attention.cu).
//
// Each CTA leaves its part's max in RowSync::partial and counts itself in arrive[row]; once
// all n_parts CTAs of the row have arrived, each reads the partials (max is order-free, so
// the result does not depend on timing) and counts itself out in depart[row]; the last one
// out sets both counters back to zero for the next launch. The caller's grid must be
// resident as a whole: every CTA triggers the dependent launch at its start (so every CTA
// is resident before the next kernel can start) and the grid is small. A lost partner traps
// after 10 s instead of hanging.
#pragma once

#include <cstdint>

#include "backend/cuda/k_bulk.cuh"
#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

// m, nan: this thread's max |v| and whether it saw a NaN. sh: kThreads / 32 + 2 floats of the
// caller's shared memory. Every thread of the CTA calls it; all get the row's max (NaN when
// any element of the row is NaN).
template <int kThreads>
__device__ __forceinline__ float row_amax_across_ctas(float m, bool nan, float* sh, const RowSync& sync, int row,
                                                      int part, int n_parts) {
  constexpr uint64_t kTimeoutNs = 10000000000ull;
  int* any_nan = reinterpret_cast<int*>(sh + kThreads / 32 + 1);
  if (threadIdx.x == 0) *any_nan = 0;
  __syncthreads();
  m = warp_max(m);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x / 32] = m;
  if (nan) *any_nan = 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = 0.f;
    for (int i = 0; i < kThreads / 32; ++i) r = fmaxf(r, sh[i]);
    if (*any_nan) r = __int_as_float(0x7fc00000);
    if (n_parts > 1) {
      float* partial = sync.partial + static_cast<int64_t>(row) * kRowSyncChunks;
      partial[part] = r;
      __threadfence();
      atomicAdd(sync.arrive + row, 1);
      const uint64_t t0 = global_timer_ns();
      while (ld_acquire_gpu(sync.arrive + row) < n_parts) {
        __nanosleep(32);
        if (global_timer_ns() - t0 > kTimeoutNs) __trap();
      }
      bool n = false;
      r = 0.f;
      for (int i = 0; i < n_parts; ++i) {
        const float v = __ldcg(partial + i);
        n |= isnan(v);
        r = fmaxf(r, v);
      }
      if (n) r = __int_as_float(0x7fc00000);
      if (atomicAdd(sync.depart + row, 1) == n_parts - 1) {  // every CTA of the row has read
        sync.arrive[row] = 0;
        sync.depart[row] = 0;
      }
    }
    sh[kThreads / 32] = r;
  }
  __syncthreads();
  return sh[kThreads / 32];
}

}  // namespace gs::cuda
