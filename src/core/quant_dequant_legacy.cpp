// Dequantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (spec §5.2).
// The float operations follow ggml's order (q * d, then + m) so results match bit for bit.
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"

namespace gs::quant_detail {

using namespace qblock;

// Loops are split so that each inner loop has fixed shifts and one scale: they vectorise.
void dequant_q4_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    for (int j = 0; j < kQK / 2; ++j) dst[j] = static_cast<float>((b->qs[j] & 15) - 8) * d;
    for (int j = 0; j < kQK / 2; ++j) dst[j + kQK / 2] = static_cast<float>((b->qs[j] >> 4) - 8) * d;
  }
}

void dequant_q4_1(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    const float m = fp16_to_f32(b->m);
    for (int j = 0; j < kQK / 2; ++j) dst[j] = static_cast<float>(b->qs[j] & 15) * d + m;
    for (int j = 0; j < kQK / 2; ++j) dst[j + kQK / 2] = static_cast<float>(b->qs[j] >> 4) * d + m;
  }
}

namespace {

// The 32 fifth bits of a Q5 block as values 0 or 16 (bit j of qh -> element j). Testing
// each bit against a constant mask keeps the loop free of variable shifts: it vectorises.
void fifth_bits(const uint8_t* qh_bytes, int32_t* out) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < kQK; ++j) out[j] = (qh & (1u << j)) ? 16 : 0;
}

// The 32 unsigned 5-bit values 0..31 of a Q5_0/Q5_1 block: low nibbles of qs are elements
// 0..15, high nibbles 16..31, each with its fifth bit from qh.
void q5_values(const uint8_t* qs, const uint8_t* qh, int32_t* q) {
  int32_t hb[kQK];
  fifth_bits(qh, hb);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 15) | hb[j];
    q[j + kQK / 2] = (qs[j] >> 4) | hb[j + kQK / 2];
  }
}

}  // namespace

void dequant_q5_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    int32_t q[kQK];
    q5_values(b->qs, b->qh, q);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequant_q5_1(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    const float m = fp16_to_f32(b->m);
    int32_t q[kQK];
    q5_values(b->qs, b->qh, q);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(q[j]) * d + m;
  }
}

void dequant_q8_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b->qs[j]) * d;
  }
}

}  // namespace gs::quant_detail
