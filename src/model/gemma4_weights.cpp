// The tensor visitor of Gemma 4 files and the binder that checks each tensor and uploads it.
#include "model/gemma4_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/log.h"
#include "core/quant.h"
#include "model/gguf_names.h"

namespace gs {

namespace {

// Gemma 4's partial rotary factor on full-attention layers (spec §1.1).
constexpr float kGemma4PartialRotary = 0.25f;

std::string shape_string(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return s + "]";
}

// "; shapes follow defaults for keys the file lacks: ..." when the config took any, else "".
std::string shape_defaults_note(const Gemma4Config& c) {
  if (c.shape_defaults.empty()) return "";
  std::string s = "; shapes follow defaults for keys the file lacks:";
  for (size_t i = 0; i < c.shape_defaults.size(); ++i) s += fmt::format("{} {}", i ? "," : "", c.shape_defaults[i]);
  return s;
}

bool same_shape(const gguf::TensorInfo& t, const std::vector<int64_t>& ne) {
  for (int d = 0; d < gguf::kMaxDims; ++d) {
    const int64_t want = d < static_cast<int>(ne.size()) ? ne[d] : 1;
    const int64_t have = d < t.n_dims ? t.ne[d] : 1;
    if (want != have) return false;
  }
  return true;
}

}  // namespace

std::vector<float> synthesize_rope_freqs(int n_rot, float partial_rotary_factor) {
  const int n_pairs = n_rot / 2;
  const int n_rotated = static_cast<int>(static_cast<float>(n_rot) * partial_rotary_factor / 2.0f);
  std::vector<float> f(static_cast<size_t>(n_pairs), 1e30f);
  for (int i = 0; i < n_rotated && i < n_pairs; ++i) f[i] = 1.0f;
  return f;
}

void for_each_gemma4_tensor(const Gemma4Config& c, Gemma4Weights& w, const std::function<void(TensorSlot&)>& visit) {
  const int64_t e = c.n_embd;
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out, Weight* dst, bool required = true) {
    TensorSlot s{std::move(name), {n_in, n_out}, TensorRole::kMatrix, required, dst, nullptr, nullptr};
    visit(s);
  };
  auto vector = [&](std::string name, int64_t n, const float** dst, bool required = true) {
    TensorSlot s{std::move(name), {n}, TensorRole::kVector, required, nullptr, dst, nullptr};
    visit(s);
  };
  auto scalar = [&](std::string name, float* dst, bool required) {
    TensorSlot s{std::move(name), {1}, TensorRole::kScalar, required, nullptr, nullptr, dst};
    visit(s);
  };
  w.layers.resize(static_cast<size_t>(c.n_layer));
  matrix(std::string(names::kTokenEmbd), e, c.n_vocab, &w.token_embd);
  if (c.has_output) matrix(std::string(names::kOutput), e, c.n_vocab, &w.output);
  vector(std::string(names::kOutputNorm), e, &w.output_norm);
  if (c.has_full()) vector(std::string(names::kRopeFreqs), c.full_n_rot() / 2, &w.rope_freqs, false);
  if (c.is_assistant()) {
    matrix(std::string(names::kNextnPreProjection), 2 * static_cast<int64_t>(c.n_embd_out), e, &w.nextn_pre_projection);
    matrix(std::string(names::kNextnPostProjection), e, c.n_embd_out, &w.nextn_post_projection);
  }
  for (int il = 0; il < c.n_layer; ++il) {
    const Gemma4LayerConfig& l = c.layers[il];
    Gemma4LayerWeights& lw = w.layers[il];
    vector(names::blk(il, names::kAttnNorm), e, &lw.attn_norm);
    matrix(names::blk(il, names::kAttnQ), e, l.q_width(), &lw.attn_q);
    vector(names::blk(il, names::kAttnQNorm), l.head_dim, &lw.attn_q_norm);
    if (!c.is_assistant()) {
      matrix(names::blk(il, names::kAttnK), e, l.kv_width(), &lw.attn_k);
      if (l.has_v) matrix(names::blk(il, names::kAttnV), e, l.kv_width(), &lw.attn_v);
      vector(names::blk(il, names::kAttnKNorm), l.head_dim, &lw.attn_k_norm);
    }
    matrix(names::blk(il, names::kAttnOutput), l.q_width(), e, &lw.attn_output);
    vector(names::blk(il, names::kPostAttentionNorm), e, &lw.post_attention_norm);
    vector(names::blk(il, names::kFfnNorm), e, &lw.ffn_norm);
    matrix(names::blk(il, names::kFfnGate), e, l.n_ff, &lw.ffn_gate);
    matrix(names::blk(il, names::kFfnUp), e, l.n_ff, &lw.ffn_up);
    matrix(names::blk(il, names::kFfnDown), l.n_ff, e, &lw.ffn_down);
    vector(names::blk(il, names::kPostFfwNorm), e, &lw.post_ffw_norm);
    // Optional in a target (llama.cpp), required in the assistant (spec §2.2, §2.6).
    scalar(names::blk(il, names::kLayerOutputScale), &lw.layer_output_scale, c.is_assistant());
  }
}

