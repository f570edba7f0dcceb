// The SlotRunner over the model runtime: a ModelRunner (forward + KV cache) and the
// SpeculativeDecoder (plain or MTP-drafted decoding) on a Backend, one sampler chain per
// slot, logprobs from the verifier's logits.
#include "engine/runtime_slot_runner.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "backend/registry/registry.h"
#include "core/log.h"
#include "engine/call_choice_constraint.h"
#include "engine/completion_constraint.h"
#include "engine/drafter_check.h"
#include "engine/forced_calls_constraint.h"
#include "engine/held_calls.h"
#include "engine/json_constraint.h"
#include "engine/lazy_calls_constraint.h"
#include "engine/slot_file.h"
#include "engine/value_or_calls_constraint.h"
#include "gguf/gguf_summary.h"
#include "model/dump.h"
#include "model/gemma4_model.h"
#include "model/gguf_names.h"
#include "runtime/model_runner.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"

namespace gs {

namespace {

constexpr int32_t kDefaultMaxContext = 8192;

// log-softmax of `logits` for the chosen token and the n most likely (raw model logits:
// OpenAI reports the model's distribution, not the sampler's truncated one).
GeneratedToken with_logprobs(int32_t id, std::span<const float> logits, int32_t n_top) {
  GeneratedToken t;
  t.id = id;
  float max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  const float log_z = max_logit + static_cast<float>(std::log(sum));
  t.logprob = logits[static_cast<size_t>(id)] - log_z;
  if (n_top > 0) {
    std::vector<int32_t> idx(logits.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t n = std::min<size_t>(static_cast<size_t>(n_top), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(n), idx.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (size_t i = 0; i < n; ++i) t.top.push_back({idx[i], logits[static_cast<size_t>(idx[i])] - log_z});
  }
  return t;
}

class RuntimeSlotRunner final : public SlotRunner {
 public:
  RuntimeSlotRunner(std::unique_ptr<Backend> backend, std::shared_ptr<const Gemma4Model> model,
                    std::shared_ptr<const Gemma4Model> assistant, std::unique_ptr<ModelRunner> runner,
                    std::unique_ptr<SpeculativeDecoder> spec, RunnerInfo info,
                    std::shared_ptr<const TokenPieces> pieces)
      : backend_(std::move(backend)),
        model_(std::move(model)),
        assistant_(std::move(assistant)),
        runner_(std::move(runner)),
        spec_(std::move(spec)),
        info_(std::move(info)),
        pieces_(std::move(pieces)) {
    slots_.resize(static_cast<size_t>(info_.n_slots));
  }

  ~RuntimeSlotRunner() override {
    // Everything below holds backend memory: free it before the backend.
    spec_.reset();
    runner_.reset();
    assistant_.reset();
    model_.reset();
  }

  RunnerInfo info() const override { return info_; }

  Result<int32_t> start(int32_t slot, const SequenceSetup& setup, std::span<const int32_t> prompt) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (s.active) return make_status(StatusCode::kInternal, "slot {} is already in use", slot);
    int32_t keep = 0;
    if (s.seq >= 0) {
      // The previous sequence's cache: keep the prefix this prompt shares with it.
      keep = setup.reuse_prefix ? common_prefix(s, prompt) : 0;
      Status truncated = runner_->truncate(s.seq, keep);
      if (!truncated.ok()) {
        // The sliding ring no longer holds the window before `keep`: start afresh.
        GS_LOG_DEBUG("slot {}: no prefix reuse ({})", slot, truncated.message());
        keep = 0;
        drop_cache(s);
      }
    }
    if (s.seq < 0) {
      GS_ASSIGN_OR_RETURN(s.seq, runner_->add_sequence());
    }
    if (Status st = spec_->start(s.seq); !st.ok()) {
      drop_cache(s);
      return st;
    }
    s.tokens.resize(static_cast<size_t>(keep));
    SamplerConfig config;
    config.temperature = setup.sampling.temperature;
    config.top_k = setup.sampling.top_k;
    config.top_p = setup.sampling.top_p;
    config.min_p = setup.sampling.min_p;
    config.repetition_penalty = setup.sampling.repetition_penalty;
    config.frequency_penalty = setup.sampling.frequency_penalty;
    config.presence_penalty = setup.sampling.presence_penalty;
    config.logit_bias = setup.sampling.logit_bias;
    config.min_tokens = setup.sampling.min_tokens;
    config.held_tokens = setup.sampling.held_end_tokens;
    config.seed = setup.sampling.has_seed ? setup.sampling.seed : seed_source_();
    s.sampler = std::make_unique<Sampler>(config);
    // The kept prompt tokens are not prefilled again; the penalties still see them.
    for (int32_t i = 0; i < keep; ++i) s.sampler->accept(prompt[static_cast<size_t>(i)]);
    s.n_logprobs = setup.n_logprobs;
    s.draft_max = setup.speculative && spec_->has_drafter() ? setup.draft_max : 0;
    s.constraint.reset();
    s.round_start.reset();
    s.round_tokens.clear();
    s.sampler_round_start.reset();
    s.sampled_round.clear();
    if (setup.json.grammar) {
      JsonConstraintOptions json;
      json.think_open = setup.json.think_open;
      json.think_close = setup.json.think_close;
      json.starts_in_thought = setup.starts_in_thought;
      json.escape_tokens = setup.json.escape_tokens;
      json.end_tokens = info_.eog_tokens;
      json.end_tokens.insert(json.end_tokens.end(), setup.json.end_tokens.begin(), setup.json.end_tokens.end());
      json.prefix = setup.json.prefix;
      s.constraint = std::make_unique<JsonConstraint>(pieces_, setup.json.grammar, std::move(json));
      const ForcedCalls& calls = setup.json.calls;
      if (calls_held_from_opener(calls)) {
        // Tools beside the value: a call's opener makes the answer calls only.
        s.constraint = std::make_unique<ValueOrCallsConstraint>(std::move(s.constraint), calls.open_token,
                                                                call_text_constraint(calls), forced_calls_options(calls));
      }
    } else if (!setup.allowed_completions.empty() && !setup.call_arguments.empty()) {
      std::vector<int32_t> ends = info_.eog_tokens;
      ends.insert(ends.end(), setup.call_end_tokens.begin(), setup.call_end_tokens.end());
      s.constraint = std::make_unique<CallChoiceConstraint>(pieces_, setup.allowed_completions, setup.call_arguments,
                                                            std::move(ends));
    } else if (!setup.allowed_completions.empty()) {
      s.constraint = std::make_unique<CompletionConstraint>(pieces_, setup.allowed_completions);
    } else if (const ForcedCalls& lazy = setup.lazy_calls; calls_held_from_opener(lazy) && !setup.forced_calls.on) {
      // tool_choice auto: free text until the model opens a call, then calls only (decision 0065).
      s.constraint = std::make_unique<LazyCallsConstraint>(lazy.open_token, call_text_constraint(lazy),
                                                           forced_calls_options(lazy));
    }
    if (setup.forced_calls.on && setup.forced_calls.close_token >= 0) {
      s.constraint = std::make_unique<ForcedCallsConstraint>(std::move(s.constraint), forced_calls_options(setup.forced_calls));
    }
    s.active = true;
    return keep;
  }

  int32_t reusable_prefix(int32_t slot, std::span<const int32_t> prompt) const override {
    const Slot& s = slots_.at(static_cast<size_t>(slot));
    return s.active || s.seq < 0 ? 0 : common_prefix(s, prompt);
  }

  Result<std::vector<SlotOutput>> step(const StepBatch& batch) override {
    work_.clear();
    work_slots_.clear();
    std::vector<SlotOutput> failed;  // slots whose request leaves nothing to sample
    for (const auto& p : batch.prefill) {
      Slot& s = slots_.at(static_cast<size_t>(p.slot));
      SeqWork w;
      w.seq = s.seq;
      w.sampler = s.sampler.get();
      w.prefill = p.tokens;
      w.sample = p.last;
      if (p.last) {
        w.allowed_tokens = constraint_mask(s);
        if (Status st = check_sampleable(s, w.allowed_tokens); !st.ok()) {
          // The chunk is still appended (the scheduler counts it prefilled); nothing is sampled.
          w.sample = false;
          w.allowed_tokens = {};
          failed.push_back(failed_output(p.slot, std::move(st)));
        }
      }
      work_.push_back(std::move(w));
      work_slots_.push_back(p.slot);
    }
    for (const auto& d : batch.decode) {
      Slot& s = slots_.at(static_cast<size_t>(d.slot));
      // With bans (or held tokens) a step's mask may leave nothing: each step is then checked
      // before it runs, so a constrained one does not draft (a verify position's mask would
      // not be checked).
      const bool restricted = s.sampler->restricts_tokens();
      if (restricted) {
        const std::span<const int32_t> mask = constraint_mask(s);
        Status st = check_sampleable(s, mask);
        if (!st.ok()) {
          failed.push_back(failed_output(d.slot, std::move(st)));
          continue;  // the sequence ends; its cache and pending token stay as they were
        }
      }
      SeqWork w;
      w.seq = s.seq;
      w.sampler = s.sampler.get();
      w.max_tokens = d.max_tokens;
      w.draft_max = std::min(s.draft_max, d.max_tokens - 1);
      w.stop_tokens = info_.eog_tokens;
      s.sampler_round_start.reset();
      if (w.draft_max > 0) s.sampler_round_start = s.sampler->state();
      std::vector<int32_t> wake;
      if (s.constraint && !s.constraint->constrains_next()) wake = s.constraint->wake_tokens();
      if (!wake.empty()) {
        // Free until a known token (tool_choice auto before a call's opener): decoded and
        // drafted as without a constraint, the round ending at that token so that nothing
        // after it goes out unmasked; the next step has the constraint's masks.
        s.stop_tokens = info_.eog_tokens;
        s.stop_tokens.insert(s.stop_tokens.end(), wake.begin(), wake.end());
        w.stop_tokens = s.stop_tokens;
      } else if (s.constraint && s.draft_max > 0 && s.constraint->drafts_allowed() && !restricted) {
        // Drafting goes on under the constraint: each verify position gets the mask of a
        // copy advanced through the drafts before it (SeqWork::allowed_after).
        s.cursor.reset();
        s.cursor_prefix.clear();
        s.step_masks.clear();
        w.allowed_after = [this, &s](std::span<const int32_t> before) { return mask_after(s, before); };
      } else {
        // A constrained step samples one token from a masked row; the runtime drafts nothing
        // for it (SpeculativeDecoder::draft), so verify never judges a masked distribution.
        w.allowed_tokens = restricted ? std::span<const int32_t>(s.mask) : constraint_mask(s);
      }
      work_.push_back(std::move(w));
      work_slots_.push_back(d.slot);
    }
    GS_RETURN_IF_ERROR(spec_->step(work_));
    std::vector<SlotOutput> outputs = std::move(failed);
    const size_t n_failed = outputs.size();
    outputs.reserve(n_failed + work_.size());
    const auto has_failed = [&](int32_t slot) {
      for (size_t k = 0; k < n_failed; ++k) {
        if (outputs[k].slot == slot) return true;
      }
      return false;
    };
    for (size_t i = 0; i < work_.size(); ++i) {
      const SeqWork& w = work_[i];
      const Slot& s = slots_.at(static_cast<size_t>(work_slots_[i]));
      Slot& slot_state = slots_.at(static_cast<size_t>(work_slots_[i]));
      slot_state.tokens.insert(slot_state.tokens.end(), w.prefill.begin(), w.prefill.end());
      if (has_failed(work_slots_[i])) continue;  // its error is its output
      slot_state.tokens.insert(slot_state.tokens.end(), w.tokens.begin(), w.tokens.end());
      slot_state.round_start.reset();
      slot_state.round_tokens.clear();
      slot_state.sampled_round = w.tokens;
      if (slot_state.constraint) {
        // The state before the round, for replace_generated (null where it cannot be copied).
        slot_state.round_start = slot_state.constraint->clone();
        slot_state.round_tokens = w.tokens;
        for (int32_t t : w.tokens) slot_state.constraint->advance(t);
        if (!slot_state.constraint->active()) slot_state.constraint.reset();
      }
      SlotOutput o;
      o.slot = work_slots_[i];
      o.n_drafted = w.n_drafted;
      o.n_accepted = w.n_accepted;
      for (size_t k = 0; k < w.tokens.size(); ++k) {
        if (s.n_logprobs >= 0 && k < w.logit_rows.size()) {
          // The verifier's logits: the same distribution with or without drafting.
          o.tokens.push_back(with_logprobs(w.tokens[k], runner_->logits(w.logit_rows[k]), s.n_logprobs));
        } else {
          GeneratedToken t;
          t.id = w.tokens[k];
          o.tokens.push_back(t);
        }
      }
      outputs.push_back(std::move(o));
    }
    return outputs;
  }

  Status replace_generated(int32_t slot, int32_t n_drop, int32_t token) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (s.seq < 0 || n_drop < 1) {
      return make_status(StatusCode::kInvalidArgument, "slot {} has no generated token to replace", slot);
    }
    GS_ASSIGN_OR_RETURN(SpeculativeDecoder::Snapshot snap, spec_->save(s.seq));
    if (snap.pending < 0) return make_status(StatusCode::kInvalidArgument, "slot {} has no pending token", slot);
    // The forced token takes the place of the token at the dropped position; the drafter's
    // state (the hidden state that produced it) is kept, which is exact for n_drop = 1 and
    // only affects draft quality, never the output, otherwise.
    snap.length -= n_drop - 1;
    snap.pending = token;
    GS_RETURN_IF_ERROR(spec_->restore(s.seq, snap));
    s.tokens.resize(s.tokens.size() - static_cast<size_t>(std::min<int32_t>(n_drop, static_cast<int32_t>(s.tokens.size()))));
    s.tokens.push_back(token);
    // The sampler as plain decoding leaves it: that samples the kept tokens and the first
    // dropped one (its draw, its history entry), then takes the forced token. A drafting round
    // sampled the later dropped ones too: back to the round's start, then replay.
    if (n_drop > 1 && s.sampler_round_start && static_cast<size_t>(n_drop) <= s.sampled_round.size()) {
      s.sampler->set_state(*s.sampler_round_start);
      const size_t replayed = s.sampled_round.size() - static_cast<size_t>(n_drop) + 1;
      for (size_t i = 0; i < replayed; ++i) {
        s.sampler->skip_draw();
        s.sampler->accept(s.sampled_round[i]);
      }
    }
    s.sampler_round_start.reset();
    s.sampler->accept(token);
    if (s.round_start && static_cast<size_t>(n_drop) <= s.round_tokens.size()) {
      // The constraint as it was before the round, through the kept tokens: the dropped
      // ones (which may have moved it on) never happened.
      s.constraint = std::move(s.round_start);
      for (size_t i = 0; i + static_cast<size_t>(n_drop) < s.round_tokens.size(); ++i) s.constraint->advance(s.round_tokens[i]);
      s.round_tokens.clear();
    }
    if (s.constraint) {
      s.constraint->advance(token);
      if (!s.constraint->active()) s.constraint.reset();
    }
    return {};
  }

  void release(int32_t slot) override {
    // The cache stays with the slot for a later prompt that starts the same way.
    Slot& s = slots_.at(static_cast<size_t>(slot));
    s.active = false;
    s.sampler.reset();
    s.constraint.reset();
    s.round_start.reset();
    s.round_tokens.clear();
    s.sampler_round_start.reset();
    s.sampled_round.clear();
    s.mask.clear();
  }

  Result<SlotActionResult> save_slot(int32_t slot, const std::string& path) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (s.active) return make_status(StatusCode::kFailedPrecondition, "slot {} is processing a request", slot);
    const size_t n = s.seq < 0 ? 0 : std::min(s.tokens.size(), static_cast<size_t>(runner_->length(s.seq)));
    SlotActionResult r;
    r.n_tokens = static_cast<int32_t>(n);
    // Nothing cached (s.seq < 0): an empty file (no positions are read), which restores an
    // empty slot.
    GS_ASSIGN_OR_RETURN(const SlotFileModel* model, file_model());
    GS_ASSIGN_OR_RETURN(r.n_bytes, write_slot_file(path, *model, std::span<const int32_t>(s.tokens.data(), n),
                                                   runner_->kv(), s.seq));
    return r;
  }

