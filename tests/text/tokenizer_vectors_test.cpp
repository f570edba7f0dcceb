// Tokenizer against llama.cpp's Gemma 4 vectors, the tinyshakespeare ids and the HF goldens.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"
#include "test_files.h"

namespace gs::text {
namespace {

using test_files::read_file;

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t p = s.find(sep, start);
    if (p == std::string::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + sep.size();
  }
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream is(line);
  int64_t v = 0;
  while (is >> v) ids.push_back(static_cast<int32_t>(v));
  return ids;
}

const Tokenizer& full_tokenizer() { return test_files::gemma4_vocab(); }

TEST(TokenizerVectors, LlamaCppGemma4Vectors) {
  const Tokenizer& tok = full_tokenizer();
  const std::string inp = read_file(test::shared_path("test-assets/gemma-tokenizer/ggml-vocab-gemma-4.gguf.inp"));
  const std::string out = read_file(test::shared_path("test-assets/gemma-tokenizer/ggml-vocab-gemma-4.gguf.out"));
  std::vector<std::string> texts = split(inp, "\n__ggml_vocab_test__\n");
  std::vector<std::string> lines = split(out, "\n");
  // The .inp file ends with a separator-terminated last entry; drop trailing empties.
  while (!texts.empty() && texts.back().empty()) texts.pop_back();
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_EQ(texts.size(), 46u);
  ASSERT_EQ(lines.size(), texts.size());
  int failures = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = tok.encode(texts[i], /*add_special=*/false, /*parse_special=*/false);
    const auto want = parse_ids(lines[i]);
    EXPECT_EQ(ids, want) << "vector " << i << ": \"" << texts[i] << "\"";
    if (ids != want) ++failures;
    auto back = tok.decode(ids);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, texts[i]) << "round trip of vector " << i;
  }
  EXPECT_EQ(failures, 0);
}

TEST(TokenizerVectors, TinyShakespeareIdsAndRoundTrip) {
  const Tokenizer& tok = full_tokenizer();
  const std::string text = read_file(test::shared_path("test-assets/corpora/tinyshakespeare.txt"));
  const auto want = parse_ids(read_file(test::shared_path("test-assets/corpora/tinyshakespeare.gemma4-ids.txt")));
  ASSERT_EQ(want.size(), 321210u);
  const auto ids = tok.encode(text, false, false);
  ASSERT_EQ(ids.size(), want.size());
  size_t first_diff = ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != want[i]) {
      first_diff = i;
      break;
    }
  }
  EXPECT_EQ(first_diff, ids.size()) << "first difference at id index " << first_diff;
  auto back = tok.decode(ids);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == text) << "decode(encode(tinyshakespeare)) differs";
}

TEST(TokenizerVectors, HfApproxGoldens) {
  const Tokenizer& tok = full_tokenizer();
  const auto j = nlohmann::json::parse(
      read_file(test::shared_path("test-assets/gemma-tokenizer/gemma4-approx-token-goldens.json")));
  int n = 0;
  for (const auto& item : j.at("items")) {
    const std::string text = item.at("text");
    const auto want = item.at("ids").get<std::vector<int32_t>>();
    // HF semantics: special-token text is parsed, nothing is added.
    const auto ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    EXPECT_EQ(ids, want) << "text: " << text;
    auto back = tok.decode(ids, DecodeOptions{.render_special = true});
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, text);
    ++n;
  }
  EXPECT_EQ(n, 27);
}

}  // namespace
}  // namespace gs::text
