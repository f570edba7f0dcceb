// The Gemma 4 target forward pass: embedding, the layers (spec §3.3), final norm, tied head
// and softcap (spec §3.4), as named backend op calls. Shapes: [rows, cols].
#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"

namespace gs {

namespace {

// Carves consecutive f32 matrices out of one allocation (64-byte aligned starts).
class Carver {
 public:
  explicit Carver(float* base) : base_(base) {}
  Mat take(int64_t rows, int64_t cols) {
    Mat m = Mat::of(base_ ? base_ + used_ : nullptr, rows, cols);
    used_ += (rows * cols + 15) / 16 * 16;
    return m;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

}  // namespace

Result<std::unique_ptr<Gemma4Forward>> Gemma4Forward::create(std::shared_ptr<const Gemma4Model> model, int max_tokens,
                                                             int max_outputs) {
  if (!model) return make_status(StatusCode::kInvalidArgument, "no model");
  const Gemma4Config& c = model->config();
  if (c.is_assistant()) return make_status(StatusCode::kInvalidArgument, "Gemma4Forward runs a target, not an assistant");
  if (max_tokens <= 0 || max_outputs <= 0) {
    return make_status(StatusCode::kInvalidArgument, "max_tokens {} and max_outputs {} must be positive", max_tokens,
                       max_outputs);
  }
  std::unique_ptr<Gemma4Forward> f(new Gemma4Forward());
  f->model_ = std::move(model);
  f->max_tokens_ = max_tokens;
  f->max_outputs_ = max_outputs;
  Backend& b = f->model_->backend();
  const int64_t t = max_tokens;
  auto plan = [&](float* base) {
    Carver cv(base);
    f->x_ = cv.take(t, c.n_embd);
    f->s_.a = cv.take(t, c.n_embd);
    f->s_.q = cv.take(t, c.max_q_width());
    f->s_.k = cv.take(t, c.max_kv_width());
    f->s_.v = cv.take(t, c.max_kv_width());
    f->s_.att = cv.take(t, c.max_q_width());
    f->s_.o = cv.take(t, c.n_embd);
    f->s_.gate = cv.take(t, c.max_ff());
    f->s_.up = cv.take(t, c.max_ff());
    f->hidden_out_ = cv.take(max_outputs, c.n_embd);
    f->logits_ = cv.take(max_outputs, c.n_vocab);
    return cv.used();
  };
  const int64_t n_floats = plan(nullptr);
  GS_ASSIGN_OR_RETURN(f->act_, DeviceBuffer::make(b, static_cast<size_t>(n_floats) * sizeof(float)));
  plan(f->act_.as<float>());
  const size_t n_inputs = static_cast<size_t>(kNumInputs) * std::max(max_tokens, max_outputs);
  GS_ASSIGN_OR_RETURN(f->inputs_, DeviceBuffer::make(b, n_inputs * sizeof(int32_t)));
  f->staging_.assign(n_inputs, 0);
  return f;
}

Status Gemma4Forward::run(const ForwardBatch& batch, const KvCacheBinding& kv) {
  const Gemma4Config& c = model_->config();
  const size_t n = batch.tokens.size();
  const size_t n_out = batch.output_rows.size();
  if (n == 0) return make_status(StatusCode::kInvalidArgument, "empty batch");
  if (n > static_cast<size_t>(max_tokens_)) {
    return make_status(StatusCode::kInvalidArgument, "batch of {} tokens exceeds the planned {}", n, max_tokens_);
  }
  if (n_out > static_cast<size_t>(max_outputs_)) {
    return make_status(StatusCode::kInvalidArgument, "{} output rows exceed the planned {}", n_out, max_outputs_);
  }
  if (batch.positions.size() != n || batch.seq_rows.size() != n) {
    return make_status(StatusCode::kInvalidArgument, "batch arrays differ in length ({} tokens, {} positions, {} rows)", n,
                       batch.positions.size(), batch.seq_rows.size());
  }
  if (static_cast<int>(kv.layers.size()) != c.n_layer) {
    return make_status(StatusCode::kInvalidArgument, "KV cache has {} layers, the model {}", kv.layers.size(), c.n_layer);
  }
  const int64_t stride = std::max(max_tokens_, max_outputs_);
  auto section = [&](Input i) { return staging_.data() + static_cast<int64_t>(i) * stride; };
  const int32_t w = c.sliding_window;
  bool one_seq = true;  // every token of one sequence (an attention kernel choice, hence in the step key)
  for (size_t i = 0; i < n; ++i) {
    const int32_t tok = batch.tokens[i];
    const int32_t pos = batch.positions[i];
    const int32_t row = batch.seq_rows[i];
    one_seq = one_seq && row == batch.seq_rows[0];
    if (tok < 0 || tok >= c.n_vocab) {
      return make_status(StatusCode::kInvalidArgument, "token id {} is outside the vocabulary [0, {})", tok, c.n_vocab);
    }
    if (pos < 0 || pos >= kv.n_ctx) {
      return make_status(StatusCode::kInvalidArgument, "position {} is outside the context [0, {})", pos, kv.n_ctx);
    }
    if (row < 0 || row >= kv.n_rows) {
      return make_status(StatusCode::kInvalidArgument, "sequence row {} is outside [0, {})", row, kv.n_rows);
    }
    int64_t slot_swa = 0, slot_full = 0;
    if (c.has_sliding()) slot_swa = kv_slot(kv.swa_pages_host, row, pos);
    if (c.has_full()) slot_full = kv_slot(kv.full_pages_host, row, pos);
    if (slot_swa < 0 || slot_full < 0) {
      return make_status(StatusCode::kFailedPrecondition, "position {} of sequence row {} has no KV slot", pos, row);
    }
    section(kTokens)[i] = tok;
    section(kPos)[i] = pos;
    section(kSeq)[i] = row;
    section(kSlotSwa)[i] = static_cast<int32_t>(slot_swa);
    section(kSlotFull)[i] = static_cast<int32_t>(slot_full);
    section(kLoSwa)[i] = std::max(0, pos - w + 1);
    section(kHiSwa)[i] = pos;
    section(kLoFull)[i] = 0;
    section(kHiFull)[i] = pos;
  }
  for (size_t j = 0; j < n_out; ++j) {
    const int32_t r = batch.output_rows[j];
    if (r < 0 || static_cast<size_t>(r) >= n) {
      return make_status(StatusCode::kInvalidArgument, "output row {} is outside the batch of {}", r, n);
    }
    section(kOutRows)[j] = r;
  }
  Backend& b = model_->backend();
  GS_RETURN_IF_ERROR(upload_step_inputs(b, inputs_, staging_, kv, &bound_kv_));
  n_outputs_ = static_cast<int>(n_out);
  const int nn = static_cast<int>(n);
  const int no = static_cast<int>(n_out);
  if (dump_) {
    record(nn, no, one_seq, kv);
  } else {
    // Shapes that recur (Backend::run_step): a pass whose every row wants logits (decode,
    // verify) and a full pass (a long prompt's chunks but its last). A prompt's last chunk has a
    // length of its own.
    const bool recurring = no == nn || nn == max_tokens_;
    b.run_step((static_cast<uint64_t>(nn) << 32) | static_cast<uint32_t>(no) | (one_seq ? 1ull << 31 : 0ull), recurring,
               [&] { record(nn, no, one_seq, kv); });
  }
  return {};
}

void Gemma4Forward::record(int n, int n_out, bool one_seq, const KvCacheBinding& kv) {
  const Gemma4Config& c = model_->config();
  const Gemma4Weights& w = model_->weights();
  Backend& b = model_->backend();
  OpTrace t(b, &dump_);
  const int64_t stride = std::max(max_tokens_, max_outputs_);
  auto dev = [&](Input i) { return inputs_.as<int32_t>() + static_cast<int64_t>(i) * stride; };
  const AttentionInputs attn_in{dev(kSeq), dev(kLoSwa), dev(kHiSwa), dev(kLoFull), dev(kHiFull), one_seq ? 1 : 0};
  const int64_t e = c.n_embd;
  const Mat x = x_.slice_rows(0, n);

  // x = token_embd[tokens] * sqrt(n_embd), the scale in f32 (spec §3.2, Decision 1).
  b.embed(w.token_embd, dev(kTokens), std::sqrt(static_cast<float>(c.n_embd)), x);
  t.mark("inp_scaled", -1, x);
  // The first layer's input norm; every later one (and the output norm) comes with the
  // previous layer's tail.
  b.rms_norm(x, c.n_layer > 0 ? w.layers[0].attn_norm : w.output_norm, e, c.rms_eps, Mat::of(s_.a.data, n, e));

  for (int il = 0; il < c.n_layer; ++il) {
    const Gemma4LayerConfig& l = c.layers[il];
    const Gemma4LayerWeights& lw = w.layers[il];
    const Mat a = Mat::of(s_.a.data, n, e);
    const Mat q = Mat::of(s_.q.data, n, l.q_width());
    const Mat k = Mat::of(s_.k.data, n, l.kv_width());
    const Mat v = Mat::of(s_.v.data, n, l.kv_width());
    const Mat att = Mat::of(s_.att.data, n, l.q_width());
    const KvLayerView& kvl = kv.layers[il];
    t.mark("attn_norm", il, a);

    {  // [n, n_embd] -> q [n, n_head * head_dim], k and v [n, n_head_kv * head_dim], in one
       // launch where the backend can; without attn_v, V is the raw K projection (spec §3.3)
      const Weight* ws[3] = {&lw.attn_q, &lw.attn_k, &lw.attn_v};
      const Mat ys[3] = {q, k, v};
      b.matmul_multi(ws, ys, l.has_v ? 3 : 2, a);
    }
    t.mark("q", il, q);
    t.mark("k", il, k);
    QkvNormRopeArgs qa;
    qa.q = q;
    qa.k = k;
    qa.v = v;
    qa.v_from_k = !l.has_v;
    qa.q_weight = lw.attn_q_norm;
    qa.k_weight = lw.attn_k_norm;
    qa.eps = c.rms_eps;
    qa.pos = dev(kPos);
    qa.rope = layer_rope_args(c, l, w.rope_freqs);
    qa.kv = kvl;
    qa.slots = dev(l.sliding ? kSlotSwa : kSlotFull);
    attention_inputs(t, il, qa);  // per-head norms (V without gain), RoPE, KV store

    b.attention(layer_attention_args(c, l, kv, kvl, q, att, attn_in));
    t.mark("attn", il, att);

    layer_tail(t, c, il, lw, x_, s_, n, il + 1 < c.n_layer ? w.layers[il + 1].attn_norm : w.output_norm);
  }

  const Mat xn = Mat::of(s_.a.data, n, e);  // output_norm(x), from the last layer's tail
  t.mark("output_norm", -1, xn);
  if (n_out == 0) return;
  const Mat h = hidden_out_.slice_rows(0, n_out);
  const Mat lg = logits_.slice_rows(0, n_out);
  b.gather_rows(xn, dev(kOutRows), h);
  t.mark("result_norm", -1, h);
  b.matmul(w.output, h, lg);  // tied head: [n_out, n_embd] -> [n_out, n_vocab]
  if (c.final_logit_softcap > 0) b.softcap(lg, c.final_logit_softcap);
  t.mark("logits", -1, lg);
}

}  // namespace gs
