// Hostile GGUF inputs: every kind of malformed file gives an error that names the field and
// its byte offset, never a crash, hang or large allocation (issue 2's list, case by case).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "core/ggml_type.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace gs::gguf {
namespace {

// Little-endian GGUF image builder for hand-made files.
struct Bytes {
  std::vector<uint8_t> v;
  template <typename T>
  Bytes& put(T x) {
    const size_t at = v.size();
    v.resize(at + sizeof(T));
    std::memcpy(v.data() + at, &x, sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t x) { return put(x); }
  Bytes& u64(uint64_t x) { return put(x); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    v.insert(v.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return u32(kMagic).u32(version).u64(n_tensors).u64(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t x) { return str(key).u32(4).u32(x); }
  Bytes& kv_str(std::string_view key, std::string_view s) { return str(key).u32(8).str(s); }
  Bytes& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (auto d : ne) u64(d);
    return u32(type).u64(offset);
  }
  Bytes& pad(size_t align) {
    while (v.size() % align) v.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    v.resize(v.size() + n, 0);
    return *this;
  }
  size_t size() const { return v.size(); }
};

Result<std::shared_ptr<GgufFile>> parse(const Bytes& b) { return GgufFile::from_bytes(b.v, "hostile.gguf"); }

// The parse fails, and its message names `field` and `at byte <offset>`.
void expect_error(const Bytes& b, std::string_view field, size_t offset) {
  auto r = parse(b);
  ASSERT_FALSE(r.ok()) << "expected an error about " << field;
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(field), std::string::npos) << m;
  EXPECT_NE(m.find(fmt::format("at byte {}", offset)), std::string::npos) << m;
  EXPECT_NE(m.find("hostile.gguf"), std::string::npos) << m;
}

// A small valid file with metadata of every kind and three tensors, written by GgufWriter.
std::vector<uint8_t> small_valid_file() {
  const auto dir = test::temp_dir("hostile");
  const std::string path = (dir / "small.gguf").string();
  GgufWriter w;
  w.set_string("general.architecture", "gemma4");
  w.set_u32("a.u32", 7);
  w.set_f32("a.f32", 0.5f);
  w.set_bool("a.bool", true);
  w.set_string_array("a.strs", {"<pad>", "x", ""});
  w.set_i32_array("a.ints", {1, -2});
  ArrayValue inner;
  inner.elem_type = ValueType::kU8;
  inner.items = {Value{ValueType::kU8, uint64_t{1}}, Value{ValueType::kU8, uint64_t{2}}};
  ArrayValue outer;
  outer.elem_type = ValueType::kArray;
  outer.items = {Value{ValueType::kArray, inner}, Value{ValueType::kArray, inner}};
  w.set_value("a.nested", Value{ValueType::kArray, outer});
  EXPECT_TRUE(w.add_tensor("t.f32", GgmlType::F32, {4, 2}).ok());
  EXPECT_TRUE(w.add_tensor("t.q8", GgmlType::Q8_0, {32}).ok());
  EXPECT_TRUE(w.add_tensor("t.scalar", GgmlType::F32, {1}).ok());
  EXPECT_TRUE(w.begin(path).ok());
  std::vector<uint8_t> data(64, 0x11);
  EXPECT_TRUE(w.write_tensor(data.data(), 32).ok());
  EXPECT_TRUE(w.write_tensor(data.data(), 34).ok());
  EXPECT_TRUE(w.write_tensor(data.data(), 4).ok());
  EXPECT_TRUE(w.finish().ok());
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return bytes;
}

TEST(GgufHostile, SmallValidFileParses) {
  const auto bytes = small_valid_file();
  auto f = GgufFile::from_bytes(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->file_size() % 32, 0u);  // the writer pads the end too
}

TEST(GgufHostile, EveryTruncationFailsWithAnOffset) {
  const auto bytes = small_valid_file();
  ASSERT_GT(bytes.size(), 100u);
  // The last tensor's padding is not data: a file cut inside it is still complete.
  auto full = GgufFile::from_bytes(bytes);
  ASSERT_TRUE(full.ok());
  const TensorInfo& last = (*full)->tensors().back();
  const size_t needed = (*full)->data_offset() + last.offset + last.size_bytes;
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    auto r = GgufFile::from_bytes(std::move(prefix), "cut.gguf");
    if (len >= needed) {
      EXPECT_TRUE(r.ok()) << len << ": " << r.status().to_string();
      continue;
    }
    ASSERT_FALSE(r.ok()) << "prefix of " << len << " bytes parsed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << len;
    EXPECT_NE(r.status().message().find("at byte"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("cut.gguf"), std::string::npos);
  }
}

TEST(GgufHostile, BadMagicAndVersion) {
  Bytes b;
  b.u32(0x46554746).u32(3).u64(0).u64(0);
  expect_error(b, "magic", 0);
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    Bytes c;
    c.header(0, 0, v);
    expect_error(c, "version", 4);
  }
  Bytes be;
  be.header(0, 0, 0x03000000u);
  EXPECT_NE(parse(be).status().message().find("big-endian"), std::string::npos);
  Bytes ok2;
  ok2.header(0, 0, 2);
  EXPECT_TRUE(parse(ok2).ok());
}

TEST(GgufHostile, AbsurdCounts) {
  Bytes t;
  t.header(uint64_t{1} << 60, 0);
  expect_error(t, "tensor_count", 8);
  Bytes k;
  k.header(0, std::numeric_limits<uint64_t>::max());
  expect_error(k, "metadata_kv_count", 16);
  // A count that fits the file size bound but not the records: fails at the first missing record.
  Bytes k2;
  k2.header(0, 3).kv_u32("a", 1).zeros(30);
  EXPECT_FALSE(parse(k2).ok());
}

TEST(GgufHostile, AbsurdStringLengths) {
  Bytes k;
  k.header(0, 1).u64(std::numeric_limits<uint64_t>::max()).u32(4).u32(0);
  expect_error(k, "metadata entry 0 key", 24);
  Bytes v;
  v.header(0, 1).str("key").u32(8).u64(uint64_t{1} << 62);
  expect_error(v, "metadata 'key'", 24 + 8 + 3 + 4);
  Bytes n;
  n.header(1, 0).u64(uint64_t{1} << 40).zeros(40);
  expect_error(n, "tensor 0 name", 24);
  Bytes longkey;
  longkey.header(0, 1).str(std::string(70000, 'k')).u32(4).u32(0);
  expect_error(longkey, "metadata entry 0 key", 24);
}

TEST(GgufHostile, AbsurdArrayCounts) {
  Bytes a;
  a.header(0, 1).str("arr").u32(9).u32(4).u64(uint64_t{1} << 61).zeros(16);
  expect_error(a, "metadata 'arr' count", 24 + 8 + 3 + 4 + 4);
  Bytes s;
  s.header(0, 1).str("arr").u32(9).u32(8).u64(1000000).zeros(64);
  expect_error(s, "metadata 'arr' count", 24 + 8 + 3 + 4 + 4);
}

TEST(GgufHostile, UnknownValueTypes) {
  Bytes t;
  t.header(0, 1).str("k").u32(13).u32(0);
  expect_error(t, "metadata 'k' type", 24 + 8 + 1);
  Bytes e;
  e.header(0, 1).str("k").u32(9).u32(99).u64(1).u32(0);
  expect_error(e, "metadata 'k'", 24 + 8 + 1 + 4);
}

Bytes nested(int depth) {
  Bytes b;
  b.header(0, 1).str("deep").u32(9);
  for (int i = 0; i < depth - 1; ++i) b.u32(9).u64(1);  // array of one array ...
  b.u32(0).u64(1).put<uint8_t>(7);                       // ... of one u8
  return b;
}

TEST(GgufHostile, DeepNesting) {
  EXPECT_TRUE(parse(nested(3)).ok());
  EXPECT_TRUE(parse(nested(kMaxArrayNesting)).ok());
  auto r = parse(nested(kMaxArrayNesting + 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("metadata 'deep'"), std::string::npos);
  // Very deep input does not recurse without bound.
  auto deep = parse(nested(100000));
  EXPECT_FALSE(deep.ok());
}

TEST(GgufHostile, DuplicatesAndEmptyNames) {
  Bytes k;
  k.header(0, 2).kv_u32("dup", 1);
  const size_t second = k.size();
  k.kv_u32("dup", 2);
  expect_error(k, "duplicate key 'dup'", second);
  Bytes e;
  e.header(0, 1).kv_u32("", 1);
  expect_error(e, "empty key", 24);

  Bytes t;
  t.header(2, 0).tensor("w", {32}, 0, 0);
  const size_t second_t = t.size();
  t.tensor("w", {32}, 0, 128).pad(32).zeros(256);
  expect_error(t, "duplicate tensor name", second_t);
  Bytes en;
  en.header(1, 0).tensor("", {32}, 0, 0).pad(32).zeros(128);
  expect_error(en, "empty name", 24);
}

TEST(GgufHostile, TensorShapes) {
  Bytes d0;
  d0.header(1, 0).tensor("w", {}, 0, 0).pad(32);
  expect_error(d0, "tensor 'w' n_dims", 24 + 8 + 1);
  Bytes d5;
  d5.header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad(32).zeros(32);
  expect_error(d5, "tensor 'w' n_dims", 24 + 8 + 1);
  Bytes neg;
  neg.header(1, 0).tensor("w", {uint64_t{1} << 63}, 0, 0).pad(32);
  expect_error(neg, "tensor 'w' ne[0]", 24 + 8 + 1 + 4);
  Bytes ovf;
  ovf.header(1, 0).tensor("w", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0).pad(32);
  expect_error(ovf, "overflows", 24 + 8 + 1 + 4 + 8);
  Bytes blk;
  blk.header(1, 0).tensor("w", {100, 2}, 12, 0).pad(32).zeros(1024);
  expect_error(blk, "tensor 'w' ne[0]", 24 + 8 + 1);
  Bytes big;
  big.header(1, 0).tensor("w", {1 << 20, 1 << 20}, 0, 0).pad(32).zeros(64);
  expect_error(big, "more than the whole file", 24 + 8 + 1);
}

TEST(GgufHostile, UnknownTensorTypes) {
  for (uint32_t type : {4u, 5u, 31u, 41u, 0xffffffffu}) {
    Bytes b;
    b.header(1, 0).tensor("w", {32}, type, 0).pad(32).zeros(256);
    expect_error(b, "unknown ggml type", 24 + 8 + 1 + 4 + 8);
  }
}

TEST(GgufHostile, OffsetsAlignmentRangeAndOverlap) {
  Bytes mis;
  mis.header(1, 0);
  const size_t rec = mis.size();
  mis.tensor("w", {8}, 0, 4).pad(32).zeros(64);
  expect_error(mis, "tensor 'w' offset", rec + 8 + 1 + 4 + 8 + 4);

  Bytes out;
  out.header(1, 0).tensor("w", {8}, 0, 64).pad(32).zeros(64);
  expect_error(out, "tensor 'w' data", 24);
  Bytes huge_off;
  huge_off.header(1, 0).tensor("w", {8}, 0, std::numeric_limits<uint64_t>::max() - 31).pad(32).zeros(64);
  EXPECT_FALSE(parse(huge_off).ok());

  Bytes lap;
  lap.header(3, 0).tensor("a", {64}, 0, 0).tensor("b", {8}, 0, 32);
  const size_t third = lap.size();
  lap.tensor("c", {8}, 0, 128).pad(32).zeros(512);
  expect_error(lap, "overlaps tensor 'a'", third - (8 + 1 + 4 + 8 + 4 + 8));
  // A range inside an earlier long one is caught even when a short one sits between.
  Bytes lap2;
  lap2.header(3, 0).tensor("long", {256}, 0, 0).tensor("short", {8}, 0, 0 + 1024 * 0 + 0);
  EXPECT_FALSE(parse(lap2.tensor("x", {8}, 0, 512).pad(32).zeros(2048)).ok());
  Bytes lap3;
  lap3.header(3, 0).tensor("long", {256}, 0, 0).tensor("z", {0}, 0, 64).tensor("in", {8}, 0, 512).pad(32).zeros(2048);
  expect_error(lap3, "overlaps tensor 'long'", 24 + (8 + 4 + 4 + 8 + 4 + 8) + (8 + 1 + 4 + 8 + 4 + 8));

  // Zero-byte tensors may share an offset with anything.
  Bytes zero;
  zero.header(2, 0).tensor("a", {8}, 0, 0).tensor("z", {0}, 0, 0).pad(32).zeros(32);
  EXPECT_TRUE(parse(zero).ok()) << parse(zero).status().to_string();
}

TEST(GgufHostile, Alignment) {
  for (uint32_t bad : {0u, 3u, 48u, 1u << 31}) {
    Bytes b;
    b.header(0, 1).kv_u32("general.alignment", bad);
    expect_error(b, "general.alignment", 24 + 8 + 17 + 4);
  }
  Bytes s;
  s.header(0, 1).kv_str("general.alignment", "32");
  expect_error(s, "general.alignment", 24 + 8 + 17 + 4);
  Bytes ok;
  ok.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {8}, 0, 0).pad(64).zeros(32);
  auto f = parse(ok);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  Bytes mis;
  mis.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {8}, 0, 32).pad(64).zeros(128);
  EXPECT_FALSE(parse(mis).ok());
}

