// The Gemma 4 forward on the CUDA backend: the tiny1234 transformers goldens (logits within
// 5e-2, same argmax wherever the golden top-2 gap exceeds 0.1, the greedy tokens), and
// synthetic models of every weight type against the CPU oracle (logits, prefill in one batch
// = in chunks = token by token, two sequences batched = each alone).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "backend/cuda/cuda_backend.h"
#include "common/test_paths.h"
#include "cuda_test_util.h"
#include "model/golden_util.h"
#include "model/synth_writer.h"

namespace gs::test {
namespace {

// Logits [n * n_vocab] of `ids` fed in passes of `chunk` tokens (every row outputs).
std::vector<float> logits_of(ModelRunner& r, const std::vector<int32_t>& ids, int chunk) {
  const int seq = r.add_sequence().value();
  std::vector<float> out;
  for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(chunk)) {
    std::vector<ModelRunner::Token> toks;
    for (size_t j = i; j < std::min(ids.size(), i + static_cast<size_t>(chunk)); ++j) toks.push_back({seq, ids[j], true});
    const Status s = r.decode(toks);
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!s.ok()) break;
    for (int k = 0; k < r.n_outputs(); ++k) out.insert(out.end(), r.logits(k).begin(), r.logits(k).end());
  }
  EXPECT_TRUE(r.remove_sequence(seq).ok());
  return out;
}

struct TopTwo {
  int best;
  float gap;
};
TopTwo top_two(const float* v, int n) {
  int b = 0;
  for (int i = 1; i < n; ++i)
    if (v[i] > v[b]) b = i;
  float second = -INFINITY;
  for (int i = 0; i < n; ++i)
    if (i != b) second = std::max(second, v[i]);
  return {b, v[b] - second};
}

class CudaGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    GS_REQUIRE_BACKENDS();
    g_ = load_goldens();
    model_ = load_model(*Backends::get().fast, "golden/tiny1234-target.gguf");
    ASSERT_NE(model_, nullptr);
  }
  Goldens g_;
  std::shared_ptr<Gemma4Model> model_;
};

// The golden model amplifies rounding enormously (tests/model/golden_test.cpp): storing its
// KV cache in f16 moves even the CPU oracle's logits by ~7. So the goldens run with an f32
// cache, on the f32 paths of the CUDA backend (f32 weights, f32 KV); the f16 paths are checked
// against the CPU oracle on the synthetic models below and op by op.
TEST_F(CudaGolden, LogitsOfAllPositions) {
  for (GgmlType kv : {GgmlType::F32}) {
    for (int chunk : {40, 7, 1}) {
      SCOPED_TRACE(std::string("kv ") + std::string(ggml_type_name(kv)) + " chunk " + std::to_string(chunk));
      auto runner = make_runner(model_, 64, 64, kv);
      ASSERT_NE(runner, nullptr);
      const std::vector<float> lg = logits_of(*runner, g_.seq, chunk);
      ASSERT_EQ(lg.size(), 40u * 1024);
      double max_err = 0;
      for (int p = 0; p < 40; ++p) {
        const float* ref = g_.logits(p);
        for (int v = 0; v < 1024; ++v) max_err = std::max(max_err, std::fabs(static_cast<double>(lg[p * 1024 + v]) - ref[v]));
        const TopTwo t = top_two(ref, 1024);
        if (t.gap > 0.1f) {
          EXPECT_EQ(top_two(lg.data() + p * 1024, 1024).best, t.best) << "position " << p;
        }
      }
      std::printf("CUDA logits vs transformers (kv %s, chunk %d): max |err| %.3g\n",
                  std::string(ggml_type_name(kv)).c_str(), chunk, max_err);
      EXPECT_LT(max_err, 5e-2);
    }
  }
}

TEST_F(CudaGolden, GreedyTokens) {
  for (GgmlType kv : {GgmlType::F32}) {
    auto runner = make_runner(model_, 64, 4, kv);
    ASSERT_NE(runner, nullptr);
    EXPECT_EQ(greedy_tokens(*runner, std::span(g_.greedy).first(12), 24),
              std::vector<int32_t>(g_.greedy.begin() + 12, g_.greedy.end()))
        << ggml_type_name(kv);
  }
}

