// Reads Gemma4Config from GGUF metadata (spec §1.3) and checks every value before use.
#include "model/gemma4_config.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "gguf/gguf_summary.h"
#include "model/gemma4_limits.h"
#include "model/gguf_names.h"

namespace gs {

namespace {

using gguf::GgufFile;
using gguf::ValueType;

using limits::kMaxEmbd;
using limits::kMaxFf;
using limits::kMaxHeadDim;
using limits::kMaxHeads;
using limits::kMaxLayers;

bool is_int_type(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64:
      return true;
    case ValueType::kF32: case ValueType::kBool: case ValueType::kString: case ValueType::kArray:
    case ValueType::kF64:
      return false;
  }
  return false;
}

class Reader {
 public:
  Reader(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return names::key(arch_, suffix); }

  // The value of key k read by `get`; `dflt` when k is missing, and kNotFound without one.
  template <class T>
  Result<T> value_or(const std::string& k, std::optional<T> dflt, Result<T> (GgufFile::*get)(std::string_view) const) const {
    if (f_.has(k)) return (f_.*get)(k);
    if (!dflt) return make_status(StatusCode::kNotFound, "metadata '{}' is missing", k);
    return *dflt;
  }

  // How a message names key `suffix` read as `v`: "'gemma4.k' = v" where the file has it,
  // "'gemma4.k' (absent, taken as v)" where v is its default, so that an error about a
  // defaulted key does not read as if the file had written that value.
  std::string shown(std::string_view suffix, int64_t v) const {
    const std::string k = key(suffix);
    if (f_.has(k)) return fmt::format("'{}' = {}", k, v);
    return fmt::format("'{}' (absent, taken as {})", k, v);
  }

  // Required or defaulted integer within [lo, hi].
  Result<int64_t> integer(std::string_view suffix, std::optional<int64_t> dflt, int64_t lo, int64_t hi) const {
    const std::string k = key(suffix);
    GS_ASSIGN_OR_RETURN(const int64_t v, value_or(k, dflt, &GgufFile::get_i64));
    if (v < lo || v > hi) return make_status(StatusCode::kInvalidArgument, "metadata '{}' = {} is outside [{}, {}]", k, v, lo, hi);
    return v;
  }

  Result<float> real(std::string_view suffix, std::optional<float> dflt, bool allow_zero) const {
    const std::string k = key(suffix);
    GS_ASSIGN_OR_RETURN(const float v, value_or(k, dflt, &GgufFile::get_f32));
    if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) {
      return make_status(StatusCode::kInvalidArgument, "metadata '{}' = {} must be {}", k, v,
                         allow_zero ? "finite and >= 0" : "finite and > 0");
    }
    return v;
  }

  // A scalar for every layer, or an array of n_layer integers (spec §1.3 "u32 or u32[]").
  Result<std::vector<int64_t>> per_layer(std::string_view suffix, int n_layer, std::optional<int64_t> dflt,
                                         int64_t lo, int64_t hi) const {
    const std::string k = key(suffix);
    std::vector<int64_t> out;
    const gguf::KeyValue* kv = f_.find(k);
    if (kv && kv->type == ValueType::kArray) {
      GS_ASSIGN_OR_RETURN(out, f_.get_int_array(k));
      if (static_cast<int64_t>(out.size()) != n_layer) {
        return make_status(StatusCode::kInvalidArgument, "metadata '{}' has {} entries but block_count is {}", k,
                           out.size(), n_layer);
      }
    } else {
      int64_t v = 0;
      GS_ASSIGN_OR_RETURN(v, integer(suffix, dflt, lo, hi));
      out.assign(static_cast<size_t>(n_layer), v);
    }
    for (size_t il = 0; il < out.size(); ++il) {
      if (out[il] < lo || out[il] > hi) {
        return make_status(StatusCode::kInvalidArgument, "metadata '{}'[{}] = {} is outside [{}, {}]", k, il, out[il], lo, hi);
      }
    }
    return out;
  }

