// Random quantized blocks: random bytes, then each block's scale fields set to small finite
// values (offsets matched to scales so the values centre on zero). Layouts: core/quant_blocks.h.
#include "model/synth_blocks.h"

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant.h"
#include "core/quant_blocks.h"

namespace gs::synth {
namespace {

void put_half(uint8_t* p, float v) {
  const uint16_t h = f32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// A scale near `nominal` (x0.75 .. x1.25) so blocks differ.
float jitter(float nominal, Rng& rng) { return nominal * (0.75f + 0.5f * rng.uniform()); }

void random_bytes(uint8_t* dst, size_t n, Rng& rng) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(dst + i, &r, 8);
  }
  if (i < n) {
    const uint64_t r = rng.next();
    std::memcpy(dst + i, &r, n - i);
  }
}

// Element rms of each format's integer part for random quants (see the per-type notes).
constexpr float kRmsQ4 = 4.61f;       // uniform 0..15 about its centre
constexpr float kRmsQ5 = 9.23f;       // uniform 0..31 about its centre
constexpr float kRmsQ8 = 73.9f;       // uniform int8
constexpr float kRmsIq4 = 67.4f;      // the IQ4_NL table
constexpr float kRmsFp4 = 5.85f;      // the doubled E2M1 table

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b) {
  Rng r(seed ^ (a * 0xD1B54A32D192ED03ull) ^ (b * 0x8CB92BA72F3D8DD7ull));
  r.next();
  return r.next();
}

void fill_random_blocks(GgmlType type, uint8_t* dst, size_t n_blocks, float std, Rng& rng) {
  using namespace qblock;
  const size_t bb = ggml_type_traits(type).block_bytes;
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    const float a = std * std::sqrt(3.0f);  // uniform(-a, a) has std `std`
    for (size_t i = 0; i < n_blocks; ++i) {
      const float v = a * (2.0f * rng.uniform() - 1.0f);
      if (type == GgmlType::F32) {
        std::memcpy(dst + 4 * i, &v, 4);
      } else {
        const uint16_t h = type == GgmlType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    }
    return;
  }
  random_bytes(dst, n_blocks * bb, rng);
  const std::optional<WeightFormat> format = weight_format(type);
  if (!format) {  // no random form (no dequantizer, or not a weight format): zeros
    std::memset(dst, 0, n_blocks * bb);
    return;
  }
  for (size_t i = 0; i < n_blocks; ++i) {
    uint8_t* b = dst + i * bb;
    switch (*format) {
      case WeightFormat::Q4_0: put_half(b, jitter(std / kRmsQ4, rng)); break;
      case WeightFormat::Q5_0: put_half(b, jitter(std / kRmsQ5, rng)); break;
      case WeightFormat::Q8_0: put_half(b, jitter(std / kRmsQ8, rng)); break;
      case WeightFormat::IQ4_NL: put_half(b, jitter(std / kRmsIq4, rng)); break;
      case WeightFormat::Q4_1: {  // y = q d + m, q in 0..15: m = -7.5 d centres it
        const float d = fp16_to_f32(f32_to_fp16(jitter(std / kRmsQ4, rng)));
        put_half(b, d);
        put_half(b + 2, -7.5f * d);
        break;
      }
      case WeightFormat::Q5_1: {
        const float d = fp16_to_f32(f32_to_fp16(jitter(std / kRmsQ5, rng)));
        put_half(b, d);
        put_half(b + 2, -15.5f * d);
        break;
      }
      case WeightFormat::Q2_K: {  // y = d sc q - dmin mn; mn = sc and dmin = 1.5 d centre q in 0..3
        for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>((b[j] & 15) | ((b[j] & 15) << 4));
        const float d = fp16_to_f32(f32_to_fp16(jitter(std / 9.85f, rng)));
        put_half(b + 80, d);
        put_half(b + 82, 1.5f * d);
        break;
      }
      case WeightFormat::Q3_K:  // random signed 6-bit scales, quants -4..3
        put_half(b + 108, jitter(std / 43.4f, rng));
        break;
      case WeightFormat::Q4_K:
      case WeightFormat::Q5_K: {  // mins equal to scales, dmin = centre * d
        uint8_t* s = b + 4;
        std::memcpy(s + 4, s, 4);
        for (int j = 8; j < 12; ++j) s[j] = static_cast<uint8_t>((s[j] & 15) | ((s[j] & 15) << 4));
        const bool q5 = type == GgmlType::Q5_K;
        const float d = fp16_to_f32(f32_to_fp16(jitter(std / (q5 ? 337.0f : 168.0f), rng)));
        put_half(b, d);
        put_half(b + 2, (q5 ? 15.5f : 7.5f) * d);
        break;
      }
      case WeightFormat::Q6_K: {  // int8 scales halved to -64..63
        for (int j = 192; j < 208; ++j) b[j] = static_cast<uint8_t>(static_cast<int8_t>(b[j]) / 2);
        put_half(b + 208, jitter(std / 684.0f, rng));
        break;
      }
      case WeightFormat::IQ4_XS: put_half(b, jitter(std / (18.5f * kRmsIq4), rng)); break;
      case WeightFormat::MXFP4: {
        const float e = 128.0f + std::round(std::log2(std / kRmsFp4));
        b[0] = static_cast<uint8_t>(e < 2.0f ? 2.0f : (e > 254.0f ? 254.0f : e));
        break;
      }
      case WeightFormat::F32:
      case WeightFormat::F16:
      case WeightFormat::BF16: break;  // handled above
    }
  }
}

}  // namespace gs::synth
