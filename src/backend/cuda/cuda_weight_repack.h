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

}  // namespace gs::cuda
