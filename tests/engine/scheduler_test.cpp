// Scheduler tests on a fake model: admission, continuous batching, stopping, context limits,
// queue limits, cancellation, failures, speculation counters, shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <string>
#include <thread>

#include "engine/fake_slot_runner.h"
#include "engine/scheduler.h"
#include "text/json_grammar.h"

namespace gs {
namespace {

using test::FakeSlotRunner;
using namespace std::chrono_literals;

struct Collected {
  std::vector<int32_t> tokens;
  std::vector<GeneratedToken> full;
  bool done = false;
  bool error = false;
  Status status;
  FinishReason finish = FinishReason::kError;
  Usage usage;
};

Collected collect(RequestStream& stream, std::chrono::milliseconds limit = 20s) {
  Collected c;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    StreamEvent ev;
    if (!stream.next(&ev, 100ms)) continue;
    switch (ev.kind) {
      case StreamEvent::Kind::kTokens:
        for (const auto& t : ev.tokens) {
          c.tokens.push_back(t.id);
          c.full.push_back(t);
        }
        break;
      case StreamEvent::Kind::kDone:
        c.done = true;
        c.finish = ev.finish;
        c.usage = ev.usage;
        return c;
      case StreamEvent::Kind::kError:
        c.error = true;
        c.status = ev.error;
        return c;
    }
  }
  ADD_FAILURE() << "stream did not end in time";
  return c;
}

GenerationRequest make_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

std::vector<int32_t> prompt_of(int n, int seed = 0) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(10 + (i * 7 + seed * 13) % 80);
  return p;
}

struct Fixture {
  explicit Fixture(FakeSlotRunner::Options o, SchedulerOptions so = {}) {
    auto r = std::make_unique<FakeSlotRunner>(std::move(o));
    runner = r.get();
    engine = std::make_unique<Scheduler>(std::move(r), so);
  }
  FakeSlotRunner* runner = nullptr;
  std::unique_ptr<Scheduler> engine;
};

TEST(Scheduler, GeneratesMaxTokensThenLength) {
  Fixture f({});
  auto p = prompt_of(12);
  auto stream = f.engine->submit(make_request(p, 20));
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  Collected c = collect(**stream);
  ASSERT_TRUE(c.done);
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ(c.tokens, f.runner->expected(p, 20));
  EXPECT_EQ(c.usage.prompt_tokens, 12);
  EXPECT_EQ(c.usage.completion_tokens, 20);
  EngineMetrics m = f.engine->metrics();
  EXPECT_EQ(m.requests_total, 1u);
  EXPECT_EQ(m.prompt_tokens_total, 12u);
  EXPECT_EQ(m.generated_tokens_total, 20u);
  EXPECT_EQ(m.prefill_tokens_total, 12u);
}

TEST(Scheduler, StopsAtEndOfGenerationWithoutEmittingIt) {
  FakeSlotRunner::Options o;
  o.next = [](const std::vector<int32_t>& h, size_t) { return h.size() >= 15 ? 1 : 20 + static_cast<int32_t>(h.size()); };
  Fixture f(o);
  auto stream = f.engine->submit(make_request(prompt_of(10), 100));
  ASSERT_TRUE(stream.ok());
  Collected c = collect(**stream);
  ASSERT_TRUE(c.done);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.tokens, (std::vector<int32_t>{30, 31, 32, 33, 34}));
  EXPECT_EQ(c.usage.completion_tokens, 6);  // the end-of-generation token was generated too
}

TEST(Scheduler, ExtraEndOfGenerationTokens) {
  FakeSlotRunner::Options o;
  o.next = [](const std::vector<int32_t>& h, size_t) { return 20 + static_cast<int32_t>(h.size()); };
  Fixture f(o);
  auto r = make_request(prompt_of(10), 100);
  r.extra_eog = {33};
  auto stream = f.engine->submit(r);
  ASSERT_TRUE(stream.ok());
  Collected c = collect(**stream);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.tokens, (std::vector<int32_t>{30, 31, 32}));
}

// vLLM's stop_token_ids under ignore_eos: the model's end tokens are generated past, the
// request's own still end it (before, ignore_eog ignored both).
TEST(Scheduler, ExtraEndTokensEndARequestThatIgnoresTheModelsOwn) {
  FakeSlotRunner::Options o;
  o.next = [](const std::vector<int32_t>& h, size_t) { return 20 + static_cast<int32_t>(h.size()); };
  o.eog = {31};
  Fixture f(o);
  auto r = make_request(prompt_of(10), 100);
  r.ignore_eog = true;
  r.extra_eog = {34};
  auto stream = f.engine->submit(r);
  ASSERT_TRUE(stream.ok());
  Collected c = collect(**stream);
  EXPECT_EQ(c.finish, FinishReason::kStop);
  EXPECT_EQ(c.tokens, (std::vector<int32_t>{30, 31, 32, 33}));
  EXPECT_EQ(c.usage.completion_tokens, 5);
}

TEST(Scheduler, PromptLongerThanContextIsRejectedWithBothNumbers) {
  FakeSlotRunner::Options o;
  o.n_ctx = 64;
  Fixture f(o);
  for (int n : {64, 65, 1000}) {
    auto stream = f.engine->submit(make_request(prompt_of(n), 4));
    ASSERT_FALSE(stream.ok());
    EXPECT_EQ(stream.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(stream.status().message().find(std::to_string(n)), std::string::npos);
    EXPECT_NE(stream.status().message().find("64"), std::string::npos);
  }
  EXPECT_EQ(f.engine->metrics().requests_rejected_total, 3u);
  EXPECT_EQ(f.runner->n_steps(), 0);  // nothing was prefilled
}

// max_tokens 0 (llama-server's n_predict 0): the prompt is prefilled and kept in the slot's
// cache, no token comes out, the request ends with kLength; the next request with that prompt
// reuses all of it but its last token.
TEST(Scheduler, PromptOnlyRequestGeneratesNothingAndKeepsThePrompt) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.reuse_prefix = true;
  Fixture f(o);
  auto p = prompt_of(30);
  auto stream = f.engine->submit(make_request(p, 0));
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  Collected c = collect(**stream);
  ASSERT_TRUE(c.done);
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_TRUE(c.tokens.empty());
  EXPECT_EQ(c.usage.prompt_tokens, 30);
  EXPECT_EQ(c.usage.completion_tokens, 0);
  EngineMetrics m = f.engine->metrics();
  EXPECT_EQ(m.generated_tokens_total, 0u);
  EXPECT_EQ(m.prefill_tokens_total, 30u);
  auto again = f.engine->submit(make_request(p, 5));
  ASSERT_TRUE(again.ok());
  Collected d = collect(**again);
  ASSERT_TRUE(d.done);
  EXPECT_EQ(d.usage.cached_tokens, 29);
  EXPECT_EQ(d.tokens, f.runner->expected(p, 5));
}

