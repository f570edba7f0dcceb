// Admission: a response's requests are queued all or none (Engine::submit_all), and a waiting
// request whose client went away holds no place in the queue, though the loop, inside a step,
// has not seen it go yet.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "engine/fake_slot_runner.h"
#include "engine/scheduler.h"

namespace gs {
namespace {

using test::FakeSlotRunner;
using namespace std::chrono_literals;

GenerationRequest request_of(int n_prompt, int32_t max_tokens) {
  GenerationRequest r;
  for (int i = 0; i < n_prompt; ++i) r.prompt.push_back(10 + i);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

// The end of a stream: its finish reason, or nullopt on an error or no end within 20 s.
std::optional<FinishReason> finish_of(RequestStream& stream) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    StreamEvent ev;
    if (!stream.next(&ev, 100ms)) continue;
    if (ev.kind == StreamEvent::Kind::kDone) return ev.finish;
    if (ev.kind == StreamEvent::Kind::kError) return std::nullopt;
  }
  return std::nullopt;
}

// One slot, one place in the queue, and a loop held inside its first step until release().
struct HeldLoop {
  HeldLoop() {
    FakeSlotRunner::Options o;
    o.n_slots = 1;
    o.on_step = [this](int64_t) {
      in_step = true;
      while (!released) std::this_thread::yield();
    };
    SchedulerOptions so;
    so.queue_size = 1;
    engine = std::make_unique<Scheduler>(std::make_unique<FakeSlotRunner>(std::move(o)), so);
  }
  ~HeldLoop() { release(); }
  // Submits the request that takes the slot and waits until the loop is inside its step.
  std::unique_ptr<RequestStream> start_running() {
    auto running = engine->submit(request_of(5, 3));
    EXPECT_TRUE(running.ok());
    while (!in_step) std::this_thread::yield();
    return running.ok() ? std::move(*running) : nullptr;
  }
  void release() { released = true; }
  std::atomic<bool> in_step{false};
  std::atomic<bool> released{false};
  std::unique_ptr<Scheduler> engine;
};

TEST(SchedulerAdmission, ACancelledWaitingRequestHoldsNoPlace) {
  HeldLoop h;
  auto running = h.start_running();
  auto gone = h.engine->submit(request_of(4, 2));
  ASSERT_TRUE(gone.ok());
  (*gone)->cancel();  // the client went away while it waited
  // The queue's one place is free again before the loop looks at the queue.
  auto next = h.engine->submit(request_of(6, 2));
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(finish_of(**gone), FinishReason::kCancelled);  // its end came at once
  EXPECT_EQ(h.engine->metrics().requests_cancelled_total, 1u);
  h.release();
  EXPECT_EQ(finish_of(*running), FinishReason::kLength);
  EXPECT_EQ(finish_of(**next), FinishReason::kLength);
}

TEST(SchedulerAdmission, SubmitAllQueuesEveryRequestOrNone) {
  HeldLoop h;
  auto running = h.start_running();
  std::vector<GenerationRequest> two{request_of(4, 2), request_of(4, 2)};
  auto refused = h.engine->submit_all(two);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("the request's 2 choices (n) need 2, one each"), std::string::npos)
      << refused.status().to_string();
  // Nothing of it was queued, not even for a moment: the one place is still there.
  EngineMetrics m = h.engine->metrics();
  EXPECT_EQ(m.requests_total, 1u);
  EXPECT_EQ(m.requests_cancelled_total, 0u);
  EXPECT_EQ(m.requests_rejected_total, 2u);
  auto one = h.engine->submit_all({request_of(3, 2)});
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_EQ(one->size(), 1u);
  // An empty set and a set with one bad request are refused whole too.
  EXPECT_EQ(h.engine->submit_all({}).status().code(), StatusCode::kInvalidArgument);
  h.release();
  EXPECT_EQ(finish_of(*running), FinishReason::kLength);
  EXPECT_EQ(finish_of(*one->front()), FinishReason::kLength);
  // With the slot and the place free, both fit, in order.
  auto both = h.engine->submit_all(two);
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  for (auto& s : *both) EXPECT_EQ(finish_of(*s), FinishReason::kLength);
  std::vector<GenerationRequest> one_bad{request_of(3, 2), request_of(0, 2)};
  EXPECT_EQ(h.engine->submit_all(one_bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.engine->metrics().requests_total, 4u);
}

}  // namespace
}  // namespace gs