  Result<SlotActionResult> restore_slot(int32_t slot, const std::string& path) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (s.active) return make_status(StatusCode::kFailedPrecondition, "slot {} is processing a request", slot);
    const std::string name = std::filesystem::path(path).filename().string();
    // The whole file is checked before the slot's own cache is dropped.
    GS_ASSIGN_OR_RETURN(const SlotFileModel* model, file_model());
    GS_ASSIGN_OR_RETURN(SlotFileContents contents, check_slot_file(path, name, *model, info_.n_ctx));
    drop_cache(s);
    GS_ASSIGN_OR_RETURN(s.seq, runner_->add_sequence());
    if (Status st = load_slot_file(path, name, *model, contents, runner_->kv(), s.seq); !st.ok()) {
      drop_cache(s);
      return st;
    }
    SlotActionResult r;
    r.n_tokens = static_cast<int32_t>(contents.tokens.size());
    r.n_bytes = contents.file_bytes;
    s.tokens = std::move(contents.tokens);
    return r;
  }

  Result<int32_t> erase_slot(int32_t slot) override {
    Slot& s = slots_.at(static_cast<size_t>(slot));
    if (s.active) return make_status(StatusCode::kFailedPrecondition, "slot {} is processing a request", slot);
    const int32_t n = s.seq < 0 ? 0 : static_cast<int32_t>(std::min(s.tokens.size(), static_cast<size_t>(runner_->length(s.seq))));
    drop_cache(s);
    return n;
  }