TEST(Scheduler, BadRequestsAreRejected) {
  Fixture f({});
  EXPECT_EQ(f.engine->submit(make_request({}, 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.engine->submit(make_request({5, 100}, 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.engine->submit(make_request({5, -1}, 4)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.engine->submit(make_request({5}, -7)).status().code(), StatusCode::kInvalidArgument);
  auto r = make_request({5}, 3);
  r.n_logprobs = 21;
  EXPECT_EQ(f.engine->submit(r).status().code(), StatusCode::kInvalidArgument);
}

TEST(Scheduler, GenerationStopsAtTheContext) {
  FakeSlotRunner::Options o;
  o.n_ctx = 40;
  Fixture f(o);
  auto p = prompt_of(30);
  auto stream = f.engine->submit(make_request(p, -1));
  ASSERT_TRUE(stream.ok());
  Collected c = collect(**stream);
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EXPECT_EQ(c.tokens.size(), 10u);
  EXPECT_EQ(c.tokens, f.runner->expected(p, 10));
  // A prompt one short of the context still gets one token.
  auto s2 = f.engine->submit(make_request(prompt_of(39), -1));
  ASSERT_TRUE(s2.ok());
  Collected c2 = collect(**s2);
  EXPECT_EQ(c2.finish, FinishReason::kLength);
  EXPECT_EQ(c2.tokens.size(), 1u);
}

TEST(Scheduler, LongPromptIsPrefilledInChunksWithinTheBatchBudget) {
  FakeSlotRunner::Options o;
  o.max_batch_tokens = 16;
  Fixture f(o);
  auto p = prompt_of(100);
  auto stream = f.engine->submit(make_request(p, 3));
  ASSERT_TRUE(stream.ok());
  Collected c = collect(**stream);
  EXPECT_EQ(c.tokens, f.runner->expected(p, 3));
  int64_t prefill = 0;
  for (const auto& s : f.runner->steps()) {
    EXPECT_LE(s.prefill_rows + s.max_decode_tokens, 16);
    prefill += s.prefill_rows;
  }
  EXPECT_EQ(prefill, 100);
}

TEST(Scheduler, ManySequencesBatchTogetherAndMatchTheirSoloOutput) {
  FakeSlotRunner::Options o;
  o.n_slots = 4;
  o.max_batch_tokens = 24;
  o.step_delay = 1ms;
  Fixture f(o);
  std::vector<std::unique_ptr<RequestStream>> streams;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    prompts.push_back(prompt_of(5 + i * 9, i));
    auto s = f.engine->submit(make_request(prompts.back(), 12 + i));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(std::move(*s));
  }
  for (int i = 0; i < 8; ++i) {
    Collected c = collect(*streams[i]);
    ASSERT_TRUE(c.done);
    EXPECT_EQ(c.finish, FinishReason::kLength);
    EXPECT_EQ(c.tokens, f.runner->expected(prompts[i], 12 + i)) << "request " << i;
  }
  bool mixed = false;
  int64_t max_decode_seqs = 0;
  for (const auto& s : f.runner->steps()) {
    mixed = mixed || (s.prefill_rows > 0 && s.decode_seqs > 0);
    max_decode_seqs = std::max(max_decode_seqs, s.decode_seqs);
    EXPECT_LE(s.decode_seqs, 4);
  }
  EXPECT_TRUE(mixed) << "no step carried prefill and decode rows together";
  EXPECT_GE(max_decode_seqs, 2);
  EXPECT_EQ(f.runner->slots_in_use(), 0);
  EXPECT_EQ(f.engine->metrics().busy_slots, 0);
}

// A stream with a long max_tokens (the chat default is 4096) is charged the rows it can
// use in a step, not its whole allowance: a second request is prefilled and decodes beside
// it at once (it waited until the first was within max_batch_tokens of its end).
TEST(Scheduler, ALongStreamDoesNotTakeTheWholeBatchBudget) {
  for (const bool drafter : {false, true}) {
    FakeSlotRunner::Options o;
    o.n_slots = 2;
    o.max_batch_tokens = 16;
    o.has_drafter = drafter;
    o.draft_max = drafter ? 3 : 0;
    o.step_delay = 1ms;
    Fixture f(o);
    auto a = f.engine->submit(make_request(prompt_of(5, 1), 200));
    ASSERT_TRUE(a.ok());
    StreamEvent ev;
    ASSERT_TRUE((*a)->next(&ev, 5s));  // a decodes
    auto pb = prompt_of(20, 2);
    auto b = f.engine->submit(make_request(pb, 200));
    ASSERT_TRUE(b.ok());
    Collected cb = collect(**b);
    Collected ca = collect(**a);
    ASSERT_TRUE(ca.done && cb.done);
    EXPECT_EQ(cb.tokens, f.runner->expected(pb, 200));
    int64_t together = 0;
    for (const auto& s : f.runner->steps()) {
      together += s.decode_seqs == 2 ? 1 : 0;
      EXPECT_LE(s.prefill_rows + s.decode_seqs * s.max_decode_tokens, 16);
    }
    // b runs beside a for most of its 200 tokens (3 a step with the drafter).
    EXPECT_GE(together, drafter ? 40 : 150) << "drafter " << drafter;
  }
}

// A short prompt that arrives while a long one is being prefilled is prefilled in the next
// step beside it and answers at once: the long prompt's chunk took every row of every
// step, so the short one waited for the whole long prefill (75 s on the CPU for a
// 6000-token prompt before a 4-token request's first token).
TEST(Scheduler, AShortPromptIsNotQueuedBehindALongPrefill) {
  FakeSlotRunner::Options o;
  o.n_slots = 2;
  o.n_ctx = 4096;
  o.max_batch_tokens = 16;
  o.step_delay = 1ms;
  Fixture f(o);
  auto long_prompt = prompt_of(2000, 1);  // 125 steps of prefill
  auto a = f.engine->submit(make_request(long_prompt, 2));  // first admitted: slot 0
  ASSERT_TRUE(a.ok());
  while (f.runner->n_steps() < 2) std::this_thread::sleep_for(1ms);
  auto short_prompt = prompt_of(5, 2);
  auto b = f.engine->submit(make_request(short_prompt, 3));  // slot 1
  ASSERT_TRUE(b.ok());
  Collected cb = collect(**b);
  ASSERT_TRUE(cb.done);
  EXPECT_EQ(cb.tokens, f.runner->expected(short_prompt, 3));
  StreamEvent ev;
  const bool long_answered = (*a)->next(&ev, 0ms);
  EXPECT_FALSE(long_answered) << "the short request ended only after the long prompt's prefill";
  std::vector<int32_t> long_tokens;
  if (long_answered && ev.kind == StreamEvent::Kind::kTokens) {
    for (const auto& t : ev.tokens) long_tokens.push_back(t.id);
  }
  Collected ca = collect(**a);
  ASSERT_TRUE(ca.done);
  long_tokens.insert(long_tokens.end(), ca.tokens.begin(), ca.tokens.end());
  EXPECT_EQ(long_tokens, f.runner->expected(long_prompt, 2));
  const auto steps = f.runner->steps();
  int64_t short_first = -1, long_last_prefill = -1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    EXPECT_LE(s.prefill_rows + s.decode_seqs * s.max_decode_tokens, 16);
    for (int32_t slot : s.slots) {
      const bool decoded = std::find(s.decode_slots.begin(), s.decode_slots.end(), slot) != s.decode_slots.end();
      if (slot == 1 && short_first < 0) short_first = static_cast<int64_t>(i);
      if (slot == 0 && !decoded) long_last_prefill = static_cast<int64_t>(i);
    }
  }
  ASSERT_GE(short_first, 0);
  EXPECT_LT(short_first, long_last_prefill - 100) << "the short prompt waited for the long prefill";
}

// While a stream decodes, a long prompt's prefill steps are followed by decode-only steps
// that take about kDecodeTimeShare of their time: deep in a long prompt a chunk step is long
// (~2 s at 1M positions on the H200), and the decoding stream got one token a chunk. Here a
// chunk step takes ~16 ms (1 ms a prefill row) and a decode-only step ~1 ms, and the check is
// on the steps' own measured time, so a loaded machine's longer sleeps move both sides.
TEST(Scheduler, DecodingStreamsGetDecodeOnlyStepsDuringALongPrefill) {
  FakeSlotRunner::Options o;
  o.n_slots = 2;
  o.n_ctx = 8192;
  o.max_batch_tokens = 16;
  o.step_delay = 1ms;
  o.prefill_row_delay = 1ms;
  Fixture f(o);
  auto a = f.engine->submit(make_request(prompt_of(5, 1), 4000));
  ASSERT_TRUE(a.ok());
  StreamEvent ev;
  ASSERT_TRUE((*a)->next(&ev, 5s));  // a decodes
  const size_t steps_before = static_cast<size_t>(f.runner->n_steps());
  auto pb = prompt_of(2400, 2);  // 160 chunk steps
  auto b = f.engine->submit(make_request(pb, 2));
  ASSERT_TRUE(b.ok());
  Collected cb = collect(**b, 60s);
  ASSERT_TRUE(cb.done);
  EXPECT_EQ(cb.tokens, f.runner->expected(pb, 2));
  (*a).reset();  // cancels a
  const auto steps = f.runner->steps();
  int64_t first = -1, last = -1;
  for (size_t i = steps_before; i < steps.size(); ++i) {
    if (steps[i].prefill_rows > 0 && first < 0) first = static_cast<int64_t>(i);
    if (steps[i].prefill_rows > 0) last = static_cast<int64_t>(i);
  }
  ASSERT_GE(first, 0);
  int64_t with_prefill = 0, decode_only = 0;
  double chunk_s = 0, decode_only_s = 0;
  for (int64_t i = first; i <= last; ++i) {
    const auto& s = steps[static_cast<size_t>(i)];
    EXPECT_EQ(s.decode_seqs, 1) << "step " << i;  // a took part in every step
    (s.prefill_rows > 0 ? with_prefill : decode_only) += 1;
    (s.prefill_rows > 0 ? chunk_s : decode_only_s) += s.seconds;
  }
  // A quarter of the chunk steps' time, give or take one decode-only step's overshoot a
  // chunk (a step ends after the debt is paid) and the sleeps' jitter.
  EXPECT_GE(decode_only, with_prefill) << decode_only_s << " s against " << chunk_s << " s";
  EXPECT_GE(decode_only_s, 0.1 * chunk_s) << decode_only << " decode-only steps, " << with_prefill << " with prefill";
  EXPECT_LE(decode_only_s, 0.6 * chunk_s) << decode_only << " decode-only steps, " << with_prefill << " with prefill";
}

// Several requests (a response's choices) are queued all or none, and the refusal says how
// many places they need and how many are free.
TEST(Scheduler, SubmitAllTakesAllOrNone) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.step_delay = 5ms;
  SchedulerOptions so;
  so.queue_size = 2;
  Fixture f(o, so);
  auto a = f.engine->submit(make_request(prompt_of(5), 200));
  ASSERT_TRUE(a.ok());
  std::vector<GenerationRequest> three;
  for (int i = 0; i < 3; ++i) three.push_back(make_request(prompt_of(5), 2));
  auto refused = f.engine->submit_all(three);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("2 of 3 places are free, the request's 3 choices (n) need 3"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(f.engine->metrics().requests_total, 1u);
  three.pop_back();
  auto two = f.engine->submit_all(three);
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  ASSERT_EQ(two->size(), 2u);
  (*a)->cancel();
  EXPECT_TRUE(collect(**a).done);
  for (auto& stream : *two) EXPECT_EQ(collect(*stream).finish, FinishReason::kLength);
}

TEST(Scheduler, QueueFullIsResourceExhausted) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.step_delay = 5ms;
  SchedulerOptions so;
  so.queue_size = 1;
  Fixture f(o, so);
  auto a = f.engine->submit(make_request(prompt_of(5), 200));
  auto b = f.engine->submit(make_request(prompt_of(5), 200));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  auto c = f.engine->submit(make_request(prompt_of(5), 200));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  (*a)->cancel();
  (*b)->cancel();
  EXPECT_TRUE(collect(**a).done);
  EXPECT_TRUE(collect(**b).done);
  // Room again.
  auto d = f.engine->submit(make_request(prompt_of(5), 2));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(collect(**d).finish, FinishReason::kLength);
}

// Requests that wait while every slot is busy are admitted when the running ones end, also
// when they all end in one step (a response's n choices, or requests of one length): the
// loop slept with nothing active and never looked at the queue again, so they waited until
// some other request came.
TEST(Scheduler, QueuedRequestsRunWhenEveryRunningOneEndsInTheSameStep) {
  FakeSlotRunner::Options o;
  o.n_slots = 2;
  SchedulerOptions so;
  so.queue_size = 3;
  Fixture f(o, so);
  std::vector<std::unique_ptr<RequestStream>> streams;
  for (int i = 0; i < 5; ++i) {
    auto s = f.engine->submit(make_request(prompt_of(5), 3));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    streams.push_back(std::move(*s));
  }
  for (auto& s : streams) {
    const Collected c = collect(*s, 5s);
    EXPECT_TRUE(c.done);
    EXPECT_EQ(c.finish, FinishReason::kLength);
    EXPECT_EQ(c.tokens.size(), 3u);
  }
}

TEST(Scheduler, CancelFreesTheSlotWithinAStepAndSparesOthers) {
  FakeSlotRunner::Options o;
  o.n_slots = 2;
  o.n_ctx = 100000;
  // The victim is cancelled from inside step 5 (as a client thread would while the step
  // runs); its slot must be gone from every step after the next one starts.
  constexpr int64_t kCancelAt = 5;
  std::atomic<RequestStream*> victim_stream{nullptr};
  o.on_step = [&](int64_t index) {
    if (index == kCancelAt) {
      while (!victim_stream.load()) std::this_thread::yield();
      victim_stream.load()->cancel();
    }
  };
  Fixture f(o);
  auto other_prompt = prompt_of(7, 3);
  auto victim = f.engine->submit(make_request(prompt_of(9), 50000));  // first admitted: slot 0
  ASSERT_TRUE(victim.ok());
  auto other = f.engine->submit(make_request(other_prompt, 300));
  ASSERT_TRUE(other.ok());
  victim_stream = victim->get();
  Collected cv = collect(**victim);
  ASSERT_TRUE(cv.done);
  EXPECT_EQ(cv.finish, FinishReason::kCancelled);
  // The freed slot takes a new request at once; the other request is untouched.
  auto next = f.engine->submit(make_request(prompt_of(4), 5));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(collect(**next).finish, FinishReason::kLength);
  Collected co = collect(**other);
  EXPECT_EQ(co.finish, FinishReason::kLength);
  EXPECT_EQ(co.tokens, f.runner->expected(other_prompt, 300));
  EXPECT_EQ(f.engine->metrics().requests_cancelled_total, 1u);
  const auto steps = f.runner->steps();
  ASSERT_GT(steps.size(), static_cast<size_t>(kCancelAt + 1));
  bool victim_ran_before = false;
  for (size_t i = 0; i <= static_cast<size_t>(kCancelAt); ++i) {
    for (int32_t slot : steps[i].slots) victim_ran_before = victim_ran_before || slot == 0;
  }
  EXPECT_TRUE(victim_ran_before);
  // The next step may already prefill the new request in slot 0, but a decode of slot 0
  // there could only be the victim's.
  for (int32_t slot : steps[kCancelAt + 1].decode_slots) EXPECT_NE(slot, 0) << "the victim ran a step after its cancel";
}

TEST(Scheduler, DroppingTheStreamCancels) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.n_ctx = 100000;
  o.step_delay = 1ms;
  Fixture f(o);
  {
    auto s = f.engine->submit(make_request(prompt_of(9), 50000));
    ASSERT_TRUE(s.ok());
  }
  auto next = f.engine->submit(make_request(prompt_of(4), 5));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(collect(**next, 5s).finish, FinishReason::kLength);
}

TEST(Scheduler, CancelWhileQueued) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.n_ctx = 100000;
  o.step_delay = 2ms;
  Fixture f(o);
  auto running = f.engine->submit(make_request(prompt_of(9), 50000));
  auto queued = f.engine->submit(make_request(prompt_of(9), 5));
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE(queued.ok());
  (*queued)->cancel();
  Collected c = collect(**queued, 5s);
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_TRUE(c.tokens.empty());
  (*running)->cancel();
  EXPECT_EQ(collect(**running).finish, FinishReason::kCancelled);
}

