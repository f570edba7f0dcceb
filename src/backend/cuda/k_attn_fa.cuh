// The 64-row tensor-core attention kernels' shape (FaCfg) and the math of one K/V tile that
// both of them run (k_attention.cu's attn_fa_kernel on f16 pools, k_attention_q8.cu's
// attn_fa_q8_kernel on q8_0 pools): the same products in the same order, so a q8_0 pool's
// rows differ from an f16 pool's only by the values its tiles hold.
//
// One CTA takes 64 query rows sharing a KV head (4 row groups of 16) and C warps per row group;
// warp (rg, c) owns rows [16 rg, 16 rg + 16) and head_dim columns [c Dc, c Dc + Dc), Dc = D / C,
// for both its share of S = Q K^T and its part of the output. With C = 1 a warp's S is
// complete; with C = 2 the two warps of a row group add their partial S through shared memory
// (fragment-native layout, no bank conflicts) and both run the same softmax.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cuda/k_attn_common.cuh"
#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

// D: head_dim; C: warps per row group; KT: key positions per tile; MINB: CTAs an SM it is
// sized for; Q8: q8_0 pools (decision 0035), whose head rows are kRawRow bytes.
template <int D_, int C_, int KT_, int MINB_, bool Q8_ = false>
struct FaCfg {
  static constexpr int D = D_, C = C_, KT = KT_, MINB = MINB_;
  static constexpr bool Q8 = Q8_;
  static constexpr int kRawRow = D + D / 16;       // bytes of a q8_0 head row
  static constexpr int kRawChunks = kRawRow / 16;  // its 16-byte chunks (D % 256 == 0)
  static constexpr int kRG = 4;                    // row groups of 16 rows
  static constexpr int kRows = 16 * kRG;           // query rows per CTA
  static constexpr int kWarps = kRG * C;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int Dc = D / C;              // head_dim columns per warp
  static constexpr int kStride = D + 8;         // halves per smem row (ldmatrix rows 16 B apart in banks)
  static constexpr int NTS = KT / 8;            // score n-tiles
  static constexpr int NTO = Dc / 8;            // output n-tiles per warp
  static constexpr int KQ = Dc / 16;            // S k-steps per warp
  static constexpr int kChunks = KT * (D / 8);  // 16-byte chunks of a K or V tile
  static constexpr size_t kTileBytes = 2ull * KT * kStride;  // one K or V tile: [KT][kStride] f16
  static constexpr int kMaxStages = 3;
  static_assert(D % (16 * C) == 0 && KT % 16 == 0 && NTO % 2 == 0, "tile shapes");
  static_assert(kChunks % kThreads == 0 && KT <= kThreads, "load split");
  static_assert(C == 1 || C == 2, "one or two warps per row group");
  // The copy of a K or V tile: thread tid copies chunk tid % (D / 8) of keys tid / (D / 8) +
  // kKeyStep k, k = 0 .. kCopies - 1. Within an Offs slot, the row offsets of those keys are
  // kCopies consecutive int64 (offs_index), read with 16-byte shared-memory loads before the
  // first copy rather than one before each (the wgmma kernel's profile showed those reads
  // waiting on the copy before them; measured here in the twenty-eighth session: no change,
  // 2869 against 2865 ms at pp4096 @ 131072).
  static constexpr int kKeyStep = kThreads / (D / 8);
  static constexpr int kCopies = KT / kKeyStep;
  static_assert(kThreads % (D / 8) == 0 && KT % kKeyStep == 0 && kCopies % 2 == 0, "copy map");
  __host__ __device__ static constexpr int offs_index(int key) { return kv_offs_index<kKeyStep, kCopies>(key); }
};

// The dynamic shared memory a CTA may use: an SM's shared memory (233472 B on sm_90) shared by
// MINB CTAs, each less the 1 KiB the hardware reserves a CTA and the 1536 B of row tables; at
// most sm_90's opt-in limit of a block (232448 B).
template <class Cfg>
constexpr size_t fa_smem_budget() {
  constexpr size_t kSmPerSm = 233472, kBlockMax = 232448, kReserved = 1024, kTables = 1536;
  constexpr size_t share = kSmPerSm / Cfg::MINB - kReserved;
  return (share < kBlockMax ? share : kBlockMax) - kTables;
}

