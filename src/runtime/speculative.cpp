// SpeculativeDecoder: drafting rounds, one batched verify pass, exact acceptance, rollback.
#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "runtime/acceptance.h"

namespace gs {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<std::unique_ptr<SpeculativeDecoder>> SpeculativeDecoder::create(ModelRunner& runner,
                                                                        std::shared_ptr<const Gemma4Model> assistant,
                                                                        const SpecOptions& options) {
  if (options.draft_max < 0) return make_status(StatusCode::kInvalidArgument, "draft_max {} is negative", options.draft_max);
  std::unique_ptr<SpeculativeDecoder> d(new SpeculativeDecoder(runner));
  d->options_ = options;
  const int n_seq = runner.kv().n_seq_max();
  const Gemma4Config& c = runner.config();
  if (assistant && options.draft_max > 0) {
    if (runner.kv().max_ubatch() < options.draft_max + 1) {
      return make_status(StatusCode::kInvalidArgument, "a verify pass of {} tokens exceeds the runner's ubatch of {}",
                         options.draft_max + 1, runner.kv().max_ubatch());
    }
    std::shared_ptr<const Gemma4Model> target(&runner.model(), [](const Gemma4Model*) {});
    GS_ASSIGN_OR_RETURN(d->drafter_, Gemma4DrafterForward::create(std::move(assistant), target, n_seq, options.sliding,
                                                                     options.draft_max));
  }
  d->seqs_.resize(static_cast<size_t>(n_seq));
  GS_ASSIGN_OR_RETURN(d->pending_h_buf_,
                      DeviceBuffer::make(runner.backend(), static_cast<size_t>(n_seq) * c.n_embd * sizeof(float)));
  d->pending_h_ = Mat::of(d->pending_h_buf_.as<float>(), n_seq, c.n_embd);
  GS_RETURN_IF_ERROR(runner.backend().memset_zero(d->pending_h_buf_.data(), d->pending_h_buf_.bytes()));
  return d;
}

Status SpeculativeDecoder::start(int seq) {
  if (seq < 0 || seq >= static_cast<int>(seqs_.size()) || !runner_.kv().has_sequence(seq)) {
    return make_status(StatusCode::kInvalidArgument, "unknown sequence {}", seq);
  }
  seqs_[seq] = SeqState{};
  seqs_[seq].started = true;
  return {};
}

int32_t SpeculativeDecoder::pending_token(int seq) const {
  if (seq < 0 || seq >= static_cast<int>(seqs_.size())) return -1;
  return seqs_[seq].pending;
}

Status SpeculativeDecoder::draft(std::span<SeqWork> work, std::vector<std::vector<int32_t>>* drafts) {
  drafts->assign(work.size(), {});
  if (!drafter_) return {};
  const int32_t n_ctx = runner_.kv().n_ctx();
  std::vector<int> active;     // work indices still drafting, in drafter row order
  std::vector<int> limit(work.size(), 0);
  int n_decoding = 0;
  for (const SeqWork& x : work) n_decoding += x.prefill.empty() ? 1 : 0;
  for (size_t w = 0; w < work.size(); ++w) {
    const SeqWork& x = work[w];
    if (!x.prefill.empty() || !x.allowed_tokens.empty()) continue;
    const int32_t p = runner_.length(x.seq);
    int k = std::min({x.draft_max, options_.draft_max, x.max_tokens - 1, runner_.kv().max_ubatch() - 1});
    k = std::min<int64_t>(k, static_cast<int64_t>(n_ctx) - p - 1);
    if (options_.adaptive && k > 0 && p > 0) {
      SeqState& st = seqs_[x.seq];
      k = policy_.choose(st.acceptance, k, n_decoding, st.rounds_since_draft);
      st.rounds_since_draft = k > 0 ? 0 : st.rounds_since_draft + 1;
    }
    if (k > 0 && p > 0) {
      limit[w] = k;
      active.push_back(static_cast<int>(w));
    }
  }
  if (active.empty()) return {};
  GS_RETURN_IF_ERROR(runner_.kv().sync());
  Backend& b = runner_.backend();
  std::vector<int32_t> toks, pos, rows;
  int steps = 0;
  for (size_t j = 0; j < active.size(); ++j) {
    const SeqWork& x = work[active[j]];
    b.copy(pending_h_.slice_rows(x.seq, 1), drafter_->h_in().slice_rows(static_cast<int64_t>(j), 1));
    toks.push_back(seqs_[x.seq].pending);
    pos.push_back(runner_.length(x.seq));
    rows.push_back(x.seq);
    steps = std::max(steps, limit[active[j]]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (std::any_of(active.begin(), active.end(), [&](int w) { return static_cast<bool>(work[w].allowed_after); })) {
    GS_RETURN_IF_ERROR(draft_stepwise(work, active, limit, toks, pos, rows, steps, drafts));
    if (options_.adaptive) policy_.observe_drafter(static_cast<int>(active.size()), ms_since(t0) / steps);
    return {};
  }
  // Every row drafts the round's largest count on the device (a row's drafts do not depend
  // on the others'), and only the picks are downloaded: no logits cross to the host and no
  // step waits for one, so the steps run back to back.
  GS_RETURN_IF_ERROR(drafter_->run_chain({toks, pos, rows}, runner_.kv().binding(), steps));
  const size_t stride = static_cast<size_t>(drafter_->max_rows());
  const size_t picks = static_cast<size_t>(steps) * stride;
  std::vector<int32_t> ids(picks);
  std::vector<float> p(picks);
  GS_RETURN_IF_ERROR(b.download(ids.data(), drafter_->draft_ids(), picks * sizeof(int32_t)));
  GS_RETURN_IF_ERROR(b.download(p.data(), drafter_->draft_p(), picks * sizeof(float)));
  if (options_.adaptive) policy_.observe_drafter(static_cast<int>(active.size()), ms_since(t0) / steps);
  for (size_t j = 0; j < active.size(); ++j) {
    const int w = active[j];
    for (int i = 0; i < limit[w]; ++i) {
      const size_t at = static_cast<size_t>(i) * stride + j;
      // The draft's drafter probability below draft_p_min ends the row's drafts.
      if (options_.draft_p_min > 0.0f && !(p[at] >= options_.draft_p_min)) break;
      (*drafts)[w].push_back(ids[at]);
    }
  }
  return {};
}

Status SpeculativeDecoder::draft_stepwise(std::span<SeqWork> work, const std::vector<int>& active,
                                          const std::vector<int>& limit, std::vector<int32_t> toks,
                                          const std::vector<int32_t>& pos, const std::vector<int32_t>& rows, int steps,
                                          std::vector<std::vector<int32_t>>* drafts) {
  Backend& b = runner_.backend();
  const size_t n = active.size();
  std::vector<bool> open(n, true);
  for (int step = 0; step < steps; ++step) {
    if (step > 0) {
      // Each row goes on from its own pick and hidden state at the same position P: every
      // draft step of a round uses the round's position and sees the target's cache below
      // it (spec §4.3, as run_chain). Positions past P hold no target keys yet, and their
      // pages may not exist.
      b.copy(drafter_->h_next(), drafter_->h_in().slice_rows(0, static_cast<int64_t>(n)));
    }
    GS_RETURN_IF_ERROR(drafter_->run({toks, pos, rows}, runner_.kv().binding()));
    const Mat logits = drafter_->logits();
    const auto n_vocab = static_cast<size_t>(logits.cols);
    draft_logits_.resize(n * n_vocab);
    for (size_t j = 0; j < n; ++j) {
      GS_RETURN_IF_ERROR(b.download(draft_logits_.data() + j * n_vocab, logits.row(static_cast<int64_t>(j)),
                                    n_vocab * sizeof(float)));
    }
    bool any_open = false;
    for (size_t j = 0; j < n; ++j) {
      const int w = active[j];
      std::vector<int32_t>& d = (*drafts)[static_cast<size_t>(w)];
      if (!open[j] || static_cast<int>(d.size()) >= limit[static_cast<size_t>(w)]) {
        open[j] = false;
        continue;
      }
      const std::span<const float> row(draft_logits_.data() + j * n_vocab, n_vocab);
      const std::span<const int32_t> allowed =
          work[static_cast<size_t>(w)].allowed_after ? work[static_cast<size_t>(w)].allowed_after(d) : std::span<const int32_t>();
      // Greedy pick, among the allowed ids where the row has a mask.
      int32_t pick = -1;
      float best = -INFINITY;
      const auto consider = [&](int32_t id) {
        const float v = row[static_cast<size_t>(id)];
        if (pick < 0 || v > best) {
          pick = id;
          best = v;
        }
      };
      if (allowed.empty()) {
        for (size_t id = 0; id < n_vocab; ++id) consider(static_cast<int32_t>(id));
      } else {
        for (int32_t id : allowed) {
          if (id >= 0 && static_cast<size_t>(id) < n_vocab) consider(id);
        }
      }
      if (pick < 0) {
        open[j] = false;
        continue;
      }
      if (options_.draft_p_min > 0.0f) {
        // The drafter's own probability of the pick, as run_chain's draft_p.
        double z = 0;
        for (float v : row) z += std::exp(static_cast<double>(v - best));
        const double p = 1.0 / z;  // exp(best - best) / z
        if (!(p >= options_.draft_p_min)) {
          open[j] = false;
          continue;
        }
      }
      d.push_back(pick);
      toks[j] = pick;
      any_open = any_open || static_cast<int>(d.size()) < limit[static_cast<size_t>(w)];
    }
    if (!any_open) break;
  }
  return {};
}

Status SpeculativeDecoder::step(std::span<SeqWork> work) {
  const int32_t n_ctx = runner_.kv().n_ctx();
  std::vector<bool> seen(seqs_.size(), false);
  for (SeqWork& x : work) {
    if (x.seq < 0 || x.seq >= static_cast<int>(seqs_.size()) || !seqs_[x.seq].started ||
        !runner_.kv().has_sequence(x.seq)) {
      return make_status(StatusCode::kInvalidArgument, "unknown or unstarted sequence {}", x.seq);
    }
    if (seen[x.seq]) return make_status(StatusCode::kInvalidArgument, "sequence {} appears twice in one step", x.seq);
    seen[x.seq] = true;
    if (!x.sampler) return make_status(StatusCode::kInvalidArgument, "sequence {} has no sampler", x.seq);
    const int32_t len = runner_.length(x.seq);
    if (!x.prefill.empty()) {
      if (seqs_[x.seq].pending >= 0) {
        return make_status(StatusCode::kInvalidArgument, "sequence {} has a pending token; it cannot take prompt tokens",
                           x.seq);
      }
      if (static_cast<int64_t>(len) + static_cast<int64_t>(x.prefill.size()) > n_ctx) {
        return make_status(StatusCode::kOutOfRange, "sequence {}: {} + {} prompt tokens exceed the context of {}", x.seq,
                           len, x.prefill.size(), n_ctx);
      }
    } else {
      if (seqs_[x.seq].pending < 0) return make_status(StatusCode::kInvalidArgument, "sequence {} has no pending token", x.seq);
      if (x.max_tokens < 1) return make_status(StatusCode::kInvalidArgument, "max_tokens {} < 1", x.max_tokens);
      if (len >= n_ctx) return make_status(StatusCode::kOutOfRange, "sequence {} has filled its context of {}", x.seq, n_ctx);
    }
  }

  std::vector<std::vector<int32_t>> drafts;
  GS_RETURN_IF_ERROR(draft(work, &drafts));

  // One target pass over every sequence's rows.
  std::vector<ModelRunner::Token> batch;
  std::vector<int> out_base(work.size(), 0);
  std::vector<int32_t> length_before(work.size(), 0);
  int n_out = 0;
  for (size_t w = 0; w < work.size(); ++w) {
    const SeqWork& x = work[w];
    length_before[w] = runner_.length(x.seq);
    out_base[w] = n_out;
    if (!x.prefill.empty()) {
      for (size_t i = 0; i < x.prefill.size(); ++i) {
        const bool out = x.sample && i + 1 == x.prefill.size();
        batch.push_back({x.seq, x.prefill[i], out});
        n_out += out ? 1 : 0;
      }
    } else {
      batch.push_back({x.seq, seqs_[x.seq].pending, true});
      for (int32_t d : drafts[w]) batch.push_back({x.seq, d, true});
      n_out += 1 + static_cast<int>(drafts[w].size());
    }
  }
  if (n_out > runner_.max_outputs()) {
    return make_status(StatusCode::kInvalidArgument, "a step of {} output rows exceeds the runner's {}", n_out,
                       runner_.max_outputs());
  }
  const auto t_pass = std::chrono::steady_clock::now();
  GS_RETURN_IF_ERROR(runner_.decode(batch));
  // Decode-only passes time the target's cost per row for adaptive drafting (prefill
  // chunks take another path on some backends and would bend the fit).
  const bool decode_only = std::all_of(work.begin(), work.end(), [](const SeqWork& x) { return x.prefill.empty(); });
  if (options_.adaptive && decode_only) policy_.observe_target(static_cast<int>(batch.size()), ms_since(t_pass));

  // Sample, accept, roll back.
  Backend& b = runner_.backend();
  for (size_t w = 0; w < work.size(); ++w) {
    SeqWork& x = work[w];
    SeqState& st = seqs_[x.seq];
    x.tokens.clear();
    x.logit_rows.clear();
    x.n_drafted = 0;
    x.n_accepted = 0;
    if (!x.prefill.empty()) {
      for (int32_t t : x.prefill) x.sampler->accept(t);
      if (!x.sample) continue;
      const int row = out_base[w];
      const int32_t t = x.sampler->sample(masked(runner_.logits(row), x.allowed_tokens));
      if (!x.sampler->last_logits_ok()) return non_finite_logits(x.seq);
      x.sampler->accept(t);
      x.tokens.push_back(t);
      x.logit_rows.push_back(row);
      st.pending = t;
      b.copy(runner_.hidden(row), pending_h_.slice_rows(x.seq, 1));
      continue;
    }
    const std::vector<int32_t>& d = drafts[w];
    const int k = static_cast<int>(d.size());
    const int base = out_base[w];
    const auto row_mask = [&](int i) {
      if (x.allowed_after) return x.allowed_after(std::span<const int32_t>(d).first(static_cast<size_t>(i)));
      return x.allowed_tokens;
    };
    AcceptResult acc = accept_drafts(d, [&](int i) { return masked(runner_.logits(base + i), row_mask(i)); },
                                     *x.sampler, x.max_tokens, x.stop_tokens);
    if (!acc.logits_ok) return non_finite_logits(x.seq);
    x.tokens = std::move(acc.tokens);
    x.n_accepted = acc.n_accepted;
    for (size_t i = 0; i < x.tokens.size(); ++i) x.logit_rows.push_back(base + static_cast<int>(i));
    x.n_drafted = k;
    const int m = static_cast<int>(x.tokens.size()) - 1;
    // Keep the newest token and the accepted drafts before the new pending token.
    const Status st_trunc = runner_.truncate(x.seq, length_before[w] + m + 1);
    if (!st_trunc.ok()) return Status(StatusCode::kInternal, "rollback failed: " + st_trunc.message());
    st.pending = x.tokens.back();
    // Decision 5: the next round starts from the hidden state of the row that produced it.
    b.copy(runner_.hidden(out_base[w] + m), pending_h_.slice_rows(x.seq, 1));
    if (k > 0) st.acceptance.observe(k, x.n_accepted);
    st.stats.add_round(k, x.n_accepted, static_cast<int>(x.tokens.size()));
    stats_.add_round(k, x.n_accepted, static_cast<int>(x.tokens.size()));
  }
  return {};
}

Status SpeculativeDecoder::non_finite_logits(int seq) {
  return make_status(StatusCode::kInternal,
                     "the model computed no usable logits for sequence {} (NaN, or no finite value among the "
                     "allowed tokens, or +inf): the model file may be corrupt",
                     seq);
}

std::span<const float> SpeculativeDecoder::masked(std::span<const float> logits, std::span<const int32_t> allowed) {
  if (allowed.empty()) return logits;
  masked_logits_.assign(logits.size(), -INFINITY);
  for (int32_t id : allowed) {
    const auto i = static_cast<size_t>(id);
    if (id >= 0 && i < logits.size()) masked_logits_[i] = logits[i];
  }
  return masked_logits_;
}

Result<SpeculativeDecoder::Snapshot> SpeculativeDecoder::save(int seq) const {
  if (seq < 0 || seq >= static_cast<int>(seqs_.size()) || !seqs_[seq].started) {
    return make_status(StatusCode::kInvalidArgument, "unknown sequence {}", seq);
  }
  Snapshot s;
  s.length = runner_.length(seq);
  s.pending = seqs_[seq].pending;
  s.hidden.resize(static_cast<size_t>(pending_h_.cols));
  GS_RETURN_IF_ERROR(runner_.backend().download(s.hidden.data(), pending_h_.row(seq), s.hidden.size() * sizeof(float)));
  return s;
}

Status SpeculativeDecoder::restore(int seq, const Snapshot& s) {
  if (seq < 0 || seq >= static_cast<int>(seqs_.size()) || !seqs_[seq].started) {
    return make_status(StatusCode::kInvalidArgument, "unknown sequence {}", seq);
  }
  if (s.length > runner_.length(seq) || s.hidden.size() != static_cast<size_t>(pending_h_.cols)) {
    return make_status(StatusCode::kInvalidArgument, "snapshot does not fit sequence {}", seq);
  }
  GS_RETURN_IF_ERROR(runner_.truncate(seq, s.length));
  seqs_[seq].pending = s.pending;
  return runner_.backend().upload(pending_h_.row(seq), s.hidden.data(), s.hidden.size() * sizeof(float));
}

}  // namespace gs
