// The 64-row tensor-core attention kernel (k_attn_fa.cuh) on q8_0 KV pools (decision 0035),
// with the dequantization off the products' path.
//
// A q8_0 tile must become f16 before the mma.sync products read it (q8_tile_to_f16: ~30
// instructions a 16-value chunk, more than the products of the tile). In a decode step or a
// short verify a CTA holds only 1 or 2 of its 4 row groups, so most of its warps have no query
// rows. Those warps ("converters") run the pipeline: they copy the raw q8_0 tiles (a ring of R
// tiles), dequantize tile i + 1 into one of two f16 K/V stages while the warps with rows
// ("math warps") compute tile i from the other, and meet the math warps at one barrier a tile:
//
//   BAR(i): f16 stage i % 2 holds tile i; the math warps are done with tile i - 1
//     math warps: S_i = Q K_i^T (partner exchange on a named barrier per row group when C = 2),
//                 softmax, O += P V_i
//     converters: wait for raw tile i + 1, dequantize it into stage (i + 1) % 2 (named barrier
//                 1 among them before and after), copy raw tile i + 1 + R into its ring slot
//   BAR(i + 1)
//
// Where fewer warps are free than hold rows, or two f16 stages and two raw tiles do not fit
// (verify batches of 3+ tokens at GQA 8, prefill), one stage serves and every thread
// dequantizes between two barriers, as before (F = 1; fa_q8_launch_layout).
// Both ways produce the same f16 tiles and run the same tile math (k_attn_fa.cuh), so a row's
// result does not depend on how many rows its CTA holds: verify rows equal decode rows bit for
// bit, as on f16 pools (decision 0020).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backend/cuda/k_attn_common.cuh"
#include "backend/cuda/k_attn_fa.cuh"
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_kv_q8.cuh"
#include "backend/cuda/k_lap_clock.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

using FaCfg256Q8 = FaCfg<256, 1, 32, 2, true>;
using FaCfg512Q8 = FaCfg<512, 2, 32, 1, true>;

constexpr int kQ8MaxRaw = 3;  // raw q8_0 tiles in flight at most
constexpr int kConvBar = 1;   // named barrier of the converters; 2 + rg: row group rg's pair (C = 2)

// Dynamic shared memory of attn_fa_q8_kernel: Q [16 nrg][kStride] f16, f16 K stages
// [F][KT][kStride], f16 V stages the same, partial S [nrg C][NTS][32] float4 (C = 2 only), KV
// row byte offsets [R + 1][KT] int64, raw K ring [R][KT][kRawRow] bytes, raw V ring the same.
struct FaQ8Layout {
  int qrows, f16_stages, raw_stages;
  size_t k, v, x, off, rk, rv, total;
};
template <class Cfg>
__host__ __device__ constexpr FaQ8Layout fa_q8_layout(int nrg, int f16_stages, int raw_stages) {
  FaQ8Layout l{};
  l.qrows = 16 * nrg;
  l.f16_stages = f16_stages;
  l.raw_stages = raw_stages;
  l.k = 1ull * l.qrows * Cfg::kStride * 2;
  l.v = l.k + static_cast<size_t>(f16_stages) * Cfg::kTileBytes;
  l.x = l.v + static_cast<size_t>(f16_stages) * Cfg::kTileBytes;
  l.off = l.x + (Cfg::C > 1 ? 16ull * nrg * Cfg::C * Cfg::NTS * 32 : 0);
  l.rk = l.off + (static_cast<size_t>(raw_stages) + 1) * Cfg::KT * 8;
  l.rv = l.rk + static_cast<size_t>(raw_stages) * Cfg::KT * Cfg::kRawRow;
  l.total = l.rv + static_cast<size_t>(raw_stages) * Cfg::KT * Cfg::kRawRow;
  return l;
}

