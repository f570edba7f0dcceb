// Dequantizers of the 256-element K-quant super-blocks Q2_K..Q6_K and Q8_K (spec §5.2).
// Scale products are formed first (d * sc), as ggml does, so results match bit for bit.
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"

namespace gs::quant_detail {

using namespace qblock;

void dequant_q2_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, dst += kQK_K) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    // Sub-block s (16 elements at 16 s) = half h, shift 2j, part: qs[32h + 16part + l].
    for (int s = 0; s < 16; ++s) {
      const int h = s / 8, j = (s % 8) / 2, part = s % 2;
      const uint8_t sc = b->scales[s];
      const float dl = d * static_cast<float>(sc & 15);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const uint8_t* q = b->qs + 32 * h + 16 * part;
      const int shift = 2 * j;
      float* y = dst + 16 * s;
      for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
    }
  }
}

// Unpacks the sixteen signed 6-bit scales of a Q3_K block (stored with a +32 bias).
static void q3_k_scales(const uint8_t* s, int* out) {
  for (int i = 0; i < 16; ++i) {
    const int lo = i < 8 ? (s[i] & 15) : (s[i - 8] >> 4);
    const int hi = (s[8 + (i % 4)] >> (2 * (i / 4))) & 3;
    out[i] = (lo | (hi << 4)) - 32;
  }
}

void dequant_q3_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, dst += kQK_K) {
    const float d = fp16_to_f32(b->d);
    int sc[16];
    q3_k_scales(b->scales, sc);
    // Sub-block s = half h, shift 2j, part; its third bits are bit 4h + j of hmask[16part + l].
    for (int s = 0; s < 16; ++s) {
      const int h = s / 8, j = (s % 8) / 2, part = s % 2;
      const float dl = d * static_cast<float>(sc[s]);
      const uint8_t* q = b->qs + 32 * h + 16 * part;
      const uint8_t* hm = b->hmask + 16 * part;
      const int shift = 2 * j, hbit = 4 * h + j;
      float* y = dst + 16 * s;
      for (int l = 0; l < 16; ++l) {
        const int v = ((q[l] >> shift) & 3) - 4 + (((hm[l] >> hbit) & 1) << 2);
        y[l] = dl * static_cast<float>(v);
      }
    }
  }
}

// Step sizes and offsets (y = d_k q - m_k) of the 32-element sub-blocks 2c and 2c + 1 of a
// Q4_K/Q5_K block, from its packed 6-bit scales and mins.
struct KChunkScales {
  float d0, m0, d1, m1;
};
static inline KChunkScales k_chunk_scales(float d, float dmin, const uint8_t* scales, int c) {
  uint8_t sc0, mn0, sc1, mn1;
  k_scale_min(2 * c, scales, &sc0, &mn0);
  k_scale_min(2 * c + 1, scales, &sc1, &mn1);
  return {d * static_cast<float>(sc0), dmin * static_cast<float>(mn0), d * static_cast<float>(sc1),
          dmin * static_cast<float>(mn1)};
}

void dequant_q4_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; ++c) {
      const auto [d0, m0, d1, m1] = k_chunk_scales(d, dmin, b->scales, c);
      const uint8_t* q = b->qs + 32 * c;
      for (int l = 0; l < 32; ++l) dst[l] = d0 * static_cast<float>(q[l] & 15) - m0;
      for (int l = 0; l < 32; ++l) dst[32 + l] = d1 * static_cast<float>(q[l] >> 4) - m1;
      dst += 64;
    }
  }
}

void dequant_q5_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; ++c) {
      const auto [d0, m0, d1, m1] = k_chunk_scales(d, dmin, b->scales, c);
      const uint8_t* q = b->qs + 32 * c;
      const uint8_t lo_bit = static_cast<uint8_t>(1u << (2 * c));
      const uint8_t hi_bit = static_cast<uint8_t>(2u << (2 * c));
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] & 15) + ((b->qh[l] & lo_bit) ? 16 : 0);
        dst[l] = d0 * static_cast<float>(v) - m0;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (q[l] >> 4) + ((b->qh[l] & hi_bit) ? 16 : 0);
        dst[32 + l] = d1 * static_cast<float>(v) - m1;
      }
      dst += 64;
    }
  }
}

void dequant_q6_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, dst += kQK_K) {
    const float d = fp16_to_f32(b->d);
    // Half h, quarter k (elements 128h + 32k + l): low bits from ql[64h + 32(k&1) + l] at
    // shift 4(k>>1), high bits from qh[32h + l] at shift 2k; scale 8h + 2k + l/16.
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (int g = 0; g < 2; ++g) {
          const float s = d * static_cast<float>(b->scales[8 * h + 2 * k + g]);
          const uint8_t* ql = b->ql + 64 * h + 32 * (k & 1) + 16 * g;
          const uint8_t* qh = b->qh + 32 * h + 16 * g;
          const int shl = 4 * (k >> 1), shh = 2 * k;
          float* y = dst + 128 * h + 32 * k + 16 * g;
          for (int l = 0; l < 16; ++l) {
            const int q = (((ql[l] >> shl) & 15) | (((qh[l] >> shh) & 3) << 4)) - 32;
            y[l] = s * static_cast<float>(q);
          }
        }
      }
    }
  }
}

void dequant_q8_k(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const Q8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, dst += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) dst[j] = b->d * static_cast<float>(b->qs[j]);
  }
}

}  // namespace gs::quant_detail
