// Test helpers that write GGUF files: an editable in-memory copy of a file (drop, reshape or
// perturb tensors, change metadata) and random-weight Gemma 4 models of any shape.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_split.h"
#include "gguf/gguf_writer.h"
#include "model/gguf_names.h"

namespace gs::test {

struct EditableGguf {
  struct Tensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, gguf::Value>> kv;
  std::vector<Tensor> tensors;

  static EditableGguf from(const gguf::GgufFile& f) {
    EditableGguf e;
    for (const gguf::KeyValue& k : f.metadata()) {
      if (k.key == names::kAlignment) continue;
      e.kv.emplace_back(k.key, f.get_value(k).value());
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
      Tensor x{t.name, t.type, {}, std::vector<uint8_t>(t.data, t.data + t.size_bytes)};
      for (int d = 0; d < t.n_dims; ++d) x.ne.push_back(t.ne[d]);
      e.tensors.push_back(std::move(x));
    }
    return e;
  }
  Tensor* tensor(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  void remove_tensor(const std::string& name) {
    std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; });
  }
  void remove_kv(const std::string& key) {
    std::erase_if(kv, [&](const auto& p) { return p.first == key; });
  }
  void set_kv(const std::string& key, gguf::Value v) {
    for (auto& p : kv) {
      if (p.first == key) {
        p.second = std::move(v);
        return;
      }
    }
    kv.emplace_back(key, std::move(v));
  }
  Status write(const std::string& path) const {
    gguf::GgufWriter w;
    for (const auto& [k, v] : kv) w.set_value(k, v);
    for (const auto& t : tensors) GS_RETURN_IF_ERROR(w.add_tensor(t.name, t.type, t.ne));
    GS_RETURN_IF_ERROR(w.begin(path));
    for (const auto& t : tensors) GS_RETURN_IF_ERROR(w.write_tensor(t.data.data(), t.data.size()));
    return w.finish();
  }
};

inline gguf::Value u16_value(uint16_t v) { return gguf::Value{gguf::ValueType::kU16, uint64_t{v}}; }
inline gguf::Value i32_value(int32_t v) { return gguf::Value{gguf::ValueType::kI32, int64_t{v}}; }
inline gguf::Value u32_value(uint32_t v) { return gguf::Value{gguf::ValueType::kU32, uint64_t{v}}; }
inline gguf::Value f32_value(float v) { return gguf::Value{gguf::ValueType::kF32, double{v}}; }
inline gguf::Value string_value(std::string v) { return gguf::Value{gguf::ValueType::kString, std::move(v)}; }
inline gguf::Value u32_array(const std::vector<uint32_t>& v) {
  gguf::ArrayValue a{gguf::ValueType::kU32, {}, v.size()};
  for (uint32_t x : v) a.items.push_back(u32_value(x));
  return gguf::Value{gguf::ValueType::kArray, std::move(a)};
}
inline gguf::Value bool_array(const std::vector<bool>& v) {
  gguf::ArrayValue a{gguf::ValueType::kBool, {}, v.size()};
  for (bool x : v) a.items.push_back(gguf::Value{gguf::ValueType::kBool, x});
  return gguf::Value{gguf::ValueType::kArray, std::move(a)};
}

// `e` cut into `n_shards` shards as llama.cpp's gguf-split lays them out: the tensors in
// order, as evenly as they go (`first_empty`: shard 1 holds none, the rest share them);
// shard 1 keeps every metadata entry, and every shard carries split.no (u16, 0-based),
// split.count (u16) and split.tensors.count (i32). Tests edit the shards before writing.
inline std::vector<EditableGguf> split_shards(const EditableGguf& e, int n_shards, bool first_empty = false) {
  std::vector<EditableGguf> shards(static_cast<size_t>(n_shards));
  shards[0].kv = e.kv;
  const size_t n = e.tensors.size();
  const int n_holding = first_empty ? n_shards - 1 : n_shards;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = i * static_cast<size_t>(n_holding) / n + (first_empty ? 1 : 0);
    shards[k].tensors.push_back(e.tensors[i]);
  }
  for (int k = 0; k < n_shards; ++k) {
    shards[k].set_kv(std::string(names::kSplitNo), u16_value(static_cast<uint16_t>(k)));
    shards[k].set_kv(std::string(names::kSplitCount), u16_value(static_cast<uint16_t>(n_shards)));
    shards[k].set_kv(std::string(names::kSplitTensorsCount), i32_value(static_cast<int32_t>(n)));
  }
  return shards;
}

