// The op contract every backend implements: the ops the Gemma 4 forward pass and the MTP
// drafter need, on f32 activations in the backend's memory and weights of any ggml type.
//
// Notation: a Mat is row-major, [rows, cols] with `stride` elements between rows, so a
// column block of a wider matrix is a Mat too. Every pointer an op takes (Mat data, index
// arrays, norm weights) is backend memory. Ops are enqueued in call order on the backend's
// single stream; the CPU backend runs them at once. Host <-> backend copies are explicit.
// No op allocates: buffers are planned once, so a step can be replayed as a CUDA graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/ggml_type.h"
#include "core/status.h"

namespace gs {

enum class BackendKind { kCpu, kCuda };
const char* backend_kind_name(BackendKind kind);

// f32 matrix view in backend memory.
struct Mat {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // elements between consecutive rows (>= cols)

  static Mat of(float* data, int64_t rows, int64_t cols) { return {data, rows, cols, cols}; }
  float* row(int64_t r) const { return data + r * stride; }
  // Rows [r0, r0 + n).
  Mat slice_rows(int64_t r0, int64_t n) const { return {data + r0 * stride, n, cols, stride}; }
  // Columns [c0, c0 + n) of every row.
  Mat slice_cols(int64_t c0, int64_t n) const { return {data + c0, rows, n, stride}; }
};

// A weight matrix uploaded to the backend: n_out rows of n_in elements of `type` (GGUF
// ne = [n_in, n_out]); y = W x means y[o] = sum_i W[o][i] x[i]. 1-D tensors have n_out = 1.
struct Weight {
  const void* data = nullptr;
  GgmlType type = GgmlType::F32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  size_t row_bytes = 0;
  const void* impl = nullptr;  // backend-private (e.g. a repacked copy); may be null
};

// One layer's KV storage: K and V pools of [n_slots, n_head_kv] head rows of head_dim
// elements of `type`, slot after slot, each head row kv_head_bytes(type, head_dim) bytes:
// - F32, F16: head_dim values.
// - Q8_0 (decision 0035): ggml's q8_0 quantization (blocks of 32 values, each
//   x[i] ~ qs[i] * d with qs int8 and d f16; spec §5.2) in a layout of our own: the head
//   row's head_dim int8 values qs first, then its head_dim / 32 f16 scales d, so both parts
//   start 16-byte aligned whenever head_dim % 256 == 0. head_dim % 32 == 0.
struct KvLayerView {
  void* k = nullptr;
  void* v = nullptr;
  GgmlType type = GgmlType::F16;
  int n_head_kv = 0;
  int head_dim = 0;
  int64_t n_slots = 0;
};

// Bytes of one head row (head_dim elements) of a KV pool of `type` (KvLayerView); 0 for a
// type or head_dim a pool cannot hold (types other than F32, F16 and Q8_0; Q8_0 with
// head_dim % 32 != 0).
size_t kv_head_bytes(GgmlType type, int64_t head_dim);

// The Q8_0 head row of n values (n % 32 == 0) into dst (kv_head_bytes(Q8_0, n) bytes), as
// ggml's reference q8_0 quantizer rounds: per block of 32, d = max|x| / 127, qs = round(x / d)
// (half away from zero; 0 when d == 0), d stored as f16. And back: y[i] = qs[i] * d.
void kv_quantize_q8_0(const float* x, int64_t n, void* dst);
void kv_dequantize_q8_0(const void* src, int64_t n, float* y);

// Where a sequence's positions live in a pool: position p of the sequence in page-table row
// s is slot  pages[s * max_pages + (p / page_size) % wrap] * page_size + p % page_size,
// with wrap = wrap_pages when > 0 (a ring, for sliding layers) and max_pages otherwise.
struct PageTableView {
  const int32_t* pages = nullptr;  // [n_rows, max_pages]
  int max_pages = 0;
  int page_size = 0;
  int wrap_pages = 0;
};

// Scaled dot-product attention of each query row over the keys of its own sequence whose
// positions are in [kv_lo[t], kv_hi[t]] (inclusive; none when kv_hi < kv_lo, giving zeros):
//   out_h = sum_k softmax_k(scale * q_h . K_j[k]) V_j[k],  j = h / (n_head / n_head_kv).
// Softmax in f32 with max subtraction. Gemma 4 uses scale = 1 and no attention softcap.
struct AttentionArgs {
  Mat q;    // [n_tokens, n_head * head_dim]
  Mat out;  // [n_tokens, n_head * head_dim]
  int n_head = 0;
  int head_dim = 0;
  float scale = 1.0f;
  KvLayerView kv;
  PageTableView pages;
  // tok_seq, kv_lo, kv_hi and the page table are the step's inputs: no earlier op of the step
  // may write them (a backend may read them before the previous op has finished).
  const int32_t* tok_seq = nullptr;  // [n_tokens] page-table row of each query
  const int32_t* kv_lo = nullptr;    // [n_tokens]
  const int32_t* kv_hi = nullptr;    // [n_tokens]
  int max_kv_len = 0;                // an upper bound of kv_hi - kv_lo + 1 (a sizing hint)
  int n_seqs = 0;                    // distinct sequences among the rows, 0 if unknown (a kernel-choice hint)
  // > 0: no element of out exceeds this in magnitude (a promise of the caller; Gemma 4's V
  // rows are RMS-normed without gain, so |V| <= sqrt(head_dim) and so is every output, a
  // convex combination of them). A backend may use it to scale an f16 copy of out without a
  // max over the row; 0: unknown.
  float out_abs_bound = 0.0f;
};

// NEOX-ordered rotary embedding (spec §3.1.3, YaRN per §6.2). Pairs (i, i + n_dims/2) of
// each head of head_dim elements rotate by  pos * theta^(-2i/n_dims) / freq_factors[i];
// elements at or past n_dims are unchanged.
struct RopeArgs {
  int head_dim = 0;
  int n_dims = 0;
  float theta = 10000.0f;
  const float* freq_factors = nullptr;  // [n_dims / 2] or null
  // YaRN (ggml semantics): with ext_factor == 0 and freq_scale == 1 this is plain RoPE.
  float freq_scale = 1.0f;
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float corr_lo = 0.0f;  // ggml_rope_yarn_corr_dims, computed by the caller
  float corr_hi = 0.0f;
};

// Arguments of Backend::qkv_norm_rope_store: one layer's Q, K, V projections of n rows.
struct QkvNormRopeArgs {
  Mat q;  // [n, n_head * head_dim]
  Mat k;  // [n, kv.n_head_kv * head_dim]; cols 0: Q only (v, kv and slots are not used)
  Mat v;  // [n, kv.n_head_kv * head_dim]; with v_from_k only written
  bool v_from_k = false;             // K = V layers: V is the raw K projection (spec §3.3)
  const float* q_weight = nullptr;   // [head_dim] per-head gain of Q, or null (gain 1)
  const float* k_weight = nullptr;   // [head_dim] per-head gain of K, or null
  float eps = 1e-6f;                 // of every norm
  const int32_t* pos = nullptr;      // [n] RoPE position of each row
  RopeArgs rope;                     // rope.head_dim is the head size of Q, K and V
  KvLayerView kv;                    // the layer's pools (kv.head_dim == rope.head_dim)
  const int32_t* slots = nullptr;    // [n] pool slot of each row, as kv_store
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual std::string description() const = 0;  // e.g. "cpu (16 threads)", "NVIDIA H200"

