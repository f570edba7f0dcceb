// Gemma4Config: the hyperparameters of a Gemma 4 target or its MTP assistant, read once from
// GGUF metadata (spec §1.3) and validated; nothing else in the engine reads a model key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace gs {

enum class Gemma4Arch { kTarget, kAssistant };

// RoPE scaling of the full-attention layers (spec §6). Sliding layers never scale (§6.3).
enum class RopeScalingType { kNone, kLinear, kYarn };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;       // S: context extension factor (freq_scale = 1/S)
  int32_t n_ctx_orig = 0;    // YaRN original context (0: context_length)
  float ext_factor = -1.0f;  // -1: 1 for YaRN, else 0 (llama.cpp's defaults)
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
};

struct Gemma4LayerConfig {
  bool sliding = true;  // sliding-window attention (else full/global attention)
  int n_head = 0;
  int n_head_kv = 0;    // target: this layer's KV heads; assistant: the KV heads it reads
  int head_dim = 0;     // key_length(_swa)
  int n_rot = 0;        // rope.dimension_count(_swa): rotated dims of each head
  int n_ff = 0;
  float rope_theta = 10000.0f;
  bool has_v = true;    // target: attn_v present; false = V is the raw K projection (K = V)
  int kv_layer = 0;     // the target layer whose KV cache this layer attends over

  int q_width() const { return n_head * head_dim; }
  int kv_width() const { return n_head_kv * head_dim; }
};

struct Gemma4Config {
  Gemma4Arch arch = Gemma4Arch::kTarget;
  std::string arch_name;  // "gemma4" or "gemma4-assistant": the metadata key prefix
  std::string name;       // general.name (may be empty)
  int32_t n_ctx_train = 0;
  int32_t n_embd = 0;
  int32_t n_embd_out = 0;  // assistant: the target's width (backbone); target: n_embd
  int32_t n_layer = 0;
  int32_t n_vocab = 0;     // rows of token_embd.weight
  int32_t sliding_window = 0;
  float rms_eps = 1e-6f;
  float final_logit_softcap = 0.0f;  // 0: none (the assistant never caps)
  std::vector<Gemma4LayerConfig> layers;
  RopeScaling rope_scaling;
  bool has_output = false;  // a separate output.weight (else tied to token_embd)
  // Shape keys the file lacks and the defaults taken for them ("'gemma4.attention.key_length'
  // (absent, taken as 256)"), in reading order: errors about tensor shapes name them, since
  // the expected shape came from a default and not from the file.
  std::vector<std::string> shape_defaults;

  bool is_assistant() const { return arch == Gemma4Arch::kAssistant; }
  bool has_sliding() const;
  bool has_full() const;
  // Index of the last layer of a kind (-1 if none).
  int last_layer(bool sliding) const;
  int max_q_width() const;
  int max_kv_width() const;
  int max_head_dim() const;
  int max_ff() const;
  // Head dim and rotated dims of the full-attention layers (0 when there are none).
  int full_head_dim() const;
  int full_n_rot() const;
};

// Reads and validates the config of a `gemma4` or `gemma4-assistant` file. Errors name the
// key (or tensor) at fault: kNotFound for a missing required key, kInvalidArgument for a
// malformed or inconsistent value, kUnimplemented for Gemma 4 variants this engine does not
// run (per-layer embeddings, MoE, KV-shared layers in a target).
// Besides metadata it reads two facts from the tensor directory: n_vocab (rows of
// token_embd.weight) and, per target layer, whether attn_v exists (absent: K = V); and it
// refuses a file holding the tensors of per-layer embeddings or of a MoE router even when
// the key that announces them is missing.
Result<Gemma4Config> load_gemma4_config(const gguf::GgufFile& file);

// Checks that `assistant` can draft for `target` (spec §1.2, §4.3): its backbone width is
// the target's n_embd, the vocabularies have the same size, and each assistant layer's head
// dim, KV heads, RoPE base and rotated dims equal those of the target layer it reads (the
// last target layer of the same kind), with the same sliding window. Sets each assistant
// layer's kv_layer.
// Errors: kInvalidArgument naming both values.
Status pair_assistant_with_target(const Gemma4Config& target, Gemma4Config* assistant);

}  // namespace gs
