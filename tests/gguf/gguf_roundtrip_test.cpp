// GGUF writer -> reader round trip of metadata of every type and of tensor data.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "common/test_paths.h"

namespace gs::gguf {
namespace {

TEST(GgufRoundTrip, MetadataAndTensors) {
  const auto dir = test::temp_dir("gguf");
  const std::string path = (dir / "rt.gguf").string();
  GgufWriter w;
  w.set_alignment(64);
  w.set_string("general.architecture", "gemma4");
  w.set_u32("a.u32", 7);
  w.set_i32("a.i32", -3);
  w.set_f32("a.f32", 1.5f);
  w.set_bool("a.bool", true);
  w.set_string_array("a.strs", {"x", "", "hello"});
  w.set_bool_array("a.bools", {true, false, true});
  w.set_i32_array("a.ints", {1, -2, 3});
  ASSERT_TRUE(w.add_tensor("t0", GgmlType::F32, {4, 2}).ok());
  ASSERT_TRUE(w.add_tensor("t1", GgmlType::F16, {3}).ok());
  ASSERT_TRUE(w.begin(path).ok());
  std::vector<float> t0 = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(w.write_tensor(t0.data(), t0.size() * 4).ok());
  std::vector<uint16_t> t1 = {0x3c00, 0x4000, 0x4200};
  ASSERT_TRUE(w.write_tensor(t1.data(), 6).ok());
  ASSERT_TRUE(w.finish().ok());

  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ(*(*f)->get_string("general.architecture"), "gemma4");
  EXPECT_EQ(*(*f)->get_u32("a.u32"), 7u);
  EXPECT_EQ(*(*f)->get_i32("a.i32"), -3);
  EXPECT_FALSE((*f)->get_u32("a.i32").ok());
  EXPECT_FLOAT_EQ(*(*f)->get_f32("a.f32"), 1.5f);
  EXPECT_TRUE(*(*f)->get_bool("a.bool"));
  auto strs = (*f)->get_string_array("a.strs");
  ASSERT_TRUE(strs.ok());
  ASSERT_EQ(strs->size(), 3u);
  EXPECT_EQ((*strs)[2], "hello");
  EXPECT_EQ(*(*f)->get_bool_array("a.bools"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(*(*f)->get_int_array("a.ints"), (std::vector<int64_t>{1, -2, 3}));
  auto missing = (*f)->get_u32("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
  auto wrong = (*f)->get_string("a.u32");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("a.u32"), std::string::npos);

  ASSERT_EQ((*f)->tensors().size(), 2u);
  const TensorInfo* a = (*f)->find_tensor("t0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne[0], 4);
  EXPECT_EQ(a->ne[1], 2);
  EXPECT_EQ(a->size_bytes, 32u);
  EXPECT_EQ(std::memcmp(a->data, t0.data(), 32), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 64, 0u);
  const TensorInfo* b = (*f)->find_tensor("t1");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::memcmp(b->data, t1.data(), 6), 0);
  f = make_status(StatusCode::kCancelled, "closed");  // unmaps before the directory goes
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(GgufRoundTrip, OpensSharedGoldens) {
  for (const char* name : {"golden/quant-vectors.gguf", "golden/tiny1234-target.gguf",
                           "golden/tiny1234-assistant.gguf", "golden/tiny1234-goldens.gguf",
                           "models/shakes-target.gguf", "models/shakes-assistant.gguf"}) {
    auto f = GgufFile::open(test::shared_path(name));
    EXPECT_TRUE(f.ok()) << name << ": " << f.status().to_string();
  }
}

}  // namespace
}  // namespace gs::gguf
