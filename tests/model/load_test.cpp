// Loading Gemma 4 files: config keys, tensor shapes and types, errors that name the key or
// tensor at fault (and both shapes), rope_freqs synthesis, layer_output_scale read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "golden_util.h"
#include "model/forward_blocks.h"
#include "model/gemma4_weights.h"
#include "test_gguf.h"

namespace gs::test {
namespace {

class Load : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = create_cpu_backend(1);
    dir_ = temp_dir("load");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes `e` and loads it.
  Result<std::shared_ptr<Gemma4Model>> load(const EditableGguf& e) {
    const std::string path = (dir_ / "m.gguf").string();
    EXPECT_TRUE(e.write(path).ok());
    return Gemma4Model::load(path, *backend_);
  }
  std::unique_ptr<Backend> backend_;
  std::filesystem::path dir_;
};

TEST_F(Load, RandomModelLoads) {
  RandomModelSpec s;
  auto m = load(random_model(s));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config().n_layer, 4);
  EXPECT_FALSE((*m)->config().layers[2].has_v);
  EXPECT_TRUE((*m)->config().layers[1].has_v);
}

TEST_F(Load, MissingTensorNamesItselfAndTheExpectedShape) {
  EditableGguf e = random_model({});
  e.remove_tensor("blk.1.ffn_up.weight");
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("blk.1.ffn_up.weight"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("[64, 96]"), std::string::npos) << m.status().message();
}

TEST_F(Load, WrongShapeNamesBothShapes) {
  EditableGguf e = random_model({});
  EditableGguf::Tensor* t = e.tensor("blk.2.attn_q.weight");
  t->ne = {64, 64};
  t->data.resize(64 * 64 * 4);
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find("blk.2.attn_q.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[64, 64]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[64, 128]"), std::string::npos) << msg;
}

TEST_F(Load, UnsupportedWeightTypeNamesTheTensor) {
  RandomModelSpec spec;
  spec.n_embd = 256;
  EditableGguf e = random_model(spec);
  EditableGguf::Tensor* t = e.tensor("blk.0.ffn_gate.weight");
  t->type = GgmlType::IQ2_XXS;  // no dequantizer (yet): the backend cannot multiply it
  t->data.assign(ggml_row_size(GgmlType::IQ2_XXS, 256).value() * 96, 0);
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("blk.0.ffn_gate.weight"), std::string::npos) << m.status().message();
}

TEST_F(Load, MissingKeyIsNamed) {
  EditableGguf e = random_model({});
  e.remove_kv("gemma4.attention.key_length_swa");
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gemma4.attention.key_length_swa"), std::string::npos) << m.status().message();
}

// A key of the wrong type is named with the file once ("m.gguf: m.gguf: metadata ..." before).
TEST_F(Load, WrongKeyTypeNamesTheFileOnce) {
  EditableGguf e = random_model({});
  e.set_kv("gemma4.attention.sliding_window", f32_value(512.0f));
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.status().message();
  EXPECT_NE(msg.find("gemma4.attention.sliding_window"), std::string::npos) << msg;
  const std::string path = (dir_ / "m.gguf").string();
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  EXPECT_EQ(msg.find(path, path.size()), std::string::npos) << msg;
}

TEST_F(Load, BadPerLayerArrayIsNamed) {
  EditableGguf e = random_model({});
  e.set_kv("gemma4.attention.head_count_kv", u32_array({2, 2, 1}));
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gemma4.attention.head_count_kv"), std::string::npos) << m.status().message();
  e.set_kv("gemma4.attention.head_count_kv", u32_array({3, 3, 1, 3}));  // 4 heads over 3
  m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not a multiple"), std::string::npos) << m.status().message();
}

TEST_F(Load, UnsupportedVariantsSaySo) {
  EditableGguf e = random_model({});
  e.set_kv("gemma4.embedding_length_per_layer_input", u32_value(256));
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  e = random_model({});
  e.set_kv("general.architecture", string_value("llama"));
  m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("general.architecture"), std::string::npos);
}

