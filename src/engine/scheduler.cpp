// The scheduler loop: admission, continuous batching, stopping, cancellation, metrics.
#include "engine/scheduler.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/log.h"
#include "engine/held_calls.h"

namespace gs {

namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Scheduler::Scheduler(std::unique_ptr<SlotRunner> runner, SchedulerOptions options)
    : runner_(std::move(runner)), options_(options), shared_(std::make_shared<Shared>()) {
  runner_info_ = runner_->info();
  slot_used_.assign(static_cast<size_t>(std::max(runner_info_.n_slots, 0)), false);
  slot_last_used_.assign(slot_used_.size(), 0);
  slot_cached_.assign(slot_used_.size(), 0);
  metrics_.n_slots = runner_info_.n_slots;
  metrics_.slots.assign(slot_used_.size(), SlotState{});
  metrics_.kv_cells_total = runner_info_.kv_cells_total;
  const size_t n_pos = static_cast<size_t>(std::max(runner_info_.draft_max, 0));
  metrics_.drafted_by_position.assign(n_pos, 0);
  metrics_.accepted_by_position.assign(n_pos, 0);
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { shutdown(); }

EngineInfo Scheduler::info() const {
  EngineInfo info;
  info.model_name = runner_info_.model_name;
  info.backend = runner_info_.backend;
  info.n_ctx = runner_info_.n_ctx;
  info.n_vocab = runner_info_.n_vocab;
  info.n_slots = runner_info_.n_slots;
  info.has_drafter = runner_info_.has_drafter;
  info.draft_max = runner_info_.draft_max;
  info.eog_tokens = runner_info_.eog_tokens;
  info.queue_size = options_.queue_size;
  info.weight_bytes = runner_info_.weight_bytes;
  info.kv_bytes = runner_info_.kv_bytes;
  return info;
}

void Scheduler::publish_slots_locked() {
  for (SlotState& st : metrics_.slots) st = SlotState{};
  for (const Sequence& seq : active_) {
    if (seq.slot < 0 || static_cast<size_t>(seq.slot) >= metrics_.slots.size()) continue;
    SlotState& st = metrics_.slots[static_cast<size_t>(seq.slot)];
    st.processing = true;
    st.n_decoded = seq.n_generated;
  }
}

EngineMetrics Scheduler::metrics() const {
  std::lock_guard<std::mutex> lock(metrics_mu_);
  return metrics_;
}

Status Scheduler::check_request(const GenerationRequest& request) const {
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  if (n_prompt == 0) return Status(StatusCode::kInvalidArgument, "the prompt is empty");
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= runner_info_.n_vocab) {
      return make_status(StatusCode::kInvalidArgument, "token id {} is outside the vocabulary [0, {})", id,
                         runner_info_.n_vocab);
    }
  }
  if (n_prompt >= runner_info_.n_ctx) {
    return make_status(StatusCode::kOutOfRange,
                       "the prompt has {} tokens but the context holds {} tokens per sequence "
                       "(the prompt must be shorter to leave room for the answer)",
                       n_prompt, runner_info_.n_ctx);
  }
  if (request.max_tokens < -1) {
    return make_status(StatusCode::kInvalidArgument,
                       "max_tokens must be >= 0 (0: the prompt only; -1: no limit), got {}", request.max_tokens);
  }
  if (request.n_logprobs > 20 || request.n_logprobs < -1) {
    return make_status(StatusCode::kInvalidArgument, "the number of top logprobs must be 0..20, got {}",
                       request.n_logprobs);
  }
  return {};
}

Result<std::unique_ptr<RequestStream>> Scheduler::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  GS_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<RequestStream>> streams, submit_all(std::move(one)));
  return std::move(streams.front());
}