// Where the tile loop's time goes (kTiming, a measurement instantiation: GS_ATTN_Q8_TIMING=1):
// lane 0 of warp 0 (rows) and of the first warp without rows adds up the clock64 cycles of
// each part of its loop, and CTA (0, 0, 0) prints both at its end, one line a launch
// ("q8t ..."; scripts/device_q8_timing.sh averages them). The kernel without it is unchanged.
enum Q8Part { kQ8Math, kQ8MathBar, kQ8RawWait, kQ8ConvBar, kQ8Dequant, kQ8Issue, kQ8ConvCtaBar, kQ8Parts };
using Q8Clock = LapClock<kQ8Parts>;

template <class Cfg, bool kTiming>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MINB)
    attn_fa_q8_kernel(AttnParams p, int n_splits, float* __restrict__ partial, int nrg, int f16_stages, int raw_stages,
                      bool swap_stores) {
  GS_PDL_ENTRY();
  constexpr int D = Cfg::D, C = Cfg::C, KT = Cfg::KT, kRows = Cfg::kRows, kThreads = Cfg::kThreads;
  constexpr int Dc = Cfg::Dc, kStride = Cfg::kStride, NTS = Cfg::NTS, NTO = Cfg::NTO, kRawRow = Cfg::kRawRow;
  extern __shared__ __align__(16) uint8_t smem[];
  const FaQ8Layout L = fa_q8_layout<Cfg>(nrg, f16_stages, raw_stages);
  __half* Qs = reinterpret_cast<__half*>(smem);
  __half* Ks = reinterpret_cast<__half*>(smem + L.k);
  __half* Vs = reinterpret_cast<__half*>(smem + L.v);
  float4* Xs = reinterpret_cast<float4*>(smem + L.x);
  int64_t* Offs = reinterpret_cast<int64_t*>(smem + L.off);
  uint8_t* raw_k = smem + L.rk;
  uint8_t* raw_v = smem + L.rv;
  __shared__ int r_tok[kRows], r_head[kRows], r_lo[kRows], r_hi[kRows], r_seq[kRows], r_lead[kRows];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, t = lane & 3;
  const int rg = warp / C, c = warp % C;
  const int F = f16_stages, R = raw_stages;
  // Roles: warps [0, nrg C) hold the query rows; with F = 2 the others copy and dequantize (the
  // launch gives F = 2 only where there is at least one such warp), with F = 1 every thread does.
  const int n_math = nrg * C;
  const bool math = warp < n_math;
  const bool copier = F == 1 || !math;
  const int ct = F == 1 ? tid : tid - 32 * n_math;          // index among the copying threads
  const int n_ct = F == 1 ? kThreads : kThreads - 32 * n_math;  // their count (a multiple of 32)
  const int n_kv = p.kv.n_head_kv;
  const RowMap rm = row_map(p.n_head, n_kv, kRows);
  const int j = blockIdx.y, split = blockIdx.z;

  load_cta_rows<kRows>(p, rm, j, r_tok, r_head, r_seq, r_lo, r_hi, r_lead);
  load_q_f16<D, kThreads>(p, r_tok, r_head, L.qrows, [&](int r, int d) { return reinterpret_cast<uint2*>(Qs + r * kStride + d); });
  __syncthreads();

  float o[NTO][4];
#pragma unroll
  for (int i = 0; i < NTO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const auto* kp8 = static_cast<const uint8_t*>(p.kv.k);
  const auto* vp8 = static_cast<const uint8_t*>(p.kv.v);
  // This thread's two rows (a copier's are at or past qrows and unused).
  const int row_a = rg * 16 + (lane >> 2), row_b = row_a + 8;
  const FaFrags<Cfg> frag(Qs, Ks, Vs, rg, c, lane);
  Q8Clock clk;
  int timed_tiles = 0;
  const long long t_begin = kTiming ? clock64() : 0;

  for (int lead = 0; lead < kRows; ++lead) {
    if (!r_lead[lead]) continue;  // uniform: one segment per sequence present in the CTA
    const int seq = r_seq[lead];
    int lo_seg, hi_seg;
    segment_range<kRows>(seq, r_tok, r_seq, r_lo, r_hi, lo_seg, hi_seg);
    int t_first = 0, n_tiles = 0;
    split_tiles(lo_seg, hi_seg, n_splits, split, KT, t_first, n_tiles);
    if (n_tiles == 0) continue;  // uniform
    auto tile_pos = [&](int ti) { return (t_first + ti * n_splits) * KT; };
    int lo_rr[2], hi_rr[2], w_lo, w_hi;
    segment_row_ranges(seq, row_a, row_b, math, r_tok, r_seq, r_lo, r_hi, lo_rr, hi_rr);
    warp_key_range(lo_rr, hi_rr, w_lo, w_hi);

    // --- the copying threads' steps. Tile x's raw rows sit in ring slot x % R, their byte
    // offsets in Offs slot x % (R + 1); one cp.async group per tile (K and V), committed in
    // tile order, an empty one past the last tile, so that at each wait R - 1 may be pending.
    // Byte offset of tile x's head row ct, -1: zeros; in two steps (k_pages.cuh): row_fetch
    // issues the page-table load, row_offset_of uses it.
    auto row_fetch = [&](int x) {
      const int pos = tile_pos(x) + ct;
      return kv_slot_fetch(p.pages, seq, pos, pos >= lo_seg && pos <= hi_seg);
    };
    auto row_offset_of = [&](const KvSlotFetch& f) -> int64_t {
      const int64_t sl = kv_slot_of(f, p.pages.page_size, p.kv.n_slots);
      return sl < 0 ? -1 : (sl * n_kv + j) * kRawRow;
    };
    auto issue = [&](int x) {
      if (x < n_tiles)
        q8_tile_copy<D, KT>(kp8, vp8, Offs + (x % (R + 1)) * KT, raw_k + (x % R) * KT * kRawRow,
                            raw_v + (x % R) * KT * kRawRow, kRawRow, ct, n_ct);
      cp_async_commit();
    };
    // Raw tile x has landed (this thread's copies of it); tile x + R's offsets into Offs. Called
    // for x = 0, 1, 2, ... in turn; pend holds tile x + R's page-table entry, loaded (global
    // memory) at the call before and first used here, so that no copier waits for that load
    // before the converters' barrier.
    KvSlotFetch pend{-1, 0};
    if (copier && ct < KT) pend = row_fetch(R);
    auto raw_ready = [&](int x) {
      if (R == 1) cp_async_wait<0>();
      else if (R == 2) cp_async_wait<1>();
      else cp_async_wait<2>();
      if (ct < KT) {
        if (x + R < n_tiles) Offs[((x + R) % (R + 1)) * KT + ct] = row_offset_of(pend);
        pend = row_fetch(x + R + 1);
      }
    };
    // Raw tile x into f16 stage x % F, by the threads i = 0 .. n - 1.
    auto dequantize = [&](int x, int i, int n) {
      q8_tile_to_f16<D>(raw_k + (x % R) * KT * kRawRow, Ks + (x % F) * KT * kStride, kStride, KT, i, n, swap_stores);
      q8_tile_to_f16<D>(raw_v + (x % R) * KT * kRawRow, Vs + (x % F) * KT * kStride, kStride, KT, i, n, swap_stores);
    };
    auto copier_bar = [&]() {
      if (F == 1) __syncthreads();
      else bar_sync_named(kConvBar, n_ct);
    };

    // Prologue: raw tiles 0..R-1 requested, tile 0 in f16 stage 0.
    if (copier) {
      if (ct < KT)
        for (int x = 0; x < R; ++x) Offs[x * KT + ct] = row_offset_of(row_fetch(x));
      copier_bar();
      for (int x = 0; x < R; ++x) issue(x);
      raw_ready(0);
      copier_bar();
      dequantize(0, ct, n_ct);
      copier_bar();  // F = 1: BAR(0)
      issue(R);
    }
    if (F == 2) __syncthreads();  // BAR(0)

    if constexpr (kTiming) clk.start();
    for (int ti = 0; ti < n_tiles; ++ti) {
      const bool next = ti + 1 < n_tiles;
      if constexpr (kTiming) ++timed_tiles;
      if (math) {
        const int pb = tile_pos(ti);
        const bool active = pb <= w_hi && pb + KT - 1 >= w_lo;  // uniform over the row group's warps
        const int fs = ti % F;
        float s[NTS][4];
        if (active) fa_tile_scores<Cfg>(s, frag.q, frag.k + fs * KT * kStride);
        if constexpr (C > 1) {
          if (active) {
            float4* xw = Xs + warp * NTS * 32 + lane;
#pragma unroll
            for (int i = 0; i < NTS; ++i) xw[i * 32] = make_float4(s[i][0], s[i][1], s[i][2], s[i][3]);
          }
          bar_sync_named(2 + rg, 32 * C);  // the pair's partial S
          if (active) fa_add_partner<Cfg>(s, Xs + (rg * C + (1 - c)) * NTS * 32 + lane);
        }
        if (active) {
          fa_tile_softmax<Cfg>(s, o, pb, t, lo_rr, hi_rr, m_r, l_r);
          fa_tile_pv<Cfg>(o, s, frag.v + fs * KT * kStride);
        }
        if constexpr (kTiming) clk.lap(kQ8Math);
      } else if (next && F == 2) {
        raw_ready(ti + 1);
        if constexpr (kTiming) clk.lap(kQ8RawWait);
        bar_sync_named(kConvBar, n_ct);  // raw tile ti + 1 landed for every converter; Offs
        if constexpr (kTiming) clk.lap(kQ8ConvBar);
        dequantize(ti + 1, ct, n_ct);
        if constexpr (kTiming) clk.lap(kQ8Dequant);
        bar_sync_named(kConvBar, n_ct);  // every converter is done with its raw slot
        if constexpr (kTiming) clk.lap(kQ8ConvBar);
        issue(ti + 1 + R);
        if constexpr (kTiming) clk.lap(kQ8Issue);
      }
      if (F == 1 && next) {
        raw_ready(ti + 1);
        __syncthreads();  // every warp is done with the f16 stage; raw tile ti + 1 landed
        dequantize(ti + 1, tid, kThreads);
      }
      __syncthreads();  // BAR(ti + 1)
      if constexpr (kTiming) clk.lap(math ? kQ8MathBar : kQ8ConvCtaBar);
      if (F == 1 && next) issue(ti + 1 + R);
    }
  }

  if constexpr (kTiming) {
    const bool first_conv = warp == n_math && F == 2;
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && lane == 0 && (warp == 0 || first_conv)) {
      const long long total = clock64() - t_begin;
      printf("q8t role %s F %d R %d tiles %d total %lld math %lld math_bar %lld raw_wait %lld conv_bar %lld dequant %lld "
             "issue %lld conv_cta_bar %lld\n",
             warp == 0 ? "math" : "conv", F, R, timed_tiles, total, clk.sum[kQ8Math], clk.sum[kQ8MathBar],
             clk.sum[kQ8RawWait], clk.sum[kQ8ConvBar], clk.sum[kQ8Dequant], clk.sum[kQ8Issue], clk.sum[kQ8ConvCtaBar]);
    }
  }
  if (!math) return;
  store_thread_rows<D>(p, partial, n_splits, split, r_tok, r_head, row_a, row_b, o, m_r, l_r, c * Dc, t,
                       c == 0 && t == 0);
}

