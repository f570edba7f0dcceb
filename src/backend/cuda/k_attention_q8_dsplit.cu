// A q8_0 attention kernel at head_dim 512 that dequantizes into the mma operands' registers
// (decision 0035, addendum 2: "D-split"), for the full layers' decode and verify batches.
//
// The 64-row kernel's q8_0 form (k_attention_q8.cu) dequantizes each raw tile into f16 tiles in
// shared memory, and in a decode step its six row-less warps doing that set the tile's time
// (thirty-second session: 2.68 us a 32-key tile against 1.53 us for its bytes on an H100).
// Here every one of the CTA's 8 warps owns Dw = 64 of the 512 head_dim columns of all the CTA's
// query rows (up to 4 row groups of 16), and reads the raw int8 values straight into its
// operands:
//   S = Q K^T: each warp's partial sum over its 64 columns. K's B fragment comes from one
//     4-byte shared load a lane: the 16 columns of a k-step are taken in the order
//     4t, 4t+1 -> k 2t, 2t+1 and 4t+2, 4t+3 -> k 2t+8, 2t+9 (lane t = lane % 4), Q's A fragment
//     in the same order (a sum does not care about the order of its terms), and each value
//     becomes f16(q d) exactly as q8_tile_to_f16 makes it. The 8 partial tiles go to shared
//     memory; warp w adds those of rows 2w and 2w + 1 of each row group in warp order 0..7 and
//     runs their online softmax (16 lanes a row, 2 keys a lane), then writes P as the PV
//     product's A fragments and each row's correction for every warp to read.
//   O += P V: V's values stay integers (exact in f16) and each q8_0 block's scale d multiplies
//     P instead (P_b = f16(P) * d, per key and block). For that an n8 tile of outputs must lie in
//     one block: lane group g of tile jj of block nb holds column 32 nb + 4 g + jj of the warp's
//     64, from one 4-byte load a key row (4 keys a lane: 2t, 2t+1, 2t+8, 2t+9 of a k-step), and
//     the C fragment's columns are mapped back when the rows are written.
// No f16 tiles, no converter warps: the raw K/V ring (cp.async by every thread, rows padded to
// kRawPitch) and two barriers a tile. The tiles lie on the absolute grid (split_tiles) and a row's arithmetic does
// not depend on the CTA's other rows, so a verify row equals its decode row bit for bit (decision
// 0020) as long as both take this kernel, which launch_attention_fa_q8 gives every head_dim-512
// call of fewer than kDsplitMaxTokens tokens by default (GS_ATTN_Q8_DSPLIT below).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/k_attn_common.cuh"
#include "backend/cuda/k_attn_fa.cuh"
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_kv_q8.cuh"
#include "backend/cuda/k_lap_clock.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

struct DsCfg {
  static constexpr int D = 512;
  static constexpr int kWarps = 8, kThreads = 32 * kWarps;
  static constexpr int Dw = D / kWarps;        // head_dim columns a warp owns
  static constexpr int KT = 32;                // keys a tile
  static constexpr int kRG = 4, kRows = 16 * kRG;
  static constexpr int kRawRow = D + D / 16;   // bytes of a q8_0 head row (544)
  static constexpr int kRawPitch = kRawRow + 16;  // its pitch in the ring: 140 words, 12 mod 32 banks apart
  static constexpr int kQStride = D + 16;      // halves a Q row: 8-byte fragment loads free of conflicts
  static constexpr int KC = Dw / 16;           // S k-steps a warp
  static constexpr int NB = Dw / 32;           // q8_0 blocks a warp
  static constexpr int NTS = KT / 8;           // score n-tiles
  static constexpr int NTO = Dw / 8;           // output n-tiles a warp
  static constexpr int kTileS = KT * 16;       // floats of one row group's scores a tile
  static constexpr int kMaxRaw = 3;            // raw tiles in the ring at most
  static_assert(Dw % 32 == 0 && KT == 32, "a warp owns whole q8_0 blocks; two k-steps of keys a tile");
};
// Only for fa_smem_budget: one CTA an SM, or two.
template <int MINB>
using FaCfg512Ds = FaCfg<512, 2, 32, MINB, true>;

