// Pieces shared by the tensor-core attention kernels (k_attention.cu and the sm_90a kernel
// of sm90a/k_attention_wg.cu): which tiles of the KV range a split computes, how a CTA's query
// rows cover a GQA group, and how a row's result or partial result is written.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

constexpr float kLog2e = 1.4426950408889634f;

// The tiles of split `split` of n_splits over the key positions [lo, hi] (lo >= 0; none when
// hi < lo). Tiles lie on the absolute grid of `tile` positions, tile i holding positions
// [i tile, (i + 1) tile), and tile i belongs to split i % n_splits. So the tiles a query row
// is computed over, and the split each one is merged in, follow from the row's own range and
// n_splits alone, not from the other rows of its CTA: the rows of a verify pass are computed
// exactly as the decode steps of their tokens (decision 0020). (Splits of contiguous chunks
// of the CTA's union of ranges moved with the batch: a sliding layer's verify rows differed
// from its decode rows.) The split's tiles are first, first + n_splits, ..., count of them.
__device__ __forceinline__ void split_tiles(int lo, int hi, int n_splits, int split, int tile, int& first,
                                            int& count) {
  first = 0;
  count = 0;
  if (lo > hi) return;
  const int t_lo = lo / tile, t_hi = hi / tile;
  const int f = t_lo + ((split - t_lo % n_splits) % n_splits + n_splits) % n_splits;
  if (f > t_hi) return;
  first = f;
  count = (t_hi - f) / n_splits + 1;
}

struct RowMap {
  int hc, hb, rt;  // heads per CTA, head blocks per KV head, tokens per CTA
};
// Where a tile's key `key` has its KV row offset within a slot of the kernels' row-offset
// table, for copies in which one thread takes keys key0 + kKeyStep k, k = 0 .. kCopies - 1
// (key0 < kKeyStep): those keys' offsets are kCopies consecutive int64, which the thread reads
// with 16-byte loads before its first copy.
template <int kKeyStep, int kCopies>
__host__ __device__ constexpr int kv_offs_index(int key) {
  return (key % kKeyStep) * kCopies + key / kKeyStep;
}

// How a CTA of `rows` query rows (16 for the decode kernel, 64 for prefill) covers a GQA group.
__host__ __device__ inline RowMap row_map(int n_head, int n_head_kv, int rows) {
  const int G = n_head / n_head_kv;
  RowMap m;
  m.hc = G < rows ? G : rows;
  m.hb = (G + m.hc - 1) / m.hc;
  m.rt = rows / m.hc;
  return m;
}

// Writes query row (token tk, head) of either kernel: its output row normalised by l (one
// split), or its partial (m, l, then the unnormalised o) for attn_combine_kernel. This lane
// holds the row's outputs d0 + 8 i + 2 t and + 1 in o[i][2 rr] and o[i][2 rr + 1]; the `lead`
// lane of the row writes m and l.
template <int D, int NTO>
__device__ __forceinline__ void store_row(const AttnParams& p, float* __restrict__ partial, int n_splits, int split,
                                          int tk, int head, const float (&o)[NTO][4], int rr, float m, float l, int d0,
                                          int t, bool lead) {
  if (n_splits == 1) {
    const float inv = l > 0.f ? 1.0f / l : 0.f;
    float* orow = p.out.data + static_cast<int64_t>(tk) * p.out.stride + static_cast<int64_t>(head) * D + d0;
#pragma unroll
    for (int i = 0; i < NTO; ++i) {
      orow[i * 8 + 2 * t] = o[i][2 * rr] * inv;
      orow[i * 8 + 2 * t + 1] = o[i][2 * rr + 1] * inv;
    }
    return;
  }
  const int64_t row = static_cast<int64_t>(tk) * p.n_head + head;
  float* P = partial + (static_cast<int64_t>(split) * p.n_tokens * p.n_head + row) * (D + 2);
  if (lead) {
    P[0] = m;
    P[1] = l;
  }
#pragma unroll
  for (int i = 0; i < NTO; ++i) {
    P[2 + d0 + i * 8 + 2 * t] = o[i][2 * rr];
    P[2 + d0 + i * 8 + 2 * t + 1] = o[i][2 * rr + 1];
  }
}

// The end of a tensor-core attention kernel for this thread's two rows (row_a, row_b, the
// mma.sync m16n8 layout's rows g and g + 8 of its warp): each row's l summed over the row's 4
// lanes, then each row with a token written by store_row. o: this lane's outputs of columns
// d0 + 8 i + 2 t (+ 1); lead: this lane writes the rows' m and l.
template <int D, int NTO>
__device__ __forceinline__ void store_thread_rows(const AttnParams& p, float* __restrict__ partial, int n_splits,
                                                  int split, const int* r_tok, const int* r_head, int row_a,
                                                  int row_b, const float (&o)[NTO][4], const float (&m_r)[2],
                                                  float (&l_r)[2], int d0, int t, bool lead) {
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    l_r[rr] += __shfl_xor_sync(0xffffffffu, l_r[rr], 1);
    l_r[rr] += __shfl_xor_sync(0xffffffffu, l_r[rr], 2);
  }
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = rr ? row_b : row_a;
    if (r_tok[r] >= 0) store_row<D>(p, partial, n_splits, split, r_tok[r], r_head[r], o, rr, m_r[rr], l_r[rr], d0, t, lead);
  }
}

