// Per-type row dequantizers and quantizers behind core/quant.h's dispatch (private to core).
#pragma once

#include <cstdint>

namespace gs::quant_detail {

// Dequantizers: n elements (a multiple of the block size) from src into dst.
void dequant_q4_0(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q4_1(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q5_0(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q5_1(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q8_0(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q2_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q3_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q4_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q5_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q6_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_q8_k(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_iq4_nl(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_iq4_xs(const void* __restrict src, float* __restrict dst, int64_t n);
void dequant_mxfp4(const void* __restrict src, float* __restrict dst, int64_t n);
// 2^(e - 128): MXFP4's E8M0 scale halved (the FP4 table is stored doubled).
float mxfp4_half_scale(uint8_t e);

// Quantizers that search for the encoding of least squared error (slow, best quality).
void quant_q4_0(const float* src, void* dst, int64_t n);
void quant_q4_1(const float* src, void* dst, int64_t n);
void quant_q5_0(const float* src, void* dst, int64_t n);
void quant_q5_1(const float* src, void* dst, int64_t n);
void quant_q8_0(const float* src, void* dst, int64_t n);
void quant_q2_k(const float* src, void* dst, int64_t n);
void quant_q3_k(const float* src, void* dst, int64_t n);
void quant_q4_k(const float* src, void* dst, int64_t n);
void quant_q5_k(const float* src, void* dst, int64_t n);
void quant_q6_k(const float* src, void* dst, int64_t n);
void quant_iq4_nl(const float* src, void* dst, int64_t n);
void quant_iq4_xs(const float* src, void* dst, int64_t n);
void quant_mxfp4(const float* src, void* dst, int64_t n);

// Single-pass quantizers (scale from the block's extreme value, round to nearest): fast
// enough for a KV cache written every step.
void quant_fast_q4_0(const float* src, void* dst, int64_t n);
void quant_fast_q4_1(const float* src, void* dst, int64_t n);
void quant_fast_q5_0(const float* src, void* dst, int64_t n);
void quant_fast_q5_1(const float* src, void* dst, int64_t n);
void quant_fast_q8_0(const float* src, void* dst, int64_t n);
void quant_fast_iq4_nl(const float* src, void* dst, int64_t n);

}  // namespace gs::quant_detail