// Dynamic shared memory: Q [16 nrg][kQStride] f16, the warps' partial scores [8][nrg][kTileS]
// f32, P as the PV product's A fragments [nrg][2 k-steps][32 lanes][4] f16 pairs, the rows'
// softmax corrections [kRows] f32 (at the end their l), KV row byte offsets [R][KT] int64, the
// raw K ring [R][KT][kRawPitch] bytes, the raw V ring the same.
struct DsLayout {
  int raw_stages;
  size_t x, f, c, off, rk, rv, total;
};
__host__ __device__ constexpr DsLayout ds_layout(int nrg, int raw_stages) {
  using C = DsCfg;
  DsLayout l{};
  l.raw_stages = raw_stages;
  l.x = 16ull * nrg * C::kQStride * 2;
  l.f = l.x + 4ull * C::kWarps * nrg * C::kTileS;
  l.c = l.f + 4ull * nrg * 2 * 32 * 4;
  l.off = l.c + 4ull * C::kRows;
  l.rk = l.off + 8ull * raw_stages * C::KT;
  l.rv = l.rk + 1ull * raw_stages * C::KT * C::kRawPitch;
  l.total = l.rv + 1ull * raw_stages * C::KT * C::kRawPitch;
  return l;
}

// Where the tile loop's time goes (kTiming, a measurement instantiation of one row group:
// GS_ATTN_Q8_TIMING=1): lane 0 of warp 0 of CTA (0, 0, 0) adds up the clock64 cycles of each
// part and prints them at its end, one line a launch ("q8t role ds ...";
// scripts/device_q8_timing.sh averages them).
enum DsPart { kDsScores, kDsB2, kDsIssue, kDsSoftmax, kDsRawWait, kDsB3, kDsPv, kDsParts };

