// CUDA attention against the CPU oracle (and a naive double-precision reference): head dims
// 32..512, GQA groups 1..8, f16 and f32 pools, paged and ring (sliding) page tables, several
// sequences in one batch (also interleaved), empty ranges, and long KV (split-KV decode).
#include <algorithm>
#include <numeric>

#include "cuda_test_util.h"

namespace gs::test {
namespace {

struct AttnCase {
  int head_dim = 64;
  int n_head = 4;
  int n_head_kv = 2;
  GgmlType kv_type = GgmlType::F16;
  int page_size = 16;
  int n_seqs = 1;
  int tokens_per_seq = 1;
  int ctx = 100;           // positions already in each sequence before the batch
  int window = 0;          // sliding window (0: full attention)
  int wrap_pages = 0;      // ring page table
  bool interleave = false; // tokens of the sequences interleaved in the batch
  float q_scale = 1.0f;
  bool empty_row = false;  // one query with kv_hi < kv_lo
};

std::string describe(const AttnCase& c) {
  return "D " + std::to_string(c.head_dim) + " heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) +
         " kv " + std::string(ggml_type_name(c.kv_type)) + " page " + std::to_string(c.page_size) + " seqs " +
         std::to_string(c.n_seqs) + " x " + std::to_string(c.tokens_per_seq) + " ctx " + std::to_string(c.ctx) +
         " window " + std::to_string(c.window) + " wrap " + std::to_string(c.wrap_pages) +
         (c.interleave ? " interleaved" : "") + " q_scale " + std::to_string(c.q_scale);
}

void check_attention(const AttnCase& c) {
  SCOPED_TRACE(describe(c));
  auto& B = Backends::get();
  const int D = c.head_dim, width_kv = c.n_head_kv * D, width_q = c.n_head * D;
  const int n_tok = c.n_seqs * c.tokens_per_seq;
  const int max_pos = c.ctx + c.tokens_per_seq;  // positions 0..max_pos-1 per sequence
  const int pages_per_seq = c.wrap_pages > 0 ? c.wrap_pages : (max_pos + c.page_size - 1) / c.page_size;
  const int max_pages = pages_per_seq + 1;
  const int n_pages = c.n_seqs * max_pages + 3;
  const int64_t n_slots = static_cast<int64_t>(n_pages) * c.page_size;

  // Page table: a random permutation of the pool's pages.
  std::vector<int> perm(static_cast<size_t>(n_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng());
  std::vector<int32_t> pages(static_cast<size_t>(c.n_seqs * max_pages));
  for (size_t i = 0; i < pages.size(); ++i) pages[i] = perm[i];

  // Pools: K ~ N(0, 1/sqrt(D)) so that scores have a spread of a few units (times q_scale).
  const auto kf = randn(static_cast<size_t>(n_slots * width_kv), 1.0f / std::sqrt(std::sqrt(static_cast<float>(D))));
  const auto vf = randn(static_cast<size_t>(n_slots * width_kv), 1.0f);
  const bool f16 = c.kv_type == GgmlType::F16;
  std::vector<uint16_t> kh, vh;
  std::vector<float> kq(kf), vq(vf);  // the values the pools hold (rounded to f16 when f16)
  if (f16) {
    kh.resize(kf.size());
    vh.resize(vf.size());
    for (size_t i = 0; i < kf.size(); ++i) {
      kh[i] = f32_to_fp16(kf[i]);
      vh[i] = f32_to_fp16(vf[i]);
      kq[i] = fp16_to_f32(kh[i]);
      vq[i] = fp16_to_f32(vh[i]);
    }
  }

  // Queries: token order, sequence, position, range.
  std::vector<int32_t> tok_seq(static_cast<size_t>(n_tok)), lo(static_cast<size_t>(n_tok)), hi(static_cast<size_t>(n_tok));
  for (int t = 0; t < n_tok; ++t) {
    const int s = c.interleave ? t % c.n_seqs : t / c.tokens_per_seq;
    const int k = c.interleave ? t / c.n_seqs : t % c.tokens_per_seq;
    const int p = c.ctx + k;
    tok_seq[static_cast<size_t>(t)] = s;
    hi[static_cast<size_t>(t)] = p;
    lo[static_cast<size_t>(t)] = c.window > 0 ? std::max(0, p - c.window + 1) : 0;
  }
  if (c.empty_row && n_tok > 0) {
    lo[0] = 5;
    hi[0] = 4;
  }
  int max_len = 1;
  for (int t = 0; t < n_tok; ++t) max_len = std::max(max_len, hi[static_cast<size_t>(t)] - lo[static_cast<size_t>(t)] + 1);
  HostMat hq(n_tok, width_q, width_q + (n_tok % 2 ? 8 : 0), c.q_scale);

  // Naive reference in double.
  std::vector<float> ref(static_cast<size_t>(n_tok * width_q), 0.0f);
  const int G = c.n_head / c.n_head_kv;
  const int wrap = c.wrap_pages > 0 ? c.wrap_pages : max_pages;
  for (int t = 0; t < n_tok; ++t) {
    for (int h = 0; h < c.n_head; ++h) {
      const int j = h / G;
      std::vector<double> sc;
      std::vector<int64_t> sl;
      for (int p = lo[static_cast<size_t>(t)]; p <= hi[static_cast<size_t>(t)]; ++p) {
        const int64_t slot = static_cast<int64_t>(pages[static_cast<size_t>(tok_seq[static_cast<size_t>(t)] * max_pages +
                                                                              (p / c.page_size) % wrap)]) *
                                 c.page_size + p % c.page_size;
        double s = 0;
        for (int d = 0; d < D; ++d)
          s += static_cast<double>(hq.v[static_cast<size_t>(t * hq.stride + h * D + d)]) *
               kq[static_cast<size_t>(slot * width_kv + j * D + d)];
        sc.push_back(s);
        sl.push_back(slot);
      }
      if (sc.empty()) continue;
      const double m = *std::max_element(sc.begin(), sc.end());
      double l = 0;
      for (double& s : sc) l += (s = std::exp(s - m));
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (size_t i = 0; i < sc.size(); ++i) o += sc[i] * vq[static_cast<size_t>(sl[i] * width_kv + j * D + d)];
        ref[static_cast<size_t>(t * width_q + h * D + d)] = static_cast<float>(o / l);
      }
    }
  }

  Backend* bes[3] = {B.cpu.get(), B.fast.get(), B.simple.get()};
  std::vector<float> out[3];
  for (int k = 0; k < 3; ++k) {
    Backend& be = *bes[k];
    const size_t elem = f16 ? 2 : 4;
    Buf kb(be, static_cast<size_t>(n_slots * width_kv) * elem), vb(be, static_cast<size_t>(n_slots * width_kv) * elem);
    if (f16) {
      kb.put(kh);
      vb.put(vh);
    } else {
      kb.put(kf);
      vb.put(vf);
    }
    Buf pg(be, pages.size() * 4), ts(be, tok_seq.size() * 4), lb(be, lo.size() * 4), hb(be, hi.size() * 4);
    pg.put(pages);
    ts.put(tok_seq);
    lb.put(lo);
    hb.put(hi);
    DevMat q(be, hq), o(be, n_tok, width_q, width_q + 4);
    AttentionArgs a;
    a.q = q.m;
    a.out = o.m;
    a.n_head = c.n_head;
    a.head_dim = D;
    a.scale = 1.0f;
    a.kv = KvLayerView{kb.data(), vb.data(), c.kv_type, c.n_head_kv, D, n_slots};
    a.pages = PageTableView{pg.i(), max_pages, c.page_size, c.wrap_pages};
    a.tok_seq = ts.i();
    a.kv_lo = lb.i();
    a.kv_hi = hb.i();
    a.max_kv_len = max_len;
    be.attention(a);
    Status s = be.synchronize();
    ASSERT_TRUE(s.ok()) << s.to_string();
    out[k] = o.dense();
  }
  const ErrStats e_cpu = compare(out[0], ref), e_fast = compare(out[1], out[0]), e_simple = compare(out[2], out[0]);
  EXPECT_LT(e_cpu.rel_l2, 1e-4) << "CPU vs naive reference";
  EXPECT_LT(e_simple.rel_l2, 1e-4) << "simple path";
  EXPECT_LT(e_simple.rel_max, 1e-3) << "simple path";
  // Tensor-core path: Q and P rounded to f16 (scores carry q_scale * 2^-11 relative errors).
  const double tol = 4e-3 * std::max(1.0f, c.q_scale);
  EXPECT_LT(e_fast.rel_l2, tol) << "fast path";
  EXPECT_LT(e_fast.rel_max, 6 * tol) << "fast path";
}

TEST(CudaAttention, HeadDimsAndGroups) {
  GS_REQUIRE_BACKENDS();
  for (int D : {32, 64, 128, 256, 512})
    for (auto [nh, nkv] : std::vector<std::pair<int, int>>{{4, 2}, {4, 1}, {8, 8}, {32, 16}, {32, 4}, {12, 4}})
      for (int tokens : {1, 3, 9}) {
        AttnCase c;
        c.head_dim = D;
        c.n_head = nh;
        c.n_head_kv = nkv;
        c.tokens_per_seq = tokens;
        c.ctx = 70;
        check_attention(c);
      }
}

TEST(CudaAttention, PoolsPagesAndBatches) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType kt : {GgmlType::F16, GgmlType::F32})
    for (int page : {1, 16, 256})
      for (int seqs : {1, 3})
        for (bool inter : {false, true}) {
          AttnCase c;
          c.head_dim = 128;
          c.n_head = 8;
          c.n_head_kv = 2;
          c.kv_type = kt;
          c.page_size = page;
          c.n_seqs = seqs;
          c.tokens_per_seq = 5;
          c.ctx = 300;
          c.interleave = inter;
          c.empty_row = seqs == 3;
          check_attention(c);
        }
}

