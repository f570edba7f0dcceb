// Attention over the paged KV pools: a plain CUDA-core kernel (any KV type and head_dim; the
// fallback and cross-check) and a tensor-core kernel for f16 KV in the flash-attention style
// (online softmax over tiles of 32 positions, split over the KV length for decode, partial
// results merged by a combine kernel).
//
// Tensor-core kernel layout: one CTA takes 16 query rows that share a KV head (the query heads
// of a GQA group for one or more consecutive tokens) and 4 warps; S = Q K^T is summed over
// the 4 warps' quarters of head_dim, and each warp keeps the output for its quarter. Rows of
// tokens from different sequences in one CTA are handled one sequence (segment) at a time.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "backend/cuda/k_attn_common.cuh"
#include "backend/cuda/k_attn_fa.cuh"
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_kv_q8.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

// ---- plain kernel ---------------------------------------------------------------------------
constexpr int kSimpleWarps = 4;

template <int DPL>
__global__ void __launch_bounds__(kSimpleWarps * 32) attn_simple_kernel(AttnParams p) {
  GS_PDL_ENTRY();
  const int head = blockIdx.x, tok = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int D = p.head_dim;
  const int G = p.n_head / p.kv.n_head_kv;
  const int j = head / G;
  const int seq = p.tok_seq[tok];
  const int lo = max(p.kv_lo[tok], 0), hi = p.kv_hi[tok];
  float q[DPL], acc[DPL];
  const float* qr = p.q.data + static_cast<int64_t>(tok) * p.q.stride + static_cast<int64_t>(head) * D;
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + 32 * i;
    q[i] = d < D ? qr[d] * p.scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int pos = lo + warp; pos <= hi; pos += kSimpleWarps) {
    const int64_t slot = kv_slot(p.pages, seq, pos, p.kv.n_slots);
    if (slot < 0) continue;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) {
        s += q[i] * kv_pool_load(p.kv.k, p.kv, slot, j, d);
      }
    }
    s = warp_sum(s);
    const float m_new = fmaxf(m, s);
    if (m_new == -INFINITY) continue;
    const float corr = expf(m - m_new), pe = expf(s - m_new);
    l = l * corr + pe;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) {
        acc[i] = acc[i] * corr + pe * kv_pool_load(p.kv.v, p.kv, slot, j, d);
      }
    }
    m = m_new;
  }
  __shared__ float sm[kSimpleWarps], sl[kSimpleWarps];
  __shared__ float sacc[kSimpleWarps][DPL * 32];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < DPL; ++i) sacc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  float M = -INFINITY;
  for (int w = 0; w < kSimpleWarps; ++w) M = fmaxf(M, sm[w]);
  float L = 0.f;
  for (int w = 0; w < kSimpleWarps; ++w)
    if (sl[w] > 0.f) L += sl[w] * expf(sm[w] - M);
  float* orow = p.out.data + static_cast<int64_t>(tok) * p.out.stride + static_cast<int64_t>(head) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.f;
    for (int w = 0; w < kSimpleWarps; ++w)
      if (sl[w] > 0.f) o += sacc[w][d] * expf(sm[w] - M);
    orow[d] = L > 0.f ? o / L : 0.f;
  }
}

// ---- tensor-core kernel ---------------------------------------------------------------------
constexpr int kTP = 32;    // KV positions per tile
constexpr int kRows = 16;  // query rows per CTA
constexpr int kNW = 4;     // warps per CTA, each owning head_dim / 4 output dims

// Q8: q8_0 pools (decision 0035). Their K/V tiles are copied raw into a double buffer of
// their own and dequantized into one f16 K and one f16 V tile before the products; f16 pools
// copy straight into two f16 tiles of each.
template <int D, bool Q8 = false>
struct FaSmem {
  static constexpr int kStride = D + 8;  // halves per smem row; the pad spreads ldmatrix rows over banks
  static constexpr int kSStride = kTP + 4;
  static constexpr int kBufs = Q8 ? 1 : 2;      // f16 K (and V) tiles
  static constexpr int kRawRow = D + D / 16;    // bytes of a q8_0 head row
  static constexpr size_t kQ = 0;  // Q in f16: [kRows][kStride]
  static constexpr size_t kK = kQ + 1ull * kRows * kStride * 2;
  static constexpr size_t kV = kK + 1ull * kBufs * kTP * kStride * 2;
  static constexpr size_t kS = kV + 1ull * kBufs * kTP * kStride * 2;
  static constexpr size_t kSlots = kS + static_cast<size_t>(kNW) * kRows * kSStride * 4;
  static constexpr size_t kRaw = kSlots + 2ull * kTP * 8;  // Q8: [2 buffers][K, V][kTP][kRawRow] bytes
  static constexpr size_t kTotal = kRaw + (Q8 ? 4ull * kTP * kRawRow : 0);
};

