// The small CUDA ops against the CPU oracle: RMS norm (row and per-head groups, with and
// without gain, in place), RoPE (plain, proportional with freq factors, YaRN, positions up to
// 1M), GELU-gated product, add, scale, softcap, gather, copy, embedding lookup of every
// type, KV stores (f16, f32) and slot copies, and a captured run_step replayed on new inputs.
#include <functional>

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

TEST(CudaOps, KvStoreAndCopy) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType kt : {GgmlType::F16, GgmlType::F32}) {
    const int n_kv = 3, D = 40, width = n_kv * D, n_slots = 50, n = 7;
    HostMat hk(n, width, width + 5, 2.0f), hv(n, width, width, 2.0f);
    const std::vector<int32_t> slots = {3, 49, 0, 17, 18, 2, 30};
    const std::vector<int32_t> src = {3, 49, 17}, dst = {10, 11, 12};
    const size_t elem = kt == GgmlType::F16 ? 2 : 4;
    auto r = run3([&](Backend& be) {
      Buf kb(be, n_slots * width * elem), vb(be, n_slots * width * elem), sb(be, slots.size() * 4),
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
        if (kt == GgmlType::F16) {
          for (uint16_t h : b->get<uint16_t>(static_cast<size_t>(n_slots * width))) all.push_back(fp16_to_f32(h));
        } else {
          for (float f : b->get<float>(static_cast<size_t>(n_slots * width))) all.push_back(f);
        }
      }
      return all;
    });
    expect_close(r, 0, 1e-30, std::string("kv_store/copy ") + std::string(ggml_type_name(kt)));
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
      be->run_step(42, [&] {
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
