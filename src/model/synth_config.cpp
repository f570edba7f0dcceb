// Presets, validation and the tensor plan of synthetic Gemma-4-shaped files (spec §1, §2).
#include "model/synth_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/quant.h"
#include "model/gemma4_limits.h"
#include "model/gguf_names.h"
#include "model/synth_vocab.h"

namespace gs::synth {

Result<WeightTypes> WeightTypes::parse(std::string_view name) {
  WeightTypes t;
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m" || lower == "mix") return t;
  const auto type = ggml_type_from_name(lower);
  if (!type || !weight_format(*type)) {
    return make_status(StatusCode::kInvalidArgument,
                       "weight type '{}' is not one of q4_k_m, f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, "
                       "q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4", name);
  }
  t.q4_k_m_mix = false;
  t.type = *type;
  return t;
}

std::string WeightTypes::name() const { return q4_k_m_mix ? "q4_k_m" : std::string(ggml_type_name(type)); }

std::string_view SynthConfig::arch() const { return assistant ? names::kArchAssistant : names::kArchTarget; }

Status SynthConfig::validate() const {
  // Each shape within what the loader accepts (model/gemma4_limits.h): `--n-layer 100000` wrote
  // gigabytes of a file that load_gemma4_config then refused (decision 0052). Shapes the loader
  // does not bound stay within 2^20.
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  struct Dim {
    const char* name;
    int64_t value;
    int64_t max;
  };
  const Dim dims[] = {{"n_embd", n_embd, limits::kMaxEmbd},
                      {"n_layer", n_layer, limits::kMaxLayers},
                      {"n_ff", n_ff, std::min(kMaxDim, limits::kMaxFf)},
                      {"n_head", n_head, limits::kMaxHeads},
                      {"n_head_kv", n_head_kv, limits::kMaxHeads},
                      {"n_head_kv_swa", n_head_kv_swa, limits::kMaxHeads},
                      {"head_dim", head_dim, limits::kMaxHeadDim},
                      {"head_dim_swa", head_dim_swa, limits::kMaxHeadDim},
                      {"sliding_window", sliding_window, kMaxDim},
                      {"ctx", n_ctx_train, limits::kMaxContext},
                      {"swa_period", swa_period, std::numeric_limits<int64_t>::max()}};
  for (const auto& d : dims) {
    if (d.value <= 0) return make_status(StatusCode::kInvalidArgument, "synth: {} must be positive, got {}", d.name, d.value);
    if (d.value > d.max) {
      return make_status(StatusCode::kInvalidArgument, "synth: {} = {} is larger than {}", d.name, d.value, d.max);
    }
  }
  if (n_head % n_head_kv != 0 || n_head % n_head_kv_swa != 0) {
    return make_status(StatusCode::kInvalidArgument,
                       "synth: n_head ({}) must be a multiple of n_head_kv ({}) and n_head_kv_swa ({})", n_head,
                       n_head_kv, n_head_kv_swa);
  }
  if (head_dim % 2 != 0 || head_dim_swa % 2 != 0) {
    return make_status(StatusCode::kInvalidArgument, "synth: head dims must be even (head_dim {}, head_dim_swa {})",
                       head_dim, head_dim_swa);
  }
  if (assistant) {
    if (n_embd_out <= 0 || n_embd_out > limits::kMaxEmbd) {
      return make_status(StatusCode::kInvalidArgument, "synth: n_embd_out must be in 1..{}, got {}", limits::kMaxEmbd,
                         n_embd_out);
    }
    if (n_embd_out == n_embd) {
      // llama.cpp's loader rejects an assistant whose width equals the target's.
      return make_status(StatusCode::kInvalidArgument, "synth: n_embd_out must differ from n_embd ({})", n_embd);
    }
  }
  if (n_vocab < min_vocab_size() || n_vocab > (int64_t{1} << 24)) {
    return make_status(StatusCode::kInvalidArgument, "synth: n_vocab must be in {}..{} (the Gemma 4 token layout), got {}",
                       min_vocab_size(), int64_t{1} << 24, n_vocab);
  }
  if (!(partial_rotary_factor > 0.0f && partial_rotary_factor <= 1.0f)) {
    return make_status(StatusCode::kInvalidArgument, "synth: partial_rotary_factor must be in (0, 1]");
  }
  return {};
}

std::optional<Preset> parse_preset(std::string_view name) {
  if (name == "tiny") return Preset::kTiny;
  if (name == "tiny-assistant") return Preset::kTinyAssistant;
  if (name == "31b") return Preset::k31b;
  if (name == "31b-assistant") return Preset::k31bAssistant;
  return std::nullopt;
}

SynthConfig preset_config(Preset preset) {
  SynthConfig c;
  switch (preset) {
    case Preset::kTiny:
      c.name = "synthetic-gemma4-tiny";
      c.n_embd = 128;
      c.n_layer = 6;
      c.n_ff = 512;
      c.n_head = 4;
      c.n_head_kv = 1;
      c.n_head_kv_swa = 2;
      c.head_dim = 64;
      c.head_dim_swa = 32;
      c.sliding_window = 16;
      c.n_vocab = 1024;
      c.n_ctx_train = 4096;
      return c;
    case Preset::kTinyAssistant:
      c = preset_config(Preset::kTiny);
      c.name = "synthetic-gemma4-tiny-assistant";
      c.assistant = true;
      c.n_embd_out = 128;
      c.n_embd = 64;
      c.n_layer = 4;
      c.n_ff = 256;
      c.swa_period = std::numeric_limits<int32_t>::max();  // only the last layer is full
      return c;
    case Preset::k31b:  // spec §1.1
      c.name = "synthetic-gemma4-31b";
      c.n_embd = 5376;
      c.n_layer = 60;
      c.n_ff = 21504;
      c.n_head = 32;
      c.n_head_kv = 4;
      c.n_head_kv_swa = 16;
      c.head_dim = 512;
      c.head_dim_swa = 256;
      c.sliding_window = 1024;
      c.n_vocab = 262144;
      c.n_ctx_train = 262144;
      return c;
    case Preset::k31bAssistant:  // spec §1.2
      c = preset_config(Preset::k31b);
      c.name = "synthetic-gemma4-31b-assistant";
      c.assistant = true;
      c.n_embd_out = 5376;
      c.n_embd = 1024;
      c.n_layer = 4;
      c.n_ff = 8192;
      c.swa_period = std::numeric_limits<int32_t>::max();
      return c;
  }
  return c;
}

int64_t PlannedTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

uint64_t PlannedTensor::bytes() const {
  uint64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= static_cast<uint64_t>(ne[i]);
  return *ggml_row_size(type, ne[0]) * rows;
}

GgmlType fit_type(GgmlType wanted, int64_t ne0) {
  if (ne0 % ggml_type_traits(wanted).block_elems == 0) return wanted;
  if (ne0 % 32 == 0) return GgmlType::Q8_0;
  return GgmlType::F16;
}

uint32_t file_type(const WeightTypes& types) {
  if (types.q4_k_m_mix) return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  const std::optional<WeightFormat> format = weight_format(types.type);
  if (!format) return 0;  // never chosen (WeightTypes::parse rejects them)
  switch (*format) {
    case WeightFormat::F32: return 0;
    case WeightFormat::F16: return 1;
    case WeightFormat::Q4_0: return 2;
    case WeightFormat::Q4_1: return 3;
    case WeightFormat::Q8_0: return 7;
    case WeightFormat::Q5_0: return 8;
    case WeightFormat::Q5_1: return 9;
    case WeightFormat::Q2_K: return 10;
    case WeightFormat::Q3_K: return 12;  // Q3_K_M
    case WeightFormat::Q4_K: return 14;  // Q4_K_S
    case WeightFormat::Q5_K: return 16;  // Q5_K_S
    case WeightFormat::Q6_K: return 18;
    case WeightFormat::IQ4_NL: return 25;
    case WeightFormat::IQ4_XS: return 30;
    case WeightFormat::BF16: return 32;
    case WeightFormat::MXFP4: return 38;
  }
  return 0;
}

namespace {

// llama.cpp's Q4_K_M rule: layer i of n gets more bits (Q6_K) for attn_v and ffn_down.
bool more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Planner {
  const SynthConfig& c;
  std::vector<PlannedTensor> out;

  void vec(std::string name, int64_t n, Fill fill) { out.push_back({std::move(name), GgmlType::F32, {n}, fill}); }
  void mat(std::string name, int64_t in, int64_t rows, bool more) {
    GgmlType t = c.types.type;
    if (c.types.q4_k_m_mix) t = more ? GgmlType::Q6_K : GgmlType::Q4_K;
    out.push_back({std::move(name), fit_type(t, in), {in, rows}, Fill::kMatrix});
  }
};

}  // namespace

std::vector<PlannedTensor> plan_tensors(const SynthConfig& c) {
  Planner p{c, {}};
  const int64_t e = c.n_embd;
  p.vec(std::string(names::kRopeFreqs), c.head_dim / 2, Fill::kRopeFreqs);
  p.mat(std::string(names::kTokenEmbd), e, c.n_vocab, true);
  p.vec(std::string(names::kOutputNorm), e, Fill::kNorm);
  if (c.assistant) {
    p.mat(std::string(names::kNextnPreProjection), 2 * c.n_embd_out, e, false);
    p.mat(std::string(names::kNextnPostProjection), e, c.n_embd_out, false);
  }
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const int i = static_cast<int>(il);
    const bool swa = c.is_swa(il);
    const int64_t hd = swa ? c.head_dim_swa : c.head_dim;
    const int64_t kv = swa ? c.n_head_kv_swa : c.n_head_kv;
    const bool more = more_bits(il, c.n_layer);
    p.vec(names::blk(i, names::kAttnNorm), e, Fill::kNorm);
    p.mat(names::blk(i, names::kAttnQ), e, hd * c.n_head, false);
    if (!c.assistant) {
      p.mat(names::blk(i, names::kAttnK), e, hd * kv, false);
      if (swa || !c.k_eq_v) p.mat(names::blk(i, names::kAttnV), e, hd * kv, more);
    }
    p.mat(names::blk(i, names::kAttnOutput), hd * c.n_head, e, false);
    p.vec(names::blk(i, names::kAttnQNorm), hd, Fill::kNorm);
    if (!c.assistant) p.vec(names::blk(i, names::kAttnKNorm), hd, Fill::kNorm);
    p.vec(names::blk(i, names::kPostAttentionNorm), e, Fill::kNorm);
    p.vec(names::blk(i, names::kFfnNorm), e, Fill::kNorm);
    p.mat(names::blk(i, names::kFfnGate), e, c.n_ff, false);
    p.mat(names::blk(i, names::kFfnUp), e, c.n_ff, false);
    p.mat(names::blk(i, names::kFfnDown), c.n_ff, e, more);
    p.vec(names::blk(i, names::kPostFfwNorm), e, Fill::kNorm);
    p.vec(names::blk(i, names::kLayerOutputScale), 1, Fill::kOutputScale);
  }
  return std::move(p.out);
}

}  // namespace gs::synth
