// Block-format dequantizers and quantizers (spec §5.2), one pair of functions per type.
#include "core/quant.h"

#include <cmath>
#include <cstring>

#include "core/fp16.h"

namespace gs {
namespace {

void dequant_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

void dequant_f16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
}

void dequant_bf16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 32; ++blk, b += 34) {
    uint16_t dh;
    std::memcpy(&dh, b, 2);
    const float d = fp16_to_f32(dh);
    const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) dst[blk * 32 + j] = static_cast<float>(qs[j]) * d;
  }
}

void quant_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

void quant_f16(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
}

void quant_bf16(const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}

}  // namespace

DequantizeRowFn dequantize_row_fn(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return dequant_f32;
    case GgmlType::F16: return dequant_f16;
    case GgmlType::BF16: return dequant_bf16;
    case GgmlType::Q8_0: return dequant_q8_0;
    default: return nullptr;
  }
}

QuantizeRowFn quantize_row_fn(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return quant_f32;
    case GgmlType::F16: return quant_f16;
    case GgmlType::BF16: return quant_bf16;
    default: return nullptr;
  }
}

Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n_elems) {
  const DequantizeRowFn fn = dequantize_row_fn(type);
  if (!fn) return make_status(StatusCode::kUnimplemented, "cannot dequantize {}", ggml_type_name(type));
  GS_RETURN_IF_ERROR(ggml_row_size(type, n_elems).status());
  fn(src, dst, n_elems);
  return {};
}

Status quantize_row(GgmlType type, const float* src, void* dst, int64_t n_elems) {
  const QuantizeRowFn fn = quantize_row_fn(type);
  if (!fn) return make_status(StatusCode::kUnimplemented, "cannot quantize to {}", ggml_type_name(type));
  GS_RETURN_IF_ERROR(ggml_row_size(type, n_elems).status());
  fn(src, dst, n_elems);
  return {};
}

}  // namespace gs
