// The bulk-copy decode matvec: y = x W^T for 1..16 activation rows, reading every weight byte
// once, with the tiles and tensor-core arithmetic of k_matvec_tiles.cuh (so its numerics are
// those of the other matvec kernels), but with the weights brought into shared memory by the
// copy engine instead of by the computing threads.
//
// Why: the register- and cp.async-fed kernels plateau at 35-46% of the copy bandwidth with
// ~16 warps per SM, each waiting on its own loads (docs/perf-notes.md). Here one producer warp
// per CTA keeps a ring of stages in flight with cp.async.bulk (tens of KB per SM, no
// registers held), eight consumer warps compute from shared memory, and the producer may
// start streaming before the previous kernel has finished (programmatic dependent launch:
// the weights do not depend on it) wherever the SM has room for its CTA. Decision 0018.
//
// Work split. Rows come in row groups of 16 (one mma tile of output rows); a row group's
// n_in is cut into stages of kStageTiles (8) tiles of 256 elements. A stage holds, for each
// of the 16 rows, its 8 consecutive ggml blocks (one bulk copy per row, plus one for the f16
// block scales of formats that keep them apart; for Q6_K two TMA boxes, decision 0019; for
// the tile-major Q4_K one bulk copy of the whole stage, decision 0022); a
// launch may hold up to kMatvecMaxParts weights of the same activations, whose row groups
// follow each other (StreamParts); each consumer warp computes at most one of
// its tiles (the CTA's tiles go to the warps round-robin across stages). The units (row
// group, stage) are split evenly over a grid of at most one CTA per row group (two per SM
// by default): CTA c takes units [c U / C, (c + 1) U / C). At a row group's
// end (or the end of the CTA's range) the warps leave their partial sums in shared memory
// and the last one to get there adds them in warp order and stores (no CTA barrier). A row
// group cut between CTAs c and c + 1 is finished by c: c + 1 does its part first (it is the
// start of its range), leaves the sums in MatvecSync::partial[c + 1] and raises
// flags[c + 1]; c, at the end of its range, waits for the flag, adds, stores, and clears it.
// Every CTA of the grid is resident before the next kernel can start (each CTA triggers the
// dependent launch at its start), so the wait cannot deadlock.
//
// Results do not depend on the number of activation rows (each mma column is computed
// alone, the split depends on the weights only), so a verify pass reproduces decode exactly.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "backend/cuda/k_bulk.cuh"
#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_matvec_i8.cuh"
#include "backend/cuda/k_matvec_stream.h"
#include "backend/cuda/k_matvec_tiles.cuh"
#include "backend/cuda/k_tensor_map.cuh"

