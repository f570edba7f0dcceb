// The model side of the scheduler: one batched step over the sequences held in slots.
// The scheduler thread is the only caller. An implementation owns the model, the KV cache,
// the per-sequence sampler state and (optionally) the MTP drafter; the scheduler owns
// requests, admission, batching, stopping and streaming. A fake implementation drives the
// scheduler in tests; the real one adapts the runtime (any Backend, CPU or CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace gs {

struct RunnerInfo {
  std::string model_name;
  std::string backend;
  int32_t n_slots = 1;            // sequences held at once
  int32_t n_ctx = 0;              // positions per sequence (prompt + completion)
  int32_t n_vocab = 0;
  int32_t max_batch_tokens = 512; // most token rows one step may carry (prefill + decode/verify)
  bool has_drafter = false;
  int32_t draft_max = 0;          // default drafts per round when the drafter is loaded
  std::vector<int32_t> eog_tokens;
  int64_t kv_cells_total = 0;     // KV positions the cache can hold over all slots
  uint64_t weight_bytes = 0;      // model (+ drafter) weights in backend memory
  uint64_t kv_bytes = 0;          // KV cache in backend memory
};

// How one sequence is generated, fixed when it starts.
struct SequenceSetup {
  SamplingParams sampling;
  int32_t n_logprobs = -1;  // -1: none; otherwise the chosen token's logprob plus n top
  bool speculative = true;  // draft with the MTP drafter when one is loaded
  int32_t draft_max = 0;    // drafts per round (0: no drafting)
  bool reuse_prefix = true;  // GenerationRequest::reuse_prefix: keep the slot's matching prefix
  // GenerationRequest::allowed_completions: the runner masks sampling (and drafts nothing)
  // until the generated text starts with one of them.
  std::vector<std::string> allowed_completions;
  // GenerationRequest::call_arguments / call_end_tokens: after one of those openers, its
  // arguments are masked by its grammar (drafting on) until a whole value and an end token.
  std::vector<CallArguments> call_arguments;
  std::vector<int32_t> call_end_tokens;
  // GenerationRequest::json: structured output (decision 0027).
  JsonOutput json;
  // GenerationRequest::forced_calls: after a forced call, only an end or another call.
  ForcedCalls forced_calls;
  // GenerationRequest::lazy_calls: free text until the call opener, then calls only.
  ForcedCalls lazy_calls;
  // GenerationRequest::starts_in_thought: the constraint's thought span is open at the start.
  bool starts_in_thought = false;
};

// A prompt chunk that continues slot `slot`'s cache at its next position. When `last` is
// set, the runner samples the first generated token from the chunk's final row; that token
// becomes the slot's pending token (not yet in the cache).
struct PrefillWork {
  int32_t slot = 0;
  std::vector<int32_t> tokens;
  bool last = false;
};

// Feeds slot `slot`'s pending token and generates 1..max_tokens tokens (more than one only
// when drafting: verified drafts plus the correction or bonus token). The last generated
// token becomes the new pending token. max_tokens >= 1; the runner never writes a position
// at or beyond n_ctx.
struct DecodeWork {
  int32_t slot = 0;
  int32_t max_tokens = 1;
};

struct StepBatch {
  std::vector<PrefillWork> prefill;
  std::vector<DecodeWork> decode;
  bool empty() const { return prefill.empty() && decode.empty(); }
};

// What one step gave a slot: tokens (empty for a prefill chunk that was not the last).
struct SlotOutput {
  int32_t slot = 0;
  std::vector<GeneratedToken> tokens;
  int32_t n_drafted = 0;   // drafts proposed this round (positions 1..n_drafted)
  int32_t n_accepted = 0;  // leading drafts accepted
  // Not ok: this slot's sequence cannot go on (its request's logit_bias bans every token its
  // output constraint or min_tokens lets it sample: kInvalidArgument); tokens is empty and the
  // scheduler fails this sequence alone. A prefill chunk was still appended.
  Status error;
};

class SlotRunner {
 public:
  virtual ~SlotRunner() = default;
  virtual RunnerInfo info() const = 0;
  // Starts a new sequence with `prompt` in a free slot. The slot may still hold the cache of
  // its previous sequence: unless setup.reuse_prefix is false, the runner keeps as much of it
  // as equals the start of `prompt` (at most prompt.size() - 1 tokens, so that the last prompt
  // token is run) and returns how many tokens it kept; the scheduler prefills the rest. Errors: kInvalidArgument (bad
  // setup), kResourceExhausted, kInternal.
  virtual Result<int32_t> start(int32_t slot, const SequenceSetup& setup, std::span<const int32_t> prompt) = 0;
  // How many leading tokens of `prompt` start() in this free slot would keep (0 when none).
  virtual int32_t reusable_prefix(int32_t slot, std::span<const int32_t> prompt) const = 0;
  // Runs one step; one output per slot named in the batch, in any order. An error fails
  // every sequence of the batch (the scheduler releases their slots).
  virtual Result<std::vector<SlotOutput>> step(const StepBatch& batch) = 0;
  // Replaces generated tokens: the newest `n_drop` (>= 1) tokens the slot generated are
  // discarded (the newest was the pending token; the others leave the cache) and `token`
  // becomes the pending token, as if it had been sampled. Used to force a token (the end
  // of a thought when a reasoning budget is spent). Errors: kInvalidArgument (nothing to
  // drop), those of the cache's rollback.
  virtual Status replace_generated(int32_t slot, int32_t n_drop, int32_t token) = 0;
  // Ends the slot's sequence; the slot may be started again. The runner may keep the cache
  // for a later start() with a matching prompt.
  virtual void release(int32_t slot) = 0;
  // KV positions in use over all slots.
  virtual int64_t kv_cells_used() const = 0;

  // Slot actions on a free slot (Engine::slot_action; decision 0068), whose errors they give.
  // save_slot writes the slot's kept tokens and their KV cache to `path` (a temporary file
  // renamed at the end: never a half-written file under that name). restore_slot checks the
  // whole file first (its header against this model and cache, its size, its checksum) and
  // only then replaces the slot's cache with the file's, which a later start() reuses as a
  // prefix like one it computed. erase_slot drops the slot's cache and gives the tokens it
  // held. A runner without slot files answers kUnimplemented.
  virtual Result<SlotActionResult> save_slot(int32_t slot, const std::string& path) {
    (void)slot, (void)path;
    return Status(StatusCode::kUnimplemented, "this runner does not save slots");
  }
  virtual Result<SlotActionResult> restore_slot(int32_t slot, const std::string& path) {
    (void)slot, (void)path;
    return Status(StatusCode::kUnimplemented, "this runner does not restore slots");
  }
  virtual Result<int32_t> erase_slot(int32_t slot) {
    (void)slot;
    return Status(StatusCode::kUnimplemented, "this runner does not erase slots");
  }
};

}  // namespace gs