Result<std::vector<std::unique_ptr<RequestStream>>> Scheduler::submit_all(std::vector<GenerationRequest> requests) {
  auto reject = [&](Status status) -> Result<std::vector<std::unique_ptr<RequestStream>>> {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.requests_rejected_total += std::max<size_t>(requests.size(), 1);  // each choice, as requests_total
    return status;
  };
  if (requests.empty()) return reject(Status(StatusCode::kInvalidArgument, "no request to queue"));
  for (const GenerationRequest& request : requests) {
    if (Status st = check_request(request); !st.ok()) return reject(std::move(st));
  }
  const int64_t n_new = static_cast<int64_t>(requests.size());
  std::vector<std::shared_ptr<EventChannel>> channels;
  uint64_t n_prompt_tokens = 0;
  std::vector<Pending> gone;  // waiting requests whose clients went away
  Status refusal;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->stop || shared_->draining) {
      return reject(Status(StatusCode::kUnavailable, "the server is shutting down"));
    }
    // All or none: a response's choices each need a place (a slot or a queue place), and
    // were refused only once the first ones had been queued (decision 0055).
    // A cancelled request waits only for the loop to notice it (up to a whole step): it holds
    // no place, or a client that gave up waiting and asked again was refused for room it did
    // not use (decision 0057).
    gone = take_cancelled_locked();
    const int64_t n_running = shared_->n_active;
    const int64_t n_waiting = static_cast<int64_t>(shared_->queue.size());
    const int64_t capacity = static_cast<int64_t>(runner_info_.n_slots) + options_.queue_size;
    const int64_t n_free = std::max<int64_t>(capacity - n_running - n_waiting, 0);
    if (n_new > n_free) {
      refusal = make_status(StatusCode::kResourceExhausted, "the server is busy: {} of {} places are free, {}; "
                            "{} running and {} waiting ({} slot{} and a queue of {}); try again later",
                            n_free, capacity,
                            n_new == 1 ? std::string("the request needs 1")
                                       : fmt::format("the request's {} choices (n) need {}, one each", n_new, n_new),
                            n_running, n_waiting, runner_info_.n_slots, runner_info_.n_slots == 1 ? "" : "s",
                            options_.queue_size);
    } else {
      for (GenerationRequest& request : requests) {
        n_prompt_tokens += request.prompt.size();
        channels.push_back(std::make_shared<EventChannel>());
        shared_->queue.push_back(Pending{std::move(request), channels.back(), Clock::now()});
      }
      shared_->poked = true;
    }
  }
  end_cancelled(std::move(gone));
  if (!refusal.ok()) return reject(std::move(refusal));
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.requests_total += static_cast<uint64_t>(n_new);
    metrics_.prompt_tokens_total += n_prompt_tokens;
  }
  shared_->cv.notify_all();
  std::weak_ptr<Shared> weak = shared_;
  auto wake = [weak] {
    if (auto s = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->poked = true;
      }
      s->cv.notify_all();
    }
  };
  std::vector<std::unique_ptr<RequestStream>> streams;
  for (auto& channel : channels) streams.push_back(std::unique_ptr<RequestStream>(new ChannelStream(channel, wake)));
  return streams;
}

void Scheduler::drain() {
  std::deque<Pending> refused;
  size_t n_kept = 0;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->draining = true;
    // A choice of a response with fewer choices waiting than it has started: another choice
    // holds a slot or has ended, so the response runs and keeps its waiting choices.
    std::unordered_map<uint64_t, int32_t> waiting;  // response_id -> its choices in the queue
    for (const Pending& p : shared_->queue) {
      if (p.request.response_id != 0) waiting[p.request.response_id]++;
    }
    std::deque<Pending> kept;
    for (Pending& p : shared_->queue) {
      const uint64_t id = p.request.response_id;
      const bool started = id != 0 && waiting[id] < p.request.response_choices;
      (started ? kept : refused).push_back(std::move(p));
    }
    shared_->queue.swap(kept);
    n_kept = shared_->queue.size();
  }
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.queue_length = static_cast<int32_t>(n_kept);
  }
  refuse_queued(std::move(refused));
}

void Scheduler::refuse_queued(std::deque<Pending> queued) {
  for (auto& p : queued) {
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::kError;
    ev.error = Status(StatusCode::kUnavailable, "the server is shutting down");
    p.channel->push(std::move(ev));
  }
}

void Scheduler::shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->stop = true;
    }
    shared_->cv.notify_all();
    if (thread_.joinable()) thread_.join();
    // Slot actions the loop did not take: answered, so that no HTTP thread waits forever.
    std::deque<std::shared_ptr<SlotCommand>> left;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      left.swap(shared_->commands);
    }
    for (auto& c : left) c->done.set_value(Status(StatusCode::kUnavailable, "the server is shutting down"));
  });
}

