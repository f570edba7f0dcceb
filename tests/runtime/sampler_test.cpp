// The sampler chain: greedy, top-k, top-p, min-p, temperature, penalties, seeded draws and
// their statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "runtime/sampler.h"

namespace gs {
namespace {

std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

TEST(Sampler, GreedyIsArgmaxLowestIdOnTies) {
  Sampler s({});
  EXPECT_TRUE(s.greedy());
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 3.0f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{NAN, -5.0f}), 1);
  EXPECT_EQ(s.n_draws(), 0u);
}

// Greedy reads the row in vector blocks of 16 (no copy without penalties); it must pick
// exactly what a plain scalar walk over the penalized row picks: the first column of the
// largest value, NaN as -inf, token 0 when nothing is above -inf, and flag the same rows.
TEST(Sampler, GreedyPickEqualsAScalarWalkOverThePenalizedRow) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f};
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 300);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = std::round(normal(rng) * 2.0f) / 2.0f;  // half steps: many ties
    const int n_special = trial % 4 == 0 ? static_cast<int>(rng() % 6) : 0;
    for (int k = 0; k < n_special; ++k) l[rng() % static_cast<size_t>(n)] = specials[rng() % 5];
    if (trial % 50 == 0) std::fill(l.begin(), l.end(), trial % 100 == 0 ? NAN : -INFINITY);
    SamplerConfig c;
    const bool penalties = trial % 3 == 0;
    if (penalties) {
      c.repetition_penalty = 1.5f;
      c.frequency_penalty = 0.25f;
      c.presence_penalty = 0.5f;
    }
    Sampler s(c);
    std::vector<int32_t> history;
    if (penalties)
      for (int k = 0; k < 5; ++k) history.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(n + 2)));
    for (int32_t t : history) s.accept(t);
    // The reference: the row with NaN as -inf, each distinct history token penalized once.
    std::vector<float> w(l);
    bool finite = false, pos_inf = false;
    for (float& x : w) {
      if (std::isnan(x)) x = -INFINITY;
      finite = finite || std::isfinite(x);
      pos_inf = pos_inf || x == INFINITY;
    }
    std::map<int32_t, int> count;
    for (int32_t t : history) ++count[t];
    for (const auto& [t, k] : count) {
      if (t >= n) continue;
      float& x = w[static_cast<size_t>(t)];
      x = x > 0 ? x / c.repetition_penalty : x * c.repetition_penalty;
      x -= static_cast<float>(k) * c.frequency_penalty + c.presence_penalty;
    }
    int32_t want = 0;
    for (int32_t i = 1; i < n; ++i)
      if (w[static_cast<size_t>(i)] > w[static_cast<size_t>(want)]) want = i;
    EXPECT_EQ(s.sample(l), want) << "trial " << trial << " n " << n;
    EXPECT_EQ(s.last_logits_ok(), finite && !pos_inf) << "trial " << trial;
    std::vector<TokenProb> d;
    s.distribution(l, &d);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].id, want) << "trial " << trial;
  }
}

// logit_bias comes first in the chain (before the penalties, as in llama.cpp): it moves
// greedy's pick, -inf bans a token at any temperature, and the sampled distribution is that
// of the biased logits. The row's own validity is judged before it.
TEST(Sampler, LogitBiasComesBeforeEverythingElse) {
  SamplerConfig c;
  c.logit_bias = {{0, 5.0f}, {3, -std::numeric_limits<float>::infinity()}};
  Sampler g(c);
  EXPECT_EQ(g.sample(std::vector<float>{1.0f, 5.5f, 0.0f, 9.0f}), 0);  // 6 > 5.5; token 3 banned
  EXPECT_TRUE(g.last_logits_ok());
  c.repetition_penalty = 2.0f;
  Sampler p(c);
  p.accept(0);
  EXPECT_EQ(p.sample(std::vector<float>{1.0f, 2.5f, 0.0f, 9.0f}), 0);  // (1 + 5) / 2 = 3 > 2.5
  SamplerConfig t;
  t.temperature = 1.0f;
  t.logit_bias = {{1, std::log(3.0f)}, {2, -std::numeric_limits<float>::infinity()}};
  Sampler s(t);
  std::vector<TokenProb> d;
  s.distribution(std::vector<float>{0.0f, 0.0f, 10.0f}, &d);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 1);
  EXPECT_NEAR(d[0].p, 0.75, 1e-6);
  EXPECT_NEAR(d[1].p, 0.25, 1e-6);
  for (int k = 0; k < 200; ++k) EXPECT_NE(s.sample(std::vector<float>{0.0f, 0.0f, 10.0f}), 2);
  // Ids past the row are ignored.
  SamplerConfig o;
  o.logit_bias = {{7, 100.0f}};
  Sampler out(o);
  EXPECT_EQ(out.sample(std::vector<float>{1.0f, 2.0f}), 1);
}

