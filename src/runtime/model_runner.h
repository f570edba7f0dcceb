// ModelRunner: a target model, its forward pass and its KV cache behind one step call.
// Tokens of many sequences are appended to their sequences in order, split into forward
// passes of at most max_tokens rows (and at most the cache's max_ubatch per sequence);
// logits (host) and final normed hidden states (backend) come back for the rows asked for.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"
#include "model/forward.h"
#include "model/gemma4_model.h"
#include "runtime/kv_cache.h"

namespace gs {

struct RunnerOptions {
  int max_tokens = 512;   // rows per forward pass (the ubatch)
  int max_outputs = 64;   // output rows per decode() call
  KvCacheOptions kv;      // kv.max_ubatch is capped at max_tokens
};

// What ModelRunner::create was setting up when it failed, so that the caller's advice fits
// (decision 0053: every failure was reported as the KV cache's).
enum class RunnerPart {
  kNone,
  kKvCache,      // KvCache::create: the pools and page tables
  kPassBuffers,  // Gemma4Forward::create: activations of max_tokens rows
  kLogits,       // the host logits of max_outputs rows x n_vocab
  kHidden,       // the hidden states of max_outputs rows x n_embd (backend memory)
};
const char* runner_part_name(RunnerPart part);  // "the KV cache", "the forward pass buffers", ...

class ModelRunner {
 public:
  struct Token {
    int seq = 0;        // a sequence from add_sequence()
    int32_t id = 0;     // token id
    bool output = false;  // wants logits and hidden state
  };

  // Errors: those of KvCache::create, Gemma4Forward::create and the logits' and hidden
  // states' allocations (kResourceExhausted where memory runs out), each message prefixed with
  // what was being set up ("the logits of 64 rows x 262144 (67.1 MB): cpu backend: ...",
  // the KV cache's left as KvCache gives it); `failed` (when given) gets which part it was, and
  // kNone on success or for an invalid option.
  static Result<std::unique_ptr<ModelRunner>> create(std::shared_ptr<const Gemma4Model> target,
                                                     const RunnerOptions& options, RunnerPart* failed = nullptr);

  Result<int> add_sequence() { return kv_->add_sequence(); }
  Status remove_sequence(int seq) { return kv_->remove_sequence(seq); }
  int32_t length(int seq) const { return kv_->length(seq); }
  Status truncate(int seq, int32_t n_keep) { return kv_->truncate(seq, n_keep); }

  // Appends `tokens` to their sequences (in order) and runs them. Errors (the sequences keep
  // their previous lengths): kInvalidArgument for an unknown sequence, a token id outside
  // the vocabulary or more than max_outputs outputs; kOutOfRange past a sequence's context;
  // kResourceExhausted when the page pool is empty.
  Status decode(std::span<const Token> tokens);

  // Outputs of the last decode(), in the order of the tokens that asked for them.
  int n_outputs() const { return n_outputs_; }
  std::span<const float> logits(int i) const;  // host [n_vocab]
  Mat hidden(int i) const { return hidden_.slice_rows(i, 1); }  // backend [1, n_embd]
  Mat hidden_rows() const { return hidden_.slice_rows(0, n_outputs_); }

  const Gemma4Model& model() const { return *model_; }
  const Gemma4Config& config() const { return model_->config(); }
  Backend& backend() const { return model_->backend(); }
  KvCache& kv() { return *kv_; }
  Gemma4Forward& forward() { return *forward_; }
  int max_outputs() const { return max_outputs_; }

 private:
  ModelRunner() = default;
  Status run_pass(std::span<const Token> pass);

  std::shared_ptr<const Gemma4Model> model_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<Gemma4Forward> forward_;
  int max_tokens_ = 0;
  int max_outputs_ = 0;
  int n_outputs_ = 0;
  HostBuffer logits_buf_;      // [max_outputs, n_vocab] floats (page-locked on a GPU)
  float* logits_ = nullptr;
  DeviceBuffer hidden_buf_;
  Mat hidden_;                 // [max_outputs, n_embd]
  // Per-pass staging (sized once).
  std::vector<int32_t> tokens_, positions_, rows_, out_rows_;
  std::vector<int32_t> pass_count_;  // per sequence: rows in the pass being built
  std::vector<int32_t> pass_next_;   // per sequence: next position while filling a pass
};

}  // namespace gs