// The layout a launch for p takes: the Q row groups its CTAs need (as fa_launch_layout), then
// two f16 stages where the row-less warps are at least as many as the others and two raw tiles
// in flight fit beside them (a decode step: one row group), else one f16 stage, with the most
// raw tiles that fit either way. Measured on an H100 (31B shapes, thirty-first session), a
// decode step at depth 524288: two stages and two raw tiles 22.39 ms, two stages and one raw
// tile 25.78, one stage (every thread dequantizing) 25.69; a verify of 5 (three row groups: two
// row-less warps, one raw tile fits) 35.98 ms with two stages against 30.05 with one.
// GS_ATTN_STAGES caps the raw tiles and GS_ATTN_Q8_F=1 forces one f16 stage (measurement
// switches).
template <class Cfg>
FaQ8Layout fa_q8_launch_layout(const AttnParams& p) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, Cfg::kRows);
  const int rows = std::min(p.n_tokens, rm.rt) * rm.hc;
  const int nrg = std::clamp((rows + 15) / 16, 1, Cfg::kRG);
  int max_raw = kQ8MaxRaw;
  if (const char* e = std::getenv("GS_ATTN_STAGES"); e && *e) max_raw = std::clamp(std::atoi(e), 1, kQ8MaxRaw);
  const char* fe = std::getenv("GS_ATTN_Q8_F");
  const int n_math = nrg * Cfg::C;
  const bool two_ok = Cfg::kWarps - n_math >= n_math && !(fe && std::atoi(fe) == 1);
  const int min_raw_two = std::min(2, max_raw);  // a measurement cap below 2 still takes two stages
  for (int f = two_ok ? 2 : 1; f >= 1; --f)
    for (int r = max_raw; r >= (f == 2 ? min_raw_two : 1); --r)
      if (fa_q8_layout<Cfg>(nrg, f, r).total <= fa_smem_budget<Cfg>()) return fa_q8_layout<Cfg>(nrg, f, r);
  return fa_q8_layout<Cfg>(nrg, 1, 1);  // fits at any nrg (as the f16 kernel's one stage)
}

