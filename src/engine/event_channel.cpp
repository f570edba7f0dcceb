// The per-request event queue between the scheduler and the request's reader.
#include "engine/event_channel.h"

namespace gs {

void EventChannel::push(StreamEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (event.kind != StreamEvent::Kind::kTokens) closed_ = true;
    if (event.kind == StreamEvent::Kind::kTokens && !events_.empty() &&
        events_.back().kind == StreamEvent::Kind::kTokens) {
      auto& tokens = events_.back().tokens;
      tokens.insert(tokens.end(), std::make_move_iterator(event.tokens.begin()),
                    std::make_move_iterator(event.tokens.end()));
    } else {
      events_.push_back(std::move(event));
    }
  }
  cv_.notify_all();
}

void EventChannel::mark_admitted() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    admitted_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

bool EventChannel::wait_started(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return admitted_.load(std::memory_order_relaxed) || !events_.empty(); });
}

bool EventChannel::pop(StreamEvent* event, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

}  // namespace gs
