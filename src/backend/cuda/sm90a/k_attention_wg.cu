// Prefill attention at head_dim 512 on warpgroup MMA (attention_wg.h). The flash-attention
// loop of k_attention.cu's 64-row kernel (online softmax over 32-key tiles, K/V tiles through
// a two-stage cp.async ring, segments per sequence, KV splits on the absolute tile grid), with
// its products on wgmma in the FlashAttention-3 manner (Shah et al., 2024):
//   - 256 threads: two warpgroups. Warpgroup h owns head_dim columns [256 h, 256 h + 256).
//     Warp w of a group holds rows 16 w .. 16 w + 15 (the wgmma accumulator layout, which is
//     mma.sync's m16n8 layout repeated along N: k_wgmma.cuh).
//   - S = Q K^T: each warpgroup multiplies its half of head_dim (16 steps of m64n32k16, Q and
//     K both from shared memory), and the two partial S are summed through shared memory;
//     both groups then run the same online softmax on the same sums (float addition
//     commutes), so both hold the same P, m and l.
//   - O += P V: P, rounded to f16, stays in registers as the A operand (mma.sync's A layout);
//     V is the MN-major B operand; 2 steps of m64n256k16 a tile, 128 f32 accumulators a thread.
// Shared memory holds Q, K and V as no-swizzle core matrices (k_wgmma.cuh; K and V in other
// layouts in the forms row and swizzle, WgLayout): the 16-byte chunk
// of 8 consecutive head_dim values of one row (query or key) is one core-matrix row; core
// matrices lie 128 B apart along head_dim and 8 KiB apart along rows. One layout serves both
// products: for S a K tile is read with head_dim as K (leading 128 B, stride 8 KiB); for P V a
// V tile with keys as K (leading 8 KiB, stride 128 B).
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/k_attn_common.cuh"
#include "backend/cuda/k_bulk.cuh"
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_pages.cuh"
#include "backend/cuda/k_tensor_map.cuh"
#include "backend/cuda/sm90a/attention_wg.h"
#include "backend/cuda/sm90a/k_wgmma.cuh"