// min_tokens: the held tokens (the end-of-generation ones) are not sampled by the first
// min_tokens calls of sample(), greedy or drawn; after that they are, as before.
TEST(Sampler, MinTokensHoldsTheEndTokensBack) {
  for (float temperature : {0.0f, 1.0f}) {
    SamplerConfig c;
    c.temperature = temperature;
    c.min_tokens = 3;
    c.held_tokens = {1, 4};
    Sampler s(c);
    const std::vector<float> row = {0.0f, 50.0f, 20.0f, 0.0f, 30.0f};  // 1, then 4, dominate
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(s.sample(row), 2) << "call " << i << " T " << temperature;
      EXPECT_TRUE(s.last_logits_ok());
    }
    EXPECT_EQ(s.n_sampled(), 3);
    EXPECT_EQ(s.sample(row), 1) << "T " << temperature;  // held no longer
  }
}

// can_sample: whether a token is left that no `false` (-inf) bias bans and min_tokens does
// not hold back, among the allowed ids or the whole vocabulary. Where none is, sample() would
// return a banned or disallowed token (helper-break14: a response_format whose every allowed
// token the request banned came back 200 with unconstrained text).
TEST(Sampler, CanSampleSaysWhetherBansAndHeldTokensLeaveAToken) {
  constexpr float kBan = -std::numeric_limits<float>::infinity();
  const std::vector<int32_t> none;
  SamplerConfig c;
  c.temperature = 1.0f;
  EXPECT_TRUE(Sampler(c).can_sample(none, 5));
  EXPECT_FALSE(Sampler(c).restricts_tokens());
  c.logit_bias = {{0, kBan}, {2, kBan}, {3, -100.0f}};  // -100 lowers, does not ban
  Sampler banned(c);
  EXPECT_TRUE(banned.restricts_tokens());
  EXPECT_TRUE(banned.can_sample(none, 5));
  EXPECT_TRUE(banned.can_sample(std::vector<int32_t>{2, 3}, 5));
  EXPECT_FALSE(banned.can_sample(std::vector<int32_t>{0, 2}, 5));
  EXPECT_FALSE(banned.can_sample(std::vector<int32_t>{2}, 5));
  EXPECT_TRUE(banned.can_sample(none, 2)) << "id 1 is free; the ban of id 2 is outside a 2-token vocabulary";
  EXPECT_FALSE(banned.can_sample(none, 1));
  // Held tokens count while min_tokens holds them, each id once however it is excluded.
  c.logit_bias = {{0, kBan}, {2, kBan}, {3, kBan}};
  c.min_tokens = 1;
  c.held_tokens = {1, 4, 3, 1};
  Sampler held(c);
  EXPECT_TRUE(held.restricts_tokens());
  EXPECT_FALSE(held.can_sample(none, 5));
  EXPECT_TRUE(held.can_sample(none, 6));
  EXPECT_FALSE(held.can_sample(std::vector<int32_t>{1, 4}, 5));
  EXPECT_EQ(held.sample(std::vector<float>(6, 0.0f)), 5);
  EXPECT_TRUE(held.can_sample(none, 5)) << "after min_tokens the end tokens may come";
  EXPECT_TRUE(held.can_sample(std::vector<int32_t>{1, 4}, 5));
}

