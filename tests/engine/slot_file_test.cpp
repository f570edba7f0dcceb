// Slot files (decisions 0068, 0069) on a tiny KV cache: the names of the files a save makes,
// and that a restore loads the file it checked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/test_paths.h"
#include "common/tiny_kv_config.h"
#include "engine/slot_file.h"
#include "runtime/kv_cache.h"

namespace gs {
namespace {

struct TinyCache {
  TinyCache() {
    backend = create_cpu_backend(1);
    KvCacheOptions o;
    o.n_seq_max = 3;
    o.n_ctx = 40;
    o.page_size = 8;
    o.max_ubatch = 4;
    kv = KvCache::create(config, *backend, o).value();
    model.model_hash = 42;
    model.n_layer = config.n_layer;
    model.n_embd = config.n_embd;
    model.n_vocab = 100;
    model.sliding_window = config.sliding_window;
    model.kv_type = GgmlType::F16;
    for (int il = 0; il < config.n_layer; ++il) {
      const Gemma4LayerConfig& l = config.layers[static_cast<size_t>(il)];
      model.layers.push_back({l.sliding ? 1 : 0, l.n_head_kv, l.head_dim, static_cast<int32_t>(kv->position_bytes(il))});
    }
  }
  // A sequence of n positions whose every stored byte is a function of `tag`.
  int filled(int32_t n, uint8_t tag) {
    const int seq = kv->add_sequence().value();
    for (int32_t p = 0; p < n; p += 3) EXPECT_TRUE(kv->append(seq, std::min(3, n - p)).ok());
    for (int il = 0; il < config.n_layer; ++il) {
      const int32_t lo = config.layers[static_cast<size_t>(il)].sliding ? kv->swa_oldest(seq) : 0;
      const size_t bytes = static_cast<size_t>(n - lo) * kv->position_bytes(il);
      std::vector<uint8_t> k(bytes), v(bytes);
      for (size_t i = 0; i < bytes; ++i) {
        k[i] = static_cast<uint8_t>(tag + i * 3 + static_cast<size_t>(il));
        v[i] = static_cast<uint8_t>(tag + i * 5 + 7);
      }
      EXPECT_TRUE(kv->write_positions(seq, il, lo, n - lo, k.data(), v.data()).ok());
    }
    return seq;
  }
  // Every stored byte of the sequence, layer by layer, K then V.
  std::vector<uint8_t> stored(int seq) const {
    std::vector<uint8_t> all;
    const int32_t n = kv->length(seq);
    for (int il = 0; il < config.n_layer; ++il) {
      const int32_t lo = config.layers[static_cast<size_t>(il)].sliding ? kv->swa_oldest(seq) : 0;
      const size_t bytes = static_cast<size_t>(n - lo) * kv->position_bytes(il);
      std::vector<uint8_t> k(bytes), v(bytes);
      EXPECT_TRUE(kv->read_positions(seq, il, lo, n - lo, k.data(), v.data()).ok());
      all.insert(all.end(), k.begin(), k.end());
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  Gemma4Config config = tiny_kv_config();
  std::unique_ptr<Backend> backend;
  std::unique_ptr<KvCache> kv;
  SlotFileModel model;
};

// A file renamed over the name between the check and the load (another server saving the same
// name) is not loaded under the checked file's tokens: the checked file is.
TEST(SlotFile, RestoreLoadsTheFileItChecked) {
  const test::ScratchDir dir("slot-file-swap");
  TinyCache c;
  const int32_t n = 20;
  const int a = c.filled(n, 1);
  const int b = c.filled(n, 100);
  const std::vector<int32_t> tokens_a(static_cast<size_t>(n), 5), tokens_b(static_cast<size_t>(n), 9);
  const std::string path_a = (dir.path / "a.bin").string(), path_b = (dir.path / "b.bin").string();
  ASSERT_TRUE(write_slot_file(path_a, c.model, tokens_a, *c.kv, a).ok());
  ASSERT_TRUE(write_slot_file(path_b, c.model, tokens_b, *c.kv, b).ok());
  ASSERT_EQ(std::filesystem::file_size(path_a), std::filesystem::file_size(path_b));
  auto checked = check_slot_file(path_a, "a.bin", c.model, 40);
  ASSERT_TRUE(checked.ok()) << checked.status().to_string();
  EXPECT_EQ(checked->tokens, tokens_a);
  std::filesystem::rename(path_b, path_a);  // b's bytes are under the name now
  ASSERT_TRUE(c.kv->remove_sequence(b).ok());
  const int r = c.kv->add_sequence().value();
  ASSERT_TRUE(load_slot_file(path_a, "a.bin", c.model, *checked, *c.kv, r).ok());
  EXPECT_EQ(c.stored(r), c.stored(a));
}

// A save makes a temporary file of a short name no client's file can have: the longest
// allowed name (255 bytes) saves, and a client's file named like "<name>.tmp.<pid>" is left
// alone.
TEST(SlotFile, SaveTemporaryFileFitsAnyNameAndTouchesNoOtherFile) {
  const test::ScratchDir dir("slot-file-tmp");
  TinyCache c;
  const int a = c.filled(12, 3);
  const std::vector<int32_t> tokens(12, 7);
  const std::string longest = std::string(255, 'n');
  auto saved = write_slot_file((dir.path / longest).string(), c.model, tokens, *c.kv, a);
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  EXPECT_TRUE(check_slot_file((dir.path / longest).string(), longest, c.model, 40).ok());
  const std::filesystem::path other = dir.path / ("k.bin.tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(other, std::ios::binary);
    out << "a client's file";
  }
  ASSERT_TRUE(write_slot_file((dir.path / "k.bin").string(), c.model, tokens, *c.kv, a).ok());
  ASSERT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(std::filesystem::file_size(other), 15u);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    EXPECT_EQ(entry.path().filename().string().rfind(".gsslot", 0), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace gs
