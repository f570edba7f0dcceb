// The real runner's pass size: a pass never carries more rows than the slots' contexts hold,
// whatever --ubatch asks (decision 0052). `run --ubatch 1048576 -c 64` sized its pass buffers
// for a million rows: gigabytes of address space for a 64-position context, and where they
// did not fit, an error that told the user to lower --ctx-size.
#include <gtest/gtest.h>

#include <memory>

#include "common/test_paths.h"
#include "engine/engine_factory.h"
#include "engine/runtime_slot_runner.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs {
namespace {

RunnerInfo runner_info(int32_t n_ctx, int32_t n_slots, int32_t max_batch_tokens, int32_t draft_max = 0) {
  EngineOptions o;
  o.model_path = test::shared_path("models/shakes-target.gguf");
  if (draft_max > 0) o.drafter_path = test::shared_path("models/shakes-assistant.gguf");
  o.draft_max = draft_max;
  o.device = DeviceChoice::kCpu;
  o.n_threads = 1;
  o.n_slots = n_slots;
  o.n_ctx = n_ctx;
  o.max_batch_tokens = max_batch_tokens;
  auto file = gguf::GgufFile::open_model(o.model_path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return {};
  auto tok = text::Tokenizer::from_gguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (!tok.ok()) return {};
  auto runner = create_runtime_slot_runner(o, *file, **tok);
  EXPECT_TRUE(runner.ok()) << runner.status().to_string();
  if (!runner.ok()) return {};
  return (*runner)->info();
}

TEST(PassRows, AHugeUbatchIsCutToTheContext) {
  EXPECT_EQ(runner_info(64, 1, 1 << 20).max_batch_tokens, 64);
}

TEST(PassRows, EverySlotsContextCounts) {
  EXPECT_EQ(runner_info(64, 3, 1 << 20).max_batch_tokens, 3 * 64);
}

TEST(PassRows, AUbatchWithinTheContextIsKept) {
  EXPECT_EQ(runner_info(64, 2, 100).max_batch_tokens, 100);
  EXPECT_EQ(runner_info(64, 1, 1).max_batch_tokens, 1);
}

// A context shorter than a verify pass still takes the drafter: the pass holds every slot's
// verify rows (1 + draft_max each) however short the context.
TEST(PassRows, AVerifyPassFitsWhateverTheContext) {
  const RunnerInfo info = runner_info(8, 2, 1 << 20, 16);
  EXPECT_TRUE(info.has_drafter);
  EXPECT_EQ(info.max_batch_tokens, 2 * 17);
}

}  // namespace
}  // namespace gs