// MINB: CTAs an SM it is sized for (2 only for one row group: ~100 registers, two raw tiles).
template <int NRG, int MINB, bool kTiming = false>
__global__ void __launch_bounds__(DsCfg::kThreads, MINB)
    attn_q8_dsplit_kernel(AttnParams p, int n_splits, float* __restrict__ partial, int R) {
  GS_PDL_ENTRY();
  using C = DsCfg;
  constexpr int D = C::D, KT = C::KT, Dw = C::Dw, NTS = C::NTS, NTO = C::NTO, kRawPitch = C::kRawPitch;
  extern __shared__ __align__(16) uint8_t smem[];
  const DsLayout L = ds_layout(NRG, R);
  __half* Qs = reinterpret_cast<__half*>(smem);
  float* Xs = reinterpret_cast<float*>(smem + L.x);
  uint32_t* Ps = reinterpret_cast<uint32_t*>(smem + L.f);
  float* Cs = reinterpret_cast<float*>(smem + L.c);
  int64_t* Offs = reinterpret_cast<int64_t*>(smem + L.off);
  uint8_t* raw_k = smem + L.rk;
  uint8_t* raw_v = smem + L.rv;
  __shared__ int r_tok[C::kRows], r_head[C::kRows], r_lo[C::kRows], r_hi[C::kRows], r_seq[C::kRows], r_lead[C::kRows];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int d0 = warp * Dw;  // this warp's first head_dim column
  const int n_kv = p.kv.n_head_kv;
  const RowMap rm = row_map(p.n_head, n_kv, C::kRows);
  const int j = blockIdx.y, split = blockIdx.z;

  load_cta_rows<C::kRows>(p, rm, j, r_tok, r_head, r_seq, r_lo, r_hi, r_lead);
  load_q_f16<D, C::kThreads>(p, r_tok, r_head, 16 * NRG,
                             [&](int r, int d) { return reinterpret_cast<uint2*>(Qs + r * C::kQStride + d); });
  __syncthreads();

  // The softmax of row 2 warp + (lane >> 4) of each row group is this warp's (sr), keys 2 q and
  // 2 q + 1 of a tile this lane's: its running max m_s and sum l_s (the same in the 16 lanes).
  const int sr = 2 * warp + (lane >> 4), q = lane & 15;
  // Where those two scores are in a warp's fragment-native partial tile (key 2q: n-tile q / 4,
  // lane (sr % 8) 4 + q % 4, element 2 (sr / 8)), and where their P pair goes among the A
  // fragments (k-step q / 8, lane (sr % 8) 4 + q % 4, register 2 [q % 8 >= 4] + sr / 8).
  const int xf = ((q >> 2) * 32 + (sr & 7) * 4 + (q & 3)) * 4 + 2 * (sr >> 3);
  const int pf = ((q >> 3) * 32 + (sr & 7) * 4 + (q & 3)) * 4 + ((q & 4) ? 2 : 0) + (sr >> 3);
  float o[NRG][NTO][4];
  float m_s[NRG], l_s[NRG];
#pragma unroll
  for (int rg = 0; rg < NRG; ++rg) {
#pragma unroll
    for (int i = 0; i < NTO; ++i) o[rg][i][0] = o[rg][i][1] = o[rg][i][2] = o[rg][i][3] = 0.f;
    m_s[rg] = -INFINITY;
    l_s[rg] = 0.f;
  }
  const auto* kp8 = static_cast<const uint8_t*>(p.kv.k);
  const auto* vp8 = static_cast<const uint8_t*>(p.kv.v);
  const __half2 bias = bits_h2(0x64806480u);  // 1152: f16(1024 + (q + 128)) - 1152 = q
  LapClock<kDsParts> clk;
  int timed_tiles = 0;
  const long long t_begin = kTiming ? clock64() : 0;

  for (int lead = 0; lead < C::kRows; ++lead) {
    if (!r_lead[lead]) continue;  // uniform: one segment per sequence present in the CTA
    const int seq = r_seq[lead];
    int lo_seg, hi_seg;
    segment_range<C::kRows>(seq, r_tok, r_seq, r_lo, r_hi, lo_seg, hi_seg);
    int t_first = 0, n_tiles = 0;
    split_tiles(lo_seg, hi_seg, n_splits, split, KT, t_first, n_tiles);
    if (n_tiles == 0) continue;  // uniform
    auto tile_pos = [&](int ti) { return (t_first + ti * n_splits) * KT; };

    // Tile x's raw rows sit in ring slot x % R and their byte offsets in Offs slot x % R (-1:
    // zeros, for positions outside the segment or unmapped); one cp.async group a tile (K and
    // V), an empty one past the last tile. Two barriers a tile:
    //   B2(ti): the warps' partial scores of tile ti are in Xs, and every warp is done with tile
    //     ti - 1 (its P V), so ring slot (ti - 1) % R takes tile ti + R - 1;
    //   B3(ti): P and the corrections of tile ti are in Ps and Cs, and raw tile ti + 1 has
    //     landed (each thread waits for its own copies first: R - 2 groups may be pending).
    // Threads tid < KT: key tid of tile x, in two steps (k_pages.cuh): row_fetch issues the
    // page-table load, row_offset_of uses it.
    auto row_fetch = [&](int x) {
      const int pos = tile_pos(x) + tid;
      return kv_slot_fetch(p.pages, seq, pos, pos >= lo_seg && pos <= hi_seg);
    };
    auto row_offset_of = [&](const KvSlotFetch& f) -> int64_t {
      const int64_t sl = kv_slot_of(f, p.pages.page_size, p.kv.n_slots);
      return sl < 0 ? -1 : (sl * n_kv + j) * C::kRawRow;
    };
    auto issue = [&](int x) {
      if (x < n_tiles)
        q8_tile_copy<D, KT>(kp8, vp8, Offs + (x % R) * KT, raw_k + (x % R) * KT * kRawPitch,
                            raw_v + (x % R) * KT * kRawPitch, kRawPitch, tid, C::kThreads);
      cp_async_commit();
    };

    // Prologue: offsets of tiles 0..R-1, tiles 0..R-2 requested. pend: tile R's page-table
    // entry, loaded (global memory) an iteration before it is used and stored, so that warp 0
    // never waits for that load.
    KvSlotFetch pend{-1, 0};
    if (tid < KT) {
      for (int x = 0; x < R; ++x) Offs[x * KT + tid] = row_offset_of(row_fetch(x));
      pend = row_fetch(R);
    }
    __syncthreads();
    for (int x = 0; x + 1 < R; ++x) issue(x);
    auto raw_wait = [&]() {  // all but this thread's R - 2 most recent groups have landed
      if (R <= 2) cp_async_wait<0>();
      else cp_async_wait<1>();
    };
    raw_wait();
    __syncthreads();  // raw tile 0 landed

    if constexpr (kTiming) clk.start();
    for (int ti = 0; ti < n_tiles; ++ti) {
      if constexpr (kTiming) ++timed_tiles;
      const uint8_t* rk = raw_k + (ti % R) * KT * kRawPitch;
      const uint8_t* rv = raw_v + (ti % R) * KT * kRawPitch;
      const int pb = tile_pos(ti);

      // --- this warp's partial S over its Dw columns, one key n-tile at a time into the
      // exchange buffer (fragment layout: sn[rg][2 rr + e] is row 16 rg + g + 8 rr, key
      // 8 nt + 2 t + e).
      {
        float4* x4 = reinterpret_cast<float4*>(Xs);
        // Q's A fragments: rows g, g + 8 at k 2t, 2t+1 (columns 4t, 4t+1 of the k-step), then at
        // k 2t+8, 2t+9 (4t+2, 4t+3); held in registers for up to 2 row groups (16 a row group),
        // else loaded at each use.
        constexpr bool kQRegs = NRG <= 2;
        uint32_t qr[kQRegs ? NRG : 1][C::KC][4];
        auto q_frag = [&](int rg, int kc, uint32_t (&a)[4]) {
          const __half* q0 = Qs + (rg * 16 + g) * C::kQStride + d0 + kc * 16 + 4 * t;
          const uint2 ua = *reinterpret_cast<const uint2*>(q0);
          const uint2 ub = *reinterpret_cast<const uint2*>(q0 + 8 * C::kQStride);
          a[0] = ua.x;
          a[1] = ub.x;
          a[2] = ua.y;
          a[3] = ub.y;
        };
        if constexpr (kQRegs) {
#pragma unroll
          for (int rg = 0; rg < NRG; ++rg)
#pragma unroll
            for (int kc = 0; kc < C::KC; ++kc) q_frag(rg, kc, qr[rg][kc]);
        }
#pragma unroll
        for (int nt = 0; nt < NTS; ++nt) {
          float sn[NRG][4];
#pragma unroll
          for (int rg = 0; rg < NRG; ++rg) sn[rg][0] = sn[rg][1] = sn[rg][2] = sn[rg][3] = 0.f;
          const uint8_t* krow = rk + (nt * 8 + g) * kRawPitch;
#pragma unroll
          for (int kc = 0; kc < C::KC; ++kc) {
            const int col = d0 + kc * 16 + 4 * t;  // this lane's 4 columns of the k-step
            const uint32_t w = *reinterpret_cast<const uint32_t*>(krow + col);
            const uint32_t sb = reinterpret_cast<const uint16_t*>(krow + D)[(d0 + kc * 16) >> 5];
            uint32_t b0, b1;
            q8x4_to_f16x4(w, bits_h2(sb | (sb << 16)), b0, b1);
#pragma unroll
            for (int rg = 0; rg < NRG; ++rg) {
              uint32_t a[4];
              if constexpr (kQRegs) {
                a[0] = qr[rg][kc][0], a[1] = qr[rg][kc][1], a[2] = qr[rg][kc][2], a[3] = qr[rg][kc][3];
              } else {
                q_frag(rg, kc, a);
              }
              mma_16816(sn[rg], a[0], a[1], a[2], a[3], b0, b1);
            }
          }
#pragma unroll
          for (int rg = 0; rg < NRG; ++rg)
            x4[((warp * NRG + rg) * NTS + nt) * 32 + lane] = make_float4(sn[rg][0], sn[rg][1], sn[rg][2], sn[rg][3]);
        }
      }
      if constexpr (kTiming) clk.lap(kDsScores);
      __syncthreads();  // B2(ti)
      if constexpr (kTiming) clk.lap(kDsB2);
      issue(ti + R - 1);
      if (tid < KT) {  // Offs slot ti % R (tile ti was requested before B3(ti - 1)) takes tile ti + R
        if (ti + R < n_tiles) Offs[(ti % R) * KT + tid] = row_offset_of(pend);
        pend = row_fetch(ti + R + 1);
      }
      if constexpr (kTiming) clk.lap(kDsIssue);

      // --- the softmax of this warp's rows: their scores summed over the 8 warps' partials in
      // warp order, masked to each row's range, the online max and sum updated; P out as the
      // A fragments of every warp's PV product, the correction of the row's accumulators too.
#pragma unroll
      for (int rg = 0; rg < NRG; ++rg) {
        float2 acc = *reinterpret_cast<const float2*>(Xs + rg * C::kTileS + xf);
#pragma unroll
        for (int u = 1; u < C::kWarps; ++u) {
          const float2 v = *reinterpret_cast<const float2*>(Xs + (u * NRG + rg) * C::kTileS + xf);
          acc.x += v.x;
          acc.y += v.y;
        }
        const int r = rg * 16 + sr;
        const bool in = r_tok[r] >= 0 && r_seq[r] == seq && r_lo[r] <= r_hi[r];
        const int lo = in ? r_lo[r] : INT_MAX, hi = in ? r_hi[r] : INT_MIN;
        const int pos = pb + 2 * q;
        const float v0 = pos >= lo && pos <= hi ? acc.x : -INFINITY;
        const float v1 = pos + 1 >= lo && pos + 1 <= hi ? acc.y : -INFINITY;
        float mx = fmaxf(v0, v1);
#pragma unroll
        for (int ofs = 1; ofs < 16; ofs <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, ofs));
        const float m_new = fmaxf(m_s[rg], mx);
        float p0 = 0.f, p1 = 0.f, corr = 1.f;
        if (m_new != -INFINITY) {
          corr = exp2f((m_s[rg] - m_new) * kLog2e);
          p0 = exp2f((v0 - m_new) * kLog2e);
          p1 = exp2f((v1 - m_new) * kLog2e);
        }
        float sum = p0 + p1;
#pragma unroll
        for (int ofs = 1; ofs < 16; ofs <<= 1) sum += __shfl_xor_sync(0xffffffffu, sum, ofs);
        l_s[rg] = l_s[rg] * corr + sum;
        m_s[rg] = m_new;
        Ps[rg * 256 + pf] = pack_f32x2(p0, p1);
        if (q == 0) Cs[r] = corr;
      }
      if constexpr (kTiming) clk.lap(kDsSoftmax);
      raw_wait();
      if constexpr (kTiming) clk.lap(kDsRawWait);
      __syncthreads();  // B3(ti)
      if constexpr (kTiming) clk.lap(kDsB3);
      uint32_t pa[NRG][2][4];
#pragma unroll
      for (int rg = 0; rg < NRG; ++rg) {
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
          const uint4 u = reinterpret_cast<const uint4*>(Ps)[(rg * 2 + kk) * 32 + lane];
          pa[rg][kk][0] = u.x;  // row g, keys 16 kk + 2t, 2t+1
          pa[rg][kk][1] = u.y;  // row g + 8
          pa[rg][kk][2] = u.z;  // row g, keys 16 kk + 2t+8, 2t+9
          pa[rg][kk][3] = u.w;
        }
        const float ca = Cs[rg * 16 + g], cb = Cs[rg * 16 + g + 8];
        if (__any_sync(0xffffffffu, ca != 1.f || cb != 1.f)) {
#pragma unroll
          for (int i = 0; i < NTO; ++i) {
            o[rg][i][0] *= ca;
            o[rg][i][1] *= ca;
            o[rg][i][2] *= cb;
            o[rg][i][3] *= cb;
          }
        }
      }

      // --- O += P_b V_int over this warp's columns, block by block.
#pragma unroll
      for (int kk = 0; kk < 2; ++kk) {
        const uint8_t* va = rv + (16 * kk + 2 * t) * kRawPitch;  // keys 2t, 2t+1, 2t+8, 2t+9
        const uint8_t* vb = va + kRawPitch;
        const uint8_t* vc = va + 8 * kRawPitch;
        const uint8_t* vd = vc + kRawPitch;
#pragma unroll
        for (int nb = 0; nb < C::NB; ++nb) {
          const int blk = (d0 >> 5) + nb;
          const uint32_t sa = reinterpret_cast<const uint16_t*>(va + D)[blk];
          const uint32_t sbb = reinterpret_cast<const uint16_t*>(vb + D)[blk];
          const uint32_t sc = reinterpret_cast<const uint16_t*>(vc + D)[blk];
          const uint32_t sd = reinterpret_cast<const uint16_t*>(vd + D)[blk];
          const __half2 s_ab = bits_h2(sa | (sbb << 16)), s_cd = bits_h2(sc | (sd << 16));
          uint32_t a[NRG][4];
#pragma unroll
          for (int rg = 0; rg < NRG; ++rg) {
            a[rg][0] = h2_bits(__hmul2(bits_h2(pa[rg][kk][0]), s_ab));
            a[rg][1] = h2_bits(__hmul2(bits_h2(pa[rg][kk][1]), s_ab));
            a[rg][2] = h2_bits(__hmul2(bits_h2(pa[rg][kk][2]), s_cd));
            a[rg][3] = h2_bits(__hmul2(bits_h2(pa[rg][kk][3]), s_cd));
          }
          const int col = d0 + nb * 32 + 4 * g;  // this lane's 4 columns (one per n-tile jj)
          const uint32_t wa = *reinterpret_cast<const uint32_t*>(va + col) ^ 0x80808080u;
          const uint32_t wb = *reinterpret_cast<const uint32_t*>(vb + col) ^ 0x80808080u;
          const uint32_t wc = *reinterpret_cast<const uint32_t*>(vc + col) ^ 0x80808080u;
          const uint32_t wd = *reinterpret_cast<const uint32_t*>(vd + col) ^ 0x80808080u;
          const uint32_t ab01 = __byte_perm(wa, wb, 0x5140), ab23 = __byte_perm(wa, wb, 0x7362);
          const uint32_t cd01 = __byte_perm(wc, wd, 0x5140), cd23 = __byte_perm(wc, wd, 0x7362);
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const uint32_t xab = jj < 2 ? ab01 : ab23, xcd = jj < 2 ? cd01 : cd23;
            const uint32_t sel = (jj & 1) ? 0x4342u : 0x4140u;
            const uint32_t b0 = h2_bits(__hsub2(bits_h2(__byte_perm(xab, 0x64646464u, sel)), bias));
            const uint32_t b1 = h2_bits(__hsub2(bits_h2(__byte_perm(xcd, 0x64646464u, sel)), bias));
#pragma unroll
            for (int rg = 0; rg < NRG; ++rg)
              mma_16816(o[rg][nb * 4 + jj], a[rg][0], a[rg][1], a[rg][2], a[rg][3], b0, b1);
          }
        }
      }
      if constexpr (kTiming) clk.lap(kDsPv);
    }
  }

  if constexpr (kTiming) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && tid == 0) {
      printf("q8t role ds F 0 R %d tiles %d total %lld scores %lld b2 %lld issue %lld softmax %lld raw_wait %lld b3 %lld "
             "pv %lld\n",
             R, timed_tiles, clock64() - t_begin, clk.sum[kDsScores], clk.sum[kDsB2], clk.sum[kDsIssue],
             clk.sum[kDsSoftmax], clk.sum[kDsRawWait], clk.sum[kDsB3], clk.sum[kDsPv]);
    }
  }

  // Rows out: o[rg][4 nb + jj][2 rr + e] is row 16 rg + g + 8 rr, column d0 + 32 nb + 8 t + 4 e + jj.
  // Each row's l (and m) is its softmax warp's; with one split every warp needs l, through Cs.
  __syncthreads();  // every warp is done reading Cs as corrections
  if (q == 0)
