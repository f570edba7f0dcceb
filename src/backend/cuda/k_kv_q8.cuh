// q8_0 KV head rows on the device (decision 0035; backend.h's KvLayerView): head_dim int8
// values, then head_dim / 32 f16 scales. The quantizer rounds as kv_quantize_q8_0 on the CPU
// does, bit for bit: per block of 32, d = max|x| / 127 (IEEE division: the project builds
// without fast math), id = 1 / d (0 when d == 0), q = roundf(x * id), d stored as f16.
#pragma once

#include <cstdint>

#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

// One block of 32 values quantized by a warp: lane i holds value i of the block; writes qs[i]
// (lane i) and *d (lane 0). Every lane of the warp must call it.
__device__ __forceinline__ void q8_block_store_warp(float x, int8_t* qs, uint16_t* d, int lane) {
  const float amax = warp_max(fabsf(x));
  const float db = amax / 127.0f;
  const float id = db != 0.0f ? 1.0f / db : 0.0f;
  qs[lane] = static_cast<int8_t>(roundf(__fmul_rn(x, id)));
  if (lane == 0) *d = f32_to_f16_bits(db);
}

// A head row of D values (D % 32 == 0) quantized by a warp whose lane holds elements
// lane + 32 j (j < NE, those < D) in y[j]: block j is the j-th value of every lane.
template <int NE>
__device__ __forceinline__ void q8_head_store_warp(uint8_t* row, const float (&y)[NE], int D, int lane) {
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* ds = reinterpret_cast<uint16_t*>(row + D);
#pragma unroll
  for (int j = 0; j < NE; ++j) {
    if (32 * j < D) q8_block_store_warp(y[j], qs + 32 * j, ds + j, lane);  // uniform over the warp
  }
}

// Element d of a q8_0 head row of D values.
__device__ __forceinline__ float q8_head_load(const uint8_t* row, int D, int d) {
  const float db = f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row + D)[d >> 5]);
  return static_cast<float>(reinterpret_cast<const int8_t*>(row)[d]) * db;
}

// Element d of head j of pool slot `slot` of a K or V pool of any type (KvView).
__device__ __forceinline__ float kv_pool_load(const void* pool, const KvView& kv, int64_t slot, int j, int d) {
  const int64_t head = slot * kv.n_head_kv + j;
  if (kv.q8) return q8_head_load(static_cast<const uint8_t*>(pool) + head * kv_head_row_bytes(kv), kv.head_dim, d);
  const int64_t i = head * kv.head_dim + d;
  return kv.f16 ? f16_bits_to_f32(static_cast<const uint16_t*>(pool)[i]) : static_cast<const float*>(pool)[i];
}

// Four int8 values (bytes of w) times the f16 scale s2 (both halves), as two f16 pairs (lo:
// bytes 0, 1; hi: bytes 2, 3), each f16(q * d), the product rounded once (it is exact in f32).
// The bytes, offset by 128, become the low mantissa bits of 1024 + u (f16 0x64uu), less 1152.
__device__ __forceinline__ void q8x4_to_f16x4(uint32_t w, __half2 s2, uint32_t& lo, uint32_t& hi) {
  const uint32_t u = w ^ 0x80808080u;
  const __half2 bias = bits_h2(0x64806480u);  // 1152, 1152
  lo = h2_bits(__hmul2(__hsub2(bits_h2(__byte_perm(u, 0x64646464u, 0x4140)), bias), s2));
  hi = h2_bits(__hmul2(__hsub2(bits_h2(__byte_perm(u, 0x64646464u, 0x4342)), bias), s2));
}

// The cp.async copies of a tile of KT q8_0 head rows of D values from the K and V pools (kp, vp;
// row byte offsets offs[key], -1: zeros) into rows `pitch` bytes apart at dk and dv (16-byte
// aligned), by the threads tid = 0 .. n_threads - 1: each takes 16-byte chunks idx = tid,
// tid + n_threads, ... of the KT (D + D / 16) / 16. The caller commits the group.
template <int D, int KT>
__device__ __forceinline__ void q8_tile_copy(const uint8_t* kp, const uint8_t* vp, const int64_t* offs, uint8_t* dk,
                                             uint8_t* dv, int pitch, int tid, int n_threads) {
  constexpr int CH = (D + D / 16) / 16;
  for (int idx = tid; idx < KT * CH; idx += n_threads) {
    const int key = idx / CH, ch = idx - key * CH;
    const int64_t off = offs[key];
    const int64_t src = off >= 0 ? off + ch * 16 : 0;
    const int nb = off >= 0 ? 16 : 0;
    cp_async16(dk + key * pitch + ch * 16, kp + src, nb);
    cp_async16(dv + key * pitch + ch * 16, vp + src, nb);
  }
}

// A tile of n_keys q8_0 head rows of D values (raw: n_keys rows of D + D / 16 bytes, one after
// another, 16-byte aligned: D % 256 == 0) as f16 rows of `stride` halves (16-byte aligned) in
// dst, by the threads tid = 0 .. n_threads - 1 of the block, 16 values a step.
// swap_stores: a thread whose unit u has bit 2 set writes the upper 8 values first, so that
// each quarter-warp's 16-byte stores fall in 8 distinct 4-bank groups (without it, units 4
// apart hit the same banks: 2-way conflicts). Same values, same places.
template <int D>
__device__ __forceinline__ void q8_tile_to_f16(const uint8_t* raw, __half* dst, int stride, int n_keys, int tid,
                                               int n_threads, bool swap_stores = false) {
  constexpr int kRowBytes = D + D / 16, kUnits = D / 16;
  static_assert(D % 256 == 0, "16-byte aligned q8_0 rows");
  for (int idx = tid; idx < n_keys * kUnits; idx += n_threads) {
    const int key = idx / kUnits, u = idx % kUnits;
    const uint8_t* row = raw + key * kRowBytes;
    uint4 q = *reinterpret_cast<const uint4*>(row + u * 16);
    const uint32_t sb = reinterpret_cast<const uint16_t*>(row + D)[u >> 1];
    const __half2 s2 = bits_h2(sb | (sb << 16));
    const int sw = swap_stores ? (u >> 2) & 1 : 0;  // a: values 8 sw .. 8 sw + 7, stored first
    if (sw) {
      const uint4 r = q;
      q = make_uint4(r.z, r.w, r.x, r.y);
    }
    uint4 a, b;
    q8x4_to_f16x4(q.x, s2, a.x, a.y);
    q8x4_to_f16x4(q.y, s2, a.z, a.w);
    q8x4_to_f16x4(q.z, s2, b.x, b.y);
    q8x4_to_f16x4(q.w, s2, b.z, b.w);
    uint4* o = reinterpret_cast<uint4*>(dst + key * stride + u * 16);
    o[sw] = a;
    o[1 - sw] = b;
  }
}

}  // namespace gs::cuda