// The grid of an attention kernel whose CTAs each take rm.rt tokens of rm.hc query heads of one
// KV head: x = token blocks times head blocks, y = KV heads, z = KV splits.
inline dim3 attn_grid(const AttnParams& p, const RowMap& rm, int n_splits) {
  const int tb = (p.n_tokens + rm.rt - 1) / rm.rt;
  return dim3(static_cast<unsigned>(tb * rm.hb), static_cast<unsigned>(p.kv.n_head_kv), static_cast<unsigned>(n_splits));
}

// The query rows of a 64-row CTA (the 64-row kernels, on attn_grid with the last token block
// first: token block n_tb - 1 - blockIdx.x / hb, head block blockIdx.x % hb): row r is token
// tok0 + r / hc, head j G + hb hc + r % hc of KV head j (RowMap), -1 as token where there is
// none; each row's sequence and KV range [lo, hi] (empty as [1, 0]); lead[r]: r is the first
// row of its sequence (it leads that sequence's segment). Called by every thread of the CTA
// (it holds a barrier); the arrays are the caller's shared memory, read after a barrier.
template <int kRows>
__device__ __forceinline__ void load_cta_rows(const AttnParams& p, const RowMap& rm, int j, int* r_tok, int* r_head,
                                              int* r_seq, int* r_lo, int* r_hi, int* r_lead) {
  const int n_tb = (p.n_tokens + rm.rt - 1) / rm.rt;
  const int hb = static_cast<int>(blockIdx.x) % rm.hb;
  const int tok0 = (n_tb - 1 - static_cast<int>(blockIdx.x) / rm.hb) * rm.rt;
  const int tid = threadIdx.x, G = p.n_head / p.kv.n_head_kv;
  if (tid < kRows) {
    const int r = tid, tk = tok0 + r / rm.hc, hg = hb * rm.hc + r % rm.hc;
    const bool valid = r / rm.hc < rm.rt && tk < p.n_tokens && hg < G;
    r_tok[r] = valid ? tk : -1;
    r_head[r] = j * G + hg;
    r_seq[r] = valid ? p.tok_seq[tk] : -1;
    r_lo[r] = valid ? max(p.kv_lo[tk], 0) : 1;
    r_hi[r] = valid ? p.kv_hi[tk] : 0;
  }
  __syncthreads();
  if (tid < kRows) {
    const int r = tid;
    bool lead = r_tok[r] >= 0;
    for (int q = 0; q < r && lead; ++q) lead = !(r_tok[q] >= 0 && r_seq[q] == r_seq[r]);
    r_lead[r] = lead;
  }
}

// Q times p.scale in f16 for rows [0, qrows) of a CTA (zeros where a row has no token), four
// columns at a time: dst(r, d) is where columns d .. d + 3 of row r go (8 bytes). Every thread
// of the CTA (kThreads) takes its share; the caller publishes the writes with a barrier.
template <int D, int kThreads, class Dst>
__device__ __forceinline__ void load_q_f16(const AttnParams& p, const int* r_tok, const int* r_head, int qrows, Dst dst) {
  const bool qvec = (reinterpret_cast<uintptr_t>(p.q.data) & 15) == 0 && (p.q.stride & 3) == 0;
  constexpr int D4 = D / 4;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < qrows * D4; idx += kThreads) {
    const int r = idx / D4, d = (idx % D4) * 4;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (r_tok[r] >= 0) {
      const float* src = p.q.data + static_cast<int64_t>(r_tok[r]) * p.q.stride + static_cast<int64_t>(r_head[r]) * D + d;
      if (qvec) {
        const float4 f = *reinterpret_cast<const float4*>(src);
        v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
      } else {
        v[0] = src[0]; v[1] = src[1]; v[2] = src[2]; v[3] = src[3];
      }
    }
    *dst(r, d) = make_uint2(pack_f32x2(v[0] * p.scale, v[1] * p.scale), pack_f32x2(v[2] * p.scale, v[3] * p.scale));
  }
}

// The KV range of sequence seq's segment in a CTA of kRows rows: the union [lo, hi] of its
// rows' ranges (empty as [INT_MAX, INT_MIN]), the same in every lane of the calling warp.
template <int kRows>
__device__ __forceinline__ void segment_range(int seq, const int* r_tok, const int* r_seq, const int* r_lo,
                                              const int* r_hi, int& lo_seg, int& hi_seg) {
  const int lane = threadIdx.x & 31;
  lo_seg = INT_MAX;
  hi_seg = INT_MIN;
#pragma unroll
  for (int h = 0; h < kRows / 32; ++h) {
    const int r = lane + 32 * h;
    if (r_tok[r] >= 0 && r_seq[r] == seq && r_lo[r] <= r_hi[r]) {
      lo_seg = min(lo_seg, r_lo[r]);
      hi_seg = max(hi_seg, r_hi[r]);
    }
  }
#pragma unroll
  for (int ofs = 16; ofs > 0; ofs >>= 1) {
    lo_seg = min(lo_seg, __shfl_xor_sync(0xffffffffu, lo_seg, ofs));
    hi_seg = max(hi_seg, __shfl_xor_sync(0xffffffffu, hi_seg, ofs));
  }
}

