// The pipelined decode matvec for Q5_K weights (it served Q4_K too until Q4_K went
// tile-major, decision 0022: its per-lane row copies assume row-major blocks): the tiles and
// arithmetic of the register-prefetch kernel in k_matvec.cu (k_matvec_tiles.cuh), but a
// tile's blocks travel through a ring of shared-memory slots per warp with cp.async, so the
// next tiles are in flight while one is computed without holding them in registers. Each lane copies and later
// reads back only its own 16-byte pieces (slot layout [stage][field][lane], conflict-free), so
// a per-thread cp.async.wait_group is the only synchronisation.
#include <cstdlib>
#include <string>

#include "backend/cuda/k_launch.cuh"
#include "backend/cuda/k_matvec_pipe.h"
#include "backend/cuda/k_matvec_tiles.cuh"

namespace gs::cuda {
namespace {
using namespace mv;

// cp.async of 16 bytes; pf asks L2 to fetch the surrounding 256 bytes.
__device__ __forceinline__ void cp_async16_w(void* dst, const void* src, int src_bytes, bool pf) {
  if (pf)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
  else
    cp_async16(dst, src, src_bytes);
}

constexpr int kPipeMaxWarps = 8;  // warps of a CTA (the dynamic shared memory is sized for them)

template <WFormat F>
struct AsyncTile;

// Fields in the order of TileQK45::Raw: h0, h1, qa0, qb0, qa1, qb1 (, e0, e1 for Q5_K).
template <bool kQ5>
struct AsyncQK45 {
  static constexpr int kFields = kQ5 ? 8 : 6;
  using Raw = typename TileQK45<kQ5>::Raw;
  static __device__ __forceinline__ void issue(uint4* st, const RowPtrs& R, int64_t tile, int t, int lane) {
    constexpr int kBlock = kQ5 ? 176 : 144, kQs = kQ5 ? 48 : 16;
    const uint8_t* b0 = R.main0 + tile * kBlock;
    const uint8_t* b1 = R.main1 + tile * kBlock;
    const int n0 = R.ok0 ? 16 : 0, n1 = R.ok1 ? 16 : 0;
    cp_async16_w(st + 0 * 32 + lane, b0, n0, R.pf);
    cp_async16_w(st + 1 * 32 + lane, b1, n1, R.pf);
    cp_async16_w(st + 2 * 32 + lane, b0 + kQs + 16 * t, n0, R.pf);
    cp_async16_w(st + 3 * 32 + lane, b0 + kQs + 64 + 16 * t, n0, R.pf);
    cp_async16_w(st + 4 * 32 + lane, b1 + kQs + 16 * t, n1, R.pf);
    cp_async16_w(st + 5 * 32 + lane, b1 + kQs + 64 + 16 * t, n1, R.pf);
    if constexpr (kQ5) {
      cp_async16_w(st + 6 * 32 + lane, b0 + 16 + 16 * (t & 1), n0, R.pf);
      cp_async16_w(st + 7 * 32 + lane, b1 + 16 + 16 * (t & 1), n1, R.pf);
    }
  }
  static __device__ __forceinline__ void read(Raw& r, const uint4* st, int lane) {
    r.h0 = st[0 * 32 + lane];
    r.h1 = st[1 * 32 + lane];
    r.qa0 = st[2 * 32 + lane];
    r.qb0 = st[3 * 32 + lane];
    r.qa1 = st[4 * 32 + lane];
    r.qb1 = st[5 * 32 + lane];
    if constexpr (kQ5) {
      r.e0 = st[6 * 32 + lane];
      r.e1 = st[7 * 32 + lane];
    }
  }
};
template <>
struct AsyncTile<WFormat::kQ5_K> : AsyncQK45<true> {};

// Dynamic shared memory of a pipelined CTA: per warp, kStages slots of kFields x 32 lanes x 16 B.
template <WFormat F, int kStages>
constexpr size_t pipe_warp_bytes() {
  return static_cast<size_t>(kStages) * AsyncTile<F>::kFields * 32 * 16;
}

template <WFormat F, int NT, int kStages>
__global__ void __launch_bounds__(kPipeMaxWarps * 32) matvec_pipe_kernel(const uint8_t* __restrict__ w, WeightLayout L,
                                                             const uint16_t* __restrict__ xh,
                                                             const float* __restrict__ xscale, MatF y, MvGrid G) {
  GS_PDL_ENTRY();
  extern __shared__ uint4 pipe_smem[];
  using A = AsyncTile<F>;
  constexpr int kSlot = A::kFields * 32;  // uint4 per stage slot
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wr = warp % G.wr, wk = warp / G.wr;
  const int g = lane >> 2, t = lane & 3;
  uint4* ring = pipe_smem + static_cast<size_t>(warp) * kStages * kSlot;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * G.wr + wr) * 16 + g;
  const RowPtrs R = row_ptrs(w, L, row0, G);
  const int n = static_cast<int>(y.rows);
  const int64_t n_tiles = L.n_in_pad / kTileElems;

  float acc[NT][4], acc2[NT][4];
#pragma unroll
  for (int ct = 0; ct < NT; ++ct)
    for (int i = 0; i < 4; ++i) acc[ct][i] = acc2[ct][i] = 0.f;