// Merges the n_splits partial results of one (token, head) row: weights exp(m_s - M) once per
// split in shared memory, then every thread sums its two outputs over the splits, in split
// order; with op.xh also the row's part of the f16 operand (AttnOperand). Called by every
// thread of a CTA of kCombineThreads. wsh: 2 n_splits + 1 floats of shared memory, red: 4.
// The partials were written by the previous kernel; they are read with L2 loads (__ldcg),
// so the second pass over m and l goes to L2 again (plain loads, as before the fifteenth
// session, could hit L1 there; the difference was not measured).
constexpr int kCombineThreads = 128;
__device__ void combine_row(const float* __restrict__ partial, int n_splits, int n_tokens, int n_head, int D,
                            const MatF& out, const AttnOperand& op, int tok, int head, float* wsh, float* red) {
  const int64_t row = static_cast<int64_t>(tok) * n_head + head;
  const int64_t pstride = static_cast<int64_t>(n_tokens) * n_head * (D + 2);
  const float* P0 = partial + row * (D + 2);
  float M = -INFINITY;
  for (int s = threadIdx.x; s < n_splits; s += kCombineThreads)
    if (__ldcg(P0 + s * pstride + 1) > 0.f) M = fmaxf(M, __ldcg(P0 + s * pstride));
  M = warp_max(M);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = M;
  __syncthreads();
  M = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  float* lsh = wsh + n_splits + 1;  // each split's l, so that the sum below reads no global memory
  for (int s = threadIdx.x; s < n_splits; s += kCombineThreads) {
    const float l = __ldcg(P0 + s * pstride + 1);
    wsh[s] = l > 0.f ? exp2f((__ldcg(P0 + s * pstride) - M) * kLog2e) : 0.f;
    lsh[s] = l;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float L = 0.f;
    for (int s = 0; s < n_splits; ++s) L += wsh[s] * lsh[s];
    wsh[n_splits] = L;
  }
  __syncthreads();
  const float L = wsh[n_splits];
  const float inv = L > 0.f ? 1.0f / L : 0.f;
  float* orow = out.data + static_cast<int64_t>(tok) * out.stride + static_cast<int64_t>(head) * D;
  uint16_t* hrow = op.xh ? op.xh + static_cast<int64_t>(tok) * op.n_in_pad : nullptr;
  for (int d = threadIdx.x * 2; d < D; d += kCombineThreads * 2) {
    float o0 = 0.f, o1 = 0.f;
#pragma unroll 8
    for (int s = 0; s < n_splits; ++s) {
      const float wgt = wsh[s];
      // A split of weight 0 (no key position, or one far below the max) adds exactly nothing:
      // its loads are skipped (at a short context most of the decode splits are empty).
      if (wgt == 0.f) continue;
      const float2 v = __ldcg(reinterpret_cast<const float2*>(P0 + s * pstride + 2 + d));
      o0 += wgt * v.x;
      o1 += wgt * v.y;
    }
    o0 *= inv;
    o1 *= inv;
    orow[d] = o0;
    orow[d + 1] = o1;
    if (hrow) {  // columns c, c + 1 (c even) of a group of 4 stored as (0, 2, 1, 3)
      const int c = head * D + d, at = (c & ~3) + ((c & 3) >> 1);
      hrow[at] = f32_to_f16_bits(__fmul_rn(o0, op.factor));
      hrow[at + 2] = f32_to_f16_bits(__fmul_rn(o1, op.factor));
    }
  }
  if (hrow && head == n_head - 1)
    for (int64_t c = static_cast<int64_t>(n_head) * D + threadIdx.x; c < op.n_in_pad; c += kCombineThreads) hrow[c] = 0;
  if (hrow && head == 0 && threadIdx.x == 0) op.xscale[tok] = op.undo;
  __syncthreads();
}

