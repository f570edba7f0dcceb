// The forward and the KV cache agree with themselves: one batch = chunks = token by token,
// sequences batched together = each alone, rollback then re-decode = straight decode, and
// sequences much longer than the sliding window (the ring wraps), on the golden model and
// on random models of other shapes and weight types.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "golden_util.h"
#include "test_gguf.h"

namespace gs::test {
namespace {

// Feeds `tokens` to `seq` in chunks of `chunk`, every row an output; returns all logits.
std::vector<float> run_chunks(ModelRunner& r, int seq, const std::vector<int32_t>& tokens, size_t chunk) {
  std::vector<float> out;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    std::vector<ModelRunner::Token> batch;
    for (size_t j = i; j < std::min(tokens.size(), i + chunk); ++j) batch.push_back({seq, tokens[j], true});
    const Status st = r.decode(batch);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return out;
    for (int k = 0; k < r.n_outputs(); ++k) out.insert(out.end(), r.logits(k).begin(), r.logits(k).end());
  }
  return out;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int n, int n_vocab) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % n_vocab);
  return t;
}

// The checks every model must pass. `kv_type`: cache storage; `n_tokens` long enough to
// wrap the sliding ring several times when `max_ubatch` is small.
void check_consistency(std::shared_ptr<Gemma4Model> model, const std::vector<int32_t>& tokens, GgmlType kv_type) {
  constexpr double kTol = 1e-5;
  const int n = static_cast<int>(tokens.size());
  // Small pages and a small ubatch so that the ring wraps.
  auto make = [&](int n_seq, int max_tokens) {
    RunnerOptions o;
    o.max_tokens = max_tokens;
    o.max_outputs = std::max(64, n);
    o.kv.n_seq_max = n_seq;
    o.kv.n_ctx = 1024;
    o.kv.type = kv_type;
    o.kv.page_size = 4;
    return ModelRunner::create(model, o).value();
  };
  auto whole = make(1, 16);
  const int s0 = whole->add_sequence().value();
  const std::vector<float> ref = run_chunks(*whole, s0, tokens, 16);
  ASSERT_EQ(ref.size(), static_cast<size_t>(n) * model->config().n_vocab);
  EXPECT_TRUE(all_finite(ref));

  for (size_t chunk : {1, 5, 16}) {
    auto r = make(1, 16);
    const int s = r->add_sequence().value();
    EXPECT_LT(max_diff(run_chunks(*r, s, tokens, chunk), ref), kTol) << "chunk " << chunk;
  }
  // A cache whose ring never wraps gives the same result.
  {
    auto r = make(1, 512);
    const int s = r->add_sequence().value();
    EXPECT_LT(max_diff(run_chunks(*r, s, tokens, 16), ref), kTol) << "no wrap";
  }
  // Two sequences interleaved in the same batches = each alone.
  {
    auto r = make(3, 16);
    const int a = r->add_sequence().value();
    const int b = r->add_sequence().value();
    std::vector<int32_t> other(tokens.rbegin(), tokens.rend());
    std::vector<float> got_a, got_b;
    for (int i = 0; i < n; i += 3) {
      std::vector<ModelRunner::Token> batch;
      for (int j = i; j < std::min(n, i + 3); ++j) {
        batch.push_back({a, tokens[j], true});
        batch.push_back({b, other[j], true});
      }
      ASSERT_TRUE(r->decode(batch).ok());
      for (int k = 0; k < r->n_outputs(); ++k) {
        auto& dst = k % 2 == 0 ? got_a : got_b;
        dst.insert(dst.end(), r->logits(k).begin(), r->logits(k).end());
      }
    }
    EXPECT_LT(max_diff(got_a, ref), kTol) << "batched sequence a";
    auto alone = make(1, 16);
    const int s = alone->add_sequence().value();
    EXPECT_LT(max_diff(got_b, run_chunks(*alone, s, other, 16)), kTol) << "batched sequence b";
  }
  // Rollback: decode 4 wrong tokens, drop them, continue = straight decode.
  {
    auto r = make(1, 16);
    const int s = r->add_sequence().value();
    std::vector<float> got;
    const int cut = n / 2;
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + cut);
    got = run_chunks(*r, s, head, 7);
    std::vector<int32_t> junk = {tokens[0], tokens[1], tokens[2], tokens[3]};
    run_chunks(*r, s, junk, 4);
    ASSERT_TRUE(r->truncate(s, cut).ok());
    EXPECT_EQ(r->length(s), cut);
    std::vector<int32_t> tail(tokens.begin() + cut, tokens.end());
    const std::vector<float> rest = run_chunks(*r, s, tail, 3);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_LT(max_diff(got, ref), kTol) << "rollback";
  }
}