  // ---- memory -------------------------------------------------------------------------
  // Errors: kResourceExhausted when the device is out of memory.
  virtual Result<void*> alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual Status upload(void* dst, const void* src_host, size_t bytes) = 0;
  virtual Status download(void* dst_host, const void* src, size_t bytes) = 0;
  virtual Status memset_zero(void* dst, size_t bytes) = 0;
  // Host memory for download() results that are fetched often (the logits): page-locked on
  // a GPU, so the copy runs by DMA at the link's rate instead of through the driver's
  // staging buffer (plain heap memory here). Freed with free_host. Errors: kResourceExhausted.
  virtual Result<void*> alloc_host(size_t bytes);
  virtual void free_host(void* p);
  // Waits for every enqueued op; reports an asynchronous failure.
  virtual Status synchronize() = 0;
  // Bytes of device memory in use by this backend (weights + buffers).
  virtual size_t bytes_in_use() const = 0;

  // Makes `host` (n_out rows of n_in elements of `type`, as in the GGUF) usable by the ops.
  // The host bytes must stay valid for the backend's lifetime (they may be used in place).
  // Errors: kUnimplemented for a type the backend cannot multiply.
  virtual Result<Weight> upload_weight(const void* host, GgmlType type, int64_t n_in, int64_t n_out) = 0;

