// One GGUF row into the CUDA backend's device weight layout (cuda_weight_repack.h).
#include "backend/cuda/cuda_weight_repack.h"

#include <cstring>

#include "core/fp16.h"
#include "core/quant.h"

namespace gs::cuda {

void repack_row(GgmlType type, const WeightLayout& L, const uint8_t* src, int64_t row, uint8_t* main, uint16_t* meta,
                std::vector<float>& tmp) {
  if (L.tile_major) {  // kQ4_K: header and the two 64-byte qs runs of each tile (cuda_weight_layout.h)
    uint8_t* group = main + (row / kRowGroupRows) * kRowGroupRows * L.main_row_bytes;
    for (int64_t b = 0; b < L.n_in / 256; ++b) {
      const uint8_t* blk = src + b * 144;
      std::memcpy(group + q4k_tm_header(row, b), blk, 16);
      std::memcpy(group + q4k_tm_qs(row, b, 0), blk + 16, 64);
      std::memcpy(group + q4k_tm_qs(row, b, 64), blk + 80, 64);
    }
    return;
  }
  main += row * L.main_row_bytes;
  if (meta) meta += row * L.meta_per_row;
  std::memset(main, 0, static_cast<size_t>(L.main_row_bytes));
  if (L.meta_per_row) std::memset(meta, 0, static_cast<size_t>(L.meta_per_row) * 2);
  const int64_t n = L.n_in;
  switch (L.format) {
    case WFormat::kF32:
      std::memcpy(main, src, static_cast<size_t>(n) * 4);
      return;
    case WFormat::kBF16:
      std::memcpy(main, src, static_cast<size_t>(n) * 2);
      return;
    case WFormat::kF16:
      if (type == GgmlType::F16) {
        std::memcpy(main, src, static_cast<size_t>(n) * 2);
      } else {  // any other type the CPU code can dequantize: through f32 to f16
        tmp.resize(static_cast<size_t>(n));
        dequantize_row_fn(type)(src, tmp.data(), n);
        auto* h = reinterpret_cast<uint16_t*>(main);
        for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(tmp[static_cast<size_t>(i)]);
      }
      return;
    case WFormat::kQ8_0:
      for (int64_t b = 0; b < n / 32; ++b) {
        std::memcpy(&meta[b], src + b * 34, 2);
        std::memcpy(main + b * 32, src + b * 34 + 2, 32);
      }
      return;
    case WFormat::kQ4_0:
      for (int64_t b = 0; b < n / 32; ++b) {
        std::memcpy(&meta[b], src + b * 18, 2);
        std::memcpy(main + b * 16, src + b * 18 + 2, 16);
      }
      return;
    case WFormat::kQ4_K:
      std::memcpy(main, src, static_cast<size_t>(n / 256) * 144);
      return;
    case WFormat::kQ5_K:
      std::memcpy(main, src, static_cast<size_t>(n / 256) * 176);
      return;
    case WFormat::kQ6_K:
      for (int64_t b = 0; b < n / 256; ++b) {
        std::memcpy(main + b * 208, src + b * 210, 208);  // ql, qh, scales keep their offsets
        std::memcpy(&meta[b], src + b * 210 + 208, 2);
      }
      return;
  }
}

}  // namespace gs::cuda
