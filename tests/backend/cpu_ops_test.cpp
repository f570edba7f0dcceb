// CPU backend ops against naive double-precision references written from the formulas in
// backend.h and spec §3.1 (odd sizes, strided views, GQA, paged and ring KV, f32/f16 KV).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "core/fp16.h"
#include "core/quant.h"

namespace gs {
namespace {

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Random bytes of a weight of `type` (n_out rows of n_in): valid block scales for Q8_0.
std::vector<uint8_t> random_weight_bytes(std::mt19937& rng, GgmlType type, int64_t n_in, int64_t n_out) {
  const size_t row_bytes = ggml_row_size(type, n_in).value();
  std::vector<uint8_t> bytes(row_bytes * n_out);
  std::vector<float> row = random_floats(rng, n_in);
  for (int64_t o = 0; o < n_out; ++o) {
    row = random_floats(rng, n_in);
    uint8_t* dst = bytes.data() + o * row_bytes;
    switch (type) {
      case GgmlType::F32: std::memcpy(dst, row.data(), row_bytes); break;
      default: EXPECT_TRUE(quantize_row(type, row.data(), dst, n_in).ok()) << ggml_type_name(type); break;
    }
  }
  return bytes;
}

class CpuOps : public ::testing::Test {
 protected:
  void SetUp() override { backend_ = create_cpu_backend(3); }
  std::unique_ptr<Backend> backend_;
  std::mt19937 rng_{1234};
};

// Every type gemmaserve can both quantize and dequantize (the CPU multiplies by reading blocks).
std::vector<GgmlType> weight_types() {
  std::vector<GgmlType> out;
  for (uint32_t raw = 0; raw < 64; ++raw) {
    auto traits = ggml_type_traits(raw);
    if (traits && quantize_row_fn(traits->type) && dequantize_row_fn(traits->type)) out.push_back(traits->type);
  }
  return out;
}

TEST_F(CpuOps, MatmulEveryTypeStridedAndOddSizes) {
  const std::vector<GgmlType> types = weight_types();
  EXPECT_GE(types.size(), 4u);
  for (GgmlType type : types) {
    for (int64_t n_rows : {1, 3, 8, 17}) {
      const int64_t block = ggml_type_traits(type).block_elems;
      const int64_t n_in = block == 1 ? 75 : block == 32 ? 96 : 512;
      const int64_t n_out = 37;
      auto wbytes = random_weight_bytes(rng_, type, n_in, n_out);
      auto w = backend_->upload_weight(wbytes.data(), type, n_in, n_out);
      ASSERT_TRUE(w.ok()) << w.status().to_string();
      // x is a column block of a wider matrix; y too.
      std::vector<float> xbuf = random_floats(rng_, n_rows * (n_in + 5));
      std::vector<float> ybuf(n_rows * (n_out + 3), -7.0f);
      Mat x{xbuf.data() + 2, n_rows, n_in, n_in + 5};
      Mat y{ybuf.data() + 1, n_rows, n_out, n_out + 3};
      backend_->matmul(*w, x, y);
      std::vector<float> wrow(n_in);
      const size_t rb = ggml_row_size(type, n_in).value();
      for (int64_t o = 0; o < n_out; ++o) {
        ASSERT_TRUE(dequantize_row(type, wbytes.data() + o * rb, wrow.data(), n_in).ok());
        for (int64_t r = 0; r < n_rows; ++r) {
          double ref = 0;
          for (int64_t i = 0; i < n_in; ++i) ref += static_cast<double>(wrow[i]) * x.row(r)[i];
          EXPECT_NEAR(y.row(r)[o], ref, 1e-4 * (1 + std::abs(ref))) << ggml_type_name(type) << " r" << r << " o" << o;
        }
      }
      // Untouched padding around y.
      EXPECT_EQ(ybuf[0], -7.0f);
      EXPECT_EQ(ybuf[n_out + 1], -7.0f);
    }
  }
}

TEST_F(CpuOps, MatmulRowResultIndependentOfBatch) {
  const int64_t n_in = 256, n_out = 33;
  auto wbytes = random_weight_bytes(rng_, GgmlType::Q4_K, n_in, n_out);
  auto w = backend_->upload_weight(wbytes.data(), GgmlType::Q4_K, n_in, n_out).value();
  std::vector<float> x = random_floats(rng_, 9 * n_in);
  std::vector<float> y(9 * n_out), y1(n_out);
  backend_->matmul(w, Mat::of(x.data(), 9, n_in), Mat::of(y.data(), 9, n_out));
  for (int r = 0; r < 9; ++r) {
    backend_->matmul(w, Mat::of(x.data() + r * n_in, 1, n_in), Mat::of(y1.data(), 1, n_out));
    for (int o = 0; o < n_out; ++o) EXPECT_EQ(y1[o], y[r * n_out + o]);
  }
}

TEST_F(CpuOps, UploadWeightRejectsUnsupportedType) {
  std::vector<uint8_t> bytes(1024);
  auto w = backend_->upload_weight(bytes.data(), GgmlType::IQ2_XXS, 256, 1);
  EXPECT_FALSE(w.ok());
}

TEST_F(CpuOps, EmbedScales) {
  const int64_t n_embd = 64, n_vocab = 11;
  auto tbytes = random_weight_bytes(rng_, GgmlType::Q8_0, n_embd, n_vocab);
  auto table = backend_->upload_weight(tbytes.data(), GgmlType::Q8_0, n_embd, n_vocab).value();
  const int32_t ids[3] = {10, 0, 4};
  std::vector<float> out(3 * n_embd), row(n_embd);
  backend_->embed(table, ids, 2.5f, Mat::of(out.data(), 3, n_embd));
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(dequantize_row(GgmlType::Q8_0, tbytes.data() + ids[r] * table.row_bytes, row.data(), n_embd).ok());
    for (int i = 0; i < n_embd; ++i) EXPECT_FLOAT_EQ(out[r * n_embd + i], row[i] * 2.5f);
  }
}

// argmax_rows: the largest column (ties: the lowest; NaN never wins; a row of -inf and NaN
// gives 0) and its softmax probability (0 where the largest value is not finite).
TEST_F(CpuOps, ArgmaxRowsTiesNanAndProbability) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const int64_t cols = 6;
  const std::vector<float> x = {
      0.5f, 2.0f, -1.0f, 2.0f, 0.0f, 1.0f,   // tie at 1 and 3: 1
      nan, -3.0f, nan, -2.5f, -7.0f, -2.5f,  // NaN skipped, tie: 3
      -inf, -inf, nan, -inf, -inf, -inf,     // nothing above -inf: 0, p 0
      1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f,    // uniform: 0, p 1/6
      -inf, 3.0f, inf, 0.0f, inf, 2.0f,      // +inf: the first one, p 0
  };
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  std::vector<float> xs(static_cast<size_t>(rows * (cols + 2)), 99.0f);  // strided rows
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) xs[static_cast<size_t>(r * (cols + 2) + c)] = x[static_cast<size_t>(r * cols + c)];
  std::vector<int32_t> ids(static_cast<size_t>(rows), -1);
  std::vector<float> p(static_cast<size_t>(rows), -1.0f);
  backend_->argmax_rows(Mat{xs.data(), rows, cols, cols + 2}, ids.data(), p.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 0, 0, 2}));
  const double p0 = 1.0 / (2.0 + std::exp(-1.5) + std::exp(-3.0) + std::exp(-2.0) + std::exp(-1.0));
  EXPECT_NEAR(p[0], p0, 1e-6);
  EXPECT_NEAR(p[1], 1.0 / (2.0 + std::exp(-4.5) + std::exp(-0.5)), 1e-6);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_NEAR(p[3], 1.0 / 6.0, 1e-7);
  EXPECT_EQ(p[4], 0.0f);
  std::fill(ids.begin(), ids.end(), -1);
  backend_->argmax_rows(Mat{xs.data(), rows, cols, cols + 2}, ids.data(), nullptr);  // no probabilities
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 0, 0, 2}));
}