TEST(Scheduler, StepFailureFailsThatBatchOnlyAndTheEngineGoesOn) {
  FakeSlotRunner::Options o;
  Fixture f(o);
  f.runner->fail_next_steps(1);
  auto a = f.engine->submit(make_request(prompt_of(5), 4));
  ASSERT_TRUE(a.ok());
  Collected ca = collect(**a);
  EXPECT_TRUE(ca.error);
  EXPECT_EQ(ca.status.code(), StatusCode::kInternal);
  auto b = f.engine->submit(make_request(prompt_of(5), 4));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(collect(**b).finish, FinishReason::kLength);
  EXPECT_EQ(f.runner->slots_in_use(), 0);
  EXPECT_EQ(f.engine->metrics().requests_failed_total, 1u);
}

// A slot's own error (SlotOutput::error: its request's bans leave nothing to sample) fails
// that sequence with the error, after the tokens it had; the other sequence of the same steps
// runs to its end, and the slot is free again.
TEST(Scheduler, ASlotErrorFailsThatSequenceAlone) {
  FakeSlotRunner::Options o;
  o.step_delay = 1ms;
  Fixture f(o);
  f.runner->fail_decodes_of(99, 3, Status(StatusCode::kInvalidArgument, "logit_bias bans every token"));
  std::vector<int32_t> bad = prompt_of(5);
  bad[0] = 99;
  const std::vector<int32_t> good = prompt_of(6);
  auto a = f.engine->submit(make_request(bad, 20));
  auto b = f.engine->submit(make_request(good, 20));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  Collected ca = collect(**a);
  Collected cb = collect(**b);
  EXPECT_TRUE(ca.error);
  EXPECT_EQ(ca.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ca.tokens, f.runner->expected(bad, 4));  // 3 in the cache and the pending one
  EXPECT_TRUE(cb.done);
  EXPECT_EQ(cb.finish, FinishReason::kLength);
  EXPECT_EQ(cb.tokens, f.runner->expected(good, 20));
  EXPECT_EQ(f.runner->slots_in_use(), 0);
  EXPECT_EQ(f.engine->metrics().requests_failed_total, 1u);
}

