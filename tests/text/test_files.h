// Test helpers of the text tests: reading shared files, the shared vocabularies.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs::text::test_files {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The tokenizer of shared/<rel> (a GGUF), loaded once per test binary; test failure if absent.
inline std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& rel) {
  auto file = gguf::GgufFile::open(test::shared_path(rel));
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return nullptr;
  auto t = Tokenizer::from_gguf(**file);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? *t : nullptr;
}

// The full Gemma 4 vocabulary (reconstructed), shared by all tests of the binary.
inline const Tokenizer& gemma4_vocab() {
  static const std::shared_ptr<const Tokenizer> tok =
      load_tokenizer("test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf");
  return *tok;
}

// The shipped model's cut-down vocabulary.
inline const Tokenizer& shakes_vocab() {
  static const std::shared_ptr<const Tokenizer> tok = load_tokenizer("models/shakes-target.gguf");
  return *tok;
}

}  // namespace gs::text::test_files
