// Device helpers shared by the kernels: f16 bit tricks, warp reductions, the tensor-core and
// async-copy instructions, and the dequantization of 8 weights of any device format
// (block formats of shared/spec/gemma4.md §5.2 in the layouts of cuda_weight_layout.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/k_pages.cuh"

namespace gs::cuda {

__device__ __forceinline__ float f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t f32_to_f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float bf16_bits_to_f32(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

__device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_h2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }
__device__ __forceinline__ uint32_t pack_f32x2(float lo, float hi) { return h2_bits(__floats2half2_rn(lo, hi)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Component i (a compile-time constant after unrolling) of a uint4.
__device__ __forceinline__ uint32_t u4_get(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
// Byte j (0..15, run-time) of a uint4 without going through local memory.
__device__ __forceinline__ uint32_t u4_byte(const uint4& v, int j) {
  const uint32_t w = j < 4 ? v.x : j < 8 ? v.y : j < 12 ? v.z : v.w;
  return (w >> (8 * (j & 3))) & 0xffu;
}

// D += A B on tensor cores: m16n8k16, f16 inputs, f32 accumulators (PTX ISA fragment layout:
// a0/a2 rows g, a1/a3 rows g+8; a0/a1 k = 2t..2t+1, a2/a3 k = 2t+8..; b0 k = 2t.., b1 k = 2t+8..;
// c0,c1 row g cols 2t..; c2,c3 row g+8; with g = lane / 4, t = lane % 4).
// GS_MMA_NONVOLATILE (a build flag for A/B runs) lets the compiler schedule the mma freely.
#ifdef GS_MMA_NONVOLATILE
#define GS_MMA_ASM asm
#else
#define GS_MMA_ASM asm volatile
#endif
__device__ __forceinline__ void mma_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
  GS_MMA_ASM(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// c + the four products of a's unsigned bytes with b's signed ones (PTX dp4a.u32.s32).
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// D += A B on tensor cores: m16n8k32, A unsigned 8-bit, B signed 8-bit, int32 sums
// (PTX ISA fragment layout: a0/a2 rows g, a1/a3 rows g+8; a0/a1 k = 4t..4t+3, a2/a3 k =
// 16+4t..; b0 k = 4t.., b1 k = 16+4t.. of column g; d0,d1 row g cols 2t..; d2,d3 row g+8).
// The sums are exact integers, so the order of two accumulating products never changes one.
__device__ __forceinline__ void mma_16832_u8s8_acc(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                   uint32_t b0, uint32_t b1) {
  GS_MMA_ASM(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// (a & mask) | c in one LOP3 (the compiler does not always merge the two).
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t mask, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(mask), "r"(c));
  return d;
}
// A 16-byte read-only global load that asks L2 to fetch the surrounding 256 bytes.
__device__ __forceinline__ uint4 ld_nc_l2_256(const void* p) {
  uint4 v;
  asm("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// 16-byte global -> shared copy; src_bytes = 0 writes zeros without reading.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
// Named barrier `id` (1..15; 0 is __syncthreads') of n_threads threads (a multiple of 32):
// every warp that takes part calls it with the same id and count (PTX bar.sync), which orders
// their shared-memory accesses as __syncthreads does for the whole block.
__device__ __forceinline__ void bar_sync_named(int id, int n_threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n_threads) : "memory");
}

// Q4_K / Q5_K 6-bit scale and min of sub-block k (0..7) from the 12 packed bytes s[].
__device__ __forceinline__ void k_scale_min(int k, const uint8_t* s, int& sc, int& mn) {
  if (k < 4) {
    sc = s[k] & 63;
    mn = s[k + 4] & 63;
  } else {
    sc = (s[k + 4] & 15) | ((s[k - 4] >> 6) << 4);
    mn = (s[k + 4] >> 4) | ((s[k] >> 6) << 4);
  }
}

// Elements [e, e + 8) of row `row` (e a multiple of 8, e < n_in_pad) as f32.
__device__ inline void load8(const uint8_t* __restrict__ base, const WeightLayout& L, int64_t row, int64_t e,
                             float* o) {
  const uint8_t* mrow = base + row * L.main_row_bytes;
  const uint16_t* meta = reinterpret_cast<const uint16_t*>(base + L.meta_offset) + row * L.meta_per_row;
  switch (L.format) {
    case WFormat::kF32: {
      const float4 a = *reinterpret_cast<const float4*>(mrow + e * 4);
      const float4 b = *reinterpret_cast<const float4*>(mrow + e * 4 + 16);
      o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
      o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
      return;
    }
    case WFormat::kF16:
    case WFormat::kBF16: {
      const uint4 v = *reinterpret_cast<const uint4*>(mrow + e * 2);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      for (int i = 0; i < 4; ++i) {
        const uint16_t lo = w[i] & 0xffffu, hi = w[i] >> 16;
        if (L.format == WFormat::kF16) {
          o[2 * i] = f16_bits_to_f32(lo);
          o[2 * i + 1] = f16_bits_to_f32(hi);
        } else {
          o[2 * i] = bf16_bits_to_f32(lo);
          o[2 * i + 1] = bf16_bits_to_f32(hi);
        }
      }
      return;
    }
    case WFormat::kQ8_0: {
      const int64_t b = e / 32;
      const int j = static_cast<int>(e % 32);
      const float d = f16_bits_to_f32(meta[b]);
      const int8_t* q = reinterpret_cast<const int8_t*>(mrow + b * 32 + j);
      for (int i = 0; i < 8; ++i) o[i] = static_cast<float>(q[i]) * d;
      return;
    }
    case WFormat::kQ4_0: {
      const int64_t b = e / 32;
      const int j = static_cast<int>(e % 32);
      const float d = f16_bits_to_f32(meta[b]);
      const uint8_t* q = mrow + b * 16 + (j & 15);
      const int shift = j < 16 ? 0 : 4;
      for (int i = 0; i < 8; ++i) o[i] = static_cast<float>(((q[i] >> shift) & 15) - 8) * d;
      return;
    }
    case WFormat::kQ4_K:
    case WFormat::kQ5_K: {
      const bool q5 = L.format == WFormat::kQ5_K;
      const int64_t b = e / 256;
      const int i = static_cast<int>(e % 256);
      // Tile-major Q4_K: the header and the 8 qs bytes below sit in the row group's tile.
      const uint8_t* group = base + (row / kRowGroupRows) * kRowGroupRows * L.main_row_bytes;
      const uint8_t* blk = L.tile_major ? group + q4k_tm_header(row, b) : mrow + b * (q5 ? 176 : 144);
      const float d = f16_bits_to_f32(blk[0] | (blk[1] << 8));
      const float dmin = f16_bits_to_f32(blk[2] | (blk[3] << 8));
      const int c = i / 64, r = i % 64;
      const int hi = r >= 32 ? 1 : 0;
      const int k = 2 * c + hi;
      int sc, mn;
      k_scale_min(k, blk + 4, sc, mn);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
      const int l0 = r & 31;
      const uint8_t* qs = L.tile_major ? group + q4k_tm_qs(row, b, 32 * c + l0) : blk + (q5 ? 48 : 16) + 32 * c + l0;
      const uint8_t* qh = blk + 16 + l0;
      for (int u = 0; u < 8; ++u) {
        int q = hi ? (qs[u] >> 4) : (qs[u] & 15);
        if (q5) q |= ((qh[u] >> k) & 1) << 4;
        o[u] = d1 * static_cast<float>(q) - m1;
      }
      return;
    }
    case WFormat::kQ6_K: {
      const int64_t b = e / 256;
      const int i = static_cast<int>(e % 256);
      const uint8_t* blk = mrow + b * 208;
      const float d = f16_bits_to_f32(meta[b]);
      const int h = i / 128, ii = i % 128, quarter = ii / 32, l = ii % 32;
      const uint8_t* ql = blk + 64 * h + l + (quarter & 1) * 32;
      const uint8_t* qh = blk + 128 + 32 * h + l;
      const int8_t sc = reinterpret_cast<const int8_t*>(blk + 192)[8 * h + l / 16 + 2 * quarter];
      const float ds = d * static_cast<float>(sc);
      for (int u = 0; u < 8; ++u) {
        const int nib = quarter >= 2 ? (ql[u] >> 4) : (ql[u] & 15);
        const int q = (nib | (((qh[u] >> (2 * quarter)) & 3) << 4)) - 32;
        o[u] = ds * static_cast<float>(q);
      }
      return;
    }
  }
}

// The f16 matvec operand's scaling: the power-of-two factor that brings max |x| (amax) to
// [2^10, 2^11), and its inverse (NaN when amax is inf or NaN, so that it propagates).
__device__ __forceinline__ void act_pow2_scale(float amax, float& factor, float& undo) {
  if (!(amax <= 3.0e38f)) {  // inf or NaN: let it propagate
    factor = 1.0f;
    undo = __int_as_float(0x7fc00000);
    return;
  }
  int ex = 0;
  frexpf(amax, &ex);  // amax < 2^ex
  if (amax == 0.0f) ex = 0;
  if (ex < -100) ex = -100;  // keeps both factors finite; such rows round to zero in f16
  factor = ldexpf(1.0f, 11 - ex);
  undo = ldexpf(1.0f, ex - 11);
}

}  // namespace gs::cuda