TEST(Scheduler, SpeculationCountsDraftsByPositionAndKeepsTheOutput) {
  FakeSlotRunner::Options o;
  o.has_drafter = true;
  o.draft_max = 4;
  o.accept_per_round = 2;
  Fixture f(o);
  auto p = prompt_of(10);
  auto s = f.engine->submit(make_request(p, 31));
  ASSERT_TRUE(s.ok());
  Collected c = collect(**s);
  EXPECT_EQ(c.tokens, f.runner->expected(p, 31));
  EXPECT_EQ(c.finish, FinishReason::kLength);
  EngineMetrics m = f.engine->metrics();
  // 30 tokens after the first: 9 rounds of 3 (4 drafted, 2 accepted each), then a last
  // round capped by max_tokens at 3 tokens (2 drafted, 2 accepted).
  EXPECT_EQ(m.drafted_total, 38u);
  EXPECT_EQ(m.accepted_total, 20u);
  ASSERT_EQ(m.drafted_by_position.size(), 4u);
  EXPECT_EQ(m.drafted_by_position[0], 10u);
  EXPECT_EQ(m.drafted_by_position[2], 9u);
  EXPECT_EQ(m.accepted_by_position[0], 10u);
  EXPECT_EQ(m.accepted_by_position[1], 10u);
  EXPECT_EQ(m.accepted_by_position[2], 0u);
  EXPECT_EQ(c.usage.drafted_tokens, 38);
  EXPECT_EQ(c.usage.accepted_tokens, 20);
  // Without speculation on request: the same tokens, nothing drafted.
  auto r = make_request(p, 31);
  r.speculative = false;
  auto s2 = f.engine->submit(r);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(collect(**s2).tokens, c.tokens);
  EXPECT_EQ(f.engine->metrics().drafted_total, 38u);
}