// A speculative round samples several rows; when a token is forced in place of one of them,
// the slot runner takes the sampler back to the round's start and replays the tokens plain
// decoding would have sampled (skip_draw + accept). The sampler must then draw exactly as the
// one that decoded them one by one: same RNG position, history, counts.
TEST(Sampler, StateAndSkipDrawReplayARound) {
  SamplerConfig c;
  c.temperature = 1.0f;
  c.repetition_penalty = 1.3f;
  c.presence_penalty = 0.5f;
  c.seed = 99;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto row = [&]() {
    std::vector<float> l(50);
    for (float& x : l) x = normal(rng);
    return l;
  };
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < 12; ++i) rows.push_back(row());
  Sampler plain(c), spec(c);
  for (int32_t t : {3, 7, 3}) {
    plain.accept(t);
    spec.accept(t);
  }
  // Plain: rows 0 and 1 sampled and taken; row 2 sampled, then replaced by 42.
  std::vector<int32_t> taken;
  for (int i = 0; i < 3; ++i) {
    taken.push_back(plain.sample(rows[i]));
    plain.accept(taken.back());
  }
  plain.accept(42);
  // Speculative: a round samples rows 0..4, then the same replacement of its third token.
  const Sampler::State start = spec.state();
  std::vector<int32_t> round;
  for (int i = 0; i < 5; ++i) {
    round.push_back(spec.sample(rows[i]));
    spec.accept(round.back());
  }
  ASSERT_EQ(std::vector<int32_t>(round.begin(), round.begin() + 3), taken);
  spec.set_state(start);
  for (int i = 0; i < 3; ++i) {
    spec.skip_draw();
    spec.accept(round[static_cast<size_t>(i)]);
  }
  spec.accept(42);
  EXPECT_EQ(spec.n_draws(), plain.n_draws());
  EXPECT_EQ(spec.n_sampled(), plain.n_sampled());
  for (int i = 5; i < 12; ++i) {
    const int32_t a = plain.sample(rows[i]);
    const int32_t b = spec.sample(rows[i]);
    EXPECT_EQ(a, b) << "row " << i;
    plain.accept(a);
    spec.accept(b);
  }
}

// A row with no finite logit (a model computing NaN) or with +inf cannot be sampled from:
// greedy would take token 0 every step. The sampler says so; NaN beside finite values still
// counts as -inf.
TEST(Sampler, RowsWithoutAFiniteLogitAreFlagged) {
  for (float temperature : {0.0f, 0.8f}) {
    SamplerConfig c;
    c.temperature = temperature;
    Sampler s(c);
    s.sample(std::vector<float>{NAN, NAN, NAN});
    EXPECT_FALSE(s.last_logits_ok());
    s.sample(std::vector<float>{-INFINITY, NAN, -INFINITY});
    EXPECT_FALSE(s.last_logits_ok());
    s.sample(std::vector<float>{0.5f, INFINITY, 1.0f});
    EXPECT_FALSE(s.last_logits_ok());
    EXPECT_EQ(s.sample(std::vector<float>{NAN, -INFINITY, 2.0f}), 2);
    EXPECT_TRUE(s.last_logits_ok());
  }
}

// A temperature whose inverse is no finite float (a subnormal below 2^-128, which a request's
// "temperature": 1e-40 becomes) is greedy: the draw computed 0 * inf = NaN for the top logit,
// so its sums were NaN and it returned the last of tied top logits, not greedy's first
// (breaker round 31). Normal tiny temperatures still draw, and pick the argmax.
TEST(Sampler, ATemperatureTooSmallToDivideByIsGreedy) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const int n : {5, 300}) {  // a short row, and one whose draw goes past the first candidates
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = normal(rng);
    const auto argmax = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    for (const float t : {1e-40f, 1e-45f, std::numeric_limits<float>::denorm_min(), 2e-39f, 1e-30f,
                          std::numeric_limits<float>::min()}) {
      SamplerConfig c;
      c.temperature = t;
      c.seed = 3;
      Sampler s(c);
      EXPECT_EQ(s.greedy(), !std::isfinite(static_cast<float>(1.0 / static_cast<double>(t)))) << t;
      for (const double u : {0.0, 0.25, 0.5, 0.999}) EXPECT_EQ(s.sample_with(l, u), argmax) << "T " << t << " u " << u;
      EXPECT_EQ(s.sample(l), argmax) << t;
      std::vector<TokenProb> d;
      s.distribution(l, &d);
      ASSERT_FALSE(d.empty());
      EXPECT_EQ(d[0].id, argmax) << t;
      c.top_p = 0.5f;  // top-p and min-p on the way too
      c.min_p = 0.1f;
      Sampler filtered(c);
      for (const double u : {0.0, 0.5, 0.999}) EXPECT_EQ(filtered.sample_with(l, u), argmax) << "T " << t << " u " << u;
    }
  }
  // Tied top logits: greedy takes the lower id; the draw at an infinite inverse took the last
  // of the tie (0 * inf for each, then the first 0 term ended the walk one before it).
  for (const float t : {1e-40f, 2e-39f}) {
    SamplerConfig c;
    c.temperature = t;
    Sampler s(c);
    const std::vector<float> tie = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f};
    for (const double u : {0.0, 0.5, 0.999}) EXPECT_EQ(s.sample_with(tie, u), 1) << "T " << t << " u " << u;
  }
  SamplerConfig c;
  c.temperature = NAN;
  EXPECT_TRUE(Sampler(c).greedy());
  c.temperature = 1e-30f;
  EXPECT_FALSE(Sampler(c).greedy());
}

