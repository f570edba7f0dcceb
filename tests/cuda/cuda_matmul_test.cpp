// CUDA matmul against the CPU oracle: every weight type, odd shapes, 1..40 activation rows
// (tensor-core matvec up to 16 rows, cuBLAS beyond), strided views, extreme magnitudes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <tuple>

#include "cuda_test_util.h"

namespace gs::test {
namespace {

// One backend's result y (rows x n_out, dense) against the CPU's: |y - ref| <= tol * sum |w x|,
// plus, for a result of the int8 Q4_K forms (i8, decision 0028), the rounding bound of their
// two int8 planes per 32: |x - xf (256 q1 + q2)| <= amax / 32512 for each element of a block
// whose largest magnitude is amax, so |y - ref| gains at most sum_i |w_i| amax(block of i) / 32512.
struct NearCpu {
  const std::vector<float>* got;
  double tol;
  const char* what;
  bool i8 = false;
};

// Whether the fast path computes a `type` weight of n_in inputs with the int8 Q4_K forms
// (cuda_kernels.h: kMatvecI8MaxIn; rows <= 16, GS_MVS_Q4K=1 or 2).
bool fast_uses_i8(GgmlType type, int64_t n_in, int64_t rows) {
  const char* e = std::getenv("GS_MVS_Q4K");
  if (!e || (std::atoi(e) != 1 && std::atoi(e) != 2)) return false;
  return type == GgmlType::Q4_K && (n_in + 255) / 256 * 256 <= 24576 && rows <= 16;
}

// Expects each result near ref (the CPU's y = x W^T, rows x n_out, dense; x dense) under the
// per-element bound |y - ref| <= tol * sum_i |w_i x_i| (the condition of the dot product),
// on up to 256 sampled outputs per row; names the first three outputs off.
void expect_near_cpu(GgmlType type, const std::vector<uint8_t>& w, int64_t n_in, int64_t n_out,
                     const std::vector<float>& x, int64_t rows, const std::vector<float>& ref,
                     const std::vector<NearCpu>& results) {
  const int64_t n_check = std::min<int64_t>(n_out, 256);
  const DequantizeRowFn deq = dequantize_row_fn(type);
  const size_t rb = ggml_row_size(type, n_in).value();
  std::vector<float> wrow(static_cast<size_t>(n_in));
  std::vector<int> bad(results.size(), 0);
  for (int64_t k = 0; k < n_check; ++k) {
    const int64_t o = n_check == n_out ? k : k * n_out / n_check;
    deq(w.data() + static_cast<size_t>(o) * rb, wrow.data(), n_in);
    for (int64_t r = 0; r < rows; ++r) {
      double cond = 0, i8b = 0;
      for (int64_t i = 0; i < n_in; ++i) cond += std::fabs(static_cast<double>(wrow[i]) * x[r * n_in + i]);
      for (int64_t b = 0; b < n_in; b += 32) {
        double amax = 0, wsum = 0;
        for (int64_t i = b; i < std::min(n_in, b + 32); ++i) {
          amax = std::max(amax, std::fabs(static_cast<double>(x[r * n_in + i])));
          wsum += std::fabs(static_cast<double>(wrow[i]));
        }
        i8b += wsum * amax * (1 + 1.0 / 512) / 32512;  // (1 + 2^-9): the f16 operand's rounding of amax
      }
      const size_t idx = static_cast<size_t>(r * n_out + o);
      for (size_t c = 0; c < results.size(); ++c) {
        const double e = std::fabs((*results[c].got)[idx] - ref[idx]);
        if (!(e <= results[c].tol * cond + (results[c].i8 ? i8b : 0.0) + 1e-30) && bad[c]++ < 3)
          ADD_FAILURE() << results[c].what << ": y[" << r << "][" << o << "] = " << (*results[c].got)[idx] << ", CPU "
                        << ref[idx] << ", sum |w x| " << cond;
      }
    }
  }
  for (size_t c = 0; c < results.size(); ++c) EXPECT_EQ(bad[c], 0) << results[c].what;
}

// Runs y = x W^T on the three backends for every row count in `rows` (one weight upload);
// expects the CUDA results near the CPU's.
// The weight's bytes given (`w`, GGUF rows of `type`).
void check_matmul_of(GgmlType type, const std::vector<uint8_t>& w, int64_t n_in, int64_t n_out,
                     const std::vector<int64_t>& rows_list, float x_scale = 1.0f) {
  auto& B = Backends::get();
  Backend* bes[3] = {B.cpu.get(), B.fast.get(), B.simple.get()};
  Weight wt[3];
  for (int k = 0; k < 3; ++k) {
    auto wr = bes[k]->upload_weight(w.data(), type, n_in, n_out);
    ASSERT_TRUE(wr.ok()) << wr.status().to_string();
    wt[k] = wr.value();
  }
  for (int64_t rows : rows_list) {
    SCOPED_TRACE(std::string(ggml_type_name(type)) + " n_in " + std::to_string(n_in) + " n_out " +
                 std::to_string(n_out) + " rows " + std::to_string(rows) + " x_scale " + std::to_string(x_scale));
    const int64_t xs = n_in + (rows % 3 == 1 ? 5 : 0), ys = n_out + (rows % 2 ? 3 : 0);
    HostMat hx(rows, n_in, xs, x_scale);
    std::vector<float> out[3];
    for (int k = 0; k < 3; ++k) {
      DevMat x(*bes[k], hx), y(*bes[k], rows, n_out, ys);
      bes[k]->matmul(wt[k], x.m, y.m);
      Status s = bes[k]->synchronize();
      ASSERT_TRUE(s.ok()) << s.to_string();
      out[k] = y.dense();
    }
    // f16 operands on the tensor cores: unit roundoff 2^-11 for each of w and x. The simple
    // path is exact f32 arithmetic on the stored weights: f16 for converted types.
    const std::vector<float> x = hx.dense(hx.v);
    expect_near_cpu(type, w, n_in, n_out, x, rows, out[0],
                    {{&out[1], 2e-3, "fast path", fast_uses_i8(type, n_in, rows)},
                     {&out[2], cuda_native_type(type) ? 1e-5 : 1e-3, "simple path"}});
  }
}

void check_matmul(GgmlType type, int64_t n_in, int64_t n_out, const std::vector<int64_t>& rows_list,
                  float x_scale = 1.0f) {
  check_matmul_of(type, random_weight(type, n_in, n_out), n_in, n_out, rows_list, x_scale);
}

std::vector<GgmlType> all_types() {
  std::vector<GgmlType> t = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,   GgmlType::Q4_0,
                             GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q4_1,   GgmlType::Q5_0,
                             GgmlType::Q5_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS};
  return t;
}

TEST(CudaMatmul, EveryTypeOddShapes) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType type : all_types()) {
    if (!dequantize_row_fn(type)) {
      ADD_FAILURE() << "core/quant cannot dequantize " << ggml_type_name(type) << " yet: the CPU oracle is missing";
      continue;
    }
    const int64_t blk = ggml_type_traits(type).block_elems;
    std::vector<int64_t> n_ins;
    if (blk == 1) n_ins = {1, 7, 64, 300, 1000};
    else if (blk == 32) n_ins = {32, 96, 288, 1056};
    else n_ins = {256, 768, 1280};
    for (int64_t n_in : n_ins)
      for (int64_t n_out : {1, 15, 17, 130}) check_matmul(type, n_in, n_out, {1, 2, 5, 8, 9, 16, 17, 40});
  }
}

