// Shared forward pieces: op tracing, step input upload, per-layer RoPE/attention arguments, layer tail.
#include "model/forward_blocks.h"

#include <cmath>

#include "core/check.h"

namespace gs {

void OpTrace::mark(std::string_view name, int layer, Mat m) {
  if (!dumping()) return;
  GS_CHECK(backend_.synchronize().ok());
  host_.resize(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    GS_CHECK(backend_.download(host_.data() + r * m.cols, m.row(r), static_cast<size_t>(m.cols) * sizeof(float)).ok());
  }
  (*dump_)(DumpTensor{name, layer, m.rows, m.cols, host_.data()});
}

Status upload_step_inputs(Backend& b, const DeviceBuffer& inputs, const std::vector<int32_t>& staging,
                          const KvCacheBinding& kv, const void** bound_kv) {
  GS_RETURN_IF_ERROR(b.upload(inputs.data(), staging.data(), staging.size() * sizeof(int32_t)));
  const void* kv_id = kv.layers.empty() ? nullptr : kv.layers[0].k;
  if (kv_id != *bound_kv) {
    b.invalidate_steps();
    *bound_kv = kv_id;
  }
  return {};
}

RopeArgs layer_rope_args(const Gemma4Config& c, const Gemma4LayerConfig& l, const float* rope_freqs) {
  RopeArgs a;
  a.head_dim = l.head_dim;
  a.n_dims = l.n_rot;
  a.theta = l.rope_theta;
  if (l.sliding) return a;
  a.freq_factors = rope_freqs;
  const RopeScaling& rs = c.rope_scaling;
  switch (rs.type) {
    case RopeScalingType::kNone: break;
    case RopeScalingType::kLinear: a.freq_scale = 1.0f / rs.factor; break;
    case RopeScalingType::kYarn: {
      a.freq_scale = 1.0f / rs.factor;
      a.ext_factor = rs.ext_factor < 0 ? 1.0f : rs.ext_factor;
      a.attn_factor = rs.attn_factor;
      const int n_ctx_orig = rs.n_ctx_orig > 0 ? rs.n_ctx_orig : c.n_ctx_train;
      rope_yarn_corr_dims(l.n_rot, n_ctx_orig, l.rope_theta, rs.beta_fast, rs.beta_slow, &a.corr_lo, &a.corr_hi);
      break;
    }
  }
  return a;
}

AttentionArgs layer_attention_args(const Gemma4Config& c, const Gemma4LayerConfig& l, const KvCacheBinding& kv,
                                   const KvLayerView& kvl, Mat q, Mat out, const AttentionInputs& in) {
  AttentionArgs aa;
  aa.q = q;
  aa.out = out;
  aa.n_head = l.n_head;
  aa.head_dim = l.head_dim;
  aa.scale = 1.0f;  // Gemma 4: no 1/sqrt(d), no attention softcap
  aa.kv = kvl;
  aa.pages = l.sliding ? kv.swa_pages : kv.full_pages;
  aa.tok_seq = in.tok_seq;
  aa.kv_lo = l.sliding ? in.lo_swa : in.lo_full;
  aa.kv_hi = l.sliding ? in.hi_swa : in.hi_full;
  aa.max_kv_len = l.sliding ? c.sliding_window : kv.n_ctx;
  aa.n_seqs = in.n_seqs;
  // V is RMS-normed without gain before it is cached (attention_inputs; spec §3.1.1 v_norm),
  // so |V| <= sqrt(head_dim) elementwise, and each output is a convex combination of V rows.
  aa.out_abs_bound = std::sqrt(static_cast<float>(l.head_dim));
  return aa;
}

void attention_inputs(OpTrace& t, int il, const QkvNormRopeArgs& a) {
  Backend& b = t.b();
  if (!t.dumping()) {
    b.qkv_norm_rope_store(a);
    return;
  }
  // The op sequence of Backend::qkv_norm_rope_store, each result marked.
  const int64_t d = a.rope.head_dim;
  b.rms_norm(a.q, a.q_weight, d, a.eps, a.q);  // per head
  t.mark("q_norm", il, a.q);
  b.rope(a.q, a.pos, a.rope);
  t.mark("q_rope", il, a.q);
  if (a.k.cols == 0) return;
  if (a.v_from_k) b.copy(a.k, a.v);  // K = V layers: V is the raw K projection
  t.mark("v", il, a.v);
  b.rms_norm(a.k, a.k_weight, d, a.eps, a.k);
  t.mark("k_norm", il, a.k);
  b.rope(a.k, a.pos, a.rope);
  t.mark("k_rope", il, a.k);
  b.rms_norm(a.v, nullptr, d, a.eps, a.v);  // weightless V norm
  t.mark("v_norm", il, a.v);
  b.kv_store(a.k, a.v, a.kv, a.slots);
}

void layer_tail(OpTrace& t, const Gemma4Config& c, int il, const Gemma4LayerWeights& w, Mat x, const LayerScratch& s,
                int64_t n, const float* next_norm) {
  Backend& b = t.b();
  const Gemma4LayerConfig& l = c.layers[il];
  const int64_t e = c.n_embd;
  const Mat att = Mat::of(s.att.data, n, l.q_width());
  const Mat o = Mat::of(s.o.data, n, e);
  const Mat a = Mat::of(s.a.data, n, e);
  const Mat gate = Mat::of(s.gate.data, n, l.n_ff);
  const Mat up = Mat::of(s.up.data, n, l.n_ff);
  const Mat xn = x.slice_rows(0, n);

  b.matmul(w.attn_output, att, o);  // [n, q_width] -> [n, n_embd]
  t.mark("attn_out", il, o);
  if (t.dumping()) {
    b.rms_norm(o, w.post_attention_norm, e, c.rms_eps, o);
    t.mark("attn_post_norm", il, o);
    b.add(xn, o, xn);
    t.mark("attn_residual", il, xn);
    b.rms_norm(xn, w.ffn_norm, e, c.rms_eps, a);
  } else {
    b.add_rms_norm(xn, o, w.post_attention_norm, 1.0f, w.ffn_norm, c.rms_eps, a);
  }
  t.mark("ffn_norm", il, a);
  {  // [n, n_embd] -> gate, up [n, n_ff], in one launch where the backend can
    const Weight* ws[2] = {&w.ffn_gate, &w.ffn_up};
    const Mat ys[2] = {gate, up};
    b.matmul_multi(ws, ys, 2, a);
  }
  t.mark("ffn_gate", il, gate);
  t.mark("ffn_up", il, up);
  b.gelu_mul(gate, up, gate);  // GELU(tanh) on the gate branch (spec §3.1.2)
  t.mark("ffn_act", il, gate);
  b.matmul(w.ffn_down, gate, o);  // [n, n_ff] -> [n, n_embd]
  t.mark("ffn_out", il, o);
  if (t.dumping()) {
    b.rms_norm(o, w.post_ffw_norm, e, c.rms_eps, o);
    t.mark("ffn_post_norm", il, o);
    b.add(xn, o, xn);
    t.mark("ffn_residual", il, xn);
    b.scale(xn, w.layer_output_scale);  // scales the whole residual stream (spec §3.3)
    t.mark("l_out", il, xn);
    b.rms_norm(xn, next_norm, e, c.rms_eps, a);
  } else {
    b.add_rms_norm(xn, o, w.post_ffw_norm, w.layer_output_scale, next_norm, c.rms_eps, a);
  }
}

}  // namespace gs
