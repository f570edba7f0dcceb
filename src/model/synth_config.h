// Shapes of a synthetic Gemma-4-shaped GGUF (presets tiny, 31b, 31b-assistant and their
// overrides) and the list of tensors such a file holds, with their ggml types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"
#include "core/status.h"

namespace gs::synth {

// How matrices are typed: one ggml type for all, or llama.cpp's Q4_K_M-like mix (Q4_K,
// with Q6_K for token_embd and for attn_v / ffn_down on the layers that get more bits).
struct WeightTypes {
  bool q4_k_m_mix = true;
  GgmlType type = GgmlType::Q4_K;  // when !q4_k_m_mix

  // "q4_k_m" (or "mix") or a ggml type name that gemmaserve can dequantize.
  static Result<WeightTypes> parse(std::string_view name);
  std::string name() const;
};

struct SynthConfig {
  bool assistant = false;  // arch gemma4-assistant (MTP drafter) instead of gemma4
  std::string name;        // general.name
  int64_t n_embd = 0;
  int64_t n_embd_out = 0;  // assistant: the target's n_embd (embedding_length_out)
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;      // full-attention layers
  int64_t n_head_kv_swa = 0;  // sliding layers
  int64_t head_dim = 0;       // full-attention layers (key_length = value_length)
  int64_t head_dim_swa = 0;   // sliding layers
  int64_t sliding_window = 0;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  // context_length
  // Layer il is full attention iff (il + 1) % swa_period == 0 or it is the last layer.
  int64_t swa_period = 6;
  bool k_eq_v = true;  // full layers have no attn_v (V is the K projection)
  float rope_freq_base = 1e6f;
  float rope_freq_base_swa = 1e4f;
  float partial_rotary_factor = 0.25f;  // full layers' proportional RoPE (spec §2.4)
  float rms_eps = 1e-6f;
  float final_logit_softcap = 30.0f;  // target only
  WeightTypes types;
  uint64_t seed = 1;
  std::string chat_template;  // written as tokenizer.chat_template when not empty

  bool is_swa(int64_t il) const { return !((il + 1) % swa_period == 0 || il == n_layer - 1); }
  std::string_view arch() const;
  // Checks that every dimension is positive and consistent (head counts divide, head dims
  // even, quantized rows fit their blocks or fall back). Errors name the field.
  Status validate() const;
};

enum class Preset { kTiny, kTinyAssistant, k31b, k31bAssistant };
std::optional<Preset> parse_preset(std::string_view name);  // "tiny", "tiny-assistant", "31b", "31b-assistant"
SynthConfig preset_config(Preset preset);

// What a tensor's bytes hold.
enum class Fill {
  kMatrix,       // random weights of the tensor's type, element std ~kWeightStd
  kNorm,         // RMSNorm gains, 1 + U(-0.1, 0.1)
  kOutputScale,  // layer_output_scale, U(0.9, 1.1)
  kRopeFreqs,    // 1 for rotated pairs, 1e30 for the rest (spec §2.4)
};

inline constexpr float kWeightStd = 0.02f;

struct PlannedTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> ne;  // ne[0] contiguous
  Fill fill = Fill::kMatrix;
  int64_t n_elements() const;
  uint64_t bytes() const;
};

// The tensors of the file in writing order (the order of shared/tools/synth_gguf.py).
std::vector<PlannedTensor> plan_tensors(const SynthConfig& config);

// The type a matrix of row length ne0 gets: `wanted`, or Q8_0 then F16 when ne0 is not a
// multiple of wanted's block size.
GgmlType fit_type(GgmlType wanted, int64_t ne0);

// llama.cpp's general.file_type (llama_ftype) for the weight types.
uint32_t file_type(const WeightTypes& types);

}  // namespace gs::synth
