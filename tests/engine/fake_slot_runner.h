// A deterministic SlotRunner for scheduler and server tests: the next token is a function
// of the sequence so far, speculation is simulated (same tokens, counted drafts), and every
// step is recorded so tests can check batching.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/slot_runner.h"

namespace gs::test {

class FakeSlotRunner : public SlotRunner {
 public:
  // The next token given everything in the sequence so far and the prompt's length.
  using NextToken = std::function<int32_t(const std::vector<int32_t>& history, size_t n_prompt)>;

  struct Options {
    int32_t n_slots = 4;
    int32_t n_ctx = 256;
    int32_t n_vocab = 100;
    int32_t max_batch_tokens = 64;
    bool has_drafter = false;
    int32_t draft_max = 0;
    int32_t accept_per_round = 2;      // drafts accepted per round (capped by the drafts)
    std::vector<int32_t> eog = {1};
    std::chrono::milliseconds step_delay{0};
    std::chrono::microseconds prefill_row_delay{0};  // more per prefill row (long chunk steps)
    NextToken next;                     // default: a hash of the last tokens, never EOG
    bool reuse_prefix = false;          // keep a released slot's tokens for the next start
    // Called at the start of every step with its index (0-based), outside the runner's lock.
    std::function<void(int64_t)> on_step;
  };

  struct Recorded {
    int64_t prefill_rows = 0;
    int64_t decode_seqs = 0;
    int64_t max_decode_tokens = 0;
    std::vector<int32_t> slots;
    std::vector<int32_t> decode_slots;
    double seconds = 0;  // the step's own duration, delays included
  };

  explicit FakeSlotRunner(Options options) : o_(std::move(options)) {
    if (!o_.next) o_.next = default_next;
  }

  // 10 + a hash of the last three tokens and the length: deterministic, never 0..9.
  static int32_t default_next(const std::vector<int32_t>& h, size_t) {
    uint32_t x = static_cast<uint32_t>(h.size()) * 2654435761u;
    for (size_t i = h.size() >= 3 ? h.size() - 3 : 0; i < h.size(); ++i) x = (x ^ static_cast<uint32_t>(h[i])) * 16777619u;
    return 10 + static_cast<int32_t>(x % 80u);
  }

  RunnerInfo info() const override {
    RunnerInfo info;
    info.model_name = "fake";
    info.backend = "fake";
    info.n_slots = o_.n_slots;
    info.n_ctx = o_.n_ctx;
    info.n_vocab = o_.n_vocab;
    info.max_batch_tokens = o_.max_batch_tokens;
    info.has_drafter = o_.has_drafter;
    info.draft_max = o_.draft_max;
    info.eog_tokens = o_.eog;
    info.kv_cells_total = static_cast<int64_t>(o_.n_slots) * o_.n_ctx;
    return info;
  }

