// Synthetic files load through the model code and run: finite logits through 60 layers of
// random quantized weights (the scales synth chooses keep activations finite).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/test_paths.h"
#include "model/gemma4_model.h"
#include "model/synth_writer.h"
#include "runtime/model_runner.h"

namespace gs::synth {
namespace {

// One scratch directory per test run, removed when the test binary exits.
const std::filesystem::path& scratch() {
  static const test::ScratchDir dir("synth-load");
  return dir.path;
}

std::string write(const SynthConfig& c, const std::string& tag) {
  const std::string path = (scratch() / (tag + ".gguf")).string();
  auto s = write_synth(c, path, 2);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return path;
}

// Runs a 12-token prompt and checks the last position's logits.
void run_prompt(const std::string& path, int64_t n_layer) {
  auto backend = create_cpu_backend(2);
  auto model = Gemma4Model::load(path, *backend);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().n_layer, n_layer);
  RunnerOptions o;
  o.max_tokens = 32;
  o.max_outputs = 4;
  o.kv.n_seq_max = 1;
  o.kv.n_ctx = 64;
  o.kv.type = GgmlType::F32;
  o.kv.page_size = 16;
  auto runner = ModelRunner::create(*model, o);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  auto seq = (*runner)->add_sequence();
  ASSERT_TRUE(seq.ok());
  std::vector<ModelRunner::Token> prompt;
  for (int i = 0; i < 12; ++i) prompt.push_back({*seq, i == 0 ? 2 : 500 + 7 * i, i == 11});
  ASSERT_TRUE((*runner)->decode(prompt).ok());
  const auto logits = (*runner)->logits(0);
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 1e-3f);  // not a constant row
  EXPECT_LE(hi, 30.0f);       // the final softcap
}

TEST(SynthLoad, TinyRuns) { run_prompt(write(preset_config(Preset::kTiny), "tiny"), 6); }

TEST(SynthLoad, SixtyLayersOfKQuantsStayFinite) {
  SynthConfig c = preset_config(Preset::k31b);  // 31B layer pattern and Q4_K_M mix, small widths
  c.n_embd = 256;
  c.n_ff = 512;
  c.n_head = 4;
  c.n_head_kv = 1;
  c.n_head_kv_swa = 2;
  c.head_dim = 64;
  c.head_dim_swa = 32;
  c.n_vocab = 768;
  c.sliding_window = 8;
  run_prompt(write(c, "sixty"), 60);
}

TEST(SynthLoad, AssistantLoads) {
  auto backend = create_cpu_backend(1);
  auto model = Gemma4Model::load(write(preset_config(Preset::kTinyAssistant), "assistant"), *backend);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().n_layer, 4);
}

}  // namespace
}  // namespace gs::synth
