// The CPU backend's dot products, compiled for AVX2 and for baseline x86-64 with the best
// chosen at load time (GCC function multiversioning); elsewhere one plain version. Every
// product sums in 4 double lanes in a fixed order, so a result never depends on the batch.
#include "backend/cpu/cpu_ops.h"

// The vector helpers below are inlined into each clone; the by-value ABI note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gs::cpu {

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define GS_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GS_CPU_CLONES
#endif

GS_CPU_CLONES double dot_f64(const float* a, const float* b, int64_t n) {
  double acc[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) acc[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  }
  double s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

namespace {
// Four double lanes (GCC/Clang vector extension: AVX2 in the avx2 clone, SSE2 pairs otherwise).
typedef double V4 __attribute__((vector_size(32)));

inline V4 load4(const double* p) {
  V4 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
inline double lanes_sum(V4 a) { return (a[0] + a[1]) + (a[2] + a[3]); }
}  // namespace

GS_CPU_CLONES void dot_rows_f64(const double* w, int64_t ldw, int n_w, const double* x, int64_t n, double* out) {
  // Four weight rows at a time share each load of x.
  int j = 0;
  const int64_t n4 = n / 4 * 4;
  for (; j + 4 <= n_w; j += 4) {
    const double* w0 = w + j * ldw;
    const double* w1 = w0 + ldw;
    const double* w2 = w1 + ldw;
    const double* w3 = w2 + ldw;
    V4 a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n4; i += 4) {
      const V4 xv = load4(x + i);
      a0 += load4(w0 + i) * xv;
      a1 += load4(w1 + i) * xv;
      a2 += load4(w2 + i) * xv;
      a3 += load4(w3 + i) * xv;
    }
    double s0 = lanes_sum(a0), s1 = lanes_sum(a1), s2 = lanes_sum(a2), s3 = lanes_sum(a3);
    for (int64_t i = n4; i < n; ++i) {
      s0 += w0[i] * x[i];
      s1 += w1[i] * x[i];
      s2 += w2[i] * x[i];
      s3 += w3[i] * x[i];
    }
    out[j] = s0;
    out[j + 1] = s1;
    out[j + 2] = s2;
    out[j + 3] = s3;
  }
  for (; j < n_w; ++j) {
    const double* w0 = w + j * ldw;
    V4 a0 = {0, 0, 0, 0};
    for (int64_t i = 0; i < n4; i += 4) a0 += load4(w0 + i) * load4(x + i);
    double s0 = lanes_sum(a0);
    for (int64_t i = n4; i < n; ++i) s0 += w0[i] * x[i];
    out[j] = s0;
  }
}

}  // namespace gs::cpu