  Result<int32_t> start(int32_t slot, const SequenceSetup& setup, std::span<const int32_t> prompt) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_start_) return Status(StatusCode::kInternal, "fake start failure");
    Seq& s = seqs_[slot];
    if (s.in_use) return Status(StatusCode::kInternal, "slot already in use");
    const int32_t keep = o_.reuse_prefix && setup.reuse_prefix ? common_prefix(s.history, prompt) : 0;
    std::vector<int32_t> kept(s.history.begin(), s.history.begin() + keep);
    s = Seq{};
    s.in_use = true;
    s.setup = setup;
    s.history = std::move(kept);
    return keep;
  }

  int32_t reusable_prefix(int32_t slot, std::span<const int32_t> prompt) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seqs_.find(slot);
    if (!o_.reuse_prefix || it == seqs_.end()) return 0;
    return common_prefix(it->second.history, prompt);
  }

  Result<std::vector<SlotOutput>> step(const StepBatch& batch) override {
    const auto t0 = std::chrono::steady_clock::now();
    if (o_.on_step) o_.on_step(n_steps());
    int64_t rows = 0;
    for (const auto& p : batch.prefill) rows += static_cast<int64_t>(p.tokens.size());
    const auto delay = std::chrono::duration_cast<std::chrono::microseconds>(o_.step_delay) + o_.prefill_row_delay * rows;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    std::lock_guard<std::mutex> lock(mu_);
    n_steps_++;
    if (fail_steps_ > 0) {
      fail_steps_--;
      return Status(StatusCode::kInternal, "fake step failure");
    }
    Recorded rec;
    std::vector<SlotOutput> outs;
    for (const auto& p : batch.prefill) {
      Seq& s = seqs_.at(p.slot);
      rec.prefill_rows += static_cast<int64_t>(p.tokens.size());
      rec.slots.push_back(p.slot);
      s.history.insert(s.history.end(), p.tokens.begin(), p.tokens.end());
      SlotOutput out;
      out.slot = p.slot;
      if (p.last) {
        s.n_prompt = s.history.size();
        s.pending = o_.next(s.history, s.n_prompt);
        out.tokens.push_back(make_token(s, s.pending));
      }
      outs.push_back(std::move(out));
    }
    for (const auto& d : batch.decode) {
      Seq& s = seqs_.at(d.slot);
      rec.decode_seqs++;
      rec.max_decode_tokens = std::max<int64_t>(rec.max_decode_tokens, d.max_tokens);
      rec.slots.push_back(d.slot);
      rec.decode_slots.push_back(d.slot);
      SlotOutput out;
      out.slot = d.slot;
      if (!s.history.empty() && s.history[0] == fail_head_ && s.history.size() >= s.n_prompt + fail_after_) {
        out.error = fail_status_;  // this sequence alone cannot go on (SlotOutput::error)
        outs.push_back(std::move(out));
        continue;
      }
      int32_t n_out = 1;
      if (s.setup.speculative && s.setup.draft_max > 0 && d.max_tokens > 1) {
        out.n_drafted = std::min(s.setup.draft_max, d.max_tokens - 1);
        out.n_accepted = std::min(o_.accept_per_round, out.n_drafted);
        n_out = out.n_accepted + 1;
      }
      for (int32_t i = 0; i < n_out; ++i) {
        s.history.push_back(s.pending);
        s.pending = o_.next(s.history, s.n_prompt);
        out.tokens.push_back(make_token(s, s.pending));
      }
      outs.push_back(std::move(out));
    }
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    steps_.push_back(rec);
    return outs;
  }

  Status replace_generated(int32_t slot, int32_t n_drop, int32_t token) override {
    std::lock_guard<std::mutex> lock(mu_);
    Seq& s = seqs_.at(slot);
    if (n_drop < 1 || static_cast<size_t>(n_drop - 1) > s.history.size() - s.n_prompt) {
      return Status(StatusCode::kInvalidArgument, "nothing to drop");
    }
    s.history.resize(s.history.size() - static_cast<size_t>(n_drop - 1));
    s.pending = token;
    n_replaced_++;
    return {};
  }

  void release(int32_t slot) override {
    std::lock_guard<std::mutex> lock(mu_);
    seqs_[slot].in_use = false;
    if (!o_.reuse_prefix) seqs_[slot].history.clear();
    n_released_++;
  }

  // Drops a free slot's kept tokens (Engine::slot_action's erase); save and restore are left
  // unimplemented.
  Result<int32_t> erase_slot(int32_t slot) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seqs_.find(slot);
    if (it == seqs_.end()) return 0;
    if (it->second.in_use) return Status(StatusCode::kFailedPrecondition, "slot in use");
    const auto n = static_cast<int32_t>(it->second.history.size());
    it->second.history.clear();
    return n;
  }

  int64_t kv_cells_used() const override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t n = 0;
    for (const auto& [slot, s] : seqs_) n += static_cast<int64_t>(s.history.size());
    return n;
  }

  std::vector<Recorded> steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  int64_t n_steps() const {
    std::lock_guard<std::mutex> lock(mu_);
    return n_steps_;
  }
  int64_t n_replaced() const {
    std::lock_guard<std::mutex> lock(mu_);
    return n_replaced_;
  }
  int64_t n_released() const {
    std::lock_guard<std::mutex> lock(mu_);
    return n_released_;
  }
  int32_t slots_in_use() const {
    std::lock_guard<std::mutex> lock(mu_);
    int32_t n = 0;
    for (const auto& [slot, s] : seqs_) n += s.in_use ? 1 : 0;
    return n;
  }
  void fail_next_steps(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_steps_ = n;
  }
  // Decodes of a sequence whose prompt starts with `head` give `error` as the slot's output
  // (SlotOutput::error) once its cache holds `after` generated tokens (it emitted one more, the
  // pending one); the other slots go on.
  void fail_decodes_of(int32_t head, size_t after, Status error) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_head_ = head;
    fail_after_ = after;
    fail_status_ = std::move(error);
  }

  // The tokens a sequence with this prompt would produce (greedy, alone), up to n or EOG.
  std::vector<int32_t> expected(std::vector<int32_t> history, int n) const {
    std::vector<int32_t> out;
    const size_t n_prompt = history.size();
    for (int i = 0; i < n; ++i) {
      int32_t t = o_.next(history, n_prompt);
      if (std::find(o_.eog.begin(), o_.eog.end(), t) != o_.eog.end()) break;
      out.push_back(t);
      history.push_back(t);
    }
    return out;
  }

 private:
  struct Seq {
    bool in_use = false;
    SequenceSetup setup;
    std::vector<int32_t> history;  // tokens in the "cache"
    size_t n_prompt = 0;
    int32_t pending = -1;
  };

  // Tokens of `cached` equal to the start of `prompt`, at most prompt.size() - 1.
  static int32_t common_prefix(const std::vector<int32_t>& cached, std::span<const int32_t> prompt) {
    size_t n = 0;
    while (n < cached.size() && n + 1 < prompt.size() && cached[n] == prompt[n]) ++n;
    return static_cast<int32_t>(n);
  }

  GeneratedToken make_token(const Seq& s, int32_t id) const {
    GeneratedToken t;
    t.id = id;
    t.logprob = -0.25f;
    for (int32_t i = 0; i < std::max(s.setup.n_logprobs, 0); ++i) {
      t.top.push_back({id + i, -0.25f - static_cast<float>(i)});
    }
    return t;
  }

  Options o_;
  mutable std::mutex mu_;
  std::map<int32_t, Seq> seqs_;
  std::vector<Recorded> steps_;
  int64_t n_steps_ = 0;
  int64_t n_released_ = 0;
  int64_t n_replaced_ = 0;
  int fail_steps_ = 0;
  int32_t fail_head_ = -1;
  size_t fail_after_ = 0;
  Status fail_status_;
  bool fail_start_ = false;
};

}  // namespace gs::test