// A text value the file holds is shown escaped and cut in the error that names it: a NUL in
// general.architecture cut the message where the CLI's printf met it ("... = 'gemma4"), the
// part that says what was expected lost, and control bytes reached the terminal as they were.
TEST_F(Load, TextValuesInLoadErrorsAreEscapedAndCut) {
  const auto expect_clean = [](const std::string& msg, std::string_view expected_tail) {
    EXPECT_EQ(msg.find('\0'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    EXPECT_NE(msg.find("\\x00"), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected_tail), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 600u) << msg;
  };
  EditableGguf e = random_model({});
  e.set_kv("general.architecture", string_value(std::string("gemma4\0\x1b[2J", 10) + std::string(100000, 'x')));
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  expect_clean(m.status().message(), "expected 'gemma4' or 'gemma4-assistant'");
  e = random_model({});
  e.set_kv("gemma4.rope.scaling.type", string_value(std::string("yarn\0\x1b[2J", 8)));
  m = load(e);
  ASSERT_FALSE(m.ok());
  expect_clean(m.status().message(), "is not none, linear or yarn");
}

TEST_F(Load, ScalarPatternAndScalarKvHeads) {
  RandomModelSpec s;
  s.sliding = {true, false, true, false};
  s.n_head_kv_swa = 1;
  EditableGguf e = random_model(s);
  // Integer period 2: layers 1 and 3 full. head_count_kv as a scalar: every layer.
  e.set_kv("gemma4.attention.sliding_window_pattern", u32_value(2));
  e.set_kv("gemma4.attention.head_count_kv", u32_value(1));
  auto m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Gemma4Config& c = (*m)->config();
  for (int il = 0; il < 4; ++il) {
    EXPECT_EQ(c.layers[il].sliding, il % 2 == 0) << il;
    EXPECT_EQ(c.layers[il].n_head_kv, 1) << il;
  }
}

TEST_F(Load, DefaultRotaryDimsFollowLlamaCpp) {
  EditableGguf e = random_model({});
  // dimension_count_swa defaults to dimension_count (32), more than the sliding head dim
  // of 16: rejected by name rather than silently changed.
  e.remove_kv("gemma4.rope.dimension_count_swa");
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gemma4.rope.dimension_count_swa"), std::string::npos) << m.status().message();
  e.remove_kv("gemma4.rope.dimension_count");
  e.set_kv("gemma4.attention.key_length", u32_value(16));
  e.set_kv("gemma4.attention.value_length", u32_value(16));
  RandomModelSpec s;
  s.head_dim_full = 16;
  e.tensors = random_model(s).tensors;
  m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config().layers[0].n_rot, 16);
  EXPECT_EQ((*m)->config().layers[2].n_rot, 16);
}

