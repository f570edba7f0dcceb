// Cycle counts of the parts of a kernel's loop, for measurement instantiations of a kernel
// (the q8_0 attention kernels' kTiming forms): a thread calls start() once, then lap(part)
// after each part, which adds the clock64 cycles since the previous lap to sum[part].
#pragma once

#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

template <int kParts>
struct LapClock {
  long long sum[kParts] = {};
  long long t = 0;
  __device__ __forceinline__ void start() { t = clock64(); }
  __device__ __forceinline__ void lap(int part) {
    const long long now = clock64();
    sum[part] += now - t;
    t = now;
  }
};

}  // namespace gs::cuda
