// GgufWriter: encodes metadata in memory (small), streams tensor data to disk.
#include "gguf/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "gguf/gguf_reader.h"

namespace gs::gguf {
namespace {

template <typename T>
void put_le(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_str(std::vector<uint8_t>& out, std::string_view s) {
  put_le<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> typed(ValueType t) {
  std::vector<uint8_t> out;
  put_le<uint32_t>(out, static_cast<uint32_t>(t));
  return out;
}

template <typename T>
std::vector<uint8_t> scalar_array(ValueType elem, const std::vector<T>& v) {
  auto out = typed(ValueType::kArray);
  put_le<uint32_t>(out, static_cast<uint32_t>(elem));
  put_le<uint64_t>(out, v.size());
  for (const T& x : v) put_le<T>(out, x);
  return out;
}

// Encodes a value without its leading type id.
void encode_payload(std::vector<uint8_t>& out, const Value& v) {
  switch (v.type) {
    case ValueType::kU8: put_le<uint8_t>(out, static_cast<uint8_t>(std::get<uint64_t>(v.data))); return;
    case ValueType::kU16: put_le<uint16_t>(out, static_cast<uint16_t>(std::get<uint64_t>(v.data))); return;
    case ValueType::kU32: put_le<uint32_t>(out, static_cast<uint32_t>(std::get<uint64_t>(v.data))); return;
    case ValueType::kU64: put_le<uint64_t>(out, std::get<uint64_t>(v.data)); return;
    case ValueType::kI8: put_le<int8_t>(out, static_cast<int8_t>(std::get<int64_t>(v.data))); return;
    case ValueType::kI16: put_le<int16_t>(out, static_cast<int16_t>(std::get<int64_t>(v.data))); return;
    case ValueType::kI32: put_le<int32_t>(out, static_cast<int32_t>(std::get<int64_t>(v.data))); return;
    case ValueType::kI64: put_le<int64_t>(out, std::get<int64_t>(v.data)); return;
    case ValueType::kF32: put_le<float>(out, static_cast<float>(std::get<double>(v.data))); return;
    case ValueType::kF64: put_le<double>(out, std::get<double>(v.data)); return;
    case ValueType::kBool: put_le<uint8_t>(out, std::get<bool>(v.data) ? 1 : 0); return;
    case ValueType::kString: put_str(out, std::get<std::string>(v.data)); return;
    case ValueType::kArray: {
      const auto& a = std::get<ArrayValue>(v.data);
      put_le<uint32_t>(out, static_cast<uint32_t>(a.elem_type));
      put_le<uint64_t>(out, a.items.size());
      for (const auto& item : a.items) encode_payload(out, item);
      return;
    }
  }
}

}  // namespace

GgufWriter::~GgufWriter() {
  if (f_) std::fclose(f_);
}

void GgufWriter::put(std::string_view key, std::vector<uint8_t> encoded) {
  if (key.empty() && pending_.ok()) pending_ = make_status(StatusCode::kInvalidArgument, "gguf writer: empty metadata key");
  for (auto& e : kv_) {
    if (e.key == key) {
      e.encoded = std::move(encoded);
      return;
    }
  }
  kv_.push_back({std::string(key), std::move(encoded)});
}

void GgufWriter::set_u8(std::string_view key, uint8_t v) { auto o = typed(ValueType::kU8); put_le(o, v); put(key, std::move(o)); }
void GgufWriter::set_u32(std::string_view key, uint32_t v) { auto o = typed(ValueType::kU32); put_le(o, v); put(key, std::move(o)); }
void GgufWriter::set_i32(std::string_view key, int32_t v) { auto o = typed(ValueType::kI32); put_le(o, v); put(key, std::move(o)); }
void GgufWriter::set_u64(std::string_view key, uint64_t v) { auto o = typed(ValueType::kU64); put_le(o, v); put(key, std::move(o)); }
void GgufWriter::set_f32(std::string_view key, float v) { auto o = typed(ValueType::kF32); put_le(o, v); put(key, std::move(o)); }
void GgufWriter::set_bool(std::string_view key, bool v) { auto o = typed(ValueType::kBool); put_le<uint8_t>(o, v ? 1 : 0); put(key, std::move(o)); }
void GgufWriter::set_string(std::string_view key, std::string_view v) { auto o = typed(ValueType::kString); put_str(o, v); put(key, std::move(o)); }
void GgufWriter::set_u32_array(std::string_view key, const std::vector<uint32_t>& v) { put(key, scalar_array(ValueType::kU32, v)); }
void GgufWriter::set_i32_array(std::string_view key, const std::vector<int32_t>& v) { put(key, scalar_array(ValueType::kI32, v)); }
void GgufWriter::set_f32_array(std::string_view key, const std::vector<float>& v) { put(key, scalar_array(ValueType::kF32, v)); }

void GgufWriter::set_bool_array(std::string_view key, const std::vector<bool>& v) {
  std::vector<uint8_t> bytes(v.begin(), v.end());
  put(key, scalar_array(ValueType::kBool, bytes));
}

void GgufWriter::set_string_array(std::string_view key, const std::vector<std::string>& v) {
  auto out = typed(ValueType::kArray);
  put_le<uint32_t>(out, static_cast<uint32_t>(ValueType::kString));
  put_le<uint64_t>(out, v.size());
  for (const auto& s : v) put_str(out, s);
  put(key, std::move(out));
}

void GgufWriter::set_value(std::string_view key, const Value& v) {
  auto out = typed(v.type);
  encode_payload(out, v);
  put(key, std::move(out));
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || alignment > (1u << 30) || (alignment & (alignment - 1)) != 0) {
    if (pending_.ok()) pending_ = make_status(StatusCode::kInvalidArgument, "gguf writer: alignment {} is not a power of two", alignment);
    return;
  }
  if (!tensors_.empty() && pending_.ok()) {
    pending_ = make_status(StatusCode::kFailedPrecondition, "gguf writer: set_alignment after add_tensor");
    return;
  }
  alignment_ = alignment;
  set_u32("general.alignment", alignment);
}

Status GgufWriter::add_tensor(std::string_view name, GgmlType type, const std::vector<int64_t>& ne) {
  if (f_) return make_status(StatusCode::kFailedPrecondition, "gguf writer: add_tensor after begin");
  constexpr size_t kMaxName = 64;  // ggml's GGML_MAX_NAME, terminating NUL included
  if (name.empty() || name.size() >= kMaxName) {
    return make_status(StatusCode::kInvalidArgument, "gguf writer: tensor name '{}' must have 1..{} bytes", name, kMaxName - 1);
  }
  if (ne.empty() || ne.size() > static_cast<size_t>(kMaxDims)) {
    return make_status(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' has {} dims", name, ne.size());
  }
  for (const auto& t : tensors_) {
    if (t.name == name) return make_status(StatusCode::kInvalidArgument, "gguf writer: duplicate tensor '{}'", name);
  }
  GS_ASSIGN_OR_RETURN(size_t row, ggml_row_size(type, ne[0]));
  uint64_t bytes = row;
  for (size_t i = 1; i < ne.size(); ++i) {
    if (ne[i] < 0) return make_status(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' ne[{}] = {}", name, i, ne[i]);
    const auto d = static_cast<uint64_t>(ne[i]);
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / d) {
      return make_status(StatusCode::kOutOfRange, "gguf writer: tensor '{}' byte size overflows", name);
    }
    bytes *= d;
  }
  const uint64_t offset = (data_size_ + alignment_ - 1) / alignment_ * alignment_;
  if (bytes > std::numeric_limits<uint64_t>::max() / 2 - offset) {
    return make_status(StatusCode::kOutOfRange, "gguf writer: data section overflows at tensor '{}'", name);
  }
  tensors_.push_back({std::string(name), type, ne, offset, static_cast<size_t>(bytes)});
  data_size_ = offset + bytes;
  return {};
}

Status GgufWriter::write_raw(const void* data, size_t bytes) {
  if (bytes && std::fwrite(data, 1, bytes, f_) != bytes) {
    return make_status(StatusCode::kIo, "{}: write failed: {}", path_, std::strerror(errno));
  }
  pos_ += bytes;
  return {};
}

Status GgufWriter::pad_to(uint64_t multiple) {
  static const uint8_t zeros[256] = {};
  while (pos_ % multiple != 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof(zeros), multiple - pos_ % multiple));
    GS_RETURN_IF_ERROR(write_raw(zeros, n));
  }
  return {};
}

Status GgufWriter::begin(const std::string& path) {
  if (f_) return make_status(StatusCode::kFailedPrecondition, "gguf writer: begin called twice");
  GS_RETURN_IF_ERROR(pending_);
  path_ = path;
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) return make_status(StatusCode::kIo, "{}: cannot create: {}", path, std::strerror(errno));
  // Large buffer: tensor data arrives in chunks of any size and is written sequentially.
  std::setvbuf(f_, nullptr, _IOFBF, 8u << 20);
  std::vector<uint8_t> head;
  put_le<uint32_t>(head, kMagic);
  put_le<uint32_t>(head, 3);
  put_le<uint64_t>(head, tensors_.size());
  put_le<uint64_t>(head, kv_.size());
  for (const auto& e : kv_) {
    put_str(head, e.key);
    head.insert(head.end(), e.encoded.begin(), e.encoded.end());
  }
  for (const auto& t : tensors_) {
    put_str(head, t.name);
    put_le<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put_le<uint64_t>(head, static_cast<uint64_t>(d));
    put_le<uint32_t>(head, static_cast<uint32_t>(t.type));
    put_le<uint64_t>(head, t.offset);
  }
  GS_RETURN_IF_ERROR(write_raw(head.data(), head.size()));
  GS_RETURN_IF_ERROR(pad_to(alignment_));
  data_start_ = pos_;
  next_tensor_ = 0;
  written_in_tensor_ = 0;
  return {};
}

