// The host side of the device weight layout (cuda_weight_layout.h): one GGUF row into the
// layout's main and meta regions. Plain C++ (no CUDA), shared by the CUDA backend's upload
// and tools/cuda_emu.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_weight_layout.h"
#include "core/ggml_type.h"

namespace gs::cuda {

// One row of the GGUF weight `src` (type `type`, L.n_in elements) into the device layout:
// main (L.main_row_bytes) and, for formats with a meta region, meta (L.meta_per_row f16
// block scales). Padding elements and entries are zero. `tmp` is scratch for types that are
// converted to f16 (any type the CPU code can dequantize).
void repack_row(GgmlType type, const WeightLayout& L, const uint8_t* src, uint8_t* main, uint16_t* meta,
                std::vector<float>& tmp);

// Whether the n_out rows of the GGUF weight `src` (row_bytes each) have block scales small
// enough for the bulk-copy matvec's exact form s (M + q) - M s (M = 1024 or 64; -1024 s, the
// Q4_K 32 * min and the Q6_K 512 s must stay finite in f16): Q4_K |d| < 1 and |dmin| < 32
// (sub-block scales and mins <= 63), Q6_K |d| < 0.25 (scales -128..127); false for a NaN or
// an infinity and for the other types. Real models' scales are orders of magnitude smaller.
bool scales_fit_exact_fma(GgmlType type, const uint8_t* src, size_t row_bytes, int64_t n_out);

}  // namespace gs::cuda
