// What a slot file costs (decisions 0068, 0070): the throughput of OpenSSL's EVP digests over a
// 128 MiB buffer (the slot file's checksum and a candidate's), and the save (write_slot_file)
// and restore (check_slot_file, then load_slot_file) of a slot of 8192 tokens on a CPU KV
// cache of the 31B's layer shapes (16 KV heads of 256 on the sliding layers, 4 of 512 on the
// full ones, a window of 1024), two of its six-layer groups: a 385 MiB f16 file, written to
// and read from the page cache (the disk is not timed).
#include <benchmark/benchmark.h>

#include <openssl/evp.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/slot_file.h"
#include "runtime/kv_cache.h"

namespace {

constexpr size_t kDigestBufferBytes = 128u << 20;
constexpr int32_t kSlotTokens = 8192;

const std::vector<uint8_t>& digest_input() {
  static const std::vector<uint8_t> b = [] {
    std::vector<uint8_t> v(kDigestBufferBytes);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    return v;
  }();
  return b;
}

// One EVP digest of the buffer, fed 8 MiB at a time as a slot file's chunks are.
void digest_bench(benchmark::State& state, const EVP_MD* md) {
  const std::vector<uint8_t>& in = digest_input();
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char out[EVP_MAX_MD_SIZE];
  for (auto _ : state) {
    EVP_DigestInit_ex(ctx.get(), md, nullptr);
    for (size_t off = 0; off < in.size(); off += 8u << 20) EVP_DigestUpdate(ctx.get(), in.data() + off, 8u << 20);
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), out, &n);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(in.size()));
}
void BM_DigestSha256(benchmark::State& state) { digest_bench(state, EVP_sha256()); }
void BM_DigestSha512_256(benchmark::State& state) { digest_bench(state, EVP_sha512_256()); }
void BM_DigestBlake2b512(benchmark::State& state) { digest_bench(state, EVP_blake2b512()); }
BENCHMARK(BM_DigestSha256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DigestSha512_256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DigestBlake2b512)->Unit(benchmark::kMillisecond);

// Two of the 31B's groups of five sliding layers and one full layer.
gs::Gemma4Config big_kv_config() {
  gs::Gemma4Config c;
  c.n_layer = 12;
  c.n_embd = 5376;
  c.n_ctx_train = kSlotTokens;
  c.sliding_window = 1024;
  c.layers.resize(12);
  for (int il = 0; il < 12; ++il) {
    const bool sliding = il % 6 != 5;
    c.layers[static_cast<size_t>(il)] = {sliding, 32, sliding ? 16 : 4, sliding ? 256 : 512, sliding ? 256 : 128,
                                         21504, sliding ? 10000.0f : 1e6f, sliding, il};
  }
  return c;
}

// A cache whose sequence `saved` holds kSlotTokens positions of patterned bytes, and the
// file's model description.
struct BigSlot {
  BigSlot() {
    backend = gs::create_cpu_backend(1);
    gs::KvCacheOptions o;
    o.n_seq_max = 2;
    o.n_ctx = kSlotTokens;
    kv = gs::KvCache::create(config, *backend, o).value();
    saved = kv->add_sequence().value();
    for (int32_t p = 0; p < kSlotTokens; p += kv->max_ubatch()) (void)kv->append(saved, kv->max_ubatch());
    for (int il = 0; il < config.n_layer; ++il) {
      const int32_t lo = config.layers[static_cast<size_t>(il)].sliding ? kv->swa_oldest(saved) : 0;
      std::vector<uint8_t> k(static_cast<size_t>(kSlotTokens - lo) * kv->position_bytes(il));
      for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(i * 7 + static_cast<size_t>(il));
      (void)kv->write_positions(saved, il, lo, kSlotTokens - lo, k.data(), k.data());
    }
    tokens.assign(kSlotTokens, 3);
    model.fingerprint.fill(42);
    model.n_layer = config.n_layer;
    model.n_embd = config.n_embd;
    model.n_vocab = 262144;
    model.sliding_window = config.sliding_window;
    model.kv_type = gs::GgmlType::F16;
    for (int il = 0; il < config.n_layer; ++il) {
      const gs::Gemma4LayerConfig& l = config.layers[static_cast<size_t>(il)];
      model.layers.push_back({l.sliding ? 1 : 0, l.n_head_kv, l.head_dim, static_cast<int32_t>(kv->position_bytes(il))});
    }
    path = (std::filesystem::temp_directory_path() / "gs_slot_file_bench.bin").string();
  }
  ~BigSlot() { std::filesystem::remove(path); }
  gs::Gemma4Config config = big_kv_config();
  std::unique_ptr<gs::Backend> backend;
  std::unique_ptr<gs::KvCache> kv;
  int saved = -1;
  std::vector<int32_t> tokens;
  gs::SlotFileModel model;
  std::string path;
};

BigSlot& big_slot() {
  static BigSlot s;
  return s;
}

void BM_SlotSave(benchmark::State& state) {
  BigSlot& s = big_slot();
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto written = gs::write_slot_file(s.path, s.model, s.tokens, *s.kv, s.saved);
    if (!written.ok()) {
      state.SkipWithError(written.status().to_string().c_str());
      return;
    }
    bytes = *written;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["file_MiB"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_SlotSave)->Unit(benchmark::kMillisecond)->MinTime(3);

void BM_SlotRestore(benchmark::State& state) {
  BigSlot& s = big_slot();
  if (!std::filesystem::exists(s.path)) (void)gs::write_slot_file(s.path, s.model, s.tokens, *s.kv, s.saved);
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto contents = gs::check_slot_file(s.path, "bench.bin", s.model, kSlotTokens);
    if (!contents.ok()) {
      state.SkipWithError(contents.status().to_string().c_str());
      return;
    }
    const int seq = s.kv->add_sequence().value();
    const gs::Status st = gs::load_slot_file(s.path, "bench.bin", s.model, *contents, *s.kv, seq);
    (void)s.kv->remove_sequence(seq);
    if (!st.ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
    bytes = contents->file_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_SlotRestore)->Unit(benchmark::kMillisecond)->MinTime(3);

}  // namespace

BENCHMARK_MAIN();
