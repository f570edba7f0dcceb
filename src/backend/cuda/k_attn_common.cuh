// Pieces shared by the tensor-core attention kernels (k_attention.cu and the sm_90a kernel
// of sm90a/k_attention_wg.cu): which tiles of the KV range a split computes, how a CTA's query
// rows cover a GQA group, and how a row's result or partial result is written.
#pragma once

#include <cmath>

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

}  // namespace gs::cuda
