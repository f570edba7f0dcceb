// Emulator stand-in for src/backend/cuda/k_common.cuh (tools/cuda_emu/README.md): the same
// helpers with the PTX ISA's semantics, run by emu.h's fibers. Only what the attention
// kernels use. Fragment layouts (PTX ISA, mma.m16n8k16 f16 and ldmatrix.m8n8 b16):
//   ldmatrix x4: lanes 8i..8i+7 give the row addresses of matrix i; lane L receives, in
//     register i, row L/4, columns 2(L%4), 2(L%4)+1 of matrix i (.trans: rows 2(L%4), +1 of
//     column L/4); the lower half of a register is the first element.
//   mma: a0 (g, 2t..) a1 (g+8, 2t..) a2 (g, 2t+8..) a3 (g+8, 2t+8..); b0 (k 2t.., n g)
//     b1 (k 2t+8.., n g); c0 c1 (g, 2t, 2t+1), c2 c3 (g+8, 2t, 2t+1); g = L/4, t = L%4.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "emu.h"
#include "backend/cuda/cuda_kernels.h"

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __syncthreads() ::emu::block_sync()
#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::st().block_idx)
#define blockDim (::emu::st().block_dim)
#define gridDim (::emu::st().grid_dim)
#define cudaFuncSetAttribute(...) cudaSuccess

// Tensor maps (TMA): the emulator's driver entry point hands out its own cuTensorMapEncodeTiled,
// which keeps the parameters the 2-D box copy of k_bulk.cuh needs in the map's 128 bytes.
#undef __grid_constant__
#define __grid_constant__
struct EmuTensorMap {
  const void* addr;
  uint64_t dim0, dim1, stride1, esize, box0, box1;
  bool swizzle128;  // CU_TENSOR_MAP_SWIZZLE_128B (the only swizzle modelled)
};
inline CUresult emu_encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* addr,
                                 const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  static_assert(sizeof(EmuTensorMap) <= sizeof(CUtensorMap));
  if (rank != 2) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t es = type == CU_TENSOR_MAP_DATA_TYPE_UINT64                                        ? 8
                      : type == CU_TENSOR_MAP_DATA_TYPE_UINT16 || type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 ? 2
                                                                                                        : 0;
  if (!es || box[0] > 256 || box[1] > 256 || (box[0] * es) % 16 != 0 || strides[0] % 16 != 0 ||
      reinterpret_cast<uintptr_t>(addr) % 16 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // A swizzled box's inner dimension spans at most the swizzle's 128 bytes (CUDA driver API,
  // cuTensorMapEncodeTiled).
  if (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && (swizzle != CU_TENSOR_MAP_SWIZZLE_128B || box[0] * es > 128))
    return CUDA_ERROR_INVALID_VALUE;
  EmuTensorMap m{addr, dims[0], dims[1], strides[0], es, box[0], box[1], swizzle == CU_TENSOR_MAP_SWIZZLE_128B};
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, &m, sizeof m);
  return CUDA_SUCCESS;
}
#undef cudaGetDriverEntryPointByVersion
inline cudaError_t emu_driver_entry_point(const char* sym, void** fn, unsigned, unsigned long long,
                                          cudaDriverEntryPointQueryResult* q) {
  const bool ok = std::strcmp(sym, "cuTensorMapEncodeTiled") == 0;
  *fn = ok ? reinterpret_cast<void*>(&emu_encode_tiled) : nullptr;
  if (q) *q = ok ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}
#define cudaGetDriverEntryPointByVersion emu_driver_entry_point

