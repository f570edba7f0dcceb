// Entry points of the pipelined decode matvec (k_matvec_pipe.cu), called by k_matvec.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda {

// Kernel attributes (dynamic shared memory above 48 KB); once at init.
cudaError_t matvec_pipe_prepare();

// Launches the pipelined matvec when it serves this weight (Q5_K; at most 8 warps a
// CTA) with the grid and warp split the caller sized; false (nothing launched) otherwise.
// Operands as launch_matvec_mma's.
bool launch_matvec_pipe(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh, const float* xscale,
                        MatF y, dim3 grid, int threads, const mv::MvGrid& G);

}  // namespace gs::cuda