  int64_t kv_cells_used() const override {
    int64_t n = 0;
    for (const auto& s : slots_) {
      if (s.seq >= 0) n += runner_->length(s.seq);
    }
    return n;
  }

 private:
  struct Slot {
    int seq = -1;                 // runtime sequence: the running one, or a kept cache
    bool active = false;          // a request runs in the slot
    std::vector<int32_t> tokens;  // every token of the sequence: the cache, then the pending one
    std::unique_ptr<Sampler> sampler;
    int32_t n_logprobs = -1;
    int32_t draft_max = 0;
    std::unique_ptr<OutputConstraint> constraint;  // null: unconstrained
    std::unique_ptr<OutputConstraint> round_start;  // the constraint before the last round (clone)
    std::vector<int32_t> round_tokens;              // that round's tokens
    // A drafting slot's sampler before its last round, and the round's tokens (for
    // replace_generated: a token forced inside a round leaves the sampler as plain decoding).
    std::optional<Sampler::State> sampler_round_start;
    std::vector<int32_t> sampled_round;
    std::vector<int32_t> mask;                     // this step's allowed ids
    std::vector<int32_t> stop_tokens;              // this step's round enders, where they are more than the ends
    std::unique_ptr<OutputConstraint> cursor;  // the constraint advanced through cursor_prefix
    std::vector<int32_t> cursor_prefix;        // drafts of this round the cursor has taken
    // This step's masks by the drafts before their position (drafting and verify ask for
    // the same ones); entries stay put for the step, so their spans do.
    std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> step_masks;
  };