TEST_F(CpuOps, RmsNormGroupsWeightAndAlias) {
  const int64_t rows = 5, group = 12, cols = 36;
  std::vector<float> x = random_floats(rng_, rows * cols, -3, 3);
  std::vector<float> w = random_floats(rng_, group);
  for (bool with_weight : {true, false}) {
    std::vector<float> y = x;  // in place
    backend_->rms_norm(Mat::of(y.data(), rows, cols), with_weight ? w.data() : nullptr, group, 1e-6f,
                       Mat::of(y.data(), rows, cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < cols; g += group) {
        double ss = 0;
        for (int64_t i = 0; i < group; ++i) ss += x[r * cols + g + i] * static_cast<double>(x[r * cols + g + i]);
        const double inv = 1.0 / std::sqrt(ss / group + 1e-6);
        for (int64_t i = 0; i < group; ++i) {
          const double ref = x[r * cols + g + i] * inv * (with_weight ? w[i] : 1.0);
          EXPECT_NEAR(y[r * cols + g + i], ref, 1e-5);
        }
      }
    }
  }
}

// Naive RoPE from spec §3.1.3 / §6.2, in double.
void rope_ref(std::vector<double>& v, int head_dim, int n_dims, double pos, const RopeArgs& a) {
  const int half = n_dims / 2;
  for (size_t h0 = 0; h0 < v.size(); h0 += head_dim) {
    for (int i = 0; i < half; ++i) {
      double ext = pos * std::pow(a.theta, -2.0 * i / n_dims);
      if (a.freq_factors) ext /= a.freq_factors[i];
      double ang = a.freq_scale * ext;
      double m = a.attn_factor;
      if (a.ext_factor != 0) {
        double y = (i - a.corr_lo) / std::max(0.001, static_cast<double>(a.corr_hi - a.corr_lo));
        double ramp = 1 - std::min(1.0, std::max(0.0, y));
        double mix = ramp * a.ext_factor;
        ang = ang * (1 - mix) + ext * mix;
        m *= 1 + 0.1 * std::log(1.0 / a.freq_scale);
      }
      const double x0 = v[h0 + i], x1 = v[h0 + i + half];
      v[h0 + i] = m * (x0 * std::cos(ang) - x1 * std::sin(ang));
      v[h0 + i + half] = m * (x0 * std::sin(ang) + x1 * std::cos(ang));
    }
  }
}

