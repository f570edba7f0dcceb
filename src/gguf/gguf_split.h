// Split GGUF models (llama.cpp's gguf-split): the metadata keys every shard carries and the
// shard file names, PREFIX-00001-of-00003.gguf (1-based, 5 digits or more). Opening a
// split model is GgufFile::open_model (gguf_reader.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gs::names {

// u16: this shard's index, 0-based.
inline constexpr std::string_view kSplitNo = "split.no";
// u16: the number of shards.
inline constexpr std::string_view kSplitCount = "split.count";
// i32: the number of tensors over all shards.
inline constexpr std::string_view kSplitTensorsCount = "split.tensors.count";

}  // namespace gs::names

namespace gs::gguf {

// A shard's file name taken apart: "dir/m-00002-of-00003.gguf" -> {"dir/m", 2, 3}.
struct SplitName {
  std::string prefix;  // the path up to the "-NNNNN-of-MMMMM.gguf" suffix
  int number = 0;      // 1-based
  int count = 0;
};

// nullopt when `path` does not end in -NNNNN-of-MMMMM.gguf with 1 <= NNNNN <= MMMMM.
std::optional<SplitName> parse_split_name(std::string_view path);
// The path of shard `number` (1-based) of `count`: PREFIX-%05d-of-%05d.gguf.
std::string split_path(std::string_view prefix, int number, int count);

}  // namespace gs::gguf