  // Builds the constraint of a call's text after its opener: it spells one of the openers
  // ("call:NAME{") and, where it has one, follows its arguments' grammar to the closer.
  std::function<std::unique_ptr<OutputConstraint>()> call_text_constraint(const ForcedCalls& f) const {
    std::vector<int32_t> ends = info_.eog_tokens;
    ends.push_back(f.close_token);
    return [pieces = pieces_, openers = f.openers, arguments = f.arguments,
            ends = std::move(ends)]() -> std::unique_ptr<OutputConstraint> {
      if (arguments.empty()) return std::make_unique<CompletionConstraint>(pieces, openers);
      return std::make_unique<CallChoiceConstraint>(pieces, openers, arguments, ends);
    };
  }

  // The options of a forced call's answer (engine/forced_calls_constraint.h): a later call's
  // text is spelled as one of the openers and, where it has one, follows its grammar.
  std::shared_ptr<const ForcedCallsOptions> forced_calls_options(const ForcedCalls& f) const {
    auto o = std::make_shared<ForcedCallsOptions>();
    o->call_open = f.open_token;
    o->call_close = f.close_token;
    o->end_tokens = info_.eog_tokens;
    if (f.more_calls && f.open_token >= 0 && !f.openers.empty()) o->next_call = call_text_constraint(f);
    return o;
  }