// The KV ranges of a thread's two query rows (row_a, row_b) within the segment of sequence
// seq: [lo_rr, hi_rr], empty as [INT_MAX, INT_MIN] where a row has no token or belongs to
// another sequence, and both empty where `take` is false (a thread whose warp holds no rows).
__device__ __forceinline__ void segment_row_ranges(int seq, int row_a, int row_b, bool take, const int* r_tok,
                                                   const int* r_seq, const int* r_lo, const int* r_hi,
                                                   int (&lo_rr)[2], int (&hi_rr)[2]) {
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = rr ? row_b : row_a;
    const bool in = take && r_tok[r] >= 0 && r_seq[r] == seq && r_lo[r] <= r_hi[r];
    lo_rr[rr] = in ? r_lo[r] : INT_MAX;
    hi_rr[rr] = in ? r_hi[r] : INT_MIN;
  }
}

// The union [w_lo, w_hi] of the calling warp's row ranges (segment_row_ranges), the same in
// every lane: the keys any of the warp's rows attends to.
__device__ __forceinline__ void warp_key_range(const int (&lo_rr)[2], const int (&hi_rr)[2], int& w_lo, int& w_hi) {
  w_lo = min(lo_rr[0], lo_rr[1]);
  w_hi = max(hi_rr[0], hi_rr[1]);
#pragma unroll
  for (int ofs = 16; ofs > 0; ofs >>= 1) {
    w_lo = min(w_lo, __shfl_xor_sync(0xffffffffu, w_lo, ofs));
    w_hi = max(w_hi, __shfl_xor_sync(0xffffffffu, w_hi, ofs));
  }
}

// Whether a 32-key tile's keys are consecutive rows of a KV pool, for the copies of the wgmma
// prefill kernel (sm90a/k_attention_wg.cu): called by one whole warp, lane k with key k's element offset `off` (-1: no row, the
// key outside the segment or unmapped). Returns key 0's offset where every key has a row and
// key k's is key 0's + k kv_width (every lane gets it), else -1. A tile lies in one page
// wherever the page size is a multiple of 32 (the engine's 256), so inside a segment its keys
// are consecutive slots; a copy then needs one offset a tile instead of one a key.
__device__ __forceinline__ int64_t contiguous_tile_base(int64_t off, int lane, int64_t kv_width) {
  const int64_t off0 = __shfl_sync(0xffffffffu, off, 0);
  const bool gap = off < 0 || off != off0 + static_cast<int64_t>(lane) * kv_width;
  return __any_sync(0xffffffffu, gap) ? -1 : off0;
}

// The online softmax of a thread's two rows (mma.sync m16n8 layout: s[nt][2 rr + e] is row rr,
// key pb + 8 nt + 2 t + e) over one tile of 8 NTS keys: keys outside a row's [lo_rr, hi_rr]
// masked, the row's running max m_r and sum l_r updated, s replaced by the unnormalised
// probabilities; corr[rr]: the factor the row's output accumulators must be scaled by.
// kSkipFullMask: a row whose range holds the whole tile skips the per-key tests (a branch,
// the same values; the wgmma prefill kernel, where at depth nearly every tile is whole).
template <int NTS, bool kSkipFullMask = false>
__device__ __forceinline__ void online_softmax_rows(float (&s)[NTS][4], int pb, int t, const int (&lo_rr)[2],
                                                    const int (&hi_rr)[2], float (&m_r)[2], float (&l_r)[2],
                                                    float (&corr)[2]) {
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    float mx = -INFINITY;
    if (kSkipFullMask && pb >= lo_rr[rr] && pb + NTS * 8 - 1 <= hi_rr[rr]) {
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * rr], s[nt][2 * rr + 1]));
    } else {
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int pos = pb + nt * 8 + 2 * t + e;
          float& v = s[nt][2 * rr + e];
          v = (pos >= lo_rr[rr] && pos <= hi_rr[rr]) ? v : -INFINITY;
          mx = fmaxf(mx, v);
        }
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m_r[rr], mx);
    float sum = 0.f;
    corr[rr] = 1.f;
    if (m_new == -INFINITY) {
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt) s[nt][2 * rr] = s[nt][2 * rr + 1] = 0.f;
    } else {
      corr[rr] = exp2f((m_r[rr] - m_new) * kLog2e);
#pragma unroll
      for (int nt = 0; nt < NTS; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& v = s[nt][2 * rr + e];
          v = exp2f((v - m_new) * kLog2e);
          sum += v;
        }
    }
    l_r[rr] = l_r[rr] * corr[rr] + sum;
    m_r[rr] = m_new;
  }
}

}  // namespace gs::cuda
