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
  static Result<std::unique_ptr<Gemma4DrafterForward>> create(
      std::shared_ptr<const Gemma4Model> assistant, std::shared_ptr<const Gemma4Model> target, int max_rows,
      DraftSlidingWindow sliding = DraftSlidingWindow::kWindow);

  // The h input rows: fill rows [0, n) before run() (backend memory, [max_rows, n_embd_out]).
  Mat h_in() const { return h_in_; }
  // One draft step:
  //   e = target.token_embd[tok] * sqrt(target n_embd);  u = pre_projection · [e, h_in]
  //   u = the assistant's layers (Q-only attention over the target's cache) ; n = output_norm(u)
  //   logits = assistant.token_embd · n (no softcap);  h_next = post_projection · n
  // Errors (nothing runs): kInvalidArgument for more rows than planned, a token outside
  // the vocabulary, P <= 0 or past the context, or a bad row.
  Status run(const DraftBatch& batch, const KvCacheBinding& target_kv);

  Mat logits() const { return logits_.slice_rows(0, n_rows_); }  // [n, n_vocab]
  Mat h_next() const { return h_next_.slice_rows(0, n_rows_); }  // [n, n_embd_out]

  void set_dump(DumpFn fn) { dump_ = std::move(fn); }
  const Gemma4Config& config() const { return config_; }
  int max_rows() const { return max_rows_; }

 private:
  Gemma4DrafterForward() = default;
  void record(int n, const KvCacheBinding& kv);
  enum Input { kTokens, kPos, kSeq, kLoSwa, kHiSwa, kLoFull, kHiFull, kNumInputs };

  std::shared_ptr<const Gemma4Model> assistant_;
  std::shared_ptr<const Gemma4Model> target_;
  Gemma4Config config_;  // the assistant's, paired (kv_layer set)
  int max_rows_ = 0;
  int n_rows_ = 0;
  DraftSlidingWindow sliding_ = DraftSlidingWindow::kWindow;
  DeviceBuffer act_;
  DeviceBuffer inputs_;
  std::vector<int32_t> staging_;
  Mat h_in_, cat_, u_, logits_, h_next_;
  LayerScratch s_;
  const void* bound_kv_ = nullptr;
  DumpFn dump_;
};

}  // namespace gs
