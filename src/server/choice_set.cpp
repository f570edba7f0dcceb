// The n choices of one response, run as n engine requests.
#include "server/choice_set.h"

#include <algorithm>
#include <atomic>

namespace gs::server {

GenerationPlan choice_plan(const GenerationPlan& plan, int index) {
  GenerationPlan p = plan;
  if (p.request.sampling.has_seed) p.request.sampling.seed += static_cast<uint64_t>(index);
  return p;
}

ChoiceSet::ChoiceSet(std::shared_ptr<const text::Tokenizer> tokenizer, const GenerationPlan& plan, int n) {
  n = std::max(n, 1);
  // The engine tells the choices of one response by this id (a drain keeps the waiting
  // choices of a response that has started); 0 is a request on its own.
  static std::atomic<uint64_t> next_response_id{1};
  const uint64_t response_id = n > 1 ? next_response_id.fetch_add(1) : 0;
  choices_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    GenerationPlan p = choice_plan(plan, i);
    p.request.response_id = response_id;
    p.request.response_choices = n;
    choices_.push_back(std::make_unique<Generation>(tokenizer, std::move(p)));
  }
}

Status ChoiceSet::start(Engine& engine) {
  std::vector<GenerationRequest> requests;
  requests.reserve(choices_.size());
  for (const auto& choice : choices_) requests.push_back(choice->request());
  GS_ASSIGN_OR_RETURN(auto streams, engine.submit_all(std::move(requests)));
  for (size_t i = 0; i < choices_.size(); ++i) choices_[i]->attach(std::move(streams[i]));
  return {};
}

std::vector<ChoicePoll> ChoiceSet::poll(std::chrono::milliseconds wait) {
  std::vector<ChoicePoll> out;
  auto sweep = [&](int waiter, std::chrono::milliseconds waiter_wait) {
    for (int i = 0; i < size(); ++i) {
      if (choices_[i]->finished()) continue;
      PollResult r = choices_[i]->poll(i == waiter ? waiter_wait : std::chrono::milliseconds(0));
      if (r.finished || r.got_event || !r.deltas.empty() || !r.tokens.empty()) out.push_back({i, std::move(r)});
    }
  };
  if (size() == 1) {
    sweep(0, wait);
    return out;
  }
  sweep(-1, std::chrono::milliseconds(0));
  if (!out.empty() || finished()) return out;
  // Nothing ready: wait on the first unfinished choice, then take what the others have.
  int waiter = 0;
  while (choices_[waiter]->finished()) ++waiter;
  sweep(waiter, std::min(wait, kChoiceWait));
  return out;
}

bool ChoiceSet::wait_started(std::chrono::milliseconds wait) {
  if (size() == 1) return choices_[0]->wait_started(wait);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    for (auto& c : choices_) {
      if (c->wait_started(std::chrono::milliseconds(0))) return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (choices_[0]->wait_started(std::min(left, kChoiceWait))) return true;
  }
}

bool ChoiceSet::admitted() const {
  return std::any_of(choices_.begin(), choices_.end(), [](const auto& c) { return c->admitted(); });
}

void ChoiceSet::cancel() {
  for (auto& c : choices_) c->cancel();
}

bool ChoiceSet::finished() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const auto& c) { return c->finished(); });
}

std::vector<const GenerationResult*> ChoiceSet::results() const {
  std::vector<const GenerationResult*> out;
  for (const auto& c : choices_) out.push_back(&c->result());
  return out;
}

const GenerationResult* ChoiceSet::first_error() const {
  for (const auto& c : choices_) {
    if (c->finished() && c->result().error) return &c->result();
  }
  return nullptr;
}

}  // namespace gs::server
