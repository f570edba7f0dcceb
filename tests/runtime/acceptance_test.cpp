// The acceptance rule keeps the output distribution: on a Markov chain whose drafter is
// often right, the next two tokens with speculation and without pass a chi-square
// homogeneity test at many temperatures and chains, and the same test fails for wrong rules.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "runtime/acceptance.h"

namespace gs {
namespace {

constexpr int kVocab = 6;

// Target and drafter chains: logits of the next token given the previous one.
struct Chain {
  std::vector<std::vector<float>> target;   // [prev][next]
  std::vector<std::vector<float>> drafter;  // [prev][next]: the target's, perturbed
  explicit Chain(uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    target.assign(kVocab, std::vector<float>(kVocab));
    drafter = target;
    for (int a = 0; a < kVocab; ++a) {
      for (int b = 0; b < kVocab; ++b) {
        target[a][b] = 1.5f * n(rng);
        drafter[a][b] = target[a][b] + 0.8f * n(rng);
      }
    }
  }
  int32_t draft_after(int32_t prev) const {
    const auto& l = drafter[prev];
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
  }
};

using Rule = std::function<AcceptResult(std::span<const int32_t>, const std::function<std::span<const float>(int)>&,
                                        Sampler&)>;

AcceptResult exact_rule(std::span<const int32_t> d, const std::function<std::span<const float>(int)>& rows, Sampler& s) {
  return accept_drafts(d, rows, s, 1 << 30, {});
}

// Wrong: a draft the target finds likely enough is taken without sampling its row.
AcceptResult wrong_threshold_rule(std::span<const int32_t> d, const std::function<std::span<const float>(int)>& rows,
                                  Sampler& s) {
  AcceptResult r;
  for (size_t i = 0; i <= d.size(); ++i) {
    std::vector<TokenProb> dist;
    s.distribution(rows(static_cast<int>(i)), &dist);
    double pd = 0;
    for (auto& t : dist)
      if (i < d.size() && t.id == d[i]) pd = t.p;
    if (i < d.size() && pd >= 0.3) {
      r.tokens.push_back(d[i]);
      ++r.n_accepted;
      continue;
    }
    r.tokens.push_back(s.sample(rows(static_cast<int>(i))));
    break;
  }
  return r;
}

// Wrong: greedy verification at temperature > 0 (accept a draft iff it is the argmax).
AcceptResult wrong_greedy_rule(std::span<const int32_t> d, const std::function<std::span<const float>(int)>& rows,
                               Sampler& s) {
  AcceptResult r;
  for (size_t i = 0; i <= d.size(); ++i) {
    auto l = rows(static_cast<int>(i));
    const int32_t best = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    if (i < d.size() && d[i] == best) {
      r.tokens.push_back(d[i]);
      ++r.n_accepted;
      continue;
    }
    r.tokens.push_back(s.sample(l));
    break;
  }
  return r;
}

using Counts = std::map<std::pair<int32_t, int32_t>, int>;

// First two tokens after `start`: plain sampling (k = 0) or one speculative round with k
// argmax drafts, continued plainly when it emits fewer than two.
Counts sample_pairs(const Chain& c, const SamplerConfig& sc, int k, const Rule& rule, int n, uint64_t seed0,
                    double* acceptance) {
  Counts counts;
  uint64_t drafted = 0, accepted = 0;
  for (int i = 0; i < n; ++i) {
    SamplerConfig cfg = sc;
    cfg.seed = seed0 + static_cast<uint64_t>(i);
    Sampler s(cfg);
    const int32_t start = static_cast<int32_t>(i % kVocab);
    std::vector<int32_t> out;
    if (k > 0) {
      std::vector<int32_t> drafts;
      int32_t prev = start;
      for (int j = 0; j < k; ++j) drafts.push_back(prev = c.draft_after(prev));
      auto rows = [&](int row) -> std::span<const float> {
        const int32_t p = row == 0 ? start : drafts[row - 1];
        return c.target[p];
      };
      AcceptResult r = rule(drafts, rows, s);
      drafted += k;
      accepted += r.n_accepted;
      out = r.tokens;
    }
    while (out.size() < 2) out.push_back(s.sample(c.target[out.empty() ? start : out.back()]));
    ++counts[{out[0] * 100 + start, out[1]}];
  }
  if (acceptance) *acceptance = drafted ? static_cast<double>(accepted) / drafted : 0.0;
  return counts;
}

std::pair<double, int> chi_square(const Counts& a, const Counts& b, int na, int nb) {
  std::map<std::pair<int32_t, int32_t>, std::pair<double, double>> cells;
  for (auto& [key, v] : a) cells[key].first += v;
  for (auto& [key, v] : b) cells[key].second += v;
  const double n = na + nb;
  double chi2 = 0;
  int used = 0;
  std::pair<double, double> pooled{0, 0};
  auto add = [&](double x, double y) {
    const double t = x + y, ea = t * na / n, eb = t * nb / n;
    chi2 += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
    ++used;
  };
  for (auto& [key, v] : cells) {
    if ((v.first + v.second) * std::min(na, nb) / n < 5) {
      pooled.first += v.first;
      pooled.second += v.second;
    } else {
      add(v.first, v.second);
    }
  }
  if (pooled.first + pooled.second > 0) add(pooled.first, pooled.second);
  return {chi2, used - 1};
}

// Upper 0.001 quantile of chi-square with k degrees of freedom (Wilson-Hilferty).
double critical_001(int k) {
  const double z = 3.090232, t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

struct Case {
  uint32_t chain_seed;
  float temperature;
  int top_k;
  float top_p;
};

TEST(Acceptance, ExactRuleKeepsTheDistributionWrongRulesDoNot) {
  const int n = 60000;
  for (const Case& cs : {Case{1, 1.0f, 0, 1.0f}, Case{2, 0.7f, 4, 1.0f}, Case{3, 1.3f, 0, 0.9f}}) {
    const Chain chain(cs.chain_seed);
    SamplerConfig sc;
    sc.temperature = cs.temperature;
    sc.top_k = cs.top_k;
    sc.top_p = cs.top_p;
    double acc = 0;
    const Counts plain = sample_pairs(chain, sc, 0, exact_rule, n, 1, nullptr);
    const Counts spec = sample_pairs(chain, sc, 3, exact_rule, n, 1000000, &acc);
    auto [chi2, dof] = chi_square(plain, spec, n, n);
    std::printf("chain %u T %.1f: exact rule chi2 %.1f (%d dof, critical %.1f), acceptance %.2f\n", cs.chain_seed,
                cs.temperature, chi2, dof, critical_001(dof), acc);
    EXPECT_GT(acc, 0.2) << "drafts must be accepted often for the test to mean something";
    EXPECT_LT(chi2, critical_001(dof));
    for (const auto& [name, rule] : std::vector<std::pair<const char*, Rule>>{{"threshold", wrong_threshold_rule},
                                                                            {"greedy", wrong_greedy_rule}}) {
      const Counts wrong = sample_pairs(chain, sc, 3, rule, n, 2000000, nullptr);
      auto [wchi2, wdof] = chi_square(plain, wrong, n, n);
      std::printf("  wrong %s rule chi2 %.1f (%d dof)\n", name, wchi2, wdof);
      EXPECT_GT(wchi2, critical_001(wdof)) << name;
    }
  }
}

TEST(Acceptance, GreedyIsPrefixMatching) {
  const Chain chain(5);
  Sampler s({});
  std::vector<int32_t> d = {chain.draft_after(0)};
  d.push_back(chain.draft_after(d[0]));
  auto rows = [&](int row) -> std::span<const float> { return chain.target[row == 0 ? 0 : d[row - 1]]; };
  const AcceptResult r = accept_drafts(d, rows, s, 10, {});
  // Greedy: emitted token i is the target's argmax after the previous one.
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    const auto& l = chain.target[i == 0 ? 0 : d[i - 1]];
    EXPECT_EQ(r.tokens[i], std::max_element(l.begin(), l.end()) - l.begin());
  }
  // Every emitted token but the last is an accepted draft (the last: correction or bonus).
  EXPECT_EQ(r.n_accepted, static_cast<int>(r.tokens.size()) - 1);
  // Stop tokens and max_tokens end the round early.
  Sampler s2({});
  const int32_t first = r.tokens[0];
  EXPECT_EQ(accept_drafts(d, rows, s2, 10, std::vector<int32_t>{first}).tokens.size(), 1u);
  Sampler s3({});
  EXPECT_EQ(accept_drafts(d, rows, s3, 1, {}).tokens.size(), 1u);
}

// A row that cannot be sampled from (no finite logit) ends the round before it: its token is
// not emitted and the result says why.
TEST(Acceptance, ARowWithoutFiniteLogitsEndsTheRound) {
  const Chain chain(5);
  Sampler s({});
  std::vector<int32_t> d = {chain.draft_after(0)};
  d.push_back(chain.draft_after(d[0]));
  const std::vector<float> nan_row(chain.target[0].size(), NAN);
  auto rows = [&](int row) -> std::span<const float> {
    if (row == 0) return nan_row;
    return chain.target[d[row - 1]];
  };
  const AcceptResult r = accept_drafts(d, rows, s, 10, {});
  EXPECT_FALSE(r.logits_ok);
  EXPECT_TRUE(r.tokens.empty());
  Sampler s2({});
  EXPECT_TRUE(accept_drafts(d, [&](int row) -> std::span<const float> { return chain.target[row == 0 ? 0 : d[row - 1]]; },
                            s2, 10, {})
                  .logits_ok);
}

}  // namespace
}  // namespace gs
