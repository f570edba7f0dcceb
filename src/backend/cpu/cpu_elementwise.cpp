// CPU row-wise and element-wise ops: RMS norm, RoPE (with freq factors and YaRN), the
// GELU-gated product, add, scale, softcap, row gather and copy. Computed in double and
// rounded once to f32 (see dot_f64 in cpu_ops.h for why).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "core/check.h"

namespace gs::cpu {

void rms_norm(ThreadPool& pool, Mat x, const float* weight, int64_t group, float eps, Mat out) {
  GS_CHECK(group > 0 && x.cols % group == 0 && out.cols == x.cols && out.rows == x.rows);
  pool.parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row(r);
      float* yr = out.row(r);
      for (int64_t g0 = 0; g0 < x.cols; g0 += group) {
        // Sum of squares in double: the mean is then exact to f32 rounding.
        double ss = 0;
        for (int64_t i = 0; i < group; ++i) ss += static_cast<double>(xr[g0 + i]) * xr[g0 + i];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(group) + eps);
        for (int64_t i = 0; i < group; ++i) {
          const double v = xr[g0 + i] * inv;
          yr[g0 + i] = static_cast<float>(weight ? v * weight[i] : v);
        }
      }
    }
  }, min_chunk_for(x.cols));
}

namespace {
// ggml's YaRN ramp over the pair index (spec §6.2), in double: the mix multiplies angles
// that reach 1e6 rad, so f32 rounding here would move them by milliradians.
double yarn_ramp(float lo, float hi, int64_t pair) {
  const double y = (static_cast<double>(pair) - lo) / std::max(0.001, static_cast<double>(hi) - lo);
  return 1.0 - std::min(1.0, std::max(0.0, y));
}
}  // namespace

void rope(ThreadPool& pool, Mat x, const int32_t* pos, const RopeArgs& a) {
  GS_CHECK(a.head_dim > 0 && x.cols % a.head_dim == 0 && a.n_dims % 2 == 0 && a.n_dims <= a.head_dim);
  const int64_t n_heads = x.cols / a.head_dim;
  const int half = a.n_dims / 2;
  // Per-pair frequencies theta^(-2i/n_dims) / freq_factors[i], once per call.
  thread_local std::vector<double> freq;
  freq.resize(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) {
    freq[i] = std::pow(static_cast<double>(a.theta), -2.0 * i / a.n_dims);
    if (a.freq_factors) freq[i] /= a.freq_factors[i];
  }
  const double* f = freq.data();
  pool.parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    thread_local std::vector<double> cs;
    cs.resize(static_cast<size_t>(2 * half));
    for (int64_t r = r0; r < r1; ++r) {
      const double p = pos[r];
      for (int i = 0; i < half; ++i) {
        // Angle in double: positions reach 1e6 and the angle must stay accurate there.
        const double theta_extrap = p * f[i];
        double theta = theta_extrap;
        float mscale = a.attn_factor;
        if (a.ext_factor != 0.0f || a.freq_scale != 1.0f) {
          const double theta_interp = a.freq_scale * theta_extrap;
          theta = theta_interp;
          if (a.ext_factor != 0.0f) {
            const double mix = yarn_ramp(a.corr_lo, a.corr_hi, i) * a.ext_factor;
            theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
            mscale *= 1.0f + 0.1f * std::log(1.0f / a.freq_scale);
          }
        }
        cs[2 * i] = std::cos(theta) * mscale;
        cs[2 * i + 1] = std::sin(theta) * mscale;
      }
      float* xr = x.row(r);
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = xr + h * a.head_dim;
        for (int i = 0; i < half; ++i) {
          const double c = cs[2 * i];
          const double s = cs[2 * i + 1];
          const double lo = v[i];
          const double hi = v[i + half];
          v[i] = static_cast<float>(lo * c - hi * s);
          v[i + half] = static_cast<float>(lo * s + hi * c);
        }
      }
    }
  }, min_chunk_for(x.cols + 8 * half));
}

void gelu_mul(ThreadPool& pool, Mat gate, Mat up, Mat out) {
  GS_CHECK(gate.rows == up.rows && gate.cols == up.cols && out.rows == gate.rows && out.cols == gate.cols);
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  pool.parallel_for(gate.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = gate.row(r);
      const float* u = up.row(r);
      float* o = out.row(r);
      for (int64_t i = 0; i < gate.cols; ++i) {
        const double v = g[i];
        const double gelu = 0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v)));
        o[i] = static_cast<float>(gelu * u[i]);
      }
    }
  }, min_chunk_for(8 * gate.cols));
}

void add(ThreadPool& pool, Mat a, Mat b, Mat out) {
  GS_CHECK(a.rows == b.rows && a.cols == b.cols && out.rows == a.rows && out.cols == a.cols);
  pool.parallel_for(a.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* ar = a.row(r);
      const float* br = b.row(r);
      float* o = out.row(r);
      for (int64_t i = 0; i < a.cols; ++i) o[i] = ar[i] + br[i];
    }
  }, min_chunk_for(a.cols));
}

void scale(ThreadPool& pool, Mat x, float s) {
  pool.parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x.row(r);
      for (int64_t i = 0; i < x.cols; ++i) xr[i] *= s;
    }
  }, min_chunk_for(x.cols));
}

void softcap(ThreadPool& pool, Mat x, float cap) {
  pool.parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x.row(r);
      for (int64_t i = 0; i < x.cols; ++i) {
        xr[i] = static_cast<float>(cap * std::tanh(static_cast<double>(xr[i]) / cap));
      }
    }
  }, min_chunk_for(8 * x.cols));
}

void argmax_rows(ThreadPool& pool, Mat x, int32_t* ids, float* p_top) {
  pool.parallel_for(x.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x.row(r);
      int64_t best = 0;
      float top = -std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < x.cols; ++c) {
        if (xr[c] > top) {  // false for NaN; strict: ties keep the lower column
          top = xr[c];
          best = c;
        }
      }
      ids[r] = static_cast<int32_t>(best);
      if (!p_top) continue;
      if (!std::isfinite(top)) {
        p_top[r] = 0.0f;
        continue;
      }
      double sum = 0;
      for (int64_t c = 0; c < x.cols; ++c) {
        if (!std::isnan(xr[c])) sum += std::exp(static_cast<double>(xr[c]) - top);
      }
      p_top[r] = static_cast<float>(1.0 / sum);
    }
  }, min_chunk_for(4 * x.cols));
}

void gather_rows(ThreadPool& pool, Mat src, const int32_t* rows, Mat dst) {
  GS_CHECK(src.cols == dst.cols);
  pool.parallel_for(dst.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      GS_CHECK(rows[r] >= 0 && rows[r] < src.rows);
      std::memcpy(dst.row(r), src.row(rows[r]), static_cast<size_t>(src.cols) * sizeof(float));
    }
  }, min_chunk_for(src.cols));
}

void copy(ThreadPool& pool, Mat src, Mat dst) {
  GS_CHECK(src.rows == dst.rows && src.cols == dst.cols);
  pool.parallel_for(src.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      std::memmove(dst.row(r), src.row(r), static_cast<size_t>(src.cols) * sizeof(float));
    }
  }, min_chunk_for(src.cols));
}

}  // namespace gs::cpu
