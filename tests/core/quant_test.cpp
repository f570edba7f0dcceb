// Quantizers and dequantizers of every supported type on generated data: error bounds,
// edge cases (zeros, constants, extremes, non-finite input), and the dispatch tables.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_blocks.h"

namespace gs {
namespace {

struct TypeBound {
  GgmlType type;
  double max_rel_rmse;  // on unit Gaussian data; well above the measured error of each type
};

// Measured relative RMSE on N(0,1) data is about: q8_0 0.004, q6_K 0.009, q5_K 0.02,
// q5_0/q5_1 0.03, q4_K 0.04, q4_0/iq4 0.07, q3_K 0.10, mxfp4 0.12, q2_K 0.2.
const TypeBound kTypes[] = {
    {GgmlType::F32, 0.0},      {GgmlType::F16, 1e-3},     {GgmlType::BF16, 5e-3},
    {GgmlType::Q4_0, 0.12},    {GgmlType::Q4_1, 0.10},    {GgmlType::Q5_0, 0.06},
    {GgmlType::Q5_1, 0.05},    {GgmlType::Q8_0, 0.008},   {GgmlType::Q2_K, 0.35},
    {GgmlType::Q3_K, 0.18},    {GgmlType::Q4_K, 0.08},    {GgmlType::Q5_K, 0.04},
    {GgmlType::Q6_K, 0.02},    {GgmlType::IQ4_NL, 0.10},  {GgmlType::IQ4_XS, 0.10},
    {GgmlType::MXFP4, 0.20},
};

std::vector<float> gaussian(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

double rel_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    den += static_cast<double>(x[i]) * x[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x, QuantizeRowFn quant = nullptr) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> blocks(*ggml_row_size(type, n));
  if (!quant) quant = quantize_row_fn(type);
  quant(x.data(), blocks.data(), n);
  std::vector<float> y(x.size());
  dequantize_row_fn(type)(blocks.data(), y.data(), n);
  return y;
}

std::string name(GgmlType t) { return std::string(ggml_type_name(t)); }

TEST(Quant, GaussianErrorWithinBound) {
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    const auto x = gaussian(4096, 11);
    const auto y = round_trip(tb.type, x);
    const double err = rel_rmse(x, y);
    EXPECT_LE(err, tb.max_rel_rmse);
    if (tb.type == GgmlType::F32) {
      EXPECT_EQ(err, 0.0);
    }
  }
}

TEST(Quant, ScaleInvariantAcrossMagnitudes) {
  // Relative error must not depend much on the data's scale (fp16 scales cover 1e-4..1e3).
  for (const auto& tb : kTypes) {
    if (tb.type == GgmlType::F32) continue;
    SCOPED_TRACE(name(tb.type));
    for (float scale : {1e-3f, 1e-1f, 10.0f, 1000.0f}) {
      const auto x = gaussian(1024, 5, scale);
      EXPECT_LE(rel_rmse(x, round_trip(tb.type, x)), tb.max_rel_rmse * 1.1) << "scale " << scale;
    }
  }
}

TEST(Quant, ZerosStayZero) {
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    const std::vector<float> x(512, 0.0f);
    for (float v : round_trip(tb.type, x)) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Quant, ConstantRowsAreClose) {
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    for (float c : {0.5f, -3.25f, 1e-4f}) {
      const std::vector<float> x(512, c);
      const auto y = round_trip(tb.type, x);
      // A constant block is one scale times one level, exact up to the rounding of the
      // scale to its stored precision; MXFP4's power-of-two scales leave gaps of up to 1/7
      // between FP4 levels.
      const double tol = tb.type == GgmlType::MXFP4 ? 0.15 : 0.02;
      for (float v : y) EXPECT_NEAR(v, c, std::fabs(c) * tol) << "c " << c;
    }
  }
}