// ---- synthetic models of every weight type: CUDA against the CPU oracle ---------------------

std::string synth_model(const std::string& type) {
  static std::map<std::string, std::string> made;
  if (made.count(type)) return made[type];
  synth::SynthConfig c = synth::preset_config(synth::Preset::kTiny);
  c.n_embd = 256;
  c.n_ff = 768;
  c.n_layer = 6;
  c.n_head = 8;
  c.n_head_kv = 2;
  c.n_head_kv_swa = 4;
  c.head_dim = 128;     // full layers: the tensor-core attention path
  c.head_dim_swa = 64;
  c.sliding_window = 24;
  c.n_vocab = 1024;
  c.seed = 7;
  c.types = synth::WeightTypes::parse(type).value();
  const auto dir = temp_dir("cuda-synth");
  const std::string path = (dir / ("tiny-" + type + ".gguf")).string();
  auto st = synth::write_synth(c, path, 2);
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  made[type] = path;
  return path;
}

std::vector<int32_t> prompt_ids(int n, int vocab) {
  std::vector<int32_t> ids = {2};
  uint32_t s = 99;
  while (static_cast<int>(ids.size()) < n) {
    s = s * 1664525u + 1013904223u;
    ids.push_back(5 + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(vocab - 5)));
  }
  return ids;
}

// Named intermediates of layers 0 and 1 for a prompt, by (name, layer).
std::map<std::pair<std::string, int>, std::vector<float>> dump_layers(ModelRunner& r, const std::vector<int32_t>& ids) {
  std::map<std::pair<std::string, int>, std::vector<float>> d;
  r.forward().set_dump([&](const DumpTensor& t) {
    if (t.layer == 0 || t.layer == 1) d[{std::string(t.name), t.layer}] = std::vector<float>(t.data, t.data + t.rows * t.cols);
  });
  const int seq = r.add_sequence().value();
  std::vector<ModelRunner::Token> toks;
  for (size_t i = 0; i < ids.size(); ++i) toks.push_back({seq, ids[i], i + 1 == ids.size()});
  EXPECT_TRUE(r.decode(toks).ok());
  EXPECT_TRUE(r.remove_sequence(seq).ok());
  r.forward().set_dump(nullptr);
  return d;
}

