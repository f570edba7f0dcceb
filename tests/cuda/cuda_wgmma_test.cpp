// The wgmma building blocks (src/backend/cuda/sm90a/k_wgmma.cuh) on the device: one
// warpgroup's 64 x 64 x 64 product from no-swizzle core matrices in shared memory, with B
// K-major and MN-major, against the CPU. The operands are multiples of 1/16 in [-2, 2], so
// every product and sum is exact in f32 and the results must be equal. Each descriptor
// reading (which byte offset is the K direction) is tried; the test reports the ones that
// give the product and requires that exactly one per major-ness does.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/sm90a/wgmma_probe.h"
#include "core/fp16.h"

namespace gs {
namespace {

bool have_device() {
  const char* e = std::getenv("GS_CUDA_TEST_ON_CPU");
  return !(e && std::string(e) == "1");
}

TEST(CudaWgmma, SharedMemoryDescriptorsAndAccumulatorLayout) {
  if (!have_device()) GTEST_SKIP() << "needs the device";
  constexpr int N = 64;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> q(-32, 32);
  std::vector<float> a(N * N), b(N * N);
  for (float& x : a) x = static_cast<float>(q(rng)) / 16.0f;
  for (float& x : b) x = static_cast<float>(q(rng)) / 16.0f;
  std::vector<uint16_t> ah(N * N), bh(N * N);
  for (int i = 0; i < N * N; ++i) {
    ah[i] = f32_to_fp16(a[i]);
    bh[i] = f32_to_fp16(b[i]);
  }
  for (bool mn : {false, true}) {
    // want[m][n] = sum_k A[m][k] B(k, n); b holds B[n][k] (K-major) or B[k][n] (MN-major).
    std::vector<float> want(N * N);
    for (int m = 0; m < N; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < N; ++k) s += static_cast<double>(a[m * N + k]) * (mn ? b[k * N + n] : b[n * N + k]);
        want[m * N + n] = static_cast<float>(s);
      }
    int matches = 0;
    std::string report;
    for (bool a_swap : {false, true})
      for (bool b_swap : {false, true}) {
        cuda::WgmmaProbe p;
        p.b_mn_major = mn;
        p.a_swap = a_swap;
        p.b_swap = b_swap;
        std::vector<float> got(N * N);
        ASSERT_EQ(cuda::run_wgmma_probe(ah.data(), bh.data(), got.data(), p), 0);
        int bad = 0;
        for (int i = 0; i < N * N; ++i) bad += got[i] != want[i];
        report += "B " + std::string(mn ? "MN" : "K") + "-major, a_swap " + std::to_string(a_swap) + ", b_swap " +
                  std::to_string(b_swap) + ": " + std::to_string(bad) + " of 4096 differ\n";
        matches += bad == 0;
      }
    std::printf("%s", report.c_str());
    EXPECT_EQ(matches, 1) << report;
  }
}

}  // namespace
}  // namespace gs