template <int D, bool Q8>
__global__ void __launch_bounds__(kNW * 32) attn_mma_kernel(AttnParams p, int n_splits, float* __restrict__ partial) {
  GS_PDL_TRIGGER();
  if (!p.early) GS_PDL_WAIT();
  using S = FaSmem<D, Q8>;
  constexpr int kStride = S::kStride;
  constexpr int DS = D / kNW;  // dims per warp
  constexpr int NTO = DS / 8;  // output n-tiles per warp
  constexpr int KQ = DS / 16;  // QK k-steps per warp
  constexpr int NTS = kTP / 8; // score n-tiles
  extern __shared__ __align__(16) uint8_t smem[];
  __half* Qs = reinterpret_cast<__half*>(smem + S::kQ);
  __half* Ks = reinterpret_cast<__half*>(smem + S::kK);
  __half* Vs = reinterpret_cast<__half*>(smem + S::kV);
  float* Sred = reinterpret_cast<float*>(smem + S::kS);
  int64_t* slots = reinterpret_cast<int64_t*>(smem + S::kSlots);
  __shared__ int r_tok[kRows], r_head[kRows], r_lo[kRows], r_hi[kRows];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int n_kv = p.kv.n_head_kv, G = p.n_head / n_kv;
  const RowMap rm = row_map(p.n_head, n_kv, kRows);
  const int j = blockIdx.y, split = blockIdx.z;
  const int tb = blockIdx.x / rm.hb, hb = blockIdx.x % rm.hb;
  const int tok0 = tb * rm.rt;
  const int tok_end = min(tok0 + rm.rt, p.n_tokens);

  if (tid < kRows) {
    const int r = tid, tk = tok0 + r / rm.hc, hg = hb * rm.hc + r % rm.hc;
    const bool valid = r / rm.hc < rm.rt && tk < p.n_tokens && hg < G;
    r_tok[r] = valid ? tk : -1;
    r_head[r] = j * G + hg;
    r_lo[r] = valid ? max(p.kv_lo[tk], 0) : 1;
    r_hi[r] = valid ? p.kv_hi[tk] : 0;
  }
  __syncthreads();
  const __half* kpool = static_cast<const __half*>(p.kv.k);
  const __half* vpool = static_cast<const __half*>(p.kv.v);
  const int64_t kv_width = static_cast<int64_t>(n_kv) * D;
  // A segment (the CTA's rows of one sequence): its key range [lo, hi] (the union of its
  // rows') and this split's tiles of it (split_tiles).
  struct Seg {
    int seq, end, lo, hi, first, n_tiles;
  };
  auto tile_pos = [&](const Seg& sg, int ti) { return (sg.first + ti * n_splits) * kTP; };
  // The KV slots of the segment's tile ti into slots[buf] (-1 outside [lo, hi]: zeros), and the
  // copies of that tile's K and V rows.
  auto tile_slots = [&](const Seg& sg, int ti, int buf) {
    if (tid < kTP) {
      const int pos = tile_pos(sg, ti) + tid;
      slots[buf * kTP + tid] = pos >= sg.lo && pos <= sg.hi ? kv_slot(p.pages, sg.seq, pos, p.kv.n_slots) : -1;
    }
  };
  uint8_t* raw = smem + S::kRaw;  // Q8 only
  auto tile_copies = [&](int buf) {
    if constexpr (Q8) {  // raw head rows: S::kRawRow / 16 chunks each, into raw buffer buf
      constexpr int HB = S::kRawRow, CH = HB / 16;
      const auto* kp8 = static_cast<const uint8_t*>(p.kv.k);
      const auto* vp8 = static_cast<const uint8_t*>(p.kv.v);
      for (int idx = tid; idx < kTP * CH; idx += blockDim.x) {
        const int pi = idx / CH, c = idx % CH;
        const int64_t sl = slots[buf * kTP + pi];
        const int64_t off = sl >= 0 ? (sl * n_kv + j) * HB + c * 16 : 0;
        const int nb = sl >= 0 ? 16 : 0;
        cp_async16(raw + ((2 * buf) * kTP + pi) * HB + c * 16, kp8 + off, nb);
        cp_async16(raw + ((2 * buf + 1) * kTP + pi) * HB + c * 16, vp8 + off, nb);
      }
    } else {
      constexpr int CH = D / 8;
      for (int idx = tid; idx < kTP * CH; idx += blockDim.x) {
        const int pi = idx / CH, c = idx % CH;
        const int64_t sl = slots[buf * kTP + pi];
        const int64_t off = sl >= 0 ? sl * kv_width + static_cast<int64_t>(j) * D + c * 8 : 0;
        const int nb = sl >= 0 ? 16 : 0;
        cp_async16(Ks + (buf * kTP + pi) * kStride + c * 8, kpool + off, nb);
        cp_async16(Vs + (buf * kTP + pi) * kStride + c * 8, vpool + off, nb);
      }
    }
    cp_async_commit();
  };
  // The first segment's split range from the step's inputs, which no kernel of the step writes
  // (p.early: before griddepcontrol.wait, so that these loads overlap the previous kernel),
  // and its first tile's K / V copies issued right after the wait, before the Q loads (K and V
  // of this step's tokens are the previous kernel's).
  auto seg_range = [&](int seg_t) {
    Seg sg;
    sg.seq = p.tok_seq[seg_t];
    sg.end = seg_t + 1;
    while (sg.end < tok_end && p.tok_seq[sg.end] == sg.seq) ++sg.end;
    sg.lo = INT_MAX;
    sg.hi = INT_MIN;
    for (int r = 0; r < kRows; ++r) {
      if (r_tok[r] >= seg_t && r_tok[r] < sg.end && r_lo[r] <= r_hi[r]) {
        sg.lo = min(sg.lo, r_lo[r]);
        sg.hi = max(sg.hi, r_hi[r]);
      }
    }
    split_tiles(sg.lo, sg.hi, n_splits, split, kTP, sg.first, sg.n_tiles);
    return sg;
  };
  bool first_issued = false;
  if (p.early && tok0 < tok_end) {
    const Seg sg = seg_range(tok0);
    if (sg.n_tiles > 0) {
      tile_slots(sg, 0, 0);
      first_issued = true;
    }
  }
  if (p.early) GS_PDL_WAIT();
  if (first_issued) {
    __syncthreads();  // the slots
    tile_copies(0);
  }
  {
    // Q in f16 (decision 0012 §5, addendum: as K is in the pool and P in the PV product).
    // Every thread issues all its loads (float4s) before the first conversion: one L2 round
    // trip. A loop of one element per thread and pass waited for each load in turn: on the
    // H200, 24 us a call at D 512 and 9 us at 256 with a KV range of a few positions.
    const bool qvec = (reinterpret_cast<uintptr_t>(p.q.data) & 15) == 0 && (p.q.stride & 3) == 0;
    constexpr int D4 = D / 4;
    constexpr int kPer = (kRows * D4 + kNW * 32 - 1) / (kNW * 32);
    float4 qv[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int idx = tid + i * kNW * 32;
      qv[i] = make_float4(0.f, 0.f, 0.f, 0.f);
      const int r = idx / D4, d = (idx % D4) * 4;
      if (idx < kRows * D4 && r_tok[r] >= 0) {
        const float* src = p.q.data + static_cast<int64_t>(r_tok[r]) * p.q.stride + static_cast<int64_t>(r_head[r]) * D + d;
        qv[i] = qvec ? *reinterpret_cast<const float4*>(src) : make_float4(src[0], src[1], src[2], src[3]);
      }
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int idx = tid + i * kNW * 32;
      if (idx >= kRows * D4) break;
      const int r = idx / D4, d = (idx % D4) * 4;
      *reinterpret_cast<uint2*>(Qs + r * kStride + d) =
          make_uint2(pack_f32x2(qv[i].x * p.scale, qv[i].y * p.scale), pack_f32x2(qv[i].z * p.scale, qv[i].w * p.scale));
    }
  }

  float o[NTO][4];
#pragma unroll
  for (int i = 0; i < NTO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  int seg_t = tok0;
  while (seg_t < tok_end) {
    const Seg sg = seg_range(seg_t);
    const int seg_end = sg.end;
    const bool in0 = r_tok[g] >= seg_t && r_tok[g] < seg_end;
    const bool in1 = r_tok[g + 8] >= seg_t && r_tok[g + 8] < seg_end;
    const int lo0 = r_lo[g], hi0 = r_hi[g], lo1 = r_lo[g + 8], hi1 = r_hi[g + 8];
    const int n_tiles = sg.n_tiles;
    auto load_tile = [&](int ti, int buf) {
      tile_slots(sg, ti, buf);
      __syncthreads();
      tile_copies(buf);
    };

    if (n_tiles > 0 && !first_issued) load_tile(0, 0);
    first_issued = false;  // only the first segment's first tile was issued ahead
    for (int ti = 0; ti < n_tiles; ++ti) {
      const int buf = ti & 1;
      if (ti + 1 < n_tiles) {
        load_tile(ti + 1, buf ^ 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      // Q8: the landed raw tiles into the f16 tiles (which the previous tile's products were done
      // with at the barrier that ended it), then a barrier before the products read them.
      const int fb = Q8 ? 0 : buf;
      if constexpr (Q8) {
        q8_tile_to_f16<D>(raw + (2 * buf) * kTP * S::kRawRow, Ks, kStride, kTP, tid, kNW * 32);
        q8_tile_to_f16<D>(raw + (2 * buf + 1) * kTP * S::kRawRow, Vs, kStride, kTP, tid, kNW * 32);
        __syncthreads();
      }
      // S (partial over this warp's quarter of head_dim) = Q K^T
      float sc[NTS][4];
#pragma unroll
      for (int i = 0; i < NTS; ++i) sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.f;
      const __half* kb = Ks + fb * kTP * kStride;
#pragma unroll
      for (int kq = 0; kq < KQ; ++kq) {
        const int k0 = warp * DS + kq * 16;
        uint32_t a[4];
        ldmatrix_x4(a, Qs + (lane & 15) * kStride + k0 + (lane >> 4) * 8);
#pragma unroll
        for (int np = 0; np < NTS / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, kb + (np * 16 + (lane & 7) + ((lane >> 4) & 1) * 8) * kStride + k0 + ((lane >> 3) & 1) * 8);
          mma_16816(sc[2 * np], a[0], a[1], a[2], a[3], b[0], b[1]);
          mma_16816(sc[2 * np + 1], a[0], a[1], a[2], a[3], b[2], b[3]);
        }
      }
      float* sw = Sred + warp * kRows * S::kSStride;
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt) {
        sw[g * S::kSStride + nt * 8 + 2 * t] = sc[nt][0];
        sw[g * S::kSStride + nt * 8 + 2 * t + 1] = sc[nt][1];
        sw[(g + 8) * S::kSStride + nt * 8 + 2 * t] = sc[nt][2];
        sw[(g + 8) * S::kSStride + nt * 8 + 2 * t + 1] = sc[nt][3];
      }
      __syncthreads();
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt) {
        float s4[4] = {0.f, 0.f, 0.f, 0.f};
        for (int w = 0; w < kNW; ++w) {
          const float* sr = Sred + w * kRows * S::kSStride;
          s4[0] += sr[g * S::kSStride + nt * 8 + 2 * t];
          s4[1] += sr[g * S::kSStride + nt * 8 + 2 * t + 1];
          s4[2] += sr[(g + 8) * S::kSStride + nt * 8 + 2 * t];
          s4[3] += sr[(g + 8) * S::kSStride + nt * 8 + 2 * t + 1];
        }
        const int pb = tile_pos(sg, ti) + nt * 8 + 2 * t;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int pos = pb + e;
          sc[nt][e] = (in0 && pos >= lo0 && pos <= hi0) ? s4[e] : -INFINITY;
          sc[nt][2 + e] = (in1 && pos >= lo1 && pos <= hi1) ? s4[2 + e] : -INFINITY;
        }
      }
      // online softmax, rows g (rr = 0) and g + 8 (rr = 1)
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NTS; ++nt) mx = fmaxf(mx, fmaxf(sc[nt][2 * rr], sc[nt][2 * rr + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_r[rr], mx);
        float corr = 1.f, sum = 0.f;
        if (m_new == -INFINITY) {
#pragma unroll
          for (int nt = 0; nt < NTS; ++nt) sc[nt][2 * rr] = sc[nt][2 * rr + 1] = 0.f;
        } else {
          corr = exp2f((m_r[rr] - m_new) * kLog2e);
#pragma unroll
          for (int nt = 0; nt < NTS; ++nt) {
            sc[nt][2 * rr] = exp2f((sc[nt][2 * rr] - m_new) * kLog2e);
            sc[nt][2 * rr + 1] = exp2f((sc[nt][2 * rr + 1] - m_new) * kLog2e);
            sum += sc[nt][2 * rr] + sc[nt][2 * rr + 1];
          }
        }
        l_r[rr] = l_r[rr] * corr + sum;
        m_r[rr] = m_new;
#pragma unroll
        for (int i = 0; i < NTO; ++i) {
          o[i][2 * rr] *= corr;
          o[i][2 * rr + 1] *= corr;
        }
      }
      // O += P V
      const __half* vb = Vs + fb * kTP * kStride;
#pragma unroll
      for (int kk = 0; kk < kTP / 16; ++kk) {
        const uint32_t a0 = pack_f32x2(sc[2 * kk][0], sc[2 * kk][1]);
        const uint32_t a1 = pack_f32x2(sc[2 * kk][2], sc[2 * kk][3]);
        const uint32_t a2 = pack_f32x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
        const uint32_t a3 = pack_f32x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
        for (int np = 0; np < NTO / 2; ++np) {
          const int n0 = warp * DS + np * 16;
          uint32_t b[4];
          ldmatrix_x4_trans(b, vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + n0 + ((lane >> 4) & 1) * 8);
          mma_16816(o[2 * np], a0, a1, a2, a3, b[0], b[1]);
          mma_16816(o[2 * np + 1], a0, a1, a2, a3, b[2], b[3]);
        }
      }
      __syncthreads();
    }
    seg_t = seg_end;
  }

  store_thread_rows<D>(p, partial, n_splits, split, r_tok, r_head, g, g + 8, o, m_r, l_r, warp * DS, t,
                       warp == 0 && t == 0);
}

