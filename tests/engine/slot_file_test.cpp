// Slot files (decisions 0068, 0069, 0070) on a tiny KV cache: a round trip is bit-exact; the
// names of the files a save makes; a restore loads the file it checked; the SHA-256 digest and
// model fingerprint; format 1 files are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/test_paths.h"
#include "common/tiny_kv_config.h"
#include "engine/slot_file.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "runtime/kv_cache.h"

namespace gs {
namespace {

struct TinyCache {
  explicit TinyCache(GgmlType type = GgmlType::F16) {
    if (type == GgmlType::Q8_0) {  // q8_0 head rows need head_dim % 32 == 0
      config.layers[0].head_dim = 32;
      config.layers[1].head_dim = 64;
    }
    backend = create_cpu_backend(1);
    KvCacheOptions o;
    o.n_seq_max = 3;
    o.n_ctx = 40;
    o.page_size = 8;
    o.max_ubatch = 4;
    o.type = type;
    kv = KvCache::create(config, *backend, o).value();
    model.fingerprint.fill(42);
    model.n_layer = config.n_layer;
    model.n_embd = config.n_embd;
    model.n_vocab = 100;
    model.sliding_window = config.sliding_window;
    model.kv_type = type;
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

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Saved, checked and loaded into another sequence: every stored byte comes back, for each
// cache type, with the sliding layers' ring wrapped (30 positions over a ring of 8).
TEST(SlotFile, RoundTripIsBitExact) {
  const test::ScratchDir dir("slot-file-round-trip");
  for (const GgmlType type : {GgmlType::F16, GgmlType::F32, GgmlType::Q8_0}) {
    SCOPED_TRACE(ggml_type_name(type));
    TinyCache c(type);
    const int32_t n = 30;
    const int a = c.filled(n, 11);
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = (i * 7) % 100;
    const std::string path = (dir.path / "rt.bin").string();
    auto written = write_slot_file(path, c.model, tokens, *c.kv, a);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    EXPECT_EQ(*written, std::filesystem::file_size(path));
    auto checked = check_slot_file(path, "rt.bin", c.model, 40);
    ASSERT_TRUE(checked.ok()) << checked.status().to_string();
    EXPECT_EQ(checked->tokens, tokens);
    EXPECT_EQ(checked->swa_lo, c.kv->swa_oldest(a));
    EXPECT_EQ(checked->file_bytes, *written);
    const int r = c.kv->add_sequence().value();
    ASSERT_TRUE(load_slot_file(path, "rt.bin", c.model, *checked, *c.kv, r).ok());
    EXPECT_EQ(c.kv->length(r), n);
    EXPECT_EQ(c.kv->swa_oldest(r), c.kv->swa_oldest(a));
    EXPECT_EQ(c.stored(r), c.stored(a));
  }
}

// A file whose bytes do not match its SHA-256 digest is refused as corrupt: a byte of the K
// and V rows, of the token ids or of the stored digest itself flipped.
TEST(SlotFile, ADigestMismatchIsRefused) {
  const test::ScratchDir dir("slot-file-digest");
  TinyCache c;
  const int32_t n = 20;
  const int a = c.filled(n, 1);
  const std::vector<int32_t> tokens(static_cast<size_t>(n), 5);
  const std::filesystem::path good = dir.path / "good.bin";
  ASSERT_TRUE(write_slot_file(good.string(), c.model, tokens, *c.kv, a).ok());
  const std::string bytes = read_bytes(good);
  ASSERT_TRUE(check_slot_file(good.string(), "good.bin", c.model, 40).ok());
  // The header (72 bytes), 2 layers of 16, then the 20 token ids: the rows start at 184.
  const size_t rows_start = 72 + 2 * 16 + 4 * static_cast<size_t>(n);
  ASSERT_GT(bytes.size(), rows_start + 32 + 1);
  for (const size_t at : {rows_start - 4 * static_cast<size_t>(n), rows_start + 1, (rows_start + bytes.size()) / 2,
                          bytes.size() - 32, bytes.size() - 1}) {
    SCOPED_TRACE(at);
    std::string flipped = bytes;
    flipped[at] ^= 0x01;
    write_bytes(dir.path / "flipped.bin", flipped);
    auto r = check_slot_file((dir.path / "flipped.bin").string(), "flipped.bin", c.model, 40);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("flipped.bin"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("is corrupt (its SHA-256 checksum does not match"), std::string::npos)
        << r.status().message();
  }
}

// A file of format 1 (an older gemmaserve's: a 64-bit fingerprint and checksum) is refused with
// a message that names the format and says to save the slot again; an unknown format too.
TEST(SlotFile, AFormatOneFileIsRefused) {
  const test::ScratchDir dir("slot-file-v1");
  TinyCache c;
  // Format 1's layout: magic, u32 version 1, u32 kv type, u64 fingerprint, 6 int32, 4 int32 a
  // layer, the token ids (none here: an empty slot), a u64 checksum.
  std::string v1 = "GSSLOTKV";
  auto put32 = [&](uint32_t v) { v1.append(reinterpret_cast<const char*>(&v), 4); };
  put32(1);
  put32(static_cast<uint32_t>(GgmlType::F16));
  v1.append(8, '\x5a');
  for (const int32_t v : {c.model.n_layer, c.model.n_embd, c.model.n_vocab, c.model.sliding_window, 0, 0}) {
    put32(static_cast<uint32_t>(v));
  }
  for (const auto& l : c.model.layers) {
    for (const int32_t v : l) put32(static_cast<uint32_t>(v));
  }
  v1.append(8, '\x17');
  write_bytes(dir.path / "old.bin", v1);
  auto r = check_slot_file((dir.path / "old.bin").string(), "old.bin", c.model, 40);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("slot file 'old.bin' was written by an older gemmaserve, format 1"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("save the slot again"), std::string::npos) << r.status().message();
  // Version 3 (a newer server's): named, refused.
  std::string v3 = v1;
  v3[8] = 3;
  write_bytes(dir.path / "new.bin", v3);
  r = check_slot_file((dir.path / "new.bin").string(), "new.bin", c.model, 40);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("has version 3; this server reads version 2"), std::string::npos)
      << r.status().message();
}

// A file saved for another model file (another fingerprint, the same shapes) is refused; and
// one cut inside its header is refused as truncated, not read past its end.
TEST(SlotFile, AnotherFingerprintAndAShortHeaderAreRefused) {
  const test::ScratchDir dir("slot-file-fingerprint");
  TinyCache c;
  const int a = c.filled(10, 2);
  const std::vector<int32_t> tokens(10, 1);
  const std::filesystem::path path = dir.path / "f.bin";
  ASSERT_TRUE(write_slot_file(path.string(), c.model, tokens, *c.kv, a).ok());
  SlotFileModel other = c.model;
  other.fingerprint[31] ^= 1;  // the last byte: the whole digest is compared
  auto r = check_slot_file(path.string(), "f.bin", other, 40);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("was saved for another model file"), std::string::npos) << r.status().message();
  const std::string bytes = read_bytes(path);
  write_bytes(dir.path / "short.bin", bytes.substr(0, 40));
  r = check_slot_file((dir.path / "short.bin").string(), "short.bin", c.model, 40);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is truncated"), std::string::npos) << r.status().message();
}

// A GGUF of two tensors, "a" (f32 [8, 4]) and "b" (`b_type`, `b_ne`), whose data bytes are
// the same whatever b's type and shape (b is 64 bytes), and whose first data byte is `first`.
std::string write_two_tensors(const std::filesystem::path& dir, const std::string& name, GgmlType b_type,
                              const std::vector<int64_t>& b_ne, uint8_t first = 0) {
  const std::string path = (dir / name).string();
  gguf::GgufWriter w;
  w.set_string("general.architecture", "test");
  EXPECT_TRUE(w.add_tensor("a", GgmlType::F32, {8, 4}).ok());
  EXPECT_TRUE(w.add_tensor("b", b_type, b_ne).ok());
  EXPECT_TRUE(w.begin(path).ok());
  std::vector<uint8_t> a(128), b(64);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(200 - i);
  a[0] = first;
  EXPECT_TRUE(w.write_tensor(a.data(), a.size()).ok());
  EXPECT_TRUE(w.write_tensor(b.data(), b.size()).ok());
  EXPECT_TRUE(w.finish().ok());
  return path;
}

Sha256::Digest fingerprint_of(const std::string& path) {
  auto f = gguf::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return {};
  auto d = model_fingerprint(**f);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? *d : Sha256::Digest{};
}

// The fingerprint sees one tensor's type or shape change, even with the same bytes of data,
// and a change in a tensor's first bytes; two files of the same tensors share it.
TEST(SlotFile, ModelFingerprintSeesOneTensorsTypeAndShape) {
  const test::ScratchDir dir("slot-file-model-fingerprint");
  const Sha256::Digest base = fingerprint_of(write_two_tensors(dir.path, "base.gguf", GgmlType::F16, {16, 2}));
  EXPECT_EQ(fingerprint_of(write_two_tensors(dir.path, "same.gguf", GgmlType::F16, {16, 2})), base);
  EXPECT_NE(base, Sha256::Digest{});
  const Sha256::Digest type = fingerprint_of(write_two_tensors(dir.path, "type.gguf", GgmlType::BF16, {16, 2}));
  const Sha256::Digest shape = fingerprint_of(write_two_tensors(dir.path, "shape.gguf", GgmlType::F16, {8, 4}));
  const Sha256::Digest dims = fingerprint_of(write_two_tensors(dir.path, "dims.gguf", GgmlType::F16, {8, 2, 2}));
  const Sha256::Digest data = fingerprint_of(write_two_tensors(dir.path, "data.gguf", GgmlType::F16, {16, 2}, 9));
  for (const Sha256::Digest& d : {type, shape, dims, data}) EXPECT_NE(d, base);
  EXPECT_NE(type, shape);
  EXPECT_NE(shape, dims);
}

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
