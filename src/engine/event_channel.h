// The per-request queue of stream events between the scheduler thread and the one thread
// that consumes a request, plus the request's cancellation flag.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "engine/engine.h"

namespace gs {

class EventChannel {
 public:
  // Queues an event; consecutive token events merge so a slow reader gets them in one.
  // Events pushed after kDone/kError are dropped.
  void push(StreamEvent event);
  // Waits up to `timeout` for the next event; false on timeout.
  bool pop(StreamEvent* event, std::chrono::milliseconds timeout);

  // The scheduler started the request's sequence in a slot (before its first token event).
  void mark_admitted();
  bool admitted() const { return admitted_.load(std::memory_order_acquire); }
  // Waits up to `timeout` until admitted or an event is queued; true then.
  bool wait_started(std::chrono::milliseconds timeout);

  void request_cancel() { cancel_requested_.store(true, std::memory_order_relaxed); }
  bool cancel_requested() const { return cancel_requested_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
  bool closed_ = false;  // a final event was pushed
  std::atomic<bool> admitted_{false};  // set under mu_ (wait_started's predicate)
  std::atomic<bool> cancel_requested_{false};
};

// The RequestStream handed to the caller: reads the channel; cancel() sets the flag and
// wakes the scheduler. Destroying the stream cancels the request.
class ChannelStream final : public RequestStream {
 public:
  ChannelStream(std::shared_ptr<EventChannel> channel, std::function<void()> wake)
      : channel_(std::move(channel)), wake_(std::move(wake)) {}
  ~ChannelStream() override { cancel(); }

  bool next(StreamEvent* event, std::chrono::milliseconds timeout) override {
    return channel_->pop(event, timeout);
  }
  void cancel() override {
    if (channel_->cancel_requested()) return;
    channel_->request_cancel();
    if (wake_) wake_();
  }
  bool wait_started(std::chrono::milliseconds timeout) override { return channel_->wait_started(timeout); }
  bool admitted() const override { return channel_->admitted(); }

 private:
  std::shared_ptr<EventChannel> channel_;
  std::function<void()> wake_;
};

}  // namespace gs
