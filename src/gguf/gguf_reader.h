// GGUF v2/v3 reader: validates every byte of the header, metadata and tensor directory
// before anything is trusted, then serves typed metadata and tensor data from an mmap.
//
// Every error names the field and its byte offset in the file. No input can make the
// reader crash, hang, or allocate more than a small multiple of the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"
#include "core/status.h"
#include "gguf/gguf_value.h"

namespace gs::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
inline constexpr int kMaxArrayNesting = 8;      // arrays of arrays deeper than this are rejected

// One metadata entry; the value stays in the file until asked for.
struct KeyValue {
  std::string key;
  ValueType type = ValueType::kU8;
  ValueType elem_type = ValueType::kU8;  // arrays: element type
  uint64_t count = 0;                    // arrays: element count
  size_t record_offset = 0;              // file offset of the key's length field
  size_t value_offset = 0;               // file offset of the value (after the type id)
  size_t value_bytes = 0;                // encoded size of the value
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  int n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};  // ne[0] is contiguous
  uint64_t offset = 0;                   // relative to the data section
  size_t size_bytes = 0;
  int64_t n_elements = 0;
  size_t record_offset = 0;  // file offset of the tensor info record (in its shard)
  const uint8_t* data = nullptr;  // into the mapping (of its shard)
  int shard = 0;                  // index into GgufFile::shards() of the file that holds it

  int64_t n_rows() const { return n_elements / (ne[0] == 0 ? 1 : ne[0]); }
  std::string shape_string() const;  // "[ne0, ne1, ...]"
};

class GgufFile {
 public:
  // Opens and validates `path` (mmap, read-only).
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Validates a copy of `bytes`; used by tests and the fuzzer. `name` appears in errors.
  static Result<std::shared_ptr<GgufFile>> from_bytes(std::vector<uint8_t> bytes,
                                                      std::string name = "<memory>");
  // Opens a model that may be split across files, as llama.cpp's gguf-split writes them
  // (PREFIX-00001-of-00003.gguf, ...; gguf/gguf_split.cpp). `path` is a whole file or any
  // shard: then every shard is opened and checked (split.count, split.no, the tensor
  // names, split.tensors.count) and the result is shard 1 (its path, metadata and header)
  // with the tensors of all shards, each pointing into its own shard's mapping. Errors
  // name the file and the field at fault; a missing shard names the path looked for.
  static Result<std::shared_ptr<GgufFile>> open_model(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  size_t file_size() const { return size_; }

  const std::vector<KeyValue>& metadata() const { return kv_; }
  const KeyValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed accessors. Integer getters accept any integer type whose value fits; float
  // getters accept f32 and f64. Errors name the key, the expected and the found type.
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int32_t> get_i32(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  // Arrays (elements of the matching scalar kind). Views point into the mapping.
  Result<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<bool>> get_bool_array(std::string_view key) const;
  // Any value, arrays shortened to `max_items` items per level (total_count keeps the size).
  Result<Value> get_value(const KeyValue& kv, size_t max_items = SIZE_MAX) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // The files whose tensors this one serves: only itself unless opened by open_model from
  // a split model, then every shard in order (shard 1, which is this file, first).
  struct Shard {
    std::string path;
    size_t file_size = 0;
    size_t data_offset = 0;
    size_t n_tensors = 0;
  };
  std::vector<Shard> shards() const;
  // True when this is one shard of a split model opened on its own (metadata split.count
  // > 1 and the other shards not opened with it): its tensors are only part of the model.
  bool is_partial_shard() const;

 private:
  GgufFile() = default;
  Status parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  size_t data_offset_ = 0;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
  size_t n_own_tensors_ = 0;                     // tensors_ of this file (the rest: shards_)
  std::vector<std::shared_ptr<GgufFile>> shards_;  // shards 2..N of a split model, kept mapped
};

}  // namespace gs::gguf