namespace gs::cuda {
namespace {
using namespace mv;

constexpr int kConsumerWarps = 8;
constexpr int kStageTiles = kConsumerWarps;  // one tile per consumer warp per stage
constexpr int kThreads = (kConsumerWarps + 1) * 32;
constexpr int kMaxStages = 8;
constexpr int kRowGroup = 16;
constexpr uint64_t kFlagTimeoutNs = 10000000000ull;  // a lost partner traps instead of hanging

// Q6_K streams each stage as two 2-D tensor-map boxes (TMA: 16 rows of rs bytes, and their
// f16 scales): two copy instructions a stage instead of 32 per-lane copies. The box rows are
// rs bytes, the stage's tiles and the start of the next ones (or zeros past the row's end).
// Measured on the H200 (docs/perf-notes.md): Q6_K 5376 x 21504 36.7 us against 40.9, while
// Q4_K (16 copies a stage, no scales apart) gained nothing on large matrices and lost
// 0.5-0.8 us on 12 MB ones, so the other formats keep the per-row bulk copies.
constexpr bool uses_tma(WFormat f) { return f == WFormat::kQ6_K; }
// Q4_K weights are tile-major (cuda_weight_layout.h, decision 0022): a stage of a row group
// is one contiguous run of kQ4KTileBytes a tile, copied with one bulk copy.
constexpr bool tile_major(WFormat f) { return f == WFormat::kQ4_K; }

// Host-computed geometry of one launch.
struct StreamGeom {
  int64_t n_rg;     // row groups of 16 rows
  int64_t units;    // n_rg * spr
  int n_tiles;      // 256-element tiles per row
  int spr;          // stages per row group
  int ns;           // stages in the ring
  int blk;          // main bytes of one row's tile (the ggml block or 8 of them)
  int mpt;          // f16 meta entries per tile (0, 1 or 8)
  int rs;           // shared bytes per row in a stage's main part (16-aligned, = 64 mod 128)
  int ms;           // shared bytes per row in a stage's meta part (16-aligned)
  int stage_bytes;  // kRowGroup * (rs + ms)
  int xs_bytes;     // activations copied to shared memory after the ring (kXS), else 0
  int x8_bytes;     // after the ring: kI8 = 1 the quantized activation row, kI8 = 3, 4 the scale scratch
  int evict_first;  // the weight copies run under an L2 evict-first policy (GS_MVS_EVICT)
};

constexpr int kRedBufs = 2;  // segment sums in flight (a warp this far ahead of the last reducer waits)
constexpr uint32_t kRingAlign = 128;

// The weights of one launch: up to kMatvecMaxParts matrices of one format and n_in, of the same
// activations, whose row groups follow each other (part p holds the launch's row groups
// [rg_end[p - 1], rg_end[p])). A single matmul is one part.
struct StreamParts {
  const uint8_t* w[kMatvecMaxParts];
  int64_t n_out[kMatvecMaxParts];
  int64_t meta_offset[kMatvecMaxParts];
  int64_t rg_end[kMatvecMaxParts];
  MatF y[kMatvecMaxParts];
  int n;
};
// The tensor maps of each part's stage boxes (uses_tma formats).
struct StageMaps {
  CUtensorMap main[kMatvecMaxParts];
  CUtensorMap meta[kMatvecMaxParts];
};

// The part row group rg is in, and that part's first row group.
__device__ __forceinline__ int part_of(const StreamParts& P, int64_t rg, int64_t& rg_base) {
  int p = 0;
#pragma unroll
  for (int i = 0; i + 1 < kMatvecMaxParts; ++i)
    if (i + 1 < P.n && rg >= P.rg_end[i]) p = i + 1;
  rg_base = p ? P.rg_end[p - 1] : 0;
  return p;
}

template <int NT>
struct StreamShared {
  uint64_t full[kMaxStages];
  uint64_t empty[kMaxStages];
  uint64_t xbar;  // the activations' bulk copy (kXS)
  uint64_t x8bar;  // kI8 = 1: the consumers' quantization of the activations is done
  int arrived[kRedBufs];  // warps that left their sums in red[b] for its current segment
  int done[kRedBufs];     // segments of red[b] reduced so far
  float red[kRedBufs][kConsumerWarps][NT * 4][32];  // each warp's k-split sums of a segment
  uint32_t sink[kConsumerWarps][32];  // consume_raw's stores (never read)
};

// One word of every shared load that Tile<F>::load issues, XORed (the 16-byte loads fill
// their four registers together, so reading one of them waits for the whole load). Only
// words the format loads: a word left undefined would let the compiler fold the XOR away
// (Q4_K's unused e0 / e1 did, tenth session: the store below became a store of zero).
template <WFormat F>
struct LoadedWords;
template <>
struct LoadedWords<WFormat::kQ4_K> {
  static __device__ __forceinline__ uint32_t of(const Tile<WFormat::kQ4_K>::Raw& r) {
    return (r.h0.x ^ r.h1.x ^ r.qa0.x) ^ (r.qb0.x ^ r.qa1.x ^ r.qb1.x);
  }
};
template <>
struct LoadedWords<WFormat::kQ5_K> {
  static __device__ __forceinline__ uint32_t of(const Tile<WFormat::kQ5_K>::Raw& r) {
    return (r.h0.x ^ r.h1.x ^ r.qa0.x) ^ (r.qb0.x ^ r.qa1.x ^ r.qb1.x) ^ (r.e0.x ^ r.e1.x);
  }
};
template <>
struct LoadedWords<WFormat::kQ6_K> {
  static __device__ __forceinline__ uint32_t of(const Tile<WFormat::kQ6_K>::Raw& r) {
    return (r.la0.x ^ r.lb0.x ^ r.la1.x) ^ (r.lb1.x ^ r.ha0.x ^ r.hb0.x) ^ (r.ha1.x ^ r.hb1.x ^ r.sc0.x) ^
           (r.sc1.x ^ __float_as_uint(r.d0) ^ __float_as_uint(r.d1));
  }
};
template <>
struct LoadedWords<WFormat::kQ8_0> {
  static __device__ __forceinline__ uint32_t of(const Tile<WFormat::kQ8_0>::Raw& r) {
    uint32_t x = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) x ^= r.q0[i].x ^ r.q1[i].x ^ (static_cast<uint32_t>(r.d0[i]) | static_cast<uint32_t>(r.d1[i]) << 16);
    return x;
  }
};
template <>
struct LoadedWords<WFormat::kQ4_0> {
  static __device__ __forceinline__ uint32_t of(const Tile<WFormat::kQ4_0>::Raw& r) {
    return (r.qa0.x ^ r.qb0.x ^ r.qa1.x) ^ r.qb1.x ^
           ((static_cast<uint32_t>(r.d0[0]) | static_cast<uint32_t>(r.d0[1]) << 16) ^
            (static_cast<uint32_t>(r.d1[0]) | static_cast<uint32_t>(r.d1[1]) << 16));
  }
};

// Makes a lane's shared loads of the stage complete before its warp releases the slot: a
// store of a word that depends on every load (LoadedWords). Without it the one arrival a
// warp makes after __syncwarp did not wait for the other lanes' loads, and on the H200 the
// copy engine could refill a slot that a lane was still reading: CudaMatmul.FewRowGroupsLongRows
// (Q4_K, 16 activation rows, one-copy stages refilled from L2) gave wrong sums in 2 of 4
// runs; compute-sanitizer's racecheck reports the read / refill pair as a WAR hazard. Every
// thread arriving on its own (empty barriers counting 256) did not help: 1 of 4 runs still
// failed (perf-notes, ninth and tenth sessions).
template <WFormat F>
__device__ __forceinline__ void consume_raw(const typename Tile<F>::Raw& r, uint32_t* sink) {
  *reinterpret_cast<volatile uint32_t*>(sink) = LoadedWords<F>::of(r);
}

// kMinBlocks = 2 caps the registers so that two CTAs share an SM (the default). kXS: the
// activations are first copied into shared memory after the ring (G.xs_bytes of them), so the
// consumers read them with shared loads instead of through L1 (as many rows as fit
// GS_MVS_XS_KB, see stream_geometry).
// kDiag (a measurement, GS_MVS_DIAG, never a result): 1 streams the weights through the ring
// without computing (the copy side alone), 2 computes on whatever the ring holds without
// copying or waiting (the compute side alone), 3 streams like 1 but each stage as one
// contiguous copy of the same size (what a stage-major weight layout would stream); all write
// meaningless sums.
// kI8 (Q4_K only; k_matvec_i8.cuh, decision 0028): 1 = the one-row dp4a form, the consumers
// quantizing the activation row into shared memory first; 2 = the twenty-first session's
// several-row int8 mma form (compute_mma8), 3 = the one with one sub-block an mma
// (compute_sb) and 4 = its form for 2..4 rows (compute_sb4, NT = 1), all on activations that
// quantize_x8_kernel left in sync.x8.
template <WFormat F, int NT, int kMinBlocks, bool kXS, int kDiag = 0, int kI8 = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    matvec_stream_kernel(const StreamParts P, WeightLayout L, const uint16_t* __restrict__ xh,
                         const float* __restrict__ xscale, StreamGeom G, MatvecSync sync,
                         const __grid_constant__ StageMaps tm) {
  // Let the next kernel launch now; its weights can stream while this one computes.
  GS_PDL_TRIGGER();
  if constexpr (uses_tma(F)) {  // the maps' descriptors while the barriers are set up
    if (threadIdx.x == kConsumerWarps * 32) {
      for (int p = 0; p < P.n; ++p) {
        tmap_prefetch(&tm.main[p]);
        tmap_prefetch(&tm.meta[p]);
      }
    }
  }
  extern __shared__ __align__(128) uint8_t ring_raw[];
  // Tensor-map boxes land 128-byte aligned (the launch asks for kRingAlign bytes more).
  uint8_t* const ring = ring_raw + ((kRingAlign - (smem_addr(ring_raw) & (kRingAlign - 1))) & (kRingAlign - 1));
  __shared__ StreamShared<NT> sh;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int i = 0; i < G.ns; ++i) {
      mbar_init(&sh.full[i], 1);
      mbar_init(&sh.empty[i], kConsumerWarps);
    }
    mbar_init(&sh.xbar, 1);
    mbar_init(&sh.x8bar, kConsumerWarps * 32);
    for (int b = 0; b < kRedBufs; ++b) sh.arrived[b] = sh.done[b] = 0;
    mbar_init_fence();
  }
  __syncthreads();
  const int64_t C = gridDim.x, c = blockIdx.x;
  const int64_t u0 = c * G.units / C, u1 = (c + 1) * G.units / C;

  if (warp == kConsumerWarps) {
    // ---- producer: no griddepcontrol.wait, it reads only the (constant) weights ----------
    if constexpr (kDiag == 2) return;
    int slot = 0;
    uint32_t phase = 0;
    int64_t rg = u0 / G.spr;
    int s = static_cast<int>(u0 - rg * G.spr);
    const uint64_t policy = G.evict_first ? l2_evict_first_policy() : 0;
    auto copy = [&](void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
      if (G.evict_first) bulk_g2s(dst, src, bytes, bar, policy);
      else bulk_g2s(dst, src, bytes, bar);
    };
    auto box = [&](void* dst, const CUtensorMap* m, int c0, int c1, uint64_t* bar) {
      if (G.evict_first) bulk_tensor_2d_g2s(dst, m, c0, c1, bar, policy);
      else bulk_tensor_2d_g2s(dst, m, c0, c1, bar);
    };
    // Where lane 0 alone issues a stage's copies, lanes 1..31 leave now: waiting on the empty
    // barriers with nothing to issue, a lane could fall two phases behind lane 0 (parity waits
    // cannot tell phase k from k + 2) and wait forever. The per-row copies keep every lane and a
    // __syncwarp each stage.
    constexpr bool kOneLane = tile_major(F) || kDiag == 3 || uses_tma(F);
    if (kOneLane && lane != 0) return;
    for (int64_t u = u0; u < u1; ++u) {
      mbar_wait(&sh.empty[slot], phase ^ 1u);
      const int t0 = s * kStageTiles;
      int64_t rg_base;
      const int p = part_of(P, rg, rg_base);
      const int64_t r0 = (rg - rg_base) * kRowGroup;  // the part's first row of the row group
      uint8_t* st = ring + static_cast<size_t>(slot) * G.stage_bytes;
      if constexpr (tile_major(F)) {  // the stage's tiles are contiguous
        const int nt = min(kStageTiles, G.n_tiles - t0);
        if (lane == 0) {
          const uint32_t bytes = static_cast<uint32_t>(nt * kQ4KTileBytes);
          mbar_arrive_expect_tx(&sh.full[slot], bytes);
          copy(st, P.w[p] + r0 * L.main_row_bytes + static_cast<int64_t>(t0) * kQ4KTileBytes, bytes, &sh.full[slot]);
        }
      } else if constexpr (kDiag == 3) {
        const int nt = min(kStageTiles, G.n_tiles - t0);
        const int64_t total = P.n_out[p] * L.main_row_bytes;
        const uint32_t bytes = static_cast<uint32_t>(kRowGroup * nt * G.blk);
        int64_t off = r0 * L.main_row_bytes + static_cast<int64_t>(kRowGroup) * t0 * G.blk;
        if (off + bytes > total) off = total - bytes;
        if (lane == 0) {
          mbar_arrive_expect_tx(&sh.full[slot], bytes);
          bulk_g2s(st, P.w[p] + off, bytes, &sh.full[slot]);
        }
      } else if constexpr (uses_tma(F)) {  // the stage as two boxes (rows past the last read as zeros)
        if (lane == 0) {
          mbar_arrive_expect_tx(&sh.full[slot], static_cast<uint32_t>(G.stage_bytes));
          box(st, &tm.main[p], t0 * G.blk / 8, static_cast<int>(r0), &sh.full[slot]);
          box(st + kRowGroup * G.rs, &tm.meta[p], t0 * G.mpt, static_cast<int>(r0), &sh.full[slot]);
        }
      } else {  // one bulk copy per row (and one of its scales)
        const int nt = min(kStageTiles, G.n_tiles - t0);
        const int rows = P.n_out[p] - r0 < kRowGroup ? static_cast<int>(P.n_out[p] - r0) : kRowGroup;
        const uint32_t main_bytes = static_cast<uint32_t>(nt * G.blk);
        const uint32_t meta_bytes = G.mpt ? static_cast<uint32_t>((nt * G.mpt * 2 + 15) & ~15) : 0u;
        const uint8_t* w = P.w[p];
        if (lane == 0) mbar_arrive_expect_tx(&sh.full[slot], static_cast<uint32_t>(rows) * (main_bytes + meta_bytes));
        __syncwarp();
        if (lane < rows) {
          copy(st + lane * G.rs, w + (r0 + lane) * L.main_row_bytes + static_cast<int64_t>(t0) * G.blk, main_bytes,
               &sh.full[slot]);
        } else if (G.mpt && lane >= kRowGroup && lane - kRowGroup < rows) {
          const int r = lane - kRowGroup;
          copy(st + kRowGroup * G.rs + r * G.ms,
               w + P.meta_offset[p] + ((r0 + r) * L.meta_per_row + static_cast<int64_t>(t0) * G.mpt) * 2, meta_bytes,
               &sh.full[slot]);
        }
      }
      if (++slot == G.ns) {
        slot = 0;
        phase ^= 1u;
      }
      if (++s == G.spr) {
        s = 0;
        ++rg;
      }
    }
    return;
  }

  // ---- consumers ---------------------------------------------------------------------------
  GS_PDL_WAIT();  // activations and y are the predecessors'
  const int g = lane >> 2, t = lane & 3;
  const int n = static_cast<int>(P.y[0].rows);
  using XL = typename std::conditional<kXS, SharedX, GlobalX>::type;
  const uint16_t* xsrc = xh;
  if constexpr (kXS) {
    // One bulk copy of the activation rows (after the wait: the predecessor wrote them); a
    // thread-by-thread copy would chain one L2 round trip per 4 KB on the start of every CTA.
    uint8_t* xs = ring + static_cast<size_t>(G.ns) * G.stage_bytes;
    if (threadIdx.x == 0) {
      const uint32_t bytes = static_cast<uint32_t>(n * L.n_in_pad * 2);
      mbar_arrive_expect_tx(&sh.xbar, bytes);
      bulk_g2s(xs, xh, bytes, &sh.xbar);
    }
    mbar_wait(&sh.xbar, 0);
    xsrc = reinterpret_cast<const uint16_t*>(xs);
  }
  static_assert(kI8 == 0 || (F == WFormat::kQ4_K && !kXS), "the int8 forms are Q4_K's, activations not copied");
  static_assert(kI8 < 3 || kDiag == 0, "compute_sb has no measurement kernels");
  static_assert(kI8 != 4 || NT == 1, "compute_sb4 takes up to 4 activation rows");
  static_assert(kI8 != 1 || NT == 1, "the dp4a form takes one activation row");
  const int64_t K = L.n_in_pad;
  X8Rows x8{};
  if constexpr (kI8 == 1) {  // quantize the row into shared memory (all consumer warps), then wait for all
    uint8_t* xq = ring + static_cast<size_t>(G.ns) * G.stage_bytes;
    int8_t* q = reinterpret_cast<int8_t*>(xq);
    float* xf = reinterpret_cast<float*>(xq + 2 * K);
    quantize_x8_warp(xh, K, 1, q, K, xf, xf + K / 32, warp, kConsumerWarps, lane);
    mbar_arrive(&sh.x8bar);
    mbar_wait(&sh.x8bar, 0);
    x8 = x8_rows(xq, 1, K);
  } else if constexpr (kI8 == 2) {
    x8 = x8_rows(sync.x8, n, K);
  }

  // kI8 = 3: where the lane's B pieces (activation rows 8 ct + g, past the last clamped to it)
  // and (xf, xm) of activation row 2t are at tile 0 (compute_sb); kI8 = 3, 4: the warp's scale
  // scratch after the ring.
  int sbo[NT];
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    sbo[ct] = min(8 * ct + g, n - 1) * 2 * static_cast<int>(K) + 16 * (2 * (t & 1) + (t >> 1));
  const int sbf = 2 * t * static_cast<int>(K / 32);
  float4* const sbsc =
      reinterpret_cast<float4*>(ring + static_cast<size_t>(G.ns) * G.stage_bytes) + warp * kSbScaleFloat4s;
  float dv = 0.f;  // kI8 = 1: this lane's sequence sum (compute_dp4a)
  // kI8 = 2: each column tile's B source and scale rows (compute_mma8) and its four sums
  constexpr int NC = kI8 == 2 ? 2 * NT : 1;
  int xo8[NC], fo8[NC];
  float v8[NC][4];
  if constexpr (kI8 == 2) {
#pragma unroll
    for (int ct = 0; ct < NC; ++ct) {
      const int col = 4 * ct + (g >> 1), s8 = g & 1;
      xo8[ct] = (t >> 1) == s8 && col < n ? col * static_cast<int>(K) + 64 * s8 + 16 * (t & 1) : -1;
      fo8[ct] = (4 * ct + t < n ? 4 * ct + t : 0) * static_cast<int>(K / 32);
      for (int i = 0; i < 4; ++i) v8[ct][i] = 0.f;
    }
  }
  float acc[NT][4], acc2[NT][4];
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    for (int i = 0; i < 4; ++i) acc[ct][i] = acc2[ct][i] = 0.f;
  // The loop state in 32 bits (the launch checks G.units < 2^31) and the lane's parts of the
  // stage and activation addresses computed once, not every stage.
  const int iu1 = static_cast<int>(u1), spr = G.spr;
  int slot = 0, seg = 0, rot = 0, slot_off = 0;
  uint32_t phase = 0;
  int rg = static_cast<int>(u0 / spr);
  int s = static_cast<int>(u0) - rg * spr - 1;
  int off0, off1, moff0 = 0, moff1 = 0;
  if constexpr (tile_major(F)) {  // Tile<kQ4_K>'s pointers into the stage (k_matvec_tiles.cuh)
    off0 = 16 * lane;
    off1 = 2048 + 16 * g;
  } else {
    off0 = g * G.rs;
    off1 = (g + 8) * G.rs;
    moff0 = kRowGroup * G.rs + g * G.ms;
    moff1 = kRowGroup * G.rs + (g + 8) * G.ms;
  }
  // Each column tile's activation row at tile 0 (x_operands: row 0 past the last, computed and
  // never stored); a tile's operands are kTileElems per tile further on.
  const uint16_t* xrow[NT];
  bool xok[NT];
  x_operands<NT>(xsrc, L, 0, g, n, xrow, xok);
  for (int u = static_cast<int>(u0); u < iu1; ++u) {
    if (++s == spr) {
      s = 0;
      ++rg;
    }
    const int t0 = s * kStageTiles;
    const int nt = min(kStageTiles, G.n_tiles - t0);
    // The CTA's tiles go to the warps round-robin across stages (tile T of the CTA to warp
    // T mod 8), so a row group of 21 tiles does not leave the same 3 warps idle every time.
    const int j = (warp - rot) & (kConsumerWarps - 1);
    rot = (rot + nt) & (kConsumerWarps - 1);
    RowPtrs R;
    R.ok0 = R.ok1 = true;  // SharedLd reads every row (rows past a part's last are never stored)
    R.pf = false;
    const uint8_t* st = ring + slot_off;
    R.main0 = st + off0;
    R.main1 = st + off1;
    R.meta0 = reinterpret_cast<const uint16_t*>(st + moff0);
    R.meta1 = reinterpret_cast<const uint16_t*>(st + moff1);
    // Every warp waits on every stage, with a tile or not: a parity wait is sound only for a
    // warp that saw the slot's previous phase complete (a warp skipping stages could find the
    // slot still in that phase, and the wait would return at once; docs/perf-notes.md,
    // eighth session).
    if constexpr (kDiag != 2) mbar_wait(&sh.full[slot], phase);
    const bool have = kDiag != 1 && kDiag != 3 && j < nt;
    // compute_sb reads the stage into its own registers (load_sb), the other forms Tile<F>'s.
    typename std::conditional<kI8 >= 3, SbRaw, typename Tile<F>::Raw>::type cur;
    if (have) {
      if constexpr (kI8 >= 3) {
        load_sb(cur, st + static_cast<size_t>(j) * kQ4KTileBytes, lane);
        *reinterpret_cast<volatile uint32_t*>(&sh.sink[warp][lane]) = sb_loaded_words(cur);
      } else {
        Tile<F>::template load<SharedLd>(cur, R, j, t);
        consume_raw<F>(cur, &sh.sink[warp][lane]);
      }
    }
    __syncwarp();
    if (kDiag != 2 && lane == 0) mbar_arrive(&sh.empty[slot]);  // the stage is in registers: refill it
    slot_off += G.stage_bytes;
    if (++slot == G.ns) {
      slot = slot_off = 0;
      phase ^= 1u;
    }
    if constexpr (kI8 == 1) {
      if (have) {
        const int64_t e0 = static_cast<int64_t>(t0 + j) * kTileElems;
        compute_dp4a(cur, x8.q + e0, x8.plane, x8.xf + e0 / 32, x8.xm + e0 / 32, dv, t);
      }
    } else if constexpr (kI8 == 2) {
      if (have) {
#pragma unroll 1
        for (int ct = 0; ct < NC; ++ct) {
          if (4 * ct < n) compute_mma8(cur, x8, xo8[0], fo8[0], (t0 + j) * kTileElems, v8[0]);
          mma8_rotate<NC>(xo8, fo8, v8);
        }
      }
    } else if constexpr (kI8 == 3) {
      if (have) {
        const int T = t0 + j;
        int xo[NT];
#pragma unroll
        for (int ct = 0; ct < NT; ++ct) xo[ct] = sbo[ct] + T * 512;
        compute_sb<NT>(cur, sbsc, x8_sb(sync.x8, n, K), xo, sbf + T * 8, static_cast<int>(K), acc, acc2, lane);
      }
    } else if constexpr (kI8 == 4) {
      if (have) compute_sb4(cur, sbsc, x8_sb(sync.x8, n, K), t0 + j, n, static_cast<int>(K), acc, acc2, lane);
    } else if (have) {
      const uint16_t* xb[NT];
#pragma unroll
      for (int ct = 0; ct < NT; ++ct) xb[ct] = xrow[ct] + (t0 + j) * kTileElems;
      compute_tile<F, NT, XL>(cur, acc, acc2, t, xb);
    }
    if (s != spr - 1 && u != iu1 - 1) continue;

    // End of this CTA's part of row group rg. No barrier: each warp leaves its sums in
    // red[b] and counts itself in; the last warp to arrive adds all eight in warp order
    // (fixed, so the result does not depend on timing) and writes the row group out.
    if constexpr (kI8 == 1) {
      dp4a_gather(dv, acc[0], acc2[0], lane);
      dv = 0.f;
    } else if constexpr (kI8 == 4) {
      sb4_gather(acc, acc2, lane);
    } else if constexpr (kI8 == 2) {
      mma8_gather<NT>(v8, acc, acc2, lane);
#pragma unroll
      for (int ct = 0; ct < NC; ++ct)
        for (int i = 0; i < 4; ++i) v8[ct][i] = 0.f;
    }
    add_acc<NT>(acc, acc2);
    const int b = seg % kRedBufs, use = seg / kRedBufs;
    ++seg;
    if (lane == 0) {  // red[b] is free once its previous segment has been reduced
      // (the sleep lets the emulator's fibers run; a warp two segments ahead is rare here)
      while (*reinterpret_cast<volatile int*>(&sh.done[b]) != use) __nanosleep(20);
    }
    __syncwarp();
#pragma unroll
    for (int ct = 0; ct < NT; ++ct)
      for (int i = 0; i < 4; ++i) sh.red[b][warp][ct * 4 + i][lane] = acc[ct][i];
    __threadfence_block();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = atomicAdd(&sh.arrived[b], 1) == kConsumerWarps - 1;
    last = __shfl_sync(0xffffffffu, last, 0);
    if (last) {
      __threadfence_block();
#pragma unroll
      for (int ct = 0; ct < NT; ++ct)
        for (int i = 0; i < 4; ++i) {
          float v = 0.f;
          for (int k = 0; k < kConsumerWarps; ++k) v += *reinterpret_cast<volatile float*>(&sh.red[b][k][ct * 4 + i][lane]);
          acc[ct][i] = v;
        }
      __syncwarp();
      if (lane == 0) {
        sh.arrived[b] = 0;
        __threadfence_block();
        *reinterpret_cast<volatile int*>(&sh.done[b]) = use + 1;
      }
      const bool starts_mid = static_cast<int64_t>(rg) * spr < u0;  // the tail of a row group that CTA c - 1 finishes
      const bool ends_mid = s != spr - 1;                           // the head of one that CTA c + 1 has a part of
      if (starts_mid) {
        float* part = sync.partial + c * kMatvecPartialFloats;
#pragma unroll
        for (int ct = 0; ct < NT; ++ct)
          for (int i = 0; i < 4; ++i) part[(ct * 4 + i) * 32 + lane] = acc[ct][i];
        __threadfence();
        __syncwarp();
        if (lane == 0) st_release_gpu(&sync.flags[c], 1);
      } else {
        if (ends_mid) {
          if (lane == 0) {
            const uint64_t t_start = global_timer_ns();
            while (ld_acquire_gpu(&sync.flags[c + 1]) == 0) {
              __nanosleep(64);
              if (global_timer_ns() - t_start > kFlagTimeoutNs) __trap();
            }
          }
          __syncwarp();
          const float* part = sync.partial + (c + 1) * kMatvecPartialFloats;
#pragma unroll
          for (int ct = 0; ct < NT; ++ct)
            for (int i = 0; i < 4; ++i) acc[ct][i] += __ldcg(part + (ct * 4 + i) * 32 + lane);
          __syncwarp();
          if (lane == 0) sync.flags[c + 1] = 0;
        }
        int64_t rg_base;
        const int p = part_of(P, rg, rg_base);
        const int64_t row0 = (rg - rg_base) * kRowGroup + g;
        R.ok0 = row0 < P.n_out[p];
        R.ok1 = row0 + 8 < P.n_out[p];
        store_rows<NT>(acc, R, row0, t, xscale, P.y[p]);
      }
    }
#pragma unroll
    for (int ct = 0; ct < NT; ++ct)
      for (int i = 0; i < 4; ++i) acc[ct][i] = acc2[ct][i] = 0.f;
  }
}

