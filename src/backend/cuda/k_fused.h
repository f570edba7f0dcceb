// Launchers of the fused kernels (k_fused.cu): several of the small ops of a decode step in
// one kernel, bit for bit what the separate kernels of k_elementwise.cu compute. Plain
// structs as in cuda_kernels.h; shapes are checked by the caller (cuda_backend.cpp). Each
// returns false, launching nothing, when it does not serve the shape.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_kernels.h"

namespace gs::cuda {

// Per row r of x, o, out ([rows, cols], the same shape):
//   x = (x + rms_norm(o, o_weight)) * s;   out = rms_norm(x, out_weight)
// one CTA per row, the rows in registers (o and x read once, x and out written once; o is
// left as it was). Weights [cols] or null. With xh non-null (rows <= the matvec's rows) it
// also writes out as launch_rms_norm_rows does: xh [rows, n_in_pad] and xscale [rows].
// Served: cols % 4 == 0, cols <= 8192, every row and weight 16-byte aligned, rows > 0;
// x must not overlap o or out (out may alias o).
bool launch_add_rms_norm_rows(cudaStream_t s, MatF x, MatF o, const float* o_weight, float scale,
                              const float* out_weight, float eps, MatF out, uint16_t* xh, float* xscale,
                              int64_t n_in_pad);

// The attention inputs of one layer (backend.h qkv_norm_rope_store), in place.
struct QkvParams {
  MatF q;  // [rows, n_q * head_dim]
  MatF k;  // [rows, n_kv * head_dim]; cols 0: q only
  MatF v;  // [rows, n_kv * head_dim]
  bool v_from_k;            // v = the raw k (read before k is normed)
  const float* q_weight;    // [head_dim] or null
  const float* k_weight;    // [head_dim] or null
  float eps;
  const int32_t* pos;       // [rows]
  RopeParams rope;          // rope.head_dim: the head size of q, k and v
  KvView kv;                // n_head_kv == n_kv, head_dim == rope.head_dim (unused when k.cols == 0)
  const int32_t* slots;     // [rows]; slots outside [0, kv.n_slots) are not stored
};
constexpr int kQkvMaxHeadDim = 1024;
// One warp per head (the per-head norm of rms_norm_warp_kernel), 8 heads per CTA, one row
// per CTA whose RoPE angles it computes once (rope_cos_sin); K and V of the same kv head in
// the same warp. Served: head_dim <= kQkvMaxHeadDim, n_dims even in [2, 2 * kRopeMaxPairs]
// and <= head_dim, q.cols and k.cols multiples of head_dim. rows == 0: nothing to do (true).
bool launch_qkv_norm_rope_store(cudaStream_t s, const QkvParams& p);

}  // namespace gs::cuda