TEST(Scheduler, SpeculationNeverOvershootsMaxTokens) {
  FakeSlotRunner::Options o;
  o.has_drafter = true;
  o.draft_max = 4;
  o.accept_per_round = 4;
  Fixture f(o);
  for (int n : {1, 2, 3, 4, 5, 6, 7, 13}) {
    auto p = prompt_of(6, n);
    auto s = f.engine->submit(make_request(p, n));
    ASSERT_TRUE(s.ok());
    Collected c = collect(**s);
    EXPECT_EQ(c.tokens, f.runner->expected(p, n));
    EXPECT_EQ(c.usage.completion_tokens, n);
  }
}

TEST(Scheduler, LogprobsPassThrough) {
  Fixture f({});
  auto r = make_request(prompt_of(5), 3);
  r.n_logprobs = 2;
  auto s = f.engine->submit(r);
  ASSERT_TRUE(s.ok());
  Collected c = collect(**s);
  ASSERT_EQ(c.full.size(), 3u);
  EXPECT_EQ(c.full[0].top.size(), 2u);
}

// Bug-case 24: a reasoning budget ends the thought with the close token after exactly
// `budget` tokens inside it; the model then goes on with the answer.
TEST(Scheduler, ReasoningBudgetForcesTheEndOfTheThought) {
  constexpr int32_t kOpen = 5, kClose = 6;
  FakeSlotRunner::Options o;
  // The model opens a thought and would think forever (token 50) but answers (60) right
  // after a close.
  o.next = [](const std::vector<int32_t>& h, size_t n_prompt) {
    if (h.size() == n_prompt) return kOpen;
    return h.back() == kClose || h.back() == 60 ? 60 : 50;
  };
  for (int32_t budget : {0, 1, 7}) {
    Fixture f(o);
    auto r = make_request(prompt_of(4), 20);
    r.reasoning_budget = budget;
    r.reasoning_open = kOpen;
    r.reasoning_close = kClose;
    auto s = f.engine->submit(r);
    ASSERT_TRUE(s.ok());
    Collected c = collect(**s);
    EXPECT_EQ(c.finish, FinishReason::kLength);
    std::vector<int32_t> want = {kOpen};
    for (int32_t i = 0; i < budget; ++i) want.push_back(50);
    want.push_back(kClose);
    while (want.size() < 20) want.push_back(60);
    EXPECT_EQ(c.tokens, want) << "budget " << budget;
    EXPECT_EQ(f.runner->n_replaced(), 1);
  }
  // No budget: the thought runs to max_tokens.
  Fixture f(o);
  auto r = make_request(prompt_of(4), 10);
  r.reasoning_open = kOpen;
  r.reasoning_close = kClose;
  auto s = f.engine->submit(r);
  ASSERT_TRUE(s.ok());
  Collected c = collect(**s);
  EXPECT_EQ(std::count(c.tokens.begin(), c.tokens.end(), 50), 9);
}

