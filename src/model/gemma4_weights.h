// Gemma4Weights: every tensor of a Gemma 4 target or assistant bound to a backend through
// one visitor that lists the expected name, shape and role of each tensor (spec §2).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_config.h"

namespace gs {

struct Gemma4LayerWeights {
  const float* attn_norm = nullptr;  // [n_embd], backend memory
  Weight attn_q;                     // [n_embd] -> [n_head * head_dim]
  Weight attn_k;                     // target only: [n_embd] -> [n_head_kv * head_dim]
  Weight attn_v;                     // target only, absent (data == nullptr) when K = V
  const float* attn_q_norm = nullptr;  // [head_dim]
  const float* attn_k_norm = nullptr;  // [head_dim], target only
  Weight attn_output;                // [n_head * head_dim] -> [n_embd]
  const float* post_attention_norm = nullptr;
  const float* ffn_norm = nullptr;
  Weight ffn_gate;                   // [n_embd] -> [n_ff]
  Weight ffn_up;                     // [n_embd] -> [n_ff]
  Weight ffn_down;                   // [n_ff] -> [n_embd]
  const float* post_ffw_norm = nullptr;
  float layer_output_scale = 1.0f;   // host value of layer_output_scale.weight (1 when absent)
};

struct Gemma4Weights {
  Weight token_embd;        // [n_embd] x n_vocab rows: input embedding (and the tied head)
  Weight output;            // the LM head: output.weight, or token_embd when tied
  const float* output_norm = nullptr;  // [n_embd]
  const float* rope_freqs = nullptr;   // [full n_rot / 2] full-layer RoPE factors (file or synthesized)
  bool rope_freqs_synthesized = false;
  Weight nextn_pre_projection;   // assistant: [2 * n_embd_out] -> [n_embd]
  Weight nextn_post_projection;  // assistant: [n_embd] -> [n_embd_out]
  std::vector<Gemma4LayerWeights> layers;
  DeviceBuffer vectors;  // backend storage of every 1-D tensor, as f32
};

enum class TensorRole {
  kMatrix,  // 2-D, any block type the backend multiplies: bound with Backend::upload_weight
  kVector,  // 1-D gains and factors: dequantized to f32 and uploaded
  kScalar,  // [1]: read on the host
};

// One expected tensor and where its binding goes.
struct TensorSlot {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order: ne[0] contiguous
  TensorRole role = TensorRole::kMatrix;
  bool required = true;
  Weight* matrix = nullptr;
  const float** vector = nullptr;
  float* scalar = nullptr;
};

// Calls `visit` for every tensor a model of `config` has or may have (spec §2.1, §2.2, §2.6).
void for_each_gemma4_tensor(const Gemma4Config& config, Gemma4Weights& weights,
                            const std::function<void(TensorSlot&)>& visit);

// Binds every tensor of `file` to `backend`. Matrices stay in the file's memory when the
// backend uses them in place, so `file` must outlive the weights. A missing rope_freqs is
// synthesized for Gemma 4's partial rotary factor 0.25 (spec §2.4) where the full layers
// rotate their whole head (rope.dimension_count = key_length); where they rotate fewer dims
// the file has declared its partial rotation, and rope_freqs stays null (no factors).
// Errors (each names the tensor): kNotFound for a missing required tensor (with the
// expected shape), kInvalidArgument for a wrong shape (expected and found) or a 1-D tensor
// of a type that cannot be read, kUnimplemented when the backend cannot multiply a type.
Result<Gemma4Weights> bind_gemma4_weights(const gguf::GgufFile& file, const Gemma4Config& config, Backend& backend);

// rope_freqs for a full-attention head of n_rot rotated dims and a partial rotary factor
// (spec §2.4): [1.0] x int(n_rot * partial / 2), then [1e30] up to n_rot / 2 entries.
std::vector<float> synthesize_rope_freqs(int n_rot, float partial_rotary_factor);

}  // namespace gs
