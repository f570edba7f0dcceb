// The forward and the drafter through the fused ops (Backend::add_rms_norm,
// qkv_norm_rope_store) give bit for bit the results of the op-by-op sequence they run while
// dumping, on the golden models and random models of other shapes (K = V and separate V,
// partial rotary, several kv heads); and they really call the fused ops: each layer one
// attention-input op and two residual updates, one plain rms_norm per pass; and attention
// learns which batches are of one sequence.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "forwarding_backend.h"
#include "golden_util.h"
#include "model/drafter.h"
#include "test_gguf.h"

namespace gs::test {
namespace {

// Forwards every op to a CPU backend and counts the calls the model makes itself (not the
// ones a fused op's default implementation makes on its behalf).
class CountingBackend final : public ForwardingBackend {
 public:
  CountingBackend() : ForwardingBackend(create_cpu_backend(2)) {}
  std::map<std::string, int> calls;
  std::vector<int> attention_seqs;  // AttentionArgs::n_seqs of each attention call
  std::vector<uint64_t> step_keys;  // the key of each run_step
  std::vector<bool> step_recurring;  // and whether it was marked recurring

  std::string description() const override { return "counting " + ForwardingBackend::description(); }
  void embed(const Weight& t, const int32_t* ids, float s, Mat out) override {
    count("embed");
    ForwardingBackend::embed(t, ids, s, out);
  }
  void matmul(const Weight& w, Mat x, Mat y) override {
    count("matmul");
    ForwardingBackend::matmul(w, x, y);
  }
  void rms_norm(Mat x, const float* w, int64_t group, float eps, Mat out) override {
    count("rms_norm");
    ForwardingBackend::rms_norm(x, w, group, eps, out);
  }
  void rope(Mat x, const int32_t* pos, const RopeArgs& a) override {
    count("rope");
    ForwardingBackend::rope(x, pos, a);
  }
  void gelu_mul(Mat g, Mat u, Mat out) override {
    count("gelu_mul");
    ForwardingBackend::gelu_mul(g, u, out);
  }
  void add(Mat a, Mat b, Mat out) override {
    count("add");
    ForwardingBackend::add(a, b, out);
  }
  void scale(Mat x, float s) override {
    count("scale");
    ForwardingBackend::scale(x, s);
  }
  void softcap(Mat x, float cap) override {
    count("softcap");
    ForwardingBackend::softcap(x, cap);
  }
  void argmax_rows(Mat x, int32_t* ids, float* p_top) override {
    count("argmax_rows");
    ForwardingBackend::argmax_rows(x, ids, p_top);
  }
  void gather_rows(Mat src, const int32_t* rows, Mat dst) override {
    count("gather_rows");
    ForwardingBackend::gather_rows(src, rows, dst);
  }
  void copy(Mat src, Mat dst) override {
    count("copy");
    ForwardingBackend::copy(src, dst);
  }
  void kv_store(Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) override {
    count("kv_store");
    ForwardingBackend::kv_store(k, v, kv, slots);
  }
  void attention(const AttentionArgs& a) override {
    count("attention");
    attention_seqs.push_back(a.n_seqs);
    ForwardingBackend::attention(a);
  }
  void run_step(uint64_t key, bool recurring, const std::function<void()>& record) override {
    step_recurring.push_back(recurring);
    step_keys.push_back(key);
    record();
  }
  void kv_copy_slots(const KvLayerView& kv, const int32_t* s, const int32_t* d, int n) override {
    count("kv_copy_slots");
    ForwardingBackend::kv_copy_slots(kv, s, d, n);
  }
  void matmul_multi(const Weight* const* w, const Mat* y, int n, Mat x) override {
    count("matmul_multi");
    ++depth_;
    Backend::matmul_multi(w, y, n, x);
    --depth_;
  }
  void add_rms_norm(Mat x, Mat o, const float* ow, float s, const float* xw, float eps, Mat out) override {
    count("add_rms_norm");
    ++depth_;
    Backend::add_rms_norm(x, o, ow, s, xw, eps, out);
    --depth_;
  }
  void qkv_norm_rope_store(const QkvNormRopeArgs& a) override {
    count("qkv_norm_rope_store");
    ++depth_;
    Backend::qkv_norm_rope_store(a);
    --depth_;
  }