TEST(Sampler, DistributionAtTemperatureOne) {
  SamplerConfig c;
  c.temperature = 1.0f;
  Sampler s(c);
  std::vector<TokenProb> d;
  s.distribution(logits_of({0.1, 0.2, 0.3, 0.4}), &d);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].id, 3);
  EXPECT_NEAR(d[0].p, 0.4, 1e-6);
  EXPECT_NEAR(d[3].p, 0.1, 1e-6);
}

TEST(Sampler, TopKTopPMinPTemperature) {
  const std::vector<float> l = logits_of({0.05, 0.1, 0.15, 0.3, 0.4});
  std::vector<TokenProb> d;
  SamplerConfig c;
  c.temperature = 1.0f;
  c.top_k = 2;
  Sampler(c).distribution(l, &d);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0].p, 0.4 / 0.7, 1e-6);
  c = {};
  c.temperature = 1.0f;
  c.top_p = 0.7f;  // 0.4 + 0.3 reaches 0.7
  Sampler(c).distribution(l, &d);
  ASSERT_EQ(d.size(), 2u);
  c.top_p = 0.71f;
  Sampler(c).distribution(l, &d);
  EXPECT_EQ(d.size(), 3u);
  c = {};
  c.temperature = 1.0f;
  c.min_p = 0.3f;  // keeps p >= 0.12
  Sampler(c).distribution(l, &d);
  EXPECT_EQ(d.size(), 3u);
  c = {};
  c.temperature = 0.5f;  // p^2 renormalized
  Sampler(c).distribution(logits_of({0.25, 0.75}), &d);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0].p, 0.5625 / 0.625, 1e-6);
}

TEST(Sampler, Penalties) {
  SamplerConfig c;
  c.repetition_penalty = 2.0f;
  c.frequency_penalty = 0.5f;
  c.presence_penalty = 0.25f;
  Sampler s(c);
  s.accept(0);
  s.accept(0);
  s.accept(1);
  // token 0: 4/2 - 2*0.5 - 0.25 = 0.75; token 1: -1*2 - 0.5 - 0.25 = -2.75; token 2: 1.
  EXPECT_EQ(s.sample(std::vector<float>{4.0f, -1.0f, 1.0f}), 2);
  SamplerConfig t = c;
  t.temperature = 1.0f;
  Sampler s2(t);
  s2.accept(0);
  s2.accept(0);
  s2.accept(1);
  std::vector<TokenProb> d;
  s2.distribution(std::vector<float>{4.0f, -1.0f, 1.0f}, &d);
  const double z = std::exp(0.75) + std::exp(-2.75) + std::exp(1.0);
  EXPECT_EQ(d[0].id, 2);
  EXPECT_NEAR(d[0].p, std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(d[1].p, std::exp(0.75) / z, 1e-6);
}

TEST(Sampler, PenaltyWindow) {
  SamplerConfig c;
  c.presence_penalty = 10.0f;
  c.penalty_last_n = 2;
  Sampler s(c);
  s.accept(0);
  s.accept(1);
  s.accept(2);  // 0 leaves the window
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 2.0f, 2.0f}), 0);
}