// This warp's share of S = Q K^T for its 16 rows over a tile of KT keys (mma.sync m16n8k16
// layout: s[nt][2 rr + e] is row g + 8 rr, key 8 nt + 2 t + e), summed over its Dc columns.
// q_frag / k_frag: this lane's ldmatrix addresses of the warp's first Q column and of key 0's
// (f16 tiles of Cfg::kStride halves a row).
template <class Cfg>
__device__ __forceinline__ void fa_tile_scores(float (&s)[Cfg::NTS][4], const __half* q_frag, const __half* k_frag) {
#pragma unroll
  for (int i = 0; i < Cfg::NTS; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[i][e] = 0.f;
#pragma unroll
  for (int kq = 0; kq < Cfg::KQ; ++kq) {
    uint32_t a[4];
    ldmatrix_x4(a, q_frag + kq * 16);
#pragma unroll
    for (int np = 0; np < Cfg::NTS / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, k_frag + np * 16 * Cfg::kStride + kq * 16);
      mma_16816(s[2 * np], a[0], a[1], a[2], a[3], b[0], b[1]);
      mma_16816(s[2 * np + 1], a[0], a[1], a[2], a[3], b[2], b[3]);
    }
  }
}

// C = 2: the partner warp's partial S (xp: its lane's first float4 of the exchange buffer,
// NTS float4 32 apart) added to this warp's. Both warps of a pair get the same sums (float
// addition commutes): the same softmax, the same m and l.
template <class Cfg>
__device__ __forceinline__ void fa_add_partner(float (&s)[Cfg::NTS][4], const float4* xp) {
#pragma unroll
  for (int i = 0; i < Cfg::NTS; ++i) {
    const float4 v = xp[i * 32];
    s[i][0] += v.x;
    s[i][1] += v.y;
    s[i][2] += v.z;
    s[i][3] += v.w;
  }
}

// The online softmax of this warp's rows over the tile at key position pb (online_softmax_rows),
// s becoming P, and the output accumulators o scaled by the rows' corrections.
template <class Cfg>
__device__ __forceinline__ void fa_tile_softmax(float (&s)[Cfg::NTS][4], float (&o)[Cfg::NTO][4], int pb, int t,
                                                const int (&lo_rr)[2], const int (&hi_rr)[2], float (&m_r)[2],
                                                float (&l_r)[2]) {
  float corr[2];
  online_softmax_rows(s, pb, t, lo_rr, hi_rr, m_r, l_r, corr);
  if (__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) {
#pragma unroll
    for (int i = 0; i < Cfg::NTO; ++i) {
      o[i][0] *= corr[0];
      o[i][1] *= corr[0];
      o[i][2] *= corr[1];
      o[i][3] *= corr[1];
    }
  }
}

// O += P V over the tile: P from s (f32, rounded to f16 pairs), v_frag this lane's
// ldmatrix.trans address of key 0 in the warp's first output column.
template <class Cfg>
__device__ __forceinline__ void fa_tile_pv(float (&o)[Cfg::NTO][4], const float (&s)[Cfg::NTS][4], const __half* v_frag) {
#pragma unroll
  for (int kk = 0; kk < Cfg::KT / 16; ++kk) {
    const uint32_t a0 = pack_f32x2(s[2 * kk][0], s[2 * kk][1]);
    const uint32_t a1 = pack_f32x2(s[2 * kk][2], s[2 * kk][3]);
    const uint32_t a2 = pack_f32x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    const uint32_t a3 = pack_f32x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
    for (int np = 0; np < Cfg::NTO / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, v_frag + kk * 16 * Cfg::kStride + np * 16);
      mma_16816(o[2 * np], a0, a1, a2, a3, b[0], b[1]);
      mma_16816(o[2 * np + 1], a0, a1, a2, a3, b[2], b[3]);
    }
  }
}

// This lane's ldmatrix addresses in a CTA's Q rows and K / V tiles (f16, Cfg::kStride halves a
// row) for warp (rg, c): Q row group rg's columns c Dc.., key 0's columns c Dc.. of a tile.
template <class Cfg>
struct FaFrags {
  const __half* q;
  const __half* k;
  const __half* v;
  __device__ __forceinline__ FaFrags(const __half* Qs, const __half* Ks, const __half* Vs, int rg, int c, int lane)
      : q(Qs + (rg * 16 + (lane & 15)) * Cfg::kStride + c * Cfg::Dc + (lane >> 4) * 8),
        k(Ks + ((lane & 7) + ((lane >> 4) & 1) * 8) * Cfg::kStride + c * Cfg::Dc + ((lane >> 3) & 1) * 8),
        v(Vs + ((lane & 7) + ((lane >> 3) & 1) * 8) * Cfg::kStride + c * Cfg::Dc + ((lane >> 4) & 1) * 8) {}
};

}  // namespace gs::cuda
