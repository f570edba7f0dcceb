// The small CUDA ops against the CPU oracle: RMS norm (row and per-head groups, with and
// without gain, in place), RoPE (plain, proportional with freq factors, YaRN, positions up to
// 1M), GELU-gated product, add, scale, softcap, gather, copy, embedding lookup of every
// type, KV stores (f16, f32) and slot copies, the fused ops (add_rms_norm with the next
// matmul's f16 operand; qkv_norm_rope_store: per-head norms, RoPE, KV store, K = V, Q only,
// out-of-range slots), the decode-size f16 operand written by several CTAs per row against
// one, and a captured run_step replayed on new inputs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <tuple>

#include "cuda_test_util.h"

namespace gs::test {
namespace {

using OpFn = std::function<std::vector<float>(Backend&)>;

// Runs `op` on the CPU and on both CUDA variants; returns the three results.
std::vector<std::vector<float>> run3(const OpFn& op) {
  auto& B = Backends::get();
  std::vector<std::vector<float>> r;
  for (Backend* be : {B.cpu.get(), B.fast.get(), B.simple.get()}) {
    r.push_back(op(*be));
    Status s = be->synchronize();
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return r;
}

void expect_close(const std::vector<std::vector<float>>& r, double tol_l2, double tol_max, const std::string& what) {
  for (int k = 1; k < 3; ++k) {
    const ErrStats e = compare(r[static_cast<size_t>(k)], r[0]);
    EXPECT_LE(e.rel_l2, tol_l2) << what << (k == 1 ? " (fast)" : " (simple)");
    EXPECT_LE(e.rel_max, tol_max) << what << (k == 1 ? " (fast)" : " (simple)");
  }
}

TEST(CudaOps, RmsNorm) {
  GS_REQUIRE_BACKENDS();
  for (auto [rows, cols, group] : std::vector<std::tuple<int, int, int>>{
           {1, 5376, 5376}, {7, 5376, 5376}, {3, 8192, 256}, {5, 2048, 512}, {2, 96, 32}, {4, 3000, 1500}, {1, 17, 17}})
    for (bool gain : {true, false})
      for (int pad : {3, 4})  // 4: 16-byte aligned rows (the one-pass row kernel)
      for (bool in_place : {false, true}) {
        HostMat hx(rows, cols, cols + pad, 3.0f);
        const auto g = randn(static_cast<size_t>(group), 1.0f);
        auto r = run3([&](Backend& be) {
          DevMat x(be, hx);
          Buf gb(be, g.size() * 4);
          gb.put(g);
          if (in_place) {
            be.rms_norm(x.m, gain ? gb.f() : nullptr, group, 1e-6f, x.m);
            return x.dense();
          }
          DevMat o(be, rows, cols, cols + pad);
          be.rms_norm(x.m, gain ? gb.f() : nullptr, group, 1e-6f, o.m);
          return o.dense();
        });
        expect_close(r, 1e-6, 1e-5, "rms_norm " + std::to_string(cols) + "/" + std::to_string(group));
      }
}

TEST(CudaOps, Rope) {
  GS_REQUIRE_BACKENDS();
  struct C {
    int head_dim, n_dims, n_heads;
    float theta;
    bool ff;
    float freq_scale, ext_factor;
    int max_pos;
  };
  const std::vector<C> cases = {
      {256, 256, 4, 10000.f, false, 1.f, 0.f, 2000},    {512, 512, 2, 1e6f, true, 1.f, 0.f, 300000},
      {64, 32, 3, 10000.f, false, 1.f, 0.f, 100},       {128, 128, 2, 1e6f, false, 0.25f, 1.f, 1000000},
      {512, 512, 2, 1e6f, true, 0.25f, 1.f, 1000000},   {32, 32, 1, 500.f, false, 0.5f, 0.f, 50}};
  for (const C& c : cases) {
    const int rows = 6;
    HostMat hx(rows, c.n_heads * c.head_dim, c.n_heads * c.head_dim + 2, 1.0f);
    std::vector<int32_t> pos(rows);
    std::uniform_int_distribution<int> pd(0, c.max_pos);
    for (auto& p : pos) p = pd(rng());
    pos[0] = 0;
    pos[1] = c.max_pos;
    std::vector<float> ff(static_cast<size_t>(c.n_dims / 2), 1.0f);
    for (size_t i = ff.size() / 4; i < ff.size(); ++i) ff[i] = 1e30f;  // proportional: only a quarter rotate
    RopeArgs a;
    a.head_dim = c.head_dim;
    a.n_dims = c.n_dims;
    a.theta = c.theta;
    a.freq_scale = c.freq_scale;
    a.ext_factor = c.ext_factor;
    a.attn_factor = 1.0f;
    rope_yarn_corr_dims(c.n_dims, 262144, c.theta, 32.f, 1.f, &a.corr_lo, &a.corr_hi);
    auto r = run3([&](Backend& be) {
      DevMat x(be, hx);
      Buf pb(be, pos.size() * 4), fb(be, ff.size() * 4);
      pb.put(pos);
      fb.put(ff);
      RopeArgs aa = a;
      aa.freq_factors = c.ff ? fb.f() : nullptr;
      be.rope(x.m, pb.i(), aa);
      return x.dense();
    });
    // Angles reach 1e6 rad: both sides must reduce them accurately.
    expect_close(r, 1e-5, 1e-4, "rope D " + std::to_string(c.head_dim) + " max_pos " + std::to_string(c.max_pos));
  }
}

TEST(CudaOps, ElementWise) {
  GS_REQUIRE_BACKENDS();
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 21504}, {5, 777}, {33, 64}}) {
    HostMat ha(rows, cols, cols + 1, 4.0f), hb(rows, cols, cols + 2, 2.0f);
    auto r = run3([&](Backend& be) {
      DevMat a(be, ha), b(be, hb), o(be, rows, cols, cols);
      be.gelu_mul(a.m, b.m, o.m);
      return o.dense();
    });
    expect_close(r, 1e-6, 1e-5, "gelu_mul");
    r = run3([&](Backend& be) {
      DevMat a(be, ha), b(be, hb);
      be.gelu_mul(a.m, b.m, a.m);  // aliasing the gate
      return a.dense();
    });
    expect_close(r, 1e-6, 1e-5, "gelu_mul in place");
    r = run3([&](Backend& be) {
      DevMat a(be, ha), b(be, hb);
      be.add(a.m, b.m, b.m);
      return b.dense();
    });
    expect_close(r, 1e-7, 1e-6, "add");
    r = run3([&](Backend& be) {
      DevMat a(be, ha);
      be.scale(a.m, 0.37f);
      return a.dense();
    });
    expect_close(r, 1e-7, 1e-6, "scale");
    HostMat hl(rows, cols, cols, 40.0f);
    r = run3([&](Backend& be) {
      DevMat a(be, hl);
      be.softcap(a.m, 30.0f);
      return a.dense();
    });
    expect_close(r, 1e-6, 1e-5, "softcap");
    r = run3([&](Backend& be) {
      DevMat a(be, ha), o(be, rows, cols, cols + 7);
      be.copy(a.m, o.m);
      return o.dense();
    });
    expect_close(r, 0, 0 + 1e-30, "copy");
    std::vector<int32_t> idx(static_cast<size_t>(rows + 2));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>((i * 7 + 3) % static_cast<size_t>(rows));
    r = run3([&](Backend& be) {
      DevMat a(be, ha), o(be, static_cast<int64_t>(idx.size()), cols, cols);
      Buf ib(be, idx.size() * 4);
      ib.put(idx);
      be.gather_rows(a.m, ib.i(), o.m);
      return o.dense();
    });
    expect_close(r, 0, 1e-30, "gather_rows");
  }
}

