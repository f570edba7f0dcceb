// Backend::qkv_attention on CUDA: where the 16-row attention kernel computes its own inputs
// (AttnFuse, decision 0027) its output and both KV pools must equal, bit for bit, those of
// the same backend's op sequence (qkv_norm_rope_store, then attention); both must match the
// CPU oracle. The 31B's layer kinds (sliding D 256 over a ring, full D 512 with K = V and a
// proportional RoPE), decode and verify sizes (1..8 tokens fused, 9 not), several sequences
// interleaved, and the drafter's q-only kind. That the kernel did compute its own inputs shows
// in q: the fused call leaves the raw projections there, the op sequence the normed ones.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "cuda_test_util.h"

namespace gs::test {
namespace {

struct QaCase {
  const char* name;
  int head_dim, n_head, n_head_kv;
  int n_seqs, tokens, ctx, window;  // window > 0: a ring of pages, as the sliding layers' pools
  int n_dims;                       // < head_dim: proportional RoPE (freq factors on a quarter)
  bool v_from_k, q_only;
};

struct QaOut {
  std::vector<float> out, q;
  std::vector<uint16_t> pk, pv;
};

QaOut run_qkv_attention(Backend& be, bool own, const QaCase& c, const std::vector<int32_t>& pages, int max_pages,
                        int wrap, int64_t n_slots, const std::vector<uint16_t>& kh, const std::vector<uint16_t>& vh,
                        const HostMat& hq, const HostMat& hk, const HostMat& hv, const std::vector<float>& qn,
                        const std::vector<float>& kn, const std::vector<float>& ff, const std::vector<int32_t>& pos,
                        const std::vector<int32_t>& slots, const std::vector<int32_t>& tok_seq,
                        const std::vector<int32_t>& lo, const std::vector<int32_t>& hi) {
  const int D = c.head_dim, width_q = c.n_head * D, width_kv = c.n_head_kv * D;
  const int n_tok = static_cast<int>(tok_seq.size());
  Buf kb(be, kh.size() * 2), vb(be, vh.size() * 2), pg(be, pages.size() * 4), ts(be, tok_seq.size() * 4),
      lb(be, lo.size() * 4), hb(be, hi.size() * 4), pb(be, pos.size() * 4), sb(be, slots.size() * 4),
      qnb(be, qn.size() * 4), knb(be, kn.size() * 4), ffb(be, std::max<size_t>(1, ff.size()) * 4);
  kb.put(kh);
  vb.put(vh);
  pg.put(pages);
  ts.put(tok_seq);
  lb.put(lo);
  hb.put(hi);
  pb.put(pos);
  sb.put(slots);
  qnb.put(qn);
  knb.put(kn);
  if (!ff.empty()) ffb.put(ff);
  DevMat q(be, hq), k(be, hk), v(be, hv), o(be, n_tok, width_q, width_q + 4);
  const KvLayerView kv{kb.data(), vb.data(), GgmlType::F16, c.n_head_kv, D, n_slots};
  QkvNormRopeArgs a;
  a.q = q.m;
  if (!c.q_only) {
    a.k = k.m;
    a.v = v.m;
  }
  a.v_from_k = c.v_from_k;
  a.q_weight = qnb.f();
  a.k_weight = knb.f();
  a.eps = 1e-6f;
  a.pos = pb.i();
  a.rope.head_dim = D;
  a.rope.n_dims = c.n_dims;
  a.rope.theta = c.n_dims < D ? 1e6f : 10000.f;
  a.rope.freq_factors = c.n_dims < D ? ffb.f() : nullptr;
  a.kv = kv;
  a.slots = sb.i();
  AttentionArgs aa;
  aa.q = q.m;
  aa.out = o.m;
  aa.n_head = c.n_head;
  aa.head_dim = D;
  aa.scale = 1.0f;
  aa.kv = kv;
  aa.pages = PageTableView{pg.i(), max_pages, 16, c.window > 0 ? wrap : 0};
  aa.tok_seq = ts.i();
  aa.kv_lo = lb.i();
  aa.kv_hi = hb.i();
  aa.max_kv_len = c.window > 0 ? c.window : c.ctx + c.tokens;
  aa.n_seqs = c.n_seqs;
  aa.out_abs_bound = std::sqrt(static_cast<float>(D));  // V is RMS-normed without gain
  if (own) {
    be.qkv_attention(a, aa);
  } else {
    be.Backend::qkv_attention(a, aa);
  }
  const Status st = be.synchronize();
  EXPECT_TRUE(st.ok()) << st.to_string();
  QaOut r;
  r.out = o.dense();
  r.q = q.dense();
  r.pk = kb.get<uint16_t>(kh.size());
  r.pv = vb.get<uint16_t>(vh.size());
  (void)width_kv;
  return r;
}

std::vector<float> pool_f32(const std::vector<uint16_t>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = fp16_to_f32(h[i]);
  return f;
}

TEST(CudaQkvAttention, FusedEqualsOpSequence) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  const bool dry = B.fast->kind() == BackendKind::kCpu;
  const std::vector<QaCase> cases = {
      {"31B sliding, ring", 256, 32, 16, 1, 1, 2000, 1024, 256, false, false},
      {"31B sliding, ring, verify 5", 256, 32, 16, 1, 5, 2000, 1024, 256, false, false},
      {"31B sliding, verify 8", 256, 32, 16, 1, 8, 300, 1024, 256, false, false},
      {"31B sliding, 9 tokens (op sequence)", 256, 32, 16, 1, 9, 300, 1024, 256, false, false},
      {"31B full, K = V, proportional", 512, 32, 4, 1, 1, 700, 0, 128, true, false},
      {"31B full, K = V, verify 3", 512, 32, 4, 1, 3, 40, 0, 128, true, false},
      {"3 sequences x 2, interleaved", 128, 8, 2, 3, 2, 150, 0, 96, false, false},
      {"drafter (q only)", 256, 32, 16, 1, 2, 500, 0, 256, false, true},
      {"first positions", 64, 4, 2, 1, 4, 0, 0, 64, false, false},
  };
  for (const QaCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int D = c.head_dim, width_q = c.n_head * D, width_kv = c.n_head_kv * D, page = 16;
    const int n_tok = c.n_seqs * c.tokens;
    const int span = c.window > 0 ? c.window + 16 : c.ctx + c.tokens;  // positions a page table must reach
    const int wrap = c.window > 0 ? (c.window + 16 + page - 1) / page + 1 : 0;
    const int max_pages = c.window > 0 ? wrap : (span + page - 1) / page + 1;
    const int n_pages = c.n_seqs * max_pages + 2;
    const int64_t n_slots = static_cast<int64_t>(n_pages) * page;
    std::vector<int> perm(static_cast<size_t>(n_pages));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng());
    std::vector<int32_t> pages(static_cast<size_t>(c.n_seqs * max_pages));
    for (size_t i = 0; i < pages.size(); ++i) pages[i] = perm[i];
    const auto kf = randn(static_cast<size_t>(n_slots * width_kv), 0.5f), vf = randn(kf.size(), 1.0f);
    std::vector<uint16_t> kh(kf.size()), vh(vf.size());
    for (size_t i = 0; i < kf.size(); ++i) {
      kh[i] = f32_to_fp16(kf[i]);
      vh[i] = f32_to_fp16(vf[i]);
    }
    std::vector<int32_t> tok_seq, lo, hi, pos, slots;
    for (int t = 0; t < n_tok; ++t) {  // the sequences' tokens interleaved
      const int s = t % c.n_seqs, p = c.ctx + t / c.n_seqs;
      const int pi = c.window > 0 ? (p / page) % wrap : p / page;
      tok_seq.push_back(s);
      pos.push_back(p);
      hi.push_back(p);
      lo.push_back(c.window > 0 ? std::max(0, p - c.window + 1) : 0);
      slots.push_back(pages[static_cast<size_t>(s * max_pages + pi)] * page + p % page);
    }
    const HostMat hq(n_tok, width_q, width_q + 4, 2.0f), hk(n_tok, width_kv, width_kv + 8, 2.0f),
        hv(n_tok, width_kv, width_kv + 4, 1.0f);
    const auto qn = randn(static_cast<size_t>(D), 0.5f), kn = randn(static_cast<size_t>(D), 0.5f);
    std::vector<float> ff(static_cast<size_t>(c.n_dims / 2), 1.0f);
    for (size_t i = ff.size() / 4; i < ff.size(); ++i) ff[i] = 1e30f;
    auto run = [&](Backend& be, bool own) {
      return run_qkv_attention(be, own, c, pages, max_pages, wrap, n_slots, kh, vh, hq, hk, hv, qn, kn, ff, pos, slots,
                               tok_seq, lo, hi);
    };
    const QaOut cpu = run(*B.cpu, true), fused = run(*B.fast, true), seq = run(*B.fast, false);
    ASSERT_EQ(fused.out.size(), seq.out.size());
    int bad_out = 0, bad_pool = 0;
    for (size_t i = 0; i < fused.out.size(); ++i) bad_out += std::memcmp(&fused.out[i], &seq.out[i], 4) != 0;
    for (size_t i = 0; i < fused.pk.size(); ++i) bad_pool += (fused.pk[i] != seq.pk[i]) + (fused.pv[i] != seq.pv[i]);
    EXPECT_EQ(bad_out, 0) << "attention outputs differing from the op sequence's";
    EXPECT_EQ(bad_pool, 0) << "pool values differing from the op sequence's";
    const bool expect_fused = !dry && n_tok <= 8;
    const bool q_raw = fused.q == hq.dense(hq.v);
    EXPECT_EQ(q_raw, expect_fused) << (expect_fused ? "the op sequence ran where the kernel should compute its inputs"
                                                    : "q left raw where the op sequence should have run");
    const double tol = 8e-3;  // Q and P in f16, scores of magnitude ~10 (as CudaAttention's sharp cases)
    const ErrStats e = compare(fused.out, cpu.out);
    EXPECT_LT(e.rel_l2, tol) << "against the CPU";
    EXPECT_LT(e.rel_max, 6 * tol) << "against the CPU";
    // An f16 pool element may round the other way than the CPU's: one f16 ulp.
    EXPECT_LE(compare(pool_f32(fused.pk), pool_f32(cpu.pk)).rel_max, 1e-3) << "K pool against the CPU";
    EXPECT_LE(compare(pool_f32(fused.pv), pool_f32(cpu.pv)).rel_max, 1e-3) << "V pool against the CPU";
  }
}

}  // namespace
}  // namespace gs::test