#pragma unroll
    for (int rg = 0; rg < NRG; ++rg) Cs[rg * 16 + sr] = l_s[rg];
  __syncthreads();
#pragma unroll
  for (int rg = 0; rg < NRG; ++rg) {
    if (n_splits > 1 && q == 0 && r_tok[rg * 16 + sr] >= 0) {  // this warp's row: its m and l
      const int r = rg * 16 + sr;
      const int64_t row = static_cast<int64_t>(r_tok[r]) * p.n_head + r_head[r];
      float* P = partial + (static_cast<int64_t>(split) * p.n_tokens * p.n_head + row) * (D + 2);
      P[0] = m_s[rg];
      P[1] = l_s[rg];
    }
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int r = rg * 16 + g + 8 * rr;
      if (r_tok[r] < 0) continue;
      const int tk = r_tok[r], head = r_head[r];
      float* dst;
      float mul = 1.f;
      if (n_splits == 1) {
        const float l = Cs[r];
        dst = p.out.data + static_cast<int64_t>(tk) * p.out.stride + static_cast<int64_t>(head) * D;
        mul = l > 0.f ? 1.0f / l : 0.f;
      } else {
        const int64_t row = static_cast<int64_t>(tk) * p.n_head + head;
        dst = partial + (static_cast<int64_t>(split) * p.n_tokens * p.n_head + row) * (D + 2) + 2;
      }
#pragma unroll
      for (int nb = 0; nb < C::NB; ++nb)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj)
