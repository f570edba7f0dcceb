// The table of ggml types (block sizes from ggml-common.h's block structs, spec §5).
#include "core/ggml_type.h"

#include <array>
#include <cctype>
#include <limits>

#include "core/check.h"

namespace gs {
namespace {

constexpr std::array kTraits = {
    GgmlTypeTraits{GgmlType::F32, "f32", 1, 4, true},
    GgmlTypeTraits{GgmlType::F16, "f16", 1, 2, true},
    GgmlTypeTraits{GgmlType::Q4_0, "q4_0", 32, 18, true},
    GgmlTypeTraits{GgmlType::Q4_1, "q4_1", 32, 20, true},
    GgmlTypeTraits{GgmlType::Q5_0, "q5_0", 32, 22, true},
    GgmlTypeTraits{GgmlType::Q5_1, "q5_1", 32, 24, true},
    GgmlTypeTraits{GgmlType::Q8_0, "q8_0", 32, 34, true},
    GgmlTypeTraits{GgmlType::Q8_1, "q8_1", 32, 36, false},
    GgmlTypeTraits{GgmlType::Q2_K, "q2_K", 256, 84, true},
    GgmlTypeTraits{GgmlType::Q3_K, "q3_K", 256, 110, true},
    GgmlTypeTraits{GgmlType::Q4_K, "q4_K", 256, 144, true},
    GgmlTypeTraits{GgmlType::Q5_K, "q5_K", 256, 176, true},
    GgmlTypeTraits{GgmlType::Q6_K, "q6_K", 256, 210, true},
    GgmlTypeTraits{GgmlType::Q8_K, "q8_K", 256, 292, true},
    GgmlTypeTraits{GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, false},
    GgmlTypeTraits{GgmlType::IQ2_XS, "iq2_xs", 256, 74, false},
    GgmlTypeTraits{GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, false},
    GgmlTypeTraits{GgmlType::IQ1_S, "iq1_s", 256, 50, false},
    GgmlTypeTraits{GgmlType::IQ4_NL, "iq4_nl", 32, 18, true},
    GgmlTypeTraits{GgmlType::IQ3_S, "iq3_s", 256, 110, false},
    GgmlTypeTraits{GgmlType::IQ2_S, "iq2_s", 256, 82, false},
    GgmlTypeTraits{GgmlType::IQ4_XS, "iq4_xs", 256, 136, true},
    GgmlTypeTraits{GgmlType::I8, "i8", 1, 1, false},
    GgmlTypeTraits{GgmlType::I16, "i16", 1, 2, false},
    GgmlTypeTraits{GgmlType::I32, "i32", 1, 4, false},
    GgmlTypeTraits{GgmlType::I64, "i64", 1, 8, false},
    GgmlTypeTraits{GgmlType::F64, "f64", 1, 8, false},
    GgmlTypeTraits{GgmlType::IQ1_M, "iq1_m", 256, 56, false},
    GgmlTypeTraits{GgmlType::BF16, "bf16", 1, 2, true},
    GgmlTypeTraits{GgmlType::TQ1_0, "tq1_0", 256, 54, false},
    GgmlTypeTraits{GgmlType::TQ2_0, "tq2_0", 256, 66, false},
    GgmlTypeTraits{GgmlType::MXFP4, "mxfp4", 32, 17, true},
    GgmlTypeTraits{GgmlType::NVFP4, "nvfp4", 64, 36, false},
};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_type) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw_type) return t;
  }
  return std::nullopt;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  GS_CHECK_MSG(false, "GgmlType value outside the table");
  return kTraits[0];
}

std::string_view ggml_type_name(GgmlType type) { return ggml_type_traits(type).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(t.name[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return t.type;
  }
  return std::nullopt;
}

Result<size_t> ggml_row_size(GgmlType type, int64_t n_elems) {
  const auto& t = ggml_type_traits(type);
  if (n_elems < 0) return make_status(StatusCode::kInvalidArgument, "negative element count {}", n_elems);
  if (n_elems % t.block_elems != 0) {
    return make_status(StatusCode::kInvalidArgument,
                       "row of {} elements is not a multiple of the {} block size {}", n_elems,
                       t.name, t.block_elems);
  }
  const uint64_t n_blocks = static_cast<uint64_t>(n_elems / t.block_elems);
  if (n_blocks > std::numeric_limits<size_t>::max() / t.block_bytes) {
    return make_status(StatusCode::kOutOfRange, "row of {} {} elements overflows a byte count",
                       n_elems, t.name);
  }
  return static_cast<size_t>(n_blocks * t.block_bytes);
}

}  // namespace gs