// tool_choice auto's lazy call grammar (decision 0065): a call opener inside a thought ends the
// thought (the output parser reads it so), so a reasoning budget spent by then does not force
// the thought's closer into the call's arguments; without the lazy calls it still does.
TEST(Scheduler, ACallOpenerEndsTheThoughtForTheReasoningBudget) {
  constexpr int32_t kOpen = 5, kClose = 6, kCall = 8;
  FakeSlotRunner::Options o;
  // The model opens a thought, thinks twice (50), opens a call and writes its arguments (70).
  o.next = [](const std::vector<int32_t>& h, size_t n_prompt) {
    const size_t n = h.size() - n_prompt;
    if (n == 0) return kOpen;
    if (n < 3) return 50;
    return n == 3 ? kCall : 70;
  };
  for (const bool lazy : {true, false}) {
    Fixture f(o);
    auto r = make_request(prompt_of(4), 8);
    r.reasoning_budget = 3;
    r.reasoning_open = kOpen;
    r.reasoning_close = kClose;
    r.lazy_calls.on = lazy;
    r.lazy_calls.open_token = kCall;
    auto s = f.engine->submit(r);
    ASSERT_TRUE(s.ok());
    Collected c = collect(**s);
    if (lazy) {
      EXPECT_EQ(c.tokens, (std::vector<int32_t>{kOpen, 50, 50, kCall, 70, 70, 70, 70}));
      EXPECT_EQ(f.runner->n_replaced(), 0);
    } else {
      EXPECT_EQ(c.tokens, (std::vector<int32_t>{kOpen, 50, 50, kCall, kClose, 70, 70, 70}));
      EXPECT_EQ(f.runner->n_replaced(), 1);
    }
  }
}

// A call's closer ends the sequence where no later call may follow (decision 0067): tool_choice
// auto's lazy calls and a forced call's answer (which begins inside its call) without parallel
// calls stop with the closer, the last token; with parallel calls the answer goes on, and a
// closer in the free text before any call ends nothing. Before, one more step ran after the
// closer, only to sample an end, and where the request's logit_bias banned every end that step
// failed the request after its answer was whole.
TEST(Scheduler, TheLastAllowedCallsCloserEndsTheSequence) {
  constexpr int32_t kCall = 8, kCallEnd = 9;
  FakeSlotRunner::Options o;
  // Text (50), a stray closer, the opener, the arguments (70), the closer, then more text (80).
  o.next = [](const std::vector<int32_t>& h, size_t n_prompt) {
    const size_t n = h.size() - n_prompt;
    static constexpr int32_t kScript[] = {50, kCallEnd, kCall, 70, kCallEnd};
    return n < std::size(kScript) ? kScript[n] : 80;
  };
  for (const bool forced : {false, true}) {
    for (const bool more : {false, true}) {
      Fixture f(o);
      auto r = make_request(prompt_of(4), 8);
      ForcedCalls calls;
      calls.on = true;
      calls.open_token = kCall;
      calls.close_token = kCallEnd;
      calls.more_calls = more;
      calls.openers = {"call:f{"};
      (forced ? r.forced_calls : r.lazy_calls) = calls;
      auto s = f.engine->submit(r);
      ASSERT_TRUE(s.ok());
      Collected c = collect(**s);
      const std::string what = std::string(forced ? "forced" : "lazy") + (more ? ", more calls" : "");
      ASSERT_TRUE(c.done) << what;
      if (more) {
        EXPECT_EQ(c.tokens, (std::vector<int32_t>{50, kCallEnd, kCall, 70, kCallEnd, 80, 80, 80})) << what;
        EXPECT_EQ(c.finish, FinishReason::kLength) << what;
      } else if (forced) {
        // The answer begins inside the call: the first closer is its end.
        EXPECT_EQ(c.tokens, (std::vector<int32_t>{50, kCallEnd})) << what;
        EXPECT_EQ(c.finish, FinishReason::kStop) << what;
      } else {
        EXPECT_EQ(c.tokens, (std::vector<int32_t>{50, kCallEnd, kCall, 70, kCallEnd})) << what;
        EXPECT_EQ(c.finish, FinishReason::kStop) << what;
      }
    }
  }
}

// Structured output with a thought first (decision 0027 §4): an end of generation, or a turn
// opener, sampled inside the thought while the value is owed becomes the thought's closer, and
// the value follows; it ended the request with "stop" and no value (a break test). After the
// thought an end of generation ends the request as usual; without a grammar nothing changes.
TEST(Scheduler, AnEndInsideTheThoughtOfAStructuredAnswerClosesTheThought) {
  constexpr int32_t kOpen = 5, kClose = 6, kTurn = 7, kEog = 1;
  for (int32_t ender : {kEog, kTurn}) {
    FakeSlotRunner::Options o;
    // The model opens a thought, thinks (50), tries to end it (ender) and, once the thought
    // is closed, writes the value (60, 61) and ends.
    o.next = [ender](const std::vector<int32_t>& h, size_t n_prompt) {
      const size_t n = h.size() - n_prompt;
      if (n == 0) return kOpen;
      if (h.back() == kClose) return 60;
      if (h.back() == 60) return 61;
      if (h.back() == 61) return kEog;
      return n < 3 ? 50 : ender;
    };
    for (bool grammar : {true, false}) {
      Fixture f(o);
      auto r = make_request(prompt_of(4), 12);
      if (grammar) r.json.grammar = text::JsonGrammar::any_object();
      r.json.think_open = kOpen;
      r.json.think_close = kClose;
      r.json.thought_breakers = {kTurn};
      auto s = f.engine->submit(r);
      ASSERT_TRUE(s.ok());
      Collected c = collect(**s);
      if (grammar) {
        EXPECT_EQ(c.finish, FinishReason::kStop) << ender;
        EXPECT_EQ(c.tokens, (std::vector<int32_t>{kOpen, 50, 50, kClose, 60, 61})) << ender;
        EXPECT_EQ(f.runner->n_replaced(), 1) << ender;
      } else if (ender == kEog) {
        EXPECT_EQ(c.tokens, (std::vector<int32_t>{kOpen, 50, 50})) << "no grammar: the end ends it";
        EXPECT_EQ(f.runner->n_replaced(), 0);
      }
    }
  }
}

