// The sampler chain: logit bias, penalties, greedy or top-k / top-p / min-p / temperature and a draw.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gs {

Sampler::Sampler(const SamplerConfig& config) : config_(config), rng_(config.seed) {
  for (const auto& [id, bias] : config_.logit_bias) {
    if (std::isinf(bias) && bias < 0) banned_.push_back(id);
  }
  std::sort(banned_.begin(), banned_.end());
  banned_.erase(std::unique(banned_.begin(), banned_.end()), banned_.end());
  held_sorted_ = config_.held_tokens;
  std::sort(held_sorted_.begin(), held_sorted_.end());
  held_sorted_.erase(std::unique(held_sorted_.begin(), held_sorted_.end()), held_sorted_.end());
}

bool Sampler::greedy_at(float temperature) {
  if (!(temperature > 0.0f)) return true;
  // The inverse as the draw computes it (a double quotient rounded to float).
  return !std::isfinite(static_cast<float>(1.0 / static_cast<double>(temperature)));
}

bool Sampler::can_sample(std::span<const int32_t> allowed, int32_t n_vocab) const {
  const bool holds = holds_tokens();
  if (banned_.empty() && !holds) return true;
  const auto excluded = [&](int32_t id) {
    return std::binary_search(banned_.begin(), banned_.end(), id) ||
           (holds && std::binary_search(held_sorted_.begin(), held_sorted_.end(), id));
  };
  if (!allowed.empty()) return std::any_of(allowed.begin(), allowed.end(), [&](int32_t id) { return !excluded(id); });
  // The whole vocabulary: the ids in [0, n_vocab) that are banned or held, counted once.
  int64_t n_excluded = 0;
  for (int32_t id : banned_) n_excluded += id >= 0 && id < n_vocab;
  if (holds) {
    for (int32_t id : held_sorted_) {
      n_excluded += id >= 0 && id < n_vocab && !std::binary_search(banned_.begin(), banned_.end(), id);
    }
  }
  return n_excluded < n_vocab;
}

void Sampler::accept(int32_t token) {
  if (config_.penalty_last_n == 0) return;
  if (config_.penalty_last_n < 0 || history_.size() < static_cast<size_t>(config_.penalty_last_n)) {
    history_.push_back(token);
    return;
  }
  history_[history_next_] = token;
  history_next_ = (history_next_ + 1) % history_.size();
}

void Sampler::clear_history() {
  history_.clear();
  history_next_ = 0;
}

bool Sampler::adjusts_row() const {
  return !config_.logit_bias.empty() || holds_tokens() ||
         (!history_.empty() && (config_.repetition_penalty != 1.0f || config_.frequency_penalty != 0.0f ||
                                config_.presence_penalty != 0.0f));
}

int32_t Sampler::greedy_pick(std::span<const float> logits) {
  if (!adjusts_row()) {  // straight from the row: no copy
    const RowStats s = row_stats(logits.data(), logits.size());
    last_ok_ = s.finite && !s.pos_inf;
    return first_max(logits, s);
  }
  penalized(logits);  // judges last_ok_ on the row before the bias and penalties
  return first_max(work_, row_stats(work_.data(), work_.size()));
}

void Sampler::penalized(std::span<const float> logits) {
  work_.assign(logits.begin(), logits.end());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (float& x : work_) x = x == x ? x : kNegInf;  // NaN counts as -inf
  const RowStats s = row_stats(work_.data(), work_.size());
  last_ok_ = s.finite && !s.pos_inf;
  for (const auto& [id, bias] : config_.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < work_.size()) work_[static_cast<size_t>(id)] += bias;
  if (holds_tokens())
    for (int32_t id : config_.held_tokens)
      if (id >= 0 && static_cast<size_t>(id) < work_.size()) work_[static_cast<size_t>(id)] = kNegInf;
  const bool penalties = config_.repetition_penalty != 1.0f || config_.frequency_penalty != 0.0f ||
                         config_.presence_penalty != 0.0f;
  if (!penalties || history_.empty()) return;
  // Each distinct token of the history once, with its count (a sorted copy: no pass over
  // the vocabulary).
  history_sorted_.assign(history_.begin(), history_.end());
  std::sort(history_sorted_.begin(), history_sorted_.end());
  for (size_t a = 0; a < history_sorted_.size();) {
    size_t b = a + 1;
    while (b < history_sorted_.size() && history_sorted_[b] == history_sorted_[a]) ++b;
    const int32_t t = history_sorted_[a];
    const auto count = static_cast<float>(b - a);
    a = b;
    if (t < 0 || static_cast<size_t>(t) >= work_.size()) continue;
    float& x = work_[static_cast<size_t>(t)];
    if (config_.repetition_penalty != 1.0f) x = x > 0 ? x / config_.repetition_penalty : x * config_.repetition_penalty;
    x -= count * config_.frequency_penalty + config_.presence_penalty;
  }
}