TEST_F(Load, RopeFreqsSynthesizedWhenMissing) {
  RandomModelSpec s;
  s.with_rope_freqs = false;
  auto m = load(random_model(s));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_TRUE((*m)->weights().rope_freqs_synthesized);
  // head dim 32: 16 pairs, int(32 * 0.25 / 2) = 4 rotate.
  std::vector<float> f(16);
  ASSERT_TRUE(backend_->download(f.data(), (*m)->weights().rope_freqs, 16 * sizeof(float)).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(f[i], i < 4 ? 1.0f : 1e30f) << i;
  EXPECT_EQ(synthesize_rope_freqs(512, 0.25f).size(), 256u);
  EXPECT_EQ(synthesize_rope_freqs(512, 0.25f)[63], 1.0f);
  EXPECT_EQ(synthesize_rope_freqs(512, 0.25f)[64], 1e30f);
}

// rope_freqs encodes Gemma 4's partial rotary factor over a full-head rotation (spec §2.4:
// rope.dimension_count = the head dim, 512). A file whose rope.dimension_count is already
// less than the head dim declares its partial rotation there (llama.cpp rotates those dims,
// no factors); synthesizing the 0.25 factor on top would rotate a quarter of a quarter.
TEST_F(Load, RopeFreqsNotSynthesizedOverADeclaredPartialRotation) {
  RandomModelSpec s;
  s.with_rope_freqs = false;
  s.n_rot_full = 16;  // of head dim 32
  auto m = load(random_model(s));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_FALSE((*m)->weights().rope_freqs_synthesized);
  EXPECT_EQ((*m)->weights().rope_freqs, nullptr);
  const Gemma4Config& c = (*m)->config();
  const RopeArgs full = layer_rope_args(c, c.layers[2], (*m)->weights().rope_freqs);
  EXPECT_EQ(full.n_dims, 16);
  EXPECT_EQ(full.head_dim, 32);
  EXPECT_EQ(full.freq_factors, nullptr);
}

// A target whose metadata says it carries MTP layers (nextn_predict_layers, an assistant key
// in spec §1.3) would run them as ordinary layers: refused by name.
TEST_F(Load, TargetWithNextnLayersIsRefused) {
  EditableGguf e = random_model({});
  e.set_kv("gemma4.nextn_predict_layers", u32_value(1));
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("gemma4.nextn_predict_layers"), std::string::npos) << m.status().message();
  e.set_kv("gemma4.nextn_predict_layers", u32_value(0));
  m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
}

// The tensors of per-layer embeddings (E2B/E4B) and of mixture-of-experts blocks (26B-A4B)
// change the math; a file that has them is refused by name even when the metadata key that
// announces the variant is missing (spec §2.2, §3.6), not run as a dense model.
TEST_F(Load, VariantTensorsAreRefusedWithoutTheirKeys) {
  RandomModelSpec s;
  EditableGguf e = random_model(s);
  e.remove_kv("gemma4.embedding_length_per_layer_input");
  std::vector<float> ple(static_cast<size_t>(8 * 4 * s.n_vocab), 0.5f);
  e.tensors.push_back({"per_layer_token_embd.weight", GgmlType::F32, {8 * 4, s.n_vocab}, encode_rows(GgmlType::F32, ple, 8 * 4)});
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("per_layer_token_embd.weight"), std::string::npos) << m.status().message();

  e = random_model(s);
  e.remove_kv("gemma4.expert_count");
  std::vector<float> router(static_cast<size_t>(s.n_embd * 8), 0.5f);
  e.tensors.push_back({"blk.1.ffn_gate_inp.weight", GgmlType::F32, {s.n_embd, 8}, encode_rows(GgmlType::F32, router, s.n_embd)});
  m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("blk.1.ffn_gate_inp.weight"), std::string::npos) << m.status().message();
}

// rope_freqs.weight divides each full-layer frequency: a NaN, zero or negative factor is a
// malformed file (an infinite one is fine: 1e30 stored as f16 is inf, angle 0).
TEST_F(Load, RopeFreqsMustBePositive) {
  for (float bad : {std::nanf(""), 0.0f, -1.0f}) {
    EditableGguf e = random_model({});
    EditableGguf::Tensor* t = e.tensor("rope_freqs.weight");
    ASSERT_NE(t, nullptr);
    std::memcpy(t->data.data() + 2 * sizeof(float), &bad, sizeof(float));
    auto m = load(e);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("rope_freqs.weight"), std::string::npos) << m.status().message();
  }
  EditableGguf e = random_model({});
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(e.tensor("rope_freqs.weight")->data.data() + 12 * sizeof(float), &inf, sizeof(float));
  auto m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
}