constexpr int kMaxDynSmem = 227 * 1024 - static_cast<int>(sizeof(StreamShared<2>)) - 1024;
// Dynamic shared memory of a kXS CTA when two share an SM (228 KB, 1 KB reserved per CTA,
// the static StreamShared<1>).
constexpr int kXsCtaBytes = 228 * 1024 / 2 - 1024 - static_cast<int>(sizeof(StreamShared<1>)) - 512;

int env_int(const char* name, int dflt) {
  const char* e = std::getenv(name);
  if (!e || !*e) return dflt;
  return std::atoi(e);
}

// GS_MVS_DIAG: 1..3 select the measurement kernels (the kernel's kDiag), anything else 0.
int diag_mode() {
  static const int d = [] {
    const int v = env_int("GS_MVS_DIAG", 0);
    return v >= 1 && v <= 3 ? v : 0;
  }();
  return d;
}

// The int8 Q4_K forms (decision 0028) serve Q4_K weights up to kMatvecI8MaxIn inputs, for
// every row count alike (so that verify reproduces decode), when GS_MVS_Q4K=1: dp4a for one
// row, compute_sb (one sub-block an mma) for 2..16. GS_MVS_Q4K=2 takes the twenty-first
// session's compute_mma8 for 2..16 instead (the same bits; kept for the device A/B of the two
// several-row forms). Not the default: on the H200 the one-plane version gained 9% in decode
// but verify 5 cost 1.6 decode steps instead of 1.14, and the two-plane compute_mma8 1.93
// (decision 0028).
int i8_mode() {
  static const int m = [] {
    const int v = env_int("GS_MVS_Q4K", 0);
    return v == 1 || v == 2 ? v : 0;
  }();
  return m;
}
bool i8_on() { return i8_mode() != 0; }
// The several-row int8 form's kI8 (matvec_stream_kernel).
int i8_rows_form() { return i8_mode() == 2 ? 2 : 3; }
bool i8_serves(const WeightLayout& L) {
  return i8_on() && L.format == WFormat::kQ4_K && L.tile_major && L.n_in_pad <= kMatvecI8MaxIn;
}

