// ggml tensor types: ids as stored in GGUF, block geometry, and row-size arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"

namespace gs {

// Type ids as written in GGUF tensor infos (ggml.h's enum ggml_type). Ids 4 and 5
// (old Q4_2/Q4_3) and 31..33, 36..38 are retired and never valid.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
  IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40,
};

struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;   // ggml's name: "f32", "q4_K", ...
  int64_t block_elems;     // elements per block (1 for plain types)
  size_t block_bytes;      // bytes per block
  bool can_dequantize;     // gemmaserve can turn it into f32 (core/quant.h)
};

// Traits of a raw type id read from a file; nullopt for unknown or retired ids.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_type);
const GgmlTypeTraits& ggml_type_traits(GgmlType type);
std::string_view ggml_type_name(GgmlType type);
// Parses a ggml type name ("q8_0", "Q4_K", "f16"; case-insensitive).
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

// Bytes of one row of `n_elems` elements. Errors: n_elems not a multiple of the block size,
// negative, or a byte count that overflows.
Result<size_t> ggml_row_size(GgmlType type, int64_t n_elems);

}  // namespace gs