Result<SlotActionResult> Scheduler::slot_action(const SlotAction& action) {
  if (action.slot < 0 || action.slot >= runner_info_.n_slots) {
    return make_status(StatusCode::kInvalidArgument, "id_slot {} is out of range: this server has slots 0 to {}",
                       action.slot, runner_info_.n_slots - 1);
  }
  auto command = std::make_shared<SlotCommand>();
  command->action = action;
  std::future<Result<SlotActionResult>> done = command->done.get_future();
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->stop) return Status(StatusCode::kUnavailable, "the server is shutting down");
    shared_->commands.push_back(command);
  }
  shared_->cv.notify_all();
  return done.get();
}

void Scheduler::run_slot_commands() {
  std::deque<std::shared_ptr<SlotCommand>> commands;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    commands.swap(shared_->commands);
  }
  for (auto& c : commands) {
    Result<SlotActionResult> r = Status(StatusCode::kInternal, "slot action did not run");
    try {
      r = run_slot_action(c->action);
    } catch (const std::exception& e) {
      r = make_status(StatusCode::kInternal, "slot action threw: {}", e.what());
    } catch (...) {
      r = Status(StatusCode::kInternal, "slot action threw an unknown exception");
    }
    c->done.set_value(std::move(r));
  }
}

Result<SlotActionResult> Scheduler::run_slot_action(const SlotAction& action) {
  const size_t slot = static_cast<size_t>(action.slot);
  if (slot_used_[slot]) {
    // llama-server defers the action until the slot is idle; a request can run for minutes,
    // so it is refused here instead, and the client tries again (decision 0068).
    return make_status(StatusCode::kFailedPrecondition, "slot {} is processing a request; try again once it is idle",
                       action.slot);
  }
  const auto t0 = Clock::now();
  Result<SlotActionResult> r = Status(StatusCode::kInternal, "unknown slot action");
  switch (action.kind) {
    case SlotActionKind::kSave:
      r = runner_->save_slot(action.slot, action.path);
      break;
    case SlotActionKind::kRestore:
      r = runner_->restore_slot(action.slot, action.path);
      // Restored: the slot keeps the file's tokens. Refused before the slot was touched
      // (kInvalidArgument, kNotFound): it keeps its own. Failed while loading: it was emptied.
      if (r.ok()) {
        slot_cached_[slot] = r->n_tokens;
      } else if (r.status().code() != StatusCode::kInvalidArgument && r.status().code() != StatusCode::kNotFound) {
        slot_cached_[slot] = 0;
      }
      break;
    case SlotActionKind::kErase: {
      Result<int32_t> n = runner_->erase_slot(action.slot);
      if (!n.ok()) return n.status();
      slot_cached_[slot] = 0;
      SlotActionResult e;
      e.n_tokens = *n;
      r = e;
      break;
    }
  }
  if (r.ok()) r->ms = ms_between(t0, Clock::now());
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.kv_cells_used = runner_->kv_cells_used();
  }
  return r;
}

// The calls that hold a sequence's answer, as the runner builds its constraint
// (runtime_slot_runner.cpp): a forced call's answer begins inside its call; tool_choice auto's
// lazy calls, and the calls a structured value's answer may be instead, begin at an opener.
void Scheduler::set_call_tracking(Sequence* seq) {
  const GenerationRequest& r = seq->request;
  const auto usable = [](const ForcedCalls& f) { return f.on && f.open_token >= 0 && f.close_token >= 0; };
  const ForcedCalls* calls = nullptr;
  seq->in_call = false;
  if (usable(r.forced_calls)) {
    calls = &r.forced_calls;
    seq->in_call = true;
  } else if (r.json.grammar) {
    if (calls_held_from_opener(r.json.calls)) calls = &r.json.calls;
  } else if (r.allowed_completions.empty() && calls_held_from_opener(r.lazy_calls)) {
    calls = &r.lazy_calls;
  }
  seq->call_open = calls ? calls->open_token : -1;
  seq->call_close = calls ? calls->close_token : -1;
  seq->more_calls = calls && calls->more_calls;
}

bool Scheduler::is_eog(const Sequence& seq, int32_t token) const {
  const auto& eog = runner_info_.eog_tokens;
  if (!seq.request.ignore_eog && std::find(eog.begin(), eog.end(), token) != eog.end()) return true;
  const auto& extra = seq.request.extra_eog;
  return std::find(extra.begin(), extra.end(), token) != extra.end();
}