Status GgufWriter::write_tensor_chunk(const void* data, size_t bytes) {
  if (!f_) return make_status(StatusCode::kFailedPrecondition, "gguf writer: write before begin");
  if (next_tensor_ >= tensors_.size()) {
    return make_status(StatusCode::kFailedPrecondition, "gguf writer: more tensor data than declared");
  }
  const Tensor& t = tensors_[next_tensor_];
  if (written_in_tensor_ == 0) {
    // Pad up to this tensor's offset.
    static const uint8_t zeros[256] = {};
    while (pos_ < data_start_ + t.offset) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof(zeros), data_start_ + t.offset - pos_));
      GS_RETURN_IF_ERROR(write_raw(zeros, n));
    }
  }
  if (written_in_tensor_ + bytes > t.bytes) {
    return make_status(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' takes {} bytes, got {}", t.name,
                       t.bytes, written_in_tensor_ + bytes);
  }
  GS_RETURN_IF_ERROR(write_raw(data, bytes));
  written_in_tensor_ += bytes;
  if (written_in_tensor_ == t.bytes) {
    ++next_tensor_;
    written_in_tensor_ = 0;
  }
  return {};
}

Status GgufWriter::write_tensor(const void* data, size_t bytes) {
  if (next_tensor_ < tensors_.size() && bytes != tensors_[next_tensor_].bytes) {
    return make_status(StatusCode::kInvalidArgument, "gguf writer: tensor '{}' takes {} bytes, got {}",
                       tensors_[next_tensor_].name, tensors_[next_tensor_].bytes, bytes);
  }
  if (bytes == 0 && next_tensor_ < tensors_.size()) {
    ++next_tensor_;
    return {};
  }
  return write_tensor_chunk(data, bytes);
}

Status GgufWriter::finish() {
  if (!f_) return make_status(StatusCode::kFailedPrecondition, "gguf writer: finish before begin");
  if (next_tensor_ != tensors_.size()) {
    return make_status(StatusCode::kFailedPrecondition, "gguf writer: {} of {} tensors written", next_tensor_,
                       tensors_.size());
  }
  // Pad the last tensor too: ggml's reader expects a data section of padded sizes.
  GS_RETURN_IF_ERROR(pad_to(alignment_));
  const bool ok = std::fflush(f_) == 0;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok || !closed) return make_status(StatusCode::kIo, "{}: flush failed: {}", path_, std::strerror(errno));
  return {};
}

}  // namespace gs::gguf
