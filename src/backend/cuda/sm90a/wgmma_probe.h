// A device self-test of the wgmma building blocks (k_wgmma.cuh): one warpgroup computes
// C = A op(B) for 64 x 64 x 64 f16 operands laid out in shared memory as no-swizzle core
// matrices, so that tests/cuda/cuda_wgmma_test.cpp can check the descriptors and the
// accumulator layout against the CPU before an attention kernel is built on them.
#pragma once

#include <cstdint>

namespace gs::cuda {

struct WgmmaProbe {
  bool b_mn_major = false;  // B given as [K][N] (N contiguous; wgmma's transposed B) instead of [N][K]
  bool a_swap = false;      // A's descriptor: false: leading offset = the K direction, stride = M
  bool b_swap = false;      // B's the same (false: leading = K direction, stride = N)
};

// a: [64][64] f16 bits, row-major M x K; b: [64][64] f16 bits, [N][K] or [K][N] per
// probe.b_mn_major; c: [64][64] floats, C[m][n] = sum_k A[m][k] B(k, n). Host pointers; runs
// synchronously on the current device. Returns the cudaError_t code (0: success).
int run_wgmma_probe(const uint16_t* a, const uint16_t* b, float* c, const WgmmaProbe& probe);

}  // namespace gs::cuda