template <WFormat F, int NT, int MB, bool XS, int D = 0, int I8 = 0>
cudaError_t prepare_one() {
  cudaError_t e = cudaFuncSetAttribute(matvec_stream_kernel<F, NT, MB, XS, D, I8>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxDynSmem + kRingAlign);
  if (e != cudaSuccess) return e;
  // Shared-memory carveout in percent of the maximum (GS_MVS_CARVEOUT, default 72%: two CTAs'
  // 64 KB rings fit); what is not carved out stays L1, which holds the activations the
  // consumers read. The kernels that keep the activations in shared memory take all of it.
  static const int carve = std::clamp(env_int("GS_MVS_CARVEOUT", 72), 0, 100);
  return cudaFuncSetAttribute(matvec_stream_kernel<F, NT, MB, XS, D, I8>,
                              cudaFuncAttributePreferredSharedMemoryCarveout, XS || I8 == 1 ? 100 : carve);
}

template <WFormat F>
cudaError_t prepare_f() {
  cudaError_t e = cudaSuccess;
  for (cudaError_t r : {prepare_one<F, 1, 1, false>(), prepare_one<F, 2, 1, false>(), prepare_one<F, 1, 2, false>(),
                        prepare_one<F, 2, 2, false>(), prepare_one<F, 1, 1, true>(), prepare_one<F, 1, 2, true>()})
    if (r != cudaSuccess) e = r;
  if constexpr (F == WFormat::kQ4_K) {
    if (i8_on()) {  // the int8 forms only when they may run
      for (cudaError_t r : {prepare_one<F, 1, 1, false, 0, 1>(), prepare_one<F, 1, 2, false, 0, 1>()})
        if (r != cudaSuccess) e = r;
      if (i8_rows_form() == 2) {
        for (cudaError_t r : {prepare_one<F, 1, 1, false, 0, 2>(), prepare_one<F, 1, 2, false, 0, 2>(),
                              prepare_one<F, 2, 1, false, 0, 2>(), prepare_one<F, 2, 2, false, 0, 2>()})
          if (r != cudaSuccess) e = r;
      } else {
        for (cudaError_t r : {prepare_one<F, 1, 1, false, 0, 3>(), prepare_one<F, 1, 2, false, 0, 3>(),
                              prepare_one<F, 2, 1, false, 0, 3>(), prepare_one<F, 2, 2, false, 0, 3>(),
                              prepare_one<F, 1, 1, false, 0, 4>(), prepare_one<F, 1, 2, false, 0, 4>()})
          if (r != cudaSuccess) e = r;
      }
      if (diag_mode() == 2) {
        const cudaError_t r = prepare_one<F, 1, 2, false, 2, 1>();
        if (r != cudaSuccess) e = r;
      }
    }
  }
  if (diag_mode() == 0) return e;  // the measurement kernels only when asked for
  for (cudaError_t r : {prepare_one<F, 1, 2, false, 1>(), prepare_one<F, 1, 2, true, 1>(),
                        prepare_one<F, 1, 2, false, 2>(), prepare_one<F, 1, 2, true, 2>(),
                        prepare_one<F, 1, 2, false, 3>(), prepare_one<F, 1, 2, true, 3>()})
    if (r != cudaSuccess) e = r;
  return e;
}

