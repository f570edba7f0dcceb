// Creates a backend by kind; the only code that knows every backend implementation.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.h"

namespace gs {

struct BackendOptions {
  int n_threads = 0;   // cpu: worker threads (0 = all cores)
  int device_id = 0;   // cuda: device ordinal
};

// The device a command asks for (--device): the GPU when there is one, the CPU, or CUDA.
enum class DeviceChoice { kAuto, kCpu, kCuda };

// True when this build has the CUDA backend and a CUDA device is present.
bool cuda_available();
// "auto", "cpu" or "cuda". Errors: kInvalidArgument for anything else.
Result<DeviceChoice> parse_device_choice(std::string_view name);
// The backend for `choice`: kAuto is CUDA when cuda_available(), else the CPU. kCuda where
// this build or machine has no CUDA device is the CPU as well, and then *fallback (when given)
// says why ("no CUDA device is available" or "this build of gemmaserve has no CUDA backend")
// for the caller to tell the user; it is left empty otherwise.
BackendKind backend_for(DeviceChoice choice, std::string* fallback = nullptr);
// Errors: kUnavailable for CUDA without a device or in a CPU-only build.
Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options);

}  // namespace gs
