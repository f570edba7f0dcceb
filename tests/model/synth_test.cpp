// The synthetic Gemma 4 writer: the 31B inventory and mix, the drafter's shapes, the tiny
// preset's vocabulary (tokenizer and specials work on it), weights, determinism, overrides.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "core/quant.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_limits.h"
#include "model/gguf_names.h"
#include "model/synth_config.h"
#include "model/synth_vocab.h"
#include "model/synth_writer.h"
#include "text/tokenizer.h"

namespace gs::synth {
namespace {

std::map<std::string, const PlannedTensor*> by_name(const std::vector<PlannedTensor>& plan) {
  std::map<std::string, const PlannedTensor*> m;
  for (const auto& t : plan) m[t.name] = &t;
  return m;
}

TEST(Synth, Plan31bIsTheGemma4Inventory) {
  const SynthConfig c = preset_config(Preset::k31b);
  ASSERT_TRUE(c.validate().ok());
  const auto plan = plan_tensors(c);
  EXPECT_EQ(plan.size(), 833u);  // spec §2.5: 50 x 14 + 10 x 13 + 3
  uint64_t params = 0, bytes = 0;
  for (const auto& t : plan) {
    params += static_cast<uint64_t>(t.n_elements());
    bytes += t.bytes();
  }
  EXPECT_NEAR(static_cast<double>(params) / 1e9, 30.70, 0.005);
  EXPECT_NEAR(static_cast<double>(bytes) / 1e9, 18.7, 0.15);
  const auto m = by_name(plan);
  EXPECT_EQ(m.at("token_embd.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(m.at("token_embd.weight")->ne, (std::vector<int64_t>{5376, 262144}));
  EXPECT_EQ(m.at("rope_freqs.weight")->ne, (std::vector<int64_t>{256}));
  EXPECT_EQ(m.count("output.weight"), 0u);  // tied embeddings
  // Full layers {5, 11, ..., 59}: no attn_v, wider heads, 4 KV heads.
  for (int il = 0; il < 60; ++il) {
    const bool full = (il + 1) % 6 == 0;
    EXPECT_EQ(m.count(names::blk(il, names::kAttnV)), full ? 0u : 1u) << il;
    EXPECT_EQ(m.at(names::blk(il, names::kAttnQ))->ne[1], full ? 16384 : 8192) << il;
    EXPECT_EQ(m.at(names::blk(il, names::kAttnK))->ne[1], full ? 2048 : 4096) << il;
    EXPECT_EQ(m.at(names::blk(il, names::kAttnQNorm))->ne[0], full ? 512 : 256) << il;
    EXPECT_EQ(m.at(names::blk(il, names::kFfnGate))->type, GgmlType::Q4_K);
    EXPECT_EQ(m.at(names::blk(il, names::kLayerOutputScale))->ne, (std::vector<int64_t>{1}));
    // Q4_K_M: more bits when i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2.
    const bool more = il < 7 || il >= 52 || (il - 7) % 3 == 2;
    EXPECT_EQ(m.at(names::blk(il, names::kFfnDown))->type, more ? GgmlType::Q6_K : GgmlType::Q4_K) << il;
    if (!full) {
      EXPECT_EQ(m.at(names::blk(il, names::kAttnV))->type, more ? GgmlType::Q6_K : GgmlType::Q4_K) << il;
    }
  }
  for (const auto& t : plan) {
    if (t.ne.size() == 1) {
      EXPECT_EQ(t.type, GgmlType::F32) << t.name;
    }
  }
}

TEST(Synth, Plan31bAssistantShapes) {
  const SynthConfig c = preset_config(Preset::k31bAssistant);
  ASSERT_TRUE(c.validate().ok());
  EXPECT_EQ(c.arch(), "gemma4-assistant");
  const auto plan = plan_tensors(c);
  EXPECT_EQ(plan.size(), 5u + 4 * 11);
  const auto m = by_name(plan);
  EXPECT_EQ(m.at("token_embd.weight")->ne, (std::vector<int64_t>{1024, 262144}));
  EXPECT_EQ(m.at("nextn.pre_projection.weight")->ne, (std::vector<int64_t>{10752, 1024}));
  EXPECT_EQ(m.at("nextn.post_projection.weight")->ne, (std::vector<int64_t>{1024, 5376}));
  EXPECT_EQ(m.at("blk.0.attn_q.weight")->ne, (std::vector<int64_t>{1024, 8192}));
  EXPECT_EQ(m.at("blk.3.attn_q.weight")->ne, (std::vector<int64_t>{1024, 16384}));
  EXPECT_EQ(m.at("blk.3.attn_output.weight")->ne, (std::vector<int64_t>{16384, 1024}));
  EXPECT_EQ(m.at("blk.2.ffn_down.weight")->ne, (std::vector<int64_t>{8192, 1024}));
  EXPECT_EQ(m.count("blk.0.attn_k.weight"), 0u);
  EXPECT_EQ(m.count("blk.0.attn_v.weight"), 0u);
  EXPECT_EQ(m.count("blk.0.attn_k_norm.weight"), 0u);
  EXPECT_EQ(m.count("blk.3.layer_output_scale.weight"), 1u);
  uint64_t params = 0;
  for (const auto& t : plan) params += static_cast<uint64_t>(t.n_elements());
  EXPECT_NEAR(static_cast<double>(params) / 1e9, 0.47, 0.01);  // spec §2.6
  EXPECT_TRUE(c.is_swa(0) && c.is_swa(2) && !c.is_swa(3));
}

TEST(Synth, FitTypeFallsBack) {
  EXPECT_EQ(fit_type(GgmlType::Q4_K, 512), GgmlType::Q4_K);
  EXPECT_EQ(fit_type(GgmlType::Q4_K, 128), GgmlType::Q8_0);
  EXPECT_EQ(fit_type(GgmlType::Q4_K, 100), GgmlType::F16);
  EXPECT_EQ(fit_type(GgmlType::BF16, 7), GgmlType::BF16);
}

TEST(Synth, ValidationNamesTheField) {
  SynthConfig c = preset_config(Preset::kTiny);
  c.n_head_kv_swa = 3;
  EXPECT_NE(c.validate().message().find("n_head_kv_swa"), std::string::npos);
  c = preset_config(Preset::kTiny);
  c.n_embd = 0;
  EXPECT_NE(c.validate().message().find("n_embd"), std::string::npos);
  c = preset_config(Preset::kTiny);
  c.n_vocab = 300;
  EXPECT_NE(c.validate().message().find("n_vocab"), std::string::npos);
  c = preset_config(Preset::kTiny);
  c.head_dim = 63;
  EXPECT_FALSE(c.validate().ok());
  c = preset_config(Preset::kTinyAssistant);
  c.n_embd_out = c.n_embd;
  EXPECT_NE(c.validate().message().find("n_embd_out"), std::string::npos);
  EXPECT_FALSE(WeightTypes::parse("q8_k").ok());
  EXPECT_FALSE(WeightTypes::parse("iq2_xxs").ok());
  EXPECT_TRUE(WeightTypes::parse("Q4_K_M")->q4_k_m_mix);
  EXPECT_EQ(WeightTypes::parse("q6_k")->type, GgmlType::Q6_K);
}

// `synth --n-layer 100000` wrote gigabytes of a file the loader refused (block_count at most
// 1024): every shape past the loader's limit is refused before a byte is written (decision 0052).
TEST(Synth, ShapesPastTheLoadersLimitsAreRefused) {
  struct Case {
    const char* name;
    int64_t SynthConfig::*field;
    int64_t max;
  };
  const Case cases[] = {{"n_layer", &SynthConfig::n_layer, limits::kMaxLayers},
                        {"n_embd", &SynthConfig::n_embd, limits::kMaxEmbd},
                        {"n_head", &SynthConfig::n_head, limits::kMaxHeads},
                        {"n_head_kv", &SynthConfig::n_head_kv, limits::kMaxHeads},
                        {"n_head_kv_swa", &SynthConfig::n_head_kv_swa, limits::kMaxHeads},
                        {"head_dim", &SynthConfig::head_dim, limits::kMaxHeadDim},
                        {"head_dim_swa", &SynthConfig::head_dim_swa, limits::kMaxHeadDim},
                        {"ctx", &SynthConfig::n_ctx_train, limits::kMaxContext}};
  for (const Case& k : cases) {
    SynthConfig c = preset_config(Preset::kTiny);
    c.*k.field = k.max + 1;
    const Status st = c.validate();
    ASSERT_FALSE(st.ok()) << k.name;
    EXPECT_NE(st.message().find(k.name), std::string::npos) << st.message();
  }
  SynthConfig c = preset_config(Preset::kTiny);
  c.n_layer = limits::kMaxLayers;
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
}

TEST(Synth, VocabularyLayout) {
  const SynthVocab v = build_vocab(1024);
  ASSERT_EQ(v.tokens.size(), 1024u);
  ASSERT_EQ(v.types.size(), 1024u);
  ASSERT_EQ(v.scores.size(), 1024u);
  const std::pair<int, const char*> specials[] = {
      {0, "<pad>"}, {1, "<eos>"}, {2, "<bos>"}, {3, "<unk>"}, {4, "<mask>"}, {46, "<|tool>"}, {47, "<tool|>"},
      {48, "<|tool_call>"}, {49, "<tool_call|>"}, {50, "<|tool_response>"}, {51, "<tool_response|>"},
      {52, "<|\"|>"}, {98, "<|think|>"}, {100, "<|channel>"}, {101, "<channel|>"}, {105, "<|turn>"},
      {106, "<turn|>"}, {107, "\n"}};
  for (const auto& [id, text] : specials) EXPECT_EQ(v.tokens[static_cast<size_t>(id)], text) << id;
  for (int id : {0, 1, 2, 3, 4, 46, 47, 98, 105, 106}) EXPECT_EQ(v.types[static_cast<size_t>(id)], 3) << id;
  for (int id : {48, 49, 50, 51, 52, 100, 101}) EXPECT_EQ(v.types[static_cast<size_t>(id)], 4) << id;
  EXPECT_EQ(v.tokens[238], "<0x00>");
  EXPECT_EQ(v.tokens[238 + 0x0A], "<0x0A>");
  EXPECT_EQ(v.tokens[493], "<0xFF>");
  for (int id = 238; id <= 493; ++id) EXPECT_EQ(v.types[static_cast<size_t>(id)], 6);
  std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(unique.size(), v.tokens.size());
  for (const auto& m : v.merges) {
    const size_t sp = m.find(' ', 1);
    ASSERT_NE(sp, std::string::npos) << m;
    EXPECT_TRUE(unique.count(m.substr(0, sp))) << m;
    EXPECT_TRUE(unique.count(m.substr(sp + 1))) << m;
    EXPECT_TRUE(unique.count(m.substr(0, sp) + m.substr(sp + 1))) << m;
  }
  const SynthVocab big = build_vocab(262144);
  EXPECT_EQ(big.tokens[236743], "\xE2\x96\x81");
  EXPECT_EQ(big.tokens[255999], "<|image>");
  EXPECT_EQ(big.tokens[258884], "<|video|>");
  EXPECT_EQ(std::set<std::string>(big.tokens.begin(), big.tokens.end()).size(), big.tokens.size());
}

// One scratch directory per test run, removed when the test binary exits.
const std::filesystem::path& scratch() {
  static const test::ScratchDir dir("synth");
  return dir.path;
}

std::string write(SynthConfig c, const std::string& tag, int threads = 2) {
  const std::string path = (scratch() / (tag + ".gguf")).string();
  auto stats = write_synth(c, path, threads);
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return path;
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(Synth, TinyFileHasTheKeysAndATokenizerThatWorks) {
  const SynthConfig c = preset_config(Preset::kTiny);
  auto f = gguf::GgufFile::open(write(c, "tiny"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto& file = **f;
  EXPECT_EQ(*file.get_string(names::kArchitecture), "gemma4");
  EXPECT_EQ(*file.get_u32(names::key("gemma4", names::kBlockCount)), 6u);
  EXPECT_EQ(*file.get_u32(names::key("gemma4", names::kEmbeddingLength)), 128u);
  EXPECT_EQ(*file.get_u32(names::key("gemma4", names::kKeyLengthSwa)), 32u);
  EXPECT_EQ(*file.get_u32(names::key("gemma4", names::kSlidingWindow)), 16u);
  EXPECT_EQ(*file.get_int_array(names::key("gemma4", names::kHeadCountKv)), (std::vector<int64_t>{2, 2, 2, 2, 2, 1}));
  EXPECT_EQ(*file.get_bool_array(names::key("gemma4", names::kSlidingWindowPattern)),
            (std::vector<bool>{true, true, true, true, true, false}));
  EXPECT_FLOAT_EQ(*file.get_f32(names::key("gemma4", names::kFinalLogitSoftcapping)), 30.0f);
  EXPECT_EQ(*file.get_string(names::kTokModel), "gemma4");
  EXPECT_EQ(file.tensors().size(), plan_tensors(c).size());
  // Every key of shared/tools/synth_gguf.py is present (llama.cpp ran those files).
  for (const char* suffix : {"context_length", "embedding_length", "block_count", "feed_forward_length",
                             "attention.head_count", "attention.head_count_kv", "attention.key_length",
                             "attention.value_length", "attention.key_length_swa", "attention.value_length_swa",
                             "attention.layer_norm_rms_epsilon", "attention.sliding_window",
                             "attention.sliding_window_pattern", "attention.shared_kv_layers",
                             "embedding_length_per_layer_input", "rope.freq_base", "rope.freq_base_swa",
                             "rope.dimension_count", "rope.dimension_count_swa", "final_logit_softcapping"}) {
    EXPECT_TRUE(file.has(std::string("gemma4.") + suffix)) << suffix;
  }
  for (const char* key : {"general.architecture", "general.name", "general.file_type", "tokenizer.ggml.model",
                          "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                          "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token"}) {
    EXPECT_TRUE(file.has(key)) << key;
  }

  auto tok = text::Tokenizer::from_gguf(file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& t = **tok;
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.eos_id(), 1);
  EXPECT_EQ(*t.find_token("<|turn>"), 105);
  EXPECT_TRUE(t.is_eog(106));
  EXPECT_TRUE(t.is_eog(50));
  const std::string text = "Hello world, the king said: \"good morning\"!\n\tCaf\xC3\xA9 \xF0\x9F\x99\x82";
  const auto ids = t.encode(text, false, false);
  EXPECT_LT(ids.size(), text.size());  // word pieces merge
  EXPECT_EQ(*t.decode(ids), text);     // byte fallback covers the rest
  const auto chat = t.encode("<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", true, true);
  ASSERT_GE(chat.size(), 6u);
  EXPECT_EQ(chat[0], 2);
  EXPECT_EQ(chat[1], 105);
  EXPECT_NE(std::find(chat.begin(), chat.end(), 106), chat.end());
  EXPECT_NE(std::find(chat.begin(), chat.end(), 100), chat.end());
  EXPECT_NE(std::find(chat.begin(), chat.end(), 101), chat.end());
  // USER_DEFINED markers match even without parse_special; CONTROL ones do not.
  const auto plain = t.encode("<|tool_call>call:f{}<tool_call|>", false, false);
  EXPECT_EQ(plain.front(), 48);
  EXPECT_EQ(plain.back(), 49);
  EXPECT_NE(t.encode("<|turn>", false, false).front(), 105);
}

TEST(Synth, TinyWeightsAreFiniteAndScaled) {
  auto f = gguf::GgufFile::open(write(preset_config(Preset::kTiny), "weights"));
  ASSERT_TRUE(f.ok());
  for (const auto& t : (*f)->tensors()) {
    std::vector<float> v(static_cast<size_t>(t.n_elements));
    const size_t row = *ggml_row_size(t.type, t.ne[0]);
    for (int64_t r = 0; r < t.n_rows(); ++r) {
      ASSERT_TRUE(dequantize_row(t.type, t.data + r * row, v.data() + r * t.ne[0], t.ne[0]).ok());
    }
    double sum = 0, sq = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << t.name;
      sum += x;
      sq += static_cast<double>(x) * x;
    }
    const double mean = sum / static_cast<double>(v.size());
    const double rms = std::sqrt(sq / static_cast<double>(v.size()));
    if (t.name == "rope_freqs.weight") {
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], i < 8 ? 1.0f : 1e30f) << i;  // 64 * 0.25 / 2 = 8
    } else if (t.n_dims == 1) {
      for (float x : v) EXPECT_TRUE(x >= 0.89f && x <= 1.11f) << t.name << " " << x;
    } else {
      EXPECT_GT(rms, 0.01) << t.name;
      EXPECT_LT(rms, 0.04) << t.name;
      EXPECT_LT(std::fabs(mean), 0.2 * rms) << t.name;
    }
  }
}

TEST(Synth, EveryWeightTypeWritesFiniteWeights) {
  for (const char* type : {"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K",
                           "q5_K", "q6_K", "iq4_nl", "iq4_xs", "mxfp4"}) {
    SCOPED_TRACE(type);
    SynthConfig c = preset_config(Preset::kTiny);
    c.n_embd = 256;  // rows of 256 so the K-quants are used as asked
    c.n_ff = 512;
    c.n_layer = 2;
    c.types = *WeightTypes::parse(type);
    auto f = gguf::GgufFile::open(write(c, std::string("type-") + type));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const auto* q = (*f)->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, *ggml_type_from_name(type));
    std::vector<float> v(static_cast<size_t>(q->n_elements));
    const size_t row = *ggml_row_size(q->type, q->ne[0]);
    double sq = 0;
    for (int64_t r = 0; r < q->n_rows(); ++r) {
      dequantize_row_fn(q->type)(q->data + r * row, v.data() + r * q->ne[0], q->ne[0]);
    }
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x));
      sq += static_cast<double>(x) * x;
    }
    const double rms = std::sqrt(sq / static_cast<double>(v.size()));
    EXPECT_GT(rms, kWeightStd / 2.5);
    EXPECT_LT(rms, kWeightStd * 2.5);
  }
}

TEST(Synth, DeterministicInSeedNotThreads) {
  SynthConfig c = preset_config(Preset::kTiny);
  const auto a = read_all(write(c, "det-a", 1));
  const auto b = read_all(write(c, "det-b", 3));
  EXPECT_EQ(a, b);
  c.seed = 2;
  const auto d = read_all(write(c, "det-c", 2));
  EXPECT_EQ(a.size(), d.size());
  EXPECT_NE(a, d);
}

TEST(Synth, OverridesAndAssistant) {
  SynthConfig c = preset_config(Preset::k31b);
  c.n_embd = 256;
  c.n_layer = 7;
  c.n_ff = 512;
  c.n_head = 8;
  c.n_head_kv_swa = 4;
  c.n_head_kv = 2;
  c.head_dim = 64;
  c.head_dim_swa = 32;
  c.n_vocab = 600;
  auto f = gguf::GgufFile::open(write(c, "override"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  // Layer 5 is full by the period, layer 6 because it is last.
  EXPECT_EQ(*(*f)->get_bool_array("gemma4.attention.sliding_window_pattern"),
            (std::vector<bool>{true, true, true, true, true, false, false}));
  EXPECT_EQ((*f)->find_tensor("blk.6.attn_v.weight"), nullptr);
  EXPECT_EQ((*f)->find_tensor("token_embd.weight")->ne[1], 600);

  auto a = gguf::GgufFile::open(write(preset_config(Preset::kTinyAssistant), "assistant"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(*(*a)->get_string("general.architecture"), "gemma4-assistant");
  EXPECT_EQ(*(*a)->get_u32("gemma4-assistant.embedding_length_out"), 128u);
  EXPECT_EQ(*(*a)->get_u32("gemma4-assistant.nextn_predict_layers"), 4u);
  EXPECT_EQ(*(*a)->get_u32("gemma4-assistant.attention.shared_kv_layers"), 4u);
  EXPECT_FALSE((*a)->has("gemma4-assistant.final_logit_softcapping"));
  EXPECT_NE((*a)->find_tensor("nextn.pre_projection.weight"), nullptr);
  EXPECT_EQ((*a)->find_tensor("nextn.pre_projection.weight")->ne[0], 256);
}

}  // namespace
}  // namespace gs::synth
