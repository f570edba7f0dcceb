// The ggml block formats: dequantize rows of any supported type to f32, quantize f32 rows.
// Layouts and formulas: shared/spec/gemma4.md §5.2 (from ggml-common.h / ggml-quants.c).
#pragma once

#include <cstdint>

#include "core/ggml_type.h"
#include "core/status.h"

namespace gs {

// Dequantizes one row: `n_elems` elements (a multiple of the type's block size) of type
// `type` at `src` into `dst[n_elems]`. Plain function pointer for hot loops.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n_elems);
// Quantizes `n_elems` floats into `dst` (row_size(type, n_elems) bytes).
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n_elems);

// nullptr when gemmaserve cannot dequantize/quantize the type.
DequantizeRowFn dequantize_row_fn(GgmlType type);
QuantizeRowFn quantize_row_fn(GgmlType type);

// Checked wrappers: error if the type is unsupported or n_elems is not a block multiple.
Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n_elems);
Status quantize_row(GgmlType type, const float* src, void* dst, int64_t n_elems);

}  // namespace gs