// The defaults of spec §1.3 for keys a file may leave out: llama.cpp's, even where a real
// Gemma 4 file has another value (rope.freq_base: 10000, not 1e6).
TEST_F(Load, MissingOptionalKeysTakeTheSpecDefaults) {
  RandomModelSpec s;
  EditableGguf e = random_model(s);
  for (const char* k : {"gemma4.final_logit_softcapping", "gemma4.rope.freq_base", "gemma4.rope.freq_base_swa",
                        "gemma4.attention.value_length", "gemma4.attention.value_length_swa",
                        "gemma4.attention.head_count_kv", "gemma4.attention.shared_kv_layers",
                        "gemma4.embedding_length_per_layer_input"}) {
    e.remove_kv(k);
  }
  for (int il = 0; il < 4; ++il) {
    e.remove_tensor(names::blk(il, names::kLayerOutputScale));
    // head_count_kv defaults to head_count (4): K and V get 4 heads on every layer.
    const int hd = s.sliding[il] ? s.head_dim_swa : s.head_dim_full;
    for (const std::string_view t : {names::kAttnK, names::kAttnV}) {
      EditableGguf::Tensor* x = e.tensor(names::blk(il, t));
      if (!x) continue;
      x->ne = {s.n_embd, s.n_head * hd};
      x->data.assign(static_cast<size_t>(s.n_embd * s.n_head * hd) * sizeof(float), 0);
    }
  }
  auto m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Gemma4Config& c = (*m)->config();
  EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
  for (int il = 0; il < 4; ++il) {
    EXPECT_FLOAT_EQ(c.layers[il].rope_theta, 10000.0f) << il;
    EXPECT_EQ(c.layers[il].n_head_kv, s.n_head) << il;
    EXPECT_EQ((*m)->weights().layers[il].layer_output_scale, 1.0f) << il;
  }
  EXPECT_EQ(c.layers[0].head_dim, s.head_dim_swa);
  EXPECT_EQ(c.layers[2].head_dim, s.head_dim_full);
}

// Integer keys are read by value whatever integer type stores them (u32, i32, u64, u8
// arrays...), float keys as f32 or f64; a float where an integer belongs, an integer or a
// bool where a float belongs, is an error that names the key.
TEST_F(Load, KeysAreReadByValueWhateverTheirStoredType) {
  RandomModelSpec s;
  EditableGguf e = random_model(s);
  using gguf::Value;
  using gguf::ValueType;
  e.set_kv("gemma4.context_length", Value{ValueType::kI32, int64_t{4096}});
  e.set_kv("gemma4.embedding_length", Value{ValueType::kU64, uint64_t{64}});
  e.set_kv("gemma4.attention.sliding_window", Value{ValueType::kU16, uint64_t{5}});
  e.set_kv("gemma4.attention.layer_norm_rms_epsilon", Value{ValueType::kF64, 1e-6});
  e.set_kv("gemma4.rope.freq_base", Value{ValueType::kF64, 1e6});
  gguf::ArrayValue kv_heads{ValueType::kI32, {}, 4};
  for (bool sl : s.sliding) kv_heads.items.push_back(Value{ValueType::kI32, int64_t{sl ? s.n_head_kv_swa : s.n_head_kv_full}});
  e.set_kv("gemma4.attention.head_count_kv", Value{ValueType::kArray, kv_heads});
  gguf::ArrayValue pattern{ValueType::kU8, {}, 4};
  for (bool sl : s.sliding) pattern.items.push_back(Value{ValueType::kU8, uint64_t{sl ? 1u : 0u}});
  e.set_kv("gemma4.attention.sliding_window_pattern", Value{ValueType::kArray, pattern});
  auto m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Gemma4Config& c = (*m)->config();
  EXPECT_EQ(c.n_ctx_train, 4096);
  EXPECT_EQ(c.sliding_window, 5);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  for (int il = 0; il < 4; ++il) {
    EXPECT_EQ(c.layers[il].sliding, s.sliding[il]) << il;
    EXPECT_EQ(c.layers[il].n_head_kv, s.sliding[il] ? s.n_head_kv_swa : s.n_head_kv_full) << il;
    EXPECT_FLOAT_EQ(c.layers[il].rope_theta, s.sliding[il] ? s.theta_swa : 1e6f) << il;
  }
  for (const auto& [key, bad] : std::vector<std::pair<std::string, Value>>{
           {"gemma4.rope.freq_base", Value{ValueType::kU32, uint64_t{1000000}}},
           {"gemma4.final_logit_softcapping", Value{ValueType::kBool, true}},
           {"gemma4.block_count", Value{ValueType::kF32, 4.0}},
           {"gemma4.attention.head_count", Value{ValueType::kString, std::string("4")}}}) {
    EditableGguf b = random_model(s);
    b.set_kv(key, bad);
    auto r = load(b);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().message();
  }
}