// argmax_rows against the CPU: random rows (the drafter's 262144-wide logits among them),
// rows with ties, NaN, -inf and +inf; the picks exactly, the probabilities within 1e-5.
TEST(CudaOps, ArgmaxRows) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 262144}, {5, 262144}, {3, 777}, {16, 4096}}) {
    HostMat h(rows, cols, cols + 4, 6.0f);
    if (rows >= 3) {  // a tie between two columns, NaN columns, a row of -inf
      h.v[static_cast<size_t>(1 * h.stride + 7)] = 1e4f;
      h.v[static_cast<size_t>(1 * h.stride + cols - 3)] = 1e4f;
      for (int64_t c = 0; c < cols; c += 5) h.v[static_cast<size_t>(2 * h.stride + c)] = NAN;
      if (rows >= 5) {
        for (int64_t c = 0; c < cols; ++c) h.v[static_cast<size_t>(3 * h.stride + c)] = -INFINITY;
        h.v[static_cast<size_t>(4 * h.stride + cols / 2)] = INFINITY;
      }
    }
    std::vector<std::vector<int32_t>> ids;
    std::vector<std::vector<float>> ps;
    for (Backend* be : {B.cpu.get(), B.fast.get()}) {
      DevMat x(*be, h);
      Buf bi(*be, static_cast<size_t>(rows) * 4), bp(*be, static_cast<size_t>(rows) * 4);
      be->argmax_rows(x.m, bi.i(), bp.f());
      ASSERT_TRUE(be->synchronize().ok());
      ids.push_back(bi.get<int32_t>(static_cast<size_t>(rows)));
      ps.push_back(bp.get<float>(static_cast<size_t>(rows)));
    }
    EXPECT_EQ(ids[1], ids[0]) << rows << " x " << cols;
    for (int r = 0; r < rows; ++r)
      EXPECT_NEAR(ps[1][static_cast<size_t>(r)], ps[0][static_cast<size_t>(r)], 1e-5 * ps[0][static_cast<size_t>(r)] + 1e-9)
          << rows << " x " << cols << " row " << r;
    if (rows >= 3) {
      EXPECT_EQ(ids[0][1], 7);
    }
  }
}

TEST(CudaOps, EmbedEveryType) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                        GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q5_0, GgmlType::IQ4_NL}) {
    if (!dequantize_row_fn(type)) {
      ADD_FAILURE() << "core/quant cannot dequantize " << ggml_type_name(type) << " yet";
      continue;
    }
    const int64_t n_embd = ggml_type_traits(type).block_elems == 256 ? 768 : 96, n_vocab = 37;
    const auto w = random_weight(type, n_embd, n_vocab);
    const std::vector<int32_t> ids = {0, 36, 5, 5, 17};
    auto r = run3([&](Backend& be) {
      auto wt = be.upload_weight(w.data(), type, n_embd, n_vocab);
      EXPECT_TRUE(wt.ok());
      Buf ib(be, ids.size() * 4);
      ib.put(ids);
      DevMat o(be, static_cast<int64_t>(ids.size()), n_embd, n_embd + 3);
      be.embed(wt.value(), ib.i(), 73.32f, o.m);
      return o.dense();
    });
    // Both sides dequantize in f32 (the CUDA side may round d * scale differently by an
    // ulp); types the CUDA backend converts at upload are f16-rounded (2^-11 relative).
    const bool native = cuda_native_type(type);
    expect_close(r, native ? 1e-6 : 5e-4, native ? 1e-5 : 1e-3, std::string("embed ") + std::string(ggml_type_name(type)));
  }
}