TEST_F(CpuOps, RopePlainProportionalAndYarn) {
  const int head_dim = 16, n_heads = 3;
  std::vector<float> ff = {1.0f, 1.0f, 1e30f, 1e30f, 1e30f, 1e30f, 1e30f, 1e30f};
  struct Case {
    int n_dims;
    float theta;
    const float* ff;
    float freq_scale, ext_factor, attn_factor;
  };
  float lo = 0, hi = 0;
  rope_yarn_corr_dims(head_dim, 64, 10000.0f, 32.0f, 1.0f, &lo, &hi);
  const Case cases[] = {
      {16, 10000.0f, nullptr, 1, 0, 1},
      {12, 10000.0f, nullptr, 1, 0, 1},  // partial: dims 12..15 untouched
      {16, 1e6f, ff.data(), 1, 0, 1},    // proportional
      {16, 10000.0f, nullptr, 0.25f, 1.0f, 1.0f},  // YaRN
      {16, 10000.0f, nullptr, 0.5f, 0.0f, 1.0f},   // linear
  };
  const int32_t pos[4] = {0, 1, 37, 100000};
  for (const Case& c : cases) {
    std::vector<float> x = random_floats(rng_, 4 * n_heads * head_dim);
    std::vector<float> y = x;
    RopeArgs a;
    a.head_dim = head_dim;
    a.n_dims = c.n_dims;
    a.theta = c.theta;
    a.freq_factors = c.ff;
    a.freq_scale = c.freq_scale;
    a.ext_factor = c.ext_factor;
    a.attn_factor = c.attn_factor;
    a.corr_lo = lo;
    a.corr_hi = hi;
    backend_->rope(Mat::of(y.data(), 4, n_heads * head_dim), pos, a);
    for (int r = 0; r < 4; ++r) {
      std::vector<double> ref(x.begin() + r * n_heads * head_dim, x.begin() + (r + 1) * n_heads * head_dim);
      rope_ref(ref, head_dim, c.n_dims, pos[r], a);
      for (int i = 0; i < n_heads * head_dim; ++i) {
        EXPECT_NEAR(y[r * n_heads * head_dim + i], ref[i], 2e-5) << "n_dims " << c.n_dims << " pos " << pos[r] << " fs " << c.freq_scale << " ext " << c.ext_factor << " theta " << c.theta << " i " << i;
      }
    }
  }
}