// Writes `shards` as PREFIX-00001-of-0000N.gguf, ...; returns their paths.
inline std::vector<std::string> write_shards(const std::vector<EditableGguf>& shards, const std::string& prefix) {
  std::vector<std::string> paths;
  const int n = static_cast<int>(shards.size());
  for (int k = 0; k < n; ++k) {
    paths.push_back(gguf::split_path(prefix, k + 1, n));
    const Status s = shards[k].write(paths.back());
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return paths;
}

// f32 values stored as `type` with core/quant.h's quantizer. Block quantizers search and
// are slow, so a tensor of many rows of a block type takes its rows from a pool of 32
// quantized rows of its own values (a random model only needs varied, finite weights).
inline std::vector<uint8_t> encode_rows(GgmlType type, const std::vector<float>& x, int64_t n_in) {
  const size_t row_bytes = ggml_row_size(type, n_in).value();
  const int64_t rows = static_cast<int64_t>(x.size()) / n_in;
  std::vector<uint8_t> out(row_bytes * rows);
  const bool pooled = ggml_type_traits(type).block_elems > 1 && rows > 32;
  const int64_t n_quantize = pooled ? 32 : rows;
  for (int64_t r = 0; r < n_quantize; ++r) {
    EXPECT_TRUE(quantize_row(type, x.data() + r * n_in, out.data() + r * row_bytes, n_in).ok()) << ggml_type_name(type);
  }
  for (int64_t r = n_quantize; r < rows; ++r) {
    const int64_t from = (r * 2654435761LL) % 32;
    std::memcpy(out.data() + r * row_bytes, out.data() + from * row_bytes, row_bytes);
  }
  return out;
}

// A random-weight Gemma 4 target (or assistant) of any shape.
struct RandomModelSpec {
  bool assistant = false;
  int n_embd = 64;
  int n_embd_out = 0;  // assistant: the target's n_embd
  int n_ff = 96;
  int n_vocab = 101;
  std::vector<bool> sliding = {true, true, false, true};  // per layer
  int n_head = 4;
  int n_head_kv_swa = 2;
  int n_head_kv_full = 1;
  int head_dim_swa = 16;
  int head_dim_full = 32;
  int n_rot_swa = 0;   // 0: head_dim_swa
  int n_rot_full = 0;  // 0: head_dim_full
  int window = 5;
  float theta_swa = 10000.0f;
  float theta_full = 1000000.0f;
  bool k_eq_v = true;        // full layers without attn_v
  bool with_rope_freqs = true;
  bool with_layer_scale = true;
  float softcap = 30.0f;
  GgmlType matrix_type = GgmlType::F32;
  GgmlType embd_type = GgmlType::F32;
  uint32_t seed = 1;
};

inline EditableGguf random_model(const RandomModelSpec& s) {
  std::mt19937 rng(s.seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  EditableGguf e;
  const std::string arch(s.assistant ? names::kArchAssistant : names::kArchTarget);
  const int n_layer = static_cast<int>(s.sliding.size());
  auto k = [&](std::string_view suffix) { return names::key(arch, suffix); };
  e.set_kv(std::string(names::kArchitecture), string_value(arch));
  e.set_kv(k(names::kContextLength), u32_value(4096));
  e.set_kv(k(names::kEmbeddingLength), u32_value(s.n_embd));
  e.set_kv(k(names::kBlockCount), u32_value(n_layer));
  e.set_kv(k(names::kFeedForwardLength), u32_value(s.n_ff));
  e.set_kv(k(names::kHeadCount), u32_value(s.n_head));
  std::vector<uint32_t> kv_heads;
  for (bool sl : s.sliding) kv_heads.push_back(sl ? s.n_head_kv_swa : s.n_head_kv_full);
  e.set_kv(k(names::kHeadCountKv), u32_array(kv_heads));
  e.set_kv(k(names::kKeyLength), u32_value(s.head_dim_full));
  e.set_kv(k(names::kValueLength), u32_value(s.head_dim_full));
  e.set_kv(k(names::kKeyLengthSwa), u32_value(s.head_dim_swa));
  e.set_kv(k(names::kValueLengthSwa), u32_value(s.head_dim_swa));
  const int n_rot_full = s.n_rot_full ? s.n_rot_full : s.head_dim_full;
  const int n_rot_swa = s.n_rot_swa ? s.n_rot_swa : s.head_dim_swa;
  e.set_kv(k(names::kRopeDimensionCount), u32_value(n_rot_full));
  e.set_kv(k(names::kRopeDimensionCountSwa), u32_value(n_rot_swa));
  e.set_kv(k(names::kRopeFreqBase), f32_value(s.theta_full));
  e.set_kv(k(names::kRopeFreqBaseSwa), f32_value(s.theta_swa));
  e.set_kv(k(names::kRmsEps), f32_value(1e-6f));
  e.set_kv(k(names::kSlidingWindow), u32_value(s.window));
  e.set_kv(k(names::kSlidingWindowPattern), bool_array(s.sliding));
  e.set_kv(k(names::kEmbeddingLengthPerLayerInput), u32_value(0));
  if (s.assistant) {
    e.set_kv(k(names::kEmbeddingLengthOut), u32_value(s.n_embd_out));
    e.set_kv(k(names::kNextnPredictLayers), u32_value(n_layer));
    e.set_kv(k(names::kSharedKvLayers), u32_value(n_layer));
  } else {
    e.set_kv(k(names::kSharedKvLayers), u32_value(0));
    e.set_kv(k(names::kFinalLogitSoftcapping), f32_value(s.softcap));
  }
  e.set_kv(std::string(names::kTokBos), u32_value(2));
  e.set_kv(std::string(names::kTokEos), u32_value(1));

  auto add = [&](std::string name, std::vector<int64_t> ne, GgmlType type, float scale, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = offset + scale * u(rng);
    e.tensors.push_back({std::move(name), type, ne, encode_rows(type, x, ne[0])});
  };
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out) {
    add(std::move(name), {n_in, n_out}, s.matrix_type, 1.7f / std::sqrt(static_cast<float>(n_in)));
  };
  auto gain = [&](std::string name, int64_t n) { add(std::move(name), {n}, GgmlType::F32, 0.4f, 1.0f); };
  add(std::string(names::kTokenEmbd), {s.n_embd, s.n_vocab}, s.embd_type, 1.0f);
  gain(std::string(names::kOutputNorm), s.n_embd);
  if (s.with_rope_freqs) {
    std::vector<float> f(n_rot_full / 2, 1e30f);
    for (int i = 0; i < static_cast<int>(n_rot_full * 0.25f / 2); ++i) f[i] = 1.0f;
    e.tensors.push_back({std::string(names::kRopeFreqs), GgmlType::F32, {n_rot_full / 2}, encode_rows(GgmlType::F32, f, n_rot_full / 2)});
  }
  if (s.assistant) {
    matrix(std::string(names::kNextnPreProjection), 2 * s.n_embd_out, s.n_embd);
    matrix(std::string(names::kNextnPostProjection), s.n_embd, s.n_embd_out);
  }
  for (int il = 0; il < n_layer; ++il) {
    const bool sl = s.sliding[il];
    const int hd = sl ? s.head_dim_swa : s.head_dim_full;
    const int nkv = sl ? s.n_head_kv_swa : s.n_head_kv_full;
    gain(names::blk(il, names::kAttnNorm), s.n_embd);
    matrix(names::blk(il, names::kAttnQ), s.n_embd, s.n_head * hd);
    gain(names::blk(il, names::kAttnQNorm), hd);
    if (!s.assistant) {
      matrix(names::blk(il, names::kAttnK), s.n_embd, nkv * hd);
      if (sl || !s.k_eq_v) matrix(names::blk(il, names::kAttnV), s.n_embd, nkv * hd);
      gain(names::blk(il, names::kAttnKNorm), hd);
    }
    matrix(names::blk(il, names::kAttnOutput), s.n_head * hd, s.n_embd);
    gain(names::blk(il, names::kPostAttentionNorm), s.n_embd);
    gain(names::blk(il, names::kFfnNorm), s.n_embd);
    matrix(names::blk(il, names::kFfnGate), s.n_embd, s.n_ff);
    matrix(names::blk(il, names::kFfnUp), s.n_embd, s.n_ff);
    matrix(names::blk(il, names::kFfnDown), s.n_ff, s.n_embd);
    gain(names::blk(il, names::kPostFfwNorm), s.n_embd);
    if (s.with_layer_scale || s.assistant) add(names::blk(il, names::kLayerOutputScale), {1}, GgmlType::F32, 0.3f, 0.9f);
  }
  return e;
}

}  // namespace gs::test