  // Per-layer sliding flags: a bool array (true = sliding), one bool for all layers, or an
  // integer period n (layer il is sliding unless il % n == n - 1; llama.cpp's swa pattern).
  Result<std::vector<bool>> sliding_pattern(int n_layer) const {
    const std::string k = key(names::kSlidingWindowPattern);
    const gguf::KeyValue* kv = f_.find(k);
    if (!kv) return make_status(StatusCode::kNotFound, "metadata '{}' is missing", k);
    std::vector<bool> out;
    if (kv->type == ValueType::kArray) {
      if (kv->elem_type == ValueType::kBool) {
        GS_ASSIGN_OR_RETURN(out, f_.get_bool_array(k));
      } else if (is_int_type(kv->elem_type)) {
        std::vector<int64_t> v;
        GS_ASSIGN_OR_RETURN(v, f_.get_int_array(k));
        for (int64_t x : v) out.push_back(x != 0);
      } else {
        return make_status(StatusCode::kInvalidArgument, "metadata '{}' must be an array of bools", k);
      }
      if (static_cast<int64_t>(out.size()) != n_layer) {
        return make_status(StatusCode::kInvalidArgument, "metadata '{}' has {} entries but block_count is {}", k,
                           out.size(), n_layer);
      }
    } else if (kv->type == ValueType::kBool) {
      bool all = false;
      GS_ASSIGN_OR_RETURN(all, f_.get_bool(k));
      out.assign(static_cast<size_t>(n_layer), all);
    } else if (is_int_type(kv->type)) {
      int64_t period = 0;
      GS_ASSIGN_OR_RETURN(period, f_.get_i64(k));
      if (period < 0 || period > kMaxLayers) {
        return make_status(StatusCode::kInvalidArgument, "metadata '{}' = {} is not a valid period", k, period);
      }
      for (int il = 0; il < n_layer; ++il) out.push_back(period == 0 || il % period < period - 1);
    } else {
      return make_status(StatusCode::kInvalidArgument, "metadata '{}' has type {}, expected bool[]", k,
                         gguf::value_type_name(kv->type));
    }
    return out;
  }

 private:
  const GgufFile& f_;
  std::string arch_;
};

// llama.cpp's reading (spec §1.3, §6.1): the type defaults to "linear" when the key is
// absent, so a factor alone still scales; a factor of 0 (or none) means 1; "none" never scales.
Status read_rope_scaling(const GgufFile& f, const Reader& r, RopeScaling* out) {
  const std::string tk = r.key(names::kRopeScalingType);
  if (!f.has(tk) && !f.has(r.key(names::kRopeScalingFactor))) return {};
  out->type = RopeScalingType::kLinear;
  if (f.has(tk)) {
    std::string_view type;
    GS_ASSIGN_OR_RETURN(type, f.get_string(tk));
    if (type == "none") {
      out->type = RopeScalingType::kNone;
    } else if (type == "linear") {
      out->type = RopeScalingType::kLinear;
    } else if (type == "yarn") {
      out->type = RopeScalingType::kYarn;
    } else {
      return make_status(StatusCode::kInvalidArgument, "metadata '{}' = '{}' is not none, linear or yarn", tk,
                         gguf::escape_text(type, 64));
    }
  }
  GS_ASSIGN_OR_RETURN(out->factor, r.real(names::kRopeScalingFactor, 1.0f, true));
  if (out->factor == 0.0f) out->factor = 1.0f;
  int64_t orig = 0;
  GS_ASSIGN_OR_RETURN(orig, r.integer(names::kRopeScalingOrigCtx, 0, 0, INT32_MAX));
  out->n_ctx_orig = static_cast<int32_t>(orig);
  // A factor of 1 (what converters write when they do not know "proportional") is no scaling.
  if (out->factor == 1.0f) out->type = RopeScalingType::kNone;
  return {};
}

}  // namespace

bool Gemma4Config::has_sliding() const { return last_layer(true) >= 0; }
bool Gemma4Config::has_full() const { return last_layer(false) >= 0; }

int Gemma4Config::last_layer(bool sliding) const {
  for (int il = n_layer - 1; il >= 0; --il) {
    if (layers[il].sliding == sliding) return il;
  }
  return -1;
}

int Gemma4Config::max_q_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.q_width());
  return m;
}
int Gemma4Config::max_kv_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.kv_width());
  return m;
}
int Gemma4Config::max_head_dim() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.head_dim);
  return m;
}
int Gemma4Config::max_ff() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_ff);
  return m;
}
int Gemma4Config::full_head_dim() const {
  const int il = last_layer(false);
  return il < 0 ? 0 : layers[il].head_dim;
}
int Gemma4Config::full_n_rot() const {
  const int il = last_layer(false);
  return il < 0 ? 0 : layers[il].n_rot;
}