// The values of a K or V pool's bytes (head rows of D values of `type`: KvLayerView), in order.
std::vector<float> pool_values(const std::vector<uint8_t>& bytes, GgmlType type, int D) {
  const size_t hb = kv_head_bytes(type, D);
  std::vector<float> out(bytes.size() / hb * D);
  for (size_t h = 0; h < bytes.size() / hb; ++h) {
    const uint8_t* row = bytes.data() + h * hb;
    float* dst = out.data() + h * D;
    if (type == GgmlType::Q8_0) {
      kv_dequantize_q8_0(row, D, dst);
    } else if (type == GgmlType::F16) {
      for (int i = 0; i < D; ++i) {
        uint16_t v;
        std::memcpy(&v, row + 2 * i, 2);
        dst[i] = fp16_to_f32(v);
      }
    } else {
      std::memcpy(dst, row, hb);
    }
  }
  return out;
}

TEST(CudaOps, KvStoreAndCopy) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType kt : {GgmlType::F16, GgmlType::F32, GgmlType::Q8_0}) {
    const int n_kv = 3, D = kt == GgmlType::Q8_0 ? 64 : 40, width = n_kv * D, n_slots = 50, n = 7;
    HostMat hk(n, width, width + 5, 2.0f), hv(n, width, width, 2.0f);
    const std::vector<int32_t> slots = {3, 49, 0, 17, 18, 2, 30};
    const std::vector<int32_t> src = {3, 49, 17}, dst = {10, 11, 12};
    const size_t head_bytes = kv_head_bytes(kt, D), pool_bytes = n_slots * n_kv * head_bytes;
    auto r = run3([&](Backend& be) {
      Buf kb(be, pool_bytes), vb(be, pool_bytes), sb(be, slots.size() * 4),
          s1(be, src.size() * 4), s2(be, dst.size() * 4);
      EXPECT_TRUE(be.memset_zero(kb.data(), kb.bytes).ok());
      EXPECT_TRUE(be.memset_zero(vb.data(), vb.bytes).ok());
      sb.put(slots);
      s1.put(src);
      s2.put(dst);
      DevMat k(be, hk), v(be, hv);
      KvLayerView kv{kb.data(), vb.data(), kt, n_kv, D, n_slots};
      be.kv_store(k.m, v.m, kv, sb.i());
      be.kv_copy_slots(kv, s1.i(), s2.i(), static_cast<int>(src.size()));
      std::vector<float> all;
      for (Buf* b : {&kb, &vb}) {
        const std::vector<float> f = pool_values(b->get<uint8_t>(pool_bytes), kt, D);
        all.insert(all.end(), f.begin(), f.end());
      }
      return all;
    });
    // q8_0: the same rounding on both sides (k_kv_q8.cuh), so the same bits.
    expect_close(r, 0, 1e-30, std::string("kv_store/copy ") + std::string(ggml_type_name(kt)));
  }
}

// ---- fused ops ---------------------------------------------------------------------------
// Each against the CPU oracle (the op sequence in double), and the fast backend's own kernel
// against the same backend's op sequence (Backend's default run on the CUDA kernels): the
// fused kernels are built to give the latter bit for bit, so that comparison is tight; how
// many cases were bit-identical is printed.

struct FusedTally {
  int cases = 0, bitwise = 0;
  void add(bool same) {
    ++cases;
    bitwise += same ? 1 : 0;
  }
};

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct AddRmsCase {
  int64_t rows, cols, pad;
  float s;
  bool weights, out_is_o;
  float xmag, omag;
};

struct AddRmsOut {
  std::vector<float> x, out, y;
};

// add_rms_norm on copies of hx / ho (own: the backend's op, else Backend's op sequence); with
// w16 the matmul of out by that F16 weight [cols -> n_out] right after (the f16 operand).
AddRmsOut add_rms_on(Backend& be, bool own, const AddRmsCase& c, const HostMat& hx, const HostMat& ho,
                     const std::vector<float>& wo, const std::vector<float>& wx, const std::vector<uint8_t>* w16,
                     int64_t n_out) {
  AddRmsOut r;
  Weight wt;
  if (w16) {
    auto u = be.upload_weight(w16->data(), GgmlType::F16, c.cols, n_out);
    EXPECT_TRUE(u.ok());
    if (!u.ok()) return r;
    wt = u.value();
  }
  DevMat x(be, hx), o(be, ho), out(be, c.rows, c.cols, c.cols + 2 * c.pad), y(be, c.rows, n_out, n_out);
  Buf wob(be, wo.size() * 4), wxb(be, wx.size() * 4);
  wob.put(wo);
  wxb.put(wx);
  const float* pwo = c.weights ? wob.f() : nullptr;
  const float* pwx = c.weights ? wxb.f() : nullptr;
  const Mat om = c.out_is_o ? o.m : out.m;
  if (own) {
    be.add_rms_norm(x.m, o.m, pwo, c.s, pwx, 1e-6f, om);
  } else {
    be.Backend::add_rms_norm(x.m, o.m, pwo, c.s, pwx, 1e-6f, om);
  }
  if (w16) be.matmul(wt, om, y.m);
  const Status st = be.synchronize();
  EXPECT_TRUE(st.ok()) << st.to_string();
  r.x = x.dense();
  r.out = c.out_is_o ? o.dense() : out.dense();
  if (w16) r.y = y.dense();
  return r;
}

