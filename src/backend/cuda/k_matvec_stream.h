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

// Several weights of one format and n_in applied to the same activations in one launch:
// y[p] = x w[p]^T for p < n (1 <= n <= kMatvecMaxParts), the row groups of all parts split
// over one grid (so no launch pays its own ramp and tail). The values are those of n
// launch_matvec_stream calls up to the order of the f32 partial sums where a row group is
// cut between CTAs (which depends on the set of weights only, not on the rows). False
// (nothing launched) when the kernel does not serve them all.
bool launch_matvec_stream_multi(cudaStream_t s, const void* const* w, const WeightLayout* const* L, const MatF* y,
                                int n, const uint16_t* xh, const float* xscale, int n_sm, const MatvecSync& sync);

}  // namespace gs::cuda
