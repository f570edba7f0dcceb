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
  bool finite = false, pos_inf = false;
  for (float& x : work_) {
    if (std::isnan(x)) x = -std::numeric_limits<float>::infinity();
    finite |= std::isfinite(x);
    pos_inf |= x == std::numeric_limits<float>::infinity();
  }
  last_ok_ = finite && !pos_inf;
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

namespace {

// distribution()'s order: higher logit first, then the lower id.
bool before(const TokenProb& a, const TokenProb& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); }

// The k best of `x` in that order, into `out` (sorted), in one pass with a heap of k: after the
// first few thousand elements a new one rarely enters, so this is about one compare each.
void select_top(const std::vector<float>& x, size_t k, std::vector<TokenProb>* out) {
  out->clear();
  k = std::min(k, x.size());
  if (k == 0) return;
  for (size_t i = 0; i < x.size(); ++i) {
    const TokenProb t{static_cast<int32_t>(i), x[i]};
    if (out->size() < k) {
      out->push_back(t);
      std::push_heap(out->begin(), out->end(), before);  // front: the worst kept
    } else if (before(t, out->front())) {
      std::pop_heap(out->begin(), out->end(), before);
      out->back() = t;
      std::push_heap(out->begin(), out->end(), before);
    }
  }
  std::sort_heap(out->begin(), out->end(), before);
}

}  // namespace

int32_t Sampler::sample_with(std::span<const float> logits, double u) {
  if (greedy()) {
    std::vector<TokenProb> dist;
    distribution(logits, &dist);
    return dist.empty() ? 0 : dist[0].id;
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
      for (float x : work_) z += static_cast<double>(std::exp((x - mx) * inv_t));
    }
    return z;
  };

  size_t keep = n_cand;
  if (config_.top_p < 1.0f || config_.min_p > 0.0f) {
    // Top-p and min-p on the temperature-1 distribution, walking the sorted prefix. min-p
    // keeps p >= min_p * p_first; the first's exp(logit - mx) is 1.
    const double z1 = normalizer(1.0f);
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
    sort_to(i + 1);
    const auto e = static_cast<double>(std::exp((cand_[i].p - mx) * inv_t));
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
