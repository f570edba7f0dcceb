// The CUDA backend (Hopper, sm_90): implements backend.h on one GPU. This header has no CUDA
// includes; everything CUDA lives in src/backend/cuda/.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace gs {

struct CudaBackendOptions {
  // Plain CUDA-core kernels for matmul and attention instead of the tensor-core ones: the
  // reference paths the device tests compare against. The environment variable
  // GS_CUDA_SIMPLE=1 sets it for create_cuda_backend(device_id).
  bool simple_kernels = false;
  // Capture the run_step() calls marked recurring as CUDA graphs (GS_CUDA_GRAPHS=0 turns it
  // off); the others (a prompt's last chunk) run their launches directly. Every step was
  // captured before: each prompt length left a graph replayed about once, and the cache's
  // churn grew the host memory (thirty-sixth session, docs/perf-notes.md).
  bool graphs = true;
  // Captured steps kept at most (>= 1): past it the least recently replayed one is destroyed
  // (~700 nodes each for a 31B step).
  int max_graphs = 256;
};

// Number of CUDA devices visible (0 when the driver or device is missing).
int cuda_device_count();
// Errors: kUnavailable without a device (or an unusable driver), kResourceExhausted when
// the device cannot hold the backend's working buffers.
Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id);
Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id, const CudaBackendOptions& options);

}  // namespace gs
