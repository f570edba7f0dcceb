// The ggml type table: ids, names, block geometry and row-size arithmetic.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/ggml_type.h"

namespace gs {
namespace {

TEST(GgmlType, KnownIdsAndRetiredIds) {
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 41u, 1000u, 0xffffffffu}) {
    EXPECT_FALSE(ggml_type_traits(retired).has_value()) << retired;
  }
  EXPECT_EQ(ggml_type_traits(12u)->type, GgmlType::Q4_K);
  EXPECT_EQ(ggml_type_traits(39u)->type, GgmlType::MXFP4);
}

TEST(GgmlType, BlockGeometryMatchesSpec) {
  struct G { GgmlType t; int64_t elems; size_t bytes; };
  const G g[] = {{GgmlType::F32, 1, 4},     {GgmlType::F16, 1, 2},      {GgmlType::BF16, 1, 2},
                 {GgmlType::Q4_0, 32, 18},  {GgmlType::Q4_1, 32, 20},   {GgmlType::Q5_0, 32, 22},
                 {GgmlType::Q5_1, 32, 24},  {GgmlType::Q8_0, 32, 34},   {GgmlType::Q2_K, 256, 84},
                 {GgmlType::Q3_K, 256, 110}, {GgmlType::Q4_K, 256, 144}, {GgmlType::Q5_K, 256, 176},
                 {GgmlType::Q6_K, 256, 210}, {GgmlType::Q8_K, 256, 292}, {GgmlType::IQ4_NL, 32, 18},
                 {GgmlType::IQ4_XS, 256, 136}, {GgmlType::MXFP4, 32, 17}, {GgmlType::NVFP4, 64, 36}};
  for (const auto& x : g) {
    const auto& tr = ggml_type_traits(x.t);
    EXPECT_EQ(tr.block_elems, x.elems) << tr.name;
    EXPECT_EQ(tr.block_bytes, x.bytes) << tr.name;
  }
}

TEST(GgmlType, NamesRoundTripCaseInsensitive) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = ggml_type_traits(id);
    if (!tr) continue;
    EXPECT_EQ(ggml_type_from_name(tr->name), tr->type);
    std::string upper(tr->name);
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(ggml_type_from_name(upper), tr->type);
  }
  EXPECT_FALSE(ggml_type_from_name("q4_k_m").has_value());
  EXPECT_FALSE(ggml_type_from_name("").has_value());
}

TEST(GgmlType, RowSize) {
  EXPECT_EQ(*ggml_row_size(GgmlType::Q4_K, 5376), 5376u / 256 * 144);
  EXPECT_EQ(*ggml_row_size(GgmlType::Q8_0, 64), 68u);
  EXPECT_EQ(*ggml_row_size(GgmlType::F32, 0), 0u);
  EXPECT_FALSE(ggml_row_size(GgmlType::Q4_K, 100).ok());
  EXPECT_FALSE(ggml_row_size(GgmlType::Q8_0, -32).ok());
  const int64_t big = std::numeric_limits<int64_t>::max() / 32 * 32;
  EXPECT_FALSE(ggml_row_size(GgmlType::F32, big).ok());
  EXPECT_TRUE(ggml_row_size(GgmlType::Q8_0, big).ok());  // 34/32 bytes per element still fits
}

}  // namespace
}  // namespace gs