TEST(CudaOps, AddRmsNorm) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  FusedTally tally;
  struct Mag {
    float x, o;
  };
  // 5376: the 31B's n_embd; 8192 the longest row the kernel holds, 9000 past it; <= 1024 with
  // more than 16 rows, 1001 (not a multiple of 4) and unaligned rows: the op sequence.
  for (int64_t rows : {1, 2, 5, 16, 40})
    for (int64_t cols : {5376, 8192, 9000, 4100, 1024, 768, 1001, 64, 6})
      for (int64_t pad : {4, 3})
        for (Mag mag : {Mag{1.0f, 1.0f}, Mag{1e-20f, 1e-20f}, Mag{1e15f, 1e-3f}, Mag{3.0f, 1e12f}})
          for (int variant = 0; variant < 4; ++variant) {
            const bool plain = mag.x == 1.0f && mag.o == 1.0f;
            if (pad == 3 && (rows > 5 || !plain || variant > 1)) continue;
            if (!plain && variant > 0) continue;
            const AddRmsCase c{rows, cols, pad, variant % 2 ? 1.0f : 0.625f, variant != 2, variant == 3, mag.x, mag.o};
            const std::string what = "add_rms_norm rows " + std::to_string(rows) + " cols " + std::to_string(cols) +
                                     " pad " + std::to_string(pad) + " s " + std::to_string(c.s) +
                                     (c.weights ? "" : " no weights") + (c.out_is_o ? " out = o" : "") + " mag " +
                                     std::to_string(mag.x) + "/" + std::to_string(mag.o);
            SCOPED_TRACE(what);
            const HostMat hx(rows, cols, cols + pad, mag.x), ho(rows, cols, cols + pad, mag.o);
            const auto wo = randn(static_cast<size_t>(cols), 1.0f), wx = randn(static_cast<size_t>(cols), 1.0f);
            // The next matmul reads the f16 operand the fused op wrote (decode rows only).
            const int64_t n_out = 48;
            std::vector<uint8_t> w16;
            if (plain && rows <= 16) w16 = random_weight(GgmlType::F16, cols, n_out);
            const std::vector<uint8_t>* pw = w16.empty() ? nullptr : &w16;
            const AddRmsOut ref = add_rms_on(*B.cpu, true, c, hx, ho, wo, wx, pw, n_out);
            const AddRmsOut fast = add_rms_on(*B.fast, true, c, hx, ho, wo, wx, pw, n_out);
            const AddRmsOut seq = add_rms_on(*B.fast, false, c, hx, ho, wo, wx, pw, n_out);
            const AddRmsOut simple = add_rms_on(*B.simple, true, c, hx, ho, wo, wx, pw, n_out);
            for (const auto* got : {&fast, &simple}) {
              const char* side = got == &fast ? " (fast)" : " (simple)";
              const ErrStats ex = compare(got->x, ref.x), eo = compare(got->out, ref.out);
              EXPECT_LE(ex.rel_l2, 1e-6) << "x" << side;
              EXPECT_LE(ex.rel_max, 1e-5) << "x" << side;
              EXPECT_LE(eo.rel_l2, 1e-6) << "out" << side;
              EXPECT_LE(eo.rel_max, 1e-5) << "out" << side;
              if (pw) {  // f16 operand: 2^-11 per element, far below an error in the operand
                const ErrStats ey = compare(got->y, ref.y);
                EXPECT_LE(ey.rel_l2, 3e-3) << "matmul after" << side;
              }
            }
            // The fused kernel against the op sequence on the same backend.
            EXPECT_LE(compare(fast.x, seq.x).rel_max, 1e-6) << "x: fused vs op sequence";
            EXPECT_LE(compare(fast.out, seq.out).rel_max, 1e-6) << "out: fused vs op sequence";
            if (pw) {
              EXPECT_LE(compare(fast.y, seq.y).rel_max, 1e-5) << "matmul after: fused vs op sequence";
            }
            tally.add(same_floats(fast.x, seq.x) && same_floats(fast.out, seq.out) && same_floats(fast.y, seq.y));
          }
  std::printf("add_rms_norm: fused = op sequence bit for bit in %d of %d cases\n", tally.bitwise, tally.cases);
}

struct QkvCase {
  const char* name;
  int n_head, n_kv, head_dim, n_dims;
  bool ff;
  float theta, freq_scale, ext_factor;
  int max_pos;
  bool v_from_k;
  GgmlType kv_type;
  float qmag, kmag, vmag;
};

struct QkvOut {
  std::vector<float> q, k, v, pk, pv;  // pools with their slack, as f32, the scratch slots zeroed
  std::vector<float> scratch;          // what the scratch slots hold
};

constexpr int64_t kPoolFront = 4, kPoolBack = 8;  // slack slots around each pool