 private:
  void count(const char* op) {
    if (depth_ == 0) ++calls[op];
  }
  int depth_ = 0;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> random_tokens(uint32_t seed, int n, int n_vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  return t;
}

// All logits of `tokens` fed as a prompt of 9, single tokens, then the rest in passes of 5.
std::vector<float> logits_of(std::shared_ptr<const Gemma4Model> model, const std::vector<int32_t>& tokens, bool dump,
                             GgmlType kv_type) {
  auto r = make_runner(std::move(model), 16, 16, kv_type, 1, 256, 4);
  if (!r) return {};
  if (dump) r->forward().set_dump([](const DumpTensor&) {});
  const int seq = r->add_sequence().value();
  std::vector<float> out;
  size_t i = 0;
  int pass = 0;
  while (i < tokens.size()) {
    const size_t len = pass == 0 ? 9 : pass < 6 ? 1 : 5;
    std::vector<ModelRunner::Token> batch;
    for (size_t j = i; j < std::min(tokens.size(), i + len); ++j) batch.push_back({seq, tokens[j], true});
    const Status st = r->decode(batch);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) break;
    for (int k = 0; k < r->n_outputs(); ++k) out.insert(out.end(), r->logits(k).begin(), r->logits(k).end());
    i += batch.size();
    ++pass;
  }
  return out;
}

TEST(FusedForward, GoldenModelEqualsOpByOpBitForBit) {
  auto backend = create_cpu_backend(2);
  auto model = load_model(*backend, "golden/tiny1234-target.gguf");
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> tokens = random_tokens(3, 30, model->config().n_vocab);
  for (GgmlType kv : {GgmlType::F32, GgmlType::F16}) {
    const std::vector<float> fused = logits_of(model, tokens, false, kv);
    const std::vector<float> op_by_op = logits_of(model, tokens, true, kv);
    ASSERT_EQ(fused.size(), tokens.size() * static_cast<size_t>(model->config().n_vocab));
    EXPECT_TRUE(same_bits(fused, op_by_op)) << ggml_type_name(kv);
  }
}

TEST(FusedForward, RandomModelsEqualOpByOpBitForBit) {
  auto backend = create_cpu_backend(2);
  const auto dir = temp_dir("fused");
  std::vector<std::pair<std::string, RandomModelSpec>> specs;
  RandomModelSpec s;
  specs.push_back({"default", s});
  s = {};
  s.n_head = 8, s.n_head_kv_swa = 4, s.n_head_kv_full = 2, s.head_dim_swa = 8, s.head_dim_full = 24, s.window = 3;
  s.sliding = {true, false, true, true, true, false};
  specs.push_back({"more_heads_odd_dims", s});
  s = {};
  s.n_head = 3, s.n_head_kv_swa = 3, s.n_head_kv_full = 3, s.k_eq_v = false, s.window = 11, s.n_rot_swa = 8;
  s.sliding = {false, true};
  specs.push_back({"separate_v_partial_rot", s});
  s = {};
  s.sliding = {false, false};
  s.with_layer_scale = false;
  specs.push_back({"only_full_no_layer_scale", s});
  for (const auto& [name, spec] : specs) {
    SCOPED_TRACE(name);
    const std::string path = (dir / (name + ".gguf")).string();
    ASSERT_TRUE(random_model(spec).write(path).ok());
    auto model = Gemma4Model::load(path, *backend);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const std::vector<int32_t> tokens = random_tokens(spec.seed, 25, spec.n_vocab);
    const std::vector<float> fused = logits_of(*model, tokens, false, GgmlType::F32);
    const std::vector<float> op_by_op = logits_of(*model, tokens, true, GgmlType::F32);
    ASSERT_FALSE(fused.empty());
    EXPECT_TRUE(same_bits(fused, op_by_op));
  }
  std::filesystem::remove_all(dir);
}

// The drafter's logits and h_next after one step on a prefilled target cache.
struct DraftOut {
  std::vector<float> logits, h_next;
};
DraftOut draft_once(Backend& b, std::shared_ptr<Gemma4Model> target, std::shared_ptr<Gemma4Model> assistant,
                    bool dump) {
  DraftOut out;
  auto runner = make_runner(target, 16, 4);
  const int seq = runner->add_sequence().value();
  const std::vector<int32_t> prompt = random_tokens(5, 12, target->config().n_vocab);
  std::vector<ModelRunner::Token> toks;
  for (int32_t id : prompt) toks.push_back({seq, id, false});
  EXPECT_TRUE(runner->decode(toks).ok());
  auto drafter = Gemma4DrafterForward::create(assistant, target, 2, DraftSlidingWindow::kWindow);
  EXPECT_TRUE(drafter.ok()) << drafter.status().to_string();
  if (!drafter.ok()) return out;
  if (dump) (*drafter)->set_dump([](const DumpTensor&) {});
  const int64_t et = target->config().n_embd;
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> h(static_cast<size_t>(2 * et));
  for (auto& x : h) x = d(rng);
  EXPECT_TRUE(b.upload((*drafter)->h_in().data, h.data(), h.size() * sizeof(float)).ok());
  const std::vector<int32_t> tok = {prompt[3], prompt[7]}, pos = {12, 12}, row = {seq, seq};
  EXPECT_TRUE((*drafter)->run({tok, pos, row}, runner->kv().binding()).ok());
  const Mat lg = (*drafter)->logits(), hn = (*drafter)->h_next();
  out.logits.resize(static_cast<size_t>(lg.rows * lg.cols));
  out.h_next.resize(static_cast<size_t>(hn.rows * hn.cols));
  EXPECT_TRUE(b.download(out.logits.data(), lg.data, out.logits.size() * sizeof(float)).ok());
  EXPECT_TRUE(b.download(out.h_next.data(), hn.data, out.h_next.size() * sizeof(float)).ok());
  return out;
}

TEST(FusedForward, DrafterEqualsOpByOpBitForBit) {
  auto backend = create_cpu_backend(2);
  auto target = load_model(*backend, "golden/tiny1234-target.gguf");
  auto assistant = load_model(*backend, "golden/tiny1234-assistant.gguf");
  ASSERT_TRUE(target && assistant);
  const DraftOut fused = draft_once(*backend, target, assistant, false);
  const DraftOut op_by_op = draft_once(*backend, target, assistant, true);
  ASSERT_FALSE(fused.logits.empty());
  EXPECT_TRUE(same_bits(fused.logits, op_by_op.logits));
  EXPECT_TRUE(same_bits(fused.h_next, op_by_op.h_next));
}

TEST(FusedForward, CallsTheFusedOps) {
  CountingBackend b;
  auto target = load_model(b, "golden/tiny1234-target.gguf");
  auto assistant = load_model(b, "golden/tiny1234-assistant.gguf");
  ASSERT_TRUE(target && assistant);
  const int n_layer = target->config().n_layer;
  for (bool dump : {false, true}) {
    SCOPED_TRACE(dump ? "dumping" : "fused");
    auto runner = make_runner(target, 16, 16);
    if (dump) runner->forward().set_dump([](const DumpTensor&) {});
    const int seq = runner->add_sequence().value();
    const std::vector<int32_t> prompt = random_tokens(9, 5, target->config().n_vocab);
    std::vector<ModelRunner::Token> toks;
    for (int32_t id : prompt) toks.push_back({seq, id, true});
    b.calls.clear();
    const Status st = runner->decode(toks);
    ASSERT_TRUE(st.ok()) << st.to_string();
    if (!dump) {
      EXPECT_EQ(b.calls["rms_norm"], 1);  // the first layer's attn_norm
      EXPECT_EQ(b.calls["add_rms_norm"], 2 * n_layer);
      EXPECT_EQ(b.calls["qkv_norm_rope_store"], n_layer);
      for (const char* op : {"add", "scale", "rope", "kv_store"}) EXPECT_EQ(b.calls[op], 0) << op;
      EXPECT_EQ(b.calls["copy"], 1);  // the runner's copy of the hidden rows; no K = V copy
    } else {
      EXPECT_EQ(b.calls["add_rms_norm"], 0);
      EXPECT_EQ(b.calls["qkv_norm_rope_store"], 0);
      EXPECT_EQ(b.calls["rope"], 2 * n_layer);
      EXPECT_EQ(b.calls["kv_store"], n_layer);
    }
    EXPECT_EQ(b.calls["attention"], n_layer);
    EXPECT_EQ(b.calls["matmul_multi"], 2 * n_layer);  // q, k (and v); gate and up
  }
  // The drafter: Q-only attention inputs, the same tails.
  const int n_layer_a = assistant->config().n_layer;
  auto runner = make_runner(target, 16, 4);
  const int seq = runner->add_sequence().value();
  const std::vector<int32_t> prompt = random_tokens(5, 6, target->config().n_vocab);
  std::vector<ModelRunner::Token> toks;
  for (int32_t id : prompt) toks.push_back({seq, id, false});
  ASSERT_TRUE(runner->decode(toks).ok());
  auto drafter = Gemma4DrafterForward::create(assistant, target, 1, DraftSlidingWindow::kWindow);
  ASSERT_TRUE(drafter.ok()) << drafter.status().to_string();
  const int32_t tok = prompt[2], pos = 6;
  b.calls.clear();
  ASSERT_TRUE((*drafter)->run({{&tok, 1}, {&pos, 1}, {&seq, 1}}, runner->kv().binding()).ok());
  EXPECT_EQ(b.calls["rms_norm"], 1);
  EXPECT_EQ(b.calls["add_rms_norm"], 2 * n_layer_a);
  EXPECT_EQ(b.calls["qkv_norm_rope_store"], n_layer_a);
  EXPECT_EQ(b.calls["rope"], 0);
  EXPECT_EQ(b.calls["attention"], n_layer_a);
}

// The forward tells attention when a batch is of one sequence (a kernel-choice hint, decision
// 0020), and a batch of one sequence and one of two with the same token and output counts are
// different steps (a captured step holds the choice).
TEST(FusedForward, AttentionKnowsOneSequenceBatches) {
  CountingBackend b;
  auto target = load_model(b, "golden/tiny1234-target.gguf");
  ASSERT_NE(target, nullptr);
  const int n_layer = target->config().n_layer;
  auto runner = make_runner(target, 16, 16, GgmlType::F32, 2);
  const int a = runner->add_sequence().value(), c = runner->add_sequence().value();
  const std::vector<int32_t> t = random_tokens(4, 4, target->config().n_vocab);
  const std::vector<ModelRunner::Token> one = {{a, t[0], true}, {a, t[1], true}};
  const std::vector<ModelRunner::Token> two = {{a, t[2], true}, {c, t[3], true}};
  ASSERT_TRUE(runner->decode(one).ok());
  ASSERT_TRUE(runner->decode(two).ok());
  ASSERT_EQ(b.attention_seqs.size(), static_cast<size_t>(2 * n_layer));
  for (int i = 0; i < n_layer; ++i) {
    EXPECT_EQ(b.attention_seqs[static_cast<size_t>(i)], 1) << "one-sequence batch, layer " << i;
    EXPECT_EQ(b.attention_seqs[static_cast<size_t>(n_layer + i)], 0) << "two-sequence batch, layer " << i;
  }
  ASSERT_EQ(b.step_keys.size(), 2u);
  EXPECT_NE(b.step_keys[0], b.step_keys[1]);
}

// Decode and verify passes (every row wants logits), full passes and the drafter's steps are
// marked recurring, so a backend may capture them; a prompt's last chunk is not: its length
// follows the prompt's, and capturing each left a CUDA graph replayed about once (thirty-sixth
// session: the server's host memory grew by ~530 MB over 1000 prompts).
TEST(FusedForward, OnlyStepsWhoseShapeRecursAreMarkedRecurring) {
  CountingBackend b;
  auto target = load_model(b, "golden/tiny1234-target.gguf");
  auto assistant = load_model(b, "golden/tiny1234-assistant.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(assistant, nullptr);
  auto runner = make_runner(target, 16, 16, GgmlType::F32, 1);
  const int seq = runner->add_sequence().value();
  // A prompt of 22 tokens in passes of 16: a full pass, then its last 6 (only the last token
  // wants logits).
  const std::vector<int32_t> t = random_tokens(7, 25, target->config().n_vocab);
  std::vector<ModelRunner::Token> prompt;
  for (int i = 0; i < 22; ++i) prompt.push_back({seq, t[static_cast<size_t>(i)], i == 21});
  ASSERT_TRUE(runner->decode(prompt).ok());
  ASSERT_TRUE(runner->decode(std::vector<ModelRunner::Token>{{seq, t[22], true}}).ok());  // decode
  ASSERT_TRUE(runner->decode(std::vector<ModelRunner::Token>{{seq, t[23], true}, {seq, t[24], true}}).ok());  // verify
  ASSERT_EQ(b.step_recurring.size(), 4u);
  EXPECT_TRUE(b.step_recurring[0]) << "a full pass of the prompt";
  EXPECT_FALSE(b.step_recurring[1]) << "the prompt's last chunk";
  EXPECT_TRUE(b.step_recurring[2]) << "decode";
  EXPECT_TRUE(b.step_recurring[3]) << "verify";
  auto drafter = Gemma4DrafterForward::create(assistant, target, 1, DraftSlidingWindow::kWindow);
  ASSERT_TRUE(drafter.ok()) << drafter.status().to_string();
  const int32_t tok = t[24], pos = 25;
  ASSERT_TRUE((*drafter)->run({{&tok, 1}, {&pos, 1}, {&seq, 1}}, runner->kv().binding()).ok());
  ASSERT_EQ(b.step_recurring.size(), 5u);
  EXPECT_TRUE(b.step_recurring[4]) << "draft step";
}

}  // namespace
}  // namespace gs::test