__global__ void __launch_bounds__(kCombineThreads) attn_combine_kernel(const float* __restrict__ partial, int n_splits,
                                                                       int n_tokens, int n_head, int D, MatF out,
                                                                       AttnOperand op) {
  GS_PDL_ENTRY();
  extern __shared__ float wsh[];  // [n_splits] weights, [1] total, [n_splits] the splits' l
  __shared__ float red[4];
  const int64_t row = blockIdx.x;
  combine_row(partial, n_splits, n_tokens, n_head, D, out, op, static_cast<int>(row / n_head),
              static_cast<int>(row % n_head), wsh, red);
}

// The f16 operand of out with op's fixed factor (AttnOperand), where no combine writes it
// (one split). Grid: (ceil(n_in_pad / 4 / 256), rows).
__global__ void __launch_bounds__(256) attn_operand_kernel(MatF out, AttnOperand op) {
  GS_PDL_ENTRY();
  const int64_t r = blockIdx.y;
  const int64_t c4 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c4 == 0) op.xscale[r] = op.undo;
  if (c4 >= op.n_in_pad / 4) return;
  const float* x = out.data + r * out.stride + 4 * c4;
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  if (4 * c4 < out.cols)
    for (int e = 0; e < 4; ++e) v[e] = x[e];  // out.cols is a multiple of 4 (whole heads of 64..512)
  reinterpret_cast<uint2*>(op.xh + r * op.n_in_pad)[c4] =
      make_uint2(pack_f32x2(__fmul_rn(v[0], op.factor), __fmul_rn(v[2], op.factor)),
                 pack_f32x2(__fmul_rn(v[1], op.factor), __fmul_rn(v[3], op.factor)));
}