TEST(Sampler, SeededDrawsRepeatAndMatchTheDistribution) {
  SamplerConfig c;
  c.temperature = 1.0f;
  c.seed = 42;
  const std::vector<double> p = {0.5, 0.25, 0.125, 0.0625, 0.0625};
  const std::vector<float> l = logits_of(p);
  Sampler a(c), b(c);
  std::vector<int> counts(p.size(), 0);
  const int n = 80000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = a.sample(l);
    EXPECT_EQ(x, b.sample(l));
    ++counts[x];
  }
  EXPECT_EQ(a.n_draws(), static_cast<uint64_t>(n));
  double chi2 = 0;
  for (size_t i = 0; i < p.size(); ++i) chi2 += std::pow(counts[i] - n * p[i], 2) / (n * p[i]);
  EXPECT_LT(chi2, 18.47);  // 4 degrees of freedom, p = 0.001
}

}  // namespace
}  // namespace gs

namespace gs {
namespace {

// Every draw picks what the walk over distribution()'s fully sorted list picks for the same u
// (away from a boundary, where float and double exponentials may disagree).
void expect_draws_equal_the_walk(const std::vector<float>& l, const SamplerConfig& c, std::mt19937& rng, int n_u,
                                 const std::string& what) {
  Sampler s(c);
  std::vector<TokenProb> d;
  s.distribution(l, &d);
  ASSERT_FALSE(d.empty());
  for (int k = 0; k < n_u; ++k) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    double cum = 0;
    int32_t want = d.back().id;
    bool near_boundary = false;
    bool found = false;
    for (const TokenProb& t : d) {
      cum += t.p;
      near_boundary = near_boundary || std::abs(cum - u) < 1e-5;
      if (!found && u < cum) {
        want = t.id;
        found = true;
      }
    }
    if (near_boundary) continue;
    EXPECT_EQ(s.sample_with(l, u), want) << what << " u " << u << " top_k " << c.top_k << " top_p " << c.top_p
                                         << " min_p " << c.min_p << " T " << c.temperature;
  }
}

// sample_with sorts only as far as its walk reaches; it must pick what a walk over
// distribution()'s full sorted list picks, for every chain setting.
TEST(Sampler, DrawEqualsTheWalkOverTheFullDistribution) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 3000);
    const float scale = 0.2f + static_cast<float>(rng() % 50) * 0.2f;
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = std::round(normal(rng) * scale * 4.0f) / 4.0f;  // quarter steps: many ties
    if (n > 3 && trial % 5 == 0) {
      l[1] = NAN;
      l[2] = -INFINITY;
    }
    SamplerConfig c;
    c.temperature = 0.3f + static_cast<float>(rng() % 20) * 0.1f;
    c.top_k = trial % 3 == 0 ? static_cast<int32_t>(rng() % 80) : 0;
    c.top_p = trial % 2 == 0 ? 0.5f + static_cast<float>(rng() % 50) * 0.01f : 1.0f;
    c.min_p = trial % 4 == 1 ? static_cast<float>(rng() % 20) * 0.01f : 0.0f;
    expect_draws_equal_the_walk(l, c, rng, 20, "trial " + std::to_string(trial) + " n " + std::to_string(n));
  }
}

// A draw over the whole row (no top-k, top-p or min-p) that goes past the first 64 candidates
// walks the rest a logit bucket at a time (draw_in_tail): long flat rows, with ties, NaN,
// -inf and logits far below the top, must still draw what the sorted walk draws.
TEST(Sampler, WholeRowDrawsPastTheFirstCandidatesEqualTheWalk) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 24; ++trial) {
    const int n = trial % 3 == 0 ? 70000 : 200 + static_cast<int>(rng() % 9000);
    const float scale = 0.05f + static_cast<float>(rng() % 10) * 0.1f;
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = normal(rng) * scale;
    if (trial % 2 == 0)
      for (float& x : l) x = std::round(x * 64.0f) / 64.0f;  // ties
    if (trial % 4 == 1) {
      l[3] = NAN;
      l[5] = -INFINITY;
      l[7] = -200.0f;  // no normal-float term at any of these temperatures
      l[9] = 30.0f;    // one dominant logit: most draws end at once
    }
    SamplerConfig c;
    c.temperature = 0.5f + static_cast<float>(rng() % 16) * 0.1f;
    expect_draws_equal_the_walk(l, c, rng, 30, "trial " + std::to_string(trial) + " n " + std::to_string(n));
  }
}

}  // namespace
}  // namespace gs