// The LM head is token_embd (tied, spec §2.1: Gemma 4 files have no output.weight); where a
// file does have output.weight, it is the head, as llama.cpp reads it. With the softcap off
// (final_logit_softcapping = 0), an output.weight of twice the embedding doubles the logits.
TEST_F(Load, OutputWeightWhenPresentIsTheHeadElseTheEmbedding) {
  RandomModelSpec s;
  EditableGguf e = random_model(s);
  e.set_kv("gemma4.final_logit_softcapping", f32_value(0.0f));
  auto logits_of = [&](const EditableGguf& g, const std::string& name) {
    const std::string path = (dir_ / name).string();
    EXPECT_TRUE(g.write(path).ok());
    auto m = Gemma4Model::load(path, *backend_);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    std::vector<float> out;
    if (!m.ok()) return out;
    EXPECT_FLOAT_EQ((*m)->config().final_logit_softcap, 0.0f);
    auto r = make_runner(*m, 8, 1);
    const int seq = r->add_sequence().value();
    const std::vector<ModelRunner::Token> toks = {{seq, 2, false}, {seq, 7, false}, {seq, 11, true}};
    EXPECT_TRUE(r->decode(toks).ok());
    const auto l = r->logits(0);
    out.assign(l.begin(), l.end());
    return out;
  };
  const std::vector<float> tied = logits_of(e, "tied.gguf");
  EditableGguf::Tensor head = *e.tensor("token_embd.weight");
  head.name = "output.weight";
  for (size_t i = 0; i < head.data.size(); i += sizeof(float)) {
    float x = 0;
    std::memcpy(&x, head.data.data() + i, sizeof(float));
    x *= 2.0f;
    std::memcpy(head.data.data() + i, &x, sizeof(float));
  }
  e.tensors.push_back(head);
  const std::vector<float> untied = logits_of(e, "untied.gguf");
  ASSERT_EQ(tied.size(), static_cast<size_t>(s.n_vocab));
  ASSERT_EQ(untied.size(), tied.size());
  float max_abs = 0;
  for (size_t i = 0; i < tied.size(); ++i) {
    EXPECT_NEAR(untied[i], 2.0f * tied[i], 1e-4f * (1.0f + std::fabs(tied[i]))) << i;
    max_abs = std::max(max_abs, std::fabs(tied[i]));
  }
  EXPECT_GT(max_abs, 3.0f);  // large enough that a softcap of 30 would bend 2x by > 1e-4
}