// ---- prefill tensor-core kernel (many query rows per KV head) -------------------------------
// The 64-row CTA of k_attn_fa.cuh (FaCfg) on f16 pools: each K/V tile (KT positions) is loaded
// once for all 64 rows: 4x less K/V traffic than the 16-row kernel, and no S reduction over 4
// warps. (q8_0 pools: k_attention_q8.cu, the same tile math on dequantized tiles.)
//
// Pipeline (one buffer each for K and V, two barriers a tile; a CTA with fewer Q rows keeps
// 2 or 3 tiles of each in flight instead, FaLayout and the loop's comments):
//   B1: K_i has landed (all threads), every warp is done with V_{i-1} -> issue V_i
//       S_i = Q K_i^T, [C = 1: softmax]
//   B2: V_i has landed, every warp is done with K_i -> issue K_{i+1}
//       [C = 2: add the partner's partial S, softmax], O += P V_i
// so V_i's load hides behind S_i and K_{i+1}'s behind P V_i. The element offsets of the KV
// rows of tile i + 1 are looked up (page table) at B1 of tile i and stored before B2.
// A warp whose 16 rows have no key in a tile skips its math for that tile (causal and
// sliding-window edges). Token blocks are taken from the last one down (longest causal rows
// first: less of a tail in the last wave).

// Dynamic shared memory of attn_fa_kernel for `nrg` resident row groups (1..4: the Q rows a
// CTA can have, 16 each) and `stages` K/V tiles in flight (1..kMaxStages), in this order:
//   Q [16 nrg][kStride] f16, K ring [stages][KT][kStride] f16, V ring the
//   same, partial S [kWarps][NTS][32] float4 (C = 2 only), KV row offsets [stages + 1][KT] int64
// (each slot in Cfg::offs_index order).
// A CTA of a decode or short verify batch holds fewer Q rows than 64, and the space they leave
// holds more K/V tiles in flight (fa_launch_layout); the per-row arithmetic is the same.
struct FaLayout {
  int qrows, stages;
  size_t k, v, x, off, total;
};
template <class Cfg>
__host__ __device__ constexpr FaLayout fa_layout(int nrg, int stages) {
  FaLayout l{};
  l.qrows = 16 * nrg;
  l.stages = stages;
  l.k = 1ull * l.qrows * Cfg::kStride * 2;
  l.v = l.k + static_cast<size_t>(stages) * Cfg::kTileBytes;
  l.x = l.v + static_cast<size_t>(stages) * Cfg::kTileBytes;
  l.off = l.x + (Cfg::C > 1 ? 16ull * Cfg::kWarps * Cfg::NTS * 32 : 0);
  l.total = l.off + (static_cast<size_t>(stages) + 1) * Cfg::KT * 8;
  return l;
}