TEST(CudaMatmul, Gemma31bShapes) {
  GS_REQUIRE_BACKENDS();
  // The 31B projections (n_in, n_out) in the Q4_K_M mix, at the decode / verify / prefill sizes.
  const std::vector<std::tuple<GgmlType, int64_t, int64_t>> shapes = {
      {GgmlType::Q4_K, 5376, 8192},  {GgmlType::Q4_K, 5376, 4096}, {GgmlType::Q6_K, 5376, 4096},
      {GgmlType::Q4_K, 8192, 5376},  {GgmlType::Q4_K, 5376, 2048}, {GgmlType::Q6_K, 21504, 5376},
      {GgmlType::Q4_K, 21504, 5376}, {GgmlType::Q8_0, 5376, 1024}};
  for (auto [type, n_in, n_out] : shapes) check_matmul(type, n_in, n_out, {1, 3, 5, 8, 13, 64});
}

// The bulk-copy matvec splits the (row group, 8-tile stage) units of a matrix evenly over at
// most one CTA per SM, so a row group is cut between two CTAs only when there are more row
// groups than SMs and more than one stage per row group: these shapes (141 / 188 row groups
// of 16, 2-3 stages, a partial last row group and a partial last stage) make such cuts on
// any GPU with fewer SMs than row groups, for every format it serves and 1..16 rows.
TEST(CudaMatmul, RowGroupsSplitAcrossCtas) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0}) {
    check_matmul(type, 2560, 2247, {1, 2, 5, 8, 9, 16});
    check_matmul(type, 4864, 3001, {1, 7, 12});
  }
}