template <class Cfg>
void launch_fa_q8_cfg(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, Cfg::kRows);
  const dim3 grid = attn_grid(p, rm, n_splits);
  const FaQ8Layout l = fa_q8_launch_layout<Cfg>(p);
  static const bool timing = [] {
    const char* e = std::getenv("GS_ATTN_Q8_TIMING");
    return e && *e && std::atoi(e) != 0;
  }();
  // Measurement switch (read on every call): q8_tile_to_f16's conflict-free store order.
  const char* swap_env = std::getenv("GS_ATTN_Q8_SWAP");
  const bool swap = swap_env && *swap_env && std::atoi(swap_env) != 0;
  if (timing)
    launch_k(attn_fa_q8_kernel<Cfg, true>, grid, Cfg::kThreads, l.total, s, p, n_splits, partial, l.qrows / 16,
             l.f16_stages, l.raw_stages, swap);
  else
    launch_k(attn_fa_q8_kernel<Cfg, false>, grid, Cfg::kThreads, l.total, s, p, n_splits, partial, l.qrows / 16,
             l.f16_stages, l.raw_stages, swap);
  launch_attention_combine(s, p, n_splits, partial);
}

template <class Cfg>
cudaError_t prepare_fa_q8() {
  static_assert(fa_q8_layout<Cfg>(Cfg::kRG, 1, 1).total <= fa_smem_budget<Cfg>(), "one stage fits 64 rows");
  cudaError_t e = cudaSuccess;
  for (auto* k : {attn_fa_q8_kernel<Cfg, false>, attn_fa_q8_kernel<Cfg, true>}) {
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(fa_smem_budget<Cfg>()));
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  }
  return e;
}

}  // namespace

void launch_attention_fa_q8(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  if (attention_q8_dsplit_on(p)) return launch_attention_q8_dsplit(s, p, n_splits, partial);
  if (p.head_dim == 256) launch_fa_q8_cfg<FaCfg256Q8>(s, p, n_splits, partial);
  else if (p.head_dim == 512) launch_fa_q8_cfg<FaCfg512Q8>(s, p, n_splits, partial);
}

cudaError_t attention_fa_q8_prepare() {
  cudaError_t e = prepare_fa_q8<FaCfg256Q8>();
  if (e == cudaSuccess) e = prepare_fa_q8<FaCfg512Q8>();
  if (e == cudaSuccess) e = attention_q8_dsplit_prepare();
  return e;
}

}  // namespace gs::cuda