// Main bytes per row tile and meta entries per tile of each format the kernel serves; the
// launch geometry for n_rg row groups of weights shaped as L.
bool stream_geometry(const WeightLayout& L, int64_t n_rg, int64_t n_rows, int n_sm, StreamGeom& G, int& ctas) {
  switch (L.format) {
    case WFormat::kQ4_K: G.mpt = 0; break;
    case WFormat::kQ5_K: G.mpt = 0; break;
    case WFormat::kQ6_K: G.mpt = 1; break;
    case WFormat::kQ8_0: G.mpt = 8; break;
    case WFormat::kQ4_0: G.mpt = 8; break;
    default: return false;
  }
  G.n_tiles = static_cast<int>(L.n_in_pad / kTileElems);
  if (G.n_tiles <= 0) return false;
  G.blk = static_cast<int>(L.main_row_bytes / G.n_tiles);
  G.spr = (G.n_tiles + kStageTiles - 1) / kStageTiles;
  G.n_rg = n_rg;
  G.units = G.n_rg * G.spr;
  if (tile_major(L.format) != L.tile_major) return false;
  if (L.tile_major) {  // one contiguous run of tiles a stage
    G.rs = G.ms = 0;
    G.stage_bytes = static_cast<int>(kStageTiles * kQ4KTileBytes);
  } else {
    G.rs = (kStageTiles * G.blk + 127) / 128 * 128 + 64;
    G.ms = G.mpt ? (kStageTiles * G.mpt * 2 + 15) / 16 * 16 : 0;
    G.stage_bytes = kRowGroup * (G.rs + G.ms);
  }
  // The ring: GS_MVS_RING_KB of shared memory (default 64: tg128 83.6 tok/s at 96 KB with all
  // shared memory carved out, 85.1 at 64 KB with 72% and a larger L1), 2..kMaxStages stages.
  static const int ring_kb = std::max(16, env_int("GS_MVS_RING_KB", 64));
  // Activation rows of up to GS_MVS_XS_KB (default 64) go to shared memory (GS_MVS_XS=0:
  // never): 5 rows of 5376 (verify 5 on the 31B's 5376-wide inputs) fit, one of 21504 too.
  // Two CTAs per SM then share all 228 KB, so ring + activations stay within kXsCtaBytes.
  static const bool xs_on = env_int("GS_MVS_XS", 1) != 0;
  static const int64_t xs_max = int64_t{1024} * std::clamp(env_int("GS_MVS_XS_KB", 64), 0, 96);
  const int64_t xs = n_rows * L.n_in_pad * 2;
  G.xs_bytes = xs_on && n_rows <= 8 && xs <= xs_max ? static_cast<int>((xs + 127) / 128 * 128) : 0;
  if (G.xs_bytes && 2 * G.stage_bytes + G.xs_bytes > kXsCtaBytes) G.xs_bytes = 0;  // two stages must fit too
  // The int8 forms: the one-row one quantizes into shared memory after the ring instead.
  G.x8_bytes = 0;
  if (i8_serves(L)) {
    G.xs_bytes = 0;
    if (n_rows == 1) G.x8_bytes = static_cast<int>((mv::x8_bytes(1, L.n_in_pad) + 127) / 128 * 128);
    else if (i8_rows_form() == 3) G.x8_bytes = kConsumerWarps * mv::kSbScaleFloat4s * 16;
  }
  const int ring_cap = G.xs_bytes ? kXsCtaBytes - G.xs_bytes
                       : G.x8_bytes ? kXsCtaBytes - G.x8_bytes
                                    : ring_kb * 1024;
  // The weight copies mark their L2 lines evict-first (read once a step; GS_MVS_EVICT=0: the
  // default policy).
  static const int evict = env_int("GS_MVS_EVICT", 1) != 0 ? 1 : 0;
  G.evict_first = evict;
  G.ns = std::clamp(std::min(ring_kb * 1024, ring_cap) / G.stage_bytes, 2, kMaxStages);
  while (G.ns > 2 && G.ns * G.stage_bytes + G.xs_bytes + G.x8_bytes > kMaxDynSmem) --G.ns;
  if (G.ns * G.stage_bytes + G.xs_bytes + G.x8_bytes > kMaxDynSmem) return false;
  // Two CTAs per SM (16 consumer warps; ptxas caps the registers at 96) measured faster than
  // one on the H200 for Q4_K and Q8_0 and equal for Q6_K (docs/perf-notes.md);
  // GS_MVS_CTAS_PER_SM=1 takes one.
  static const int per_sm = std::clamp(env_int("GS_MVS_CTAS_PER_SM", 2), 1, 2);
  ctas = static_cast<int>(std::min<int64_t>(G.n_rg, static_cast<int64_t>(per_sm) * n_sm));
  return true;
}

