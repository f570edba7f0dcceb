// The CUDA backend (Hopper, sm_90a/sm_90). This header has no CUDA includes.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace gs {

// Number of CUDA devices visible (0 when the driver or device is missing).
int cuda_device_count();
// Errors: kUnavailable without a device.
Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id);

}  // namespace gs