// Tokens the sequence may still generate: the request's max_tokens and the context (a
// sequence of P prompt tokens holds at most n_ctx - P completion tokens). A prompt-only
// request (max_tokens 0) has none: the token its last prefill chunk samples is dropped in
// apply_outputs and the sequence ends with kLength, its prompt left in the slot's cache.
int32_t Scheduler::completion_limit(const Sequence& seq) const {
  const int32_t n_prompt = static_cast<int32_t>(seq.request.prompt.size());
  int32_t left = runner_info_.n_ctx - n_prompt - seq.n_generated;
  if (seq.request.max_tokens >= 0) left = std::min(left, seq.request.max_tokens - seq.n_generated);
  return std::max(left, 0);
}

// A slot's kept cache is worth taking over when this prompt reuses at least half of it,
// or when the reuse saves at least half of this prompt's prefill. Otherwise the gain is a
// shared header (BOS, the turn markup, a short system prompt) while the loss is another
// conversation's whole cache, which its next turn would have reused (bug-case 46): such a
// prompt goes to the slot idle longest instead, a never-used one first.
int32_t Scheduler::pick_slot(std::span<const int32_t> prompt, bool reuse_prefix) const {
  int32_t best = -1;
  int64_t best_reuse = 0;
  for (size_t s = 0; s < slot_used_.size() && reuse_prefix; ++s) {
    if (slot_used_[s]) continue;
    const int64_t reuse = runner_->reusable_prefix(static_cast<int32_t>(s), prompt);
    const bool worth = reuse > 0 && (2 * reuse >= slot_cached_[s] || 2 * reuse >= static_cast<int64_t>(prompt.size()));
    if (!worth) continue;
    if (reuse > best_reuse || (reuse == best_reuse && slot_last_used_[s] < slot_last_used_[static_cast<size_t>(best)])) {
      best_reuse = reuse;
      best = static_cast<int32_t>(s);
    }
  }
  if (best >= 0) return best;
  for (size_t s = 0; s < slot_used_.size(); ++s) {
    if (slot_used_[s]) continue;
    if (best < 0 || slot_last_used_[s] < slot_last_used_[static_cast<size_t>(best)]) best = static_cast<int32_t>(s);
  }
  return best;
}

std::vector<Scheduler::Pending> Scheduler::take_cancelled_locked() {
  std::vector<Pending> cancelled;
  for (auto it = shared_->queue.begin(); it != shared_->queue.end();) {
    if (it->channel->cancel_requested()) {
      cancelled.push_back(std::move(*it));
      it = shared_->queue.erase(it);
    } else {
      ++it;
    }
  }
  return cancelled;
}

void Scheduler::end_cancelled(std::vector<Pending> cancelled) {
  if (cancelled.empty()) return;
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.requests_cancelled_total += cancelled.size();
  }
  for (auto& p : cancelled) {
    StreamEvent done;
    done.kind = StreamEvent::Kind::kDone;
    done.finish = FinishReason::kCancelled;
    done.usage.prompt_tokens = static_cast<int32_t>(p.request.prompt.size());
    done.usage.queue_ms = ms_between(p.submitted, Clock::now());
    p.channel->push(std::move(done));
  }
}