// A 2-D map over rows of `row_bytes` (a multiple of 16) of `esize`-byte elements, boxes of
// box_bytes x 16 rows, zeros outside.
bool encode_rows(CUtensorMap* m, const void* base, int64_t row_bytes, int64_t rows, int esize, int box_bytes) {
  const EncodeTiledFn enc = encode_tiled();
  if (!enc) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(row_bytes / esize), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_bytes / esize), static_cast<cuuint32_t>(kRowGroup)};
  const cuuint32_t estr[2] = {1, 1};
  return enc(m, esize == 8 ? CU_TENSOR_MAP_DATA_TYPE_UINT64 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, const_cast<void*>(base),
             dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The two stage maps (main, meta) of weight w into main and meta: built once per weight and
// geometry, then looked up (a weight's maps depend only on its address, layout and the
// stage's row pitch). False when the driver cannot build them.
bool stage_maps(const uint8_t* w, const WeightLayout& L, const StreamGeom& G, CUtensorMap* main, CUtensorMap* meta) {
  struct Entry {
    int64_t n_out, main_row_bytes, meta_per_row;
    int rs, ms;
    bool ok;
    CUtensorMap main, meta;
  };
  static std::mutex mu;
  static std::unordered_map<const void*, Entry> cache;
  std::lock_guard<std::mutex> lock(mu);
  Entry& e = cache[w];
  if (e.n_out != L.n_out || e.main_row_bytes != L.main_row_bytes || e.meta_per_row != L.meta_per_row || e.rs != G.rs ||
      e.ms != G.ms) {
    e.n_out = L.n_out, e.main_row_bytes = L.main_row_bytes, e.meta_per_row = L.meta_per_row, e.rs = G.rs, e.ms = G.ms;
    std::memset(&e.main, 0, sizeof e.main);
    std::memset(&e.meta, 0, sizeof e.meta);
    e.ok = encode_rows(&e.main, w, L.main_row_bytes, L.n_out, 8, G.rs) &&
           (!G.mpt || encode_rows(&e.meta, w + L.meta_offset, L.meta_per_row * 2, L.n_out, 2, G.ms));
  }
  *main = e.main;
  *meta = e.meta;
  return e.ok;
}

template <WFormat F, int NT, int MB>
void launch_f(cudaStream_t s, const StreamParts& P, const WeightLayout& L, const uint16_t* xh, const float* xscale,
              const StreamGeom& G, int ctas, const MatvecSync& sync, const StageMaps& tm) {
  const size_t smem = static_cast<size_t>(G.ns) * G.stage_bytes + static_cast<size_t>(G.xs_bytes) +
                      static_cast<size_t>(G.x8_bytes) + kRingAlign;
  auto go = [&](auto kernel) { launch_k(kernel, ctas, kThreads, smem, s, P, L, xh, xscale, G, sync, tm); };
  if constexpr (F == WFormat::kQ4_K) {
    if (i8_serves(L)) {
      if constexpr (NT == 1) {
        if (P.y[0].rows == 1) {
          if constexpr (MB == 2) {
            if (diag_mode() == 2) return go(matvec_stream_kernel<F, 1, 2, false, 2, 1>);
          }
          return go(matvec_stream_kernel<F, 1, MB, false, 0, 1>);
        }
      }
      if (i8_rows_form() == 2) return go(matvec_stream_kernel<F, NT, MB, false, 0, 2>);
      if constexpr (NT == 1) {
        if (P.y[0].rows <= 4) return go(matvec_stream_kernel<F, 1, MB, false, 0, 4>);
      }
      return go(matvec_stream_kernel<F, NT, MB, false, 0, 3>);
    }
  }
  if constexpr (NT == 1) {
    const bool xs = G.xs_bytes != 0;
    if constexpr (MB == 2) {
      switch (diag_mode()) {  // the measurement kernels (see the kernel's kDiag)
        case 1: return go(xs ? matvec_stream_kernel<F, 1, 2, true, 1> : matvec_stream_kernel<F, 1, 2, false, 1>);
        case 2: return go(xs ? matvec_stream_kernel<F, 1, 2, true, 2> : matvec_stream_kernel<F, 1, 2, false, 2>);
        case 3: return go(xs ? matvec_stream_kernel<F, 1, 2, true, 3> : matvec_stream_kernel<F, 1, 2, false, 3>);
        default: break;
      }
    }
    if (xs) return go(matvec_stream_kernel<F, NT, MB, true>);
  }
  go(matvec_stream_kernel<F, NT, MB, false>);
}

template <int NT, int MB>
void launch_nt(cudaStream_t s, const StreamParts& P, const WeightLayout& L, const uint16_t* xh, const float* xscale,
               const StreamGeom& G, int ctas, const MatvecSync& sync, const StageMaps& tm) {
  switch (L.format) {
    case WFormat::kQ4_K: launch_f<WFormat::kQ4_K, NT, MB>(s, P, L, xh, xscale, G, ctas, sync, tm); break;
    case WFormat::kQ5_K: launch_f<WFormat::kQ5_K, NT, MB>(s, P, L, xh, xscale, G, ctas, sync, tm); break;
    case WFormat::kQ6_K: launch_f<WFormat::kQ6_K, NT, MB>(s, P, L, xh, xscale, G, ctas, sync, tm); break;
    case WFormat::kQ8_0: launch_f<WFormat::kQ8_0, NT, MB>(s, P, L, xh, xscale, G, ctas, sync, tm); break;
    case WFormat::kQ4_0: launch_f<WFormat::kQ4_0, NT, MB>(s, P, L, xh, xscale, G, ctas, sync, tm); break;
    default: break;
  }
}

}  // namespace

