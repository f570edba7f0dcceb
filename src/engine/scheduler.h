// The engine: one loop thread that owns a SlotRunner and runs steps over all active
// sequences (continuous batching: prefill chunks and decode/verify rows in one step), a
// bounded admission queue, cancellation honoured at the next step, and metrics.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/event_channel.h"
#include "engine/slot_runner.h"

namespace gs {

struct SchedulerOptions {
  int32_t queue_size = 64;  // requests that may wait for a free slot beyond the slots
};

// Prefill fairness: while streams decode beside a prompt's prefill, each step that holds a
// prefill chunk is followed by decode-only steps until they have taken this share of that
// step's time. Deep in a long prompt a chunk step is long (0.35 s at 117k positions on the
// H200 with the 31B, ~2 s at 1M), and the decoding streams got one token a chunk; the prompt's
// prefill slows by at most this share. (Smaller chunks instead cost the prefill a weight pass
// each: 78% slower at 117k for half the wait; docs/perf-notes.md, twenty-fourth session.)
inline constexpr double kDecodeTimeShare = 0.25;

class Scheduler final : public Engine {
 public:
  // Starts the loop thread; the scheduler owns the runner from here on.
  Scheduler(std::unique_ptr<SlotRunner> runner, SchedulerOptions options);
  ~Scheduler() override;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Result<std::unique_ptr<RequestStream>> submit(GenerationRequest request) override;
  Result<std::vector<std::unique_ptr<RequestStream>>> submit_all(std::vector<GenerationRequest> requests) override;
  EngineInfo info() const override;
  EngineMetrics metrics() const override;
  void drain() override;
  void shutdown() override;
  // Queues the action for the loop thread, which runs it before the next step's admissions,
  // and waits for its outcome (decision 0068). A slot that holds a running request is refused
  // at once (kFailedPrecondition), not waited for.
  Result<SlotActionResult> slot_action(const SlotAction& action) override;

 private:
  // submit's checks of one request alone (prompt, token ids, limits); the room is checked
  // under the lock.
  Status check_request(const GenerationRequest& request) const;
  using Clock = std::chrono::steady_clock;

  struct Pending {
    GenerationRequest request;
    std::shared_ptr<EventChannel> channel;
    Clock::time_point submitted;
  };

  struct Sequence {
    GenerationRequest request;
    std::shared_ptr<EventChannel> channel;
    int32_t slot = -1;
    size_t n_prefilled = 0;      // prompt tokens already in the cache
    int32_t n_generated = 0;     // tokens sampled, including an end-of-generation token
    bool in_thought = false;     // inside a reasoning span (reasoning budget)
    int32_t thought_tokens = 0;  // tokens of the current span so far
    bool json_thought = false;   // inside the thought before a structured-output value (JsonOutput)
    // The calls that hold the answer (a forced call's, tool_choice auto's lazy ones, or those
    // instead of a structured value): their opener and closer (-1: none), whether a later call
    // may follow one, and whether a call is open. With no later call allowed, the closer ends
    // the sequence (decision 0067).
    int32_t call_open = -1;
    int32_t call_close = -1;
    bool more_calls = false;
    bool in_call = false;
    Usage usage;
    Clock::time_point submitted;
    Clock::time_point admitted;
    Clock::time_point first_token;
    bool decoding() const { return n_prefilled == request.prompt.size(); }
  };

  // A slot action waiting for the loop thread (slot_action).
  struct SlotCommand {
    SlotAction action;
    std::promise<Result<SlotActionResult>> done;
  };

  // Shared with the streams so that a stream can wake the loop even after the scheduler.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Pending> queue;
    std::deque<std::shared_ptr<SlotCommand>> commands;  // slot actions for the loop thread
    int32_t n_active = 0;  // sequences in slots (mirrored by the loop for admission limits)
    bool poked = false;
    bool draining = false;  // nothing more is submitted (drain())
    bool stop = false;
  };

  void loop();
  // Runs the queued slot actions (loop thread).
  void run_slot_commands();
  Result<SlotActionResult> run_slot_action(const SlotAction& action);
  // Ends waiting requests with the shutting-down error (drain, shutdown).
  void refuse_queued(std::deque<Pending> queued);
  void admit(std::vector<Pending>* admitted);
  // Takes the waiting requests whose streams were cancelled out of the queue (shared_->mu
  // held), so that they hold no place in it; end_cancelled sends them their end (not held).
  std::vector<Pending> take_cancelled_locked();
  void end_cancelled(std::vector<Pending> cancelled);
  StepBatch build_batch();
  void apply_outputs(const std::vector<SlotOutput>& outputs);
  // Ends the sequence in `index` of active_ (releases its slot, sends the final event).
  void finish(size_t index, FinishReason reason, const Status& error = Status());
  void fail_batch(const StepBatch& batch, const Status& error);
  bool is_eog(const Sequence& seq, int32_t token) const;
  static void set_call_tracking(Sequence* seq);
  // Copies each slot's state from active_ into metrics_.slots (metrics_mu_ held).
  void publish_slots_locked();
  int32_t completion_limit(const Sequence& seq) const;
  // The free slot for a new sequence with this prompt (there is at least one).
  int32_t pick_slot(std::span<const int32_t> prompt, bool reuse_prefix) const;

  std::unique_ptr<SlotRunner> runner_;
  RunnerInfo runner_info_;
  double decode_owed_s_ = 0;  // decode-only step time owed to decoding streams (kDecodeTimeShare)
  SchedulerOptions options_;
  std::shared_ptr<Shared> shared_;
  std::vector<Sequence> active_;        // loop thread only
  std::vector<bool> slot_used_;         // loop thread only
  std::vector<uint64_t> slot_last_used_;  // loop thread only: admission counter of the slot's last start
  std::vector<int64_t> slot_cached_;      // loop thread only: tokens a free slot's cache holds
  uint64_t n_admitted_ = 0;
  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;
  std::thread thread_;
  std::once_flag shutdown_once_;
};

}  // namespace gs