void Scheduler::admit(std::vector<Pending>* admitted) {
  const int32_t n_free = static_cast<int32_t>(std::count(slot_used_.begin(), slot_used_.end(), false));
  std::vector<Pending> cancelled;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    cancelled = take_cancelled_locked();
    while (!shared_->queue.empty() && static_cast<int32_t>(admitted->size()) < n_free) {
      admitted->push_back(std::move(shared_->queue.front()));
      shared_->queue.pop_front();
    }
    shared_->n_active = static_cast<int32_t>(active_.size() + admitted->size());
  }
  end_cancelled(std::move(cancelled));
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(shared_->mu);
      // A waiting request is work too: when every running sequence ended in the last step,
      // nothing pokes the loop for the requests still queued behind them.
      shared_->cv.wait(lock, [&] {
        return shared_->stop || shared_->poked || !active_.empty() || !shared_->queue.empty() ||
               !shared_->commands.empty();
      });
      shared_->poked = false;
      if (shared_->stop) break;
    }
    run_slot_commands();

    // Cancellations are honoured before anything else runs: the slot is free this step.
    for (size_t i = 0; i < active_.size();) {
      if (active_[i].channel->cancel_requested()) {
        finish(i, FinishReason::kCancelled);
      } else {
        ++i;
      }
    }

    std::vector<Pending> admitted;
    admit(&admitted);
    for (auto& p : admitted) {
      Sequence seq;
      seq.request = std::move(p.request);
      seq.channel = std::move(p.channel);
      seq.submitted = p.submitted;
      seq.admitted = Clock::now();
      seq.usage.prompt_tokens = static_cast<int32_t>(seq.request.prompt.size());
      seq.usage.queue_ms = ms_between(seq.submitted, seq.admitted);
      seq.in_thought = seq.request.starts_in_thought;
      seq.json_thought = seq.request.json.grammar && seq.request.json.think_close >= 0 && seq.request.starts_in_thought;
      set_call_tracking(&seq);
      seq.slot = pick_slot(seq.request.prompt, seq.request.reuse_prefix);
      SequenceSetup setup;
      setup.sampling = seq.request.sampling;
      setup.sampling.held_end_tokens.clear();
      if (setup.sampling.min_tokens > 0) {
        // Under ignore_eog only the request's own end tokens can end it early.
        if (!seq.request.ignore_eog) setup.sampling.held_end_tokens = runner_info_.eog_tokens;
        setup.sampling.held_end_tokens.insert(setup.sampling.held_end_tokens.end(), seq.request.extra_eog.begin(),
                                              seq.request.extra_eog.end());
        if (setup.sampling.held_end_tokens.empty()) setup.sampling.min_tokens = 0;  // nothing ends it early
      }
      setup.n_logprobs = seq.request.n_logprobs;
      setup.speculative = seq.request.speculative && runner_info_.has_drafter;
      setup.draft_max = setup.speculative
                            ? (seq.request.draft_max >= 0 ? seq.request.draft_max : runner_info_.draft_max)
                            : 0;
      setup.draft_max = std::clamp(setup.draft_max, 0, std::max(runner_info_.draft_max, 0));
      if (setup.draft_max == 0) setup.speculative = false;
      setup.allowed_completions = seq.request.allowed_completions;
      setup.call_arguments = seq.request.call_arguments;
      setup.call_end_tokens = seq.request.call_end_tokens;
      setup.json = seq.request.json;
      setup.forced_calls = seq.request.forced_calls;
      setup.lazy_calls = seq.request.lazy_calls;
      setup.reuse_prefix = seq.request.reuse_prefix;
      setup.starts_in_thought = seq.request.starts_in_thought;
      Result<int32_t> started = runner_->start(seq.slot, setup, seq.request.prompt);
      slot_cached_[static_cast<size_t>(seq.slot)] = 0;  // set again when the sequence ends
      if (!started.ok()) {
        StreamEvent ev;
        ev.kind = StreamEvent::Kind::kError;
        ev.error = started.status();
        seq.channel->push(std::move(ev));
        runner_->release(seq.slot);
        std::lock_guard<std::mutex> lock(metrics_mu_);
        metrics_.requests_failed_total++;
        continue;
      }
      slot_used_[static_cast<size_t>(seq.slot)] = true;
      slot_last_used_[static_cast<size_t>(seq.slot)] = ++n_admitted_;
      seq.channel->mark_admitted();
      const size_t n_cached = static_cast<size_t>(std::clamp<int32_t>(*started, 0, static_cast<int32_t>(seq.request.prompt.size()) - 1));
      seq.n_prefilled = n_cached;
      seq.usage.cached_tokens = static_cast<int32_t>(n_cached);
      active_.push_back(std::move(seq));
    }
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->n_active = static_cast<int32_t>(active_.size());
    }

    StepBatch batch = build_batch();
    if (batch.empty()) {
      // Only reachable with no active sequence; a sequence without work would spin.
      while (!active_.empty()) finish(active_.size() - 1, FinishReason::kLength);
      continue;
    }
    int64_t n_prefill_rows = 0;
    for (const auto& p : batch.prefill) n_prefill_rows += static_cast<int64_t>(p.tokens.size());
    const auto t0 = Clock::now();
    Result<std::vector<SlotOutput>> outputs = Status(StatusCode::kInternal, "step did not run");
    try {
      outputs = runner_->step(batch);
    } catch (const std::exception& e) {
      outputs = make_status(StatusCode::kInternal, "model step threw: {}", e.what());
    } catch (...) {
      outputs = Status(StatusCode::kInternal, "model step threw an unknown exception");
    }
    const double step_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (batch.decode.empty()) {
      decode_owed_s_ = 0;
    } else if (n_prefill_rows > 0) {
      decode_owed_s_ += kDecodeTimeShare * step_s;
    } else {
      decode_owed_s_ = std::max(0.0, decode_owed_s_ - step_s);
    }
    if (!outputs.ok()) {
      GS_LOG_ERROR("engine step failed: {}", outputs.status().to_string());
      fail_batch(batch, outputs.status());
      continue;
    }
    // Advance the prefill cursors before the outputs are applied (a last chunk's output
    // finds its sequence in the decoding state).
    for (const auto& p : batch.prefill) {
      for (auto& seq : active_) {
        if (seq.slot == p.slot) seq.n_prefilled += p.tokens.size();
      }
    }
    int64_t n_decode_rows = 0;
    for (const auto& out : *outputs) {
      for (const auto& d : batch.decode) {
        if (d.slot == out.slot) n_decode_rows += 1 + out.n_drafted;
      }
    }
    {
      std::lock_guard<std::mutex> lock(metrics_mu_);
      const double total_rows = static_cast<double>(n_prefill_rows + n_decode_rows);
      const double prefill_share = total_rows > 0 ? static_cast<double>(n_prefill_rows) / total_rows : 0.0;
      metrics_.prefill_tokens_total += static_cast<uint64_t>(n_prefill_rows);
      metrics_.decode_tokens_total += static_cast<uint64_t>(n_decode_rows);
      metrics_.prefill_seconds_total += step_s * prefill_share;
      metrics_.decode_seconds_total += step_s * (1.0 - prefill_share);
      metrics_.kv_cells_used = runner_->kv_cells_used();
    }
    apply_outputs(*outputs);
  }

  // Shutdown: nothing more runs; every request still known ends now.
  std::deque<Pending> queued;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    queued.swap(shared_->queue);
  }
  refuse_queued(std::move(queued));
  // Running ones end with an error the client sees (a stream's error event and [DONE]);
  // ended as cancelled, their responses were cut off mid-stream with nothing said.
  while (!active_.empty()) {
    finish(active_.size() - 1, FinishReason::kError, Status(StatusCode::kUnavailable, "the server is shutting down"));
  }
}