#pragma unroll
          for (int e = 0; e < 2; ++e) dst[d0 + 32 * nb + 8 * t + 4 * e + jj] = o[rg][nb * 4 + jj][2 * rr + e] * mul;
    }
  }
}

// The raw tiles a launch with nrg row groups takes: the most (at most kMaxRaw, at least 2) that
// fit the CTA's shared memory; GS_ATTN_STAGES caps them (a measurement switch).
template <int MINB>
DsLayout ds_launch_layout(int nrg) {
  int max_raw = DsCfg::kMaxRaw;
  if (const char* e = std::getenv("GS_ATTN_STAGES"); e && *e) max_raw = std::clamp(std::atoi(e), 2, DsCfg::kMaxRaw);
  for (int r = max_raw; r > 2; --r)
    if (ds_layout(nrg, r).total <= fa_smem_budget<FaCfg512Ds<MINB>>()) return ds_layout(nrg, r);
  return ds_layout(nrg, 2);
}
static_assert(ds_layout(DsCfg::kRG, 2).total <= fa_smem_budget<FaCfg512Ds<1>>(), "two raw tiles fit 64 rows");
static_assert(ds_layout(1, 2).total <= fa_smem_budget<FaCfg512Ds<2>>(), "two CTAs an SM fit one row group");

