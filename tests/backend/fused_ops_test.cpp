// The fused ops' default implementations (backend.h) are exactly the op sequences they stand
// for: on the CPU backend add_rms_norm and qkv_norm_rope_store give bit for bit what the
// separate rms_norm / add / scale / rope / copy / kv_store calls of the forward gave, over
// odd shapes, strided views, aliasing, extreme magnitudes, partial rotary, YaRN, K = V.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

namespace gs {
namespace {

// A host matrix [rows, cols] inside a buffer of `stride` floats per row; the gaps hold a
// sentinel that the ops must leave alone.
struct HostBuf {
  std::vector<float> v;
  Mat m;
  HostBuf(int64_t rows, int64_t cols, int64_t stride, std::mt19937& rng, float scale) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    v.assign(static_cast<size_t>(std::max<int64_t>(1, rows * stride)), -1234.5f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * stride + c)] = d(rng) * scale;
    m = Mat{v.data(), rows, cols, stride};
  }
  HostBuf(const HostBuf& o) : v(o.v), m{v.data(), o.m.rows, o.m.cols, o.m.stride} {}
  HostBuf& operator=(const HostBuf&) = delete;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> random_vec(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

class FusedOps : public ::testing::Test {
 protected:
  void SetUp() override { b_ = create_cpu_backend(3); }
  std::unique_ptr<Backend> b_;
  std::mt19937 rng_{4321};
};

TEST_F(FusedOps, AddRmsNormIsTheOpSequence) {
  struct Mag {
    float x, o;
  };
  int checked = 0;
  for (int64_t rows : {1, 2, 5, 16, 40})
    for (int64_t cols : {1, 7, 64, 1000, 5376})
      for (Mag mag : {Mag{1.0f, 1.0f}, Mag{1e-20f, 1e-20f}, Mag{1e15f, 1e-3f}, Mag{3.0f, 1e12f}})
        for (float s : {1.0f, 0.37f})
          for (bool weights : {true, false})
            for (bool out_is_o : {false, true}) {
              if ((mag.x != 1.0f) && (rows > 5 || !weights || out_is_o)) continue;  // keep the grid small
              SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " s " +
                           std::to_string(s) + " mag " + std::to_string(mag.x) + "/" + std::to_string(mag.o) +
                           (weights ? " weights" : " no weights") + (out_is_o ? " out=o" : ""));
              const HostBuf x0(rows, cols, cols + 3, rng_, mag.x), o0(rows, cols, cols + 1, rng_, mag.o);
              const HostBuf out0(rows, cols, cols + 5, rng_, 1.0f);
              const std::vector<float> wo = random_vec(rng_, static_cast<size_t>(cols), 0.5f, 2.0f);
              const std::vector<float> wx = random_vec(rng_, static_cast<size_t>(cols), -2.0f, 2.0f);
              const float* pwo = weights ? wo.data() : nullptr;
              const float* pwx = weights ? wx.data() : nullptr;
              // The fused op.
              HostBuf xa(x0), oa(o0), outa(out0);
              const Mat out_a = out_is_o ? oa.m : outa.m;
              b_->add_rms_norm(xa.m, oa.m, pwo, s, pwx, 1e-6f, out_a);
              // The forward's former op sequence (which always scaled, even by 1).
              HostBuf xb(x0), ob(o0), outb(out0);
              const Mat out_b = out_is_o ? ob.m : outb.m;
              b_->rms_norm(ob.m, pwo, cols, 1e-6f, ob.m);
              b_->add(xb.m, ob.m, xb.m);
              b_->scale(xb.m, s);
              b_->rms_norm(xb.m, pwx, cols, 1e-6f, out_b);
              EXPECT_TRUE(same_bits(xa.v, xb.v)) << "x";
              EXPECT_TRUE(same_bits(out_is_o ? oa.v : outa.v, out_is_o ? ob.v : outb.v)) << "out";
              ++checked;
            }
  EXPECT_EQ(checked, 290);
}

struct QkvCase {
  const char* name;
  int n_head, n_kv, head_dim, n_dims;
  bool freq_factors, yarn, v_from_k;
  GgmlType kv_type;
};

TEST_F(FusedOps, QkvNormRopeStoreIsTheOpSequence) {
  const std::vector<QkvCase> cases = {
      {"sliding 31B", 4, 2, 256, 256, false, false, false, GgmlType::F16},
      {"full 31B K=V", 4, 1, 512, 512, true, false, true, GgmlType::F16},
      {"yarn", 2, 2, 64, 64, true, true, false, GgmlType::F32},
      {"partial rotary", 3, 3, 40, 24, false, false, false, GgmlType::F32},
      {"odd head K=V f32", 5, 1, 18, 18, false, false, true, GgmlType::F32},
      {"q only", 6, 0, 32, 32, true, false, false, GgmlType::F16},
  };
  for (const QkvCase& c : cases)
    for (int64_t rows : {1, 5, 16}) {
      SCOPED_TRACE(std::string(c.name) + " rows " + std::to_string(rows));
      const int64_t qw = static_cast<int64_t>(c.n_head) * c.head_dim, kw = static_cast<int64_t>(c.n_kv) * c.head_dim;
      const int64_t n_slots = 64;
      const HostBuf q0(rows, qw, qw + 3, rng_, 2.0f), k0(rows, kw, kw + 1, rng_, 40.0f), v0(rows, kw, kw + 6, rng_, 0.1f);
      const std::vector<float> qn = random_vec(rng_, static_cast<size_t>(c.head_dim), 0.5f, 1.5f);
      const std::vector<float> kn = random_vec(rng_, static_cast<size_t>(c.head_dim), 0.5f, 1.5f);
      std::vector<float> ff(static_cast<size_t>(c.n_dims / 2), 1.0f);
      for (size_t i = ff.size() / 4; i < ff.size(); ++i) ff[i] = 1e30f;
      std::vector<int32_t> pos(static_cast<size_t>(rows)), slots(static_cast<size_t>(n_slots));
      std::uniform_int_distribution<int32_t> pd(0, 300000);
      for (auto& p : pos) p = pd(rng_);
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng_);  // distinct slots, out of order
      QkvNormRopeArgs a;
      a.v_from_k = c.v_from_k;
      a.q_weight = qn.data();
      a.k_weight = kn.data();
      a.eps = 1e-6f;
      a.pos = pos.data();
      a.rope.head_dim = c.head_dim;
      a.rope.n_dims = c.n_dims;
      a.rope.theta = c.yarn ? 1e6f : 10000.0f;
      a.rope.freq_factors = c.freq_factors ? ff.data() : nullptr;
      if (c.yarn) {
        a.rope.freq_scale = 0.25f;
        a.rope.ext_factor = 1.0f;
        a.rope.attn_factor = 1.0f;
        rope_yarn_corr_dims(c.n_dims, 4096, a.rope.theta, 32.0f, 1.0f, &a.rope.corr_lo, &a.rope.corr_hi);
      }
      a.slots = slots.data();
      const size_t elem = c.kv_type == GgmlType::F16 ? 2 : 4;
      const size_t pool_bytes = static_cast<size_t>(n_slots * std::max<int64_t>(kw, 1)) * elem;
      auto run = [&](bool fused, HostBuf& q, HostBuf& k, HostBuf& v, std::vector<uint8_t>& pk, std::vector<uint8_t>& pv) {
        pk.assign(pool_bytes, 0x5a);
        pv.assign(pool_bytes, 0xa5);
        QkvNormRopeArgs aa = a;
        aa.q = q.m;
        aa.k = c.n_kv > 0 ? k.m : Mat{};
        aa.v = c.n_kv > 0 ? v.m : Mat{};
        aa.kv = KvLayerView{pk.data(), pv.data(), c.kv_type, c.n_kv, c.head_dim, n_slots};
        if (fused) {
          b_->qkv_norm_rope_store(aa);
          return;
        }
        // The forward's former op sequence.
        b_->rms_norm(aa.q, aa.q_weight, c.head_dim, aa.eps, aa.q);
        b_->rope(aa.q, aa.pos, aa.rope);
        if (c.n_kv == 0) return;
        if (c.v_from_k) b_->copy(aa.k, aa.v);
        b_->rms_norm(aa.k, aa.k_weight, c.head_dim, aa.eps, aa.k);
        b_->rope(aa.k, aa.pos, aa.rope);
        b_->rms_norm(aa.v, nullptr, c.head_dim, aa.eps, aa.v);
        b_->kv_store(aa.k, aa.v, aa.kv, aa.slots);
      };
      HostBuf qa(q0), ka(k0), va(v0), qb(q0), kb(k0), vb(v0);
      std::vector<uint8_t> pka, pva, pkb, pvb;
      run(true, qa, ka, va, pka, pva);
      run(false, qb, kb, vb, pkb, pvb);
      EXPECT_TRUE(same_bits(qa.v, qb.v)) << "q";
      EXPECT_TRUE(same_bits(ka.v, kb.v)) << "k";
      EXPECT_TRUE(same_bits(va.v, vb.v)) << "v";
      EXPECT_EQ(pka, pkb) << "K pool";
      EXPECT_EQ(pva, pvb) << "V pool";
      if (c.n_kv == 0) {
        EXPECT_TRUE(same_bits(ka.v, k0.v)) << "q only leaves k alone";
        EXPECT_TRUE(same_bits(va.v, v0.v)) << "q only leaves v alone";
        EXPECT_EQ(pka, std::vector<uint8_t>(pool_bytes, 0x5a)) << "q only stores nothing";
      }
      if (c.v_from_k && c.n_kv > 0) {  // v is the weightless norm of the raw k, not of v's input
        HostBuf kr(k0);
        b_->rms_norm(kr.m, nullptr, c.head_dim, 1e-6f, kr.m);
        for (int64_t r = 0; r < rows; ++r)
          EXPECT_EQ(std::memcmp(va.m.row(r), kr.m.row(r), static_cast<size_t>(kw) * 4), 0) << "row " << r;
      }
    }
}

}  // namespace
}  // namespace gs
