// runner_setup_error (engine/runtime_slot_runner.h): a runner that could not be set up for lack
// of memory is explained by what did not fit (decision 0053). Every failure said "the KV cache
// of ... does not fit: ...; lower --ctx-size", also when the pass buffers of a large --ubatch or
// the logits of many slots' verify passes were what failed.
#include <gtest/gtest.h>

#include "engine/runtime_slot_runner.h"

namespace gs {
namespace {

const Status kWhy(StatusCode::kResourceExhausted, "cpu backend: cannot allocate 17180391040 bytes");

std::string message(RunnerPart part, int n_slots, int draft_max, int max_outputs, int max_batch_tokens = 512) {
  EngineOptions o;
  o.n_slots = n_slots;
  o.max_batch_tokens = max_batch_tokens;
  o.draft_max = draft_max;
  RunnerOptions ro;
  ro.max_outputs = max_outputs;
  const Status st = runner_setup_error(make_status(StatusCode::kResourceExhausted, "{}{}",
                                                   part == RunnerPart::kKvCache ? "" : std::string(runner_part_name(part)) + ": ",
                                                   kWhy.message()),
                                       part, o, 64, 1.5e9, ro);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  return st.message();
}

TEST(RunnerSetupError, SaysWhatDidNotFitAndWhatToLower) {
  EXPECT_EQ(message(RunnerPart::kKvCache, 1, 0, 1),
            "the KV cache of 1 slot x 64 positions (1.5 GB) does not fit: cpu backend: cannot allocate 17180391040 "
            "bytes; lower --ctx-size");
  EXPECT_EQ(message(RunnerPart::kKvCache, 4, 0, 4),
            "the KV cache of 4 slots x 64 positions each (1.5 GB) does not fit: cpu backend: cannot allocate "
            "17180391040 bytes; lower --ctx-size (positions per slot) or --parallel");
  // --ubatch is named only where it was raised (only run has the flag; serve's passes are 512 rows).
  EXPECT_EQ(message(RunnerPart::kPassBuffers, 1, 0, 1, 131072),
            "the forward pass buffers do not fit beside the KV cache of 1 slot x 64 positions (1.5 GB): cpu backend: "
            "cannot allocate 17180391040 bytes; lower --ubatch (rows per pass) or --ctx-size");
  EXPECT_EQ(message(RunnerPart::kPassBuffers, 1, 0, 1),
            "the forward pass buffers do not fit beside the KV cache of 1 slot x 64 positions (1.5 GB): cpu backend: "
            "cannot allocate 17180391040 bytes; lower --ctx-size");
  EXPECT_EQ(message(RunnerPart::kLogits, 4, 3, 16),
            "the logits (4 slots x 4 output rows a step) do not fit beside the KV cache of 4 slots x 64 positions each "
            "(1.5 GB): cpu backend: cannot allocate 17180391040 bytes; lower --parallel, --draft-max or --ctx-size");
  EXPECT_EQ(message(RunnerPart::kHidden, 1, 0, 1),
            "the hidden states (1 slot x 1 output rows a step) do not fit beside the KV cache of 1 slot x 64 positions "
            "(1.5 GB): cpu backend: cannot allocate 17180391040 bytes; lower --ctx-size");
  for (RunnerPart p : {RunnerPart::kPassBuffers, RunnerPart::kLogits, RunnerPart::kHidden}) {
    EXPECT_EQ(message(p, 2, 2, 6).find("the KV cache of 2 slots x 64 positions each (1.5 GB) does not fit"),
              std::string::npos)
        << runner_part_name(p);
  }
}

}  // namespace
}  // namespace gs