cudaError_t matvec_stream_prepare() {
  cudaError_t e = cudaSuccess;
  for (cudaError_t r : {prepare_f<WFormat::kQ4_K>(), prepare_f<WFormat::kQ5_K>(), prepare_f<WFormat::kQ6_K>(),
                        prepare_f<WFormat::kQ8_0>(), prepare_f<WFormat::kQ4_0>()})
    if (r != cudaSuccess) e = r;
  return e;
}

bool launch_matvec_stream_multi(cudaStream_t s, const void* const* w, const WeightLayout* const* L, const MatF* y,
                                int n, const uint16_t* xh, const float* xscale, int n_sm, const MatvecSync& sync) {
  static const bool off = [] {  // GS_CUDA_MV=mma or =pipe select the older kernels (A/B runs)
    const char* e = std::getenv("GS_CUDA_MV");
    return e && (std::string(e) == "mma" || std::string(e) == "pipe" || std::string(e) == "grid");
  }();
  if (off || n < 1 || n > kMatvecMaxParts || !sync.flags || !sync.partial || !sync.x8) return false;
  const int64_t rows = y[0].rows;
  if (rows < 1 || rows > 16) return false;
  StreamParts P{};
  P.n = n;
  int64_t n_rg = 0;
  for (int p = 0; p < n; ++p) {
    const WeightLayout& Lp = *L[p];
    if (Lp.format != L[0]->format || Lp.n_in_pad != L[0]->n_in_pad || Lp.main_row_bytes != L[0]->main_row_bytes ||
        Lp.meta_per_row != L[0]->meta_per_row || y[p].rows != rows || Lp.n_out <= 0)
      return false;
    P.w[p] = static_cast<const uint8_t*>(w[p]);
    P.n_out[p] = Lp.n_out;
    P.meta_offset[p] = Lp.meta_offset;
    n_rg += (Lp.n_out + kRowGroup - 1) / kRowGroup;
    P.rg_end[p] = n_rg;
    P.y[p] = y[p];
  }
  StreamGeom G{};
  int ctas = 0;
  if (!stream_geometry(*L[0], n_rg, rows, n_sm, G, ctas)) return false;
  if (G.units >= (int64_t{1} << 31)) return false;
  if (ctas > sync.max_ctas) ctas = sync.max_ctas;
  if (ctas <= 0) return false;
  StageMaps tm;
  std::memset(&tm, 0, sizeof tm);
  if (uses_tma(L[0]->format)) {
    for (int p = 0; p < n; ++p)
      if (!stage_maps(P.w[p], *L[p], G, &tm.main[p], &tm.meta[p])) return false;  // the older kernels serve it
  }
  if (i8_serves(*L[0]) && rows > 1) {  // the several-row int8 form's activations first
    const int64_t K = L[0]->n_in_pad;
    const int64_t warps = (rows * (K / 32) + 7) / 8;
    const int grid = static_cast<int>(std::min<int64_t>((warps + 7) / 8, 4 * n_sm));
    const int r = static_cast<int>(rows);
    if (i8_rows_form() == 2) launch_k(mv::quantize_x8_kernel<false>, grid, 256, 0, s, xh, K, r, sync.x8);
    else launch_k(mv::quantize_x8_kernel<true>, grid, 256, 0, s, xh, K, r, sync.x8);
  }
  const bool two = ctas > n_sm;  // two CTAs per SM: the register-capped instantiation
  if (rows <= 8) {
    if (two) launch_nt<1, 2>(s, P, *L[0], xh, xscale, G, ctas, sync, tm);
    else launch_nt<1, 1>(s, P, *L[0], xh, xscale, G, ctas, sync, tm);
  } else {
    if (two) launch_nt<2, 2>(s, P, *L[0], xh, xscale, G, ctas, sync, tm);
    else launch_nt<2, 1>(s, P, *L[0], xh, xscale, G, ctas, sync, tm);
  }
  return true;
}

bool launch_matvec_stream(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh,
                          const float* xscale, MatF y, int n_sm, const MatvecSync& sync) {
  const WeightLayout* Ls[1] = {&L};
  return launch_matvec_stream_multi(s, &w, Ls, &y, 1, xh, xscale, n_sm, sync);
}

}  // namespace gs::cuda
