// The one table of Gemma 4 GGUF metadata keys and tensor names (spec §1.3, §2). Readers
// (config, weights) and writers (synth) use these; nothing else spells a key.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "gguf/gguf_split.h"
#include "gguf/tokenizer_keys.h"

namespace gs::names {

inline constexpr std::string_view kArchTarget = "gemma4";
inline constexpr std::string_view kArchAssistant = "gemma4-assistant";

// General keys (no arch prefix).
inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kAlignment = "general.alignment";
inline constexpr std::string_view kFileType = "general.file_type";
inline constexpr std::string_view kQuantVersion = "general.quantization_version";
inline constexpr std::string_view kSamplingTopK = "general.sampling.top_k";
inline constexpr std::string_view kSamplingTopP = "general.sampling.top_p";
inline constexpr std::string_view kSamplingTemp = "general.sampling.temp";

// Arch-prefixed keys: key(arch, kContextLength) -> "gemma4.context_length".
inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kEmbeddingLengthOut = "embedding_length_out";  // assistant
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kKeyLength = "attention.key_length";
inline constexpr std::string_view kValueLength = "attention.value_length";
inline constexpr std::string_view kKeyLengthSwa = "attention.key_length_swa";
inline constexpr std::string_view kValueLengthSwa = "attention.value_length_swa";
inline constexpr std::string_view kRopeDimensionCount = "rope.dimension_count";
inline constexpr std::string_view kRopeDimensionCountSwa = "rope.dimension_count_swa";
inline constexpr std::string_view kRopeFreqBase = "rope.freq_base";
inline constexpr std::string_view kRopeFreqBaseSwa = "rope.freq_base_swa";
inline constexpr std::string_view kRmsEps = "attention.layer_norm_rms_epsilon";
inline constexpr std::string_view kSlidingWindow = "attention.sliding_window";
inline constexpr std::string_view kSlidingWindowPattern = "attention.sliding_window_pattern";
inline constexpr std::string_view kSharedKvLayers = "attention.shared_kv_layers";
inline constexpr std::string_view kEmbeddingLengthPerLayerInput = "embedding_length_per_layer_input";
inline constexpr std::string_view kFinalLogitSoftcapping = "final_logit_softcapping";
// Gemma 2's attention-score cap; Gemma 4 has none (spec §1.1), so a file with a nonzero one is
// refused (under any architecture prefix).
inline constexpr std::string_view kAttnLogitSoftcapping = "attention.logit_softcapping";
inline constexpr std::string_view kNextnPredictLayers = "nextn_predict_layers";  // assistant
inline constexpr std::string_view kExpertCount = "expert_count";                 // MoE (26B-A4B)
inline constexpr std::string_view kRopeScalingType = "rope.scaling.type";        // "none", "linear", "yarn"
inline constexpr std::string_view kRopeScalingFactor = "rope.scaling.factor";
inline constexpr std::string_view kRopeScalingOrigCtx = "rope.scaling.original_context_length";

inline std::string key(std::string_view arch, std::string_view suffix) {
  return fmt::format("{}.{}", arch, suffix);
}

// Tokenizer keys (tokenizer.*) live in gguf/tokenizer_keys.h, shared with the text layer.

// Global tensors.
inline constexpr std::string_view kTokenEmbd = "token_embd.weight";
inline constexpr std::string_view kOutput = "output.weight";
inline constexpr std::string_view kOutputNorm = "output_norm.weight";
inline constexpr std::string_view kRopeFreqs = "rope_freqs.weight";
inline constexpr std::string_view kNextnPreProjection = "nextn.pre_projection.weight";    // assistant
inline constexpr std::string_view kNextnPostProjection = "nextn.post_projection.weight";  // assistant
// Tensors of Gemma 4 variants this engine refuses (spec §2.2): per-layer embeddings
// (E2B/E4B) and a mixture-of-experts router (26B-A4B; blk(il, kFfnGateInp)).
inline constexpr std::string_view kPerLayerTokenEmbd = "per_layer_token_embd.weight";
inline constexpr std::string_view kPerLayerModelProj = "per_layer_model_proj.weight";

// Per-layer tensor suffixes: blk(il, kAttnQ) -> "blk.3.attn_q.weight".
inline constexpr std::string_view kAttnNorm = "attn_norm";
inline constexpr std::string_view kAttnQ = "attn_q";
inline constexpr std::string_view kAttnK = "attn_k";
inline constexpr std::string_view kAttnV = "attn_v";
inline constexpr std::string_view kAttnOutput = "attn_output";
inline constexpr std::string_view kAttnQNorm = "attn_q_norm";
inline constexpr std::string_view kAttnKNorm = "attn_k_norm";
inline constexpr std::string_view kPostAttentionNorm = "post_attention_norm";
inline constexpr std::string_view kFfnNorm = "ffn_norm";
inline constexpr std::string_view kFfnGate = "ffn_gate";
inline constexpr std::string_view kFfnUp = "ffn_up";
inline constexpr std::string_view kFfnDown = "ffn_down";
inline constexpr std::string_view kPostFfwNorm = "post_ffw_norm";
inline constexpr std::string_view kLayerOutputScale = "layer_output_scale";
inline constexpr std::string_view kFfnGateInp = "ffn_gate_inp";  // MoE router (refused)

inline std::string blk(int il, std::string_view suffix) { return fmt::format("blk.{}.{}.weight", il, suffix); }

}  // namespace gs::names