  // The slot's allowed tokens at the position after `before` (this round's drafts before
  // it); empty: free. With no drafts, the constraint's own mask.
  std::span<const int32_t> mask_after(Slot& s, std::span<const int32_t> before) {
    for (const auto& [prefix, mask] : s.step_masks) {
      if (std::equal(prefix.begin(), prefix.end(), before.begin(), before.end())) return mask;
    }
    std::vector<int32_t> mask;
    if (before.empty()) {
      const std::span<const int32_t> m = constraint_mask(s);
      mask.assign(m.begin(), m.end());
    } else if (s.constraint) {
      const bool extends = s.cursor && s.cursor_prefix.size() + 1 == before.size() &&
                           std::equal(s.cursor_prefix.begin(), s.cursor_prefix.end(), before.begin());
      if (!extends) {
        s.cursor = s.constraint->clone();
        s.cursor_prefix.clear();
        for (size_t i = 0; i + 1 < before.size(); ++i) s.cursor->advance(before[i]);
      }
      s.cursor->advance(before.back());
      s.cursor_prefix.assign(before.begin(), before.end());
      if (s.cursor->active() && s.cursor->constrains_next()) s.cursor->allowed(&mask);
    }
    s.step_masks.emplace_back(std::vector<int32_t>(before.begin(), before.end()), std::move(mask));
    return s.step_masks.back().second;
  }

