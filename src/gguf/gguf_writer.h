// GGUF v3 writer: metadata and tensor directory first, then tensor data streamed in order,
// so a file of any size is written without holding it in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"
#include "core/status.h"
#include "gguf/gguf_value.h"

namespace gs::gguf {

class GgufWriter {
 public:
  GgufWriter() = default;
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Metadata, written in the order added. A key added twice replaces the first value.
  void set_u8(std::string_view key, uint8_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_f32(std::string_view key, float v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_u32_array(std::string_view key, const std::vector<uint32_t>& v);
  void set_i32_array(std::string_view key, const std::vector<int32_t>& v);
  void set_f32_array(std::string_view key, const std::vector<float>& v);
  void set_bool_array(std::string_view key, const std::vector<bool>& v);
  void set_string_array(std::string_view key, const std::vector<std::string>& v);
  // Any materialised value (nested arrays included).
  void set_value(std::string_view key, const Value& v);
  // general.alignment (a power of two, at most 2^30); also written as metadata. An invalid
  // value (or an empty key above) makes begin() fail.
  void set_alignment(uint32_t alignment);

  // Declares a tensor; ne[0] is contiguous. Errors: empty name or one of 64 bytes or more
  // (ggml's GGML_MAX_NAME), 0 or more than 4 dims, a negative dim, ne[0] not a multiple
  // of the type's block, a byte size that overflows, a duplicate name.
  Status add_tensor(std::string_view name, GgmlType type, const std::vector<int64_t>& ne);

  // Opens `path` and writes header, metadata and tensor directory. Tensor data follows in
  // declaration order, each tensor at an aligned offset; the file ends padded to alignment.
  Status begin(const std::string& path);
  // Writes the data of the next declared tensor (in declaration order); `bytes` must be
  // its exact size. May be called as several chunks via write_tensor_chunk.
  Status write_tensor(const void* data, size_t bytes);
  Status write_tensor_chunk(const void* data, size_t bytes);  // part of the current tensor
  // Checks every tensor was written, flushes and closes.
  Status finish();

  size_t n_tensors() const { return tensors_.size(); }

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> encoded;  // type id + value
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    uint64_t offset;
    size_t bytes;
  };
  void put(std::string_view key, std::vector<uint8_t> encoded);
  Status pending_;  // first error of a setter, reported by begin()
  Status write_raw(const void* data, size_t bytes);
  Status pad_to(uint64_t multiple);

  std::vector<Entry> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
  uint64_t data_size_ = 0;
  std::FILE* f_ = nullptr;
  std::string path_;
  size_t next_tensor_ = 0;
  size_t written_in_tensor_ = 0;
  uint64_t pos_ = 0;
  uint64_t data_start_ = 0;
};

}  // namespace gs::gguf