// qkv_norm_rope_store (own: the backend's op, else Backend's op sequence) on copies of the
// inputs; the pools [kPoolFront + n_slots + kPoolBack] start zeroed.
QkvOut qkv_on(Backend& be, bool own, const QkvCase& c, const HostMat& hq, const HostMat& hk, const HostMat& hv,
              const std::vector<float>& qn, const std::vector<float>& kn, const std::vector<float>& ff,
              const std::vector<int32_t>& pos, const std::vector<int32_t>& slots, int64_t n_slots,
              const std::vector<int64_t>& scratch) {
  QkvOut r;
  const int64_t width = static_cast<int64_t>(c.n_kv) * c.head_dim;
  const size_t slot_bytes = c.n_kv * kv_head_bytes(c.kv_type, c.head_dim);
  const int64_t pool_slots = kPoolFront + n_slots + kPoolBack;
  const size_t pool_bytes = std::max<size_t>(1, pool_slots * slot_bytes);
  DevMat q(be, hq), k(be, hk), v(be, hv);
  Buf qnb(be, qn.size() * 4), knb(be, kn.size() * 4), ffb(be, ff.size() * 4), pb(be, pos.size() * 4),
      sb(be, slots.size() * 4), kp(be, pool_bytes), vp(be, pool_bytes);
  qnb.put(qn);
  knb.put(kn);
  ffb.put(ff);
  pb.put(pos);
  sb.put(slots);
  EXPECT_TRUE(be.memset_zero(kp.data(), pool_bytes).ok());
  EXPECT_TRUE(be.memset_zero(vp.data(), pool_bytes).ok());
  QkvNormRopeArgs a;
  a.q = q.m;
  if (c.n_kv > 0) {
    a.k = k.m;
    a.v = v.m;
  }
  a.v_from_k = c.v_from_k;
  a.q_weight = qnb.f();
  a.k_weight = knb.f();
  a.eps = 1e-6f;
  a.pos = pb.i();
  a.rope.head_dim = c.head_dim;
  a.rope.n_dims = c.n_dims;
  a.rope.theta = c.theta;
  a.rope.freq_factors = c.ff ? ffb.f() : nullptr;
  a.rope.freq_scale = c.freq_scale;
  a.rope.ext_factor = c.ext_factor;
  a.rope.attn_factor = 1.0f;
  rope_yarn_corr_dims(c.n_dims, 262144, c.theta, 32.f, 1.f, &a.rope.corr_lo, &a.rope.corr_hi);
  a.kv = KvLayerView{static_cast<uint8_t*>(kp.data()) + kPoolFront * slot_bytes,
                     static_cast<uint8_t*>(vp.data()) + kPoolFront * slot_bytes, c.kv_type, c.n_kv, c.head_dim,
                     n_slots};
  a.slots = sb.i();
  if (own) {
    be.qkv_norm_rope_store(a);
  } else {
    be.Backend::qkv_norm_rope_store(a);
  }
  const Status st = be.synchronize();
  EXPECT_TRUE(st.ok()) << st.to_string();
  r.q = q.dense();
  r.k = k.dense();
  r.v = v.dense();
  for (auto [buf, dst] : {std::pair{&kp, &r.pk}, std::pair{&vp, &r.pv}}) {
    if (c.n_kv > 0) *dst = pool_values(buf->get<uint8_t>(pool_slots * slot_bytes), c.kv_type, c.head_dim);
    for (int64_t sl : scratch)
      for (int64_t i = 0; i < width; ++i) {
        float& e = (*dst)[static_cast<size_t>((kPoolFront + sl) * width + i)];
        r.scratch.push_back(e);
        e = 0.0f;
      }
  }
  return r;
}