  // The slot's allowed tokens for its next sample (empty: unconstrained). Computed only
  // while a constraint is active.
  std::span<const int32_t> constraint_mask(Slot& s) {
    s.mask.clear();
    if (!s.constraint || !s.constraint->constrains_next()) return {};
    s.constraint->allowed(&s.mask);
    if (s.mask.empty()) {
      GS_LOG_WARN("the vocabulary cannot continue '{}' under the output constraint: sampling unconstrained",
                  s.constraint->describe());
      s.constraint.reset();
    }
    return s.mask;
  }

  static SlotOutput failed_output(int32_t slot, Status error) {
    SlotOutput o;
    o.slot = slot;
    o.error = std::move(error);
    return o;
  }

  // OK when the slot's sampler can take a token of `mask` (the whole vocabulary when empty);
  // otherwise the request's error: its logit_bias bans every token that its output constraint
  // (or min_tokens) allows here, so sampling would return a banned or disallowed token.
  Status check_sampleable(const Slot& s, std::span<const int32_t> mask) const {
    if (s.sampler->can_sample(mask, info_.n_vocab)) return {};
    if (!mask.empty()) {
      std::string so_far = s.constraint ? s.constraint->describe() : std::string();
      if (so_far.size() > 80) so_far = "..." + so_far.substr(so_far.size() - 77);
      return make_status(StatusCode::kInvalidArgument,
                         "logit_bias bans every token that the output constraint (response_format or a forced tool "
                         "call) allows after '{}': nothing can be sampled",
                         so_far);
    }
    return make_status(StatusCode::kInvalidArgument,
                       "logit_bias bans every token but the end-of-generation ones, which min_tokens holds back: "
                       "nothing can be sampled");
  }

  // Tokens of the slot's cache equal to the start of `prompt`, at most prompt.size() - 1
  // (the last prompt token must run to give the first logits).
  int32_t common_prefix(const Slot& s, std::span<const int32_t> prompt) const {
    const size_t cached = std::min(s.tokens.size(), static_cast<size_t>(runner_->length(s.seq)));
    size_t n = 0;
    while (n < cached && n + 1 < prompt.size() && s.tokens[n] == prompt[n]) ++n;
    return static_cast<int32_t>(n);
  }

  // What a slot file must match here (computed once: the fingerprint reads the model file).
  // Errors: those of slot_file_model (OpenSSL's digest failed; tried again on the next call).
  Result<const SlotFileModel*> file_model() {
    if (!file_model_) {
      GS_ASSIGN_OR_RETURN(file_model_, slot_file_model(model_->config(), model_->file(), runner_->kv()));
    }
    return &*file_model_;
  }

  void drop_cache(Slot& s) {
    if (s.seq >= 0) {
      Status st = runner_->remove_sequence(s.seq);
      if (!st.ok()) GS_LOG_ERROR("dropping a slot's cache: {}", st.to_string());
    }
    s.seq = -1;
    s.tokens.clear();
  }

  std::unique_ptr<Backend> backend_;
  std::shared_ptr<const Gemma4Model> model_;
  std::shared_ptr<const Gemma4Model> assistant_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<SpeculativeDecoder> spec_;
  RunnerInfo info_;
  std::shared_ptr<const TokenPieces> pieces_;
  std::vector<Slot> slots_;
  std::vector<SeqWork> work_;
  std::vector<int32_t> work_slots_;
  std::random_device seed_source_;
  std::optional<SlotFileModel> file_model_;
};

// "1 slot" (or fewer: one sequence all the same), "4 slots".
std::string slots_text(int n_slots) { return n_slots <= 1 ? std::string("1 slot") : fmt::format("{} slots", n_slots); }

}  // namespace