// Shared memory with 64 Q rows (dynamic + 1536 B of row tables), Q in f16 (decision 0012 §5,
// addendum): D 64/128 (64-position tiles) 3 / 3 stages, 2 CTAs an SM; D 256: 4 warps, 2
// stages (102144 + 1536 B), 2 CTAs an SM; D 512: 8 warps (two per row group), 2 stages
// (217856 + 1536 B), 1 CTA an SM. A decode step or a short verify (fewer Q rows) takes up to
// kMaxStages: with Q as hi + lo parts (before the addendum), D 512 decode took 2 stages, which
// measured 118.7 against 122.1 us with one at depth 32768, 366.3 against 379.5 us at 131072
// on the H200 (31B shapes, one token; docs/perf-notes.md).
using FaCfg64 = FaCfg<64, 1, 64, 2>;
using FaCfg128 = FaCfg<128, 1, 64, 2>;
using FaCfg256 = FaCfg<256, 1, 32, 2>;
using FaCfg512 = FaCfg<512, 2, 32, 1>;

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::MINB)
    attn_fa_kernel(AttnParams p, int n_splits, float* __restrict__ partial, int nrg, int stages) {
  GS_PDL_ENTRY();
  constexpr int D = Cfg::D, C = Cfg::C, KT = Cfg::KT, kRows = Cfg::kRows, kThreads = Cfg::kThreads;
  constexpr int Dc = Cfg::Dc, kStride = Cfg::kStride, NTS = Cfg::NTS, NTO = Cfg::NTO;
  extern __shared__ __align__(16) uint8_t smem[];
  const FaLayout L = fa_layout<Cfg>(nrg, stages);
  __half* Qs = reinterpret_cast<__half*>(smem);
  __half* Ks = reinterpret_cast<__half*>(smem + L.k);
  __half* Vs = reinterpret_cast<__half*>(smem + L.v);
  float4* Xs = reinterpret_cast<float4*>(smem + L.x);
  int64_t* Offs = reinterpret_cast<int64_t*>(smem + L.off);
  const int qrows = L.qrows;  // rows [qrows, kRows) have no token (fa_launch_layout)
  __shared__ int r_tok[kRows], r_head[kRows], r_lo[kRows], r_hi[kRows], r_seq[kRows], r_lead[kRows];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, t = lane & 3;
  const int rg = warp / C, c = warp % C;
  const int n_kv = p.kv.n_head_kv;
  const RowMap rm = row_map(p.n_head, n_kv, kRows);
  const int j = blockIdx.y, split = blockIdx.z;

  load_cta_rows<kRows>(p, rm, j, r_tok, r_head, r_seq, r_lo, r_hi, r_lead);
  // Q (times scale) in f16 (decision 0012 §5, addendum).
  load_q_f16<D, kThreads>(p, r_tok, r_head, qrows, [&](int r, int d) { return reinterpret_cast<uint2*>(Qs + r * kStride + d); });
  __syncthreads();

  float o[NTO][4];
#pragma unroll
  for (int i = 0; i < NTO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const __half* kpool = static_cast<const __half*>(p.kv.k);
  const __half* vpool = static_cast<const __half*>(p.kv.v);
  const int64_t kv_width = static_cast<int64_t>(n_kv) * D;
  const int row_a = rg * 16 + (lane >> 2), row_b = row_a + 8;  // this thread's two rows
  const FaFrags<Cfg> frag(Qs, Ks, Vs, rg, c, lane);

  for (int lead = 0; lead < kRows; ++lead) {
    if (!r_lead[lead]) continue;  // uniform: one segment per sequence present in the CTA
    const int seq = r_seq[lead];
    // The segment's KV range: union over its rows (each lane takes two rows).
    int lo_seg, hi_seg;
    segment_range<kRows>(seq, r_tok, r_seq, r_lo, r_hi, lo_seg, hi_seg);
    // This split's tiles of it (split_tiles: the absolute grid, as the 16-row kernel).
    int t_first = 0, n_tiles = 0;
    split_tiles(lo_seg, hi_seg, n_splits, split, KT, t_first, n_tiles);
    if (n_tiles == 0) continue;  // uniform
    auto tile_pos = [&](int ti) { return (t_first + ti * n_splits) * KT; };
    // This thread's rows in the segment (the split's tiles hold the part of it this split
    // computes), and the warp's keys.
    int lo_rr[2], hi_rr[2], w_lo, w_hi;
    segment_row_ranges(seq, row_a, row_b, true, r_tok, r_seq, r_lo, r_hi, lo_rr, hi_rr);
    warp_key_range(lo_rr, hi_rr, w_lo, w_hi);

    // Element offset of tile ti's row tid, -1: zeros; in two steps (k_pages.cuh): row_fetch
    // issues the page-table load, row_offset_of uses it.
    auto row_fetch = [&](int ti) {
      const int pos = tile_pos(ti) + tid;
      return kv_slot_fetch(p.pages, seq, pos, pos >= lo_seg && pos <= hi_seg);
    };
    auto row_offset_of = [&](const KvSlotFetch& f) -> int64_t {
      const int64_t sl = kv_slot_of(f, p.pages.page_size, p.kv.n_slots);
      return sl < 0 ? -1 : sl * kv_width + static_cast<int64_t>(j) * D;
    };
    auto row_offset = [&](int ti) { return row_offset_of(row_fetch(ti)); };
    // Tile t sits in stage t % S of the K and V rings (S = stages), and its KV row offsets in
    // slot t % (S + 1) of Offs. One cp.async group per tile and tensor, committed in the order
    // K_0 V_0 K_1 V_1 ...; a tile past the last commits an empty group, so that at each wait
    // 2 S - 2 later groups may be pending (K_ti at B1, V_ti at B2).
    const int S = stages;
    auto issue = [&](const __half* pool, __half* ring, int tile) {
      if (tile < n_tiles) {
        constexpr int CH = D / 8, NC = Cfg::kCopies;
        const int key0 = tid / CH, ch = tid % CH;
        const auto* offs = reinterpret_cast<const longlong2*>(Offs + (tile % (S + 1)) * KT + Cfg::offs_index(key0));
        int64_t off_k[NC];
#pragma unroll
        for (int i = 0; i < NC / 2; ++i) {
          const longlong2 v = offs[i];
          off_k[2 * i] = v.x;
          off_k[2 * i + 1] = v.y;
        }
        __half* dst = ring + (tile % S) * KT * kStride;
#pragma unroll
        for (int k = 0; k < NC; ++k) {
          const int pi = key0 + k * Cfg::kKeyStep;
          const int64_t off = off_k[k];
          cp_async16(dst + pi * kStride + ch * 8, pool + (off >= 0 ? off + ch * 8 : 0), off >= 0 ? 16 : 0);
        }
      }
      cp_async_commit();
    };
    auto wait_pending = [&]() {  // all but the 2 S - 2 most recent groups have landed
      if (S == 1) cp_async_wait<0>();
      else if (S == 2) cp_async_wait<2>();
      else cp_async_wait<4>();
    };

    // Prologue: offsets of tiles 0..S-1, then K_0 V_0 .. K_{S-2} V_{S-2} K_{S-1}. In the loop,
    // B1 of tile ti (every warp is done with V_{ti-1}) issues V_{ti+S-1}, and B2 (every warp
    // is done with K_ti) issues K_{ti+S}; with S = 1 that is the two-buffer pipeline above.
    if (tid < KT)
      for (int ti = 0; ti < S; ++ti) Offs[ti * KT + Cfg::offs_index(tid)] = row_offset(ti);
    __syncthreads();
    for (int ti = 0; ti < S; ++ti) {
      issue(kpool, Ks, ti);
      if (ti + 1 < S) issue(vpool, Vs, ti);
    }
    for (int ti = 0; ti < n_tiles; ++ti) {
      const int pb = tile_pos(ti);
      const int st = ti % S;
      wait_pending();
      __syncthreads();  // B1
      issue(vpool, Vs, ti + S - 1);
      // Tile ti + S's page-table entries: loaded here, used after this warp's scores (so that
      // warp 0, which computes rows in a decode step, does not wait for the load first).
      const bool next_row = tid < KT && ti + S < n_tiles;
      KvSlotFetch next{-1, 0};
      if (next_row) next = row_fetch(ti + S);
      const bool active = pb <= w_hi && pb + KT - 1 >= w_lo;  // warp-uniform
      float s[NTS][4];
      if (active) {
        fa_tile_scores<Cfg>(s, frag.q, frag.k + st * KT * kStride);
        if constexpr (C > 1) {
          float4* xw = Xs + warp * NTS * 32 + lane;
#pragma unroll
          for (int i = 0; i < NTS; ++i) xw[i * 32] = make_float4(s[i][0], s[i][1], s[i][2], s[i][3]);
        }
        if constexpr (C == 1) fa_tile_softmax<Cfg>(s, o, pb, t, lo_rr, hi_rr, m_r, l_r);
      }
      if (next_row) Offs[((ti + S) % (S + 1)) * KT + Cfg::offs_index(tid)] = row_offset_of(next);
      wait_pending();
      __syncthreads();  // B2
      issue(kpool, Ks, ti + S);
      if (active) {
        if constexpr (C > 1) {
          fa_add_partner<Cfg>(s, Xs + (rg * C + (1 - c)) * NTS * 32 + lane);
          fa_tile_softmax<Cfg>(s, o, pb, t, lo_rr, hi_rr, m_r, l_r);
        }
        fa_tile_pv<Cfg>(o, s, frag.v + st * KT * kStride);
      }
    }
  }

  store_thread_rows<D>(p, partial, n_splits, split, r_tok, r_head, row_a, row_b, o, m_r, l_r, c * Dc, t,
                       c == 0 && t == 0);
}

// Merges the n_splits > 1 partial results of either attention kernel into p.out (shared
// memory: each split's weight and l, and the total).
// (or, with one split, the operand alone when p.op asks for it).
void launch_combine(cudaStream_t s, const AttnParams& p, int n_splits, float* partial, int D) {
  if (n_splits > 1) {
    launch_k(attn_combine_kernel, static_cast<unsigned>(p.n_tokens * p.n_head), kCombineThreads,
             (2 * n_splits + 1) * sizeof(float), s, partial, n_splits, p.n_tokens, p.n_head, D, p.out, p.op);
  } else if (p.op.xh) {
    const dim3 grid(static_cast<unsigned>((p.op.n_in_pad / 4 + 255) / 256), static_cast<unsigned>(p.n_tokens));
    launch_k(attn_operand_kernel, grid, 256, 0, s, p.out, p.op);
  }
}

// The Q row groups a CTA of attn_fa_kernel<Cfg> needs for p (all CTAs alike: with fewer
// tokens than a CTA takes, one token block of min(n_tokens, rt) tokens of hc heads), and the
// K/V stages that then fit in the CTA's shared-memory budget (at most Cfg::kMaxStages).
// On the 31B shapes: a decode or 2-token verify (8 or 16 rows) at D 512 gets 2 stages, 3 or 4
// tokens 2, 5..8 tokens 1; prefill (64 rows) 1.
template <class Cfg>
FaLayout fa_launch_layout(const AttnParams& p) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, Cfg::kRows);
  const int rows = std::min(p.n_tokens, rm.rt) * rm.hc;
  const int nrg = std::clamp((rows + 15) / 16, 1, Cfg::kRG);
  int stages = 1;
  while (stages < Cfg::kMaxStages && fa_layout<Cfg>(nrg, stages + 1).total <= fa_smem_budget<Cfg>()) ++stages;
  if (const char* e = std::getenv("GS_ATTN_STAGES"); e && *e)  // measurement switch: at most this many
    stages = std::clamp(std::min(stages, std::atoi(e)), 1, Cfg::kMaxStages);
  return fa_layout<Cfg>(nrg, stages);
}