TEST(CudaAttention, SlidingWindowRing) {
  GS_REQUIRE_BACKENDS();
  for (int D : {64, 256})
    for (int tokens : {1, 8, 40}) {
      AttnCase c;
      c.head_dim = D;
      c.n_head = 4;
      c.n_head_kv = 2;
      c.page_size = 16;
      c.window = 64;
      c.wrap_pages = (64 + 40) / 16 + 1;  // ring >= window + batch
      c.ctx = 1000;
      c.tokens_per_seq = tokens;
      c.n_seqs = 2;
      check_attention(c);
    }
}

TEST(CudaAttention, LongKvSplitDecode) {
  GS_REQUIRE_BACKENDS();
  for (int tokens : {1, 5}) {
    AttnCase c;
    c.head_dim = 512;
    c.n_head = 32;
    c.n_head_kv = 4;
    c.page_size = 256;
    c.ctx = 40000;
    c.tokens_per_seq = tokens;
    check_attention(c);
  }
  AttnCase c;
  c.head_dim = 256;
  c.n_head = 32;
  c.n_head_kv = 16;
  c.ctx = 5000;
  c.tokens_per_seq = 2;
  c.q_scale = 4.0f;  // sharp softmax
  check_attention(c);
}

TEST(CudaAttention, PrefillBlock) {
  GS_REQUIRE_BACKENDS();
  for (int D : {256, 512}) {
    AttnCase c;
    c.head_dim = D;
    c.n_head = 32;
    c.n_head_kv = D == 512 ? 4 : 16;
    c.page_size = 256;
    c.ctx = 0;
    c.tokens_per_seq = 300;
    c.window = D == 512 ? 0 : 128;
    check_attention(c);
  }
}

}  // namespace
}  // namespace gs::test
