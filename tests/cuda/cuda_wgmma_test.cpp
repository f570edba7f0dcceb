// The wgmma building blocks (src/backend/cuda/sm90a/k_wgmma.cuh) on the device: one
// warpgroup's 64 x 64 x 64 product from no-swizzle core matrices in shared memory, with B
// K-major and MN-major, against the CPU. The operands are multiples of 1/16 in [-2, 2], so
// every product and sum is exact in f32 and the results must be equal.
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

// Runs one probe; the count of results that differ from the CPU's.
int probe_mismatches(bool mn, bool a_swap, bool b_swap, bool a_regs = false, bool b_swizzle = false) {
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
  // want[m][n] = sum_k A[m][k] B(k, n); b holds B[n][k] (K-major) or B[k][n] (MN-major).
  std::vector<float> want(N * N);
  for (int m = 0; m < N; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = 0;
      for (int k = 0; k < N; ++k) sum += static_cast<double>(a[m * N + k]) * (mn ? b[k * N + n] : b[n * N + k]);
      want[m * N + n] = static_cast<float>(sum);
    }
  cuda::WgmmaProbe p;
  p.b_mn_major = mn;
  p.a_swap = a_swap;
  p.b_swap = b_swap;
  p.a_regs = a_regs;
  p.b_swizzle = b_swizzle;
  std::vector<float> got(N * N);
  const int err = cuda::run_wgmma_probe(ah.data(), bh.data(), got.data(), p);
  if (err != 0) {
    ADD_FAILURE() << "CUDA error " << err;
    return N * N;
  }
  int bad = 0;
  for (int i = 0; i < N * N; ++i) bad += got[i] != want[i];
  return bad;
}

// With GS_WGMMA_CASE="MN A B" (each 0 or 1) only that probe runs and reports (exploring a
// descriptor reading: a wrong one can fault and end the process's CUDA context).
TEST(CudaWgmma, SharedMemoryDescriptorsAndAccumulatorLayout) {
  if (!have_device()) GTEST_SKIP() << "needs the device";
  if (const char* e = std::getenv("GS_WGMMA_CASE"); e && *e) {
    int mn = 0, as = 0, bs = 0;
    ASSERT_EQ(std::sscanf(e, "%d %d %d", &mn, &as, &bs), 3);
    std::printf("wgmma probe B %s-major a_swap %d b_swap %d: %d of 4096 differ\n", mn ? "MN" : "K", as, bs,
                probe_mismatches(mn != 0, as != 0, bs != 0));
    return;
  }
  // Without swizzle, for K-major and MN-major operands alike, the leading byte offset is the
  // distance between core matrices adjacent in K and the stride one between those adjacent in
  // M or N. Measured on the H200, each reading in its own process: the swapped readings give
  // 4095-4096 of 4096 wrong (K-major) or 4096 wrong and two of them an illegal address (error
  // 700) with an MN-major B.
  EXPECT_EQ(probe_mismatches(false, false, false), 0);  // B K-major ([N][K], as K in Q K^T)
  EXPECT_EQ(probe_mismatches(true, false, false), 0);   // B MN-major ([K][N], as V in P V)
}

// A from registers in mma.sync's A fragment layout (as P in the attention's P V), B either way.
TEST(CudaWgmma, RegisterOperandA) {
  if (!have_device()) GTEST_SKIP() << "needs the device";
  EXPECT_EQ(probe_mismatches(false, false, false, true), 0);
  EXPECT_EQ(probe_mismatches(true, false, false, true), 0);
}

// B in the 128-byte swizzle (the wgmma attention kernel's `swizzle` form), A from shared
// memory and from registers: K-major with each k-step starting within the 128-byte row, and
// MN-major with 8-row groups of k 1024 bytes apart.
TEST(CudaWgmma, Swizzle128OperandB) {
  if (!have_device()) GTEST_SKIP() << "needs the device";
  for (bool a_regs : {false, true}) {
    EXPECT_EQ(probe_mismatches(false, false, false, a_regs, true), 0) << "K-major B, A from registers " << a_regs;
    EXPECT_EQ(probe_mismatches(true, false, false, a_regs, true), 0) << "MN-major B, A from registers " << a_regs;
  }
}

}  // namespace
}  // namespace gs
