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

std::string cuda_unavailable_reason() {
#ifdef GS_HAVE_CUDA
  return cuda_available() ? "" : "no CUDA device is available";
#else
  return "this build of gemmaserve has no CUDA backend";
#endif
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
