// Backend helpers shared by every implementation.
#include "backend/backend.h"

#include <algorithm>
#include <cmath>

namespace gs {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "unknown";
}

Result<DeviceBuffer> DeviceBuffer::make(Backend& backend, size_t bytes) {
  DeviceBuffer b;
  GS_ASSIGN_OR_RETURN(b.p_, backend.alloc(bytes == 0 ? 1 : bytes));
  b.backend_ = &backend;
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    backend_ = o.backend_;
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.backend_ = nullptr;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (backend_ && p_) backend_->free(p_);
  backend_ = nullptr;
  p_ = nullptr;
  bytes_ = 0;
}

void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float theta, float beta_fast, float beta_slow,
                         float* lo, float* hi) {
  auto corr_dim = [&](float n_rot) {
    return n_dims * std::log(n_ctx_orig / (n_rot * 2.0f * static_cast<float>(M_PI))) / (2.0f * std::log(theta));
  };
  *lo = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  *hi = std::min(static_cast<float>(n_dims - 1), std::ceil(corr_dim(beta_slow)));
}

}  // namespace gs
