// Adaptive draft length: the cost fit, the acceptance estimates, and the choice they give
// on a bandwidth-bound (GPU-like) and a compute-bound (CPU-like) step.
#include <gtest/gtest.h>

#include "runtime/draft_policy.h"

namespace gs {
namespace {

TEST(LinearCostFit, RecoversInterceptAndSlope) {
  LinearCostFit f;
  EXPECT_FALSE(f.has_data());
  for (int i = 0; i < 50; ++i) f.observe(1 + i % 5, 2.0 + 0.5 * (1 + i % 5));
  ASSERT_TRUE(f.has_slope());
  EXPECT_NEAR(f.intercept(), 2.0, 1e-9);
  EXPECT_NEAR(f.slope(), 0.5, 1e-9);
  EXPECT_NEAR(f.predict(8), 6.0, 1e-9);
}

TEST(LinearCostFit, OneXValueHasNoSlope) {
  LinearCostFit f;
  for (int i = 0; i < 10; ++i) f.observe(1, 3.0);
  EXPECT_FALSE(f.has_slope());
  EXPECT_NEAR(f.predict(1), 3.0, 1e-9);
}

TEST(AcceptanceTracker, FollowsTheObservedPrefixRates) {
  AcceptanceTracker t(4);
  for (int i = 0; i < 200; ++i) t.observe(4, 4);  // every draft accepted
  EXPECT_NEAR(t.expected_tokens(4), 5.0, 0.01);
  for (int i = 0; i < 200; ++i) t.observe(4, 0);  // none accepted
  EXPECT_NEAR(t.expected_tokens(4), 1.0, 0.01);
  EXPECT_DOUBLE_EQ(t.expected_tokens(0), 1.0);
}

// Feeds the policy timings from a cost model and acceptance from a fixed prefix length.
int settle(double a, double b, double d, int n_accepted, int k_max) {
  DraftPolicy p;
  AcceptanceTracker acc(k_max);
  int since = 0;
  int k = 0;
  for (int round = 0; round < 200; ++round) {
    k = p.choose(acc, k_max, 1, since);
    since = k > 0 ? 0 : since + 1;
    if (k > 0) {
      for (int i = 0; i < k; ++i) p.observe_drafter(1, d);
      acc.observe(k, std::min(k, n_accepted));
    }
    p.observe_target(k + 1, a + b * (k + 1));
  }
  // The steady choice, away from a probe round.
  return p.choose(acc, k_max, 1, 0);
}

TEST(DraftPolicy, BandwidthBoundStepDraftsFully) {
  // A pass over 5 rows costs about one over 1 (GPU decode): drafts pay when accepted.
  EXPECT_EQ(settle(/*a=*/10.0, /*b=*/0.1, /*d=*/0.5, /*n_accepted=*/4, /*k_max=*/4), 4);
  EXPECT_GE(settle(10.0, 0.1, 0.5, 2, 4), 2);
}

TEST(DraftPolicy, ComputeBoundStepStopsDraftingUnlessNearlyAllAccepted) {
  // Each row costs as much as the pass (CPU decode of a small model), drafter a third.
  EXPECT_EQ(settle(/*a=*/0.0, /*b=*/3.0, /*d=*/1.0, /*n_accepted=*/1, /*k_max=*/4), 0);
  EXPECT_EQ(settle(0.0, 3.0, 1.0, 0, 4), 0);
}

TEST(DraftPolicy, ProbesAfterAQuietStretch) {
  DraftPolicy p;
  AcceptanceTracker acc(4);
  for (int i = 0; i < 40; ++i) {
    p.observe_target(1 + i % 5, 3.0 * (1 + i % 5));
    p.observe_drafter(1, 1.0);
  }
  EXPECT_EQ(p.choose(acc, 4, 1, 0), 0);
  EXPECT_EQ(p.choose(acc, 4, 1, DraftPolicy::kProbeEvery), 4);
}

}  // namespace
}  // namespace gs
