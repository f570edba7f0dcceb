// Block formats against ggml's reference vectors (shared/golden/quant-vectors.gguf):
// dequantization bit for bit, and quantizers whose error is no worse than ggml's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "core/quant.h"
#include "gguf/gguf_reader.h"

namespace gs {
namespace {

std::shared_ptr<gguf::GgufFile> open_vectors() {
  auto f = gguf::GgufFile::open(test::shared_path("golden/quant-vectors.gguf"));
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return f.ok() ? *f : nullptr;
}

std::vector<float> f32_data(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements));
  std::memcpy(v.data(), t.data, v.size() * 4);
  return v;
}

double rel_rmse(const float* ref, const float* got, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (static_cast<double>(ref[i]) - got[i]) * (static_cast<double>(ref[i]) - got[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(QuantGolden, ListsEveryType) {
  auto f = open_vectors();
  ASSERT_TRUE(f);
  auto types = f->get_string_array("quant.types");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(types->size(), 15u);
  for (auto name : *types) {
    auto t = ggml_type_from_name(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_NE(dequantize_row_fn(*t), nullptr) << name;
    EXPECT_TRUE(ggml_type_traits(*t).can_dequantize) << name;
  }
}

TEST(QuantGolden, DequantizeBitForBit) {
  auto f = open_vectors();
  ASSERT_TRUE(f);
  auto types = f->get_string_array("quant.types");
  ASSERT_TRUE(types.ok());
  for (auto name : *types) {
    SCOPED_TRACE(std::string(name));
    const auto* q = f->find_tensor("q." + std::string(name));
    const auto* deq = f->find_tensor("deq." + std::string(name));
    ASSERT_NE(q, nullptr);
    ASSERT_NE(deq, nullptr);
    ASSERT_EQ(q->n_elements, deq->n_elements);
    const auto fn = dequantize_row_fn(q->type);
    ASSERT_NE(fn, nullptr);
    const int64_t ne0 = q->ne[0];
    const size_t row_bytes = *ggml_row_size(q->type, ne0);
    std::vector<float> got(static_cast<size_t>(ne0));
    int64_t mismatches = 0;
    for (int64_t r = 0; r < q->n_rows(); ++r) {
      fn(q->data + r * row_bytes, got.data(), ne0);
      const auto* want = reinterpret_cast<const uint8_t*>(deq->data) + r * ne0 * 4;
      for (int64_t i = 0; i < ne0; ++i) {
        if (std::memcmp(&got[i], want + i * 4, 4) != 0) {
          if (mismatches < 5) {
            float w;
            std::memcpy(&w, want + i * 4, 4);
            ADD_FAILURE() << "row " << r << " element " << i << ": got " << got[i] << " want " << w;
          }
          ++mismatches;
        }
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// Our quantizer's relative RMSE on src.T must not exceed that of ggml's (deq.T), per row.
TEST(QuantGolden, QuantizersNoWorseThanGgml) {
  auto f = open_vectors();
  ASSERT_TRUE(f);
  auto types = f->get_string_array("quant.types");
  ASSERT_TRUE(types.ok());
  int checked = 0;
  for (auto name : *types) {
    SCOPED_TRACE(std::string(name));
    const auto* src = f->find_tensor("src." + std::string(name));
    const auto* q = f->find_tensor("q." + std::string(name));
    const auto* deq = f->find_tensor("deq." + std::string(name));
    ASSERT_TRUE(src && q && deq);
    const auto quant = quantize_row_fn(q->type);
    ASSERT_NE(quant, nullptr);
    const auto dequant = dequantize_row_fn(q->type);
    const int64_t ne0 = src->ne[0];
    const std::vector<float> x = f32_data(*src);
    const std::vector<float> ref = f32_data(*deq);
    std::vector<uint8_t> blocks(*ggml_row_size(q->type, ne0));
    std::vector<float> y(static_cast<size_t>(ne0));
    for (int64_t r = 0; r < src->n_rows(); ++r) {
      const float* xr = x.data() + r * ne0;
      quant(xr, blocks.data(), ne0);
      dequant(blocks.data(), y.data(), ne0);
      const double ours = rel_rmse(xr, y.data(), ne0);
      const double ggml = rel_rmse(xr, ref.data() + r * ne0, ne0);
      std::printf("  %-7s row %lld: ours %.6f ggml %.6f (%.1f%%)\n", std::string(name).c_str(),
                  static_cast<long long>(r), ours, ggml, 100.0 * (ours - ggml) / ggml);
      EXPECT_LE(ours, ggml) << "row " << r;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

}  // namespace
}  // namespace gs