template <class Cfg>
void launch_fa_cfg(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, Cfg::kRows);
  const dim3 grid = attn_grid(p, rm, n_splits);
  const FaLayout l = fa_launch_layout<Cfg>(p);
  launch_k(attn_fa_kernel<Cfg>, grid, Cfg::kThreads, l.total, s, p, n_splits, partial, l.qrows / 16, l.stages);
  launch_combine(s, p, n_splits, partial, Cfg::D);
}

template <class Cfg>
cudaError_t prepare_fa() {
  cudaError_t e = cudaFuncSetAttribute(attn_fa_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(fa_smem_budget<Cfg>()));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(attn_fa_kernel<Cfg>, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
  return e;
}

template <int D, bool Q8 = false>
void launch_mma_d(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, kRows);
  const dim3 grid = attn_grid(p, rm, n_splits);
  launch_k(attn_mma_kernel<D, Q8>, grid, kNW * 32, FaSmem<D, Q8>::kTotal, s, p, n_splits, partial);
  launch_combine(s, p, n_splits, partial, D);
}

template <int D, bool Q8 = false>
cudaError_t prepare_d() {
  return cudaFuncSetAttribute(attn_mma_kernel<D, Q8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(FaSmem<D, Q8>::kTotal));
}

}  // namespace

void launch_attention_combine(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  launch_combine(s, p, n_splits, partial, p.head_dim);
}

