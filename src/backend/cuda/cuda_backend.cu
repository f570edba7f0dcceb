// Placeholder CUDA backend: reports the device count; the kernels arrive with issue 7.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"

namespace gs {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id) {
  return make_status(StatusCode::kUnimplemented, "the CUDA backend is not implemented yet (device {})", device_id);
}

}  // namespace gs
