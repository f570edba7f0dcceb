// Runs k_attention.cu's tensor-core kernels (the 16-row decode kernel, the 64-row prefill
// kernel, split-KV with the combine kernel) in the CPU emulator against a double-precision
// reference, on small cases of the parity tests' kinds. Usage: attn_emu [lazy|eager|random] [filter]
// (tools/cuda_emu/README.md; scripts/cuda_emu_attention.sh builds and runs it).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/sm90a/attention_wg.h"
#include "emu.h"

using namespace gs::cuda;

namespace {

std::mt19937 rng(4321);

uint16_t to_f16(float f) {
  const __half h = __float2half_rn(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float from_f16(uint16_t u) {
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

// q8_0 head rows (backend.h's KvLayerView, decision 0035): D int8 values, then D / 32 f16
// scales, rounded as ggml's q8_0 (d = max|x| / 127, q = round(x / d)); `back` gets the values
// they hold.
void q8_encode(const float* x, int D, uint8_t* row, float* back) {
  for (int b = 0; b < D / 32; ++b) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    const float d = amax / 127.0f, id = d != 0.f ? 1.0f / d : 0.f;
    const uint16_t dh = to_f16(d);
    std::memcpy(row + D + 2 * b, &dh, 2);
    for (int i = 0; i < 32; ++i) {
      const auto q = static_cast<int8_t>(std::round(x[32 * b + i] * id));
      row[32 * b + i] = static_cast<uint8_t>(q);
      back[32 * b + i] = static_cast<float>(q) * from_f16(dh);
    }
  }
}

// K and V pools of slots x n_kv head rows: f16, or q8_0 (q8); `held` the values they hold.
struct Pools {
  bool q8 = false;
  int D = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> kv_held[2];
  size_t head_bytes() const { return q8 ? static_cast<size_t>(D + D / 16) : static_cast<size_t>(2 * D); }
  void init(bool q8_, int D_, int64_t n_heads) {
    q8 = q8_;
    D = D_;
    k.assign(static_cast<size_t>(n_heads) * head_bytes(), 0);
    v.assign(k.size(), 0);
    for (auto& h : kv_held) h.assign(static_cast<size_t>(n_heads * D), NAN);
  }
  // Head row hr of K (which 0) or V (1) from D values.
  void put(int which, int64_t hr, const float* x) {
    uint8_t* row = (which ? v : k).data() + hr * head_bytes();
    float* back = kv_held[which].data() + hr * D;
    if (q8) {
      q8_encode(x, D, row, back);
    } else {
      for (int i = 0; i < D; ++i) {
        const uint16_t h = to_f16(x[i]);
        std::memcpy(row + 2 * i, &h, 2);
        back[i] = from_f16(h);
      }
    }
  }
  // Every head row NaN (f16: every value; q8_0: every scale).
  void poison() {
    for (std::vector<uint8_t>* b : {&k, &v})
      for (size_t hr = 0; hr < b->size() / head_bytes(); ++hr) {
        auto* h16 = reinterpret_cast<uint16_t*>(b->data() + hr * head_bytes());
        if (q8) std::fill(h16 + D / 2, h16 + D / 2 + D / 32, uint16_t{0x7E00});
        else std::fill(h16, h16 + D, uint16_t{0x7E00});
      }
  }
  float held(int which, int64_t hr, int d) const { return kv_held[which][static_cast<size_t>(hr * D + d)]; }
  KvView view(int n_kv, int64_t n_slots) { return KvView{k.data(), v.data(), !q8, n_kv, D, n_slots, q8}; }
};

struct Case {
  std::string name;
  int D = 64, n_head = 4, n_kv = 2, page = 16, window = 0, wrap = 0;
  std::vector<int> tokens{1}, ctx{50};
  bool interleave = false, random_ranges = false;
  int empty_every = 0;
  float q_scale = 1.0f;
  int q_pad = 0;
  bool q8 = false;  // q8_0 pools
};

struct Err {
  double rel_l2 = 0, rel_max = 0;
  bool nan = false;
};

Err compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Err e;
  double num = 0, den = 0, mx = 0, mref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) e.nan = true;
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
    mx = std::max(mx, std::fabs(d));
    mref = std::max(mref, std::fabs(static_cast<double>(ref[i])));
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  e.rel_max = mref > 0 ? mx / mref : mx;
  return e;
}

int failures = 0;

void run_case(const Case& c) {
  const int D = c.D, n_seqs = static_cast<int>(c.tokens.size());
  const int width_q = c.n_head * D, G = c.n_head / c.n_kv;
  const int n_tok = std::accumulate(c.tokens.begin(), c.tokens.end(), 0);
  int max_pos = 1;
  for (int s = 0; s < n_seqs; ++s) max_pos = std::max(max_pos, c.ctx[static_cast<size_t>(s)] + c.tokens[static_cast<size_t>(s)]);
  const int pages_per_seq = c.wrap > 0 ? c.wrap : (max_pos + c.page - 1) / c.page;
  const int max_pages = pages_per_seq + 1, n_pages = n_seqs * max_pages + 3;
  const int64_t n_slots = static_cast<int64_t>(n_pages) * c.page;
  std::vector<int> perm(static_cast<size_t>(n_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> pages(static_cast<size_t>(n_seqs * max_pages));
  for (size_t i = 0; i < pages.size(); ++i) pages[i] = perm[i];
  std::normal_distribution<float> nd(0.f, 1.f);
  Pools pools;
  pools.init(c.q8, D, n_slots * c.n_kv);
  const float ks = 1.0f / std::sqrt(std::sqrt(static_cast<float>(D)));
  // Slots that no position up to a sequence's last token maps to hold NaN, as a pool's
  // unwritten or stale slots may hold anything: a kernel must neither read them nor let their
  // bits reach a product (P V with P = 0 included).
  pools.poison();
  {
    const int wrap_pages = c.wrap > 0 ? c.wrap : max_pages;
    std::vector<float> x(static_cast<size_t>(D));
    for (int s = 0; s < n_seqs; ++s)
      for (int p = 0; p < c.ctx[static_cast<size_t>(s)] + c.tokens[static_cast<size_t>(s)]; ++p) {
        const int64_t slot =
            static_cast<int64_t>(pages[static_cast<size_t>(s * max_pages + (p / c.page) % wrap_pages)]) * c.page + p % c.page;
        for (int j = 0; j < c.n_kv; ++j) {
          for (float& e : x) e = nd(rng) * ks;
          pools.put(0, slot * c.n_kv + j, x.data());
          for (float& e : x) e = nd(rng);
          pools.put(1, slot * c.n_kv + j, x.data());
        }
      }
  }
  std::vector<std::pair<int, int>> order;
  if (c.interleave) {
    for (int k = 0; static_cast<int>(order.size()) < n_tok; ++k)
      for (int s = 0; s < n_seqs; ++s)
        if (k < c.tokens[static_cast<size_t>(s)]) order.emplace_back(s, k);
  } else {
    for (int s = 0; s < n_seqs; ++s)
      for (int k = 0; k < c.tokens[static_cast<size_t>(s)]; ++k) order.emplace_back(s, k);
  }
  std::vector<int32_t> tok_seq(static_cast<size_t>(n_tok)), lo(tok_seq.size()), hi(tok_seq.size());
  for (int t = 0; t < n_tok; ++t) {
    const auto [s, k] = order[static_cast<size_t>(t)];
    const int p = c.ctx[static_cast<size_t>(s)] + k;
    tok_seq[static_cast<size_t>(t)] = s;
    hi[static_cast<size_t>(t)] = p;
    lo[static_cast<size_t>(t)] = c.window > 0 ? std::max(0, p - c.window + 1) : 0;
    if (c.random_ranges) {
      const int top = c.ctx[static_cast<size_t>(s)] + c.tokens[static_cast<size_t>(s)] - 1;
      const int h = std::uniform_int_distribution<int>(0, top)(rng);
      hi[static_cast<size_t>(t)] = h;
      lo[static_cast<size_t>(t)] = std::uniform_int_distribution<int>(0, h + 1)(rng);
    }
    if (c.empty_every > 0 && t % c.empty_every == 1) {
      lo[static_cast<size_t>(t)] = p + 1 + t % 3;
      hi[static_cast<size_t>(t)] = p;
    }
  }
  const int64_t q_stride = width_q + c.q_pad, o_stride = width_q + 1;
  std::vector<float> q(static_cast<size_t>(std::max<int64_t>(1, n_tok * q_stride)), NAN);
  for (int t = 0; t < n_tok; ++t)
    for (int i = 0; i < width_q; ++i) q[static_cast<size_t>(t * q_stride + i)] = nd(rng) * c.q_scale;
  // Reference (double).
  std::vector<float> ref(static_cast<size_t>(n_tok * width_q), 0.f);
  const int wrap = c.wrap > 0 ? c.wrap : max_pages;
  for (int t = 0; t < n_tok; ++t)
    for (int h = 0; h < c.n_head; ++h) {
      const int j = h / G;
      std::vector<double> sc;
      std::vector<int64_t> sl;
      for (int p = lo[static_cast<size_t>(t)]; p <= hi[static_cast<size_t>(t)]; ++p) {
        const int64_t slot =
            static_cast<int64_t>(pages[static_cast<size_t>(tok_seq[static_cast<size_t>(t)] * max_pages + (p / c.page) % wrap)]) *
                c.page + p % c.page;
        double s = 0;
        for (int d = 0; d < D; ++d)
          s += static_cast<double>(q[static_cast<size_t>(t * q_stride + h * D + d)]) * pools.held(0, slot * c.n_kv + j, d);
        sc.push_back(s);
        sl.push_back(slot);
      }
      if (sc.empty()) continue;
      const double m = *std::max_element(sc.begin(), sc.end());
      double l = 0;
      for (double& s : sc) l += (s = std::exp(s - m));
      for (int d = 0; d < D; ++d) {
        double o = 0;
        for (size_t i = 0; i < sc.size(); ++i) o += sc[i] * pools.held(1, sl[i] * c.n_kv + j, d);
        ref[static_cast<size_t>(t * width_q + h * D + d)] = static_cast<float>(o / l);
      }
    }
  AttnParams p{};
  p.n_tokens = n_tok;
  p.n_head = c.n_head;
  p.head_dim = D;
  p.scale = 1.0f;
  p.kv = pools.view(c.n_kv, n_slots);
  p.pages = PagesView{pages.data(), max_pages, c.page, c.wrap};
  p.tok_seq = tok_seq.data();
  p.kv_lo = lo.data();
  p.kv_hi = hi.data();
  p.q = MatF{q.data(), n_tok, width_q, q_stride};
  const double tol = 4e-3 * std::max(1.0f, c.q_scale);
  // The sm_90a wgmma kernel (head_dim 512) in its four forms (GS_WG_FORM): wg each P V
  // waited for at the next S product (defer), wg0 at once (wait), wgp the next tile's S
  // computed during this tile's softmax (pipe), wgr defer with whole-row copies into padded
  // tiles (row), wgs the same into 128-byte-swizzled tiles (swizzle), wgt those tiles by TMA
  // (tma).
  // q8d: the q8_0 head_dim-512 kernel that dequantizes into the mma registers
  // (k_attention_q8_dsplit.cu, GS_ATTN_Q8_DSPLIT=1), which launch_attention_fa then takes;
  // q8s: the 64-row kernel's q8_0 form with its conflict-free store order (GS_ATTN_Q8_SWAP=1).
  for (const char* kernel : {"old", "new", "q8d", "q8s", "wg", "wg0", "wgp", "wgr", "wgs", "wgt"}) {
    const bool wg = std::strncmp(kernel, "wg", 2) == 0;
    if (wg && !attention_wg_supported(p)) continue;
    const bool q8d = std::strcmp(kernel, "q8d") == 0, q8s = std::strcmp(kernel, "q8s") == 0;
    if (q8d && !(c.q8 && D == 512)) continue;
    if (q8s && !c.q8) continue;
    setenv("GS_ATTN_Q8_DSPLIT", q8d ? "1" : "0", 1);
    setenv("GS_ATTN_Q8_SWAP", q8s ? "1" : "0", 1);
    if (wg) {
      const char f = kernel[2];
      setenv("GS_WG_FORM", f == '0' ? "wait" : f == 'p' ? "pipe" : f == 'r' ? "row" : f == 's' ? "swizzle" : f == 't' ? "tma" : "defer", 1);
    }
    for (int splits : {1, 3}) {
      std::vector<float> out(static_cast<size_t>(std::max<int64_t>(1, n_tok * o_stride)), NAN);
      std::vector<float> partial(static_cast<size_t>(splits) * n_tok * c.n_head * (D + 2), NAN);
      p.out = MatF{out.data(), n_tok, width_q, o_stride};
      p.early = splits == 3;  // the 16-row kernel's step-input loads ahead of its wait, or not
      if (std::strcmp(kernel, "old") == 0) {
        launch_attention_mma(nullptr, p, splits, partial.data());
      } else if (std::strcmp(kernel, "new") == 0 || q8d || q8s) {
        launch_attention_fa(nullptr, p, splits, partial.data());
      } else {
        launch_attention_wg(nullptr, p, splits, partial.data());
        launch_attention_combine(nullptr, p, splits, partial.data());
      }
      std::vector<float> dense(ref.size());
      for (int t = 0; t < n_tok; ++t)
        for (int i = 0; i < width_q; ++i) dense[static_cast<size_t>(t * width_q + i)] = out[static_cast<size_t>(t * o_stride + i)];
      const Err e = compare(dense, ref);
      const bool ok = !e.nan && e.rel_l2 < tol && e.rel_max < 6 * tol;
      if (!ok) ++failures;
      std::printf("%-4s %-46s %-3s splits %d: rel_l2 %.2e rel_max %.2e%s\n", ok ? "ok" : "FAIL", c.name.c_str(), kernel,
                  splits, e.rel_l2, e.rel_max, e.nan ? " (NaN)" : "");
      std::fflush(stdout);
    }
  }
  // The f16 operand (AttnParams::op), written by the combine or, with one split, by its own
  // kernel: out times the fixed factor, laid out as launch_act_to_f16_rows(permute = true)
  // does, zeros to the padding, and out itself the bits of a call without it (that call with
  // the other AttnParams::early setting).
  const int64_t pad = (width_q + 255) / 256 * 256;
  for (int splits : {1, 3}) {
    std::vector<float> plain(static_cast<size_t>(std::max<int64_t>(1, n_tok * o_stride)), NAN), with_op = plain;
    std::vector<float> partial(static_cast<size_t>(splits) * n_tok * c.n_head * (D + 2), NAN);
    std::vector<uint16_t> xh(static_cast<size_t>(std::max<int64_t>(1, n_tok * pad)), 0x7e00);
    std::vector<float> xscale(static_cast<size_t>(std::max(1, n_tok)), NAN);
    const AttnOperand op = attn_operand_for_bound(4.0f * std::sqrt(static_cast<float>(D)), xh.data(), xscale.data(), pad);
    AttnParams ps = p;
    ps.out = MatF{plain.data(), n_tok, width_q, o_stride};
    launch_attention_mma(nullptr, ps, splits, partial.data());
    ps.out = MatF{with_op.data(), n_tok, width_q, o_stride};
    ps.op = op;
    ps.early = !ps.early;
    launch_attention_mma(nullptr, ps, splits, partial.data());
    int bad_out = 0, bad_op = 0;
    for (int t = 0; t < n_tok; ++t) {
      for (int i = 0; i < width_q; ++i) {
        const float a = plain[static_cast<size_t>(t * o_stride + i)], b = with_op[static_cast<size_t>(t * o_stride + i)];
        if (std::memcmp(&a, &b, 4) != 0) ++bad_out;
      }
      for (int64_t i = 0; i < pad; ++i) {
        const int64_t at = (i & ~3) + ((i & 3) == 1 ? 2 : (i & 3) == 2 ? 1 : (i & 3));
        const uint16_t want = i < width_q ? to_f16(with_op[static_cast<size_t>(t * o_stride + i)] * op.factor) : 0;
        if (xh[static_cast<size_t>(t * pad + at)] != want) ++bad_op;
      }
      if (xscale[static_cast<size_t>(t)] != op.undo) ++bad_op;
    }
    const bool ok = bad_out == 0 && bad_op == 0;
    if (!ok) ++failures;
    std::printf("%-4s %-46s operand splits %d: %d outputs differ, %d operand values wrong\n", ok ? "ok" : "FAIL",
                c.name.c_str(), splits, bad_out, bad_op);
    std::fflush(stdout);
  }
}

// An MTP verify pass against decode (decision 0020): k tokens of one sequence at positions
// ctx .. ctx + k - 1 in one batch (causal, or a sliding window of `window` positions), then
// each token alone with its own KV range, both with
// `splits` and `splits_one` KV splits; with the same split count every row must come out bit
// for bit the same (`exact`); other counts (what the 16-row kernel's host code picks for
// decode and verify at a large n_ctx) are only reported, and show that the check can fail.
void run_verify_case(const char* kernel, int D, int n_head, int n_kv, int ctx, int k, int splits, int splits_one,
                     bool exact, int window = 0, bool q8 = false) {
  const int width_q = n_head * D, page = 16;
  const int max_pages = (ctx + k + page - 1) / page;
  const int64_t n_slots = static_cast<int64_t>(max_pages) * page;
  std::vector<int32_t> pages(static_cast<size_t>(max_pages));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  std::normal_distribution<float> nd(0.f, 1.f);
  Pools pools;
  pools.init(q8, D, n_slots * n_kv);
  {
    std::vector<float> x(static_cast<size_t>(D));
    for (int64_t hr = 0; hr < n_slots * n_kv; ++hr) {
      for (float& e : x) e = nd(rng) * 0.3f;
      pools.put(0, hr, x.data());
      for (float& e : x) e = nd(rng);
      pools.put(1, hr, x.data());
    }
  }
  std::vector<float> q(static_cast<size_t>(k * width_q));
  for (float& x : q) x = nd(rng);
  std::vector<int32_t> seq(static_cast<size_t>(k), 0), lo(static_cast<size_t>(k), 0), hi(static_cast<size_t>(k));
  for (int t = 0; t < k; ++t) {
    hi[static_cast<size_t>(t)] = ctx + t;
    if (window > 0) lo[static_cast<size_t>(t)] = std::max(0, ctx + t - window + 1);
  }
  auto run = [&](int first, int n, int n_splits, std::vector<float>& out) {
    AttnParams p{};
    p.n_tokens = n;
    p.n_head = n_head;
    p.head_dim = D;
    p.scale = 1.0f;
    p.kv = pools.view(n_kv, n_slots);
    p.pages = PagesView{pages.data(), max_pages, page, 0};
    p.tok_seq = seq.data() + first;
    p.kv_lo = lo.data() + first;
    p.kv_hi = hi.data() + first;
    p.q = MatF{q.data() + static_cast<size_t>(first) * width_q, n, width_q, width_q};
    p.early = true;
    out.assign(static_cast<size_t>(n * width_q), NAN);
    p.out = MatF{out.data(), n, width_q, width_q};
    std::vector<float> partial(static_cast<size_t>(n_splits) * n * n_head * (D + 2), NAN);
    setenv("GS_ATTN_Q8_DSPLIT", std::strcmp(kernel, "q8d") == 0 ? "1" : std::strcmp(kernel, "q8d2") == 0 ? "2" : "0", 1);
    if (std::strcmp(kernel, "old") == 0) launch_attention_mma(nullptr, p, n_splits, partial.data());
    else launch_attention_fa(nullptr, p, n_splits, partial.data());
  };
  std::vector<float> batch, one;
  run(0, k, splits, batch);
  int differing = 0;
  for (int t = 0; t < k; ++t) {
    run(t, 1, splits_one, one);
    if (std::memcmp(one.data(), batch.data() + static_cast<size_t>(t) * width_q, one.size() * sizeof(float)) != 0) ++differing;
  }
  const bool ok = !exact || differing == 0;
  if (!ok) ++failures;
  std::printf("%-4s verify %d vs decode D%d G%d ctx %d window %d%s %-3s splits %d / %d: %d of %d rows differ%s\n",
              ok ? "ok" : "FAIL", k, D, n_head / n_kv, ctx, window, q8 ? " q8" : "", kernel, splits, splits_one,
              differing, k, exact ? "" : " (not required)");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  emu::st().lazy = argc > 1 && std::strcmp(argv[1], "lazy") == 0;
  // random: eager, with the block's fibers resumed in a random order at every yield, so that
  // one warp (or warpgroup) can run far ahead of another.
  emu::st().random_order = argc > 1 && std::strcmp(argv[1], "random") == 0;
  const std::string filter = argc > 2 ? argv[2] : "";
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };
  for (int D : {64, 128, 256, 512})
    for (auto [nh, nkv] : std::vector<std::pair<int, int>>{{4, 2}, {8, 1}})
      for (int tok : {1, 7, 33, 100}) {
        Case c;
        c.name = "D" + std::to_string(D) + " G" + std::to_string(nh / nkv) + " tok" + std::to_string(tok);
        c.D = D;
        c.n_head = nh;
        c.n_kv = nkv;
        c.tokens = {tok};
        c.ctx = {45};
        c.window = tok == 33 ? 40 : 0;
        if (D >= 256 && tok == 100 && nkv == 2) c.q_pad = 3;  // scalar q loads
        add(c);
      }
  {
    Case c;
    c.name = "G3 (12/4) D64 tok 21";
    c.D = 64, c.n_head = 12, c.n_kv = 4, c.tokens = {21}, c.ctx = {30};
    add(c);
    c.name = "G96 D64 tok 7";
    c.n_head = 96, c.n_kv = 1, c.tokens = {7};
    add(c);
  }
  for (int D : {256, 512})
    for (bool inter : {false, true}) {
      Case c;
      c.name = "seqs D" + std::to_string(D) + (inter ? " interleaved" : "");
      c.D = D, c.n_head = 8, c.n_kv = D == 512 ? 1 : 4;
      c.tokens = {70, 1, 20, 9};
      c.ctx = {0, 130, 40, 300};
      c.interleave = inter;
      c.empty_every = 13;
      c.window = D == 256 ? 50 : 0;
      add(c);
    }
  for (int D : {128, 512}) {
    Case c;
    c.name = "random ranges D" + std::to_string(D);
    c.D = D, c.n_head = 8, c.n_kv = 1, c.tokens = {40, 30}, c.ctx = {60, 10}, c.random_ranges = true, c.interleave = true;
    add(c);
    c.name = "ring D" + std::to_string(D);
    c.random_ranges = false, c.interleave = false;
    c.tokens = {40, 14}, c.ctx = {700, 500}, c.window = 64, c.page = 16, c.wrap = (64 + 40) / 16 + 2;
    add(c);
    c.name = "sharp D" + std::to_string(D);
    c.tokens = {50}, c.ctx = {100}, c.window = 0, c.wrap = 0, c.q_scale = 4.0f;
    add(c);
  }
  // Decode and short verify batches over a long range: fewer Q rows than a 64-row CTA holds,
  // so the 64-row kernel keeps 2 K/V tiles in flight (fa_launch_layout); 4 tokens at D 512
  // take 2 row groups, 1 and 2 tokens one.
  for (int D : {256, 512})
    for (int tok : {1, 2, 4}) {
      Case c;
      c.name = "deep D" + std::to_string(D) + " G8 tok" + std::to_string(tok);
      c.D = D, c.n_head = 8, c.n_kv = 1, c.tokens = {tok}, c.ctx = {600};
      c.window = tok == 2 ? 200 : 0;
      add(c);
    }
  // Pages of whole 32-key tiles (the engine's are 256 positions), where the wgmma kernel's
  // TMA form (wgt) reads a tile as 32 consecutive slots; with 16-position pages it falls back
  // to its cp.async form.
  for (const Case& c0 : std::vector<Case>(cases))
    if (c0.D == 512 && c0.wrap == 0) {
      Case c = c0;
      c.name += " page64";
      c.page = 64;
      add(c);
    }
  // q8_0 pools (decision 0035) in both kernels wherever their rows are 16-byte aligned
  // (head_dim 256 and 512): the raw tiles dequantized into f16 tiles before the products.
  for (const Case& c0 : std::vector<Case>(cases))
    if ((c0.D == 256 || c0.D == 512) && c0.name.find("page64") == std::string::npos) {
      Case c = c0;
      c.name += " q8";
      c.q8 = true;
      add(c);
    }
  for (const Case& c : cases)
    if (filter.empty() || c.name.find(filter) != std::string::npos) run_case(c);
  // Decode and a verify of 5 with the same split count (the 64-row kernel's host choice for
  // one sequence: one CTA per KV head either way) must agree bit for bit, with either kernel.
  if (filter.empty() || std::string("verify").find(filter) != std::string::npos) {
    for (int D : {128, 512})
      for (const char* kernel : {"new", "old"}) {
        run_verify_case(kernel, D, 8, 1, 300, 5, 3, 3, true);
        run_verify_case(kernel, D, 8, 1, 300, 5, 3, 7, false);
        // Token 0's range (288 positions) and the batch's (292) round to different chunks
        // under contiguous splits of the batch's range (96 against 128 positions).
        run_verify_case(kernel, D, 8, 1, 287, 5, 3, 3, true);
      }
    // A sliding window (the 31B's sliding layers: D 256, GQA 2): every token's range starts
    // elsewhere.
    for (const char* kernel : {"new", "old"})
      for (int k : {2, 5, 8}) {
        run_verify_case(kernel, 256, 4, 2, 300, k, 4, 4, true, 100);
        run_verify_case(kernel, 256, 4, 2, 300, k, 3, 3, true, 100);
      }
    // The same with q8_0 pools.
    for (const char* kernel : {"new", "old"}) {
      run_verify_case(kernel, 512, 8, 1, 300, 5, 3, 3, true, 0, true);
      run_verify_case(kernel, 256, 4, 2, 300, 5, 4, 4, true, 100, true);
    }
    // The 64-row kernel's q8_0 form dequantizes with the row-less warps into two f16 stages
    // where they fit (decode: one row group) and with every thread into one stage where not (a
    // verify of 8 at GQA 8 fills the CTA's 4 row groups): the rows must not differ.
    run_verify_case("new", 512, 8, 1, 300, 8, 3, 3, true, 0, true);
    run_verify_case("new", 256, 16, 2, 300, 8, 4, 4, true, 100, true);
    // The q8_0 kernel that dequantizes into the mma registers: a verify of 2, 5 and 8 tokens at
    // GQA 8 (1, 3 and 4 row groups) against each token alone (1 row group).
    // q8d2: its decode launches sized for two CTAs an SM (GS_ATTN_Q8_DSPLIT=2).
    for (const char* kernel : {"q8d", "q8d2"}) {
      for (int k : {2, 5, 8}) run_verify_case(kernel, 512, 8, 1, 300, k, 3, 3, true, 0, true);
      run_verify_case(kernel, 512, 16, 2, 287, 5, 3, 3, true, 0, true);
    }
  }
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