// Bug-case 46: a prompt that continues an earlier conversation reuses that slot's cache;
// the output is what a fresh start gives.
TEST(Scheduler, PromptPrefixIsReusedFromAFreeSlot) {
  FakeSlotRunner::Options o;
  o.n_slots = 3;
  o.reuse_prefix = true;
  Fixture f(o);
  auto first_prompt = prompt_of(40, 1);
  auto other_prompt = prompt_of(30, 2);
  auto a = f.engine->submit(make_request(first_prompt, 10));
  ASSERT_TRUE(a.ok());
  Collected ca = collect(**a);
  EXPECT_EQ(ca.usage.cached_tokens, 0);
  auto b = f.engine->submit(make_request(other_prompt, 5));  // lands in another slot
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(collect(**b).usage.cached_tokens, 0);
  // The next turn: the first prompt, its answer, and more.
  std::vector<int32_t> next = first_prompt;
  next.insert(next.end(), ca.tokens.begin(), ca.tokens.end());
  for (int i = 0; i < 7; ++i) next.push_back(11 + i);
  const int64_t prefilled_before = static_cast<int64_t>(f.engine->metrics().prefill_tokens_total);
  auto c = f.engine->submit(make_request(next, 12));
  ASSERT_TRUE(c.ok());
  Collected cc = collect(**c);
  // The cache holds the prompt and every answer token but the last (never fed back).
  EXPECT_EQ(cc.usage.cached_tokens, 40 + 10 - 1);
  EXPECT_EQ(cc.tokens, f.runner->expected(next, 12));
  EXPECT_EQ(static_cast<int64_t>(f.engine->metrics().prefill_tokens_total) - prefilled_before,
            static_cast<int64_t>(next.size()) - cc.usage.cached_tokens);
  // The same prompt again: everything but its last token is reused.
  auto d = f.engine->submit(make_request(next, 12));
  ASSERT_TRUE(d.ok());
  Collected cd = collect(**d);
  EXPECT_EQ(cd.usage.cached_tokens, static_cast<int32_t>(next.size()) - 1);
  EXPECT_EQ(cd.tokens, cc.tokens);
}

// reuse_prefix false (llama-server's cache_prompt: false): the whole prompt is computed even
// though a free slot holds its prefix (a prefix computed in a batch with other sequences can
// differ in its last bits from a lone run's). The output is the fresh start's all the same,
// and a later request may reuse again.
TEST(Scheduler, ReusePrefixFalseComputesTheWholePrompt) {
  FakeSlotRunner::Options o;
  o.n_slots = 2;
  o.reuse_prefix = true;
  Fixture f(o);
  const auto prompt = prompt_of(40, 3);
  auto a = f.engine->submit(make_request(prompt, 6));
  ASSERT_TRUE(a.ok());
  const Collected ca = collect(**a);
  GenerationRequest fresh = make_request(prompt, 6);
  fresh.reuse_prefix = false;
  const int64_t prefilled_before = static_cast<int64_t>(f.engine->metrics().prefill_tokens_total);
  auto b = f.engine->submit(std::move(fresh));
  ASSERT_TRUE(b.ok());
  const Collected cb = collect(**b);
  EXPECT_EQ(cb.usage.cached_tokens, 0);
  EXPECT_EQ(static_cast<int64_t>(f.engine->metrics().prefill_tokens_total) - prefilled_before,
            static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(cb.tokens, ca.tokens);
  auto c = f.engine->submit(make_request(prompt, 6));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(collect(**c).usage.cached_tokens, static_cast<int32_t>(prompt.size()) - 1);
}

// Every prompt shares a header (BOS and the turn markup): another conversation's request
// must not take over a slot for those few tokens while free slots are idle, or two
// alternating conversations evict each other's cache every turn (bug-case 46).
TEST(Scheduler, ASharedHeaderDoesNotEvictAnotherConversationsCache) {
  FakeSlotRunner::Options o;
  o.n_slots = 3;
  o.reuse_prefix = true;
  Fixture f(o);
  const std::vector<int32_t> header = {2, 3, 4};
  auto with_header = [&](std::vector<int32_t> body) {
    body.insert(body.begin(), header.begin(), header.end());
    return body;
  };
  std::vector<int32_t> conv_a = with_header(prompt_of(40, 1));
  std::vector<int32_t> conv_b = with_header(prompt_of(30, 2));
  for (int turn = 0; turn < 3; ++turn) {
    for (auto* conv : {&conv_a, &conv_b}) {
      auto r = f.engine->submit(make_request(*conv, 6));
      ASSERT_TRUE(r.ok());
      Collected c = collect(**r);
      ASSERT_TRUE(c.done);
      if (turn > 0) {
        // This conversation's previous prompt and answer but its last token are cached (the
        // prompt ends with that answer and 4 new tokens).
        EXPECT_EQ(c.usage.cached_tokens, static_cast<int32_t>(conv->size()) - 5) << "turn " << turn;
      }
      conv->insert(conv->end(), c.tokens.begin(), c.tokens.end());
      for (int i = 0; i < 4; ++i) conv->push_back(11 + i);
    }
  }
  // A retry of a short prompt still reuses it (it covers the whole prompt).
  auto short_prompt = with_header({50, 51});
  auto first = f.engine->submit(make_request(short_prompt, 30));
  ASSERT_TRUE(first.ok());
  collect(**first);
  auto again = f.engine->submit(make_request(short_prompt, 30));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(collect(**again).usage.cached_tokens, static_cast<int32_t>(short_prompt.size()) - 1);
}

// drain() (the start of the drain after SIGTERM): the waiting request ends at once with
// kUnavailable, new ones are refused, the running one goes on to its end; shutdown() after
// it has nothing left to end.
TEST(Scheduler, DrainEndsWaitingRequestsAndLetsRunningOnesFinish) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.n_ctx = 100000;
  o.step_delay = 2ms;
  Fixture f(o);
  auto running = f.engine->submit(make_request(prompt_of(9), 300));
  auto queued = f.engine->submit(make_request(prompt_of(9), 300));
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE(queued.ok());
  std::this_thread::sleep_for(20ms);
  f.engine->drain();
  EXPECT_EQ(f.engine->metrics().queue_length, 0);
  const auto t0 = std::chrono::steady_clock::now();
  Collected b = collect(**queued, 2s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_TRUE(b.error);
  EXPECT_EQ(b.status.code(), StatusCode::kUnavailable) << b.status.to_string();
  EXPECT_TRUE(b.tokens.empty());
  auto late = f.engine->submit(make_request(prompt_of(3), 3));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kUnavailable);
  Collected a = collect(**running, 10s);
  EXPECT_FALSE(a.error) << a.status.to_string();
  EXPECT_EQ(a.finish, FinishReason::kLength);
  EXPECT_EQ(a.tokens.size(), 300u);
  f.engine->shutdown();
  EXPECT_EQ(f.runner->slots_in_use(), 0);
}

