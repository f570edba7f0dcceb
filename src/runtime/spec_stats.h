// Counters of speculative decoding: drafted and accepted tokens, by draft position.
#pragma once

#include <cstdint>
#include <vector>

namespace gs {

struct SpecStats {
  uint64_t rounds = 0;    // verify passes (rounds with at least one draft)
  uint64_t drafted = 0;   // draft tokens proposed
  uint64_t accepted = 0;  // draft tokens the target accepted
  uint64_t emitted = 0;   // tokens produced by those rounds (accepted + correction/bonus)
  std::vector<uint64_t> drafted_by_pos;   // [i]: drafts at position i + 1 of a round
  std::vector<uint64_t> accepted_by_pos;  // [i]: of those, accepted

  // One round: n_drafted proposals, the first n_accepted accepted, n_emitted tokens out.
  void add_round(int n_drafted, int n_accepted, int n_emitted) {
    if (n_drafted <= 0) return;
    ++rounds;
    drafted += static_cast<uint64_t>(n_drafted);
    accepted += static_cast<uint64_t>(n_accepted);
    emitted += static_cast<uint64_t>(n_emitted);
    if (drafted_by_pos.size() < static_cast<size_t>(n_drafted)) {
      drafted_by_pos.resize(static_cast<size_t>(n_drafted), 0);
      accepted_by_pos.resize(static_cast<size_t>(n_drafted), 0);
    }
    for (int i = 0; i < n_drafted; ++i) ++drafted_by_pos[i];
    for (int i = 0; i < n_accepted; ++i) ++accepted_by_pos[i];
  }
  void add(const SpecStats& o) {
    rounds += o.rounds;
    drafted += o.drafted;
    accepted += o.accepted;
    emitted += o.emitted;
    if (drafted_by_pos.size() < o.drafted_by_pos.size()) {
      drafted_by_pos.resize(o.drafted_by_pos.size(), 0);
      accepted_by_pos.resize(o.drafted_by_pos.size(), 0);
    }
    for (size_t i = 0; i < o.drafted_by_pos.size(); ++i) {
      drafted_by_pos[i] += o.drafted_by_pos[i];
      accepted_by_pos[i] += o.accepted_by_pos[i];
    }
  }
  // accepted / drafted (0 when nothing was drafted).
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0; }
  // Mean accepted drafts per round.
  double mean_accepted_length() const { return rounds ? static_cast<double>(accepted) / static_cast<double>(rounds) : 0.0; }
  // Mean tokens a round produced (accepted + 1 when not cut short).
  double mean_tokens_per_round() const { return rounds ? static_cast<double>(emitted) / static_cast<double>(rounds) : 0.0; }
};

}  // namespace gs
