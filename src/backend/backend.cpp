// Backend helpers shared by every implementation.
#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/fp16.h"

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

size_t kv_head_bytes(GgmlType type, int64_t head_dim) {
  if (head_dim <= 0) return 0;
  const auto n = static_cast<size_t>(head_dim);
  switch (type) {
    case GgmlType::F32: return 4 * n;
    case GgmlType::F16: return 2 * n;
    case GgmlType::Q8_0: return n % 32 == 0 ? n + 2 * (n / 32) : 0;
    default: return 0;
  }
}

void kv_quantize_q8_0(const float* x, int64_t n, void* dst) {
  auto* qs = static_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<uint16_t*>(qs + n);  // n % 32 == 0: 2-byte aligned
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    for (int i = 0; i < 32; ++i) qs[32 * b + i] = static_cast<int8_t>(std::round(xb[i] * id));
    d[b] = f32_to_fp16(db);
  }
}

void kv_dequantize_q8_0(const void* src, int64_t n, float* y) {
  const auto* qs = static_cast<const int8_t*>(src);
  const auto* d = reinterpret_cast<const uint16_t*>(qs + n);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float db = fp16_to_f32(d[b]);
    for (int i = 0; i < 32; ++i) y[32 * b + i] = static_cast<float>(qs[32 * b + i]) * db;
  }
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