// matmul_multi (one bulk-copy launch for the weights of one format) against the CPU's matmul
// of each weight, with the per-element bound of check_matmul: groups of one format (q/k/v and
// gate/up shapes, row groups cut between CTAs and between parts), a mixed group (the Q6_K
// part runs alone), and the rows of decode and verify.
void check_multi(const std::vector<GgmlType>& types, int64_t n_in, const std::vector<int64_t>& n_outs,
                 const std::vector<int64_t>& rows_list) {
  auto& B = Backends::get();
  const int n = static_cast<int>(types.size());
  std::vector<std::vector<uint8_t>> w(n);
  std::vector<Weight> wc(n), wf(n);
  for (int i = 0; i < n; ++i) {
    w[i] = random_weight(types[i], n_in, n_outs[i]);
    auto rc = B.cpu->upload_weight(w[i].data(), types[i], n_in, n_outs[i]);
    auto rf = B.fast->upload_weight(w[i].data(), types[i], n_in, n_outs[i]);
    ASSERT_TRUE(rc.ok() && rf.ok());
    wc[i] = rc.value();
    wf[i] = rf.value();
  }
  for (int64_t rows : rows_list) {
    SCOPED_TRACE("n_in " + std::to_string(n_in) + " rows " + std::to_string(rows) + " first type " +
                 std::string(ggml_type_name(types[0])));
    HostMat hx(rows, n_in, n_in + 3, 1.0f);
    const std::vector<float> x = hx.dense(hx.v);
    DevMat xc(*B.cpu, hx), xf(*B.fast, hx);
    std::vector<std::unique_ptr<DevMat>> yc, yf;
    std::vector<Mat> ycm, yfm;
    for (int i = 0; i < n; ++i) {
      yc.push_back(std::make_unique<DevMat>(*B.cpu, rows, n_outs[i], n_outs[i] + i));
      yf.push_back(std::make_unique<DevMat>(*B.fast, rows, n_outs[i], n_outs[i] + i));
      ycm.push_back(yc.back()->m);
      yfm.push_back(yf.back()->m);
      B.cpu->matmul(wc[i], xc.m, ycm[i]);
    }
    std::vector<const Weight*> wp;
    for (auto& v : wf) wp.push_back(&v);
    B.fast->matmul_multi(wp.data(), yfm.data(), n, xf.m);
    ASSERT_TRUE(B.cpu->synchronize().ok());
    const Status st = B.fast->synchronize();
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE("part " + std::to_string(i));
      const std::vector<float> got = yf[i]->dense();
      expect_near_cpu(types[i], w[i], n_in, n_outs[i], x, rows, yc[i]->dense(),
                      {{&got, 2e-3, "matmul_multi", fast_uses_i8(types[i], n_in, rows)}});
    }
  }
}

TEST(CudaMatmul, MultiSameInput) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0}) {
    check_multi({t, t, t}, 5376, {8192, 4096, 4096}, {1, 5, 16});  // q, k, v (sampled outputs)
    check_multi({t, t}, 2560, {2247, 17}, {1, 8});
  }
  check_multi({GgmlType::Q4_K, GgmlType::Q4_K}, 5376, {21504, 21504}, {1, 5});  // gate, up
  check_multi({GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, 768, {130, 64, 9}, {1, 3});
  check_multi({GgmlType::F16, GgmlType::Q4_K}, 512, {33, 48}, {2, 40});  // nothing to share; prefill rows
}

// Few row groups of long rows: one CTA per row group (the one-CTA-per-SM instantiations), 11
// stages a row group, and 2..16 activation rows too many for shared memory (read from global
// memory by every tile).
TEST(CudaMatmul, FewRowGroupsLongRows) {
  GS_REQUIRE_BACKENDS();
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0})
    check_matmul(type, 21504, 272, {1, 2, 5, 9, 16});
}

