// The MTP assistant's draft steps against transformers' goldens: logits and h_next of the
// three drafter calls of one round at P = 12 (shared/golden/README.md).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "golden_util.h"
#include "model/drafter.h"

namespace gs::test {
namespace {

struct StepError {
  double logits = 0;
  double h_next = 0;
  bool argmax_ok = true;
};

// Runs the golden drafter calls with the given sliding-window convention.
std::vector<StepError> run_golden_calls(DraftSlidingWindow sliding) {
  auto backend = create_cpu_backend(2);
  const Goldens g = load_goldens();
  auto target = load_model(*backend, "golden/tiny1234-target.gguf");
  auto assistant = load_model(*backend, "golden/tiny1234-assistant.gguf");
  auto runner = make_runner(target, 64, 4);
  const int seq = runner->add_sequence().value();
  std::vector<ModelRunner::Token> prompt;
  for (int i = 0; i < 12; ++i) prompt.push_back({seq, g.greedy[i], false});
  EXPECT_TRUE(runner->decode(prompt).ok());
  auto drafter = Gemma4DrafterForward::create(assistant, target, 4, sliding);
  EXPECT_TRUE(drafter.ok()) << drafter.status().to_string();
  const int n_embd = target->config().n_embd;
  const int n_vocab = target->config().n_vocab;
  std::vector<StepError> out;
  for (size_t i = 0; i < g.draft_calls.size(); ++i) {
    const std::string prefix = "draft" + std::to_string(g.draft_calls[i]) + "_";
    // h_in from the file: these are unit checks of one step (README).
    EXPECT_TRUE(backend->upload((*drafter)->h_in().data, g.tensor(prefix + "h_in"), n_embd * sizeof(float)).ok());
    const int32_t tok = g.draft_tokens[i];
    const int32_t pos = g.draft_positions[i];
    const int32_t row = seq;
    EXPECT_TRUE((*drafter)->run({{&tok, 1}, {&pos, 1}, {&row, 1}}, runner->kv().binding()).ok());
    std::vector<float> lg(n_vocab), hn(n_embd);
    EXPECT_TRUE(backend->download(lg.data(), (*drafter)->logits().data, lg.size() * sizeof(float)).ok());
    EXPECT_TRUE(backend->download(hn.data(), (*drafter)->h_next().data, hn.size() * sizeof(float)).ok());
    const float* ref_lg = g.tensor(prefix + "logits");
    const float* ref_hn = g.tensor(prefix + "h_next");
    StepError e;
    for (int v = 0; v < n_vocab; ++v) e.logits = std::max(e.logits, static_cast<double>(std::abs(lg[v] - ref_lg[v])));
    for (int k = 0; k < n_embd; ++k) e.h_next = std::max(e.h_next, static_cast<double>(std::abs(hn[k] - ref_hn[k])));
    e.argmax_ok = argmax(lg) == argmax({ref_lg, static_cast<size_t>(n_vocab)});
    // Calls 1 and 2 feed the previous call's argmax draft.
    if (i + 1 < g.draft_tokens.size()) e.argmax_ok = e.argmax_ok && argmax(lg) == g.draft_tokens[i + 1];
    std::printf("draft call %zu (token %d, P %d): logits max |err| %.3g, h_next max |err| %.3g\n", i, tok, pos, e.logits,
                e.h_next);
    out.push_back(e);
  }
  return out;
}

// transformers' sliding mask for the assistant is inclusive (W + 1 positions before P):
// with it every step matches within 2e-3.
TEST(DrafterGolden, EachStepReproducedWithTransformersWindow) {
  const auto errs = run_golden_calls(DraftSlidingWindow::kWindowPlusOne);
  ASSERT_EQ(errs.size(), 3u);
  for (const StepError& e : errs) {
    EXPECT_LT(e.logits, 2e-3);
    EXPECT_LT(e.h_next, 2e-3);
    EXPECT_TRUE(e.argmax_ok);
  }
}

// Decision 2's window (W positions before P) is what the engine drafts with by default; on
// the goldens it differs from transformers by the one extra key, which this documents.
TEST(DrafterGolden, DecisionTwoWindowDiffersFromTheGoldens) {
  const auto errs = run_golden_calls(DraftSlidingWindow::kWindow);
  ASSERT_EQ(errs.size(), 3u);
  EXPECT_GT(errs[1].logits, 0.1);
}

// run_chain (the drafts stay on the device) against run() step by step with the host's
// argmax: two sequences of different prompts and h, 4 steps; every pick, its probability
// and the last step's h_next agree. Drafting reads only the picks, so this is what keeps
// the drafts (and the acceptance) what they were with the logits downloaded each step.
TEST(DrafterChain, EqualsStepByStepWithTheHostsArgmax) {
  auto backend = create_cpu_backend(2);
  const Goldens g = load_goldens();
  auto target = load_model(*backend, "golden/tiny1234-target.gguf");
  auto assistant = load_model(*backend, "golden/tiny1234-assistant.gguf");
  auto runner = make_runner(target, 64, 4, GgmlType::F32, 2);
  const int n_embd = target->config().n_embd;
  const int n_vocab = target->config().n_vocab;
  std::vector<int32_t> toks, pos, rows;
  for (int s = 0; s < 2; ++s) {
    const int seq = runner->add_sequence().value();
    std::vector<ModelRunner::Token> prompt;
    for (int i = 0; i < 12 - 3 * s; ++i) prompt.push_back({seq, g.greedy[static_cast<size_t>(i + s)], false});
    ASSERT_TRUE(runner->decode(prompt).ok());
    toks.push_back(g.greedy[static_cast<size_t>(12 - 2 * s)]);
    pos.push_back(runner->length(seq));
    rows.push_back(seq);
  }
  constexpr int kSteps = 4;
  auto drafter = Gemma4DrafterForward::create(assistant, target, 2, DraftSlidingWindow::kWindow, kSteps).value();
  std::vector<float> h0(static_cast<size_t>(2 * n_embd));
  for (size_t k = 0; k < h0.size(); ++k) h0[k] = std::sin(0.37f * static_cast<float>(k)) * (k < static_cast<size_t>(n_embd) ? 1.0f : 2.0f);

  // Step by step: each row fed its own argmax and h_next.
  ASSERT_TRUE(backend->upload(drafter->h_in().data, h0.data(), h0.size() * sizeof(float)).ok());
  std::vector<int32_t> want_ids;
  std::vector<float> want_p, lg(static_cast<size_t>(2 * n_vocab)), want_h(h0.size());
  std::vector<int32_t> t = toks;
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(drafter->run({t, pos, rows}, runner->kv().binding()).ok());
    ASSERT_TRUE(backend->download(lg.data(), drafter->logits().data, lg.size() * sizeof(float)).ok());
    for (int j = 0; j < 2; ++j) {
      const std::span<const float> l(lg.data() + static_cast<size_t>(j) * n_vocab, static_cast<size_t>(n_vocab));
      const int d = argmax(l);
      double sum = 0;
      for (float v : l) sum += std::exp(static_cast<double>(v) - l[static_cast<size_t>(d)]);
      want_ids.push_back(d);
      want_p.push_back(static_cast<float>(1.0 / sum));
      t[static_cast<size_t>(j)] = d;
    }
    if (i + 1 < kSteps) backend->copy(drafter->h_next(), drafter->h_in().slice_rows(0, 2));
  }
  ASSERT_TRUE(backend->download(want_h.data(), drafter->h_next().data, want_h.size() * sizeof(float)).ok());