TEST(Consistency, GoldenModelEveryCacheType) {
  auto backend = create_cpu_backend(2);
  auto model = load_model(*backend, "golden/tiny1234-target.gguf");
  std::mt19937 rng(7);
  // 70 tokens: far longer than the window of 8 and than the 19-position ring.
  const std::vector<int32_t> tokens = random_tokens(rng, 70, model->config().n_vocab);
  check_consistency(model, tokens, GgmlType::F32);
  check_consistency(model, tokens, GgmlType::F16);
  check_consistency(model, tokens, GgmlType::Q8_0);
}

struct ShapeCase {
  const char* name;
  RandomModelSpec spec;
};

std::vector<ShapeCase> shape_cases() {
  std::vector<ShapeCase> v;
  RandomModelSpec s;
  v.push_back({"default", s});
  s = {};
  s.n_head = 8, s.n_head_kv_swa = 4, s.n_head_kv_full = 2, s.head_dim_swa = 8, s.head_dim_full = 24, s.window = 3;
  s.sliding = {true, false, true, true, true, false};
  v.push_back({"more_heads_odd_dims", s});
  s = {};
  s.n_head = 3, s.n_head_kv_swa = 3, s.n_head_kv_full = 3, s.k_eq_v = false, s.window = 11, s.n_rot_swa = 8;
  s.sliding = {false, true};
  v.push_back({"mha_full_first_partial_rot", s});
  s = {};
  s.sliding = {true, true, true};  // no full layer: rope_freqs not needed
  s.with_rope_freqs = false;
  v.push_back({"only_sliding", s});
  s = {};
  s.sliding = {false, false};
  s.with_rope_freqs = false;  // synthesized
  s.with_layer_scale = false;
  v.push_back({"only_full_synth_rope_freqs", s});
  s = {};
  s.matrix_type = GgmlType::Q8_0, s.embd_type = GgmlType::Q8_0, s.n_embd = 64, s.n_ff = 128;
  s.head_dim_swa = 16, s.head_dim_full = 32;  // q/o widths multiples of 32
  v.push_back({"q8_0", s});
  s = {};
  s.matrix_type = GgmlType::F16, s.embd_type = GgmlType::BF16;
  v.push_back({"f16_bf16", s});
  // K-quants (256-element blocks): every row length a multiple of 256.
  s = {};
  s.n_embd = 256, s.n_ff = 512, s.n_head = 8, s.head_dim_swa = 32, s.head_dim_full = 64;
  s.matrix_type = GgmlType::Q4_K, s.embd_type = GgmlType::Q6_K;
  v.push_back({"q4_k_q6_k", s});
  s.matrix_type = GgmlType::IQ4_XS, s.embd_type = GgmlType::Q5_K;
  v.push_back({"iq4_xs_q5_k", s});
  s = {};
  s.matrix_type = GgmlType::Q4_0, s.embd_type = GgmlType::Q5_1, s.n_ff = 128;
  v.push_back({"q4_0_q5_1", s});
  return v;
}

TEST(Consistency, RandomModelsOfOtherShapes) {
  auto backend = create_cpu_backend(2);
  const auto dir = temp_dir("shapes");
  for (const ShapeCase& c : shape_cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = (dir / (std::string(c.name) + ".gguf")).string();
    ASSERT_TRUE(random_model(c.spec).write(path).ok());
    auto model = Gemma4Model::load(path, *backend);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    std::mt19937 rng(c.spec.seed);
    const std::vector<int32_t> tokens = random_tokens(rng, 45, c.spec.n_vocab);
    check_consistency(*model, tokens, GgmlType::F32);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gs::test