// feed_forward_length and head_count may be arrays, one entry per layer (spec §1.3 "u32 or
// u32[]"); each layer's tensors are checked against its own entry.
TEST_F(Load, PerLayerFeedForwardAndHeadCountArrays) {
  RandomModelSpec s;  // n_embd 64, n_ff 96, 4 heads, full layer 2 with head dim 32
  EditableGguf e = random_model(s);
  e.set_kv("gemma4.feed_forward_length", u32_array({96, 64, 96, 128}));
  e.set_kv("gemma4.attention.head_count", u32_array({4, 4, 2, 4}));
  auto reshape = [&](const std::string& name, std::vector<int64_t> ne) {
    EditableGguf::Tensor* t = e.tensor(name);
    ASSERT_NE(t, nullptr) << name;
    t->ne = ne;
    t->data.assign(static_cast<size_t>(ne[0] * ne[1]) * sizeof(float), 0);
  };
  reshape("blk.1.ffn_gate.weight", {64, 64});
  reshape("blk.1.ffn_up.weight", {64, 64});
  reshape("blk.1.ffn_down.weight", {64, 64});
  reshape("blk.3.ffn_gate.weight", {64, 128});
  reshape("blk.3.ffn_up.weight", {64, 128});
  reshape("blk.3.ffn_down.weight", {128, 64});
  reshape("blk.2.attn_q.weight", {64, 2 * 32});
  reshape("blk.2.attn_output.weight", {2 * 32, 64});
  auto m = load(e);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Gemma4Config& c = (*m)->config();
  EXPECT_EQ(c.layers[0].n_ff, 96);
  EXPECT_EQ(c.layers[1].n_ff, 64);
  EXPECT_EQ(c.layers[3].n_ff, 128);
  EXPECT_EQ(c.max_ff(), 128);
  EXPECT_EQ(c.layers[2].n_head, 2);
  EXPECT_EQ(c.layers[2].q_width(), 64);
  EXPECT_EQ(c.layers[1].q_width(), 4 * 16);
  // The runner plans its buffers from the widest layer and runs.
  auto r = make_runner(*m, 4, 1);
  const int seq = r->add_sequence().value();
  const std::vector<ModelRunner::Token> toks = {{seq, 3, false}, {seq, 5, true}};
  ASSERT_TRUE(r->decode(toks).ok());
  for (float x : r->logits(0)) ASSERT_TRUE(std::isfinite(x));
  // A layer's tensor that follows another layer's entry is named with both shapes.
  reshape("blk.1.ffn_up.weight", {64, 96});
  const std::string bad_path = (dir_ / "bad.gguf").string();  // m.gguf is still mapped by m
  ASSERT_TRUE(e.write(bad_path).ok());
  auto bad = Gemma4Model::load(bad_path, *backend_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blk.1.ffn_up.weight"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("[64, 64]"), std::string::npos) << bad.status().message();
}

TEST_F(Load, LayerOutputScaleIsReadFromTheFile) {
  auto m = load_model(*backend_, "golden/tiny1234-target.gguf");
  int not_one = 0;
  for (const auto& l : m->weights().layers) not_one += l.layer_output_scale != 1.0f;
  EXPECT_GT(not_one, 0);
}

TEST_F(Load, AssistantPairsWithItsTargetOnly) {
  auto target = load_model(*backend_, "golden/tiny1234-target.gguf");
  auto assistant = load_model(*backend_, "golden/tiny1234-assistant.gguf");
  ASSERT_TRUE(assistant->config().is_assistant());
  Gemma4Config a = assistant->config();
  ASSERT_TRUE(pair_assistant_with_target(target->config(), &a).ok());
  EXPECT_EQ(a.layers[0].kv_layer, 10);
  EXPECT_EQ(a.layers[3].kv_layer, 11);
  // The shakes target has another width: a clear error, not a crash (bug-case 35).
  auto shakes = load_model(*backend_, "models/shakes-target.gguf");
  a = assistant->config();
  const Status st = pair_assistant_with_target(shakes->config(), &a);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("mismatch"), std::string::npos) << st.message();
}

