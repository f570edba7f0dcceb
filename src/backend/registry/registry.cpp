// Backend registry: maps a BackendKind to the implementation compiled into this build.
#include "backend/registry/registry.h"

#include "backend/cpu/cpu_backend.h"
#ifdef GS_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace gs {

bool cuda_available() {
#ifdef GS_HAVE_CUDA
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

Result<DeviceChoice> parse_device_choice(std::string_view name) {
  if (name == "auto") return DeviceChoice::kAuto;
  if (name == "cpu") return DeviceChoice::kCpu;
  if (name == "cuda") return DeviceChoice::kCuda;
  return make_status(StatusCode::kInvalidArgument, "--device must be auto, cpu or cuda, not '{}'", name);
}

BackendKind backend_for(DeviceChoice choice, std::string* fallback) {
  if (fallback) fallback->clear();
  switch (choice) {
    case DeviceChoice::kCpu: return BackendKind::kCpu;
    case DeviceChoice::kAuto: return cuda_available() ? BackendKind::kCuda : BackendKind::kCpu;
    case DeviceChoice::kCuda:
      if (cuda_available()) return BackendKind::kCuda;
#ifdef GS_HAVE_CUDA
      if (fallback) *fallback = "no CUDA device is available";
#else
      if (fallback) *fallback = "this build of gemmaserve has no CUDA backend";
#endif
      return BackendKind::kCpu;
  }
  return BackendKind::kCpu;
}

Result<std::unique_ptr<Backend>> create_backend(BackendKind kind, const BackendOptions& options) {
  switch (kind) {
    case BackendKind::kCpu: return create_cpu_backend(options.n_threads);
    case BackendKind::kCuda:
#ifdef GS_HAVE_CUDA
      return create_cuda_backend(options.device_id);
#else
      return make_status(StatusCode::kUnavailable, "this build of gemmaserve has no CUDA backend");
#endif
  }
  return make_status(StatusCode::kInvalidArgument, "unknown backend kind");
}

}  // namespace gs