Result<Gemma4Weights> bind_gemma4_weights(const gguf::GgufFile& file, const Gemma4Config& c, Backend& backend) {
  Gemma4Weights w;
  // Vectors are gathered on the host, uploaded together, then their pointers are set.
  std::vector<float> host_vectors;
  std::vector<std::pair<const float**, size_t>> vector_offsets;
  std::vector<std::string> seen;
  Status status;
  for_each_gemma4_tensor(c, w, [&](TensorSlot& s) {
    if (!status.ok()) return;
    seen.push_back(s.name);
    const gguf::TensorInfo* t = file.find_tensor(s.name);
    if (!t) {
      if (s.required) {
        status = make_status(StatusCode::kNotFound, "{}: tensor '{}' is missing (expected shape {}){}", file.path(), s.name,
                             shape_string(s.ne), shape_defaults_note(c));
      } else if (s.vector == &w.rope_freqs && c.full_n_rot() == c.full_head_dim()) {
        // Only over a full-head rotation (spec §2.4): a rope.dimension_count below the head
        // dim declares the partial rotation itself, and those dims rotate without factors.
        std::vector<float> f = synthesize_rope_freqs(c.full_n_rot(), kGemma4PartialRotary);
        vector_offsets.emplace_back(s.vector, host_vectors.size());
        host_vectors.insert(host_vectors.end(), f.begin(), f.end());
        w.rope_freqs_synthesized = true;
      }
      return;
    }
    if (!same_shape(*t, s.ne)) {
      status = make_status(StatusCode::kInvalidArgument, "{}: tensor '{}' has shape {}, expected {}{}", file.path(), s.name,
                           t->shape_string(), shape_string(s.ne), shape_defaults_note(c));
      return;
    }
    switch (s.role) {
      case TensorRole::kMatrix: {
        auto bound = backend.upload_weight(t->data, t->type, s.ne[0], s.ne[1]);
        if (!bound.ok()) {
          status = Status(bound.status().code(), fmt::format("{}: tensor '{}' ({}): {}", file.path(), s.name,
                                                             ggml_type_name(t->type), bound.status().message()));
          return;
        }
        *s.matrix = *bound;
        return;
      }
      case TensorRole::kVector:
      case TensorRole::kScalar: {
        std::vector<float> f(static_cast<size_t>(t->n_elements));
        const Status st = dequantize_row(t->type, t->data, f.data(), t->n_elements);
        if (!st.ok()) {
          status = make_status(StatusCode::kInvalidArgument, "{}: tensor '{}' of type {} cannot be read: {}", file.path(),
                               s.name, ggml_type_name(t->type), st.message());
          return;
        }
        for (size_t i = 0; i < f.size(); ++i) {
          const float x = f[i];
          if (s.vector == &w.rope_freqs) {
            // Divisors of the full layers' frequencies: inf is fine (1e30 stored as f16 is
            // inf, angle 0), NaN, 0 or a negative value is no frequency factor.
            if (!(x > 0.0f)) {
              status = make_status(StatusCode::kInvalidArgument, "{}: tensor '{}'[{}] = {} is not a positive frequency factor",
                                   file.path(), s.name, i, x);
              return;
            }
          } else if (!std::isfinite(x)) {
            status = make_status(StatusCode::kInvalidArgument, "{}: tensor '{}' holds a non-finite value", file.path(), s.name);
            return;
          }
        }
        if (s.role == TensorRole::kScalar) {
          *s.scalar = f[0];
        } else {
          vector_offsets.emplace_back(s.vector, host_vectors.size());
          host_vectors.insert(host_vectors.end(), f.begin(), f.end());
        }
        return;
      }
    }
  });
  GS_RETURN_IF_ERROR(status);
  if (!c.has_output) w.output = w.token_embd;
  GS_ASSIGN_OR_RETURN(w.vectors, DeviceBuffer::make(backend, host_vectors.size() * sizeof(float)));
  GS_RETURN_IF_ERROR(backend.upload(w.vectors.data(), host_vectors.data(), host_vectors.size() * sizeof(float)));
  for (auto& [dst, offset] : vector_offsets) *dst = w.vectors.as<float>() + offset;
  // Tensors this engine does not use: a sign of a variant or a converter it does not know.
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (std::find(seen.begin(), seen.end(), t.name) == seen.end()) {
      GS_LOG_WARN("{}: tensor '{}' is not used by the Gemma 4 {} graph", file.path(), t.name,
                  c.is_assistant() ? "assistant" : "target");
    }
  }
  return w;
}

}  // namespace gs
