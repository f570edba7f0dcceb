// Shared forward pieces: op tracing, step input upload, per-layer RoPE/attention arguments, layer tail.
#include "model/forward_blocks.h"

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
  return aa;
}

void layer_tail(OpTrace& t, const Gemma4Config& c, int il, const Gemma4LayerWeights& w, Mat x, const LayerScratch& s,
                int64_t n) {
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
  b.rms_norm(o, w.post_attention_norm, e, c.rms_eps, o);
  t.mark("attn_post_norm", il, o);
  b.add(xn, o, xn);
  t.mark("attn_residual", il, xn);

  b.rms_norm(xn, w.ffn_norm, e, c.rms_eps, a);
  t.mark("ffn_norm", il, a);
  b.matmul(w.ffn_gate, a, gate);  // [n, n_embd] -> [n, n_ff]
  t.mark("ffn_gate", il, gate);
  b.matmul(w.ffn_up, a, up);
  t.mark("ffn_up", il, up);
  b.gelu_mul(gate, up, gate);  // GELU(tanh) on the gate branch (spec §3.1.2)
  t.mark("ffn_act", il, gate);
  b.matmul(w.ffn_down, gate, o);  // [n, n_ff] -> [n, n_embd]
  t.mark("ffn_out", il, o);
  b.rms_norm(o, w.post_ffw_norm, e, c.rms_eps, o);
  t.mark("ffn_post_norm", il, o);
  b.add(xn, o, xn);
  t.mark("ffn_residual", il, xn);

  b.scale(xn, w.layer_output_scale);  // scales the whole residual stream (spec §3.3)
  t.mark("l_out", il, xn);
}

}  // namespace gs
