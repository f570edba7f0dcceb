// Creates a backend by kind; the only code that knows every backend implementation.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace gs {

struct BackendOptions {
  int n_threads = 0;   // cpu: worker threads (0 = all cores)
  int device_id = 0;   // cuda: device ordinal
};

// True when this build has the CUDA backend and a CUDA device is present.
bool cuda_available();
// Why cuda_available() is false ("no CUDA device is available" or "this build of gemmaserve
// has no CUDA backend"); "" when it is true.
std::string cuda_unavailable_reason();
// Errors: kUnavailable for CUDA without a device or in a CPU-only build.
Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options);

}  // namespace gs
