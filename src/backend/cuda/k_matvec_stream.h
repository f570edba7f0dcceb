// Entry points of the bulk-copy decode matvec (k_matvec_stream.cu), called by k_matvec.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_kernels.h"

namespace gs::cuda {

// Kernel attributes (dynamic shared memory above 48 KB, shared-memory carveout); once at init.
cudaError_t matvec_stream_prepare();

// Launches the bulk-copy matvec when it serves this weight (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0;
// y.rows <= 16) and returns true; false (nothing launched) otherwise, or when GS_CUDA_MV
// selects another kernel. Operands as launch_matvec_mma's; `sync` is the per-CTA scratch
// (MatvecSync) that CTAs sharing a row group combine their partial sums through.
bool launch_matvec_stream(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh,
                          const float* xscale, MatF y, int n_sm, const MatvecSync& sync);

}  // namespace gs::cuda