TEST(Quant, SparseOutliersDoNotZeroTheRest) {
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    auto x = gaussian(1024, 3, 0.01f);
    x[17] = 5.0f;
    x[600] = -7.0f;
    const auto y = round_trip(tb.type, x);
    EXPECT_NEAR(y[17], 5.0f, 5.0f * 0.5);
    EXPECT_NEAR(y[600], -7.0f, 7.0f * 0.5);
  }
}

TEST(Quant, ExtremeAndNonFiniteInputsAreMemorySafe) {
  // No finite guarantee is made for such inputs; the encoders must just not crash or read
  // uninitialised data (ASan/UBSan builds catch that), and large finite values stay finite.
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    std::vector<float> big(256, 1e30f);
    big[3] = -1e30f;
    (void)round_trip(tb.type, big);
    std::vector<float> odd = gaussian(256, 9);
    odd[0] = std::numeric_limits<float>::quiet_NaN();
    odd[1] = std::numeric_limits<float>::infinity();
    odd[2] = -std::numeric_limits<float>::infinity();
    odd[3] = std::numeric_limits<float>::denorm_min();
    (void)round_trip(tb.type, odd);
    // All-subnormal rows (MXFP4's exponent search once took log2 of an underflowed 0).
    const std::vector<float> tiny(256, std::numeric_limits<float>::denorm_min() * 3);
    for (float v : round_trip(tb.type, tiny)) EXPECT_TRUE(std::isfinite(v));
    std::vector<float> huge(256, 60000.0f);
    for (float v : round_trip(tb.type, huge)) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(Quant, FastQuantizersMatchTheirFormat) {
  const GgmlType fast[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                           GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::IQ4_NL};
  for (GgmlType t : fast) {
    SCOPED_TRACE(name(t));
    const auto fn = quantize_row_fast_fn(t);
    ASSERT_NE(fn, nullptr);
    const auto x = gaussian(2048, 21);
    const double err_fast = rel_rmse(x, round_trip(t, x, fn));
    const double err_best = rel_rmse(x, round_trip(t, x));
    EXPECT_LE(err_best, err_fast + 1e-12);
    EXPECT_LE(err_fast, err_best * 1.35 + 1e-6);
  }
  EXPECT_EQ(quantize_row_fast_fn(GgmlType::Q4_K), nullptr);
}

// Offsets of the binary16 scale fields in each block (quant_blocks.h), for random blocks.
std::vector<size_t> half_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {};
  }
}