namespace {

// Gemma 4 caps its final logits only (spec §1.1 "Attention logit softcap: none", §3.1.4);
// llama.cpp never sets an attention softcap for it. A file that asks for one (Gemma 2's
// `attention.logit_softcapping`, under any architecture prefix) would be computed without it,
// so a nonzero value is refused by name; 0 (no cap) passes.
Status check_no_attention_softcap(const GgufFile& f) {
  const std::string suffix = fmt::format(".{}", names::kAttnLogitSoftcapping);
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (!kv.key.ends_with(suffix)) continue;
    GS_ASSIGN_OR_RETURN(const float cap, f.get_f32(kv.key));
    if (cap != 0.0f) {
      return make_status(StatusCode::kUnimplemented,
                         "metadata '{}' = {}: attention logit softcapping is not supported (Gemma 4 caps its final "
                         "logits only, '{}'); this engine would compute the attention without the cap",
                         kv.key, cap, names::kFinalLogitSoftcapping);
    }
  }
  return {};
}

}  // namespace

Result<Gemma4Config> load_gemma4_config(const GgufFile& f) {
  // One shard of a split model, opened alone, holds only part of the tensors: say so before a
  // tensor of another shard (or, past shard 1, the architecture) is reported missing.
  // GgufFile::open_model opens them all.
  if (f.is_partial_shard()) {
    int64_t n_split = 0;
    GS_ASSIGN_OR_RETURN(n_split, f.get_i64(names::kSplitCount));
    int64_t no = 0;
    if (f.has(names::kSplitNo)) {
      auto r = f.get_i64(names::kSplitNo);
      if (r.ok()) no = *r;
    }
    return make_status(StatusCode::kUnimplemented,
                       "metadata '{}' = {}: this file is shard {} of a split GGUF, opened without the other "
                       "shards; load the model from a shard's path with every shard beside it under "
                       "gguf-split's names (PREFIX-00001-of-{:05d}.gguf, ...), or merge the shards into one "
                       "file (llama-gguf-split --merge FIRST-SHARD OUT.gguf)",
                       names::kSplitCount, n_split, no + 1, n_split);
  }
  Gemma4Config c;
  std::string_view arch;
  GS_ASSIGN_OR_RETURN(arch, f.get_string(names::kArchitecture));
  if (arch == names::kArchTarget) {
    c.arch = Gemma4Arch::kTarget;
  } else if (arch == names::kArchAssistant) {
    c.arch = Gemma4Arch::kAssistant;
  } else {
    // The value as escaped text: a NUL in it cut the message where printf met it, and control
    // bytes reached the terminal.
    return make_status(StatusCode::kInvalidArgument, "metadata '{}' = '{}': expected '{}' or '{}'",
                       names::kArchitecture, gguf::escape_text(arch, 64), names::kArchTarget, names::kArchAssistant);
  }
  c.arch_name = std::string(arch);
  GS_RETURN_IF_ERROR(check_no_attention_softcap(f));
  if (f.has(names::kName)) {
    auto name = f.get_string(names::kName);
    if (name.ok()) c.name = std::string(*name);
  }
  const Reader r(f, c.arch_name);
  int64_t v = 0;
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kContextLength, std::nullopt, 1, limits::kMaxContext));
  c.n_ctx_train = static_cast<int32_t>(v);
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kEmbeddingLength, std::nullopt, 1, kMaxEmbd));
  c.n_embd = static_cast<int32_t>(v);
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kBlockCount, std::nullopt, 1, kMaxLayers));
  c.n_layer = static_cast<int32_t>(v);
  const int n_layer = c.n_layer;

  // Variants this engine does not run yet: say so instead of computing something else.
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kEmbeddingLengthPerLayerInput, 0, 0, kMaxEmbd));
  if (v != 0) {
    return make_status(StatusCode::kUnimplemented, "metadata '{}' = {}: per-layer embeddings (Gemma 4 E2B/E4B) are not supported",
                       r.key(names::kEmbeddingLengthPerLayerInput), v);
  }
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kExpertCount, 0, 0, 1 << 16));
  if (v != 0) {
    return make_status(StatusCode::kUnimplemented, "metadata '{}' = {}: mixture-of-experts (Gemma 4 26B-A4B) is not supported",
                       r.key(names::kExpertCount), v);
  }
  // The same variants told by their tensors, in case a converter left the key out (the
  // dense graph would run without them and compute something else).
  for (const std::string_view t : {names::kPerLayerTokenEmbd, names::kPerLayerModelProj}) {
    if (f.find_tensor(t)) {
      return make_status(StatusCode::kUnimplemented,
                         "tensor '{}': per-layer embeddings (Gemma 4 E2B/E4B) are not supported", t);
    }
  }
  for (int il = 0; il < n_layer; ++il) {
    const std::string t = names::blk(il, names::kFfnGateInp);
    if (f.find_tensor(t)) {
      return make_status(StatusCode::kUnimplemented,
                         "tensor '{}': mixture-of-experts (Gemma 4 26B-A4B) is not supported", t);
    }
  }
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kSharedKvLayers, 0, 0, n_layer));
  if (v != 0 && !c.is_assistant()) {
    return make_status(StatusCode::kUnimplemented, "metadata '{}' = {}: KV-shared layers are not supported",
                       r.key(names::kSharedKvLayers), v);
  }
  if (c.is_assistant()) {
    GS_ASSIGN_OR_RETURN(v, r.integer(names::kEmbeddingLengthOut, std::nullopt, 1, kMaxEmbd));
    c.n_embd_out = static_cast<int32_t>(v);
    GS_ASSIGN_OR_RETURN(v, r.integer(names::kNextnPredictLayers, n_layer, 0, kMaxLayers));
    if (v != n_layer) {
      return make_status(StatusCode::kInvalidArgument, "metadata '{}' = {} but block_count is {}",
                         r.key(names::kNextnPredictLayers), v, n_layer);
    }
  } else {
    c.n_embd_out = c.n_embd;
    // MTP layers inside a target file would run here as ordinary layers (spec §1.3 knows
    // nextn_predict_layers only in the assistant).
    GS_ASSIGN_OR_RETURN(v, r.integer(names::kNextnPredictLayers, 0, 0, kMaxLayers));
    if (v != 0) {
      return make_status(StatusCode::kUnimplemented, "metadata '{}' = {}: MTP layers inside the target file are not supported",
                         r.key(names::kNextnPredictLayers), v);
    }
  }

  std::vector<int64_t> n_head, n_head_kv, n_ff;
  GS_ASSIGN_OR_RETURN(n_head, r.per_layer(names::kHeadCount, n_layer, std::nullopt, 1, kMaxHeads));
  GS_ASSIGN_OR_RETURN(n_ff, r.per_layer(names::kFeedForwardLength, n_layer, std::nullopt, 1, kMaxFf));
  // head_count_kv defaults to head_count (llama.cpp), so a scalar default is the first layer's.
  GS_ASSIGN_OR_RETURN(n_head_kv, r.per_layer(names::kHeadCountKv, n_layer, n_head[0], 1, kMaxHeads));
  if (!f.has(r.key(names::kHeadCountKv))) n_head_kv = n_head;
  std::vector<bool> sliding;
  GS_ASSIGN_OR_RETURN(sliding, r.sliding_pattern(n_layer));

  int64_t hd_full = 0, hd_swa = 0, n_rot_full = 0, n_rot_swa = 0;
  GS_ASSIGN_OR_RETURN(hd_full, r.integer(names::kKeyLength, c.n_embd / n_head[0], 1, kMaxHeadDim));
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kValueLength, hd_full, 1, kMaxHeadDim));
  if (v != hd_full) {
    return make_status(StatusCode::kInvalidArgument, "metadata {} differs from {}", r.shown(names::kValueLength, v),
                       r.shown(names::kKeyLength, hd_full));
  }
  GS_ASSIGN_OR_RETURN(hd_swa, r.integer(names::kKeyLengthSwa, std::nullopt, 1, kMaxHeadDim));
  GS_ASSIGN_OR_RETURN(v, r.integer(names::kValueLengthSwa, hd_swa, 1, kMaxHeadDim));
  if (v != hd_swa) {
    return make_status(StatusCode::kInvalidArgument, "metadata {} differs from {}", r.shown(names::kValueLengthSwa, v),
                       r.shown(names::kKeyLengthSwa, hd_swa));
  }
  GS_ASSIGN_OR_RETURN(n_rot_full, r.integer(names::kRopeDimensionCount, hd_full, 2, kMaxHeadDim));
  GS_ASSIGN_OR_RETURN(n_rot_swa, r.integer(names::kRopeDimensionCountSwa, n_rot_full, 2, kMaxHeadDim));
  for (const auto& [suffix, value] : {std::pair{names::kHeadCountKv, n_head_kv[0]}, {names::kKeyLength, hd_full},
                                      {names::kValueLength, hd_full}, {names::kValueLengthSwa, hd_swa},
                                      {names::kRopeDimensionCount, n_rot_full}, {names::kRopeDimensionCountSwa, n_rot_swa}}) {
    if (!f.has(r.key(suffix))) c.shape_defaults.push_back(r.shown(suffix, value));
  }
  float theta_full = 0, theta_swa = 0;
  GS_ASSIGN_OR_RETURN(theta_full, r.real(names::kRopeFreqBase, 10000.0f, false));
  GS_ASSIGN_OR_RETURN(theta_swa, r.real(names::kRopeFreqBaseSwa, 10000.0f, false));
  GS_ASSIGN_OR_RETURN(c.rms_eps, r.real(names::kRmsEps, std::nullopt, false));
  const bool any_sliding = std::find(sliding.begin(), sliding.end(), true) != sliding.end();
  const bool any_full = std::find(sliding.begin(), sliding.end(), false) != sliding.end();
  if (any_sliding) {
    GS_ASSIGN_OR_RETURN(v, r.integer(names::kSlidingWindow, std::nullopt, 1, INT32_MAX));
    c.sliding_window = static_cast<int32_t>(v);
  }
  if (c.is_assistant()) {
    c.final_logit_softcap = 0.0f;  // the assistant's head is never capped (spec §1.2)
  } else {
    // llama.cpp's hparams default is 30 even when the key is missing (spec §1.3).
    GS_ASSIGN_OR_RETURN(c.final_logit_softcap, r.real(names::kFinalLogitSoftcapping, 30.0f, true));
  }
  GS_RETURN_IF_ERROR(read_rope_scaling(f, r, &c.rope_scaling));

  auto check_dims = [&](std::string_view hd_key, int64_t hd, std::string_view rot_key, int64_t n_rot) -> Status {
    if (hd % 2 != 0) return make_status(StatusCode::kInvalidArgument, "metadata {} must be even", r.shown(hd_key, hd));
    if (n_rot % 2 != 0 || n_rot > hd) {
      return make_status(StatusCode::kInvalidArgument, "metadata {} must be even and at most the head dim {}",
                         r.shown(rot_key, n_rot), r.shown(hd_key, hd));
    }
    return {};
  };
  if (any_full) GS_RETURN_IF_ERROR(check_dims(names::kKeyLength, hd_full, names::kRopeDimensionCount, n_rot_full));
  if (any_sliding) GS_RETURN_IF_ERROR(check_dims(names::kKeyLengthSwa, hd_swa, names::kRopeDimensionCountSwa, n_rot_swa));

  c.layers.resize(static_cast<size_t>(n_layer));
  for (int il = 0; il < n_layer; ++il) {
    Gemma4LayerConfig& l = c.layers[il];
    l.sliding = sliding[il];
    l.n_head = static_cast<int>(n_head[il]);
    l.n_head_kv = static_cast<int>(n_head_kv[il]);
    l.n_ff = static_cast<int>(n_ff[il]);
    l.head_dim = static_cast<int>(l.sliding ? hd_swa : hd_full);
    l.n_rot = static_cast<int>(l.sliding ? n_rot_swa : n_rot_full);
    l.rope_theta = l.sliding ? theta_swa : theta_full;
    l.kv_layer = il;
    if (l.n_head % l.n_head_kv != 0) {
      return make_status(StatusCode::kInvalidArgument,
                         "layer {}: '{}' = {} is not a multiple of '{}' = {}", il, r.key(names::kHeadCount), l.n_head,
                         r.key(names::kHeadCountKv), l.n_head_kv);
    }
    if (c.is_assistant()) {
      l.has_v = false;
    } else {
      l.has_v = f.find_tensor(names::blk(il, names::kAttnV)) != nullptr;
    }
  }

  const gguf::TensorInfo* embd = f.find_tensor(names::kTokenEmbd);
  if (!embd) return make_status(StatusCode::kNotFound, "tensor '{}' is missing", names::kTokenEmbd);
  if (embd->n_dims != 2 || embd->ne[0] != c.n_embd || embd->ne[1] < 1 || embd->ne[1] > INT32_MAX) {
    return make_status(StatusCode::kInvalidArgument, "tensor '{}' has shape {}, expected [{}, n_vocab]", names::kTokenEmbd,
                       embd->shape_string(), c.n_embd);
  }
  c.n_vocab = static_cast<int32_t>(embd->ne[1]);
  c.has_output = !c.is_assistant() && f.find_tensor(names::kOutput) != nullptr;
  if (f.has(names::kTokTokens)) {
    const gguf::KeyValue* kv = f.find(names::kTokTokens);
    if (kv->type == ValueType::kArray && kv->count > static_cast<uint64_t>(c.n_vocab)) {
      return make_status(StatusCode::kInvalidArgument, "metadata '{}' has {} tokens but '{}' has only {} rows",
                         names::kTokTokens, kv->count, names::kTokenEmbd, c.n_vocab);
    }
  }
  return c;
}

