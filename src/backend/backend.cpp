// Backend helpers shared by every implementation.
#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace gs {

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "unknown";
}

Result<void*> Backend::alloc_host(size_t bytes) {
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (!p) return make_status(StatusCode::kResourceExhausted, "cannot allocate {} bytes of host memory", bytes);
  return p;
}

void Backend::free_host(void* p) { std::free(p); }

void Backend::matmul_multi(const Weight* const* w, const Mat* y, int n, Mat x) {
  for (int i = 0; i < n; ++i) matmul(*w[i], x, y[i]);
}

void Backend::add_rms_norm(Mat x, Mat o, const float* o_weight, float s, const float* out_weight, float eps,
                           Mat out) {
  rms_norm(o, o_weight, o.cols, eps, o);
  add(x, o, x);
  if (s != 1.0f) scale(x, s);
  rms_norm(x, out_weight, x.cols, eps, out);
}

void Backend::qkv_norm_rope_store(const QkvNormRopeArgs& a) {
  const int64_t d = a.rope.head_dim;
  rms_norm(a.q, a.q_weight, d, a.eps, a.q);
  rope(a.q, a.pos, a.rope);
  if (a.k.cols == 0) return;
  if (a.v_from_k) copy(a.k, a.v);
  rms_norm(a.k, a.k_weight, d, a.eps, a.k);
  rope(a.k, a.pos, a.rope);
  rms_norm(a.v, nullptr, d, a.eps, a.v);
  kv_store(a.k, a.v, a.kv, a.slots);
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