  // Prologue: tiles 0 .. kStages - 2 of this warp (an empty group where there are fewer).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    const int64_t tile = wk + static_cast<int64_t>(s) * G.wk;
    if (tile < n_tiles) A::issue(ring + s * kSlot, R, tile, t, lane);
    cp_async_commit();
  }
  int stage = 0;
  for (int64_t tile = wk; tile < n_tiles; tile += G.wk) {
    const int64_t ahead = tile + static_cast<int64_t>(kStages - 1) * G.wk;
    const int ahead_stage = stage == 0 ? kStages - 1 : stage - 1;  // the slot read last iteration
    if (ahead < n_tiles) A::issue(ring + ahead_stage * kSlot, R, ahead, t, lane);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // this tile's group is complete
    typename A::Raw cur;
    A::read(cur, ring + stage * kSlot, lane);
    const uint16_t* xb[NT];
    bool xok[NT];
    x_operands<NT>(xh, L, tile, g, n, xb, xok);
    compute_tile<F, NT>(cur, acc, acc2, t, xb);
    stage = stage == kStages - 1 ? 0 : stage + 1;
  }
  cp_async_wait<0>();

  // k-split partial sums through the warps' own rings (each is done with its ring; its lanes
  // read other lanes' slots there, hence the warp barrier first).
  __syncwarp();
  add_acc<NT>(acc, acc2);
  if (!ksplit_sum<NT>(acc, reinterpret_cast<float*>(pipe_smem), static_cast<size_t>(kStages) * kSlot * 4, G, warp,
                      lane))
    return;
  store_rows<NT>(acc, R, row0, t, xscale, y);
}


template <WFormat F, int NT, int kStages>
cudaError_t pipe_prepare_one() {
  return cudaFuncSetAttribute(matvec_pipe_kernel<F, NT, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(kPipeMaxWarps * pipe_warp_bytes<F, kStages>()));
}

template <int kStages>
cudaError_t pipe_prepare_stages() {
  cudaError_t e = cudaSuccess;
  for (cudaError_t r : {pipe_prepare_one<WFormat::kQ5_K, 1, kStages>(), pipe_prepare_one<WFormat::kQ5_K, 2, kStages>()})
    if (r != cudaSuccess) e = r;
  return e;
}

template <WFormat F, int kStages>
void launch_pipe_f(cudaStream_t s, const uint8_t* w, const WeightLayout& L, const uint16_t* xh, const float* xscale,
                   MatF y, dim3 grid, int threads, MvGrid G) {
  const size_t smem = static_cast<size_t>(threads / 32) * pipe_warp_bytes<F, kStages>();
  if (y.rows <= 8) launch_k(matvec_pipe_kernel<F, 1, kStages>, grid, threads, smem, s, w, L, xh, xscale, y, G);
  else launch_k(matvec_pipe_kernel<F, 2, kStages>, grid, threads, smem, s, w, L, xh, xscale, y, G);
}

// Measured on the H200 (docs/perf-notes.md): two stages beat three and four (the ring's shared
// memory caps the warps per SM) and the register-prefetch kernel for Q4_K; Q6_K's 11 slots
// per stage make it slower there, so Q6_K stays on the register-prefetch kernel.
constexpr int kPipeStages = 2;

// Whether a matvec takes the pipelined kernel: Q5_K matrices of 32 MB or more (the Q4_K
// numbers below are from when it served Q4_K). On
// the H200 it moves the 5376 x 21504 and 21504 x 5376 Q4_K matvecs (65 MB) from 38-41 /
// 51-57 us to 35 / 45-47 us; the 12 MB attn_k measured 10.6 to 12.8 us with it against
// 10.3-10.9 without, and Q6_K slows throughout (its 11 slots a stage cap the warps per SM by
// shared memory). GS_CUDA_MV=mma turns it off (A/B runs), GS_CUDA_MV=pipe takes it for every
// size (the parity tests' odd shapes).
bool use_pipe(const WeightLayout& L, int warps) {
  static const int mode = [] {  // 0 by size, 1 never, 2 always
    const char* e = std::getenv("GS_CUDA_MV");
    if (e && std::string(e) == "mma") return 1;
    return e && std::string(e) == "pipe" ? 2 : 0;
  }();
  if (mode == 1 || warps > kPipeMaxWarps) return false;
  if (L.format != WFormat::kQ5_K || L.tile_major) return false;
  return mode == 2 || L.main_row_bytes * L.n_out >= (int64_t{32} << 20);
}

}  // namespace

cudaError_t matvec_pipe_prepare() { return pipe_prepare_stages<kPipeStages>(); }

bool launch_matvec_pipe(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh, const float* xscale,
                        MatF y, dim3 grid, int threads, const mv::MvGrid& G) {
  if (!use_pipe(L, threads / 32)) return false;
  const auto* wb = static_cast<const uint8_t*>(w);
  launch_pipe_f<WFormat::kQ5_K, kPipeStages>(s, wb, L, xh, xscale, y, grid, threads, G);
  return true;
}

}  // namespace gs::cuda
