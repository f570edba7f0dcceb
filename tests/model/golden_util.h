// Test helpers: the tiny1234 goldens (shared/golden) and a CPU-backed target/runner.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_model.h"
#include "runtime/model_runner.h"

namespace gs::test {

struct Goldens {
  std::shared_ptr<gguf::GgufFile> file;
  std::vector<int32_t> seq;     // 40 ids
  std::vector<int32_t> greedy;  // 12 prompt ids + 24 greedy ids
  std::vector<int32_t> draft_tokens, draft_positions, draft_calls;

  const float* tensor(const std::string& name) const {
    const gguf::TensorInfo* t = file->find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? reinterpret_cast<const float*>(t->data) : nullptr;
  }
  // logits[pos][v]
  const float* logits(int pos) const { return tensor("logits") + static_cast<size_t>(pos) * 1024; }
  // hidden index i (0 = scaled embedding, 1..11 layer outputs, 12 final normed), position pos
  const float* hidden(int i, int pos) const { return tensor("hidden") + (static_cast<size_t>(i) * 40 + pos) * 128; }
};

inline std::vector<int32_t> to_i32(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

inline Goldens load_goldens() {
  Goldens g;
  auto f = gguf::GgufFile::open(shared_path("golden/tiny1234-goldens.gguf"));
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  g.file = *f;
  g.seq = to_i32(g.file->get_int_array("goldens.seq").value());
  g.greedy = to_i32(g.file->get_int_array("goldens.greedy").value());
  g.draft_tokens = to_i32(g.file->get_int_array("goldens.draft_tokens").value());
  g.draft_positions = to_i32(g.file->get_int_array("goldens.draft_positions").value());
  g.draft_calls = to_i32(g.file->get_int_array("goldens.draft_calls").value());
  return g;
}

inline std::shared_ptr<Gemma4Model> load_model(Backend& backend, const std::string& rel) {
  auto m = Gemma4Model::load(shared_path(rel), backend);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? *m : nullptr;
}

inline std::unique_ptr<ModelRunner> make_runner(std::shared_ptr<const Gemma4Model> model, int max_tokens, int max_outputs,
                                                GgmlType kv_type = GgmlType::F32, int n_seq = 1, int n_ctx = 512,
                                                int page_size = 16) {
  RunnerOptions o;
  o.max_tokens = max_tokens;
  o.max_outputs = max_outputs;
  o.kv.n_seq_max = n_seq;
  o.kv.n_ctx = n_ctx;
  o.kv.type = kv_type;
  o.kv.page_size = page_size;
  auto r = ModelRunner::create(std::move(model), o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

inline int argmax(std::span<const float> v) {
  int best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = static_cast<int>(i);
  return best;
}

// Greedy continuation on a new sequence of `r`: prefills `prompt` (logits of its last token
// only), then n times appends the argmax and decodes it. A failed decode fails the test and
// ends the continuation early.
inline std::vector<int32_t> greedy_tokens(ModelRunner& r, std::span<const int32_t> prompt, int n) {
  std::vector<int32_t> out;
  const int seq = r.add_sequence().value();
  std::vector<ModelRunner::Token> tokens;
  for (size_t i = 0; i < prompt.size(); ++i) tokens.push_back({seq, prompt[i], i + 1 == prompt.size()});
  Status st = r.decode(tokens);
  for (int step = 0; step < n && st.ok(); ++step) {
    const int32_t next = argmax(r.logits(0));
    out.push_back(next);
    const ModelRunner::Token t{seq, next, true};
    st = r.decode({&t, 1});
  }
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

}  // namespace gs::test