// A split GGUF (spec §1.3: split.count, split.no, "-0000N-of-0000M.gguf"; BF16 and Q8_0
// files of the 31B are published so) holds part of the tensors per shard. Loading one shard
// is refused by naming split.count and saying what to do, not by a "tensor is missing"
// error about some later layer; split.count = 1 is a whole file.
// A split model loads from its shards under gguf-split's names (tests/model/
// split_load_test.cpp has the rest); a shard under another name, whose siblings cannot be
// found, is refused by name and says how to fix it.
TEST_F(Load, SplitGgufShardIsRefusedByName) {
  EditableGguf e = random_model({});
  e.set_kv("split.count", gguf::Value{gguf::ValueType::kU16, uint64_t{3}});
  e.set_kv("split.no", gguf::Value{gguf::ValueType::kU16, uint64_t{0}});
  auto m = load(e);  // m.gguf
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("m.gguf"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("split.count"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("-00001-of-00003.gguf"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("merge"), std::string::npos) << m.status().message();
  e.remove_kv("split.count");
  e.remove_kv("split.no");
  const std::vector<std::string> shards = write_shards(split_shards(e, 3), (dir_ / "split").string());
  auto split = Gemma4Model::load(shards[0], *backend_);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_EQ((*split)->config().n_layer, 4);
  e.set_kv("split.count", gguf::Value{gguf::ValueType::kU16, uint64_t{1}});
  const std::string one = (dir_ / "one.gguf").string();
  ASSERT_TRUE(e.write(one).ok());
  auto whole = Gemma4Model::load(one, *backend_);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
}

// The assistant's head is never softcapped (spec §1.2: neither llama.cpp nor transformers
// applies one), even where its file carries final_logit_softcapping; the target's is read.
TEST_F(Load, AssistantHeadIsNeverCapped) {
  auto file = gguf::GgufFile::open(shared_path("golden/tiny1234-assistant.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EditableGguf e = EditableGguf::from(**file);
  e.set_kv("gemma4-assistant.final_logit_softcapping", f32_value(30.0f));
  auto a = load(e);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ((*a)->config().final_logit_softcap, 0.0f);
}

// Gemma 4 has no attention logit softcap (spec §1.1; only the final logits are capped). A file
// whose `*.attention.logit_softcapping` (Gemma 2's key) asks for one was loaded and computed
// without it; it is now refused naming the key, under any prefix and for the assistant too. 0
// (no cap) loads, and a value that is not a float is named as a malformed key.
TEST_F(Load, AttentionSoftcapIsRefusedByName) {
  for (const char* key : {"gemma4.attention.logit_softcapping", "gemma2.attention.logit_softcapping"}) {
    EditableGguf e = random_model({});
    e.set_kv(key, f32_value(50.0f));
    auto m = load(e);
    ASSERT_FALSE(m.ok()) << key;
    EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented) << m.status().to_string();
    EXPECT_NE(m.status().message().find(std::string("'") + key + "' = 50"), std::string::npos) << m.status().message();
    e.set_kv(key, f32_value(0.0f));
    m = load(e);
    EXPECT_TRUE(m.ok()) << key << ": " << m.status().to_string();
    e.set_kv(key, string_value("50"));
    m = load(e);
    ASSERT_FALSE(m.ok()) << key;
    EXPECT_NE(m.status().message().find(key), std::string::npos) << m.status().message();
  }
  auto file = gguf::GgufFile::open(shared_path("golden/tiny1234-assistant.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EditableGguf e = EditableGguf::from(**file);
  e.set_kv("gemma4-assistant.attention.logit_softcapping", f32_value(30.0f));
  auto a = load(e);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("gemma4-assistant.attention.logit_softcapping"), std::string::npos)
      << a.status().message();
}

// The drafter's queries meet the target's cached keys, so both sides must rotate alike
// (spec §1.2 "RoPE: same as target"): a drafter file without rope.freq_base (llama.cpp's
// default 10000, not the target's 1e6) or with other rotated dims is refused by name,
// not paired into drafts that quietly miss.
TEST_F(Load, AssistantRopeMustMatchItsTarget) {
  auto target = load_model(*backend_, "golden/tiny1234-target.gguf");
  auto file = gguf::GgufFile::open(shared_path("golden/tiny1234-assistant.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  for (const char* key : {"gemma4-assistant.rope.freq_base", "gemma4-assistant.rope.freq_base_swa"}) {
    EditableGguf e = EditableGguf::from(**file);
    e.set_kv(key, f32_value(500000.0f));
    auto a = load(e);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    Gemma4Config c = (*a)->config();
    const Status st = pair_assistant_with_target(target->config(), &c);
    ASSERT_FALSE(st.ok()) << key;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }
  EditableGguf e = EditableGguf::from(**file);
  e.set_kv("gemma4-assistant.rope.dimension_count", u32_value(32));
  e.tensor("rope_freqs.weight")->ne = {16};
  e.tensor("rope_freqs.weight")->data.resize(16 * sizeof(float));
  auto a = load(e);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Gemma4Config c = (*a)->config();
  const Status st = pair_assistant_with_target(target->config(), &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gemma4-assistant.rope.dimension_count"), std::string::npos) << st.message();
}

// key_length defaults to n_embd / n_head (as llama.cpp reads it). Where that default
// disagrees with the file's tensors, the error says the key was absent and which default
// was taken, not only that two shapes differ.
TEST_F(Load, MissingKeyLengthSaysItsDefaultWasTaken) {
  EditableGguf e = random_model({});
  e.remove_kv("gemma4.attention.key_length");
  auto m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gemma4.attention.key_length"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("absent"), std::string::npos) << m.status().message();
  // Both absent: the defaulted head dim disagrees with the tensors, and that error too names
  // the key whose default shaped the expectation.
  e.remove_kv("gemma4.attention.value_length");
  m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gemma4.attention.key_length"), std::string::npos) << m.status().message();
  e.remove_kv("gemma4.rope.dimension_count");
  m = load(e);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("'gemma4.attention.key_length' (absent, taken as 16)"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace gs::test

namespace gs::test {
namespace {

// rope.scaling.* metadata: YaRN changes only the full-attention layers' RoPE (spec §6.3).
TEST(LoadRopeScaling, YarnAppliesToFullLayersOnly) {
  auto backend = create_cpu_backend(1);
  EditableGguf e = random_model({});
  e.set_kv("gemma4.rope.scaling.type", string_value("yarn"));
  e.set_kv("gemma4.rope.scaling.factor", f32_value(4.0f));
  e.set_kv("gemma4.rope.scaling.original_context_length", u32_value(1024));
  const auto dir = temp_dir("yarn");
  ASSERT_TRUE(e.write((dir / "m.gguf").string()).ok());
  auto m = Gemma4Model::load((dir / "m.gguf").string(), *backend);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const Gemma4Config& c = (*m)->config();
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kYarn);
  const RopeArgs full = layer_rope_args(c, c.layers[2], (*m)->weights().rope_freqs);
  const RopeArgs swa = layer_rope_args(c, c.layers[0], nullptr);
  EXPECT_FLOAT_EQ(full.freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(full.ext_factor, 1.0f);
  EXPECT_GT(full.corr_hi, full.corr_lo);
  EXPECT_FLOAT_EQ(swa.freq_scale, 1.0f);
  EXPECT_FLOAT_EQ(swa.ext_factor, 0.0f);
  // llama.cpp's scaling type defaults to "linear" when only the factor is there (spec §1.3):
  // the factor still divides the full layers' frequencies. A factor of 0 means none.
  e.remove_kv("gemma4.rope.scaling.type");
  ASSERT_TRUE(e.write((dir / "m.gguf").string()).ok());
  auto linear = Gemma4Model::load((dir / "m.gguf").string(), *backend);
  ASSERT_TRUE(linear.ok()) << linear.status().to_string();
  const Gemma4Config& lc = (*linear)->config();
  EXPECT_EQ(lc.rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(layer_rope_args(lc, lc.layers[2], nullptr).freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(layer_rope_args(lc, lc.layers[2], nullptr).ext_factor, 0.0f);
  EXPECT_FLOAT_EQ(layer_rope_args(lc, lc.layers[0], nullptr).freq_scale, 1.0f);
  e.set_kv("gemma4.rope.scaling.factor", f32_value(0.0f));
  ASSERT_TRUE(e.write((dir / "m.gguf").string()).ok());
  auto zero = Gemma4Model::load((dir / "m.gguf").string(), *backend);
  ASSERT_TRUE(zero.ok()) << zero.status().to_string();
  EXPECT_EQ((*zero)->config().rope_scaling.type, RopeScalingType::kNone);
  e.set_kv("gemma4.rope.scaling.type", string_value("ntk"));
  ASSERT_TRUE(e.write((dir / "m.gguf").string()).ok());
  auto bad = Gemma4Model::load((dir / "m.gguf").string(), *backend);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gemma4.rope.scaling.type"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gs::test