namespace gs::cuda {
namespace {

constexpr int kD = 512;          // head_dim
constexpr int kKT = 32;          // key positions a tile
constexpr int kRows = 64;        // query rows a CTA
constexpr int kThreads = 256;    // two warpgroups
constexpr int kStages = 2;       // K/V tiles in flight
constexpr int kNTS = kKT / 8;    // 8-key blocks of S a warp holds
constexpr int kHalf = kD / 2;    // head_dim columns a warpgroup owns
constexpr uint32_t kCore = 128;  // bytes of a core matrix
constexpr uint32_t kRowBlock = (kD / 8) * kCore;  // 8 KiB: between Q's core matrices 8 rows apart
constexpr uint32_t kQBytes = (kRows / 8) * kRowBlock;   // 64 KiB

// How a tile's products are waited for (GS_WG_FORM): kFormWait waits for each at once;
// kFormDefer lets a tile's P V run on while the next tile's barrier, V copy and S product are
// issued (the S product's wait lands both); kFormPipe issues the next tile's S before this
// tile's softmax, so that the tensor cores compute it while the softmax runs (FlashAttention-3's
// intra-warpgroup overlap; two S exchange buffers, one barrier a tile, K/V copies one tile
// ahead; o is rescaled after the S product lands, so that no accumulator is touched while a
// wgmma is in flight). kFormRow and kFormSwizzle are kFormDefer with the K/V tiles copied by
// whole 128-byte pieces of a key row (WgLayout). kFormTma is kFormSwizzle with each tile
// brought in by the tensor memory accelerator: one thread issues 8 boxes of 64 head_dim values
// x 32 keys a tile (the 128-byte swizzle is TMA's own), completing on an mbarrier per stage,
// instead of 8 cp.async a thread (WgMaps).
constexpr int kFormWait = 0, kFormDefer = 1, kFormPipe = 2, kFormRow = 3, kFormSwizzle = 4, kFormTma = 5;

// The TMA form's tensor maps: each pool as a 2-D tensor of f16, n_head_kv * 512 values a row
// and n_slots rows, boxes of 64 x 32 in the 128-byte swizzle (encode_kv_map). A tile's 32 keys
// are 32 consecutive slots: tiles start at multiples of 32 positions, and a page of a multiple
// of 32 positions maps consecutive positions to consecutive slots (k_pages.cuh).
struct WgMaps {
  CUtensorMap k, v;
};

// Dynamic shared memory of form kForm: Q, the K ring, the V ring, the partial S exchange
// buffers (each [8 warps][kNTS][32] float4; two in kFormPipe) and the KV row offsets of the
// tiles in flight ([kStages + 1][kKT] int64, each slot in offs_index order).
// K and V tiles are core-matrix operands too, with core matrices kChunkStride bytes apart along
// head_dim and kKeyBlock bytes apart along keys (8 keys). kFormRow pads kChunkStride to 144
// bytes: a quarter warp then copies 128 contiguous bytes of one key (8 chunks) into 8 core
// matrices that lie in 8 different bank groups (at 128 bytes they would share one: an 8-way
// conflict); the others copy 4 keys x 32 bytes a quarter warp into unpadded tiles.
// kFormSwizzle instead lays K and V tiles out in wgmma's 128-byte swizzle (PTX ISA, "Shared
// Memory Matrix Layout", canonical layouts): the 64 head_dim values [64 s, 64 s + 64) of the
// tile's 32 keys form block s (4 KiB, 1024-byte aligned), key r's 128 bytes at 128 r in it,
// its 16-byte chunk c stored at chunk c ^ (r % 8). A quarter warp then copies 128 contiguous
// bytes of one key into one whole 128-byte line of shared memory. (Measured in the
// twenty-eighth session: cp.async's sectors and shared-memory wavefronts follow the shared
// side too; 16-byte pieces scattered across core matrices cost 2 times the sectors at any map.)
template <int kForm>
struct WgLayout {
  static constexpr bool kRowMap = kForm == kFormRow;
  static constexpr bool kTma = kForm == kFormTma;
  static constexpr bool kSwizzle = kForm == kFormSwizzle || kTma;
  static constexpr size_t kAlign = kSwizzle ? 1024 : 0;  // slack to align the base to 1024 bytes
  static constexpr uint32_t kChunkStride = kRowMap ? 144 : kCore;
  static constexpr uint32_t kKeyBlock = (kD / 8) * kChunkStride;
  static constexpr uint32_t kTileBytes = (kKT / 8) * kKeyBlock;  // one K or V tile
  static constexpr int kXBufs = kForm == kFormPipe ? 2 : 1;
  static constexpr size_t kK = kQBytes;
  static constexpr size_t kV = kK + kStages * kTileBytes;
  static constexpr size_t kX = kV + kStages * kTileBytes;
  static constexpr size_t kOff = kX + kXBufs * 16ull * 8 * kNTS * 32;
  static constexpr size_t kTotal = kOff + 8ull * (kStages + 1) * kKT + kAlign;
  // With the kernel's static tables: rows 6 x 64 int, the TMA barriers and flags, tile_base.
  static_assert(kTotal + 6 * kRows * 4 + 2 * kStages * (8 + 4) + (kStages + 1) * 8 <= 232448, "one CTA an SM");
  static_assert(!kSwizzle || (kK % 1024 == 0 && kTileBytes % 4096 == 0), "swizzle atoms 1024-byte aligned");
  static_assert(kChunkStride % 16 == 0 && kK % 16 == 0 && kTileBytes % 16 == 0, "core matrices 16-byte aligned");
};

// Where a tile's key `key` has its KV row offset within an Offs slot: one copying thread
// reads keys kq, kq + 4, ..., kq + 28 (below).
__device__ __forceinline__ int offs_index(int key) { return kv_offs_index<4, kKT / 4>(key); }

// Byte offset of element (row, col) in a core-matrix operand of kD columns.
__device__ __forceinline__ uint32_t cm_offset(int row, int col) {
  return (row / 8) * kRowBlock + (col / 8) * kCore + (row % 8) * 16 + (col % 8) * 2;
}

template <int kForm>
__global__ void __launch_bounds__(kThreads, 1)
    attn_wg_kernel(AttnParams p, int n_splits, float* __restrict__ partial, const __grid_constant__ WgMaps maps) {
  GS_PDL_ENTRY();
  using L = WgLayout<kForm>;
  constexpr bool kDefer = kForm == kFormDefer || kForm == kFormRow || kForm == kFormSwizzle || kForm == kFormTma;
  constexpr uint32_t kCS = L::kChunkStride, kKB = L::kKeyBlock;
  extern __shared__ __align__(128) uint8_t smem[];
  // The swizzle's pattern repeats on 1024-byte boundaries of the shared address.
  uint8_t* const sm = smem + (L::kAlign ? (L::kAlign - (wg::smem_addr(smem) % L::kAlign)) % L::kAlign : 0);
  uint8_t* Qs = sm;
  uint8_t* Ks = sm + L::kK;
  uint8_t* Vs = sm + L::kV;
  float4* Xs = reinterpret_cast<float4*>(sm + L::kX);
  int64_t* Offs = reinterpret_cast<int64_t*>(sm + L::kOff);
  __shared__ int r_tok[kRows], r_head[kRows], r_lo[kRows], r_hi[kRows], r_seq[kRows], r_lead[kRows];
  // Per Offs slot: the tile's key-0 row offset where its 32 keys are consecutive rows of the
  // pool, all mapped and in the segment (the copies then need no per-key offset), else -1.
  __shared__ int64_t tile_base[kStages + 1];
  // kFormTma: the K stages' barriers, then the V stages'; and per barrier whether its tile was
  // mapped (written by the issuing thread before its arrival, read after the wait).
  __shared__ uint64_t tma_bar[2 * kStages];
  __shared__ int tma_mapped[2 * kStages];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int h = warp / 4, rg = warp % 4;  // warpgroup (half of head_dim), row group (16 rows)
  const int n_kv = p.kv.n_head_kv;
  const RowMap rm = row_map(p.n_head, n_kv, kRows);
  const int j = blockIdx.y, split = blockIdx.z;

  if constexpr (L::kTma) {
    if (tid == 0) {
      for (int b = 0; b < 2 * kStages; ++b) mbar_init(&tma_bar[b], 1);
      mbar_init_fence();
      tmap_prefetch(&maps.k);
      tmap_prefetch(&maps.v);
    }
  }
  load_cta_rows<kRows>(p, rm, j, r_tok, r_head, r_seq, r_lo, r_hi, r_lead);
  // Q (times scale) in f16, zeros for rows without a token.
  load_q_f16<kD, kThreads>(p, r_tok, r_head, kRows, [&](int r, int d) { return reinterpret_cast<uint2*>(Qs + cm_offset(r, d)); });
  wg::fence_proxy_async();  // Q is read by wgmma (the async proxy)
  __syncthreads();

  float o[128];  // rows 16 rg + g (+ 8), columns kHalf h + 8 i + 2 t (+ 1): o[4 i .. 4 i + 3]
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  uint32_t tma_parity = 0;  // kFormTma: bit b, the parity of barrier b's next phase to wait for
  const __half* kpool = static_cast<const __half*>(p.kv.k);
  const __half* vpool = static_cast<const __half*>(p.kv.v);
  const int64_t kv_width = static_cast<int64_t>(n_kv) * kD;
  const int row_a = rg * 16 + g, row_b = row_a + 8;  // this thread's two rows
  const uint32_t q_base = wg::smem_addr(Qs) + h * (kHalf / 8) * kCore;
  const uint32_t k_base = wg::smem_addr(Ks) + h * (kHalf / 8) * (L::kSwizzle ? 512 : kCS);
  const uint32_t v_base = wg::smem_addr(Vs) + h * (kHalf / 8) * (L::kSwizzle ? 512 : kCS);
  // The descriptors of K's 16 head_dim values [16 ks, 16 ks + 16) of this warpgroup's half, and
  // of V's keys [16 kk, 16 kk + 16), in the K or V stage at byte st. Swizzled: K is K-major
  // (the stride byte offset 1024 between 8-key groups; the leading one unused), its k-step the
  // start address within the 128-byte row; V is MN-major (the leading byte offset 4096 between
  // 64-column blocks, the stride byte offset 1024 between 8-key groups; PTX ISA, "Leading /
  // Stride Dimension Byte Offset").
  auto k_desc = [&](uint32_t st, int ks) {
    return L::kSwizzle ? wg::smem_desc_sw128(k_base + st + (ks / 4) * 4096 + (ks % 4) * 32, 16, 1024)
                       : wg::smem_desc(k_base + st + ks * 2 * kCS, kCS, kKB);
  };
  auto v_desc = [&](uint32_t st, int kk) {
    return L::kSwizzle ? wg::smem_desc_sw128(v_base + st + kk * 2 * 1024, 4096, 1024)
                       : wg::smem_desc(v_base + st + kk * 2 * kKB, kKB, kCS);
  };

  for (int lead = 0; lead < kRows; ++lead) {
    if (!r_lead[lead]) continue;  // uniform: one segment per sequence present in the CTA
    const int seq = r_seq[lead];
    int lo_seg, hi_seg;
    segment_range<kRows>(seq, r_tok, r_seq, r_lo, r_hi, lo_seg, hi_seg);
    int t_first = 0, n_tiles = 0;
    split_tiles(lo_seg, hi_seg, n_splits, split, kKT, t_first, n_tiles);
    if (n_tiles == 0) continue;  // uniform
    auto tile_pos = [&](int ti) { return (t_first + ti * n_splits) * kKT; };
    int lo_rr[2], hi_rr[2];
    segment_row_ranges(seq, row_a, row_b, true, r_tok, r_seq, r_lo, r_hi, lo_rr, hi_rr);

    auto row_offset = [&](int ti) -> int64_t {  // element offset of tile ti's key tid, -1: zeros
      const int pos = tile_pos(ti) + tid;
      if (pos < lo_seg || pos > hi_seg) return -1;
      const int64_t sl = kv_slot(p.pages, seq, pos, p.kv.n_slots);
      return sl >= 0 ? sl * kv_width + static_cast<int64_t>(j) * kD : -1;
    };
    // Warp 0 (every lane, tid = key): key tid's row offset `off` of tile `tile` into its Offs
    // slot, and the slot's tile_base (contiguous_tile_base).
    auto put_offs = [&](int tile, int64_t off) {
      const int sl = tile % (kStages + 1);
      Offs[sl * kKT + offs_index(tid)] = off;
      const int64_t base = contiguous_tile_base(off, tid, kv_width);
      if (tid == 0) tile_base[sl] = base;
    };
    // Copies tile `tile` of a pool into stage tile % kStages of its ring, from the row offsets
    // in slot tile % (kStages + 1) of Offs (or, where the slot's tile_base is set, from that one
    // offset: measured on an H100, pp4096 at 131072 1.89 against 2.02 s), as one cp.async group
    // (an empty one past the last tile). Thread tid copies the 16-byte chunk ch of keys 4 k + kq, k = 0..7. kFormRow:
    // ch = tid % 64, kq = tid / 64, so that a quarter warp reads 128 contiguous bytes of one key
    // (WgLayout). The others: ch = 2 (tid / 8) + tid % 2, kq = (tid / 2) % 4, so that the 8
    // threads of a quarter warp read 4 keys x 32 contiguous bytes (the two halves of a sector
    // in one request) and write to 4 core-matrix rows (a 2-way bank conflict at most).
    // Measured (twenty-seventh session, Nsight Compute): with the
    // 8 threads on one chunk of 8 keys, each 16 bytes was its own sector request (32 sectors a
    // warp instruction against 16) and its own shared-memory write (64 wavefronts against 8),
    // which held L2 at 83% of its peak.
    // The thread's 8 row offsets are read before its first copy (offs_index). Read one before
    // each copy, each read had waited for the copy before it (~45% of the stall samples); read
    // ahead, the stalls moved to the next wait and the time did not change (twenty-eighth
    // session: the copies' own cost is the bound, WgLayout).
    // kFormSwizzle: ch = tid % 64 as kFormRow (chunk tid % 8 of block (tid / 8) % 8), kq = tid / 64.
    static_assert(kThreads == 256 && kD / 8 == 64 && kKT == 32, "copy map");
    const int kq = L::kRowMap || L::kSwizzle ? tid / 64 : (tid / 2) % 4;
    const int ch = L::kRowMap || L::kSwizzle ? tid % 64 : 2 * (tid / 8) + tid % 2;
    // Byte offset of this thread's chunk of key 4 k + kq in a tile, k = 0 or 1 (+ 1024 (k / 2)).
    uint32_t dst_k[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int key = 4 * k + kq;
      dst_k[k] = L::kSwizzle ? static_cast<uint32_t>((ch / 8) * 4096 + key * 128 + (((ch % 8) ^ key) * 16))
                             : static_cast<uint32_t>(ch) * kCS + static_cast<uint32_t>(key) * 16;
    }
    constexpr uint32_t kKeyBlockBytes = L::kSwizzle ? 1024 : kKB;  // between keys 8 apart
    // This thread's chunk of key kq of a contiguous tile, from its key 0; keys 4 apart.
    const int64_t thr_off = static_cast<int64_t>(kq) * kv_width + ch * 8, key4 = 4 * kv_width;
    auto issue = [&](const __half* pool, uint8_t* ring, int tile) {
      if (tile < n_tiles && tile_base[tile % (kStages + 1)] >= 0) {  // uniform
        // One offset for the tile: ~20 integer instructions a copy fewer (the offsets' loads,
        // their sign tests, the zero fill's size and select: the kernel is bound by issue).
        const __half* src = pool + tile_base[tile % (kStages + 1)] + thr_off;
        uint8_t* dst = ring + (tile % kStages) * L::kTileBytes;
#pragma unroll
        for (int k = 0; k < kKT / 4; ++k) cp_async16(dst + (k / 2) * kKeyBlockBytes + dst_k[k % 2], src + k * key4, 16);
      } else if (tile < n_tiles) {
        const auto* offs = reinterpret_cast<const longlong2*>(Offs + (tile % (kStages + 1)) * kKT + offs_index(kq));
        int64_t off_k[kKT / 4];
#pragma unroll
        for (int i = 0; i < kKT / 8; ++i) {
          const longlong2 v = offs[i];
          off_k[2 * i] = v.x;
          off_k[2 * i + 1] = v.y;
        }
        uint8_t* dst = ring + (tile % kStages) * L::kTileBytes;
#pragma unroll
        for (int k = 0; k < kKT / 4; ++k) {
          const int64_t off = off_k[k];
          // Key 4 k + kq is key (4 k + kq) % 8 of the keys' block k / 2.
          cp_async16(dst + (k / 2) * kKeyBlockBytes + dst_k[k % 2], pool + (off >= 0 ? off + ch * 8 : 0), off >= 0 ? 16 : 0);
        }
      }
      cp_async_commit();
    };
    static_assert(kStages == 2, "wait counts");

    // This warpgroup's partial S of the tile in K stage `st` (issued, not waited for).
    auto s_issue = [&](uint32_t st, float (&sacc)[4 * kNTS]) {
      wg::fence();
#pragma unroll
      for (int ks = 0; ks < kHalf / 16; ++ks)
        wg::mma_m64n32k16_ss<0>(sacc, wg::smem_desc(q_base + ks * 2 * kCore, kCore, kRowBlock),
                                k_desc(st, ks), ks > 0);
      wg::commit();
    };
    // A landed partial S into s and into exchange buffer xb for the other warpgroup.
    auto s_publish = [&](const float (&sacc)[4 * kNTS], float (&s)[kNTS][4], int xb) {
      float4* xw = Xs + xb * (8 * kNTS * 32) + warp * kNTS * 32 + lane;
#pragma unroll
      for (int i = 0; i < kNTS; ++i) {
        s[i][0] = sacc[4 * i];
        s[i][1] = sacc[4 * i + 1];
        s[i][2] = sacc[4 * i + 2];
        s[i][3] = sacc[4 * i + 3];
        xw[i * 32] = make_float4(s[i][0], s[i][1], s[i][2], s[i][3]);
      }
    };
    // The other half's S from buffer xb added (both warpgroups get the same sums: float
    // addition commutes), the online softmax of this thread's two rows over the tile at pb,
    // and P as the A operand of the two 16-key steps of P V; corr: the factors o must be
    // rescaled by (rescale_o) before the P V.
    // own_from_xs: this half's S is read back from the exchange buffer (its bits) instead of
    // being kept in s across the barrier (fewer registers live in the pipe form).
    auto softmax = [&](float (&s)[kNTS][4], int xb, int pb, uint32_t (&a)[2][4], float (&corr)[2], bool own_from_xs) {
      const float4* xp = Xs + xb * (8 * kNTS * 32) + ((1 - h) * 4 + rg) * kNTS * 32 + lane;
      const float4* xo = Xs + xb * (8 * kNTS * 32) + warp * kNTS * 32 + lane;
#pragma unroll
      for (int i = 0; i < kNTS; ++i) {
        if (own_from_xs) {
          const float4 u = xo[i * 32];
          s[i][0] = u.x;
          s[i][1] = u.y;
          s[i][2] = u.z;
          s[i][3] = u.w;
        }
        const float4 v = xp[i * 32];
        s[i][0] += v.x;
        s[i][1] += v.y;
        s[i][2] += v.z;
        s[i][3] += v.w;
      }
      online_softmax_rows<kNTS, true>(s, pb, t, lo_rr, hi_rr, m_r, l_r, corr);
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) {
        a[kk][0] = pack_f32x2(s[2 * kk][0], s[2 * kk][1]);
        a[kk][1] = pack_f32x2(s[2 * kk][2], s[2 * kk][3]);
        a[kk][2] = pack_f32x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        a[kk][3] = pack_f32x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
      }
    };
    // o scaled by softmax's corr (o must have landed: no wgmma in flight writes it, and none
    // may be in flight across this for ptxas to keep the wgmmas asynchronous).
    auto rescale_o = [&](const float (&corr)[2]) {
      if (__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) {
#pragma unroll
        for (int i = 0; i < 32; ++i) {
          o[4 * i] *= corr[0];
          o[4 * i + 1] *= corr[0];
          o[4 * i + 2] *= corr[1];
          o[4 * i + 3] *= corr[1];
        }
      }
    };
    // O += P V for the tile in V stage `st` (issued and committed, not waited for).
    auto pv_issue = [&](uint32_t st, const uint32_t (&a)[2][4]) {
      wg::fence();
#pragma unroll
      for (int kk = 0; kk < 2; ++kk)
        wg::mma_m64n256k16_rs<1>(o, a[kk], v_desc(st, kk), true);
      wg::commit();
    };
    auto stage = [](int ti) { return static_cast<uint32_t>(ti % kStages) * L::kTileBytes; };

    if constexpr (L::kTma) {
      // Tile `tile` of a pool into its stage of `ring` by TMA, on barrier `b0 + tile % kStages`
      // (thread 0; nothing past the last tile). An unmapped tile gets a bare arrival and is
      // zeroed by tma_wait.
      auto tma_issue = [&](const CUtensorMap* map, uint8_t* ring, int b0, int tile) {
        if (tid != 0 || tile >= n_tiles) return;
        const int b = b0 + tile % kStages;
        const int64_t slot = kv_slot(p.pages, seq, tile_pos(tile), p.kv.n_slots);
        tma_mapped[b] = slot >= 0;
        if (slot < 0) {
          mbar_arrive(&tma_bar[b]);
          return;
        }
        mbar_arrive_expect_tx(&tma_bar[b], L::kTileBytes);
        uint8_t* dst = ring + (tile % kStages) * L::kTileBytes;
#pragma unroll
        for (int s = 0; s < kD / 64; ++s)
          bulk_tensor_2d_g2s(dst + s * 4096, map, j * kD + 64 * s, static_cast<int>(slot), &tma_bar[b]);
      };
      // Waits for tile `tile` (every thread), then zeroes its keys outside [lo_seg, hi_seg]
      // (all 32 where it was not mapped): they were read from slots that may hold anything,
      // and a V row of NaN would spoil P V even where P is 0. Key r is the 128-byte line r of
      // each 4 KiB block, whatever the swizzle does within the line.
      auto tma_wait = [&](uint8_t* ring, int b0, int tile) {
        const int b = b0 + tile % kStages;
        mbar_wait(&tma_bar[b], (tma_parity >> b) & 1u);
        tma_parity ^= 1u << b;
        const int tp = tile_pos(tile);
        const int lo_k = lo_seg - tp, hi_k = hi_seg - tp;
        const bool mapped = tma_mapped[b] != 0;
        if (mapped && lo_k <= 0 && hi_k >= kKT - 1) return;  // uniform
        uint8_t* t = ring + (tile % kStages) * L::kTileBytes;
        for (int i = tid; i < kKT * (kD / 8); i += kThreads) {
          const int r = i / (kD / 8), c = i % (kD / 8);
          if (!mapped || r < lo_k || r > hi_k)
            *reinterpret_cast<uint4*>(t + (c / 8) * 4096 + r * 128 + (c % 8) * 16) = make_uint4(0u, 0u, 0u, 0u);
        }
        wg::fence_proxy_async();  // the zeros are read by wgmma
      };
      // As kFormDefer: K_0 V_0 K_1 before the loop; iteration ti waits for K_ti before B1 and
      // for V_ti before B2, then issues V_{ti+1} and K_{ti+2} into the stages that P V_{ti-1}
      // and S_ti read (both landed: each warpgroup waited for them before B2). The barrier
      // first: a previous segment's last P V may still read a V stage in the other warpgroup.
      __syncthreads();
      tma_issue(&maps.k, Ks, 0, 0);
      tma_issue(&maps.v, Vs, kStages, 0);
      tma_issue(&maps.k, Ks, 0, 1);
      for (int ti = 0; ti < n_tiles; ++ti) {
        tma_wait(Ks, 0, ti);
        __syncthreads();  // B1: K_ti landed (and zeroed where it must be)
        float sacc[4 * kNTS], s[kNTS][4];
        s_issue(stage(ti), sacc);
        wg::wait<0>();  // also the previous tile's P V
        wg::fence_operand(sacc);
        wg::fence_operand(o);
        s_publish(sacc, s, 0);
        tma_wait(Vs, kStages, ti);
        __syncthreads();  // B2: V_ti landed; every warpgroup is done with K_ti and P V_{ti-1} and wrote its S
        tma_issue(&maps.v, Vs, kStages, ti + 1);
        tma_issue(&maps.k, Ks, 0, ti + 2);
        uint32_t a[2][4];
        float corr[2];
        softmax(s, 0, tile_pos(ti), a, corr, false);
        rescale_o(corr);
        pv_issue(stage(ti), a);
      }
      wg::wait<0>();  // before the next segment's prologue refills the V ring
      wg::fence_operand(o);
    } else if constexpr (kForm == kFormPipe) {
      // The next tile's S is computed while this tile's softmax runs (FlashAttention-3's
      // intra-warpgroup overlap). Loads: K_0 V_0 K_1 before the loop; iteration ti issues
      // K_{ti+2} and V_{ti+1} after its barrier, and waits for all copies (K_{ti+1}, V_ti)
      // before it. Offsets: tile t in slot t % 3, tile ti + 3's written in iteration ti.
      if (tid < kKT)
        for (int ti = 0; ti < 3; ++ti) put_offs(ti, ti < n_tiles ? row_offset(ti) : -1);
      __syncthreads();
      issue(kpool, Ks, 0);
      issue(vpool, Vs, 0);
      issue(kpool, Ks, 1);
      float sacc[4 * kNTS];
      cp_async_wait<2>();  // K_0
      wg::fence_proxy_async();
      __syncthreads();
      s_issue(stage(0), sacc);
      wg::wait<0>();
      wg::fence_operand(sacc);
      {
        float s[kNTS][4];
        s_publish(sacc, s, 0);
      }
      for (int ti = 0; ti < n_tiles; ++ti) {
        // P V of tile ti - 1 (nothing in flight at ti = 0). The waits are unconditional: on a
        // path that ptxas sees skip one, it serializes every wgmma (C7514).
        wg::wait<0>();
        wg::fence_operand(o);
        cp_async_wait<0>();  // K_{ti+1}, V_ti
        wg::fence_proxy_async();
        __syncthreads();  // S_ti of both halves published; every warp is done with K_ti and V_{ti-1}
        issue(kpool, Ks, ti + 2);
        issue(vpool, Vs, ti + 1);
        if (tid < kKT && ti + 3 < n_tiles) put_offs(ti + 3, row_offset(ti + 3));
        const bool next = ti + 1 < n_tiles;
        if (next) s_issue(stage(ti + 1), sacc);
        uint32_t a[2][4];
        float corr[2], s[kNTS][4];
        softmax(s, ti % 2, tile_pos(ti), a, corr, true);  // while the tensor cores compute S_{ti+1}
        wg::wait<0>();  // S_{ti+1}
        wg::fence_operand(sacc);
        rescale_o(corr);
        pv_issue(stage(ti), a);  // runs on until the next iteration's first wait
        if (next) s_publish(sacc, s, (ti + 1) % 2);
      }
      wg::wait<0>();
      wg::fence_operand(o);
    } else {
      // Copies K_0 V_0 K_1 before the loop; K_{ti+2} at B2 of tile ti, V_{ti+1} at B1 or B2
      // (below). At B1 all but the 2 newest groups have landed (K_ti among them). kFormDefer
      // issues V_{ti+1} before K_{ti+2}, so that at B2 of tile ti + 1 it waits for V_{ti+1}
      // alone (all but the newest group), and K_{ti+2} has until B1 of tile ti + 2.
      if (tid < kKT)
        for (int ti = 0; ti < kStages; ++ti) put_offs(ti, row_offset(ti));
      __syncthreads();
      for (int ti = 0; ti < kStages; ++ti) {
        issue(kpool, Ks, ti);
        if (ti + 1 < kStages) issue(vpool, Vs, ti);
      }
      // kFormWait issues V_{ti+1} at B1 of tile ti, when every P V has landed. kFormDefer issues
      // it at B2, because at B1 the previous tile's P V, which reads the stage V_{ti+1} goes
      // to, may still be in flight. (Issued at B1, the emulator's eager mode, which reads
      // wgmma operands at landing, failed.)
      for (int ti = 0; ti < n_tiles; ++ti) {
        cp_async_wait<2>();
        wg::fence_proxy_async();  // the landed tile is read by wgmma
        __syncthreads();          // B1: K_ti landed; every warp is done with V_{ti-1} (kFormWait)
        if constexpr (kForm == kFormWait) issue(vpool, Vs, ti + kStages - 1);
        int64_t next_off = -1;
        if (tid < kKT && ti + kStages < n_tiles) next_off = row_offset(ti + kStages);
        float sacc[4 * kNTS], s[kNTS][4];
        s_issue(stage(ti), sacc);
        wg::wait<0>();  // with kFormDefer also the previous tile's P V
        wg::fence_operand(sacc);
        if constexpr (kDefer) wg::fence_operand(o);
        s_publish(sacc, s, 0);
        if (tid < kKT && ti + kStages < n_tiles) put_offs(ti + kStages, next_off);
        if constexpr (kForm == kFormWait) cp_async_wait<2>();
        else cp_async_wait<1>();
        wg::fence_proxy_async();
        __syncthreads();  // B2: V_ti landed; every warpgroup is done with K_ti (and P V_{ti-1}) and wrote its S
        if constexpr (kDefer) issue(vpool, Vs, ti + kStages - 1);
        issue(kpool, Ks, ti + kStages);
        uint32_t a[2][4];
        float corr[2];
        softmax(s, 0, tile_pos(ti), a, corr, false);
        rescale_o(corr);
        pv_issue(stage(ti), a);
        if constexpr (kForm == kFormWait) {
          wg::wait<0>();
          wg::fence_operand(o);
        }
      }
      if constexpr (kDefer) {  // before the next segment's prologue refills the V ring
        wg::wait<0>();
        wg::fence_operand(o);
      }
    }
  }

