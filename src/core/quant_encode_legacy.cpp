// Quantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: a least-squares
// search (quant_search.h) and a single-pass variant for data written every step.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "core/quant_impl.h"
#include "core/quant_search.h"

namespace gs::quant_detail {
namespace {

using namespace qblock;

// Best binary16 scale near the float fit s for levels L; writes level indices to idx.
template <class Levels>
uint16_t encode_symmetric(const float* x, float s, const Levels& levels, uint8_t* idx) {
  uint16_t cand[3];
  const int n_cand = fp16_neighbours(to_fp16_sat(s), cand);
  uint16_t best = cand[0];
  double best_sse = assign_symmetric(x, kQK, fp16_to_f32(best), levels, idx);
  for (int c = 1; c < n_cand; ++c) {
    uint8_t tmp[kQK];
    const double sse = assign_symmetric(x, kQK, fp16_to_f32(cand[c]), levels, tmp);
    if (sse < best_sse) {
      best_sse = sse;
      best = cand[c];
      std::memcpy(idx, tmp, kQK);
    }
  }
  return best;
}

// Best binary16 (d, m) near the float fit for y = q * d + m; writes q.
void encode_affine(const float* x, AffineFit fit, int nmax, uint16_t* d_out, uint16_t* m_out, uint8_t* q) {
  uint16_t dc[3], mc[3];
  const int nd = fp16_neighbours(to_fp16_sat(fit.s), dc);
  const int nm = fp16_neighbours(to_fp16_sat(-fit.b), mc);
  double best_sse = std::numeric_limits<double>::infinity();
  for (int i = 0; i < nd; ++i) {
    for (int j = 0; j < nm; ++j) {
      uint8_t tmp[kQK];
      const double sse = assign_affine(x, kQK, fp16_to_f32(dc[i]), -fp16_to_f32(mc[j]), nmax, tmp);
      if ((i == 0 && j == 0) || sse < best_sse) {  // the first candidate always counts (NaN input)
        best_sse = sse;
        *d_out = dc[i];
        *m_out = mc[j];
        std::memcpy(q, tmp, kQK);
      }
    }
  }
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + kQK / 2] & 15) << 4));
}

void pack_fifth_bits(const uint8_t* q, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

// Single pass: the level of largest magnitude takes the element of largest magnitude.
float extreme_scale(const float* x, int n, float level) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(amax)) amax = x[i];
  }
  return amax / level;
}

template <class Levels>
void assign_fast(const float* x, float d, const Levels& levels, uint8_t* idx) {
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK; ++i) idx[i] = static_cast<uint8_t>(levels.nearest(x[i] * inv));
}

void fast_affine(const float* x, int nmax, uint16_t* d_out, uint16_t* m_out, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kQK; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *d_out = to_fp16_sat((hi - lo) / static_cast<float>(nmax));
  *m_out = to_fp16_sat(lo);
  const float d = fp16_to_f32(*d_out), m = fp16_to_f32(*m_out);
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK; ++i) q[i] = static_cast<uint8_t>(round_clamp((x[i] - m) * inv, 0, nmax));
}

}  // namespace

void quant_q4_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-8, 7};
  auto* b = static_cast<Q4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = encode_symmetric(src, fit_symmetric(src, kQK, levels), levels, q);
    pack_nibbles(q, b->qs);
  }
}

void quant_q5_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-16, 15};
  auto* b = static_cast<Q5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = encode_symmetric(src, fit_symmetric(src, kQK, levels), levels, q);
    pack_nibbles(q, b->qs);
    pack_fifth_bits(q, b->qh);
  }
}

void quant_q8_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-128, 127};
  auto* b = static_cast<Q8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = encode_symmetric(src, fit_symmetric(src, kQK, levels), levels, q);
    for (int j = 0; j < kQK; ++j) b->qs[j] = static_cast<int8_t>(q[j] - 128);
  }
}

void quant_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    encode_affine(src, fit_affine(src, kQK, 15, 0), 15, &b->d, &b->m, q);
    pack_nibbles(q, b->qs);
  }
}

void quant_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    encode_affine(src, fit_affine(src, kQK, 31, 0), 31, &b->d, &b->m, q);
    pack_nibbles(q, b->qs);
    pack_fifth_bits(q, b->qh);
  }
}

void quant_fast_q4_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-8, 7};
  auto* b = static_cast<Q4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = to_fp16_sat(extreme_scale(src, kQK, -8.0f));
    assign_fast(src, fp16_to_f32(b->d), levels, q);
    pack_nibbles(q, b->qs);
  }
}

void quant_fast_q5_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-16, 15};
  auto* b = static_cast<Q5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = to_fp16_sat(extreme_scale(src, kQK, -16.0f));
    assign_fast(src, fp16_to_f32(b->d), levels, q);
    pack_nibbles(q, b->qs);
    pack_fifth_bits(q, b->qh);
  }
}

void quant_fast_q8_0(const float* src, void* dst, int64_t n) {
  const UniformLevels levels{-128, 127};
  auto* b = static_cast<Q8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    b->d = to_fp16_sat(std::fabs(extreme_scale(src, kQK, 127.0f)));
    assign_fast(src, fp16_to_f32(b->d), levels, q);
    for (int j = 0; j < kQK; ++j) b->qs[j] = static_cast<int8_t>(q[j] - 128);
  }
}

void quant_fast_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    fast_affine(src, 15, &b->d, &b->m, q);
    pack_nibbles(q, b->qs);
  }
}

void quant_fast_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<Q5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    uint8_t q[kQK] = {};
    fast_affine(src, 31, &b->d, &b->m, q);
    pack_nibbles(q, b->qs);
    pack_fifth_bits(q, b->qh);
  }
}

}  // namespace gs::quant_detail