// A response of several choices (OpenAI's n) with one choice in a slot and another still
// waiting runs: the drain keeps the waiting choice, which takes the slot when the first ends,
// so the response finishes within the drain time. A response none of whose choices has started
// is refused as a lone waiting request is.
TEST(Scheduler, DrainKeepsTheWaitingChoicesOfAResponseThatRuns) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.n_ctx = 100000;
  o.step_delay = 1ms;
  Fixture f(o);
  auto choice = [](uint64_t id, int32_t n) {
    GenerationRequest r = make_request(prompt_of(9), 40);
    r.response_id = id;
    r.response_choices = n;
    return r;
  };
  auto first = f.engine->submit(choice(7, 2));
  auto second = f.engine->submit(choice(7, 2));
  auto other_a = f.engine->submit(choice(8, 2));  // neither of response 8's choices started
  auto other_b = f.engine->submit(choice(8, 2));
  ASSERT_TRUE(first.ok() && second.ok() && other_a.ok() && other_b.ok());
  ASSERT_TRUE((*first)->wait_started(2s));
  f.engine->drain();
  EXPECT_EQ(f.engine->metrics().queue_length, 1);
  for (auto* refused : {&other_a, &other_b}) {
    Collected c = collect(***refused, 2s);
    EXPECT_TRUE(c.error);
    EXPECT_EQ(c.status.code(), StatusCode::kUnavailable) << c.status.to_string();
  }
  for (auto* kept : {&first, &second}) {
    Collected c = collect(***kept, 10s);
    EXPECT_FALSE(c.error) << c.status.to_string();
    EXPECT_EQ(c.finish, FinishReason::kLength);
    EXPECT_EQ(c.tokens.size(), 40u);
  }
  f.engine->shutdown();
  EXPECT_EQ(f.runner->slots_in_use(), 0);
}

TEST(Scheduler, ShutdownEndsEveryRequestAndRefusesNewOnes) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.n_ctx = 100000;
  o.step_delay = 1ms;
  Fixture f(o);
  auto running = f.engine->submit(make_request(prompt_of(9), 50000));
  auto queued = f.engine->submit(make_request(prompt_of(9), 50000));
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE(queued.ok());
  std::this_thread::sleep_for(20ms);
  f.engine->shutdown();
  Collected a = collect(**running, 2s);
  Collected b = collect(**queued, 2s);
  // Both end with an error that says why: a running stream that ended "cancelled" was cut
  // off by the HTTP layer without a word.
  for (const Collected* c : {&a, &b}) {
    EXPECT_TRUE(c->error);
    EXPECT_EQ(c->status.code(), StatusCode::kUnavailable) << c->status.to_string();
  }
  auto late = f.engine->submit(make_request(prompt_of(3), 3));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(f.runner->slots_in_use(), 0);
}

// Slot actions (decision 0068) run on the loop thread between steps: an erase drops a free
// slot's kept prompt (the next request is cold), a running slot is refused at once, an id out
// of range is refused, a runner without slot files says so, and after shutdown nothing waits.
TEST(Scheduler, SlotActionsEraseAndRefuse) {
  FakeSlotRunner::Options o;
  o.n_slots = 1;
  o.reuse_prefix = true;
  o.step_delay = std::chrono::milliseconds(2);
  Fixture f(o);
  auto p = prompt_of(30);
  auto first = f.engine->submit(make_request(p, 0));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(collect(**first).done);
  SlotAction erase;
  erase.kind = SlotActionKind::kErase;
  erase.slot = 0;
  Result<SlotActionResult> erased = f.engine->slot_action(erase);
  ASSERT_TRUE(erased.ok()) << erased.status().to_string();
  EXPECT_EQ(erased->n_tokens, 30);
  auto second = f.engine->submit(make_request(p, 2));
  ASSERT_TRUE(second.ok());
  Collected c = collect(**second);
  EXPECT_EQ(c.usage.cached_tokens, 0);
  // A slot that runs a request is refused, not waited for.
  auto busy = f.engine->submit(make_request(p, 200));
  ASSERT_TRUE(busy.ok());
  ASSERT_TRUE((*busy)->wait_started(std::chrono::seconds(10)));
  Result<SlotActionResult> refused = f.engine->slot_action(erase);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status().to_string();
  (*busy)->cancel();
  collect(**busy);
  SlotAction save = erase;
  save.kind = SlotActionKind::kSave;
  save.path = "/nonexistent/x.bin";
  EXPECT_EQ(f.engine->slot_action(save).status().code(), StatusCode::kUnimplemented);
  erase.slot = 1;
  EXPECT_EQ(f.engine->slot_action(erase).status().code(), StatusCode::kInvalidArgument);
  f.engine->shutdown();
  erase.slot = 0;
  EXPECT_EQ(f.engine->slot_action(erase).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gs
