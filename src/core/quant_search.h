// Least-squares searches for block scales, shared by the quantizers (private to core).
//
// A block of n floats x is encoded either symmetrically, y = s * v[q] with v a sorted set of
// levels, or affinely, y = s * q - b with q in 0..nmax. The searches here minimise the plain
// squared error sum (x - y)^2 over a grid of candidate scales, each refined by the
// closed-form least-squares scale for its level assignment. Written for this project.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/fp16.h"

namespace gs::quant_detail {

// Clamps t to [lo, hi]; NaN goes to lo (so no NaN reaches an int conversion).
inline float clamp_f(float t, float lo, float hi) { return t > hi ? hi : (t >= lo ? t : lo); }
inline int round_clamp(float t, int lo, int hi) {
  return static_cast<int>(std::floor(clamp_f(t, static_cast<float>(lo), static_cast<float>(hi)) + 0.5f));
}

// Integer levels lo..hi; index i stands for the level lo + i.
struct UniformLevels {
  int lo;
  int hi;
  int size() const { return hi - lo + 1; }
  int nearest(float t) const { return round_clamp(t, lo, hi) - lo; }
  float value(int i) const { return static_cast<float>(lo + i); }
};

// A sorted table of at most 16 levels (IQ4_NL, MXFP4).
struct TableLevels {
  float values[16];
  uint8_t codes[16];  // the stored 4-bit code of each level
  int n;
  int size() const { return n; }
  int nearest(float t) const {
    t = clamp_f(t, values[0], values[n - 1]);
    const float* it = std::lower_bound(values, values + n, t);
    int i = static_cast<int>(it - values);
    if (i == n) return n - 1;
    if (i > 0 && t - values[i - 1] <= values[i] - t) --i;
    return i;
  }
  float value(int i) const { return values[i]; }
};

// Builds a TableLevels from a 16-entry code -> level table (duplicates keep the first code).
inline TableLevels make_table_levels(const int8_t (&table)[16]) {
  TableLevels t{};
  t.n = 0;
  for (int code = 0; code < 16; ++code) {
    const float v = table[code];
    bool seen = false;
    for (int i = 0; i < t.n; ++i) seen = seen || t.values[i] == v;
    if (seen) continue;
    int i = t.n++;
    while (i > 0 && t.values[i - 1] > v) {
      t.values[i] = t.values[i - 1];
      t.codes[i] = t.codes[i - 1];
      --i;
    }
    t.values[i] = v;
    t.codes[i] = static_cast<uint8_t>(code);
  }
  return t;
}

// Assigns each x[i] its nearest level for scale s (index into idx when non-null) and
// returns the squared error of y = s * level, computed in float as the dequantizer does.
template <class Levels>
double assign_symmetric(const float* x, int n, float s, const Levels& levels, uint8_t* idx) {
  const float inv = s != 0.0f ? 1.0f / s : 0.0f;
  double sse = 0.0;
  for (int i = 0; i < n; ++i) {
    int k = levels.nearest(x[i] * inv);
    // The reciprocal can round the wrong way at a midpoint; check the neighbours exactly.
    float best = x[i] - s * levels.value(k);
    for (int nb = k - 1; nb <= k + 1; nb += 2) {
      if (nb < 0 || nb >= levels.size()) continue;
      const float e = x[i] - s * levels.value(nb);
      if (std::fabs(e) < std::fabs(best)) {
        best = e;
        k = nb;
      }
    }
    if (idx) idx[i] = static_cast<uint8_t>(k);
    sse += static_cast<double>(best) * best;
  }
  return sse;
}

// The float scale s minimising sum (x - s * level)^2 (searched, both signs of s).
template <class Levels>
float fit_symmetric(const float* x, int n, const Levels& levels) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(amax)) amax = x[i];
  }
  if (amax == 0.0f || !std::isfinite(amax)) return 0.0f;
  uint8_t idx[256];
  float best_s = 0.0f;
  double best_sse = std::numeric_limits<double>::infinity();
  const float ext[2] = {levels.value(levels.size() - 1), levels.value(0)};
  for (float e : ext) {
    if (e == 0.0f) continue;
    for (int step = 0; step <= 28; ++step) {
      const float f = 0.5f + 0.025f * static_cast<float>(step);
      float s = amax / (e * f);
      for (int iter = 0; iter < 2; ++iter) {
        assign_symmetric(x, n, s, levels, idx);
        double sxv = 0.0, svv = 0.0;
        for (int i = 0; i < n; ++i) {
          const double v = levels.value(idx[i]);
          sxv += x[i] * v;
          svv += v * v;
        }
        if (svv <= 0.0) break;
        s = static_cast<float>(sxv / svv);
      }
      const double sse = assign_symmetric(x, n, s, levels, nullptr);
      if (sse < best_sse) {
        best_sse = sse;
        best_s = s;
      }
    }
  }
  return best_s;
}