// Output o of x W^T for one activation row x (n_in floats), in double precision.
double cpu_dot(GgmlType type, const std::vector<uint8_t>& w, int64_t n_in, int64_t o, const float* x) {
  std::vector<float> row(static_cast<size_t>(n_in));
  const size_t rb = ggml_row_size(type, n_in).value();
  dequantize_row_fn(type)(w.data() + static_cast<size_t>(o) * rb, row.data(), n_in);
  double s = 0;
  for (int64_t i = 0; i < n_in; ++i) s += static_cast<double>(row[static_cast<size_t>(i)]) * x[i];
  return s;
}

// A verify pass must reproduce decode exactly (greedy with MTP = without): each row of a
// 2..16-row matmul equals, bit for bit, the same row alone (the decode matvec's contract,
// k_matvec_stream.cu).
TEST(CudaMatmul, VerifyRowsReproduceDecode) {
  GS_REQUIRE_BACKENDS();
  auto& B = Backends::get();
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0}) {
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{2560, 2247}, {5376, 520}, {21504, 272}}) {
      const std::vector<uint8_t> w = random_weight(type, n_in, n_out);
      auto wr = B.fast->upload_weight(w.data(), type, n_in, n_out);
      ASSERT_TRUE(wr.ok()) << wr.status().to_string();
      const Weight wt = wr.value();
      for (int64_t rows : {2, 5, 8, 9, 16}) {
        SCOPED_TRACE(std::string(ggml_type_name(type)) + " n_in " + std::to_string(n_in) + " rows " +
                     std::to_string(rows));
        HostMat hx(rows, n_in, n_in);
        DevMat x(*B.fast, hx), y(*B.fast, rows, n_out, n_out);
        B.fast->matmul(wt, x.m, y.m);
        ASSERT_TRUE(B.fast->synchronize().ok());
        const std::vector<float> all = y.dense();
        for (int64_t r = 0; r < rows; r += (r < 2 ? 1 : 3)) {
          HostMat h1(1, n_in, n_in);
          std::copy(hx.v.begin() + r * n_in, hx.v.begin() + (r + 1) * n_in, h1.v.begin());
          DevMat x1(*B.fast, h1), y1(*B.fast, 1, n_out, n_out);
          B.fast->matmul(wt, x1.m, y1.m);
          ASSERT_TRUE(B.fast->synchronize().ok());
          const std::vector<float> one = y1.dense();
          int bad = 0;
          for (int64_t o = 0; o < n_out; ++o)
            if (std::memcmp(&one[static_cast<size_t>(o)], &all[static_cast<size_t>(r * n_out + o)], 4) != 0 && bad++ < 3)
              ADD_FAILURE() << "row " << r << " output " << o << ": " << all[static_cast<size_t>(r * n_out + o)]
                            << " in the batch, " << one[static_cast<size_t>(o)] << " alone, "
                            << cpu_dot(type, w, n_in, o, h1.v.data()) << " on the CPU (f64)";
          EXPECT_EQ(bad, 0) << "outputs of row " << r << " that differ from the row alone";
        }
      }
    }
  }
}

TEST(CudaMatmul, ExtremeActivationScales) {
  GS_REQUIRE_BACKENDS();
  for (float s : {1e-6f, 1e-3f, 30.0f, 3e3f, 1e5f}) check_matmul(GgmlType::Q4_K, 512, 64, {1, 6, 33}, s);
}

// Q4_K super-block scales far from real models' (~1e-4..1e-2): the f16 dequantization must
// neither overflow nor lose the ordinary blocks beside them (d sc q reaches 37800 at d = -40;
// a form with an f16 addend of -1024 d sc, tried in the eighteenth session, overflows from
// |d| > 1). A few blocks of d = 2, -40 and 1.0009765625 (just past 1) among ordinary ones; the
// results must stay finite and near the CPU's at every row count of the tensor-core path.
TEST(CudaMatmul, Q4KLargeSuperBlockScales) {
  GS_REQUIRE_BACKENDS();
  const int64_t n_in = 2048, n_out = 70;
  for (uint16_t d : {uint16_t{0x4000}, uint16_t{0xD100}, uint16_t{0x3C01}}) {
    std::vector<uint8_t> w = random_weight(GgmlType::Q4_K, n_in, n_out);
    const int64_t n_blocks = n_out * n_in / 256;
    for (int64_t b = 3; b < n_blocks; b += 37) std::memcpy(w.data() + b * 144, &d, 2);
    SCOPED_TRACE("d bits " + std::to_string(d));
    check_matmul_of(GgmlType::Q4_K, w, n_in, n_out, {1, 2, 5, 16});
  }
}

}  // namespace
}  // namespace gs::test
