// Launchers of the CUDA kernels (plain structs, no gemmaserve headers, so that nvcc compiles
// the .cu files without the C++20 host code). Each launcher enqueues on `stream` and
// returns at once; shapes are checked by the caller (cuda_backend.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_weight_layout.h"

namespace gs::cuda {

// f32 matrix view in device memory: rows x cols, `stride` floats between rows.
struct MatF {
  float* data;
  int64_t rows;
  int64_t cols;
  int64_t stride;
};

// One layer's K/V pools: [n_slots, n_head_kv] head rows of head_dim values, f16 (f16), q8_0
// (q8: int8 values then head_dim / 32 f16 scales, backend.h's KvLayerView) or f32 (neither).
struct KvView {
  void* k;
  void* v;
  bool f16;
  int n_head_kv;
  int head_dim;
  int64_t n_slots;
  bool q8 = false;
};

// Bytes of one head row of the pools.
__host__ __device__ inline int64_t kv_head_row_bytes(const KvView& kv) {
  return kv.q8 ? kv.head_dim + kv.head_dim / 16 : static_cast<int64_t>(kv.head_dim) * (kv.f16 ? 2 : 4);
}

// backend.h's PageTableView.
struct PagesView {
  const int32_t* pages;
  int max_pages;
  int page_size;
  int wrap_pages;
};

struct RopeParams {
  int head_dim;
  int n_dims;
  float theta;
  const float* freq_factors;  // device, [n_dims / 2] or null
  float freq_scale;
  float ext_factor;
  float attn_factor;
  float corr_lo;
  float corr_hi;
};

// Where an attention launch also writes the f16 matvec operand of its output (the output
// projection's input), as launch_act_to_f16_rows(permute = true) lays it out, but with one
// fixed power-of-two factor for every row instead of each row's own: the caller knows a bound
// of |out| (Gemma 4's V rows are RMS-normed, so |out| <= sqrt(head_dim)), so no CTA needs the
// row's max. xh null: no operand.
struct AttnOperand {
  uint16_t* xh = nullptr;    // [n_tokens, n_in_pad]
  float* xscale = nullptr;   // [n_tokens]: undo for every row
  float factor = 1.0f;       // a power of two
  float undo = 1.0f;         // 1 / factor
  int64_t n_in_pad = 0;      // >= n_head * head_dim, a multiple of 4
};
// The factor that act_pow2_scale would pick for a row whose max |v| is `bound` (> 0, finite).
AttnOperand attn_operand_for_bound(float bound, uint16_t* xh, float* xscale, int64_t n_in_pad);

struct AttnParams {
  MatF q;
  MatF out;
  AttnOperand op;  // the output's f16 operand as well (op.xh non-null)
  // The 16-row kernel reads tok_seq, kv_lo, kv_hi and the page table before it waits for the
  // previous kernel: the caller promises that no kernel it waits on writes them (they are a
  // step's inputs). False: everything after the wait.
  bool early = false;
  int n_tokens;
  int n_head;
  int head_dim;
  float scale;
  KvView kv;
  PagesView pages;
  const int32_t* tok_seq;
  const int32_t* kv_lo;
  const int32_t* kv_hi;
};

// Programmatic dependent launch for every kernel (default on; process-wide).
void set_pdl(bool on);

// ---- element-wise and small ops (k_elementwise.cu) --------------------------------------
void launch_rms_norm(cudaStream_t s, MatF x, const float* weight, int64_t group, float eps, MatF out);
// Whole-row RMS norm (cols <= 8192, 16-byte aligned rows), one read of x; with xh non-null
// it also writes out as launch_act_to_f16_rows(permute = true) would. False: not applicable.
bool launch_rms_norm_rows(cudaStream_t s, MatF x, const float* weight, float eps, MatF out, uint16_t* xh,
                          float* xscale, int64_t n_in_pad);
constexpr int kRopeMaxPairs = 512;  // launch_rope: n_dims / 2 at most this
void launch_rope(cudaStream_t s, MatF x, const int32_t* pos, const RopeParams& p);
void launch_gelu_mul(cudaStream_t s, MatF gate, MatF up, MatF out);
// Row-wise GELU-gated product that also writes the f16 matvec operand of `out` (16-byte
// aligned rows only; false otherwise).
bool launch_gelu_mul_rows(cudaStream_t s, MatF gate, MatF up, MatF out, uint16_t* xh, float* xscale,
                          int64_t n_in_pad);
void launch_add(cudaStream_t s, MatF a, MatF b, MatF out);
void launch_scale(cudaStream_t s, MatF x, float factor);
void launch_softcap(cudaStream_t s, MatF x, float cap);
// Backend::argmax_rows: one CTA per row (p_top may be null).
void launch_argmax_rows(cudaStream_t s, MatF x, int32_t* ids, float* p_top);
void launch_gather_rows(cudaStream_t s, MatF src, const int32_t* rows, MatF dst);
void launch_copy(cudaStream_t s, MatF src, MatF dst);
// out[r] = dequant(W row ids[r]) * scale; out.cols == L.n_in. Out-of-range ids give zeros.
void launch_embed(cudaStream_t s, const void* w, const WeightLayout& L, const int32_t* ids, float scale, MatF out);
// Out-of-range slots are skipped.
void launch_kv_store(cudaStream_t s, MatF k, MatF v, const KvView& kv, const int32_t* slots);
void launch_kv_copy_slots(cudaStream_t s, const KvView& kv, const int32_t* src, const int32_t* dst, int n);

// ---- matmul (k_matvec.cu, k_dequant.cu) --------------------------------------------------
// x [n, n_in] f32 -> xh [n, n_in_pad] f16 (zero padded) scaled per row by a power of two so
// that max |x| lands near 2^11; xscale[r] undoes it. permute: every group of 4 elements is
// stored as (0, 2, 1, 3), the order the mma matvec reads.
void launch_act_to_f16_rows(cudaStream_t s, MatF x, int64_t n_in_pad, uint16_t* xh, float* xscale, bool permute);

// Scratch of the several-CTAs-per-row operand kernels (k_row_f16.cu): per activation row the
// max |v| of each chunk and two counters. Zeroed once at allocation; every launch leaves the
// counters zero again. One set serves every launch on a stream.
constexpr int kRowSyncRows = 16;    // rows they serve (the matvec's decode and verify sizes)
constexpr int kRowSyncChunks = 64;  // chunks per row at most
constexpr int kRowChunk = 2048;     // elements per chunk (one CTA)
struct RowSync {
  float* partial = nullptr;  // [kRowSyncRows][kRowSyncChunks]
  int* arrive = nullptr;     // [kRowSyncRows]
  int* depart = nullptr;     // [kRowSyncRows]
  int64_t max_ctas = 0;      // CTAs of these kernels the GPU holds at once (row_f16_resident_ctas)
};
constexpr size_t kRowSyncBytes = sizeof(float) * kRowSyncRows * kRowSyncChunks + 2 * sizeof(int) * kRowSyncRows;
inline RowSync row_sync_at(void* base) {
  RowSync r;
  r.partial = static_cast<float*>(base);
  r.arrive = reinterpret_cast<int*>(r.partial + kRowSyncRows * kRowSyncChunks);
  r.depart = r.arrive + kRowSyncRows;
  return r;
}
// CTAs of the kernels below that n_sm SMs hold at once (0 when the runtime cannot say).
int row_f16_resident_ctas(int n_sm);
// launch_act_to_f16_rows(permute = true) and launch_gelu_mul_rows with kRowChunk elements of a
// row per CTA instead of one CTA per row; the same outputs. Rows <= kRowSyncRows, 16-byte
// aligned rows of whole float4, n_in_pad <= kRowSyncChunks * kRowChunk, rows x chunks <=
// sync.max_ctas; false (nothing launched) otherwise.
bool launch_act_to_f16_rows_coop(cudaStream_t s, MatF x, int64_t n_in_pad, uint16_t* xh, float* xscale,
                                 const RowSync& sync);
bool launch_gelu_mul_rows_coop(cudaStream_t s, MatF gate, MatF up, MatF out, uint16_t* xh, float* xscale,
                               int64_t n_in_pad, const RowSync& sync);
// Scratch of the bulk-copy matvec (k_matvec_stream.cu): per CTA slot a flag and the partial
// sums of a row group it shares with the CTA before it, and the int8 activations of its
// several-row Q4_K form (decision 0028). Zeroed once at allocation; every launch leaves the
// flags zero again. One set serves every launch on a stream.
constexpr int kMatvecMaxParts = 3;  // weights one bulk-copy matvec launch may take (launch_matvec_stream_multi)
constexpr int kMatvecPartialFloats = 2 * 4 * 32;  // up to 2 column tiles x 4 accumulators x 32 lanes
// The widest input the int8 Q4_K forms take (wider ones keep the f16 form for every row count).
constexpr int64_t kMatvecI8MaxIn = 24576;
// Bytes of int8 activations: 16 rows of kMatvecI8MaxIn, two int8 planes and two f32 per 32
// (k_matvec_i8.cuh).
constexpr size_t kMatvecX8Bytes = 16 * (2 * kMatvecI8MaxIn + kMatvecI8MaxIn / 32 * 8);
struct MatvecSync {
  int* flags = nullptr;      // [max_ctas]
  float* partial = nullptr;  // [max_ctas][kMatvecPartialFloats]
  uint8_t* x8 = nullptr;     // [kMatvecX8Bytes]
  int max_ctas = 0;
};
// Bytes of scratch (flags, partials, x8; 256-byte aligned parts) for max_ctas CTA slots.
inline size_t matvec_sync_bytes(int max_ctas) {
  const size_t f = (static_cast<size_t>(max_ctas) * sizeof(int) + 255) / 256 * 256;
  const size_t p = (static_cast<size_t>(max_ctas) * kMatvecPartialFloats * sizeof(float) + 255) / 256 * 256;
  return f + p + kMatvecX8Bytes;
}
inline MatvecSync matvec_sync_at(void* base, int max_ctas) {
  MatvecSync m;
  const size_t f = (static_cast<size_t>(max_ctas) * sizeof(int) + 255) / 256 * 256;
  const size_t p = (static_cast<size_t>(max_ctas) * kMatvecPartialFloats * sizeof(float) + 255) / 256 * 256;
  m.flags = static_cast<int*>(base);
  m.partial = reinterpret_cast<float*>(static_cast<char*>(base) + f);
  m.x8 = reinterpret_cast<uint8_t*>(static_cast<char*>(base) + f + p);
  m.max_ctas = max_ctas;
  return m;
}
// CTA slots the backend allocates per SM (the bulk-copy matvec runs at most 2 CTAs per SM).
constexpr int kMatvecCtasPerSm = 2;

// y = x W^T for n = x.rows <= 16 rows on tensor cores, reading the weight once: the bulk-copy
// kernel for the block formats it serves (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0), the register-prefetch
// or cp.async-pipelined kernels otherwise (and under GS_CUDA_MV=mma|pipe).
void launch_matvec_mma(cudaStream_t s, const void* w, const WeightLayout& L, const uint16_t* xh,
                       const float* xscale, MatF y, int n_sm, const MatvecSync& sync);
// Reference-style matmul on CUDA cores (any n, any format): the fallback and the check.
// Sets the kernel attributes the pipelined matvec needs (dynamic shared memory); once at init.
cudaError_t matvec_prepare();
void launch_matvec_simple(cudaStream_t s, const void* w, const WeightLayout& L, MatF x, MatF y);
// Rows [row0, row0 + n_rows) of W as f16 into dst [n_rows, n_in_pad].
void launch_dequant_f16(cudaStream_t s, const void* w, const WeightLayout& L, int64_t row0, int64_t n_rows,
                        uint16_t* dst);
// Global power-of-two scaling for the GEMM path: amax must be zeroed before launch_act_absmax;
// launch_act_to_f16_global writes xh [n, n_in_pad] and *alpha (the factor that undoes it).
void launch_act_absmax(cudaStream_t s, MatF x, unsigned* amax);
void launch_act_to_f16_global(cudaStream_t s, MatF x, int64_t n_in_pad, const unsigned* amax, uint16_t* xh,
                              float* alpha);

// ---- attention (k_attention.cu) ----------------------------------------------------------
// Any KV type, any head_dim <= 1024: one block per (token, head), CUDA cores.
void launch_attention_simple(cudaStream_t s, const AttnParams& p);
// f16 KV, head_dim in {64, 128, 256, 512}, tensor cores, KV split in n_splits parts combined
// through `partial` (n_splits * n_tokens * n_head * (head_dim + 2) floats) when n_splits > 1.
// Returns false when the shape is not supported (the caller falls back).
bool attention_mma_supported(const AttnParams& p);
// Raises the kernels' shared-memory limits; call once per device before any launch.
cudaError_t attention_prepare();
int attention_mma_cta_count(const AttnParams& p);  // CTAs per split
void launch_attention_mma(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);
// The prefill kernel: same shapes, pools and `partial` layout as launch_attention_mma
// (attention_mma_supported decides both), 64 query rows of one KV head per CTA, so it suits
// many query rows per KV head (prefill chunks); decode keeps launch_attention_mma.
int attention_fa_cta_count(const AttnParams& p);  // CTAs per split
int attention_fa_ctas_per_sm(int head_dim);       // resident CTAs per SM it is sized for
void launch_attention_fa(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);
// The prefill kernel's q8_0 form (k_attention_q8.cu; launch_attention_fa calls it for q8_0
// pools, head_dim 256 or 512): the same rows and `partial`, its tiles dequantized to f16 by the
// CTA's warps that hold no query rows while the others compute (decision 0035).
void launch_attention_fa_q8(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);
cudaError_t attention_fa_q8_prepare();  // attention_prepare calls it
// The q8_0 head_dim-512 kernel that dequantizes into the mma operands' registers, each of its 8
// warps owning 64 head_dim columns of up to 64 query rows (k_attention_q8_dsplit.cu, decision
// 0035 addendum 2): the same rows and `partial` as launch_attention_fa. launch_attention_fa_q8
// takes it for every call where attention_q8_dsplit_on(p): q8_0 pools, head_dim 512, and by
// default fewer than 64 tokens (decode, verify); GS_ATTN_Q8_DSPLIT, read on every call, 0 turns
// it off, 1 or 2 gives it every call (measurement forms).
bool attention_q8_dsplit_on(const AttnParams& p);
// Resident CTAs an SM its decode launches are sized for (two; one with GS_ATTN_Q8_DSPLIT=1),
// in place of attention_fa_ctas_per_sm where attention_q8_dsplit_on(p).
int attention_q8_dsplit_ctas_per_sm();
void launch_attention_q8_dsplit(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);
cudaError_t attention_q8_dsplit_prepare();  // attention_fa_q8_prepare calls it
// What follows a kernel that wrote `partial` (n_splits > 1): the combine kernel into p.out (and
// p.op); with one split, only p.op's operand kernel when p.op asks for it. The attention
// launches above call it themselves; a kernel of sm90a/attention_wg.h needs it after it.
void launch_attention_combine(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);

}  // namespace gs::cuda
