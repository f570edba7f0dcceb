// Row dequantization throughput per ggml type (the CPU matmul's inner loop), and the
// quantizers' speed. Prints GB/s of block bytes read and elements/s.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/quant.h"

namespace {

constexpr int64_t kRow = 5376 * 4;  // a few 31B rows: stays in L2, measures the decoder

std::vector<float> random_row(int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

void bm_dequantize(benchmark::State& state, gs::GgmlType type) {
  const auto x = random_row(kRow);
  std::vector<uint8_t> blocks(*gs::ggml_row_size(type, kRow));
  gs::quantize_row_fn(type)(x.data(), blocks.data(), kRow);
  std::vector<float> y(kRow);
  const auto fn = gs::dequantize_row_fn(type);
  for (auto _ : state) {
    fn(blocks.data(), y.data(), kRow);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(blocks.size()));
  state.SetItemsProcessed(state.iterations() * kRow);
}

void bm_quantize(benchmark::State& state, gs::GgmlType type, bool fast) {
  const int64_t n = 4096;
  const auto x = random_row(n);
  std::vector<uint8_t> blocks(*gs::ggml_row_size(type, n));
  const auto fn = fast ? gs::quantize_row_fast_fn(type) : gs::quantize_row_fn(type);
  for (auto _ : state) {
    fn(x.data(), blocks.data(), n);
    benchmark::DoNotOptimize(blocks.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

#define GS_BENCH_TYPE(T)                                                   \
  BENCHMARK_CAPTURE(bm_dequantize, T, gs::GgmlType::T);                    \
  BENCHMARK_CAPTURE(bm_quantize, T, gs::GgmlType::T, false)

GS_BENCH_TYPE(F16);
GS_BENCH_TYPE(BF16);
GS_BENCH_TYPE(Q4_0);
GS_BENCH_TYPE(Q4_1);
GS_BENCH_TYPE(Q5_0);
GS_BENCH_TYPE(Q5_1);
GS_BENCH_TYPE(Q8_0);
GS_BENCH_TYPE(Q2_K);
GS_BENCH_TYPE(Q3_K);
GS_BENCH_TYPE(Q4_K);
GS_BENCH_TYPE(Q5_K);
GS_BENCH_TYPE(Q6_K);
GS_BENCH_TYPE(IQ4_NL);
GS_BENCH_TYPE(IQ4_XS);
GS_BENCH_TYPE(MXFP4);
BENCHMARK_CAPTURE(bm_quantize, Q8_0_fast, gs::GgmlType::Q8_0, true);
BENCHMARK_CAPTURE(bm_quantize, Q4_0_fast, gs::GgmlType::Q4_0, true);

}  // namespace

BENCHMARK_MAIN();