namespace gs::cuda {
namespace {
// Dynamic shared memory of the kernels (`extern __shared__` names of k_attention.cu and
// k_matvec_stream.cu).
alignas(16) uint8_t smem[256 * 1024];
float wsh[65536];
alignas(128) uint8_t ring_raw[256 * 1024 + 128];
}  // namespace

// Warp-level and memory intrinsics the matvec kernels use (k_matvec_tiles.cuh,
// k_matvec_stream.cu). Fibers never run at once, so atomics and fences are plain.
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return ::emu::warp_collective(v, [&](int, auto in) { return in(src); });
}
inline void __syncwarp(unsigned = 0xffffffffu) { ::emu::warp_sync(); }
// The low bits of a shared address (the kernels align buffers with them).
inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline void __nanosleep(unsigned) { ::emu::yield(); }
// The SM's cycle counter: the host's steady clock in ns (only differences are used).
inline long long clock64() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
[[noreturn]] inline void __trap() {
  std::fprintf(stderr, "emu: __trap\n");
  std::abort();
}
inline uint4 __ldg(const uint4* p) { return *p; }
inline float4 __ldg(const float4* p) { return *p; }
inline uint2 __ldg(const uint2* p) { return *p; }
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
// Four signed byte products added to c (PTX dp4a.s32.s32).
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
         static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
  return c;
}
// c + the four products of a's unsigned bytes with b's signed ones (PTX dp4a.u32.s32).
inline int dp4a_us(uint32_t a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += static_cast<int>((a >> (8 * i)) & 0xffu) *
         static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
  return c;
}
inline int __float2int_rn(float f) { return static_cast<int>(std::nearbyint(f)); }  // ties to even
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __ldcg(const float* p) { return *p; }
inline float2 __ldcg(const float2* p) { return *p; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __int2float_rn(int v) { return static_cast<float>(v); }
// PTX prmt (default mode): byte i of the result is byte (s >> 4i) & 7 of {y, x} (x bytes 0..3).
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
  const uint64_t b = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>((b >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
  return r;
}
inline uint32_t and_or(uint32_t a, uint32_t mask, uint32_t c) { return (a & mask) | c; }
inline uint32_t u4_get(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
// f16 fused multiply-add per half: the exact a * b + c (in double) rounded once to f16.
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  auto one = [](__half x, __half y, __half z) {
    const double r = static_cast<double>(__half2float(x)) * __half2float(y) + __half2float(z);
    return __float2half_rn(static_cast<float>(r));
  };
  return __halves2half2(one(__low2half(a), __low2half(b), __low2half(c)), one(__high2half(a), __high2half(b), __high2half(c)));
}
inline uint4 ld_nc_l2_256(const void* p) {
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
}

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

template <class T>
T __shfl_xor_sync(unsigned, T v, int ofs) {
  return ::emu::warp_collective(v, [&](int lane, auto in) { return in(lane ^ ofs); });
}
inline bool __any_sync(unsigned, bool pred) {
  const int p = pred ? 1 : 0;
  return ::emu::warp_collective(p, [&](int, auto in) {
    for (int l = 0; l < 32; ++l)
      if (in(l)) return true;
    return false;
  });
}

inline float f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
inline uint16_t f32_to_f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
inline uint32_t h2_bits(__half2 h) {
  uint32_t u;
  std::memcpy(&u, &h, 4);
  return u;
}
inline __half2 bits_h2(uint32_t u) {
  __half2 h;
  std::memcpy(&h, &u, 4);
  return h;
}
inline uint32_t pack_f32x2(float lo, float hi) { return h2_bits(__floats2half2_rn(lo, hi)); }
inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

inline float h_lo(uint32_t r) { return __half2float(__ushort_as_half(static_cast<uint16_t>(r & 0xffffu))); }
inline float h_hi(uint32_t r) { return __half2float(__ushort_as_half(static_cast<uint16_t>(r >> 16))); }
inline uint32_t h_pack(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

inline void mma_16832_u8s8_acc(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                               uint32_t b1) {
  struct In {
    uint32_t a[4], b[2];
  };
  const In in{{a0, a1, a2, a3}, {b0, b1}};
  struct Out {
    int d[4];
  };
  const Out r = ::emu::warp_collective(in, [&](int lane, auto get) {
    int A[16][32], Bm[32][8];
    for (int l = 0; l < 32; ++l) {
      const In v = get(l);
      const int g = l / 4, t = l % 4;
      for (int i = 0; i < 4; ++i) {
        A[g][4 * t + i] = static_cast<int>((v.a[0] >> (8 * i)) & 0xffu);
        A[g + 8][4 * t + i] = static_cast<int>((v.a[1] >> (8 * i)) & 0xffu);
        A[g][16 + 4 * t + i] = static_cast<int>((v.a[2] >> (8 * i)) & 0xffu);
        A[g + 8][16 + 4 * t + i] = static_cast<int>((v.a[3] >> (8 * i)) & 0xffu);
        Bm[4 * t + i][g] = static_cast<int8_t>((v.b[0] >> (8 * i)) & 0xffu);
        Bm[16 + 4 * t + i][g] = static_cast<int8_t>((v.b[1] >> (8 * i)) & 0xffu);
      }
    }
    const int g = lane / 4, t = lane % 4;
    Out o;
    for (int q = 0; q < 4; ++q) {
      const int row = g + (q >= 2 ? 8 : 0), col = 2 * t + (q & 1);
      int acc = 0;
      for (int k = 0; k < 32; ++k) acc += A[row][k] * Bm[k][col];
      o.d[q] = acc;
    }
    return o;
  });
  for (int q = 0; q < 4; ++q) d[q] += r.d[q];
}

inline void mma_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  struct In {
    uint32_t a[4], b[2];
    float c[4];
  };
  const In in{{a0, a1, a2, a3}, {b0, b1}, {c[0], c[1], c[2], c[3]}};
  struct Out {
    float d[4];
  };
  const Out r = ::emu::warp_collective(in, [&](int lane, auto get) {
    float A[16][16], Bm[16][8], Cm[16][8];
    for (int l = 0; l < 32; ++l) {
      const In v = get(l);
      const int g = l / 4, t = l % 4;
      A[g][2 * t] = h_lo(v.a[0]);
      A[g][2 * t + 1] = h_hi(v.a[0]);
      A[g + 8][2 * t] = h_lo(v.a[1]);
      A[g + 8][2 * t + 1] = h_hi(v.a[1]);
      A[g][2 * t + 8] = h_lo(v.a[2]);
      A[g][2 * t + 9] = h_hi(v.a[2]);
      A[g + 8][2 * t + 8] = h_lo(v.a[3]);
      A[g + 8][2 * t + 9] = h_hi(v.a[3]);
      Bm[2 * t][g] = h_lo(v.b[0]);
      Bm[2 * t + 1][g] = h_hi(v.b[0]);
      Bm[2 * t + 8][g] = h_lo(v.b[1]);
      Bm[2 * t + 9][g] = h_hi(v.b[1]);
      Cm[g][2 * t] = v.c[0];
      Cm[g][2 * t + 1] = v.c[1];
      Cm[g + 8][2 * t] = v.c[2];
      Cm[g + 8][2 * t + 1] = v.c[3];
    }
    const int g = lane / 4, t = lane % 4;
    Out o;
    const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    for (int e = 0; e < 4; ++e) {
      double acc = Cm[rows[e]][cols[e]];
      for (int k = 0; k < 16; ++k) acc += static_cast<double>(A[rows[e]][k]) * Bm[k][cols[e]];
      o.d[e] = static_cast<float>(acc);
    }
    return o;
  });
  for (int e = 0; e < 4; ++e) c[e] = r.d[e];
}

inline void ldmatrix_x4_impl(uint32_t (&r)[4], const void* p, bool trans) {
  struct In {
    const uint16_t* row;
  };
  const In in{static_cast<const uint16_t*>(p)};
  struct Out {
    uint32_t r[4];
  };
  const Out o = ::emu::warp_collective(in, [&](int lane, auto get) {
    Out out;
    for (int i = 0; i < 4; ++i) {
      if (!trans) {
        const uint16_t* row = get(8 * i + lane / 4).row;
        out.r[i] = h_pack(row[2 * (lane % 4)], row[2 * (lane % 4) + 1]);
      } else {
        const uint16_t* r0 = get(8 * i + 2 * (lane % 4)).row;
        const uint16_t* r1 = get(8 * i + 2 * (lane % 4) + 1).row;
        out.r[i] = h_pack(r0[lane / 4], r1[lane / 4]);
      }
    }
    return out;
  });
  for (int i = 0; i < 4; ++i) r[i] = o.r[i];
}
inline void ldmatrix_x4(uint32_t (&r)[4], const void* p) { ldmatrix_x4_impl(r, p, false); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) { ldmatrix_x4_impl(r, p, true); }

inline void cp_async16(void* dst, const void* src, int src_bytes) { ::emu::cp_async(dst, src, src_bytes); }
inline void cp_async_commit() { ::emu::cp_commit(); }
template <int N>
inline void cp_async_wait() {
  ::emu::cp_wait(N);
}
inline void bar_sync_named(int id, int n_threads) { ::emu::named_sync(id, n_threads); }

}  // namespace gs::cuda

// The real page-table arithmetic (src/backend/cuda/k_pages.cuh; the qualifiers are defined away above).
#include "backend/cuda/k_pages.cuh"