// Affine encoding y = s * q - b, q in 0..nmax, evaluated in float as the dequantizer does
// (s * q then - b). Writes the chosen q per element when q_out is non-null.
inline double assign_affine(const float* x, int n, float s, float b, int nmax, uint8_t* q_out) {
  const float inv = s != 0.0f ? 1.0f / s : 0.0f;
  double sse = 0.0;
  for (int i = 0; i < n; ++i) {
    int q = round_clamp((x[i] + b) * inv, 0, nmax);
    float best = x[i] - (s * static_cast<float>(q) - b);
    for (int nb = q - 1; nb <= q + 1; nb += 2) {
      if (nb < 0 || nb > nmax) continue;
      const float e = x[i] - (s * static_cast<float>(nb) - b);
      if (std::fabs(e) < std::fabs(best)) {
        best = e;
        q = nb;
      }
    }
    if (q_out) q_out[i] = static_cast<uint8_t>(q);
    sse += static_cast<double>(best) * best;
  }
  return sse;
}

struct AffineFit {
  float s = 0.0f;  // step, >= 0
  float b = 0.0f;  // subtracted offset: y = s * q - b
};

// The (s, b) minimising sum (x - (s * q - b))^2 over q in 0..nmax. b_sign restricts the
// offset: +1 means b >= 0 (K-quant mins), -1 means b <= 0, 0 leaves it free.
inline AffineFit fit_affine(const float* x, int n, int nmax, int b_sign) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (b_sign > 0) lo = std::min(lo, 0.0f);
  if (b_sign < 0) lo = std::max(lo, 0.0f);
  AffineFit best;
  if (!(hi > lo) || !std::isfinite(hi - lo)) {
    // Constant block (or non-finite): represent it by the offset alone where allowed.
    best.b = -lo;
    if ((b_sign > 0 && best.b < 0.0f) || (b_sign < 0 && best.b > 0.0f) || !std::isfinite(best.b)) best.b = 0.0f;
    return best;
  }
  uint8_t q[256];
  double best_sse = std::numeric_limits<double>::infinity();
  for (int step = 0; step <= 20; ++step) {
    const float f = 0.75f + 0.02f * static_cast<float>(step);
    for (int anchor = 0; anchor < 2; ++anchor) {
      float s = (hi - lo) / static_cast<float>(nmax) * f;
      float b = anchor == 0 ? -lo : -(hi - s * static_cast<float>(nmax));
      for (int iter = 0; iter < 3; ++iter) {
        assign_affine(x, n, s, b, nmax, q);
        // Least squares of x ~ s * q - b over (s, b) for this assignment.
        double sq = 0, sqq = 0, sx = 0, sxq = 0;
        for (int i = 0; i < n; ++i) {
          sq += q[i];
          sqq += static_cast<double>(q[i]) * q[i];
          sx += x[i];
          sxq += static_cast<double>(x[i]) * q[i];
        }
        const double det = n * sqq - sq * sq;
        double ns, nb;
        if (det > 0) {
          ns = (n * sxq - sq * sx) / det;
          nb = -(sx - ns * sq) / n;
        } else {
          ns = s;
          nb = b;
        }
        if ((b_sign > 0 && nb < 0) || (b_sign < 0 && nb > 0)) {
          nb = 0;
          ns = sqq > 0 ? sxq / sqq : s;
        }
        if (!(ns > 0)) break;
        s = static_cast<float>(ns);
        b = static_cast<float>(nb);
      }
      const double sse = assign_affine(x, n, s, b, nmax, nullptr);
      if (sse < best_sse) {
        best_sse = sse;
        best.s = s;
        best.b = b;
      }
    }
  }
  return best;
}

// binary16 bits of v, saturated to the largest finite half so no scale becomes inf.
inline uint16_t to_fp16_sat(float v) {
  const float kMax = 65504.0f;
  return f32_to_fp16(clamp_f(v, -kMax, kMax));
}

// The binary16 values next to h (h itself first), skipping inf and NaN.
inline int fp16_neighbours(uint16_t h, uint16_t* out) {
  int n = 0;
  out[n++] = h;
  const uint16_t mag = h & 0x7fffu;
  const uint16_t sign = h & 0x8000u;
  if (mag + 1u < 0x7c00u) out[n++] = static_cast<uint16_t>(sign | (mag + 1));
  if (mag > 0) out[n++] = static_cast<uint16_t>(sign | (mag - 1));
  return n;
}

}  // namespace gs::quant_detail
