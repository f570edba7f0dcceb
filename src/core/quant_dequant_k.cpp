// Dequantizers of the 256-element K-quant super-blocks Q2_K..Q6_K and Q8_K (spec §5.2).
// Scale products are formed first (d * sc), as ggml does, so results match bit for bit.
#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"

namespace gs::quant_detail {

using namespace qblock;

void dequant_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b->qs + 32 * h;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b->scales[8 * h + 2 * j + part];
          const float dl = d * static_cast<float>(sc & 15);
          const float ml = dmin * static_cast<float>(sc >> 4);
          const uint8_t* qp = q + 16 * part;
          for (int l = 0; l < 16; ++l) *dst++ = dl * static_cast<float>((qp[l] >> shift) & 3) - ml;
        }
      }
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

void dequant_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    int sc[16];
    q3_k_scales(b->scales, sc);
    int is = 0;
    uint8_t m = 1;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b->qs + 32 * h;
      for (int j = 0; j < 4; ++j, m = static_cast<uint8_t>(m << 1)) {
        const int shift = 2 * j;
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(sc[is++]);
          const uint8_t* qp = q + 16 * part;
          const uint8_t* hm = b->hmask + 16 * part;
          for (int l = 0; l < 16; ++l) {
            const int v = ((qp[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequant_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; ++c) {
      uint8_t sc0, mn0, sc1, mn1;
      k_scale_min(2 * c, b->scales, &sc0, &mn0);
      k_scale_min(2 * c + 1, b->scales, &sc1, &mn1);
      const float d0 = d * static_cast<float>(sc0), m0 = dmin * static_cast<float>(mn0);
      const float d1 = d * static_cast<float>(sc1), m1 = dmin * static_cast<float>(mn1);
      const uint8_t* q = b->qs + 32 * c;
      for (int l = 0; l < 32; ++l) dst[l] = d0 * static_cast<float>(q[l] & 15) - m0;
      for (int l = 0; l < 32; ++l) dst[32 + l] = d1 * static_cast<float>(q[l] >> 4) - m1;
      dst += 64;
    }
  }
}

void dequant_q5_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    const float dmin = fp16_to_f32(b->dmin);
    for (int c = 0; c < 4; ++c) {
      uint8_t sc0, mn0, sc1, mn1;
      k_scale_min(2 * c, b->scales, &sc0, &mn0);
      k_scale_min(2 * c + 1, b->scales, &sc1, &mn1);
      const float d0 = d * static_cast<float>(sc0), m0 = dmin * static_cast<float>(mn0);
      const float d1 = d * static_cast<float>(sc1), m1 = dmin * static_cast<float>(mn1);
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

void dequant_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b) {
    const float d = fp16_to_f32(b->d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b->ql + 64 * h;
      const uint8_t* qh = b->qh + 32 * h;
      const int8_t* sc = b->scales + 8 * h;
      float* y = dst + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
    dst += kQK_K;
  }
}

void dequant_q8_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Q8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, dst += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) dst[j] = b->d * static_cast<float>(b->qs[j]);
  }
}

}  // namespace gs::quant_detail
