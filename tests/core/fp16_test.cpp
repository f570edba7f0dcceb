// binary16 / bfloat16 conversions: exhaustive over every 16-bit pattern, and rounding of
// f32 inputs checked against a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/fp16.h"

namespace gs {
namespace {

// Reference binary16 decode from its definition, in double.
double half_value(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exp = (h >> 10) & 31;
  const int mant = h & 1023;
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), -24);
  if (exp == 31) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(1024.0 + mant, exp - 25);
}

TEST(Fp16, DecodesEveryPatternExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    const double want = half_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), want) << h;
      EXPECT_EQ(std::signbit(f), (h >> 15) != 0) << h;
    }
  }
}

TEST(Fp16, EncodeInvertsDecode) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(f))));
      continue;
    }
    EXPECT_EQ(f32_to_fp16(f), h) << h;
  }
}

// Nearest binary16 to x with ties to even, by brute force over the neighbours.
uint16_t reference_encode(float x) {
  if (std::isnan(x)) return 0x7e00;
  const bool neg = std::signbit(x);
  const double ax = std::fabs(static_cast<double>(x));
  if (ax >= 65520.0) return neg ? 0xfc00 : 0x7c00;
  uint16_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t m = 0; m < 0x7c00; ++m) {
    const double err = std::fabs(half_value(static_cast<uint16_t>(m)) - ax);
    if (err < best_err || (err == best_err && (m & 1) == 0)) {
      best_err = err;
      best = static_cast<uint16_t>(m);
    }
    if (half_value(static_cast<uint16_t>(m)) > ax) break;
  }
  return static_cast<uint16_t>(best | (neg ? 0x8000 : 0));
}

TEST(Fp16, EncodeRoundsToNearestEven) {
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    // Random f32 bit patterns in the half range, and exact midpoints between halves.
    float x;
    if (i % 3 == 0) {
      const uint16_t h = static_cast<uint16_t>(rng() % 0x7bff);
      x = static_cast<float>((half_value(h) + half_value(static_cast<uint16_t>(h + 1))) / 2);
    } else {
      const uint32_t bits = (rng() % (0x47800000u - 0x30000000u)) + 0x30000000u;
      std::memcpy(&x, &bits, 4);
    }
    if (rng() & 1) x = -x;
    EXPECT_EQ(f32_to_fp16(x), reference_encode(x)) << x;
  }
  EXPECT_EQ(f32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_fp16(1e-10f), 0);
}

TEST(Bf16, RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
    } else {
      EXPECT_EQ(f32_to_bf16(f), b);
    }
  }
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties go to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
}

}  // namespace
}  // namespace gs
