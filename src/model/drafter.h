// Gemma4DrafterForward: one step of the Gemma 4 MTP assistant (spec §4.2) for a batch of
// sequences, one row each. The assistant has no KV cache of its own: each of its layers
// attends over the target's cache of the last target layer of the same kind (spec §4.3),
// seeing target positions [P - W, P - 1] on sliding layers and [0, P - 1] on full layers
// (Decision 2; DraftSlidingWindow selects transformers' W + 1 instead), with every step of
// a round at the same query position P.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "model/dump.h"
#include "model/forward_blocks.h"
#include "model/gemma4_model.h"
#include "model/kv_binding.h"

namespace gs {

// How many target positions before P a sliding drafter layer sees.
enum class DraftSlidingWindow {
  kWindow,         // P - W .. P - 1: W positions (spec Decision 2; how the shakes drafter was trained)
  kWindowPlusOne,  // P - W - 1 .. P - 1: W + 1 positions (transformers 5.17: its bidirectional
                   // sliding mask is inclusive, |q - kv| <= W; the tiny1234 goldens use it)
};

struct DraftBatch {
  std::span<const int32_t> tokens;     // [n] the token each row feeds (newest token or last draft)
  std::span<const int32_t> positions;  // [n] the round's query position P (= the sequence's cache length)
  std::span<const int32_t> seq_rows;   // [n] the sequence's row in the target's page tables
};

class Gemma4DrafterForward {
 public:
  // Pairs `assistant` with `target` (pair_assistant_with_target) and plans buffers for up
  // to max_rows rows. Errors: kInvalidArgument for a mismatched pair (bug-case 35: a clear
  // error, never a crash), kResourceExhausted for the buffers.
  // max_steps bounds run_chain's steps.
  static Result<std::unique_ptr<Gemma4DrafterForward>> create(
      std::shared_ptr<const Gemma4Model> assistant, std::shared_ptr<const Gemma4Model> target, int max_rows,
      DraftSlidingWindow sliding = DraftSlidingWindow::kWindow, int max_steps = 16);

  // The h input rows: fill rows [0, n) before run() (backend memory, [max_rows, n_embd_out]).
  Mat h_in() const { return h_in_; }
  // One draft step:
  //   e = target.token_embd[tok] * sqrt(target n_embd);  u = pre_projection · [e, h_in]
  //   u = the assistant's layers (Q-only attention over the target's cache) ; n = output_norm(u)
  //   logits = assistant.token_embd · n (no softcap);  h_next = post_projection · n
  // Errors (nothing runs): kInvalidArgument for more rows than planned, a token outside
  // the vocabulary, P <= 0 or past the context, or a bad row.
  Status run(const DraftBatch& batch, const KvCacheBinding& target_kv);

  // `steps` draft steps in a row without the host (1 <= steps <= max_steps()): step 0 as
  // run(); each later step feeds every row its own previous draft and h_next. The drafts
  // stay on the device: step i's greedy pick of row j (Backend::argmax_rows of its logits)
  // is draft_ids()[i * max_rows() + j], its softmax probability draft_p()[same]. A row's
  // drafts are those of `steps` run() calls that feed it its drafts one by one (the rows of
  // a batch are computed independently), so a caller may stop reading a row's drafts at
  // any step. Errors: those of run(), kInvalidArgument for a bad step count.
  Status run_chain(const DraftBatch& batch, const KvCacheBinding& target_kv, int steps);
  const int32_t* draft_ids() const { return drafts_.as<int32_t>(); }  // backend [max_steps, max_rows]
  const float* draft_p() const { return draft_p_; }                    // backend [max_steps, max_rows]
  int max_steps() const { return max_steps_; }

  Mat logits() const { return logits_.slice_rows(0, n_rows_); }  // [n, n_vocab]
  Mat h_next() const { return h_next_.slice_rows(0, n_rows_); }  // [n, n_embd_out]

  void set_dump(DumpFn fn) { dump_ = std::move(fn); }
  const Gemma4Config& config() const { return config_; }
  int max_rows() const { return max_rows_; }

 private:
  Gemma4DrafterForward() = default;
  // The validated inputs of `batch` uploaded for the step(s) that follow; sets n_rows_.
  Status upload_batch(const DraftBatch& batch, const KvCacheBinding& kv);
  // One step's ops for rows [0, n), the embedding of `tokens` (backend int32 [n]).
  void record(int n, const KvCacheBinding& kv, const int32_t* tokens);
  enum Input { kTokens, kPos, kSeq, kLoSwa, kHiSwa, kLoFull, kHiFull, kNumInputs };
  // Section i of the uploaded step inputs, and run_chain's picks of step `step` (backend [max_rows]).
  int32_t* input(Input i) const { return inputs_.as<int32_t>() + static_cast<int64_t>(i) * max_rows_; }
  int32_t* picks(int step) const { return drafts_.as<int32_t>() + static_cast<int64_t>(step) * max_rows_; }

  std::shared_ptr<const Gemma4Model> assistant_;
  std::shared_ptr<const Gemma4Model> target_;
  Gemma4Config config_;  // the assistant's, paired (kv_layer set)
  int max_rows_ = 0;
  int max_steps_ = 0;
  int n_rows_ = 0;
  DraftSlidingWindow sliding_ = DraftSlidingWindow::kWindow;
  DeviceBuffer act_;
  DeviceBuffer inputs_;
  DeviceBuffer drafts_;  // run_chain's picks: int32 [max_steps, max_rows], then float p [max_steps, max_rows]
  float* draft_p_ = nullptr;
  std::vector<int32_t> staging_;
  Mat h_in_, cat_, u_, logits_, h_next_;
  LayerScratch s_;
  const void* bound_kv_ = nullptr;
  DumpFn dump_;
};

}  // namespace gs
