// Encoding speed of the Gemma 4 tokenizer (bytes/s on one core): tinyshakespeare as is,
// and as one 1 MB line (the pre-split only splits at newlines, so lines can be huge).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string shared_dir() {
  const char* env = std::getenv("GS_SHARED_DIR");
  return env != nullptr && *env ? env : GS_SHARED_DIR;
}

const gs::text::Tokenizer* tokenizer() {
  static std::shared_ptr<const gs::text::Tokenizer> tok = []() -> std::shared_ptr<const gs::text::Tokenizer> {
    auto file = gs::gguf::GgufFile::open(shared_dir() +
                                         "/test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf");
    if (!file.ok()) return nullptr;
    auto t = gs::text::Tokenizer::from_gguf(**file);
    return t.ok() ? *t : nullptr;
  }();
  return tok.get();
}

const std::string& corpus() {
  static const std::string text = read_file(shared_dir() + "/test-assets/corpora/tinyshakespeare.txt");
  return text;
}

void BM_EncodeTinyShakespeare(benchmark::State& state) {
  const auto* tok = tokenizer();
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("shared test assets missing");
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    const auto ids = tok->encode(corpus(), false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}
BENCHMARK(BM_EncodeTinyShakespeare)->Unit(benchmark::kMillisecond);

// The same with the per-thread segment memo emptied before each pass (first-sight text).
void BM_EncodeTinyShakespeareCold(benchmark::State& state) {
  const auto* tok = tokenizer();
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("shared test assets missing");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    gs::text::Tokenizer::clear_thread_cache();
    state.ResumeTiming();
    const auto ids = tok->encode(corpus(), false, false);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
}
BENCHMARK(BM_EncodeTinyShakespeareCold)->Unit(benchmark::kMillisecond);

void BM_EncodeOneLine(benchmark::State& state) {
  const auto* tok = tokenizer();
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("shared test assets missing");
    return;
  }
  std::string line = corpus().substr(0, static_cast<size_t>(state.range(0)));
  std::replace(line.begin(), line.end(), '\n', ' ');
  for (auto _ : state) {
    state.PauseTiming();
    gs::text::Tokenizer::clear_thread_cache();
    state.ResumeTiming();
    const auto ids = tok->encode(line, false, false);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_EncodeOneLine)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_LoadVocabulary(benchmark::State& state) {
  const std::string path = shared_dir() + "/test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf";
  auto file = gs::gguf::GgufFile::open(path);
  if (!file.ok()) {
    state.SkipWithError("vocabulary missing");
    return;
  }
  for (auto _ : state) {
    auto t = gs::text::Tokenizer::from_gguf(**file);
    benchmark::DoNotOptimize(t.ok());
  }
}
BENCHMARK(BM_LoadVocabulary)->Unit(benchmark::kMillisecond);

void BM_DecodeTinyShakespeare(benchmark::State& state) {
  const auto* tok = tokenizer();
  if (tok == nullptr || corpus().empty()) {
    state.SkipWithError("shared test assets missing");
    return;
  }
  const auto ids = tok->encode(corpus(), false, false);
  for (auto _ : state) {
    auto text = tok->decode(ids);
    benchmark::DoNotOptimize(text.ok());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
}
BENCHMARK(BM_DecodeTinyShakespeare)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