Status runner_setup_error(const Status& why, RunnerPart part, const EngineOptions& options, int32_t n_ctx,
                          double kv_bytes, const RunnerOptions& ro) {
  // Each slot holds a whole context: say so, and what it needs (bug: "cannot allocate N
  // bytes" alone did not say why or what to lower). One slot (run, serve --parallel 1): no
  // --parallel to lower (run has no such flag).
  const bool one = options.n_slots <= 1;
  const std::string slots = slots_text(options.n_slots);
  const std::string kv = fmt::format("the KV cache of {} x {} positions{} ({:.1f} GB)", slots, n_ctx,
                                     one ? "" : " each", kv_bytes / 1e9);
  // The other parts' errors are "<what>: <why>" (ModelRunner::create).
  const std::string_view message = why.message();
  const size_t colon = message.find(": ");
  const std::string_view what = colon == std::string_view::npos ? runner_part_name(part) : message.substr(0, colon);
  const std::string_view reason = colon == std::string_view::npos ? message : message.substr(colon + 2);
  switch (part) {
    case RunnerPart::kKvCache:
    case RunnerPart::kNone:
      return make_status(StatusCode::kResourceExhausted, "{} does not fit: {}; {}", kv, why.message(),
                         one ? "lower --ctx-size" : "lower --ctx-size (positions per slot) or --parallel");
    case RunnerPart::kPassBuffers:
      // A pass holds at most every slot's context (decision 0052), so the rows come from the
      // ubatch or from the context. --ubatch is named where it was raised past the default
      // (only run has the flag; serve's passes are the default's rows).
      return make_status(StatusCode::kResourceExhausted, "{} do not fit beside {}: {}; lower {}--ctx-size", what, kv,
                         reason, options.max_batch_tokens > EngineOptions{}.max_batch_tokens
                                     ? "--ubatch (rows per pass) or "
                                     : "");
    case RunnerPart::kLogits:
    case RunnerPart::kHidden: {
      // A step's output rows: every slot's verify pass (1 + draft_max rows each).
      std::string lower = "--ctx-size";
      if (options.draft_max > 0) lower = "--draft-max or " + lower;
      if (!one) lower = "--parallel, " + lower;
      return make_status(StatusCode::kResourceExhausted, "{} ({} x {} output rows a step) do not fit beside {}: {}; "
                         "lower {}", what, slots, ro.max_outputs / std::max(options.n_slots, 1), kv, reason, lower);
    }
  }
  return why;
}