// GS_ATTN_Q8_TIMING=1: one-row-group launches take the measurement instantiation.
bool timing_on() {
  static const bool on = [] {
    const char* e = std::getenv("GS_ATTN_Q8_TIMING");
    return e && *e && std::atoi(e) != 0;
  }();
  return on;
}

template <int NRG, int MINB = 1>
void launch_nrg(cudaStream_t s, const AttnParams& p, int n_splits, float* partial, dim3 grid) {
  const DsLayout l = ds_launch_layout<MINB>(NRG);
  if constexpr (NRG == 1) {
    if (timing_on()) {
      launch_k(attn_q8_dsplit_kernel<NRG, MINB, true>, grid, DsCfg::kThreads, l.total, s, p, n_splits, partial,
               l.raw_stages);
      return;
    }
  }
  launch_k(attn_q8_dsplit_kernel<NRG, MINB>, grid, DsCfg::kThreads, l.total, s, p, n_splits, partial, l.raw_stages);
}

template <int NRG, int MINB = 1, bool kTiming = false>
cudaError_t prepare_nrg() {
  auto* k = attn_q8_dsplit_kernel<NRG, MINB, kTiming>;
  cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(fa_smem_budget<FaCfg512Ds<MINB>>()));
  if (e == cudaSuccess) e = cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  return e;
}

