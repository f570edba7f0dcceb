// A response's choices (OpenAI's `n`): one Generation each, submitted together so that the
// scheduler batches them, polled together by the request's thread and cancelled together.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "server/generation.h"
#include "text/tokenizer.h"

namespace gs::server {

// The plan of choice `index` of a request planned as `plan`: the same prompt, limits and
// constraints; with a seed, seed + index (wrapping), so that choice i of a request with seed s
// is choice 0 of the same request with seed s + i, and n = 1 samples as it always did. Without
// a seed every choice draws its own (the engine's), and greedy choices are all the same text.
GenerationPlan choice_plan(const GenerationPlan& plan, int index);

// What one choice's poll gave.
struct ChoicePoll {
  int index = 0;
  PollResult poll;
};

class ChoiceSet {
 public:
  // `n` >= 1 choices of `plan` (choice_plan).
  ChoiceSet(std::shared_ptr<const text::Tokenizer> tokenizer, const GenerationPlan& plan, int n);

  // Submits every choice, in index order, in one Engine::submit_all: a response runs all its
  // choices or none (queue room for only some of them is the engine's kResourceExhausted, and
  // no choice is queued, not even for a moment).
  Status start(Engine& engine);
  // Waits up to `wait` for events of the unfinished choices and returns the polls that gave
  // something (deltas, tokens or the end), in index order. One choice waits as
  // Generation::poll does; with several, none is waited on for more than kChoiceWait while
  // another may have events (their tokens come in the same engine steps), so a choice's
  // events are late by at most that.
  std::vector<ChoicePoll> poll(std::chrono::milliseconds wait);
  // Waits up to `wait` until a slot holds some choice or some choice has an event to read
  // (an end before admission included); true then. Consumes nothing. With several choices
  // each is waited on for at most kChoiceWait in turn.
  bool wait_started(std::chrono::milliseconds wait);
  // A slot took some choice.
  bool admitted() const;
  // Stops every choice (client gone, or one choice failed). Idempotent.
  void cancel();
  // Every choice has finished (done, failed or cancelled).
  bool finished() const;
  int size() const { return static_cast<int>(choices_.size()); }
  const Generation& choice(int index) const { return *choices_[index]; }
  // The results of every choice, in index order; valid once finished().
  std::vector<const GenerationResult*> results() const;
  // The first choice (in index order) that ended with an engine error, or null.
  const GenerationResult* first_error() const;

  static constexpr std::chrono::milliseconds kChoiceWait{10};

 private:
  std::vector<std::unique_ptr<Generation>> choices_;
};

}  // namespace gs::server