Status pair_assistant_with_target(const Gemma4Config& target, Gemma4Config* a) {
  if (target.is_assistant()) return make_status(StatusCode::kInvalidArgument, "the target model is itself an assistant");
  if (!a->is_assistant()) {
    return make_status(StatusCode::kInvalidArgument, "the drafter's architecture is '{}', expected '{}'", a->arch_name,
                       names::kArchAssistant);
  }
  if (a->n_embd_out != target.n_embd) {
    return make_status(StatusCode::kInvalidArgument,
                       "drafter/target mismatch: the drafter's '{}' is {} but the target's n_embd is {}",
                       names::key(a->arch_name, names::kEmbeddingLengthOut), a->n_embd_out, target.n_embd);
  }
  if (a->n_vocab != target.n_vocab) {
    return make_status(StatusCode::kInvalidArgument, "drafter/target mismatch: vocabulary sizes {} (drafter) and {} (target)",
                       a->n_vocab, target.n_vocab);
  }
  for (int il = 0; il < a->n_layer; ++il) {
    Gemma4LayerConfig& l = a->layers[il];
    const int src = target.last_layer(l.sliding);
    const char* kind = l.sliding ? "sliding" : "full";
    if (src < 0) {
      return make_status(StatusCode::kInvalidArgument, "drafter/target mismatch: drafter layer {} is {} but the target has no {} layer",
                         il, kind, kind);
    }
    const Gemma4LayerConfig& t = target.layers[src];
    if (t.head_dim != l.head_dim || t.n_head_kv != l.n_head_kv) {
      return make_status(StatusCode::kInvalidArgument,
                         "drafter/target mismatch: drafter layer {} ({}) expects {} KV heads of dim {}, target layer {} has {} of dim {}",
                         il, kind, l.n_head_kv, l.head_dim, src, t.n_head_kv, t.head_dim);
    }
    // Its queries meet keys the target rotated: both sides must rotate alike (spec §1.2).
    const bool same_theta = t.rope_theta == l.rope_theta;
    if (!same_theta || t.n_rot != l.n_rot) {
      const std::string_view k = same_theta ? (l.sliding ? names::kRopeDimensionCountSwa : names::kRopeDimensionCount)
                                            : (l.sliding ? names::kRopeFreqBaseSwa : names::kRopeFreqBase);
      return make_status(StatusCode::kInvalidArgument,
                         "drafter/target mismatch: the drafter's '{}' is {} but target layer {} ({}) has '{}' = {}",
                         names::key(a->arch_name, k), same_theta ? l.n_rot : l.rope_theta, src, kind,
                         names::key(target.arch_name, k), same_theta ? t.n_rot : t.rope_theta);
    }
    l.kv_layer = src;
  }
  if (a->has_sliding() && a->sliding_window != target.sliding_window) {
    return make_status(StatusCode::kInvalidArgument, "drafter/target mismatch: sliding windows {} (drafter) and {} (target)",
                       a->sliding_window, target.sliding_window);
  }
  return {};
}

}  // namespace gs
