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
  // Capture run_step() as CUDA graphs (GS_CUDA_GRAPHS=0 turns it off).
  bool graphs = true;
  // Captured steps kept at most (>= 1): past it the least recently replayed one is destroyed.
  // A server meets a new (tokens, outputs) step shape for many prompt lengths, so without a
  // bound the graphs (~700 nodes each for a 31B step) grew for as long as it ran.
  int max_graphs = 256;
  // Steps of more token rows than this run without capture (prefill chunks): their kernels'
  // time hides their launches, and a prompt's last chunk has a length of its own, so capturing
  // them filled the graph cache with steps replayed once, ~2 MB of host memory each on the
  // shakes model (thirty-sixth session, docs/perf-notes.md). Decode and verify batches (up to
  // 16 sequences of 1 + 4 drafts with --parallel 16 --draft-max 4: 80 rows) stay captured.
  // GS_CUDA_GRAPH_MAX_ROWS sets it for create_cuda_backend(device_id).
  int graph_max_rows = 128;
};

// Number of CUDA devices visible (0 when the driver or device is missing).
int cuda_device_count();
// Errors: kUnavailable without a device (or an unusable driver), kResourceExhausted when
// the device cannot hold the backend's working buffers.
Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id);
Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id, const CudaBackendOptions& options);

}  // namespace gs
