// The engine: one loop thread that owns a SlotRunner and runs steps over all active
// sequences (continuous batching: prefill chunks and decode/verify rows in one step), a
// bounded admission queue, cancellation honoured at the next step, and metrics.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
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

// Prefill fairness. A prompt row at position p costs about (its matmuls) + (attention over p
// positions); on the H200 with the 31B the matmuls of a row cost as much as the attention
// over ~36k positions (docs/perf-notes.md, thirteenth session: 0.147 ms + 4.05 ns x p a
// row), so a full chunk of 512 rows at p = 1M is a ~2 s step against ~75 ms at p = 0.
inline constexpr int64_t kFairChunkDepth = 32768;  // positions a row's matmuls are worth
inline constexpr int32_t kMinFairChunk = 64;       // below this a chunk loses the prefill kernels' efficiency

// The most prompt rows a chunk starting at `position` may hold while other streams decode:
// max_batch_tokens * kFairChunkDepth / (kFairChunkDepth + position), so that the chunk's
// work stays near a full chunk's at position 0, but never below kMinFairChunk (nor above
// max_batch_tokens). Without decoding streams a chunk takes the whole budget.
int32_t prefill_chunk_cap(int32_t max_batch_tokens, int64_t position);

class Scheduler final : public Engine {
 public:
  // Starts the loop thread; the scheduler owns the runner from here on.
  Scheduler(std::unique_ptr<SlotRunner> runner, SchedulerOptions options);
  ~Scheduler() override;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Result<std::unique_ptr<RequestStream>> submit(GenerationRequest request) override;
  EngineInfo info() const override;
  EngineMetrics metrics() const override;
  void drain() override;
  void shutdown() override;

 private:
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
    Usage usage;
    Clock::time_point submitted;
    Clock::time_point admitted;
    Clock::time_point first_token;
    bool decoding() const { return n_prefilled == request.prompt.size(); }
  };

  // Shared with the streams so that a stream can wake the loop even after the scheduler.
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Pending> queue;
    int32_t n_active = 0;  // sequences in slots (mirrored by the loop for admission limits)
    bool poked = false;
    bool draining = false;  // nothing more is admitted (drain())
    bool stop = false;
  };

  void loop();
  // Ends waiting requests with the shutting-down error (drain, shutdown).
  void refuse_queued(std::deque<Pending> queued);
  void admit(std::vector<Pending>* admitted);
  StepBatch build_batch();
  void apply_outputs(const std::vector<SlotOutput>& outputs);
  // Ends the sequence in `index` of active_ (releases its slot, sends the final event).
  void finish(size_t index, FinishReason reason, const Status& error = Status());
  void fail_batch(const StepBatch& batch, const Status& error);
  bool is_eog(const Sequence& seq, int32_t token) const;
  int32_t completion_limit(const Sequence& seq) const;
  // The free slot for a new sequence with this prompt (there is at least one).
  int32_t pick_slot(std::span<const int32_t> prompt) const;

  std::unique_ptr<SlotRunner> runner_;
  RunnerInfo runner_info_;
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
