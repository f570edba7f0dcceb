// The MTP assistant's draft step (spec §4.2) as named backend op calls.
#include "model/drafter.h"

#include <algorithm>
#include <cmath>

namespace gs {

Result<std::unique_ptr<Gemma4DrafterForward>> Gemma4DrafterForward::create(std::shared_ptr<const Gemma4Model> assistant,
                                                                           std::shared_ptr<const Gemma4Model> target,
                                                                           int max_rows, DraftSlidingWindow sliding,
                                                                           int max_steps) {
  if (!assistant || !target) return make_status(StatusCode::kInvalidArgument, "no model");
  if (max_rows <= 0) return make_status(StatusCode::kInvalidArgument, "max_rows {} must be positive", max_rows);
  if (max_steps <= 0 || max_steps > 4096)
    return make_status(StatusCode::kInvalidArgument, "max_steps {} must be in [1, 4096]", max_steps);
  if (&assistant->backend() != &target->backend()) {
    return make_status(StatusCode::kInvalidArgument, "the drafter and the target must be on the same backend");
  }
  std::unique_ptr<Gemma4DrafterForward> f(new Gemma4DrafterForward());
  f->config_ = assistant->config();
  GS_RETURN_IF_ERROR(pair_assistant_with_target(target->config(), &f->config_));
  f->assistant_ = std::move(assistant);
  f->target_ = std::move(target);
  f->max_rows_ = max_rows;
  f->max_steps_ = max_steps;
  f->sliding_ = sliding;
  const Gemma4Config& c = f->config_;
  const int64_t r = max_rows;
  auto plan = [&](float* base) {
    int64_t used = 0;
    auto take = [&](int64_t rows, int64_t cols) {
      Mat m = Mat::of(base ? base + used : nullptr, rows, cols);
      used += (rows * cols + 15) / 16 * 16;
      return m;
    };
    f->h_in_ = take(r, c.n_embd_out);
    f->cat_ = take(r, 2 * static_cast<int64_t>(c.n_embd_out));
    f->u_ = take(r, c.n_embd);
    f->s_.a = take(r, c.n_embd);
    f->s_.q = take(r, c.max_q_width());
    f->s_.att = take(r, c.max_q_width());
    f->s_.o = take(r, c.n_embd);
    f->s_.gate = take(r, c.max_ff());
    f->s_.up = take(r, c.max_ff());
    f->logits_ = take(r, c.n_vocab);
    f->h_next_ = take(r, c.n_embd_out);
    return used;
  };
  Backend& b = f->assistant_->backend();
  GS_ASSIGN_OR_RETURN(f->act_, DeviceBuffer::make(b, static_cast<size_t>(plan(nullptr)) * sizeof(float)));
  plan(f->act_.as<float>());
  f->staging_.assign(static_cast<size_t>(kNumInputs) * max_rows, 0);
  GS_ASSIGN_OR_RETURN(f->inputs_, DeviceBuffer::make(b, f->staging_.size() * sizeof(int32_t)));
  GS_RETURN_IF_ERROR(b.memset_zero(f->act_.data(), f->act_.bytes()));
  const size_t picks = static_cast<size_t>(max_steps) * max_rows;
  GS_ASSIGN_OR_RETURN(f->drafts_, DeviceBuffer::make(b, picks * (sizeof(int32_t) + sizeof(float))));
  f->draft_p_ = reinterpret_cast<float*>(f->drafts_.as<int32_t>() + picks);
  return f;
}

Status Gemma4DrafterForward::run(const DraftBatch& batch, const KvCacheBinding& kv) {
  GS_RETURN_IF_ERROR(upload_batch(batch, kv));
  Backend& b = assistant_->backend();
  const int32_t* tokens = input(kTokens);
  if (dump_) {
    record(n_rows_, kv, tokens);
  } else {
    // Keys distinct from the target forward's: the top bit marks the drafter.
    b.run_step((uint64_t{1} << 63) | static_cast<uint64_t>(n_rows_), true, [&] { record(n_rows_, kv, tokens); });
  }
  return {};
}

Status Gemma4DrafterForward::run_chain(const DraftBatch& batch, const KvCacheBinding& kv, int steps) {
  if (steps < 1 || steps > max_steps_)
    return make_status(StatusCode::kInvalidArgument, "{} draft steps (planned 1..{})", steps, max_steps_);
  GS_RETURN_IF_ERROR(upload_batch(batch, kv));
  Backend& b = assistant_->backend();
  const int n = n_rows_;
  for (int i = 0; i < steps; ++i) {
    int32_t* ids = picks(i);
    float* p = draft_p_ + static_cast<int64_t>(i) * max_rows_;
    const int32_t* tokens = i == 0 ? input(kTokens) : picks(i - 1);
    auto body = [&, i] {
      if (i > 0) b.copy(h_next_.slice_rows(0, n), h_in_.slice_rows(0, n));
      record(n, kv, tokens);
      b.argmax_rows(logits_.slice_rows(0, n), ids, p);
    };
    if (dump_) {
      body();
    } else {  // step i of a chain: bits 63 and 62, the step in bits 32.., the rows below
      b.run_step((uint64_t{3} << 62) | (static_cast<uint64_t>(i) << 32) | static_cast<uint64_t>(n), true, body);
    }
  }
  return {};
}

Status Gemma4DrafterForward::upload_batch(const DraftBatch& batch, const KvCacheBinding& kv) {
  const Gemma4Config& c = config_;
  const size_t n = batch.tokens.size();
  if (n == 0 || n > static_cast<size_t>(max_rows_)) {
    return make_status(StatusCode::kInvalidArgument, "draft batch of {} rows (planned 1..{})", n, max_rows_);
  }
  if (batch.positions.size() != n || batch.seq_rows.size() != n) {
    return make_status(StatusCode::kInvalidArgument, "draft batch arrays differ in length");
  }
  if (static_cast<int>(kv.layers.size()) != target_->config().n_layer) {
    return make_status(StatusCode::kInvalidArgument, "KV cache has {} layers, the target {}", kv.layers.size(),
                       target_->config().n_layer);
  }
  auto section = [&](Input i) { return staging_.data() + static_cast<int64_t>(i) * max_rows_; };
  const int32_t w = c.sliding_window + (sliding_ == DraftSlidingWindow::kWindowPlusOne ? 1 : 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t tok = batch.tokens[i];
    const int32_t pos = batch.positions[i];
    const int32_t row = batch.seq_rows[i];
    if (tok < 0 || tok >= target_->config().n_vocab) {
      return make_status(StatusCode::kInvalidArgument, "token id {} is outside the vocabulary", tok);
    }
    if (pos <= 0 || pos >= kv.n_ctx) {
      return make_status(StatusCode::kInvalidArgument, "draft position {} is outside [1, {})", pos, kv.n_ctx);
    }
    if (row < 0 || row >= kv.n_rows) return make_status(StatusCode::kInvalidArgument, "bad sequence row {}", row);
    section(kTokens)[i] = tok;
    section(kPos)[i] = pos;
    section(kSeq)[i] = row;
    // Decision 2: the newest token (at P) is not cached; sliding sees the w positions before P.
    section(kLoSwa)[i] = std::max(0, pos - w);
    section(kHiSwa)[i] = pos - 1;
    section(kLoFull)[i] = 0;
    section(kHiFull)[i] = pos - 1;
  }
  Backend& b = assistant_->backend();
  GS_RETURN_IF_ERROR(upload_step_inputs(b, inputs_, staging_, kv, &bound_kv_));
  n_rows_ = static_cast<int>(n);
  return {};
}

void Gemma4DrafterForward::record(int n, const KvCacheBinding& kv, const int32_t* tokens) {
  const Gemma4Config& c = config_;
  const Gemma4Weights& w = assistant_->weights();
  const Gemma4Weights& tw = target_->weights();
  Backend& b = assistant_->backend();
  OpTrace t(b, &dump_);
  const AttentionInputs attn_in{input(kSeq), input(kLoSwa), input(kHiSwa), input(kLoFull), input(kHiFull)};
  const int64_t e = c.n_embd;
  const int64_t et = c.n_embd_out;
  const Mat cat = cat_.slice_rows(0, n);
  const Mat u = u_.slice_rows(0, n);

  // [e, h]: the target's scaled embedding of the token, then the recurrent h (spec §4.2).
  b.embed(tw.token_embd, tokens, std::sqrt(static_cast<float>(et)), cat.slice_cols(0, et));
  b.copy(h_in_.slice_rows(0, n), cat.slice_cols(et, et));
  t.mark("draft_inp", -1, cat);
  b.matmul(w.nextn_pre_projection, cat, u);  // [n, 2 * n_embd_out] -> [n, n_embd]
  t.mark("pre_proj", -1, u);
  // The first layer's input norm; the later ones and the output norm come with the tails.
  b.rms_norm(u, c.n_layer > 0 ? w.layers[0].attn_norm : w.output_norm, e, c.rms_eps, Mat::of(s_.a.data, n, e));

  for (int il = 0; il < c.n_layer; ++il) {
    const Gemma4LayerConfig& l = c.layers[il];
    const Gemma4LayerWeights& lw = w.layers[il];
    const Mat a = Mat::of(s_.a.data, n, e);
    const Mat q = Mat::of(s_.q.data, n, l.q_width());
    const Mat att = Mat::of(s_.att.data, n, l.q_width());
    t.mark("attn_norm", il, a);
    b.matmul(lw.attn_q, a, q);
    t.mark("q", il, q);
    QkvNormRopeArgs qa;  // Q only: the target's K/V (spec §4.3)
    qa.q = q;
    qa.q_weight = lw.attn_q_norm;
    qa.eps = c.rms_eps;
    qa.pos = input(kPos);
    qa.rope = layer_rope_args(c, l, w.rope_freqs);
    attention_inputs(t, il, qa);

    b.attention(layer_attention_args(c, l, kv, kv.layers[l.kv_layer], q, att, attn_in));
    t.mark("attn", il, att);

    layer_tail(t, c, il, lw, u_, s_, n, il + 1 < c.n_layer ? w.layers[il + 1].attn_norm : w.output_norm);
  }

  const Mat nrm = Mat::of(s_.a.data, n, e);  // output_norm(u), from the last layer's tail
  t.mark("output_norm", -1, nrm);
  const Mat lg = logits_.slice_rows(0, n);
  b.matmul(w.token_embd, nrm, lg);  // the assistant's own tied head; no softcap
  t.mark("logits", -1, lg);
  const Mat hn = h_next_.slice_rows(0, n);
  b.matmul(w.nextn_post_projection, nrm, hn);  // [n, n_embd] -> [n, n_embd_out]
  t.mark("h_next", -1, hn);
}

}  // namespace gs