AttnOperand attn_operand_for_bound(float bound, uint16_t* xh, float* xscale, int64_t n_in_pad) {
  int ex = 0;
  std::frexp(bound, &ex);  // bound < 2^ex: as act_pow2_scale (k_common.cuh)
  ex = std::max(ex, -100);
  AttnOperand op;
  op.xh = xh;
  op.xscale = xscale;
  op.factor = std::ldexp(1.0f, 11 - ex);
  op.undo = std::ldexp(1.0f, ex - 11);
  op.n_in_pad = n_in_pad;
  return op;
}

void launch_attention_simple(cudaStream_t s, const AttnParams& p) {
  if (p.n_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(p.n_head), static_cast<unsigned>(p.n_tokens));
  const int dpl = (p.head_dim + 31) / 32;
  if (dpl <= 1) launch_k(attn_simple_kernel<1>, grid, kSimpleWarps * 32, 0, s, p);
  else if (dpl <= 2) launch_k(attn_simple_kernel<2>, grid, kSimpleWarps * 32, 0, s, p);
  else if (dpl <= 4) launch_k(attn_simple_kernel<4>, grid, kSimpleWarps * 32, 0, s, p);
  else if (dpl <= 8) launch_k(attn_simple_kernel<8>, grid, kSimpleWarps * 32, 0, s, p);
  else if (dpl <= 16) launch_k(attn_simple_kernel<16>, grid, kSimpleWarps * 32, 0, s, p);
  else launch_k(attn_simple_kernel<32>, grid, kSimpleWarps * 32, 0, s, p);
}

bool attention_mma_supported(const AttnParams& p) {
  const int d = p.head_dim;
  const bool f16_shape = p.kv.f16 && (d == 64 || d == 128 || d == 256 || d == 512);
  const bool q8_shape = p.kv.q8 && (d == 256 || d == 512);  // 16-byte aligned q8_0 rows
  return (f16_shape || q8_shape) && p.kv.n_head_kv > 0 && p.n_head % p.kv.n_head_kv == 0;
}

int attention_mma_cta_count(const AttnParams& p) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, kRows);
  const dim3 grid = attn_grid(p, rm, 1);
  return static_cast<int>(grid.x * grid.y);
}

cudaError_t attention_prepare() {
  cudaError_t e = prepare_d<64>();
  if (e == cudaSuccess) e = prepare_d<128>();
  if (e == cudaSuccess) e = prepare_d<256>();
  if (e == cudaSuccess) e = prepare_d<512>();
  if (e == cudaSuccess) e = prepare_d<256, true>();
  if (e == cudaSuccess) e = prepare_d<512, true>();
  if (e == cudaSuccess) e = prepare_fa<FaCfg64>();
  if (e == cudaSuccess) e = prepare_fa<FaCfg128>();
  if (e == cudaSuccess) e = prepare_fa<FaCfg256>();
  if (e == cudaSuccess) e = prepare_fa<FaCfg512>();
  if (e == cudaSuccess) e = attention_fa_q8_prepare();
  return e;
}

void launch_attention_mma(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  switch (p.head_dim) {
    case 64: launch_mma_d<64>(s, p, n_splits, partial); break;
    case 128: launch_mma_d<128>(s, p, n_splits, partial); break;
    case 256:
      if (p.kv.q8) launch_mma_d<256, true>(s, p, n_splits, partial);
      else launch_mma_d<256>(s, p, n_splits, partial);
      break;
    case 512:
      if (p.kv.q8) launch_mma_d<512, true>(s, p, n_splits, partial);
      else launch_mma_d<512>(s, p, n_splits, partial);
      break;
    default: break;
  }
}

int attention_fa_cta_count(const AttnParams& p) {
  constexpr int kRows = FaCfg256::kRows;
  static_assert(FaCfg64::kRows == kRows && FaCfg128::kRows == kRows && FaCfg512::kRows == kRows, "one row count");
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv, kRows);
  const dim3 grid = attn_grid(p, rm, 1);
  return static_cast<int>(grid.x * grid.y);
}

int attention_fa_ctas_per_sm(int head_dim) {
  switch (head_dim) {
    case 64: return FaCfg64::MINB;
    case 128: return FaCfg128::MINB;
    case 256: return FaCfg256::MINB;
    case 512: return FaCfg512::MINB;
    default: return 1;
  }
}

void launch_attention_fa(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  switch (p.head_dim) {
    case 64: launch_fa_cfg<FaCfg64>(s, p, n_splits, partial); break;
    case 128: launch_fa_cfg<FaCfg128>(s, p, n_splits, partial); break;
    case 256:
      if (p.kv.q8) launch_attention_fa_q8(s, p, n_splits, partial);
      else launch_fa_cfg<FaCfg256>(s, p, n_splits, partial);
      break;
    case 512:
      if (p.kv.q8) launch_attention_fa_q8(s, p, n_splits, partial);
      else launch_fa_cfg<FaCfg512>(s, p, n_splits, partial);
      break;
    default: break;
  }
}

}  // namespace gs::cuda