  ASSERT_TRUE(backend->upload(drafter->h_in().data, h0.data(), h0.size() * sizeof(float)).ok());
  ASSERT_TRUE(drafter->run_chain({toks, pos, rows}, runner->kv().binding(), kSteps).ok());
  std::vector<int32_t> ids(static_cast<size_t>(kSteps) * drafter->max_rows());
  std::vector<float> p(ids.size()), h(h0.size());
  ASSERT_TRUE(backend->download(ids.data(), drafter->draft_ids(), ids.size() * sizeof(int32_t)).ok());
  ASSERT_TRUE(backend->download(p.data(), drafter->draft_p(), p.size() * sizeof(float)).ok());
  ASSERT_TRUE(backend->download(h.data(), drafter->h_next().data, h.size() * sizeof(float)).ok());
  for (int i = 0; i < kSteps; ++i) {
    for (int j = 0; j < 2; ++j) {
      const size_t at = static_cast<size_t>(i) * drafter->max_rows() + static_cast<size_t>(j);
      const size_t w = static_cast<size_t>(i) * 2 + static_cast<size_t>(j);
      EXPECT_EQ(ids[at], want_ids[w]) << "step " << i << " row " << j;
      EXPECT_NEAR(p[at], want_p[w], 1e-6 + 1e-5 * want_p[w]) << "step " << i << " row " << j;
    }
  }
  EXPECT_EQ(h, want_h);
  EXPECT_FALSE(drafter->run_chain({toks, pos, rows}, runner->kv().binding(), kSteps + 1).ok());
  EXPECT_FALSE(drafter->run_chain({toks, pos, rows}, runner->kv().binding(), 0).ok());
}

}  // namespace
}  // namespace gs::test