StepBatch Scheduler::build_batch() {
  StepBatch batch;
  int32_t budget = std::max(runner_info_.max_batch_tokens, 1);
  // A decode row uses at most 1 + draft_max rows a step. Charging the budget the
  // sequence's whole remaining allowance instead (max_tokens 4096, the chat default) let
  // one stream take every row, so no other prompt was prefilled and no other stream
  // decoded until it was within max_batch_tokens of its end.
  const int32_t max_rows = 1 + std::max(runner_info_.draft_max, 0);
  // Decode rows first: running streams keep their pace while prompts are prefilled.
  for (const auto& seq : active_) {
    if (!seq.decoding() || budget <= 0) continue;
    const int32_t limit = completion_limit(seq);
    if (limit <= 0) continue;  // finished in apply_outputs; never scheduled
    DecodeWork work;
    work.slot = seq.slot;
    work.max_tokens = std::min({limit, budget, max_rows});
    batch.decode.push_back(work);
    budget -= work.max_tokens;
  }
  // Prefill chunks with what is left, the prompt with the fewest tokens still to prefill
  // first (admission order among equals). In admission order a long prompt's chunk took
  // every row of every step, so a short request that came in behind it got its first token
  // only once the whole long prompt was in (75 s for a 6000-token prompt on the CPU). A
  // prompt is not starved this way: the others are few (one per slot) and each takes its
  // rows once before it decodes, at most 1 + draft_max rows a step.
  std::vector<const Sequence*> prefilling;
  for (const auto& seq : active_) {
    if (!seq.decoding()) prefilling.push_back(&seq);
  }
  std::stable_sort(prefilling.begin(), prefilling.end(), [](const Sequence* a, const Sequence* b) {
    return a->request.prompt.size() - a->n_prefilled < b->request.prompt.size() - b->n_prefilled;
  });
  // Decode-only steps while the decoding streams are owed time (kDecodeTimeShare).
  if (!batch.decode.empty() && decode_owed_s_ > 0) prefilling.clear();
  for (const Sequence* s : prefilling) {
    const Sequence& seq = *s;
    if (budget <= 0) break;
    const size_t left = seq.request.prompt.size() - seq.n_prefilled;
    const size_t n = std::min(left, static_cast<size_t>(budget));
    PrefillWork work;
    work.slot = seq.slot;
    work.tokens.assign(seq.request.prompt.begin() + static_cast<std::ptrdiff_t>(seq.n_prefilled),
                       seq.request.prompt.begin() + static_cast<std::ptrdiff_t>(seq.n_prefilled + n));
    work.last = (n == left);
    budget -= static_cast<int32_t>(n);
    batch.prefill.push_back(std::move(work));
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    std::lock_guard<std::mutex> mlock(metrics_mu_);
    metrics_.queue_length = static_cast<int32_t>(shared_->queue.size());
    metrics_.busy_slots = static_cast<int32_t>(active_.size());
    publish_slots_locked();
  }
  return batch;
}

