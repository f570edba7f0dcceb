// Two-level scale searches for super-block formats (K-quants, IQ4_XS): each sub-block's
// float scale is fitted, then the super-block scale and the integer sub-block scales are
// searched jointly so that the error after every rounding is smallest (private to core).
#pragma once

#include <cmath>
#include <cstring>
#include <limits>

#include "core/quant_search.h"

namespace gs::quant_detail {

inline constexpr int kSubScaleRadius = 2;  // integer sub-scales tried around the rounded fit

// Affine super-block: sub-block j decodes as y = (d * sc[j]) * q - (dmin * mn[j]), with
// q in 0..nmax and sc, mn in 0..scale_max.
struct KAffineSpec {
  int n_sub;
  int sub_len;
  int nmax;
  int scale_max;
};
struct KAffineCode {
  uint16_t d = 0;
  uint16_t dmin = 0;
  uint8_t sc[16] = {};
  uint8_t mn[16] = {};
  uint8_t q[256] = {};
};

inline void search_k_affine(const float* x, const KAffineSpec& spec, KAffineCode* out) {
  const int n_sub = spec.n_sub, len = spec.sub_len;
  double best_total = std::numeric_limits<double>::infinity();
  bool have = false;  // the first candidate always counts, even when inputs are not finite
  // sign +1: offsets subtract (dmin >= 0), the usual case; -1: offsets add (dmin < 0).
  for (int sign = 1; sign >= -1; sign -= 2) {
    AffineFit fit[16];
    float max_s = 0.0f, max_b = 0.0f;
    for (int j = 0; j < n_sub; ++j) {
      fit[j] = fit_affine(x + j * len, len, spec.nmax, sign);
      max_s = std::max(max_s, fit[j].s);
      max_b = std::max(max_b, std::fabs(fit[j].b));
    }
    const float sm = static_cast<float>(spec.scale_max);
    // Near-full use of the sub-scale range, and coarser super-scales that keep tiny blocks
    // out of binary16's subnormal range.
    const float targets[6] = {sm, sm - 0.5f, sm - 1.0f, sm - 2.0f, sm / 4, sm / 16};
    for (float td : targets) {
      for (float tm : targets) {
        const uint16_t dh = to_fp16_sat(max_s / td);
        const uint16_t mh = to_fp16_sat(static_cast<float>(sign) * max_b / tm);
        const float df = fp16_to_f32(dh), mf = fp16_to_f32(mh);
        KAffineCode code;
        code.d = dh;
        code.dmin = mh;
        double total = 0.0;
        for (int j = 0; j < n_sub && total < best_total; ++j) {
          const float* xj = x + j * len;
          const int sc0 = df != 0.0f ? round_clamp(fit[j].s / df, 0, spec.scale_max) : 0;
          const int mn0 = mf != 0.0f ? round_clamp(fit[j].b / mf, 0, spec.scale_max) : 0;
          double best = std::numeric_limits<double>::infinity();
          for (int sc = std::max(0, sc0 - kSubScaleRadius); sc <= std::min(spec.scale_max, sc0 + kSubScaleRadius); ++sc) {
            for (int mn = std::max(0, mn0 - kSubScaleRadius); mn <= std::min(spec.scale_max, mn0 + kSubScaleRadius); ++mn) {
              const float s = df * static_cast<float>(sc), b = mf * static_cast<float>(mn);
              const double sse = assign_affine(xj, len, s, b, spec.nmax, nullptr);
              if (sse < best) {
                best = sse;
                code.sc[j] = static_cast<uint8_t>(sc);
                code.mn[j] = static_cast<uint8_t>(mn);
              }
            }
          }
          total += best;
        }
        if (total < best_total || !have) {
          have = true;
          best_total = total;
          for (int j = 0; j < n_sub; ++j) {
            const float s = df * static_cast<float>(code.sc[j]), b = mf * static_cast<float>(code.mn[j]);
            assign_affine(x + j * len, len, s, b, spec.nmax, code.q + j * len);
          }
          *out = code;
        }
      }
    }
  }
}

// Symmetric super-block: sub-block j decodes as y = (d * sc[j]) * level[q], with signed
// sc in scale_lo..scale_hi.
struct KSymmetricSpec {
  int n_sub;
  int sub_len;
  int scale_lo;
  int scale_hi;
};
struct KSymmetricCode {
  uint16_t d = 0;
  int8_t sc[16] = {};
  uint8_t idx[256] = {};  // level index per element
};

template <class Levels>
void search_k_symmetric(const float* x, const KSymmetricSpec& spec, const Levels& levels, KSymmetricCode* out) {
  const int n_sub = spec.n_sub, len = spec.sub_len;
  float fit[16];
  float amax = 0.0f;
  for (int j = 0; j < n_sub; ++j) {
    fit[j] = fit_symmetric(x + j * len, len, levels);
    amax = std::max(amax, std::fabs(fit[j]));
  }
  const float hi = static_cast<float>(spec.scale_hi);
  const float targets[7] = {hi, hi - 0.5f, hi - 1.0f, hi - 2.0f, static_cast<float>(-spec.scale_lo), hi / 4, hi / 16};
  double best_total = std::numeric_limits<double>::infinity();
  bool have = false;  // the first candidate always counts, even when inputs are not finite
  for (float t : targets) {
    const uint16_t dh = to_fp16_sat(amax / t);
    const float df = fp16_to_f32(dh);
    KSymmetricCode code;
    code.d = dh;
    double total = 0.0;
    for (int j = 0; j < n_sub && total < best_total; ++j) {
      const float* xj = x + j * len;
      const int sc0 = df != 0.0f ? round_clamp(fit[j] / df, spec.scale_lo, spec.scale_hi) : 0;
      double best = std::numeric_limits<double>::infinity();
      for (int sc = std::max(spec.scale_lo, sc0 - kSubScaleRadius); sc <= std::min(spec.scale_hi, sc0 + kSubScaleRadius); ++sc) {
        const double sse = assign_symmetric(xj, len, df * static_cast<float>(sc), levels, nullptr);
        if (sse < best) {
          best = sse;
          code.sc[j] = static_cast<int8_t>(sc);
        }
      }
      total += best;
    }
    if (total < best_total || !have) {
      have = true;
      best_total = total;
      for (int j = 0; j < n_sub; ++j) {
        assign_symmetric(x + j * len, len, df * static_cast<float>(code.sc[j]), levels, code.idx + j * len);
      }
      *out = code;
    }
  }
}

}  // namespace gs::quant_detail