void Sampler::distribution(std::span<const float> logits, std::vector<TokenProb>* out) {
  out->clear();
  if (logits.empty()) {
    last_ok_ = false;
    return;
  }
  if (greedy()) {
    out->push_back({greedy_pick(logits), 1.0f});
    return;
  }
  penalized(logits);
  const int32_t n = static_cast<int32_t>(work_.size());
  // Candidates as (id, logit) in cand_ (p holds the logit until the softmax).
  cand_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) cand_[i] = {i, work_[i]};
  auto by_logit = [](const TokenProb& a, const TokenProb& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); };
  if (config_.top_k > 0 && config_.top_k < n) {
    std::nth_element(cand_.begin(), cand_.begin() + (config_.top_k - 1), cand_.end(), by_logit);
    cand_.resize(static_cast<size_t>(config_.top_k));
  }
  std::sort(cand_.begin(), cand_.end(), by_logit);
  // Softmax at temperature 1 for top-p and min-p, in double.
  auto softmax = [&](double inv_t, std::vector<double>* p) {
    p->resize(cand_.size());
    const double mx = cand_[0].p;
    double sum = 0;
    for (size_t i = 0; i < cand_.size(); ++i) sum += ((*p)[i] = std::exp((cand_[i].p - mx) * inv_t));
    for (double& x : *p) x /= sum;
  };
  std::vector<double> p;
  if (config_.top_p < 1.0f || config_.min_p > 0.0f) {
    softmax(1.0, &p);
    size_t keep = cand_.size();
    if (config_.top_p < 1.0f) {
      double cum = 0;
      for (size_t i = 0; i < cand_.size(); ++i) {
        cum += p[i];
        if (cum >= config_.top_p) {
          keep = i + 1;
          break;
        }
      }
    }
    if (config_.min_p > 0.0f) {
      const double floor = config_.min_p * p[0];
      size_t k = 1;
      while (k < keep && p[k] >= floor) ++k;
      keep = k;
    }
    cand_.resize(keep);
  }
  softmax(1.0 / config_.temperature, &p);
  for (size_t i = 0; i < cand_.size(); ++i) {
    if (p[i] <= 0) {
      cand_.resize(i);
      break;
    }
    out->push_back({cand_[i].id, static_cast<float>(p[i])});
  }
  if (out->empty()) out->push_back({cand_.empty() ? 0 : cand_[0].id, 1.0f});
}

