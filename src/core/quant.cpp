// Dispatch from ggml type to row dequantizer / quantizer; the plain float formats.
#include "core/quant.h"

#include <cstring>

#include "core/fp16.h"
#include "core/quant_impl.h"

namespace gs {
namespace {

using namespace quant_detail;

void dequant_f32(const void* __restrict src, float* __restrict dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

// binary16 -> f32 without branches (so the row loop vectorises); equal to fp16_to_f32 for
// all 65536 inputs (tested). Normal numbers shift into place with the exponent rebiased by
// 127 - 15; inf/NaN get the rebias twice (31 + 2*112 = 255); zero and subnormals are the
// exact product mantissa * 2^-24.
inline float half_to_f32_branchless(uint16_t h) {
  // Signed 32-bit masks throughout: SSE2 has signed compares and conversions only.
  const int32_t mag = h & 0x7fff;
  const int32_t is_sub = -static_cast<int32_t>(mag < 0x0400);
  const int32_t is_special = -static_cast<int32_t>(mag >= 0x7c00);
  const int32_t normal = (mag << 13) + 0x38000000 + (is_special & 0x38000000);
  const int32_t sub = static_cast<int32_t>(f32_to_bits(static_cast<float>(mag) * 5.9604644775390625e-8f));
  const int32_t sign = static_cast<int32_t>(static_cast<uint32_t>(h & 0x8000u) << 16);
  return f32_from_bits(static_cast<uint32_t>((sub & is_sub) | (normal & ~is_sub) | sign));
}

void dequant_f16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = half_to_f32_branchless(s[i]);
}

void dequant_bf16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
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

// The row functions of one weight format; quant_fast is null where there is no single-pass
// quantizer.
struct RowFns {
  DequantizeRowFn dequant;
  QuantizeRowFn quant;
  QuantizeRowFn quant_fast;
};

RowFns row_fns(WeightFormat format) {
  switch (format) {
    case WeightFormat::F32: return {dequant_f32, quant_f32, quant_f32};
    case WeightFormat::F16: return {dequant_f16, quant_f16, quant_f16};
    case WeightFormat::BF16: return {dequant_bf16, quant_bf16, quant_bf16};
    case WeightFormat::Q4_0: return {dequant_q4_0, quant_q4_0, quant_fast_q4_0};
    case WeightFormat::Q4_1: return {dequant_q4_1, quant_q4_1, quant_fast_q4_1};
    case WeightFormat::Q5_0: return {dequant_q5_0, quant_q5_0, quant_fast_q5_0};
    case WeightFormat::Q5_1: return {dequant_q5_1, quant_q5_1, quant_fast_q5_1};
    case WeightFormat::Q8_0: return {dequant_q8_0, quant_q8_0, quant_fast_q8_0};
    case WeightFormat::Q2_K: return {dequant_q2_k, quant_q2_k, nullptr};
    case WeightFormat::Q3_K: return {dequant_q3_k, quant_q3_k, nullptr};
    case WeightFormat::Q4_K: return {dequant_q4_k, quant_q4_k, nullptr};
    case WeightFormat::Q5_K: return {dequant_q5_k, quant_q5_k, nullptr};
    case WeightFormat::Q6_K: return {dequant_q6_k, quant_q6_k, nullptr};
    case WeightFormat::IQ4_NL: return {dequant_iq4_nl, quant_iq4_nl, quant_fast_iq4_nl};
    case WeightFormat::IQ4_XS: return {dequant_iq4_xs, quant_iq4_xs, nullptr};
    case WeightFormat::MXFP4: return {dequant_mxfp4, quant_mxfp4, nullptr};
  }
  return {nullptr, nullptr, nullptr};
}

}  // namespace

std::optional<WeightFormat> weight_format(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return WeightFormat::F32;
    case GgmlType::F16: return WeightFormat::F16;
    case GgmlType::BF16: return WeightFormat::BF16;
    case GgmlType::Q4_0: return WeightFormat::Q4_0;
    case GgmlType::Q4_1: return WeightFormat::Q4_1;
    case GgmlType::Q5_0: return WeightFormat::Q5_0;
    case GgmlType::Q5_1: return WeightFormat::Q5_1;
    case GgmlType::Q8_0: return WeightFormat::Q8_0;
    case GgmlType::Q2_K: return WeightFormat::Q2_K;
    case GgmlType::Q3_K: return WeightFormat::Q3_K;
    case GgmlType::Q4_K: return WeightFormat::Q4_K;
    case GgmlType::Q5_K: return WeightFormat::Q5_K;
    case GgmlType::Q6_K: return WeightFormat::Q6_K;
    case GgmlType::IQ4_NL: return WeightFormat::IQ4_NL;
    case GgmlType::IQ4_XS: return WeightFormat::IQ4_XS;
    case GgmlType::MXFP4: return WeightFormat::MXFP4;
    case GgmlType::Q8_K:
    case GgmlType::Q8_1:
    case GgmlType::IQ2_XXS:
    case GgmlType::IQ2_XS:
    case GgmlType::IQ3_XXS:
    case GgmlType::IQ1_S:
    case GgmlType::IQ3_S:
    case GgmlType::IQ2_S:
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64:
    case GgmlType::IQ1_M:
    case GgmlType::TQ1_0:
    case GgmlType::TQ2_0:
    case GgmlType::NVFP4: return std::nullopt;
  }
  return std::nullopt;
}

DequantizeRowFn dequantize_row_fn(GgmlType type) {
  if (type == GgmlType::Q8_K) return dequant_q8_k;  // the one dequantizable non-weight format
  const std::optional<WeightFormat> f = weight_format(type);
  return f ? row_fns(*f).dequant : nullptr;
}

QuantizeRowFn quantize_row_fn(GgmlType type) {
  const std::optional<WeightFormat> f = weight_format(type);
  return f ? row_fns(*f).quant : nullptr;
}

QuantizeRowFn quantize_row_fast_fn(GgmlType type) {
  const std::optional<WeightFormat> f = weight_format(type);
  return f ? row_fns(*f).quant_fast : nullptr;
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
