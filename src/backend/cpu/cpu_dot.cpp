// The CPU backend's dot product, compiled for AVX2 and for baseline x86-64 with the best
// chosen at load time (GCC function multiversioning); elsewhere one plain version.
#include "backend/cpu/cpu_ops.h"

namespace gs::cpu {

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define GS_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GS_CPU_CLONES
#endif

GS_CPU_CLONES double dot_f64(const float* a, const float* b, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(a[i + k]) * static_cast<double>(b[i + k]);
  }
  double s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return s;
}

}  // namespace gs::cpu