// A random-weight model amplifies rounding layer after layer, so its logits are compared
// against a noise floor measured on the CPU oracle itself: the change an f16 KV cache makes
// there (f32 vs f16 storage of K and V, two tensors of f16 rounding per layer). The CUDA paths
// round every matmul operand to f16 (seven matmuls per layer), and the tensor-core matvec
// rounds each K-quant sub-block's scale and min to f16 separately (~1e-3 per weight), so
// they sit at several times that floor: the bound is 6x (a wrong op gives O(1) errors).
// Layers 0 and 1 are compared op by op without that slack.
TEST(CudaSynth, EveryWeightTypeAgainstCpu) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  for (const std::string type : {"q4_k_m", "q4_K", "q5_K", "q6_K", "q8_0", "q4_0", "f16", "bf16", "f32"}) {
    SCOPED_TRACE(type);
    const std::string path = synth_model(type);
    auto mc = Gemma4Model::load(path, *B.cpu);
    auto mg = Gemma4Model::load(path, *B.fast);
    ASSERT_TRUE(mc.ok() && mg.ok());
    const std::vector<int32_t> ids = prompt_ids(60, 1024);  // longer than the window (24)
    auto rc = make_runner(*mc, 64, 64, GgmlType::F16, 2, 256);
    auto rc32 = make_runner(*mc, 64, 64, GgmlType::F32, 2, 256);
    auto rg = make_runner(*mg, 64, 64, GgmlType::F16, 2, 256);
    ASSERT_TRUE(rc && rc32 && rg);
    const std::vector<float> ref = logits_of(*rc, ids, 60);
    const std::vector<float> ref32 = logits_of(*rc32, ids, 60);
    const std::vector<float> one = logits_of(*rg, ids, 60);
    const std::vector<float> chunks = logits_of(*rg, ids, 7);
    const std::vector<float> steps = logits_of(*rg, ids, 1);
    const double floor = compare(ref, ref32).rel_l2;
    // Every CUDA path (GEMM for the 60-row batch, tensor-core matvec for chunks and single
    // tokens) against the oracle.
    const ErrStats e1 = compare(one, ref), e2 = compare(chunks, ref), e3 = compare(steps, ref);
    std::printf("%-7s noise floor %.2e; CUDA vs CPU logits (rel L2): batch %.2e (max %.2e), chunks of 7 %.2e, "
                "token by token %.2e\n",
                type.c_str(), floor, e1.rel_l2, e1.rel_max, e2.rel_l2, e3.rel_l2);
    const double bound = std::max(6 * floor, 2e-3);
    EXPECT_LT(e1.rel_l2, bound);
    EXPECT_LT(e2.rel_l2, bound);
    EXPECT_LT(e3.rel_l2, bound);
    // Same argmax wherever the oracle's top two are clearly apart (against its own noise).
    for (size_t p = 0; p < ids.size(); ++p) {
      const TopTwo t = top_two(ref.data() + p * 1024, 1024);
      if (t.gap > std::max(0.1, 20 * floor * 30)) {
        EXPECT_EQ(top_two(one.data() + p * 1024, 1024).best, t.best) << "position " << p;
      }
    }
    // Op by op through layers 0 and 1 (short prompt: the matvec and GEMM paths both run).
    for (int n : {9, 24}) {
      const std::vector<int32_t> p = prompt_ids(n, 1024);
      auto dc = dump_layers(*rc, p), dg = dump_layers(*rg, p);
      for (const auto& [key, v] : dc) {
        auto it = dg.find(key);
        ASSERT_NE(it, dg.end()) << key.first << " " << key.second;
        const ErrStats e = compare(it->second, v);
        EXPECT_LT(e.rel_l2, key.second == 0 ? 5e-3 : 2e-2) << key.first << " layer " << key.second << " prompt " << n;
      }
    }
  }
}

// The forward through the fused ops (add_rms_norm, qkv_norm_rope_store; in graphs) against
// the op-by-op forward that runs while dumping (eager, separate kernels). The fused kernels
// are built to give the separate ones' results bit for bit; the bound leaves room for the
// cases where the separate kernels sum a norm in another order (a one-head K).
TEST(CudaSynth, FusedForwardEqualsOpByOp) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  for (const std::string type : {"q4_k_m", "f32"}) {
    SCOPED_TRACE(type);
    auto mg = Gemma4Model::load(synth_model(type), *B.fast);
    ASSERT_TRUE(mg.ok());
    const std::vector<int32_t> ids = prompt_ids(40, 1024);
    for (int chunk : {40, 7, 1}) {  // the GEMM path, the matvec path in passes and for single tokens
      auto fused = make_runner(*mg, 64, 64, GgmlType::F16, 2, 256);
      auto op_by_op = make_runner(*mg, 64, 64, GgmlType::F16, 2, 256);
      ASSERT_TRUE(fused && op_by_op);
      op_by_op->forward().set_dump([](const DumpTensor&) {});
      const std::vector<float> a = logits_of(*fused, ids, chunk), b = logits_of(*op_by_op, ids, chunk);
      ASSERT_EQ(a.size(), b.size());
      const ErrStats e = compare(a, b);
      const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
      std::printf("%-6s chunk %2d: fused vs op-by-op logits rel L2 %.2e, max %.2e%s\n", type.c_str(), chunk, e.rel_l2,
                  e.rel_max, same ? " (bit for bit)" : "");
      EXPECT_LT(e.rel_l2, 1e-4) << "chunk " << chunk;
    }
  }
}