  const float(&o4)[32][4] = *reinterpret_cast<const float(*)[32][4]>(o);
  store_thread_rows<kD>(p, partial, n_splits, split, r_tok, r_head, row_a, row_b, o4, m_r, l_r, h * kHalf, t,
                        h == 0 && t == 0);
}

}  // namespace

bool attention_wg_supported(const AttnParams& p) { return p.kv.f16 && p.head_dim == kD && p.kv.head_dim == kD; }

cudaError_t attention_wg_prepare() {
  cudaError_t e = cudaSuccess;
  auto raise = [&](auto* k, size_t bytes) {
    if (e == cudaSuccess) e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  };
  raise(attn_wg_kernel<kFormWait>, WgLayout<kFormWait>::kTotal);
  raise(attn_wg_kernel<kFormDefer>, WgLayout<kFormDefer>::kTotal);
  raise(attn_wg_kernel<kFormPipe>, WgLayout<kFormPipe>::kTotal);
  raise(attn_wg_kernel<kFormRow>, WgLayout<kFormRow>::kTotal);
  raise(attn_wg_kernel<kFormSwizzle>, WgLayout<kFormSwizzle>::kTotal);
  raise(attn_wg_kernel<kFormTma>, WgLayout<kFormTma>::kTotal);
  return e;
}

