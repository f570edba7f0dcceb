// Sampler: the sampler chain of one sequence. Order (llama.cpp's default chain): logit bias
// (and min_tokens' held tokens) -> penalties (repetition, frequency, presence over the last
// penalty_last_n tokens) -> greedy argmax when temperature <= 0, else top-k -> top-p -> min-p
// -> temperature -> one draw from a seeded RNG. The same chain serves plain decoding and
// speculative verification, so the accepted tokens have exactly the distribution of plain
// decoding (spec, Decision 3). The passes over a row are in logit_rows.h.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "runtime/logit_rows.h"

namespace gs {

struct SamplerConfig {
  float temperature = 0.0f;         // <= 0 (or too small to divide by): greedy (argmax; ties go to the lower id)
  int32_t top_k = 0;                // <= 0: off
  float top_p = 1.0f;               // >= 1: off
  float min_p = 0.0f;               // <= 0: off (relative to the most likely token)
  float repetition_penalty = 1.0f;  // 1: off; logit > 0 divided by it, else multiplied
  float frequency_penalty = 0.0f;   // minus count * this
  float presence_penalty = 0.0f;    // minus this when count > 0
  int32_t penalty_last_n = 64;      // history the penalties see; -1: all of it
  uint64_t seed = 0;
  // Added to these tokens' logits first, before the penalties (llama.cpp's order): OpenAI's
  // logit_bias. -inf bans a token. Ids outside the row are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Until sample() has been called min_tokens times, these tokens are never sampled (vLLM's
  // min_tokens over the end-of-generation tokens).
  int32_t min_tokens = 0;
  std::vector<int32_t> held_tokens;
};

class Sampler {
 public:
  explicit Sampler(const SamplerConfig& config);

  const SamplerConfig& config() const { return config_; }
  // Greedy at a temperature <= 0 or NaN, and at one so small that 1 / temperature is not a
  // finite float (subnormals below 2^-128, e.g. a request's "temperature": 1e-40): the draw
  // multiplies by the inverse, and an infinite one made the top logit's term 0 * inf = NaN,
  // so the draw's sums were NaN and it took the last of tied top logits; the limit of the
  // distribution as the temperature goes to 0 is the argmax.
  static bool greedy_at(float temperature);
  bool greedy() const { return greedy_at(config_.temperature); }

  // Adds a token to the penalty history (prompt tokens too, as llama.cpp does).
  void accept(int32_t token);
  void clear_history();

  // The chain's distribution over `logits` (n_vocab values; NaN counts as -inf): tokens
  // with p > 0, most likely first (ties: lower id). Greedy: the argmax with p = 1.
  void distribution(std::span<const float> logits, std::vector<TokenProb>* out);

  // One token from the chain. Greedy uses no randomness; otherwise exactly one uniform
  // draw from this sampler's RNG per call.
  int32_t sample(std::span<const float> logits);
  // The same with the uniform draw given (u in [0, 1)), for tests.
  int32_t sample_with(std::span<const float> logits, double u);

  uint64_t n_draws() const { return n_draws_; }

  // Everything sample() and accept() change (the penalty history, the RNG, the counts), to
  // take a round back: a speculative round samples several rows, and a token forced in
  // place of one of them (SlotRunner::replace_generated) must leave the sampler as plain
  // decoding would have.
  struct State {
    std::vector<int32_t> history;
    size_t history_next = 0;
    std::mt19937_64 rng;
    uint64_t n_draws = 0;
    int64_t n_sampled = 0;
  };
  State state() const { return {history_, history_next_, rng_, n_draws_, n_sampled_}; }
  void set_state(const State& s);
  // Advances the sampler as one sample() call does (its one uniform draw when not greedy, the
  // counts) without logits: replaying a token that call returned.
  void skip_draw();
  int64_t n_sampled() const { return n_sampled_; }  // sample() calls (tokens chosen)

  // Whether the logits of the last distribution() / sample() call could be sampled from: at
  // least one finite value and no +inf. False for a row of NaN and -inf only (a model that
  // computes NaN, e.g. from a corrupt file: greedy would take token 0 every step) or with an
  // overflow to +inf; the caller fails the request instead of using the token.
  bool last_logits_ok() const { return last_ok_; }

  // Whether the next sample() can take a token the request lets it take: one of `allowed`
  // (every id in [0, n_vocab) when empty) that no -inf logit bias bans and min_tokens does
  // not hold back now. False where a request's bans (llama-server's `false` bias) leave
  // nothing: the chain would then return an arbitrary banned or disallowed token, so the
  // caller fails the request instead. Cost: none without bans or held tokens.
  bool can_sample(std::span<const int32_t> allowed, int32_t n_vocab) const;
  // Whether a -inf logit bias bans a token or min_tokens holds some back now: can_sample()
  // may then be false (the caller checks each step's mask rather than drafting under one).
  bool restricts_tokens() const { return !banned_.empty() || holds_tokens(); }

 private:
  // work_ = the row with NaN as -inf, the logit bias and the penalties applied; sets last_ok_
  // from the row before them.
  void penalized(std::span<const float> logits);
  // The row needs changing before the chain: a logit bias, or a penalty with a history.
  bool adjusts_row() const;
  bool holds_tokens() const { return n_sampled_ < config_.min_tokens && !config_.held_tokens.empty(); }
  // Greedy's token (the first column of the largest adjusted value); sets last_ok_. Without
  // adjustments it reads the row in place (two vectorized passes, no copy).
  int32_t greedy_pick(std::span<const float> logits);

  SamplerConfig config_;
  std::mt19937_64 rng_;
  uint64_t n_draws_ = 0;
  int64_t n_sampled_ = 0;
  bool last_ok_ = true;
  std::vector<int32_t> history_;  // ring of the last penalty_last_n tokens (all when -1)
  size_t history_next_ = 0;
  std::vector<float> work_;       // penalized logits
  std::vector<TokenProb> cand_;
  TailScratch tail_;  // a whole-row draw's walk past its first candidates (draw_in_tail)
  std::vector<int32_t> history_sorted_;  // penalized()'s sorted copy of history_ (counts by runs)
  std::vector<int32_t> banned_;          // ids whose logit bias is -inf, sorted, distinct
  std::vector<int32_t> held_sorted_;     // config_.held_tokens, sorted, distinct
};

}  // namespace gs