// Calls of fewer tokens than this take the kernel by default: decode and verify (and short
// prefill chunks); longer prefill chunks keep the converter form (k_attention_q8.cu), which was
// faster there (thirty-fifth session, H100: pp512 @ 1048576 2736 against 3435 ms). The same
// bound as kFaMinTokens in cuda_backend.cpp; decode and verify of one sequence (up to 8 tokens
// at GQA 8) always take the same kernel and split count, so verify rows stay equal to decode
// rows (decision 0020).
constexpr int kDsplitMaxTokens = 64;

// GS_ATTN_Q8_DSPLIT (read on every call, as GS_CUDA_ATTN): unset or "auto" (the default): on
// for calls of fewer than kDsplitMaxTokens tokens, one-row-group launches sized for two CTAs an
// SM; 0: off (the converter form for every call); 1: on for every call, one CTA an SM; 2: on
// for every call, one-row-group launches at two CTAs an SM (measurement forms).
enum class DsplitMode { kOff, kAuto, kAll1, kAll2 };
DsplitMode dsplit_mode() {
  const char* e = std::getenv("GS_ATTN_Q8_DSPLIT");
  if (!e || !*e || std::strcmp(e, "auto") == 0) return DsplitMode::kAuto;
  switch (std::clamp(std::atoi(e), 0, 2)) {
    case 0: return DsplitMode::kOff;
    case 1: return DsplitMode::kAll1;
    default: return DsplitMode::kAll2;
  }
}

}  // namespace