TEST(GgufHostile, ErrorsEscapeControlBytesAndCutLongNames) {
  Bytes b;
  b.header(0, 2).kv_u32("bad\nkey\x1b", 1).kv_u32("bad\nkey\x1b", 2);
  auto r = parse(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  EXPECT_NE(r.status().message().find("bad\\x0akey\\x1b"), std::string::npos) << r.status().message();
  Bytes l;
  const std::string name(3000, 'n');
  l.header(1, 0).tensor(name, {7}, 99, 0);
  r = parse(l);
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 400u);
}

TEST(GgufHostile, TypedGettersCheckRanges) {
  Bytes b;
  b.header(0, 5)
      .kv_u32("u", 5)
      .str("neg").u32(5).put<int32_t>(-1)
      .str("big").u32(10).u64(uint64_t{1} << 40)
      .str("u64max").u32(10).u64(std::numeric_limits<uint64_t>::max())
      .str("arr").u32(9).u32(4).u64(20);
  for (int i = 0; i < 20; ++i) b.u32(static_cast<uint32_t>(i));
  auto f = parse(b);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_FALSE((*f)->get_u32("neg").ok());
  EXPECT_EQ(*(*f)->get_i32("neg"), -1);
  EXPECT_FALSE((*f)->get_u32("big").ok());
  EXPECT_FALSE((*f)->get_i64("u64max").ok());
  EXPECT_EQ(*(*f)->get_u64("u64max"), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE((*f)->get_string("u").ok());
  EXPECT_FALSE((*f)->get_string_array("arr").ok());
  EXPECT_EQ((*f)->get_int_array("arr")->size(), 20u);
  auto v = (*f)->get_value(*(*f)->find("arr"), 8);
  ASSERT_TRUE(v.ok());
  const auto& a = std::get<ArrayValue>(v->data);
  EXPECT_EQ(a.items.size(), 8u);
  EXPECT_EQ(a.total_count, 20u);
}

TEST(GgufHostile, OpenErrors) {
  auto missing = GgufFile::open("/nonexistent/x.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIo);
  const auto tmp = test::temp_dir("open");
  auto dir = GgufFile::open(tmp.string());
  ASSERT_FALSE(dir.ok());
  const auto empty = tmp / "e.gguf";
  { std::ofstream(empty.string()); }
  auto e = GgufFile::open(empty.string());
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("magic"), std::string::npos);
}

// A FIFO is refused at once: open() without O_NONBLOCK waited for a writer forever.
TEST(GgufHostile, FifoIsRefusedWithoutWaiting) {
  const auto tmp = test::temp_dir("fifo");
  const std::string fifo = (tmp / "model.gguf").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto opened = std::async(std::launch::async, [&] { return GgufFile::open(fifo); });
  if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "opening a FIFO waits for a writer";
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // lets the blocked open return
    opened.wait();
    if (writer >= 0) ::close(writer);
  }
  auto f = opened.get();
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("not a regular file"), std::string::npos) << f.status().to_string();
}

TEST(GgufHostile, RandomMutationsNeverCrash) {
  // A deterministic mini-fuzz for every CI run (the libFuzzer target goes further).
  const auto base = small_valid_file();
  std::mt19937 rng(2024);
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> m = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % m.size();
      switch (rng() % 3) {
        case 0: m[at] = static_cast<uint8_t>(rng()); break;
        case 1: m[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: m[at] = (rng() & 1) ? 0xff : 0x00; break;
      }
    }
    auto r = GgufFile::from_bytes(std::move(m));
    if (!r.ok()) continue;
    ++parsed;
    for (const auto& kv : (*r)->metadata()) (void)(*r)->get_value(kv, 4);
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace gs::gguf