void Scheduler::apply_outputs(const std::vector<SlotOutput>& outputs) {
  struct Finished {
    int32_t slot;
    FinishReason reason;
    Status error;
  };
  std::vector<Finished> finished;
  uint64_t n_emitted_total = 0;
  for (const auto& out : outputs) {
    auto it = std::find_if(active_.begin(), active_.end(), [&](const Sequence& s) { return s.slot == out.slot; });
    if (it == active_.end()) continue;
    Sequence& seq = *it;
    if (!out.error.ok()) {
      finished.push_back({seq.slot, FinishReason::kError, out.error});
      continue;
    }
    if (out.tokens.empty()) continue;  // a prefill chunk that was not the last
    if (seq.n_generated == 0) seq.first_token = Clock::now();
    seq.usage.drafted_tokens += out.n_drafted;
    seq.usage.accepted_tokens += out.n_accepted;
    if (out.n_drafted > 0) {
      std::lock_guard<std::mutex> lock(metrics_mu_);
      metrics_.drafted_total += static_cast<uint64_t>(out.n_drafted);
      metrics_.accepted_total += static_cast<uint64_t>(out.n_accepted);
      auto& drafted = metrics_.drafted_by_position;
      auto& accepted = metrics_.accepted_by_position;
      if (drafted.size() < static_cast<size_t>(out.n_drafted)) {
        drafted.resize(static_cast<size_t>(out.n_drafted), 0);
        accepted.resize(static_cast<size_t>(out.n_drafted), 0);
      }
      for (int32_t i = 0; i < out.n_drafted; ++i) drafted[static_cast<size_t>(i)]++;
      for (int32_t i = 0; i < out.n_accepted && i < out.n_drafted; ++i) accepted[static_cast<size_t>(i)]++;
    }
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::kTokens;
    std::optional<FinishReason> reason;
    Status error;
    const GenerationRequest& req = seq.request;
    const bool has_budget = req.reasoning_budget >= 0 && req.reasoning_open >= 0 && req.reasoning_close >= 0;
    for (size_t k = 0; k < out.tokens.size(); ++k) {
      if (completion_limit(seq) <= 0) {
        reason = FinishReason::kLength;
        break;
      }
      GeneratedToken tok = out.tokens[k];
      bool forced = false;
      // Writes `token` in place of the sampled one; what the round sampled from this point on
      // is dropped. False (the sequence fails) when the runner cannot.
      auto force = [&](int32_t token) {
        Status st = runner_->replace_generated(seq.slot, static_cast<int32_t>(out.tokens.size() - k), token);
        if (!st.ok()) {
          reason = FinishReason::kError;
          error = st;
          return false;
        }
        tok = GeneratedToken{};
        tok.id = token;
        forced = true;
        return true;
      };
      // The budget is spent: end the thought here.
      if (has_budget && seq.in_thought && tok.id != req.reasoning_close && seq.thought_tokens >= req.reasoning_budget &&
          !force(req.reasoning_close))
        break;
      // A structured-output value is still owed (decision 0027 §4): an end of the answer
      // sampled inside its thought closes the thought instead, and the value follows.
      const JsonOutput& js = req.json;
      if (!forced && seq.json_thought &&
          (is_eog(seq, tok.id) ||
           std::find(js.thought_breakers.begin(), js.thought_breakers.end(), tok.id) != js.thought_breakers.end()) &&
          !force(js.think_close))
        break;
      if (js.grammar && js.think_close >= 0) {
        if (seq.n_generated == 0 && tok.id == js.think_open) seq.json_thought = true;  // opens only as the first token
        else if (tok.id == js.think_close) seq.json_thought = false;
      }
      seq.n_generated++;
      n_emitted_total++;
      if (is_eog(seq, tok.id)) {
        reason = FinishReason::kStop;
        break;
      }
      if (has_budget) {
        if (tok.id == req.reasoning_open) {
          seq.in_thought = true;
          seq.thought_tokens = 0;
        } else if (tok.id == req.reasoning_close || (req.lazy_calls.on && tok.id == req.lazy_calls.open_token)) {
          // A call opener inside the thought ends it, as the output parser reads it: the call
          // that follows is held by its grammar (decision 0065), and a spent budget must not
          // write the thought's closer into its arguments.
          seq.in_thought = false;
        } else if (seq.in_thought) {
          seq.thought_tokens++;
        }
      }
      const bool call_closed = seq.call_close >= 0 && seq.in_call && tok.id == seq.call_close;
      // (An opener inside a structured value's thought is the thought's free text, not a call.)
      if (seq.call_open >= 0 && tok.id == seq.call_open && !seq.json_thought) seq.in_call = true;
      if (call_closed) seq.in_call = false;
      ev.tokens.push_back(std::move(tok));
      if (call_closed && !seq.more_calls) {
        // The answer's last allowed call is closed: only an end could follow, so the sequence
        // ends here (decision 0067). Another step would only sample that end, and where the
        // request's logit_bias bans every end it failed the request after its answer was whole.
        reason = FinishReason::kStop;
        break;
      }
      if (forced) break;
    }
    if (!reason && completion_limit(seq) <= 0) reason = FinishReason::kLength;
    if (!ev.tokens.empty()) seq.channel->push(std::move(ev));
    if (reason) finished.push_back({seq.slot, *reason, error});
  }
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_.generated_tokens_total += n_emitted_total;
  }
  for (const auto& f : finished) {
    for (size_t i = 0; i < active_.size(); ++i) {
      if (active_[i].slot == f.slot) {
        finish(i, f.reason, f.error);
        break;
      }
    }
  }
}

