// What `gemmaserve inspect` shows of a GGUF file: totals per tensor type, the parameter
// count, and metadata values rendered as short text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_value.h"

namespace gs::gguf {

struct TypeTotal {
  GgmlType type = GgmlType::F32;
  size_t n_tensors = 0;
  uint64_t n_elements = 0;
  uint64_t bytes = 0;
};

struct GgufSummary {
  size_t n_tensors = 0;
  uint64_t n_params = 0;       // sum of tensor element counts
  uint64_t tensor_bytes = 0;   // sum of tensor data sizes (padding excluded)
  std::vector<TypeTotal> by_type;  // ordered by ggml type id
};

GgufSummary summarize(const GgufFile& file);

// Text of a value: strings quoted with control bytes escaped and cut after
// `max_string_bytes`; arrays as "[a, b, ...]" plus " (N items)" when shortened (the Value
// must come from GgufFile::get_value with its own item limit).
std::string format_value(const Value& v, size_t max_string_bytes = 120);

// s with control bytes, quotes, backslashes and bytes that are not well-formed UTF-8 escaped
// (\n, \", \x00, \xff), cut after max_bytes but never inside a character, with
// "...(N bytes)" after a cut: printable, valid UTF-8 text for logs, terminals and JSON.
std::string escape_text(std::string_view s, size_t max_bytes = 120);

// "u32", "string", "array[u32]", "array[array]" ...
std::string format_type(const KeyValue& kv);

// 30.70 B, 512.0 M, 12.3 K, 17: parameter counts as llama.cpp prints them.
std::string format_count(uint64_t n);
// 18.70 GB, 1.50 MB, 512 B (decimal units).
std::string format_bytes(uint64_t n);

}  // namespace gs::gguf