TEST_F(CpuOps, GeluMulAddScaleSoftcap) {
  const int64_t rows = 3, cols = 29;
  std::vector<float> g = random_floats(rng_, rows * cols, -4, 4), u = random_floats(rng_, rows * cols);
  std::vector<float> o(rows * cols);
  backend_->gelu_mul(Mat::of(g.data(), rows, cols), Mat::of(u.data(), rows, cols), Mat::of(o.data(), rows, cols));
  for (size_t i = 0; i < o.size(); ++i) {
    const double x = g[i];
    const double ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
    EXPECT_NEAR(o[i], ref, 1e-5);
  }
  std::vector<float> s = g;
  backend_->add(Mat::of(s.data(), rows, cols), Mat::of(u.data(), rows, cols), Mat::of(s.data(), rows, cols));
  for (size_t i = 0; i < s.size(); ++i) EXPECT_FLOAT_EQ(s[i], g[i] + u[i]);
  s = g;
  backend_->scale(Mat::of(s.data(), rows, cols), -1.5f);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_FLOAT_EQ(s[i], g[i] * -1.5f);
  std::vector<float> big = random_floats(rng_, rows * cols, -200, 200);
  s = big;
  backend_->softcap(Mat::of(s.data(), rows, cols), 30.0f);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i], 30.0 * std::tanh(big[i] / 30.0), 1e-4);
}

TEST_F(CpuOps, GatherAndCopy) {
  std::vector<float> src = random_floats(rng_, 6 * 7);
  const int32_t rows[3] = {5, 0, 5};
  std::vector<float> dst(3 * 7);
  backend_->gather_rows(Mat::of(src.data(), 6, 7), rows, Mat::of(dst.data(), 3, 7));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 7; ++c) EXPECT_EQ(dst[r * 7 + c], src[rows[r] * 7 + c]);
  std::vector<float> wide(6 * 10, 0.0f);
  backend_->copy(Mat::of(src.data(), 6, 7), Mat{wide.data() + 3, 6, 7, 10});
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 7; ++c) EXPECT_EQ(wide[r * 10 + 3 + c], src[r * 7 + c]);
}

// Attention against a naive reference that keeps every position's K/V in plain arrays.
struct AttnCase {
  GgmlType kv_type;
  int n_head, n_head_kv, head_dim;
  int page_size, max_pages, wrap_pages;
};