void Scheduler::finish(size_t index, FinishReason reason, const Status& error) {
  Sequence seq = std::move(active_[index]);
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(index));
  runner_->release(seq.slot);
  slot_used_[static_cast<size_t>(seq.slot)] = false;
  // What the released slot keeps: the prefilled prompt and every generated token but the
  // last (never fed back).
  slot_cached_[static_cast<size_t>(seq.slot)] =
      static_cast<int64_t>(seq.n_prefilled) + std::max<int64_t>(seq.n_generated - 1, 0);
  const auto now = Clock::now();
  seq.usage.completion_tokens = seq.n_generated;
  if (seq.n_generated > 0) {
    seq.usage.prefill_ms = ms_between(seq.admitted, seq.first_token);
    seq.usage.decode_ms = ms_between(seq.first_token, now);
  } else {
    seq.usage.prefill_ms = ms_between(seq.admitted, now);
  }
  StreamEvent ev;
  if (reason == FinishReason::kError) {
    ev.kind = StreamEvent::Kind::kError;
    ev.error = error;
  } else {
    ev.kind = StreamEvent::Kind::kDone;
    ev.finish = reason;
    ev.usage = seq.usage;
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->n_active = static_cast<int32_t>(active_.size());
  }
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    if (reason == FinishReason::kCancelled) metrics_.requests_cancelled_total++;
    if (reason == FinishReason::kError) metrics_.requests_failed_total++;
    metrics_.busy_slots = static_cast<int32_t>(active_.size());
    metrics_.kv_cells_used = runner_->kv_cells_used();
    publish_slots_locked();
  }
  // Last: a reader that sees the end also sees the slot free and the counters updated.
  seq.channel->push(std::move(ev));
}

void Scheduler::fail_batch(const StepBatch& batch, const Status& error) {
  std::vector<int32_t> slots;
  for (const auto& p : batch.prefill) slots.push_back(p.slot);
  for (const auto& d : batch.decode) slots.push_back(d.slot);
  for (int32_t slot : slots) {
    for (size_t i = 0; i < active_.size(); ++i) {
      if (active_[i].slot == slot) {
        finish(i, FinishReason::kError, error);
        break;
      }
    }
  }
}

}  // namespace gs
