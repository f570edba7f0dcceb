// Quantizers of the table formats IQ4_NL, IQ4_XS and MXFP4 (least-squares searches).
#include <cmath>
#include <cstring>
#include <limits>

#include "core/quant_blocks.h"
#include "core/quant_impl.h"
#include "core/quant_search_k.h"

namespace gs::quant_detail {
namespace {

using namespace qblock;

const TableLevels& iq4_levels() {
  static const TableLevels t = make_table_levels(kIq4nlValues);
  return t;
}

const TableLevels& mxfp4_levels() {
  static const TableLevels t = make_table_levels(kMxfp4Values);
  return t;
}

void pack_codes(const TableLevels& t, const uint8_t* idx, uint8_t* qs, int half) {
  for (int j = 0; j < half; ++j) qs[j] = static_cast<uint8_t>(t.codes[idx[j]] | (t.codes[idx[j + half]] << 4));
}

}  // namespace

void quant_iq4_nl(const float* src, void* dst, int64_t n) {
  const TableLevels& levels = iq4_levels();
  auto* b = static_cast<IQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    const float s = fit_symmetric(src, kQK, levels);
    uint16_t cand[3];
    const int nc = fp16_neighbours(to_fp16_sat(s), cand);
    uint8_t idx[kQK], tmp[kQK];
    double best = std::numeric_limits<double>::infinity();
    for (int c = 0; c < nc; ++c) {
      const double sse = assign_symmetric(src, kQK, fp16_to_f32(cand[c]), levels, tmp);
      if (c == 0 || sse < best) {  // the first candidate always counts (NaN input)
        best = sse;
        b->d = cand[c];
        std::memcpy(idx, tmp, kQK);
      }
    }
    pack_codes(levels, idx, b->qs, kQK / 2);
  }
}

void quant_fast_iq4_nl(const float* src, void* dst, int64_t n) {
  const TableLevels& levels = iq4_levels();
  auto* b = static_cast<IQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (std::fabs(src[j]) > std::fabs(amax)) amax = src[j];
    }
    b->d = to_fp16_sat(amax / -127.0f);  // the table's extreme level is -127
    const float d = fp16_to_f32(b->d);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t idx[kQK];
    for (int j = 0; j < kQK; ++j) idx[j] = static_cast<uint8_t>(levels.nearest(src[j] * inv));
    pack_codes(levels, idx, b->qs, kQK / 2);
  }
}

void quant_iq4_xs(const float* src, void* dst, int64_t n) {
  const TableLevels& levels = iq4_levels();
  auto* b = static_cast<IQ4_XS*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, ++b, src += kQK_K) {
    KSymmetricCode c;
    search_k_symmetric(src, {8, 32, -32, 31}, levels, &c);
    b->d = c.d;
    b->scales_h = 0;
    std::memset(b->scales_l, 0, sizeof(b->scales_l));
    for (int sb = 0; sb < 8; ++sb) {
      const int ls = c.sc[sb] + 32;
      b->scales_l[sb / 2] |= static_cast<uint8_t>((ls & 15) << (4 * (sb % 2)));
      b->scales_h = static_cast<uint16_t>(b->scales_h | ((ls >> 4) << (2 * sb)));
      pack_codes(levels, c.idx + 32 * sb, b->qs + 16 * sb, 16);
    }
  }
}

void quant_mxfp4(const float* src, void* dst, int64_t n) {
  const TableLevels& levels = mxfp4_levels();
  auto* b = static_cast<MXFP4*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    // Scale 2^(e-128) with the largest level 12: start where amax maps near 12, try around.
    // log2(amax) - log2(12) stays finite for subnormal amax (amax / 12 could underflow to 0).
    int e0 = 0;
    if (amax > 0.0f && std::isfinite(amax)) {
      e0 = static_cast<int>(std::floor(std::log2(amax) - std::log2(12.0f))) + 128;
    }
    uint8_t idx[kQK], tmp[kQK];
    double best = std::numeric_limits<double>::infinity();
    for (int e = e0 - 1; e <= e0 + 2; ++e) {
      if (e < 0 || e > 255) continue;
      const double sse = assign_symmetric(src, kQK, mxfp4_half_scale(static_cast<uint8_t>(e)), levels, tmp);
      if (sse < best) {
        best = sse;
        b->e = static_cast<uint8_t>(e);
        std::memcpy(idx, tmp, kQK);
      }
    }
    if (best == std::numeric_limits<double>::infinity()) {  // no candidate in range
      b->e = 0;
      assign_symmetric(src, kQK, mxfp4_half_scale(0), levels, idx);
    }
    pack_codes(levels, idx, b->qs, kQK / 2);
  }
}

}  // namespace gs::quant_detail
