// Gemma4Forward: the Gemma 4 target forward pass (spec §3), written once against backend.h.
// A batch holds tokens of one or more sequences at given positions; the pass writes their
// K/V into the cache, attends over each sequence's own cached positions, and gives logits
// and the final normed hidden state (the drafter's input) of the requested rows.
// Buffers are planned once at creation for the largest batch; a run allocates nothing.
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

struct ForwardBatch {
  std::span<const int32_t> tokens;     // [n] token ids
  std::span<const int32_t> positions;  // [n] absolute positions (RoPE, masks, cache slots)
  std::span<const int32_t> seq_rows;   // [n] page-table row of each token's sequence
  // Batch rows whose logits and final hidden state are wanted, in output order (repeats
  // allowed).
  std::span<const int32_t> output_rows;
};

class Gemma4Forward {
 public:
  // max_tokens: most rows in one run (the ubatch); max_outputs: most output rows per run.
  // Errors: kInvalidArgument for a non-target model or non-positive sizes,
  // kResourceExhausted when the backend cannot hold the buffers.
  static Result<std::unique_ptr<Gemma4Forward>> create(std::shared_ptr<const Gemma4Model> model, int max_tokens,
                                                       int max_outputs);

  // Runs the batch. Every (seq_row, position) must have a slot in `kv` (pages allocated),
  // and every earlier position of the sequence that the masks reach must already be cached
  // or be in this batch. Target masks (spec §3.3): sliding layers see [p - W + 1, p], full
  // layers [0, p]. Errors (nothing is run): kInvalidArgument for sizes beyond the plan, a
  // token id outside the vocabulary, a negative position or a bad row; kFailedPrecondition
  // for a position without a slot.
  Status run(const ForwardBatch& batch, const KvCacheBinding& kv);

  // Results of the last run, in backend memory (valid until the next run):
  Mat logits() const { return logits_.slice_rows(0, n_outputs_); }  // [n_outputs, n_vocab], softcapped
  Mat hidden() const { return hidden_out_.slice_rows(0, n_outputs_); }  // [n_outputs, n_embd]
  int n_outputs() const { return n_outputs_; }

  // Every named op result of later runs goes to `fn` (null: off). Slow; for tests/debugging.
  void set_dump(DumpFn fn) { dump_ = std::move(fn); }

  const Gemma4Model& model() const { return *model_; }
  int max_tokens() const { return max_tokens_; }
  int max_outputs() const { return max_outputs_; }

 private:
  Gemma4Forward() = default;
  // Records the step's ops for n tokens and n_out output rows; one_seq: all tokens are of one
  // sequence (AttentionInputs::n_seqs).
  void record(int n, int n_out, bool one_seq, const KvCacheBinding& kv);

  // Sections of the int32 input buffer, each max(max_tokens, max_outputs) long.
  enum Input { kTokens, kPos, kSeq, kSlotSwa, kSlotFull, kLoSwa, kHiSwa, kLoFull, kHiFull, kOutRows, kNumInputs };

  std::shared_ptr<const Gemma4Model> model_;
  int max_tokens_ = 0;
  int max_outputs_ = 0;
  int n_outputs_ = 0;
  DeviceBuffer act_;     // every activation buffer
  DeviceBuffer inputs_;  // per-step int32 inputs
  std::vector<int32_t> staging_;
  Mat x_;
  LayerScratch s_;
  Mat hidden_out_;
  Mat logits_;
  const void* bound_kv_ = nullptr;  // identity of the cache the captured steps use
  DumpFn dump_;
};

}  // namespace gs