TEST(Quant, RandomBlocksWithFiniteScalesDecodeFinite) {
  // Any bit pattern with finite scales decodes to finite values (the synth writer relies on it).
  std::mt19937 rng(1);
  for (const auto& tb : kTypes) {
    const auto& traits = ggml_type_traits(tb.type);
    if (traits.block_elems == 1) continue;
    SCOPED_TRACE(name(tb.type));
    const int n_blocks = 64;
    std::vector<uint8_t> bytes(traits.block_bytes * n_blocks);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    for (int i = 0; i < n_blocks; ++i) {
      uint8_t* blk = bytes.data() + i * traits.block_bytes;
      for (size_t off : half_fields(tb.type)) {
        const uint16_t h = f32_to_fp16(std::ldexp(1.0f, static_cast<int>(rng() % 20) - 10));
        std::memcpy(blk + off, &h, 2);
      }
      if (tb.type == GgmlType::MXFP4) blk[0] = static_cast<uint8_t>(rng() % 250);
    }
    std::vector<float> y(static_cast<size_t>(traits.block_elems * n_blocks));
    dequantize_row_fn(tb.type)(bytes.data(), y.data(), static_cast<int64_t>(y.size()));
    for (float v : y) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(Quant, CheckedWrappersRejectBadInput) {
  std::vector<float> x(100, 1.0f);
  std::vector<uint8_t> buf(1024);
  EXPECT_FALSE(quantize_row(GgmlType::Q4_K, x.data(), buf.data(), 100).ok());
  EXPECT_FALSE(dequantize_row(GgmlType::Q8_0, buf.data(), x.data(), 33).ok());
  EXPECT_EQ(quantize_row(GgmlType::Q8_K, x.data(), buf.data(), 256).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(dequantize_row(GgmlType::IQ2_XXS, buf.data(), x.data(), 256).code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(quantize_row(GgmlType::Q8_0, x.data(), buf.data(), 96).ok());
  EXPECT_TRUE(dequantize_row(GgmlType::Q8_0, buf.data(), x.data(), 96).ok());
}

TEST(Quant, DispatchAgreesWithTraits) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto traits = ggml_type_traits(id);
    if (!traits) continue;
    SCOPED_TRACE(std::string(traits->name));
    EXPECT_EQ(dequantize_row_fn(traits->type) != nullptr, traits->can_dequantize);
    if (quantize_row_fn(traits->type)) {
      EXPECT_TRUE(traits->can_dequantize);
    }
    // The weight formats are exactly the quantizable types, with the same ids.
    const std::optional<WeightFormat> format = weight_format(traits->type);
    EXPECT_EQ(format.has_value(), quantize_row_fn(traits->type) != nullptr);
    EXPECT_EQ(format.has_value(), traits->can_dequantize && traits->type != GgmlType::Q8_K);
    if (format) {
      EXPECT_EQ(static_cast<uint32_t>(*format), id);
    }
  }
}

TEST(Quant, F16RowDecodeMatchesScalarForEveryPattern) {
  // The row decoder is branch-free (vectorised); it must equal fp16_to_f32 bit for bit.
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> y(65536);
  ASSERT_TRUE(dequantize_row(GgmlType::F16, all.data(), y.data(), 65536).ok());
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = fp16_to_f32(static_cast<uint16_t>(h));
    EXPECT_EQ(f32_to_bits(y[h]), f32_to_bits(want)) << h;
  }
}

TEST(Quant, Q8KDequantizes) {
  qblock::Q8_K b{};
  b.d = 0.5f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
  std::vector<float> y(256);
  ASSERT_TRUE(dequantize_row(GgmlType::Q8_K, &b, y.data(), 256).ok());
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.5f * static_cast<float>(i - 128));
}

TEST(Quant, Mxfp4ScaleEdges) {
  // e = 0 and 1 are the subnormals 2^-128 and 2^-127; e = 128 gives 1; e = 254 gives 2^126.
  qblock::MXFP4 b{};
  b.qs[0] = 0x01;  // element 0 -> level 1, element 16 -> level 0
  std::vector<float> y(32);
  for (int e : {0, 1, 2, 128, 254}) {
    b.e = static_cast<uint8_t>(e);
    ASSERT_TRUE(dequantize_row(GgmlType::MXFP4, &b, y.data(), 32).ok());
    EXPECT_EQ(y[0], std::ldexp(1.0f, e - 128)) << e;
    EXPECT_EQ(y[16], 0.0f);
  }
}

TEST(Quant, KScalePackingRoundTrips) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 100; ++trial) {
    uint8_t sc[8], mn[8], packed[12];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(rng() & 63);
      mn[j] = static_cast<uint8_t>(rng() & 63);
    }
    qblock::k_pack_scale_min(sc, mn, packed);
    for (int j = 0; j < 8; ++j) {
      uint8_t s, m;
      qblock::k_scale_min(j, packed, &s, &m);
      EXPECT_EQ(s, sc[j]);
      EXPECT_EQ(m, mn[j]);
    }
  }
}

TEST(Quant, QuantizeIsDeterministic) {
  const auto x = gaussian(1024, 77);
  for (const auto& tb : kTypes) {
    SCOPED_TRACE(name(tb.type));
    std::vector<uint8_t> a(*ggml_row_size(tb.type, 1024)), b(a.size());
    quantize_row_fn(tb.type)(x.data(), a.data(), 1024);
    quantize_row_fn(tb.type)(x.data(), b.data(), 1024);
    EXPECT_EQ(a, b);
  }
}

}  // namespace
}  // namespace gs