TEST(CudaOps, QkvNormRopeStore) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  // The dry run (GS_CUDA_TEST_ON_CPU=1) has the CPU on every side, whose kv_store checks slots.
  const bool dry = B.fast->kind() == BackendKind::kCpu;
  const std::vector<QkvCase> cases = {
      {"31B sliding", 32, 16, 256, 256, false, 10000.f, 1.f, 0.f, 262144, false, GgmlType::F16, 1.f, 1.f, 1.f},
      {"31B full, K = V", 32, 4, 512, 512, true, 1e6f, 1.f, 0.f, 262144, true, GgmlType::F16, 1.f, 1.f, 1.f},
      {"31B full, YaRN", 32, 4, 512, 512, true, 1e6f, 0.25f, 1.f, 1000000, true, GgmlType::F16, 1.f, 1.f, 1.f},
      {"partial rotary, f32 KV", 8, 2, 128, 64, false, 10000.f, 1.f, 0.f, 5000, false, GgmlType::F32, 1.f, 1.f, 1.f},
      {"head 72 (pairs across lanes)", 4, 2, 72, 72, false, 10000.f, 1.f, 0.f, 1000, false, GgmlType::F32, 1e-3f,
       1e4f, 1e15f},
      {"head 40, 24 rotated, K = V", 3, 1, 40, 24, true, 500.f, 0.5f, 0.f, 300, true, GgmlType::F16, 1.f, 1.f, 1.f},
      {"head 1024, extreme magnitudes", 4, 2, 1024, 1024, false, 1e6f, 1.f, 0.f, 100000, false, GgmlType::F16, 1e15f,
       1e-20f, 1e-3f},
      {"head 1280 (op sequence)", 2, 1, 1280, 1024, false, 10000.f, 1.f, 0.f, 1000, false, GgmlType::F32, 1.f, 1.f,
       1.f},
      {"q only (drafter)", 8, 0, 256, 256, true, 1e6f, 1.f, 0.f, 100000, false, GgmlType::F16, 1.f, 1.f, 1.f},
      {"31B sliding, q8_0 KV", 32, 16, 256, 256, false, 10000.f, 1.f, 0.f, 262144, false, GgmlType::Q8_0, 1.f, 1.f, 1.f},
      {"31B full, K = V, q8_0 KV", 32, 4, 512, 512, true, 1e6f, 1.f, 0.f, 262144, true, GgmlType::Q8_0, 1.f, 1.f, 1.f},
      {"partial rotary, q8_0 KV", 8, 2, 128, 64, false, 10000.f, 1.f, 0.f, 5000, false, GgmlType::Q8_0, 1e-3f, 1e4f,
       1e15f},
  };
  FusedTally tally;
  for (const QkvCase& c : cases)
    for (int64_t rows : {1, 2, 5, 16, 40}) {
      SCOPED_TRACE(std::string(c.name) + ", rows " + std::to_string(rows));
      const int64_t qw = static_cast<int64_t>(c.n_head) * c.head_dim, kw = static_cast<int64_t>(c.n_kv) * c.head_dim;
      const HostMat hq(rows, qw, qw + 3, c.qmag), hk(rows, kw, kw + 5, c.kmag), hv(rows, kw, kw + 1, c.vmag);
      const auto qn = randn(static_cast<size_t>(c.head_dim), 0.5f), kn = randn(static_cast<size_t>(c.head_dim), 0.5f);
      std::vector<float> ff(static_cast<size_t>(c.n_dims / 2), 1.0f);
      for (size_t i = ff.size() / 4; i < ff.size(); ++i) ff[i] = 1e30f;  // proportional: a quarter rotates
      std::vector<int32_t> pos(static_cast<size_t>(rows));
      std::uniform_int_distribution<int> pd(0, c.max_pos);
      for (auto& p : pos) p = pd(rng());
      pos[0] = 0;
      if (rows > 1) pos[1] = c.max_pos;
      // Distinct slots out of order; one row (two from 5 rows) stores to a slot outside the
      // pool on the CUDA sides, which must skip it, and to a scratch slot on the CPU.
      const int64_t n_slots = rows + 8;
      std::vector<int32_t> perm(static_cast<size_t>(n_slots - 2));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng());
      std::vector<int32_t> slots(perm.begin(), perm.begin() + rows), slots_cpu = slots;
      const std::vector<int64_t> scratch = {n_slots - 2, n_slots - 1};
      std::vector<std::pair<size_t, int32_t>> bad = {{static_cast<size_t>(rows / 2), static_cast<int32_t>(n_slots + 5)}};
      if (rows >= 5) bad.push_back({0, -1});
      for (size_t j = 0; j < bad.size(); ++j) {
        slots_cpu[bad[j].first] = static_cast<int32_t>(scratch[j]);
        slots[bad[j].first] = dry ? static_cast<int32_t>(scratch[j]) : bad[j].second;
      }
      const QkvOut ref = qkv_on(*B.cpu, true, c, hq, hk, hv, qn, kn, ff, pos, slots_cpu, n_slots, scratch);
      const QkvOut fast = qkv_on(*B.fast, true, c, hq, hk, hv, qn, kn, ff, pos, slots, n_slots, scratch);
      const QkvOut seq = qkv_on(*B.fast, false, c, hq, hk, hv, qn, kn, ff, pos, slots, n_slots, scratch);
      const QkvOut simple = qkv_on(*B.simple, true, c, hq, hk, hv, qn, kn, ff, pos, slots, n_slots, scratch);
      const bool f16 = c.kv_type == GgmlType::F16, q8 = c.kv_type == GgmlType::Q8_0;
      for (const auto* got : {&fast, &seq, &simple}) {
        const char* side = got == &fast ? " (fast)" : got == &seq ? " (fast op sequence)" : " (simple)";
        // Angles reach 1e6 rad: both sides must reduce them accurately (as CudaOps.Rope).
        for (auto [name, g, r] : {std::tuple{"q", &got->q, &ref.q}, std::tuple{"k", &got->k, &ref.k},
                                  std::tuple{"v", &got->v, &ref.v}}) {
          const ErrStats e = compare(*g, *r);
          EXPECT_LE(e.rel_l2, 1e-5) << name << side;
          EXPECT_LE(e.rel_max, 1e-4) << name << side;
        }
        // An f16 pool element may round the other way: one f16 ulp (2^-11 relative); a q8_0
        // one by one step of its block (at most 1/127 of the block's largest magnitude).
        for (auto [name, g, r] : {std::tuple{"K pool", &got->pk, &ref.pk}, std::tuple{"V pool", &got->pv, &ref.pv}}) {
          const ErrStats e = compare(*g, *r);
          EXPECT_LE(e.rel_l2, q8 ? 2e-3 : f16 ? 2e-4 : 1e-5) << name << side;
          EXPECT_LE(e.rel_max, q8 ? 1e-2 : f16 ? 1e-3 : 1e-4) << name << side;
        }
        if (!dry) {
          const bool untouched = std::all_of(got->scratch.begin(), got->scratch.end(), [](float x) { return x == 0.0f; });
          EXPECT_TRUE(untouched) << "a row with an out-of-range slot was stored" << side;
        }
      }
      EXPECT_LE(compare(fast.q, seq.q).rel_max, 1e-6) << "q: fused vs op sequence";
      EXPECT_LE(compare(fast.k, seq.k).rel_max, 1e-6) << "k: fused vs op sequence";
      EXPECT_LE(compare(fast.v, seq.v).rel_max, 1e-6) << "v: fused vs op sequence";
      EXPECT_LE(compare(fast.pk, seq.pk).rel_max, q8 ? 1e-2 : f16 ? 1e-3 : 1e-6) << "K pool: fused vs op sequence";
      EXPECT_LE(compare(fast.pv, seq.pv).rel_max, q8 ? 1e-2 : f16 ? 1e-3 : 1e-6) << "V pool: fused vs op sequence";
      tally.add(same_floats(fast.q, seq.q) && same_floats(fast.k, seq.k) && same_floats(fast.v, seq.v) &&
                same_floats(fast.pk, seq.pk) && same_floats(fast.pv, seq.pv));
    }
  std::printf("qkv_norm_rope_store: fused = op sequence bit for bit in %d of %d cases\n", tally.bitwise,
              tally.cases);
}