bool attention_q8_dsplit_on(const AttnParams& p) {
  if (!p.kv.q8 || p.head_dim != DsCfg::D) return false;
  switch (dsplit_mode()) {
    case DsplitMode::kOff: return false;
    case DsplitMode::kAuto: return p.n_tokens < kDsplitMaxTokens;
    default: return true;
  }
}

int attention_q8_dsplit_ctas_per_sm() { return dsplit_mode() == DsplitMode::kAll1 ? 1 : 2; }

void launch_attention_q8_dsplit(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, DsCfg::kRows);
  const dim3 grid = attn_grid(p, rm, n_splits);
  const int rows = std::min(p.n_tokens, rm.rt) * rm.hc;
  switch (std::clamp((rows + 15) / 16, 1, DsCfg::kRG)) {
    case 1:
      if (attention_q8_dsplit_ctas_per_sm() == 2) launch_nrg<1, 2>(s, p, n_splits, partial, grid);
      else launch_nrg<1>(s, p, n_splits, partial, grid);
      break;
    case 2: launch_nrg<2>(s, p, n_splits, partial, grid); break;
    case 3: launch_nrg<3>(s, p, n_splits, partial, grid); break;
    default: launch_nrg<4>(s, p, n_splits, partial, grid); break;
  }
  launch_attention_combine(s, p, n_splits, partial);
}

cudaError_t attention_q8_dsplit_prepare() {
  cudaError_t e = prepare_nrg<1>();
  if (e == cudaSuccess) e = prepare_nrg<1, 2>();
  if (e == cudaSuccess) e = prepare_nrg<1, 1, true>();
  if (e == cudaSuccess) e = prepare_nrg<1, 2, true>();
  if (e == cudaSuccess) e = prepare_nrg<2>();
  if (e == cudaSuccess) e = prepare_nrg<3>();
  if (e == cudaSuccess) e = prepare_nrg<4>();
  return e;
}

}  // namespace gs::cuda