namespace {

// A pool of n_slots rows of `kv_width` f16 values as kFormTma reads it: boxes of 64 values (128
// bytes) x 32 rows, in the 128-byte swizzle, zeros outside (WgMaps). False where the driver
// cannot encode it (no TMA entry point, an unaligned pool).
bool encode_kv_map(CUtensorMap* m, const void* pool, int64_t kv_width, int64_t n_slots) {
  const EncodeTiledFn enc = encode_tiled();
  if (!enc) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kv_width), static_cast<cuuint64_t>(n_slots)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(kv_width) * 2};
  const cuuint32_t box[2] = {64, kKT};
  const cuuint32_t estr[2] = {1, 1};
  return enc(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(pool), dims, strides, box, estr,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace

void launch_attention_wg(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, kRows);
  const dim3 grid = attn_grid(p, rm, n_splits);
  // GS_WG_FORM=wait|defer|pipe|row|swizzle|tma (a measurement switch, read on every call;
  // default swizzle, the fastest measured: decision 0033, thirty-first session). tma falls back
  // to swizzle where its maps cannot be built or a page is not a whole number of 32-key tiles.
  const char* e = std::getenv("GS_WG_FORM");
  auto is = [&](const char* f) { return e && std::strcmp(e, f) == 0; };
  WgMaps maps{};
  const int64_t kv_width = static_cast<int64_t>(p.kv.n_head_kv) * kD;
  const bool tma = is("tma") && p.pages.page_size % kKT == 0 && encode_kv_map(&maps.k, p.kv.k, kv_width, p.kv.n_slots) &&
                   encode_kv_map(&maps.v, p.kv.v, kv_width, p.kv.n_slots);
  if (is("wait")) launch_k(attn_wg_kernel<kFormWait>, grid, kThreads, WgLayout<kFormWait>::kTotal, s, p, n_splits, partial, maps);
  else if (is("pipe")) launch_k(attn_wg_kernel<kFormPipe>, grid, kThreads, WgLayout<kFormPipe>::kTotal, s, p, n_splits, partial, maps);
  else if (is("row")) launch_k(attn_wg_kernel<kFormRow>, grid, kThreads, WgLayout<kFormRow>::kTotal, s, p, n_splits, partial, maps);
  else if (tma) launch_k(attn_wg_kernel<kFormTma>, grid, kThreads, WgLayout<kFormTma>::kTotal, s, p, n_splits, partial, maps);
  else if (is("defer"))
    launch_k(attn_wg_kernel<kFormDefer>, grid, kThreads, WgLayout<kFormDefer>::kTotal, s, p, n_splits, partial, maps);
  else launch_k(attn_wg_kernel<kFormSwizzle>, grid, kThreads, WgLayout<kFormSwizzle>::kTotal, s, p, n_splits, partial, maps);
}

}  // namespace gs::cuda