Result<std::unique_ptr<SlotRunner>> create_runtime_slot_runner(const EngineOptions& options,
                                                               std::shared_ptr<gguf::GgufFile> target_file,
                                                               const text::Tokenizer& tokenizer) {
  // A drafter that does not fit its target is refused from the files, before the target's
  // weights load (decision 0053; bug-case 35).
  // Its file, opened once: its weights load from it below.
  std::shared_ptr<gguf::GgufFile> drafter_file;
  if (!options.drafter_path.empty()) {
    GS_ASSIGN_OR_RETURN(drafter_file,
                        check_drafter_files(*target_file, &tokenizer, options.model_path, options.drafter_path));
  }
  // Asked for CUDA where there is none: say so and serve on the CPU rather than not at all.
  std::string fallback;
  const BackendKind kind = backend_for(options.device, &fallback);
  if (!fallback.empty()) GS_LOG_WARN("--device cuda: {}: running on the CPU", fallback);
  BackendOptions bo;
  bo.n_threads = options.n_threads;
  if (options.device == DeviceChoice::kAuto && kind == BackendKind::kCpu) {
    GS_LOG_INFO("no CUDA device found: running on the CPU");
  }
  GS_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, create_backend(kind, bo));
  GS_ASSIGN_OR_RETURN(std::shared_ptr<Gemma4Model> model, Gemma4Model::from_file(target_file, *backend));
  if (model->config().is_assistant()) {
    return make_status(StatusCode::kInvalidArgument, "{} is an MTP drafter (gemma4-assistant), not a target model; "
                       "pass it with --mtp", options.model_path);
  }
  if (model->config().n_vocab != tokenizer.n_vocab()) {
    return make_status(StatusCode::kInvalidArgument, "{}: tensor '{}' has {} rows but metadata '{}' has {} tokens",
                       target_file->path(), names::kTokenEmbd, model->config().n_vocab, names::kTokTokens,
                       tokenizer.n_vocab());
  }
  int32_t n_ctx = options.n_ctx;
  const int32_t n_ctx_train = model->config().n_ctx_train;
  if (n_ctx == 0) n_ctx = n_ctx_train > 0 ? std::min(n_ctx_train, kDefaultMaxContext) : kDefaultMaxContext;
  if (n_ctx_train > 0 && n_ctx > n_ctx_train) {
    GS_LOG_WARN("--ctx-size {} is beyond the {} tokens {} was trained on: expect worse output past that",
                n_ctx, n_ctx_train, options.model_path);
  }
  RunnerOptions ro;
  ro.max_outputs = std::max(options.n_slots, 1) * (1 + std::max(options.draft_max, 0));
  // A pass never carries more rows than the slots' contexts hold, or than every slot's verify
  // pass (llama.cpp clamps its ubatch to n_ctx the same way): `run --ubatch 1048576 -c 64`
  // sized the pass buffers for a million rows (gigabytes, and where they did not fit, an
  // error that blamed the KV cache; decision 0052).
  const int64_t ctx_rows = static_cast<int64_t>(n_ctx) * std::max(options.n_slots, 1);
  const int64_t most_rows = std::max<int64_t>(ctx_rows, ro.max_outputs);
  ro.max_tokens = static_cast<int32_t>(std::clamp<int64_t>(options.max_batch_tokens, 1, most_rows));
  ro.kv.n_seq_max = options.n_slots;
  ro.kv.n_ctx = n_ctx;
  ro.kv.max_ubatch = ro.max_tokens;
  ro.kv.type = options.kv_type;
  RunnerPart failed = RunnerPart::kNone;
  Result<std::unique_ptr<ModelRunner>> made = ModelRunner::create(model, ro, &failed);
  if (!made.ok() && made.status().code() == StatusCode::kResourceExhausted) {
    return runner_setup_error(made.status(), failed, options, n_ctx, KvCache::pool_bytes(model->config(), ro.kv),
                              ro);
  }
  GS_RETURN_IF_ERROR(made.status());
  std::unique_ptr<ModelRunner> runner = std::move(*made);
  if (!options.dump_dir.empty()) {
    GS_ASSIGN_OR_RETURN(DumpFn dump, make_dir_dump(options.dump_dir));
    runner->forward().set_dump(std::move(dump));
  }
  std::shared_ptr<Gemma4Model> assistant;
  if (!options.drafter_path.empty()) {
    // Its kind and fit were checked from the files above (check_drafter_files); what is left
    // is its weights' own checks as they load.
    Result<std::shared_ptr<Gemma4Model>> loaded = Gemma4Model::from_file(std::move(drafter_file), *backend);
    if (!loaded.ok()) return drafter_load_error(loaded.status(), options.drafter_path);
    assistant = *loaded;
  }
  SpecOptions spec_options;
  spec_options.draft_max = assistant ? std::max(options.draft_max, 1) : 0;
  spec_options.draft_p_min = options.draft_p_min;
  spec_options.adaptive = options.draft_adaptive;
  spec_options.sliding = options.draft_window_plus_one ? DraftSlidingWindow::kWindowPlusOne : DraftSlidingWindow::kWindow;
  Result<std::unique_ptr<SpeculativeDecoder>> spec = SpeculativeDecoder::create(*runner, assistant, spec_options);
  if (!spec.ok() && spec.status().code() == StatusCode::kResourceExhausted) {
    // Its buffers, not its fit (checked from the files above): it was "cannot draft for".
    return make_status(StatusCode::kResourceExhausted,
                       "the drafter {}'s buffers for {} x {} drafts do not fit beside the target and its KV cache: {}; "
                       "lower --draft-max{}",
                       options.drafter_path, slots_text(options.n_slots),
                       spec_options.draft_max, spec.status().message(), options.n_slots <= 1 ? "" : " or --parallel");
  }
  if (!spec.ok()) {
    return make_status(spec.status().code(), "the drafter {} cannot draft for {}: {}", options.drafter_path,
                       options.model_path, spec.status().message());
  }

  RunnerInfo info;
  info.model_name = model->config().arch_name;
  info.backend = backend->description();
  info.n_slots = options.n_slots;
  info.n_ctx = runner->kv().n_ctx();
  info.n_vocab = model->config().n_vocab;
  info.max_batch_tokens = ro.max_tokens;
  info.has_drafter = (*spec)->has_drafter();
  info.draft_max = info.has_drafter ? spec_options.draft_max : 0;
  info.eog_tokens = tokenizer.eog_ids();
  info.kv_cells_total = static_cast<int64_t>(info.n_ctx) * info.n_slots;
  uint64_t weight_bytes = 0;
  for (const auto& t : target_file->tensors()) weight_bytes += t.size_bytes;
  if (assistant) {
    for (const auto& t : assistant->file().tensors()) weight_bytes += t.size_bytes;
  }
  info.weight_bytes = weight_bytes;
  info.kv_bytes = runner->kv().bytes();
  return std::unique_ptr<SlotRunner>(
      new RuntimeSlotRunner(std::move(backend), std::move(model), std::move(assistant), std::move(runner),
                            std::move(*spec), std::move(info), std::make_shared<const TokenPieces>(tokenizer)));
}

}  // namespace gs
