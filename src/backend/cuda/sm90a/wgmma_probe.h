// A device self-test of the wgmma building blocks (k_wgmma.cuh): one warpgroup computes
// C = A op(B) for 64 x 64 x 64 f16 operands laid out in shared memory as no-swizzle core
// matrices (B also in the 128-byte swizzle), so that tests/cuda/cuda_wgmma_test.cpp can check the descriptors and the
// accumulator layout against the CPU before an attention kernel is built on them.
#pragma once

#include <cstdint>

namespace gs::cuda {

struct WgmmaProbe {
  bool b_mn_major = false;  // B given as [K][N] (N contiguous; wgmma's transposed B) instead of [N][K]
  // The descriptors' byte offsets: false: leading = the K direction, stride = M or N (the
  // reading that holds on the device); true: swapped (exploration only: it can fault).
  bool a_swap = false;
  bool b_swap = false;
  // A from registers (mma_m64n64k16_rs, mma.sync's A fragment layout) instead of shared memory.
  bool a_regs = false;
  // B in the 128-byte swizzle (k_wgmma.cuh smem_desc_sw128): rows of 128 bytes (n for a
  // K-major B, k for an MN-major one), 8-row atoms 1024 bytes apart, chunk c of row r at chunk
  // c ^ (r % 8); a K-major k-step starts within the row. (B's 64 columns are one block, so an
  // MN-major B's leading byte offset is not exercised.)
  bool b_swizzle = false;
};

// a: [64][64] f16 bits, row-major M x K; b: [64][64] f16 bits, [N][K] or [K][N] per
// probe.b_mn_major; c: [64][64] floats, C[m][n] = sum_k A[m][k] B(k, n). Host pointers; runs
// synchronously on the current device. Returns the cudaError_t code (0: success).
int run_wgmma_probe(const uint16_t* a, const uint16_t* b, float* c, const WgmmaProbe& probe);

}  // namespace gs::cuda