TEST(CudaSynth, BatchedSequencesEqualAlone) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  auto mg = Gemma4Model::load(synth_model("q4_k_m"), *B.fast);
  ASSERT_TRUE(mg.ok());
  auto r = make_runner(*mg, 64, 64, GgmlType::F16, 3, 256);
  ASSERT_NE(r, nullptr);
  const std::vector<int32_t> a = prompt_ids(30, 1024), b = prompt_ids(45, 1024);
  // Alone in passes of 5 and 3 tokens; then both in the same passes of 5 + 3 rows. Every row
  // is computed independently of the others in a pass (the same kernels run: <= 16 rows).
  const std::vector<float> la = logits_of(*r, a, 5), lb = logits_of(*r, b, 3);
  const int sa = r->add_sequence().value(), sb = r->add_sequence().value();
  std::vector<float> ga, gb;
  size_t ia = 0, ib = 0;
  while (ia < a.size() || ib < b.size()) {
    std::vector<ModelRunner::Token> toks;
    std::vector<int> who;
    for (int k = 0; k < 5 && ia < a.size(); ++k, ++ia) {
      toks.push_back({sa, a[ia], true});
      who.push_back(0);
    }
    for (int k = 0; k < 3 && ib < b.size(); ++k, ++ib) {
      toks.push_back({sb, b[ib], true});
      who.push_back(1);
    }
    ASSERT_TRUE(r->decode(toks).ok());
    for (int k = 0; k < r->n_outputs(); ++k) {
      auto& dst = who[static_cast<size_t>(k)] == 0 ? ga : gb;
      dst.insert(dst.end(), r->logits(k).begin(), r->logits(k).end());
    }
  }
  EXPECT_LT(compare(ga, la).rel_l2, 1e-4);
  EXPECT_LT(compare(gb, lb).rel_l2, 1e-4);
}

void check_shakes_greedy_follows_the_cpu(GgmlType kv_type) {
  auto& B = Backends::get();
  const std::string path = shared_path("models/shakes-target.gguf");
  auto mc = Gemma4Model::load(path, *B.cpu);
  auto mg = Gemma4Model::load(path, *B.fast);
  ASSERT_TRUE(mc.ok() && mg.ok());
  auto rc = make_runner(*mc, 64, 4, kv_type, 1, 512);
  auto rg = make_runner(*mg, 64, 4, kv_type, 1, 512);
  const int32_t n_vocab = (*mg)->config().n_vocab;
  const std::vector<int32_t> prompt = prompt_ids(20, n_vocab);
  const int sc = rc->add_sequence().value(), sg = rg->add_sequence().value();
  std::vector<ModelRunner::Token> pc, pg;
  for (size_t i = 0; i < prompt.size(); ++i) {
    pc.push_back({sc, prompt[i], i + 1 == prompt.size()});
    pg.push_back({sg, prompt[i], i + 1 == prompt.size()});
  }
  ASSERT_TRUE(rc->decode(pc).ok());
  ASSERT_TRUE(rg->decode(pg).ok());
  // CUDA generates greedily; the CPU, fed the same tokens, must rank each CUDA choice within
  // 0.1 of its own best.
  for (int step = 0; step < 64; ++step) {
    const auto lg = rg->logits(0), lc = rc->logits(0);
    const int next = argmax(lg);
    const float best = *std::max_element(lc.begin(), lc.end());
    EXPECT_GE(lc[static_cast<size_t>(next)], best - 0.1f) << "step " << step;
    ModelRunner::Token tg{sg, next, true}, tc{sc, next, true};
    ASSERT_TRUE(rg->decode({&tg, 1}).ok());
    ASSERT_TRUE(rc->decode({&tc, 1}).ok());
  }
}

TEST(CudaModel, ShakesGreedyFollowsTheCpu) {
  GS_REQUIRE_BACKENDS();
  check_shakes_greedy_follows_the_cpu(GgmlType::F16);
}

// A q8_0 cache on both sides (decision 0035): the same quantized K and V rows.
TEST(CudaModel, ShakesGreedyFollowsTheCpuQ8_0Cache) {
  GS_REQUIRE_BACKENDS();
  check_shakes_greedy_follows_the_cpu(GgmlType::Q8_0);
}

}  // namespace
}  // namespace gs::test