int32_t Sampler::sample_with(std::span<const float> logits, double u) {
  if (greedy()) {
    if (logits.empty()) {
      last_ok_ = false;
      return 0;
    }
    return greedy_pick(logits);
  }
  // The token at which the cumulative probability of distribution()'s list (most likely
  // first) passes u, without building or sorting that list over the whole vocabulary: the
  // best candidates come from one pass with a small heap, more are sorted only when a walk
  // goes past them, and the softmax normalizers take one pass over the logits.
  penalized(logits);
  const auto n = static_cast<int32_t>(work_.size());
  if (n == 0) return 0;
  constexpr size_t kFirst = 64;  // candidates sorted up front (a peaked row's walk ends there)
  const bool top_k = config_.top_k > 0 && config_.top_k < n;
  // cand_[0, sorted) are the best candidates in order; when !all, cand_ holds only those.
  size_t sorted = 0;
  bool all = false;
  size_t n_cand = static_cast<size_t>(n);
  if (top_k) {
    select_top(work_, static_cast<size_t>(config_.top_k), &cand_);
    sorted = n_cand = cand_.size();
    all = true;
  } else {
    select_top(work_, kFirst, &cand_);
    sorted = cand_.size();
    all = sorted == n_cand;
  }
  // Makes cand_[0, want) sorted (want <= n_cand).
  auto sort_to = [&](size_t want) {
    if (want <= sorted) return;
    if (!all) {
      cand_.resize(n_cand);
      for (int32_t i = 0; i < n; ++i) cand_[static_cast<size_t>(i)] = {i, work_[static_cast<size_t>(i)]};
      sorted = 0;
      all = true;
    }
    want = std::min(n_cand, std::max(want, sorted * 4 + kFirst));
    std::partial_sort(cand_.begin() + static_cast<std::ptrdiff_t>(sorted), cand_.begin() + static_cast<std::ptrdiff_t>(want),
                      cand_.end(), before);
    sorted = want;
  };
  const float mx = cand_[0].p;
  if (!(mx > -std::numeric_limits<float>::infinity())) return cand_[0].id;
  // sum over every candidate of exp((logit - mx) * inv_t) (float exponentials, double sums).
  auto normalizer = [&](float inv_t) {
    double z = 0;
    if (top_k) {
      for (const TokenProb& c : cand_) z += static_cast<double>(std::exp((c.p - mx) * inv_t));
    } else {
      z = exp_row(work_.data(), work_.size(), mx, inv_t, nullptr);
    }
    return z;
  };

  size_t keep = n_cand;
  if (config_.top_p < 1.0f || config_.min_p > 0.0f) {
    // Top-p and min-p on the temperature-1 distribution, walking the sorted prefix. min-p
    // keeps p >= min_p * p_first; the first's exp(logit - mx) is 1.
    const double z1 = config_.top_p < 1.0f ? normalizer(1.0f) : 1.0;  // min-p alone needs no normalizer
    const double floor = config_.min_p > 0.0f ? static_cast<double>(config_.min_p) : 0.0;
    double cum = 0;
    size_t i = 0;
    for (; i < n_cand; ++i) {
      sort_to(i + 1);
      const auto e = static_cast<double>(std::exp(cand_[i].p - mx));
      if (i > 0 && e < floor) break;
      cum += e / z1;
      if (config_.top_p < 1.0f && cum >= config_.top_p) {
        ++i;
        break;
      }
    }
    keep = std::max<size_t>(i, 1);
  }
  // The draw at the temperature over the kept candidates (a sorted prefix, or all of them).
  const auto inv_t = static_cast<float>(1.0 / config_.temperature);
  double z = 0;
  if (keep == n_cand) {
    z = normalizer(inv_t);
  } else {
    for (size_t i = 0; i < keep; ++i) z += static_cast<double>(std::exp((cand_[i].p - mx) * inv_t));
  }
  const double target = u * z;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    if (i == sorted && !all && keep == n_cand && i > 0) {  // past the prefix of a whole-row draw
      return draw_in_tail(work_, cand_[i - 1], mx, inv_t, cum, target, &tail_);
    }
    sort_to(i + 1);
    const auto e = static_cast<double>(std::exp((cand_[i].p - mx) * inv_t));
    if (e <= 0) return cand_[i > 0 ? i - 1 : 0].id;
    cum += e;
    if (target < cum) return cand_[i].id;
  }
  sort_to(keep);
  return cand_[keep - 1].id;
}

void Sampler::set_state(const State& s) {
  history_ = s.history;
  history_next_ = s.history_next;
  rng_ = s.rng;
  n_draws_ = s.n_draws;
  n_sampled_ = s.n_sampled;
}

void Sampler::skip_draw() {
  if (!greedy()) {
    rng_();
    ++n_draws_;
  }
  ++n_sampled_;
}

int32_t Sampler::sample(std::span<const float> logits) {
  double u = 0.0;
  if (!greedy()) {
    u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    ++n_draws_;
  }
  const int32_t t = sample_with(logits, u);
  ++n_sampled_;
  return t;
}

}  // namespace gs