class CpuAttention : public CpuOps, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(CpuAttention, MatchesNaive) {
  const AttnCase c = GetParam();
  const int n_seq = 2;
  const int64_t width = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  // Page tables: each sequence owns distinct pages (shuffled order).
  const int pages_per_seq = c.wrap_pages > 0 ? c.wrap_pages : c.max_pages;
  std::vector<int32_t> pages(n_seq * c.max_pages, -1);
  std::vector<int32_t> perm(n_seq * pages_per_seq);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng_);
  for (int s = 0; s < n_seq; ++s)
    for (int p = 0; p < pages_per_seq; ++p) pages[s * c.max_pages + p] = perm[s * pages_per_seq + p];
  PageTableView pt{pages.data(), c.max_pages, c.page_size, c.wrap_pages};
  const int64_t n_slots = static_cast<int64_t>(n_seq) * pages_per_seq * c.page_size;
  const size_t slot_bytes = c.n_head_kv * kv_head_bytes(c.kv_type, c.head_dim);
  std::vector<uint8_t> kpool(n_slots * slot_bytes), vpool(n_slots * slot_bytes);
  KvLayerView kv{kpool.data(), vpool.data(), c.kv_type, c.n_head_kv, c.head_dim, n_slots};
  // Sequence lengths: the ring keeps the last wrap_pages * page_size positions.
  const int len[2] = {c.wrap_pages > 0 ? 3 * c.page_size * c.wrap_pages + 5 : c.page_size * c.max_pages - 3, 9};
  std::vector<std::vector<float>> keys(n_seq), vals(n_seq);
  for (int s = 0; s < n_seq; ++s) {
    keys[s] = random_floats(rng_, len[s] * width, -0.5f, 0.5f);
    vals[s] = random_floats(rng_, len[s] * width);
    // Store position by position (the ring overwrites the oldest).
    for (int p = 0; p < len[s]; ++p) {
      const int32_t slot = static_cast<int32_t>(
          pages[s * c.max_pages + (p / c.page_size) % pages_per_seq] * c.page_size + p % c.page_size);
      backend_->kv_store(Mat::of(keys[s].data() + p * width, 1, width), Mat::of(vals[s].data() + p * width, 1, width),
                         kv, &slot);
    }
  }
  // What the pools hold: f16 rounding, or each head row's q8_0 blocks.
  for (int s = 0; s < n_seq; ++s) {
    for (std::vector<float>* x : {&keys[s], &vals[s]}) {
      for (size_t h0 = 0; h0 < x->size(); h0 += c.head_dim) {
        float* hr = x->data() + h0;
        if (c.kv_type == GgmlType::F16) {
          for (int i = 0; i < c.head_dim; ++i) hr[i] = fp16_to_f32(f32_to_fp16(hr[i]));
        } else if (c.kv_type == GgmlType::Q8_0) {  // (KvQ8_0RowIsGgmlQ8_0InItsOwnLayout)
          std::vector<uint8_t> row(kv_head_bytes(GgmlType::Q8_0, c.head_dim));
          kv_quantize_q8_0(hr, c.head_dim, row.data());
          kv_dequantize_q8_0(row.data(), c.head_dim, hr);
        }
      }
    }
  }
  auto rounded = [](float x) { return x; };
  // Queries: several per sequence, various ranges (one empty).
  const int ring = c.wrap_pages > 0 ? c.wrap_pages * c.page_size : 1 << 30;
  std::vector<int32_t> tok_seq, lo, hi;
  for (int s = 0; s < n_seq; ++s) {
    const int last = len[s] - 1;
    const int oldest = std::max(0, len[s] - ring);
    tok_seq.insert(tok_seq.end(), {s, s, s, s});
    lo.insert(lo.end(), {oldest, std::max(oldest, last - 6), last, 5});
    hi.insert(hi.end(), {last, last, last, 4});
  }
  const int n_tok = static_cast<int>(tok_seq.size());
  std::vector<float> q = random_floats(rng_, n_tok * c.n_head * c.head_dim, -0.5f, 0.5f);
  std::vector<float> out(q.size(), 99.0f);
  AttentionArgs a;
  a.q = Mat::of(q.data(), n_tok, c.n_head * c.head_dim);
  a.out = Mat::of(out.data(), n_tok, c.n_head * c.head_dim);
  a.n_head = c.n_head;
  a.head_dim = c.head_dim;
  a.scale = 0.7f;
  a.kv = kv;
  a.pages = pt;
  a.tok_seq = tok_seq.data();
  a.kv_lo = lo.data();
  a.kv_hi = hi.data();
  a.max_kv_len = 1 << 20;
  backend_->attention(a);
  const int group = c.n_head / c.n_head_kv;
  for (int t = 0; t < n_tok; ++t) {
    const int s = tok_seq[t];
    for (int h = 0; h < c.n_head; ++h) {
      const int j = h / group;
      const float* qh = q.data() + (t * c.n_head + h) * c.head_dim;
      std::vector<double> ref(c.head_dim, 0.0);
      if (hi[t] >= lo[t]) {
        std::vector<double> sc;
        double mx = -1e300;
        for (int p = lo[t]; p <= hi[t]; ++p) {
          double d = 0;
          for (int i = 0; i < c.head_dim; ++i) d += qh[i] * static_cast<double>(rounded(keys[s][p * width + j * c.head_dim + i]));
          sc.push_back(0.7 * d);
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int p = lo[t]; p <= hi[t]; ++p)
          for (int i = 0; i < c.head_dim; ++i)
            ref[i] += sc[p - lo[t]] / sum * rounded(vals[s][p * width + j * c.head_dim + i]);
      }
      for (int i = 0; i < c.head_dim; ++i) {
        EXPECT_NEAR(out[(t * c.n_head + h) * c.head_dim + i], ref[i], 2e-5) << "t" << t << " h" << h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(AttnCase{GgmlType::F32, 4, 2, 32, 16, 4, 0},
                                           AttnCase{GgmlType::F16, 4, 2, 32, 16, 4, 0},
                                           AttnCase{GgmlType::F32, 8, 1, 64, 8, 6, 2},  // ring
                                           AttnCase{GgmlType::F16, 6, 3, 24, 5, 7, 3},  // odd sizes, ring
                                           AttnCase{GgmlType::F32, 3, 3, 40, 7, 5, 0},
                                           AttnCase{GgmlType::Q8_0, 4, 2, 32, 16, 4, 0},
                                           AttnCase{GgmlType::Q8_0, 6, 3, 96, 5, 7, 3},  // ring
                                           AttnCase{GgmlType::Q8_0, 8, 2, 256, 16, 3, 0}));

// The Q8_0 KV head row (decision 0035): ggml's reference q8_0 rounding (d = max|x| / 127 in
// f32, qs = round(x / d), d kept as f16), in our layout (qs, then the scales). Read back
// through ggml's own block layout (core/quant's dequantizer, checked against ggml's vectors in
// quant_golden_test) it gives the same values.
TEST_F(CpuOps, KvQ8_0RowIsGgmlQ8_0InItsOwnLayout) {
  for (int n : {32, 256, 512}) {
    std::vector<float> x = random_floats(rng_, n, -3.0f, 3.0f);
    x[5] = 0.0f;
    for (int i = 64; i < 96 && i < n; ++i) x[i] = 0.0f;  // an all-zero block: d = 0
    if (n > 32) x[40] = 1e-9f;
    ASSERT_EQ(kv_head_bytes(GgmlType::Q8_0, n), static_cast<size_t>(n + n / 16));
    std::vector<uint8_t> row(kv_head_bytes(GgmlType::Q8_0, n)), blocks(n / 32 * 34);
    kv_quantize_q8_0(x.data(), n, row.data());
    for (int b = 0; b < n / 32; ++b) {
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
      const float d = amax / 127.0f;
      uint16_t dh;
      std::memcpy(&dh, row.data() + n + 2 * b, 2);
      EXPECT_EQ(dh, f32_to_fp16(d)) << "d of block " << b;
      for (int i = 0; i < 32; ++i) {
        const int q = static_cast<int8_t>(row[32 * b + i]);
        EXPECT_EQ(q, d == 0.0f ? 0 : static_cast<int>(std::lround(x[32 * b + i] * (1.0f / d)))) << b << " " << i;
      }
      std::memcpy(blocks.data() + 34 * b, &dh, 2);  // ggml's block: d, then qs
      std::memcpy(blocks.data() + 34 * b + 2, row.data() + 32 * b, 32);
    }
    std::vector<float> y(n), z(n);
    kv_dequantize_q8_0(row.data(), n, y.data());
    ASSERT_TRUE(dequantize_row(GgmlType::Q8_0, blocks.data(), z.data(), n).ok());
    EXPECT_EQ(y, z);
    // Half a step, plus the f16 rounding of d (up to 127 d 2^-11).
    for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i], 3.0f / 127.0f * 0.57f) << i;
  }
  EXPECT_EQ(kv_head_bytes(GgmlType::Q8_0, 40), 0u);
  EXPECT_EQ(kv_head_bytes(GgmlType::Q4_K, 256), 0u);
  EXPECT_EQ(kv_head_bytes(GgmlType::F16, 24), 48u);
}

TEST_F(CpuOps, KvCopySlots) {
  const int n_slots = 10, width = 6;
  std::vector<float> k = random_floats(rng_, n_slots * width), v = random_floats(rng_, n_slots * width);
  std::vector<float> k0 = k, v0 = v;
  KvLayerView kv{k.data(), v.data(), GgmlType::F32, 2, 3, n_slots};
  const int32_t src[2] = {1, 7}, dst[2] = {4, 9};
  backend_->kv_copy_slots(kv, src, dst, 2);
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < width; ++c) {
      EXPECT_EQ(k[dst[i] * width + c], k0[src[i] * width + c]);
      EXPECT_EQ(v[dst[i] * width + c], v0[src[i] * width + c]);
    }
}

TEST_F(CpuOps, AllocTracksBytes) {
  const size_t before = backend_->bytes_in_use();
  auto b = DeviceBuffer::make(*backend_, 1000);
  ASSERT_TRUE(b.ok());
  EXPECT_GE(backend_->bytes_in_use(), before + 1000);
  b->reset();
  EXPECT_EQ(backend_->bytes_in_use(), before);
}

}  // namespace
}  // namespace gs
