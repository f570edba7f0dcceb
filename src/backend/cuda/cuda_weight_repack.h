// The host side of the device weight layout (cuda_weight_layout.h): one GGUF row into the
// layout's main and meta regions. Plain C++ (no CUDA), shared by the CUDA backend's upload
// and tools/cuda_emu.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_weight_layout.h"
#include "core/ggml_type.h"

namespace gs::cuda {

// Row `row` of the GGUF weight `src` (type `type`, L.n_in elements) into a device image of the
// layout: `main` is the image of the main region from a row-group boundary on (row counted
// from there), `meta` that of the meta region from the same row (L.meta_per_row f16 block
// scales a row). Row-major layouts: the row's main_row_bytes at main + row main_row_bytes,
// padding zeroed. Tile-major ones (L.tile_major): the row's bytes are spread over its row
// group (cuda_weight_layout.h); the caller zeroes the image first (the padding tiles and
// rows are never written). `tmp` is scratch for types that are converted to f16 (any type
// the CPU code can dequantize).
void repack_row(GgmlType type, const WeightLayout& L, const uint8_t* src, int64_t row, uint8_t* main, uint16_t* meta,
                std::vector<float>& tmp);

}  // namespace gs::cuda
