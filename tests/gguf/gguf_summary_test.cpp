// Totals, parameter counts and value text behind `gemmaserve inspect`.
#include <gtest/gtest.h>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_summary.h"

namespace gs::gguf {
namespace {

TEST(GgufSummary, ShakesTargetTotals) {
  auto f = GgufFile::open(test::shared_path("models/shakes-target.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const GgufSummary s = summarize(**f);
  EXPECT_EQ(s.n_tensors, (*f)->tensors().size());
  uint64_t params = 0, bytes = 0;
  for (const auto& t : (*f)->tensors()) {
    params += static_cast<uint64_t>(t.n_elements);
    bytes += t.size_bytes;
  }
  EXPECT_EQ(s.n_params, params);
  EXPECT_EQ(s.tensor_bytes, bytes);
  uint64_t by_type_bytes = 0;
  size_t by_type_n = 0;
  for (size_t i = 0; i < s.by_type.size(); ++i) {
    by_type_bytes += s.by_type[i].bytes;
    by_type_n += s.by_type[i].n_tensors;
    if (i) {
      EXPECT_LT(static_cast<uint32_t>(s.by_type[i - 1].type), static_cast<uint32_t>(s.by_type[i].type));
    }
  }
  EXPECT_EQ(by_type_bytes, bytes);
  EXPECT_EQ(by_type_n, s.n_tensors);
  ASSERT_EQ(s.by_type.size(), 2u);  // f32 norms and q8_0 matrices
  EXPECT_EQ(s.by_type[0].type, GgmlType::F32);
  EXPECT_EQ(s.by_type[1].type, GgmlType::Q8_0);
}

TEST(GgufSummary, ValueText) {
  EXPECT_EQ(format_value(Value{ValueType::kU32, uint64_t{7}}), "7");
  EXPECT_EQ(format_value(Value{ValueType::kI32, int64_t{-3}}), "-3");
  EXPECT_EQ(format_value(Value{ValueType::kF32, 0.5}), "0.5");
  EXPECT_EQ(format_value(Value{ValueType::kBool, true}), "true");
  EXPECT_EQ(format_value(Value{ValueType::kString, std::string("a\n\"b\"\x01")}), "\"a\\n\\\"b\\\"\\x01\"");
  EXPECT_EQ(format_value(Value{ValueType::kString, std::string(10, 'x')}, 4), "\"xxxx\"...(10 bytes)");
  ArrayValue a;
  a.elem_type = ValueType::kU8;
  a.items = {Value{ValueType::kU8, uint64_t{1}}, Value{ValueType::kU8, uint64_t{2}}};
  a.total_count = 5;
  EXPECT_EQ(format_value(Value{ValueType::kArray, a}), "[1, 2, ...] (5 items)");
  a.total_count = 2;
  EXPECT_EQ(format_value(Value{ValueType::kArray, a}), "[1, 2]");
  a.items.clear();
  a.total_count = 3;
  EXPECT_EQ(format_value(Value{ValueType::kArray, a}), "[...] (3 items)");
  EXPECT_EQ(escape_text("k\ty"), "k\\ty");
}

// Bytes that are not UTF-8 passed through escape_text: a log line or a JSON document built from
// it was not valid UTF-8 (nlohmann's dump threw on it), and a cut could split a character.
TEST(GgufSummary, EscapedTextIsValidUtf8AndCutBetweenCharacters) {
  // Well-formed characters of two, three and four bytes stay as they are.
  EXPECT_EQ(escape_text("caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x96\x81 \xf0\x9f\x98\x80");
  // A lone continuation byte, a truncated sequence, an overlong form, a surrogate, 0xff.
  EXPECT_EQ(escape_text("a\x80" "b"), "a\\x80" "b");
  EXPECT_EQ(escape_text("a\xe2\x96"), "a\\xe2\\x96");
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(escape_text("\xff"), "\\xff");
  // Cut before a character that crosses the limit, not inside it.
  EXPECT_EQ(escape_text("ab\xe2\x96\x81", 4), "ab...(5 bytes)");
  EXPECT_EQ(format_value(Value{ValueType::kString, std::string("\xc3\xa9\xff")}), "\"\xc3\xa9\\xff\"");
}

TEST(GgufSummary, Counts) {
  EXPECT_EQ(format_count(17), "17");
  EXPECT_EQ(format_count(12'345), "12.35 K");
  EXPECT_EQ(format_count(30'697'000'000), "30.70 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(18'700'000'000), "18.70 GB");
}

TEST(GgufSummary, ShortenedArraysKeepTheirCount) {
  auto f = GgufFile::open(test::shared_path("models/shakes-target.gguf"));
  ASSERT_TRUE(f.ok());
  const KeyValue* tokens = (*f)->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(format_type(*tokens), "array[string]");
  auto v = (*f)->get_value(*tokens, 8);
  ASSERT_TRUE(v.ok());
  const std::string text = format_value(*v);
  EXPECT_NE(text.find("\"<pad>\", \"<eos>\", \"<bos>\""), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("({} items)", tokens->count)), std::string::npos) << text;
}

}  // namespace
}  // namespace gs::gguf
