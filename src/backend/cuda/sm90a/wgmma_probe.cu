// The wgmma self-test kernel (wgmma_probe.h).
#include "backend/cuda/sm90a/wgmma_probe.h"

#include <cuda_runtime.h>

#include "backend/cuda/sm90a/k_wgmma.cuh"

namespace gs::cuda {
namespace {

constexpr int kN = 64;                 // M = N = K
constexpr uint32_t kCore = 128;        // bytes of one core matrix (8 rows of 16 B)
constexpr uint32_t kAcross = kCore * (kN / 8);  // bytes of a run of 8 core matrices

// Byte offset in shared memory of element (r, k) of a K-major operand (rows r of 8-row core
// matrices, k along each 16-byte row): core matrices adjacent in K are kCore apart, those
// adjacent in the row direction kAcross.
__device__ __forceinline__ uint32_t k_major_offset(int r, int k) {
  return (r / 8) * kAcross + (k / 8) * kCore + (r % 8) * 16 + (k % 8) * 2;
}
// Element (k, n) of an MN-major operand (each 16-byte core row holds 8 consecutive n): core
// matrices adjacent in N are kCore apart, those adjacent in K kAcross.
__device__ __forceinline__ uint32_t mn_major_offset(int k, int n) {
  return (n / 8) * kCore + (k / 8) * kAcross + (k % 8) * 16 + (n % 8) * 2;
}

// Element (r, c) of a 64-column operand in the 128-byte swizzle: row r (n of a K-major B, k of
// an MN-major one) at 128 r, the 16-byte chunk c / 8 of it at chunk (c / 8) ^ (r % 8).
__device__ __forceinline__ uint32_t sw128_offset(int r, int c) {
  return r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
}

__global__ void __launch_bounds__(128) wgmma_probe_kernel(const uint16_t* __restrict__ a, const uint16_t* __restrict__ b,
                                                          float* __restrict__ c, WgmmaProbe probe) {
  __shared__ __align__(128) uint8_t sa[kN * kN * 2];
  __shared__ __align__(128) uint8_t sb_raw[kN * kN * 2 + 1024];
  // The swizzle's pattern repeats on 1024-byte boundaries of the shared address.
  uint8_t* sb = sb_raw + (1024 - wg::smem_addr(sb_raw) % 1024) % 1024;
  const int tid = threadIdx.x;
  for (int i = tid; i < kN * kN; i += 128) {
    const int r = i / kN, col = i % kN;
    *reinterpret_cast<uint16_t*>(sa + k_major_offset(r, col)) = a[i];
    // b[i] is B[n = r][k = col] (K-major) or B[k = r][n = col] (MN-major).
    const uint32_t at = probe.b_swizzle ? sw128_offset(r, col) : probe.b_mn_major ? mn_major_offset(r, col) : k_major_offset(r, col);
    *reinterpret_cast<uint16_t*>(sb + at) = b[i];
  }
  wg::fence_proxy_async();
  __syncthreads();
  float d[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  // K direction: kCore per core matrix for A (and a K-major B), kAcross for an MN-major B.
  const uint32_t a_k = kCore, a_r = kAcross;
  const uint32_t b_k = probe.b_mn_major ? kAcross : kCore, b_r = probe.b_mn_major ? kCore : kAcross;
  wg::fence();
#pragma unroll
  for (int s = 0; s < kN / 16; ++s) {
    const uint64_t da = wg::smem_desc(wg::smem_addr(sa) + s * 2 * a_k, probe.a_swap ? a_r : a_k, probe.a_swap ? a_k : a_r);
    uint64_t db = wg::smem_desc(wg::smem_addr(sb) + s * 2 * b_k, probe.b_swap ? b_r : b_k, probe.b_swap ? b_k : b_r);
    if (probe.b_swizzle) {
      // K-major: the k-step's 32 bytes within each row; MN-major: 16 rows of k a step.
      db = probe.b_mn_major ? wg::smem_desc_sw128(wg::smem_addr(sb) + s * 2 * 1024, 8192, 1024)
                            : wg::smem_desc_sw128(wg::smem_addr(sb) + s * 32, 16, 1024);
    }
    if (probe.a_regs) {
      // This thread's part of A's columns [16 s, 16 s + 16): mma.sync's m16n8k16 A fragment
      // of the warp's 16 rows.
      const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4, r0 = 16 * w + g, c0 = 16 * s + 2 * t;
      auto pair = [&](int r, int col) {
        return static_cast<uint32_t>(a[r * kN + col]) | (static_cast<uint32_t>(a[r * kN + col + 1]) << 16);
      };
      const uint32_t ar[4] = {pair(r0, c0), pair(r0 + 8, c0), pair(r0, c0 + 8), pair(r0 + 8, c0 + 8)};
      if (probe.b_mn_major) wg::mma_m64n64k16_rs<1>(d, ar, db, s > 0);
      else wg::mma_m64n64k16_rs<0>(d, ar, db, s > 0);
    } else if (probe.b_mn_major) {
      wg::mma_m64n64k16_ss<1>(d, da, db, s > 0);
    } else {
      wg::mma_m64n64k16_ss<0>(d, da, db, s > 0);
    }
  }
  wg::commit();
  wg::wait<0>();
  const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int row = 16 * w + g, col = 8 * j + 2 * t;
    c[row * kN + col] = d[4 * j];
    c[row * kN + col + 1] = d[4 * j + 1];
    c[(row + 8) * kN + col] = d[4 * j + 2];
    c[(row + 8) * kN + col + 1] = d[4 * j + 3];
  }
}

}  // namespace

int run_wgmma_probe(const uint16_t* a, const uint16_t* b, float* c, const WgmmaProbe& probe) {
  const size_t in_bytes = kN * kN * sizeof(uint16_t), out_bytes = kN * kN * sizeof(float);
  uint16_t *da = nullptr, *db = nullptr;
  float* dc = nullptr;
  cudaError_t e = cudaMalloc(&da, in_bytes);
  if (e == cudaSuccess) e = cudaMalloc(&db, in_bytes);
  if (e == cudaSuccess) e = cudaMalloc(&dc, out_bytes);
  if (e == cudaSuccess) e = cudaMemcpy(da, a, in_bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(db, b, in_bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemset(dc, 0xFF, out_bytes);  // NaN where nothing is written
  if (e == cudaSuccess) {
    wgmma_probe_kernel<<<1, 128>>>(da, db, dc, probe);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(c, dc, out_bytes, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  return static_cast<int>(e);
}

}  // namespace gs::cuda
