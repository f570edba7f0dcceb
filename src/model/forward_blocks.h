// Pieces shared by the target forward and the drafter forward: named op recording (dumps),
// step input upload, RoPE and attention arguments per layer, and the layer tail.
#pragma once

#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "model/dump.h"
#include "model/gemma4_config.h"
#include "model/gemma4_weights.h"
#include "model/kv_binding.h"

namespace gs {

// Runs op calls on a backend and, when a dump function is set, hands each named result to
// it (after a synchronize and a download: slow, for debugging and tests only).
class OpTrace {
 public:
  OpTrace(Backend& backend, const DumpFn* dump) : backend_(backend), dump_(dump) {}
  Backend& b() const { return backend_; }
  bool dumping() const { return dump_ && *dump_; }
  void mark(std::string_view name, int layer, Mat m);

 private:
  Backend& backend_;
  const DumpFn* dump_;
  std::vector<float> host_;
};

// Uploads one step's int32 inputs (`staging`, host) into `inputs` (backend memory, at least
// as large). The recorded steps (Backend::run_step) hold the pointers of the KV cache they
// were recorded with, so a different cache than `*bound_kv` invalidates them and is bound.
Status upload_step_inputs(Backend& b, const DeviceBuffer& inputs, const std::vector<int32_t>& staging,
                          const KvCacheBinding& kv, const void** bound_kv);

// RoPE of layer `l` (spec §3.1.3): sliding layers plain NEOX over n_rot dims with their
// theta; full layers with the rope_freqs factors and the config's rope scaling (spec §6.3).
RopeArgs layer_rope_args(const Gemma4Config& c, const Gemma4LayerConfig& l, const float* rope_freqs);

// Per-query attention inputs of one step, each [n_tokens] int32 in backend memory: the
// page-table row of each query and its KV position range [lo, hi] for each layer kind.
struct AttentionInputs {
  const int32_t* tok_seq = nullptr;
  const int32_t* lo_swa = nullptr;
  const int32_t* hi_swa = nullptr;
  const int32_t* lo_full = nullptr;
  const int32_t* hi_full = nullptr;
  int n_seqs = 0;  // distinct sequences in the batch (AttentionArgs::n_seqs), 0 if unknown
};

// Attention of layer `l` (spec §3.2: scale 1, no 1/sqrt(d), no softcap) of q [n, q_width]
// into out [n, q_width] over the K/V pools `kvl`, with the page table, ranges and length
// bound of the layer's kind (sliding_window or n_ctx).
AttentionArgs layer_attention_args(const Gemma4Config& c, const Gemma4LayerConfig& l, const KvCacheBinding& kv,
                                   const KvLayerView& kvl, Mat q, Mat out, const AttentionInputs& in);

// The attention inputs of layer `il` after its projections (Backend::qkv_norm_rope_store):
// one op, or while dumping its op sequence with each result marked (q_norm, q_rope, v,
// k_norm, k_rope, v_norm; the K/V names only when args.k has columns).
void attention_inputs(OpTrace& t, int il, const QkvNormRopeArgs& args);

// Activation buffers of one layer, each with at least `rows` rows of the widest layer.
struct LayerScratch {
  Mat a;     // [rows, n_embd] normed input
  Mat q;     // [rows, max q width]
  Mat k;     // [rows, max kv width]
  Mat v;     // [rows, max kv width]
  Mat att;   // [rows, max q width] attention output (heads concatenated)
  Mat o;     // [rows, n_embd]
  Mat gate;  // [rows, max n_ff]
  Mat up;    // [rows, max n_ff]
};

// The rest of layer `il` after attention (spec §3.3), on the first `n` rows, and the input
// norm of what follows (`next_norm`: the next layer's attn_norm or the output norm):
//   x += post_attention_norm(attn_output · att)
//   x += post_ffw_norm(ffn_down · (gelu(ffn_gate · ffn_norm(x)) ⊙ ffn_up · ffn_norm(x)))
//   x *= layer_output_scale
//   s.a = rms_norm(x, next_norm)
// Each residual update and the norm after it are one Backend::add_rms_norm, except while
// dumping (every intermediate is marked then).
void layer_tail(OpTrace& t, const Gemma4Config& c, int il, const Gemma4LayerWeights& w, Mat x, const LayerScratch& s,
                int64_t n, const float* next_norm);

}  // namespace gs