// The f16 matvec operand of decode-size rows, written by several CTAs per row
// (k_row_f16.cu) or by one (GS_CUDA_ROWCOOP=0): gelu_mul then the matmul that reads the
// operand gelu_mul left, and a matmul converting its own input, on rows of up to 16 with
// lengths of one chunk or many (the 31B's 21504, 16384, 8192, 5376), a length that is no
// multiple of the chunk, one that is no multiple of 4 (the one-CTA kernel), a grid at the
// edge of what the GPU holds at once, and rows that are zero, tiny, huge, hold a NaN or an
// infinity, or have their max in the last chunk. Both paths give the same bits; both match
// the CPU.
std::vector<float> gelu_matmul_on(Backend& be, const HostMat& hg, const HostMat& hu, const std::vector<uint8_t>& w16,
                                  int64_t n_out, bool gelu) {
  auto u = be.upload_weight(w16.data(), GgmlType::F16, hg.cols, n_out);
  EXPECT_TRUE(u.ok());
  if (!u.ok()) return {};
  DevMat g(be, hg), up(be, hu), out(be, hg.rows, hg.cols, hg.cols), y(be, hg.rows, n_out, n_out);
  if (gelu) be.gelu_mul(g.m, up.m, out.m);
  be.matmul(u.value(), gelu ? out.m : g.m, y.m);
  const Status st = be.synchronize();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<float> r = y.dense();
  if (gelu) {
    const auto o = out.dense();
    r.insert(r.end(), o.begin(), o.end());
  }
  return r;
}

TEST(CudaOps, RowOperandKernelsAgree) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  const int64_t n_out = 40;
  // 131072 x 16 rows: 1024 CTAs, at the edge of what a GPU holds at once (an H200 holds
  // 1056 of these 32-register CTAs; a GPU that holds fewer keeps the one-CTA kernel, and a
  // grid that could not be resident would hang, then trap).
  for (int64_t cols : {21504, 16384, 8192, 5376, 2048, 4100, 777, 131072})
    for (int64_t rows : {1, 3, 8, 16})
      for (int special = 0; special < 6; ++special) {
        if (special > 0 && rows != 3) continue;
        if (cols == 131072 && (rows != 16 || special > 0)) continue;
        HostMat hg(rows, cols, cols, 2.0f), hu(rows, cols, cols, 1.0f);
        if (special == 1)  // row 1 all zeros
          for (int64_t j = 0; j < cols; ++j) hg.v[static_cast<size_t>(cols + j)] = 0.f;
        if (special == 2)  // row 1 tiny, row 2 huge (in f32 range after GELU)
          for (int64_t j = 0; j < cols; ++j) {
            hg.v[static_cast<size_t>(cols + j)] *= 1e-30f;
            hg.v[static_cast<size_t>(2 * cols + j)] = std::fabs(hg.v[static_cast<size_t>(2 * cols + j)]) * 1e18f;
          }
        if (special == 3) hg.v[static_cast<size_t>(cols + cols - 1)] = NAN;  // row 1: a NaN in its last chunk
        if (special == 4) hg.v[static_cast<size_t>(2 * cols + cols / 2)] = INFINITY;
        if (special == 5) hg.v[static_cast<size_t>(cols + cols - 1)] = 1000.0f;  // row 1's max: in its last chunk
        const auto w16 = random_weight(GgmlType::F16, cols, n_out);
        for (bool gelu : {true, false}) {
          SCOPED_TRACE(std::string(gelu ? "gelu_mul + matmul" : "matmul") + " rows " + std::to_string(rows) +
                       " cols " + std::to_string(cols) + " special " + std::to_string(special));
          const auto ref = gelu_matmul_on(*B.cpu, hg, hu, w16, n_out, gelu);
          setenv("GS_CUDA_ROWCOOP", "0", 1);
          const auto one = gelu_matmul_on(*B.fast, hg, hu, w16, n_out, gelu);
          unsetenv("GS_CUDA_ROWCOOP");
          const auto coop = gelu_matmul_on(*B.fast, hg, hu, w16, n_out, gelu);
          ASSERT_EQ(coop.size(), one.size());
          for (size_t i = 0; i < coop.size(); ++i) {
            const bool same =
                std::memcmp(&coop[i], &one[i], sizeof(float)) == 0 || (std::isnan(coop[i]) && std::isnan(one[i]));
            ASSERT_TRUE(same) << "element " << i << ": " << coop[i] << " vs " << one[i];
          }
          if (special == 0 || special == 5) {
            const ErrStats e = compare(coop, ref);
            EXPECT_LE(e.rel_l2, 3e-3);
          } else {  // NaN and inf rows propagate; the others still match the CPU
            for (size_t i = 0; i < coop.size(); ++i)
              if (std::isfinite(ref[i])) {
                EXPECT_TRUE(std::isfinite(coop[i])) << "element " << i;
              }
          }
        }
      }
}

