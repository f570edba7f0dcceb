// The sampler chain: penalties, greedy or top-k / top-p / min-p / temperature and a draw.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gs {

Sampler::Sampler(const SamplerConfig& config) : config_(config), rng_(config.seed) {}

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

void Sampler::penalized(std::span<const float> logits) {
  work_.assign(logits.begin(), logits.end());
  for (float& x : work_)
    if (std::isnan(x)) x = -std::numeric_limits<float>::infinity();
  const bool any = config_.repetition_penalty != 1.0f || config_.frequency_penalty != 0.0f ||
                   config_.presence_penalty != 0.0f;
  if (!any || history_.empty()) return;
  counts_.assign(work_.size(), 0);
  for (int32_t t : history_)
    if (t >= 0 && static_cast<size_t>(t) < work_.size()) ++counts_[t];
  for (int32_t t : history_) {
    if (t < 0 || static_cast<size_t>(t) >= work_.size() || counts_[t] == 0) continue;
    float& x = work_[t];
    if (config_.repetition_penalty != 1.0f) x = x > 0 ? x / config_.repetition_penalty : x * config_.repetition_penalty;
    x -= static_cast<float>(counts_[t]) * config_.frequency_penalty + config_.presence_penalty;
    counts_[t] = 0;  // once per distinct token
  }
}

void Sampler::distribution(std::span<const float> logits, std::vector<TokenProb>* out) {
  out->clear();
  penalized(logits);
  const int32_t n = static_cast<int32_t>(work_.size());
  if (n == 0) return;
  if (greedy()) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
      if (work_[i] > work_[best]) best = i;
    out->push_back({best, 1.0f});
    return;
  }
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
    std::vector<TokenProb> dist;
    distribution(logits, &dist);
    return dist.empty() ? 0 : dist[0].id;
  }
  // The token at which the cumulative probability of distribution()'s list (most likely
  // first) passes u, without building or sorting that list over the whole vocabulary: the
  // candidates are sorted only as far as the walks reach (a prefix of a few dozen tokens for
  // a peaked distribution), and the softmax normalizers take one pass over the candidates.
  penalized(logits);
  const auto n = static_cast<int32_t>(work_.size());
  if (n == 0) return 0;
  auto by_logit = [](const TokenProb& a, const TokenProb& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); };
  cand_.clear();
  if (config_.top_k > 0 && config_.top_k < n) {
    // The k-th largest logit, then the k best (ties to the lower ids).
    tmp_.assign(work_.begin(), work_.end());
    std::nth_element(tmp_.begin(), tmp_.begin() + (config_.top_k - 1), tmp_.end(), std::greater<float>());
    const float kth = tmp_[static_cast<size_t>(config_.top_k - 1)];
    for (int32_t i = 0; i < n; ++i)
      if (work_[i] > kth) cand_.push_back({i, work_[i]});
    for (int32_t i = 0; i < n && static_cast<int32_t>(cand_.size()) < config_.top_k; ++i)
      if (work_[i] == kth) cand_.push_back({i, work_[i]});
  } else {
    cand_.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) cand_[i] = {i, work_[i]};
  }
  float mx = -std::numeric_limits<float>::infinity();
  for (const TokenProb& c : cand_) mx = std::max(mx, c.p);
  if (!(mx > -std::numeric_limits<float>::infinity())) return cand_.empty() ? 0 : cand_[0].id;

  size_t sorted = 0;  // cand_[0, sorted) is in distribution() order
  auto sort_to = [&](size_t want) {
    want = std::min(want, cand_.size());
    if (want <= sorted) return;
    want = std::max(want, std::min(cand_.size(), sorted * 4 + 64));
    std::partial_sort(cand_.begin() + static_cast<std::ptrdiff_t>(sorted), cand_.begin() + static_cast<std::ptrdiff_t>(want),
                      cand_.end(), by_logit);
    sorted = want;
  };
  size_t keep = cand_.size();
  if (config_.top_p < 1.0f || config_.min_p > 0.0f) {
    // Top-p and min-p on the temperature-1 distribution, walking the sorted prefix.
    double z = 0;
    for (const TokenProb& c : cand_) z += static_cast<double>(std::exp(c.p - mx));
    // min-p keeps p >= min_p * p_first; the first's exp(logit - mx) is 1.
    const double floor = config_.min_p > 0.0f ? static_cast<double>(config_.min_p) : 0.0;
    double cum = 0;
    size_t i = 0;
    for (;; ++i) {
      if (i == cand_.size()) break;
      sort_to(i + 1);
      const auto e = static_cast<double>(std::exp(cand_[i].p - mx));
      if (i > 0 && e < floor) break;
      const double p = e / z;
      cum += p;
      if (config_.top_p < 1.0f && cum >= config_.top_p) {
        ++i;
        break;
      }
    }
    keep = std::max<size_t>(i, 1);
  }
  // The draw at the temperature over the kept candidates (a sorted prefix, or all of them).
  const double inv_t = 1.0 / config_.temperature;
  // float exponentials (the sums in double): one pass over up to the whole vocabulary.
  const auto inv_tf = static_cast<float>(inv_t);
  double z = 0;
  for (size_t i = 0; i < keep; ++i) z += static_cast<double>(std::exp((cand_[i].p - mx) * inv_tf));
  const double target = u * z;
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    sort_to(i + 1);
    const auto e = static_cast<double>(std::exp((cand_[i].p - mx) * inv_tf));
    if (e <= 0) return cand_[i > 0 ? i - 1 : 0].id;
    cum += e;
    if (target < cum) return cand_[i].id;
  }
  sort_to(keep);
  return cand_[keep - 1].id;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (greedy()) return sample_with(logits, 0.0);
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  ++n_draws_;
  return sample_with(logits, u);
}

}  // namespace gs
