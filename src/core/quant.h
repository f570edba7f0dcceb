// The ggml block formats: dequantize rows of any supported type to f32, quantize f32 rows.
// Layouts and formulas: shared/spec/gemma4.md §5.2 (from ggml-common.h / ggml-quants.c);
// block structs in core/quant_blocks.h.
#pragma once

#include <cstdint>
#include <optional>

#include "core/ggml_type.h"
#include "core/status.h"

namespace gs {

// The ggml types gemmaserve both quantizes and dequantizes, so the types a weight it writes
// may have: every dequantizable type except Q8_K (ggml's activation format, no quantizer).
// Values equal the GgmlType ids. A closed set: switches over it list only these types.
enum class WeightFormat : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11,
  Q4_K = 12, Q5_K = 13, Q6_K = 14, IQ4_NL = 20, IQ4_XS = 23, BF16 = 30, MXFP4 = 39,
};

// `type` as a WeightFormat; nullopt for every type outside that set.
std::optional<WeightFormat> weight_format(GgmlType type);

// Dequantizes one row: `n_elems` elements (a multiple of the type's block size) of type
// `type` at `src` into `dst[n_elems]`. Plain function pointer for hot loops. Results equal
// ggml's dequantization bit for bit (tested on shared/golden/quant-vectors.gguf).
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n_elems);
// Quantizes `n_elems` floats into `dst` (row_size(type, n_elems) bytes). Inputs must be
// finite; non-finite inputs give an unspecified (but memory-safe) encoding.
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n_elems);

// nullptr when gemmaserve cannot dequantize the type. Supported: F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4.
DequantizeRowFn dequantize_row_fn(GgmlType type);
// The best-quality quantizer of `type` (a least-squares search per block; for K-quants also
// over the quantized sub-block scales): slow, for writing weights. nullptr when unsupported.
// Supported: every dequantizable type except Q8_K.
QuantizeRowFn quantize_row_fn(GgmlType type);
// A single-pass quantizer (scale from the block's largest magnitude, round to nearest) for
// data written every step, such as a quantized KV cache. F32, F16, BF16, Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0 and IQ4_NL; nullptr otherwise.
QuantizeRowFn quantize_row_fast_fn(GgmlType type);

// Checked wrappers: error if the type is unsupported or n_elems is not a block multiple.
Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n_elems);
Status quantize_row(GgmlType type, const float* src, void* dst, int64_t n_elems);

}  // namespace gs
