// Dequantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (spec §5.2).
// The float operations follow ggml's order (q * d, then + m) so results match bit for bit.
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"

namespace gs::quant_detail {

using namespace qblock;

void dequant_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((b->qs[j] & 15) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((b->qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    const float m = fp16_to_f32(b->m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(b->qs[j] & 15) * d + m;
      dst[j + kQK / 2] = static_cast<float>(b->qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    uint32_t qh;
    std::memcpy(&qh, b->qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b->qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b->qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = static_cast<float>(lo - 16) * d;
      dst[j + kQK / 2] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    const float m = fp16_to_f32(b->m);
    uint32_t qh;
    std::memcpy(&qh, b->qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b->qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b->qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = static_cast<float>(lo) * d + m;
      dst[j + kQK / 2] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b->qs[j]) * d;
  }
}

}  // namespace gs::quant_detail
