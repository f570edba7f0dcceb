// Attention over the paged KV pools: a plain CUDA-core kernel (any KV type and head_dim; the
// fallback and cross-check) and a tensor-core kernel for f16 KV in the flash-attention style
// (online softmax over tiles of 32 positions, split over the KV length for decode, partial
// results merged by a combine kernel).
//
// Tensor-core kernel layout: one CTA takes 16 query rows that share a KV head (the query heads
// of a GQA group for one or more consecutive tokens) and 4 warps; S = Q K^T is summed over
// the 4 warps' quarters of head_dim, and each warp keeps the output for its quarter. Rows of
// tokens from different sequences in one CTA are handled one sequence (segment) at a time.
#include <cfloat>
#include <climits>

#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

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
  const int64_t width = static_cast<int64_t>(p.kv.n_head_kv) * D;
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
    const int64_t off = slot * width + static_cast<int64_t>(j) * D;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < D) {
        const float kv = p.kv.f16 ? f16_bits_to_f32(static_cast<const uint16_t*>(p.kv.k)[off + d])
                                  : static_cast<const float*>(p.kv.k)[off + d];
        s += q[i] * kv;
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
        const float vv = p.kv.f16 ? f16_bits_to_f32(static_cast<const uint16_t*>(p.kv.v)[off + d])
                                  : static_cast<const float*>(p.kv.v)[off + d];
        acc[i] = acc[i] * corr + pe * vv;
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

template <int D>
struct FaSmem {
  static constexpr int kStride = D + 8;  // halves per smem row; the pad spreads ldmatrix rows over banks
  static constexpr int kSStride = kTP + 4;
  static constexpr size_t kQ = 0;  // Q as hi + lo f16 parts: [2][kRows][kStride]
  static constexpr size_t kK = kQ + 2ull * kRows * kStride * 2;
  static constexpr size_t kV = kK + 2ull * kTP * kStride * 2;
  static constexpr size_t kS = kV + 2ull * kTP * kStride * 2;
  static constexpr size_t kSlots = kS + static_cast<size_t>(kNW) * kRows * kSStride * 4;
  static constexpr size_t kTotal = kSlots + 2ull * kTP * 8;
};

struct RowMap {
  int hc, hb, rt;  // heads per CTA, head blocks per KV head, tokens per CTA
};
__host__ __device__ inline RowMap row_map(int n_head, int n_head_kv) {
  const int G = n_head / n_head_kv;
  RowMap m;
  m.hc = G < kRows ? G : kRows;
  m.hb = (G + m.hc - 1) / m.hc;
  m.rt = kRows / m.hc;
  return m;
}

template <int D>
__global__ void __launch_bounds__(kNW * 32) attn_mma_kernel(AttnParams p, int n_splits, float* __restrict__ partial) {
  GS_PDL_ENTRY();
  using S = FaSmem<D>;
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
  const RowMap rm = row_map(p.n_head, n_kv);
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
  for (int idx = tid; idx < kRows * D; idx += blockDim.x) {
    const int r = idx / D, d = idx % D;
    float v = 0.f;
    if (r_tok[r] >= 0)
      v = p.q.data[static_cast<int64_t>(r_tok[r]) * p.q.stride + static_cast<int64_t>(r_head[r]) * D + d] * p.scale;
    // Q = hi + lo in f16: scores keep ~22 bits of Q (Gemma's scores are unscaled and large).
    const __half hi = __float2half_rn(v);
    Qs[r * kStride + d] = hi;
    Qs[kRows * kStride + r * kStride + d] = __float2half_rn(v - __half2float(hi));
  }

  float o[NTO][4];
#pragma unroll
  for (int i = 0; i < NTO; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
  const __half* kpool = static_cast<const __half*>(p.kv.k);
  const __half* vpool = static_cast<const __half*>(p.kv.v);
  const int64_t kv_width = static_cast<int64_t>(n_kv) * D;

  int seg_t = tok0;
  while (seg_t < tok_end) {
    const int seq = p.tok_seq[seg_t];
    int seg_end = seg_t + 1;
    while (seg_end < tok_end && p.tok_seq[seg_end] == seq) ++seg_end;
    int lo_seg = INT_MAX, hi_seg = INT_MIN;
    for (int r = 0; r < kRows; ++r) {
      if (r_tok[r] >= seg_t && r_tok[r] < seg_end && r_lo[r] <= r_hi[r]) {
        lo_seg = min(lo_seg, r_lo[r]);
        hi_seg = max(hi_seg, r_hi[r]);
      }
    }
    const bool in0 = r_tok[g] >= seg_t && r_tok[g] < seg_end;
    const bool in1 = r_tok[g + 8] >= seg_t && r_tok[g + 8] < seg_end;
    const int lo0 = r_lo[g], hi0 = r_hi[g], lo1 = r_lo[g + 8], hi1 = r_hi[g + 8];
    int p_begin = 0, p_end = 0;
    if (lo_seg <= hi_seg) {
      const int64_t len = static_cast<int64_t>(hi_seg) - lo_seg + 1;
      int64_t chunk = (len + n_splits - 1) / n_splits;
      chunk = (chunk + kTP - 1) / kTP * kTP;
      const int64_t b = lo_seg + split * chunk;
      const int64_t hi1p = static_cast<int64_t>(hi_seg) + 1;
      const int64_t e = hi1p < b + chunk ? hi1p : b + chunk;
      if (b < e) {
        p_begin = static_cast<int>(b);
        p_end = static_cast<int>(e);
      }
    }
    const int n_tiles = (p_end - p_begin + kTP - 1) / kTP;

    auto load_tile = [&](int ti, int buf) {
      const int pb = p_begin + ti * kTP;
      if (tid < kTP) {
        const int pos = pb + tid;
        slots[buf * kTP + tid] = pos < p_end ? kv_slot(p.pages, seq, pos, p.kv.n_slots) : -1;
      }
      __syncthreads();
      constexpr int CH = D / 8;
      for (int idx = tid; idx < kTP * CH; idx += blockDim.x) {
        const int pi = idx / CH, c = idx % CH;
        const int64_t sl = slots[buf * kTP + pi];
        const int64_t off = sl >= 0 ? sl * kv_width + static_cast<int64_t>(j) * D + c * 8 : 0;
        const int nb = sl >= 0 ? 16 : 0;
        cp_async16(Ks + (buf * kTP + pi) * kStride + c * 8, kpool + off, nb);
        cp_async16(Vs + (buf * kTP + pi) * kStride + c * 8, vpool + off, nb);
      }
      cp_async_commit();
    };

    if (n_tiles > 0) load_tile(0, 0);
    for (int ti = 0; ti < n_tiles; ++ti) {
      const int buf = ti & 1;
      if (ti + 1 < n_tiles) {
        load_tile(ti + 1, buf ^ 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      // S (partial over this warp's quarter of head_dim) = Q K^T
      float sc[NTS][4];
#pragma unroll
      for (int i = 0; i < NTS; ++i) sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.f;
      const __half* kb = Ks + buf * kTP * kStride;
#pragma unroll
      for (int kq = 0; kq < KQ; ++kq) {
        const int k0 = warp * DS + kq * 16;
        uint32_t a[4], al[4];
        ldmatrix_x4(a, Qs + (lane & 15) * kStride + k0 + (lane >> 4) * 8);
        ldmatrix_x4(al, Qs + kRows * kStride + (lane & 15) * kStride + k0 + (lane >> 4) * 8);
#pragma unroll
        for (int np = 0; np < NTS / 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b, kb + (np * 16 + (lane & 7) + ((lane >> 4) & 1) * 8) * kStride + k0 + ((lane >> 3) & 1) * 8);
          mma_16816(sc[2 * np], a[0], a[1], a[2], a[3], b[0], b[1]);
          mma_16816(sc[2 * np + 1], a[0], a[1], a[2], a[3], b[2], b[3]);
          mma_16816(sc[2 * np], al[0], al[1], al[2], al[3], b[0], b[1]);
          mma_16816(sc[2 * np + 1], al[0], al[1], al[2], al[3], b[2], b[3]);
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
        const int pb = p_begin + ti * kTP + nt * 8 + 2 * t;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int pos = pb + e;
          const bool okp = pos < p_end;
          sc[nt][e] = (okp && in0 && pos >= lo0 && pos <= hi0) ? s4[e] : -INFINITY;
          sc[nt][2 + e] = (okp && in1 && pos >= lo1 && pos <= hi1) ? s4[2 + e] : -INFINITY;
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
      const __half* vb = Vs + buf * kTP * kStride;
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

#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    l_r[rr] += __shfl_xor_sync(0xffffffffu, l_r[rr], 1);
    l_r[rr] += __shfl_xor_sync(0xffffffffu, l_r[rr], 2);
  }
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int r = g + 8 * rr;
    const int tk = r_tok[r];
    if (tk < 0) continue;
    const int head = r_head[r];
    if (n_splits == 1) {
      const float inv = l_r[rr] > 0.f ? 1.0f / l_r[rr] : 0.f;
      float* orow = p.out.data + static_cast<int64_t>(tk) * p.out.stride + static_cast<int64_t>(head) * D;
#pragma unroll
      for (int i = 0; i < NTO; ++i) {
        const int d = warp * DS + i * 8 + 2 * t;
        orow[d] = o[i][2 * rr] * inv;
        orow[d + 1] = o[i][2 * rr + 1] * inv;
      }
    } else {
      const int64_t row = static_cast<int64_t>(tk) * p.n_head + head;
      float* P = partial + (static_cast<int64_t>(split) * p.n_tokens * p.n_head + row) * (D + 2);
      if (warp == 0 && t == 0) {
        P[0] = m_r[rr];
        P[1] = l_r[rr];
      }
#pragma unroll
      for (int i = 0; i < NTO; ++i) {
        const int d = warp * DS + i * 8 + 2 * t;
        P[2 + d] = o[i][2 * rr];
        P[2 + d + 1] = o[i][2 * rr + 1];
      }
    }
  }
}

// Merges the n_splits partial results of one (token, head) row: weights exp(m_s - M) once per
// split in shared memory, then every thread sums its float4 of the output over the splits.
__global__ void __launch_bounds__(128) attn_combine_kernel(const float* __restrict__ partial, int n_splits,
                                                           int n_tokens, int n_head, int D, MatF out) {
  GS_PDL_ENTRY();
  extern __shared__ float wsh[];  // [n_splits] weights, then [1] total
  const int64_t row = blockIdx.x;
  const int tok = static_cast<int>(row / n_head), head = static_cast<int>(row % n_head);
  const int64_t rows_total = static_cast<int64_t>(n_tokens) * n_head;
  const int64_t pstride = rows_total * (D + 2);
  const float* P0 = partial + row * (D + 2);
  float M = -INFINITY;
  for (int s = threadIdx.x; s < n_splits; s += blockDim.x)
    if (P0[s * pstride + 1] > 0.f) M = fmaxf(M, P0[s * pstride]);
  M = warp_max(M);
  __shared__ float red[4];
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = M;
  __syncthreads();
  M = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  for (int s = threadIdx.x; s < n_splits; s += blockDim.x) {
    const float l = P0[s * pstride + 1];
    wsh[s] = l > 0.f ? exp2f((P0[s * pstride] - M) * kLog2e) : 0.f;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float L = 0.f;
    for (int s = 0; s < n_splits; ++s) L += wsh[s] * P0[s * pstride + 1];
    wsh[n_splits] = L;
  }
  __syncthreads();
  const float L = wsh[n_splits];
  const float inv = L > 0.f ? 1.0f / L : 0.f;
  float* orow = out.data + static_cast<int64_t>(tok) * out.stride + static_cast<int64_t>(head) * D;
  for (int d = threadIdx.x * 2; d < D; d += blockDim.x * 2) {
    float o0 = 0.f, o1 = 0.f;
#pragma unroll 8
    for (int s = 0; s < n_splits; ++s) {
      const float wgt = wsh[s];
      const float2 v = *reinterpret_cast<const float2*>(P0 + s * pstride + 2 + d);
      o0 += wgt * v.x;
      o1 += wgt * v.y;
    }
    orow[d] = o0 * inv;
    orow[d + 1] = o1 * inv;
  }
}

template <int D>
void launch_mma_d(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv);
  const int tb = (p.n_tokens + rm.rt - 1) / rm.rt;
  const dim3 grid(static_cast<unsigned>(tb * rm.hb), static_cast<unsigned>(p.kv.n_head_kv),
                  static_cast<unsigned>(n_splits));
  launch_k(attn_mma_kernel<D>, grid, kNW * 32, FaSmem<D>::kTotal, s, p, n_splits, partial);
  if (n_splits > 1) {
    launch_k(attn_combine_kernel, static_cast<unsigned>(p.n_tokens * p.n_head), 128, (n_splits + 1) * sizeof(float), s, 
        partial, n_splits, p.n_tokens, p.n_head, D, p.out);
  }
}

template <int D>
cudaError_t prepare_d() {
  return cudaFuncSetAttribute(attn_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(FaSmem<D>::kTotal));
}

}  // namespace

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
  return p.kv.f16 && (d == 64 || d == 128 || d == 256 || d == 512) && p.kv.n_head_kv > 0 &&
         p.n_head % p.kv.n_head_kv == 0;
}

int attention_mma_cta_count(const AttnParams& p) {
  const RowMap rm = row_map(p.n_head, p.kv.n_head_kv);
  const int tb = (p.n_tokens + rm.rt - 1) / rm.rt;
  return tb * rm.hb * p.kv.n_head_kv;
}

cudaError_t attention_prepare() {
  cudaError_t e = prepare_d<64>();
  if (e == cudaSuccess) e = prepare_d<128>();
  if (e == cudaSuccess) e = prepare_d<256>();
  if (e == cudaSuccess) e = prepare_d<512>();
  return e;
}

void launch_attention_mma(cudaStream_t s, const AttnParams& p, int n_splits, float* partial) {
  if (p.n_tokens == 0) return;
  switch (p.head_dim) {
    case 64: launch_mma_d<64>(s, p, n_splits, partial); break;
    case 128: launch_mma_d<128>(s, p, n_splits, partial); break;
    case 256: launch_mma_d<256>(s, p, n_splits, partial); break;
    case 512: launch_mma_d<512>(s, p, n_splits, partial); break;
    default: break;
  }
}

}  // namespace gs::cuda