  // ---- ops ------------------------------------------------------------------------------
  // out[r] = table[ids[r]] * scale   (table: [n_vocab, n_embd] of any type; out [n, n_embd])
  virtual void embed(const Weight& table, const int32_t* ids, float scale, Mat out) = 0;
  // y = x W^T: x [n, n_in], y [n, n_out], f32 accumulation.
  virtual void matmul(const Weight& w, Mat x, Mat y) = 0;
  // RMS norm of each group of `group` consecutive elements of every row (cols % group == 0):
  //   out = g * x / sqrt(mean(x^2) + eps); g = weight[0..group) or 1 when weight is null.
  // out may alias x.
  virtual void rms_norm(Mat x, const float* weight, int64_t group, float eps, Mat out) = 0;
  // In place: every head (head_dim elements) of row r rotated to position pos[r].
  virtual void rope(Mat x, const int32_t* pos, const RopeArgs& args) = 0;
  // out = gelu_tanh(gate) * up  (spec §3.1.2); out may alias gate or up.
  virtual void gelu_mul(Mat gate, Mat up, Mat out) = 0;
  // out = a + b (out may alias a or b).
  virtual void add(Mat a, Mat b, Mat out) = 0;
  // x *= s, in place.
  virtual void scale(Mat x, float s) = 0;
  // x = cap * tanh(x / cap), in place.
  virtual void softcap(Mat x, float cap) = 0;
  // dst[i] = src[rows[i]]  (n = dst.rows).
  virtual void gather_rows(Mat src, const int32_t* rows, Mat dst) = 0;
  // dst = src (same shape).
  virtual void copy(Mat src, Mat dst) = 0;
  // Whether this backend's kv_store, attention and kv_copy_slots take pools of `type`
  // (KvLayerView). Default: F32 and F16.
  virtual bool supports_kv_type(GgmlType type) const { return type == GgmlType::F32 || type == GgmlType::F16; }
  // Writes row t of k and v ([n_tokens, n_head_kv * head_dim]) to slot slots[t] of the pools
  // (rounded to the pool's type: f16 round to nearest even, q8_0 as kv_quantize_q8_0).
  virtual void kv_store(Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) = 0;
  virtual void attention(const AttentionArgs& args) = 0;
  // Copies slots src_slots[i] -> dst_slots[i] (n entries) of one layer's K and V pools.
  virtual void kv_copy_slots(const KvLayerView& kv, const int32_t* src_slots, const int32_t* dst_slots, int n) = 0;
  // The greedy pick of each row of logits x [n, n_vocab] (backend memory, int32 / float [n]):
  //   ids[r]   = the column of row r's largest value (NaN counts as -inf; ties: the lowest
  //              column; a row without a value above -inf: 0)
  //   p_top[r] = 1 / sum_c exp(x[r][c] - x[r][ids[r]]), that column's softmax probability
  //              (NaN columns count 0; 0 when the largest value is not finite); p_top may be null.
  // Drafting keeps its drafts on the device with it (no download of the logits per step).
  virtual void argmax_rows(Mat x, int32_t* ids, float* p_top) = 0;

  // ---- fused ops ------------------------------------------------------------------------
  // Each stands for a fixed sequence of the ops above, and its default implementation is
  // exactly that sequence (so a backend without a kernel for it, the CPU oracle among them,
  // gives bit for bit the results of those calls). A backend may run it as fewer kernels.

  // Several matmuls of one input: y[i] = x W[i]^T for i < n, 1 <= n <= kMaxMatmulMulti (a
  // layer's q, k and v projections; its gate and up ones); shapes as matmul's. Default:
  // matmul(*w[i], x, y[i]) for each i. A backend may take the weights of one format in one
  // launch; its values then equal those matmuls' up to the order of f32 partial sums, an
  // order fixed by the weights alone (not by x.rows, so a verify pass reproduces decode).
  static constexpr int kMaxMatmulMulti = 3;
  virtual void matmul_multi(const Weight* const* w, const Mat* y, int n, Mat x);

