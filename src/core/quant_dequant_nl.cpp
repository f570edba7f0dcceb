// Dequantizers of the table formats IQ4_NL, IQ4_XS and MXFP4 (spec §5.2).
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"

namespace gs::quant_detail {

using namespace qblock;

void dequant_iq4_nl(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const IQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = fp16_to_f32(b->d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4nlValues[b->qs[j] & 15]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4nlValues[b->qs[j] >> 4]);
    }
  }
}

void dequant_iq4_xs(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const IQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    for (int sb = 0; sb < kQK_K / 32; ++sb, dst += 32) {
      const int ls = ((b->scales_l[sb / 2] >> (4 * (sb % 2))) & 15) | (((b->scales_h >> (2 * sb)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* q = b->qs + 16 * sb;
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kIq4nlValues[q[j] & 15]);
        dst[j + 16] = dl * static_cast<float>(kIq4nlValues[q[j] >> 4]);
      }
    }
  }
}

// E8M0 exponent to half its power of two, 2^(e - 128) (the FP4 table is stored doubled);
// e = 0 and 1 give the subnormals 2^-128 and 2^-127.
float mxfp4_half_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return f32_from_bits(bits);
}

void dequant_mxfp4(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const MXFP4*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, dst += kQK) {
    const float d = mxfp4_half_scale(b->e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[b->qs[j] & 15]) * d;
      dst[j + kQK / 2] = static_cast<float>(kMxfp4Values[b->qs[j] >> 4]) * d;
    }
  }
}

}  // namespace gs::quant_detail