// At most max_graphs captured steps are kept (the least recently replayed one goes): with a
// cap of 2, four keys replayed in turn are captured again and again, and every replay
// computes its own step on the current inputs. A server meets a new step shape for many
// prompt lengths; the graphs grew without bound before.
TEST(CudaOps, RunStepEvictsTheLeastRecentGraphs) {
  GS_REQUIRE_BACKENDS();
  if (const char* e = std::getenv("GS_CUDA_TEST_ON_CPU"); e && std::string(e) == "1")
    GTEST_SKIP() << "needs the CUDA backend's graphs";
  CudaBackendOptions o;
  o.max_graphs = 2;
  auto made = create_cuda_backend(0, o);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  Backend& be = **made;
  const int64_t rows = 2, cols = 1000;
  DevMat x(be, rows, cols, cols), y(be, rows, cols, cols);
  for (int round = 0; round < 3; ++round) {
    for (int key : {1, 2, 3, 1, 4, 2}) {
      HostMat hx(rows, cols, cols, 1.0f + round);
      x.buf.put(hx.v);
      const float f = 0.5f * static_cast<float>(key);
      be.run_step(static_cast<uint64_t>(key), true, [&] {
        be.copy(x.m, y.m);
        be.scale(y.m, f);
      });
      ASSERT_TRUE(be.synchronize().ok()) << "round " << round << " key " << key;
      const auto got = y.dense();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], hx.v[static_cast<size_t>(r * cols + c)] * f)
              << "round " << round << " key " << key;
    }
  }
}

// A step not marked recurring (a prompt chunk: each prompt length left a graph of its own,
// replayed about once) runs without capture, and a recurring one is captured. Inside a capture
// synchronize() is refused, so whether it succeeds inside the step tells which way the step
// ran; both ways compute the step on the current inputs.
TEST(CudaOps, RunStepCapturesOnlyRecurringSteps) {
  GS_REQUIRE_BACKENDS();
  if (const char* e = std::getenv("GS_CUDA_TEST_ON_CPU"); e && std::string(e) == "1")
    GTEST_SKIP() << "needs the CUDA backend's graphs";
  auto made = create_cuda_backend(0, CudaBackendOptions{});
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  Backend& be = **made;
  const int64_t rows = 5, cols = 700;
  DevMat x(be, rows, cols, cols), y(be, rows, cols, cols);
  for (const bool recurring : {false, true}) {
    for (int it = 0; it < 3; ++it) {
      HostMat hx(rows, cols, cols, 1.0f + static_cast<float>(it));
      x.buf.put(hx.v);
      Status inside;
      int bodies = 0;
      be.run_step(77, recurring, [&] {
        ++bodies;
        be.copy(x.m, y.m);
        be.scale(y.m, 0.5f);
        inside = be.synchronize();
      });
      ASSERT_TRUE(be.synchronize().ok()) << recurring << ", run " << it;
      if (recurring) {
        // Captured at its first run; the replays do not call the body again.
        EXPECT_EQ(bodies, it == 0 ? 1 : 0) << "run " << it;
        if (it == 0) {
          EXPECT_EQ(inside.code(), StatusCode::kFailedPrecondition) << inside.to_string();
        }
      } else {
        EXPECT_EQ(bodies, 1) << "run " << it;
        EXPECT_TRUE(inside.ok()) << "a step not marked recurring ran captured: " << inside.to_string();
      }
      const auto got = y.dense();
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], hx.v[i] * 0.5f) << recurring << ", run " << it;
    }
  }
}

TEST(CudaOps, RunStepReplaysOnNewInputs) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  const int64_t n_in = 512, n_out = 300, rows = 3;
  const auto w = random_weight(GgmlType::Q4_K, n_in, n_out);
  const auto g = randn(n_in, 1.0f);
  for (Backend* be : {B.cpu.get(), B.fast.get()}) {
    auto wt = be->upload_weight(w.data(), GgmlType::Q4_K, n_in, n_out);
    ASSERT_TRUE(wt.ok());
    Buf gb(*be, g.size() * 4);
    gb.put(g);
    DevMat x(*be, rows, n_in, n_in), h(*be, rows, n_in, n_in), y(*be, rows, n_out, n_out);
    std::vector<std::vector<float>> outs;
    for (int it = 0; it < 4; ++it) {
      HostMat hx(rows, n_in, n_in, 1.0f + it);
      x.buf.put(hx.v);
      // Eager reference of the same sequence first, then the (captured) step.
      be->rms_norm(x.m, gb.f(), n_in, 1e-6f, h.m);
      be->matmul(wt.value(), h.m, y.m);
      be->softcap(y.m, 30.0f);
      const auto eager = y.dense();
      be->run_step(42, true, [&] {
        be->rms_norm(x.m, gb.f(), n_in, 1e-6f, h.m);
        be->matmul(wt.value(), h.m, y.m);
        be->softcap(y.m, 30.0f);
      });
      ASSERT_TRUE(be->synchronize().ok());
      const auto stepped = y.dense();
      const ErrStats e = compare(stepped, eager);
      EXPECT_EQ(e.rel_max, 0.0) << "iteration " << it << " on " << be->description();
      outs.push_back(stepped);
    }
    EXPECT_NE(outs[0], outs[1]);
  }
}

}  // namespace
}  // namespace gs::test