  // A residual update then the next block's input norm, on whole rows:
  //   x = (x + rms_norm(o, o_weight)) * s;   out = rms_norm(x, out_weight)
  // x, o, out: [n, cols], cols > 0; o_weight, out_weight: [cols] or null (gain 1); eps of
  // both norms. o is scratch (unspecified afterwards); out may alias o; x overlaps neither.
  // The gains must not be written by an op of the same step (a backend may read them early).
  // Default: rms_norm(o, o_weight, cols, eps, o); add(x, o, x); scale(x, s) unless s == 1;
  // rms_norm(x, out_weight, cols, eps, out).
  virtual void add_rms_norm(Mat x, Mat o, const float* o_weight, float s, const float* out_weight, float eps,
                            Mat out);
  // The attention inputs of one layer, in place (spec §3.3; per-head norms over
  // rope.head_dim elements, RoPE of every row at pos[r]):
  //   q = rope(rms_norm(q, q_weight));   v = rms_norm(v_from_k ? k : v)  (no gain; raw k)
  //   k = rope(rms_norm(k, k_weight));   kv_store(k, v, kv, slots)
  // q, k and v do not overlap. With k.cols == 0 only q is done. pos, slots and the gains
  // must not be written by an op of the same step (they are step inputs from upload(), and
  // weights): a backend may read them before the ops queued ahead of this one have finished.
  // Default: rms_norm and rope of q; then (k.cols > 0) copy(k, v) when v_from_k, rms_norm
  // and rope of k, rms_norm of v, kv_store.
  virtual void qkv_norm_rope_store(const QkvNormRopeArgs& args);

  // Runs `record` (op calls on fixed buffers). A backend that supports it may capture the
  // sequence once per `key` and replay it afterwards; the caller guarantees that every
  // pointer and shape inside is the same for the same key. `recurring`: the step's shape comes
  // back step after step (decode, verify and draft steps, a long prompt's full passes). Only
  // those are worth capturing: a prompt's last chunk has a shape that follows the prompt's
  // length, so a captured one would be replayed about once, and a cache of such steps churns. Default: just run it.
  virtual void run_step(uint64_t key, bool recurring, const std::function<void()>& record) {
    (void)key;
    (void)recurring;
    record();
  }
  virtual void invalidate_steps() {}
};

// Owns one allocation of a backend: device memory (Backend::alloc / free) or host memory
// for downloads (Backend::alloc_host / free_host). The backend must outlive it.
enum class MemoryKind { kDevice, kHost };
template <MemoryKind K>
class BackendMemory {
 public:
  BackendMemory() = default;
  static Result<BackendMemory> make(Backend& backend, size_t bytes) {
    BackendMemory b;
    const size_t n = bytes == 0 ? 1 : bytes;
    if constexpr (K == MemoryKind::kDevice) {
      GS_ASSIGN_OR_RETURN(b.p_, backend.alloc(n));
    } else {
      GS_ASSIGN_OR_RETURN(b.p_, backend.alloc_host(n));
    }
    b.backend_ = &backend;
    b.bytes_ = bytes;
    return b;
  }
  BackendMemory(BackendMemory&& o) noexcept { *this = std::move(o); }
  BackendMemory& operator=(BackendMemory&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = std::exchange(o.backend_, nullptr);
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  BackendMemory(const BackendMemory&) = delete;
  BackendMemory& operator=(const BackendMemory&) = delete;
  ~BackendMemory() { reset(); }
  void reset() {
    if (backend_ && p_) {
      if constexpr (K == MemoryKind::kDevice) {
        backend_->free(p_);
      } else {
        backend_->free_host(p_);
      }
    }
    backend_ = nullptr;
    p_ = nullptr;
    bytes_ = 0;
  }

  void* data() const { return p_; }
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};
using DeviceBuffer = BackendMemory<MemoryKind::kDevice>;
using HostBuffer = BackendMemory<MemoryKind::kHost>;  // page-locked on CUDA

// YaRN correction dims (ggml_rope_yarn_corr_dims; spec §6.2) for RopeArgs::corr_lo/hi.
void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float theta, float beta_fast, float beta_slow,
                         float* lo, float* hi);

}  // namespace gs
