// GgufFile: a bounds-checked single pass over header, metadata and tensor directory.
#include "gguf/gguf_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

namespace gs::gguf {
namespace {

__extension__ typedef __int128 i128;

constexpr size_t kMaxKeyBytes = 1 << 16;
constexpr size_t kMaxTensorNameBytes = 1 << 12;
// Claimed counts are checked against the file size, but a large file could still claim
// millions of entries; reserve no more than this up front and grow as records parse.
constexpr uint64_t kMaxReserve = 4096;

// A key or name as it may appear in an error: control bytes escaped, long ones cut.
std::string printable(std::string_view s) {
  constexpr size_t kMaxShown = 96;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown) out += fmt::format("...({} bytes)", s.size());
  return out;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Reads little-endian fields from [base, base+size) and reports the offset of each failure.
class Cursor {
 public:
  Cursor(const uint8_t* base, size_t size, const std::string& name)
      : base_(base), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  void seek(size_t pos) { pos_ = pos; }

  Status error(size_t at, std::string_view field, std::string_view what) const {
    return make_status(StatusCode::kDataLoss, "{}: {} at byte {}: {}", name_, field, at, what);
  }

  template <typename T>
  Status read(T* out, std::string_view field) {
    if (remaining() < sizeof(T)) {
      return error(pos_, field,
                   fmt::format("file ends after {} bytes, {} more needed", size_, sizeof(T) - remaining()));
    }
    *out = load<T>(base_ + pos_);
    pos_ += sizeof(T);
    return {};
  }

  // A GGUF string: u64 length then bytes. Views into the buffer.
  Status read_string(std::string_view* out, std::string_view field, size_t max_len) {
    const size_t at = pos_;
    uint64_t len = 0;
    GS_RETURN_IF_ERROR(read(&len, field));
    if (len > remaining()) {
      return error(at, field, fmt::format("string length {} exceeds the {} bytes left in the file", len, remaining()));
    }
    if (len > max_len) {
      return error(at, field, fmt::format("string length {} exceeds the limit {}", len, max_len));
    }
    *out = std::string_view(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return {};
  }

  Status skip(uint64_t n, std::string_view field) {
    if (n > remaining()) {
      return error(pos_, field, fmt::format("{} bytes needed, {} left in the file", n, remaining()));
    }
    pos_ += static_cast<size_t>(n);
    return {};
  }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

// Skips one value of `type`, checking every length against the bytes that remain.
Status skip_value(Cursor& c, ValueType type, int depth, const std::string& field) {
  switch (type) {
    case ValueType::kString: {
      std::string_view s;
      return c.read_string(&s, field, std::numeric_limits<size_t>::max());
    }
    case ValueType::kArray: {
      const size_t at = c.pos();
      if (depth >= kMaxArrayNesting) {
        return c.error(at, field, fmt::format("arrays nested deeper than {}", kMaxArrayNesting));
      }
      uint32_t raw_elem = 0;
      uint64_t count = 0;
      GS_RETURN_IF_ERROR(c.read(&raw_elem, field + " element type"));
      if (!is_valid_value_type(raw_elem)) {
        return c.error(at, field, fmt::format("unknown array element type {}", raw_elem));
      }
      GS_RETURN_IF_ERROR(c.read(&count, field + " count"));
      const auto elem = static_cast<ValueType>(raw_elem);
      const size_t fixed = value_type_scalar_bytes(elem);
      const size_t min_bytes = fixed ? fixed : (elem == ValueType::kString ? 8 : 12);
      if (count > c.remaining() / min_bytes) {
        return c.error(at + 4, field + " count",
                       fmt::format("{} elements of {} cannot fit in the {} bytes left", count,
                                   value_type_name(elem), c.remaining()));
      }
      if (fixed) return c.skip(count * fixed, field);
      for (uint64_t i = 0; i < count; ++i) {
        GS_RETURN_IF_ERROR(skip_value(c, elem, depth + 1, field));
      }
      return {};
    }
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
    case ValueType::kBool:
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return c.skip(value_type_scalar_bytes(type), field);
  }
  return c.error(c.pos(), field, "unknown value type");
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64: return true;
    default: return false;
  }
}

// Reads an integer scalar as (is_negative, magnitude-ish) pair through int128.
i128 read_integer(const uint8_t* p, ValueType t) {
  switch (t) {
    case ValueType::kU8: return load<uint8_t>(p);
    case ValueType::kI8: return load<int8_t>(p);
    case ValueType::kU16: return load<uint16_t>(p);
    case ValueType::kI16: return load<int16_t>(p);
    case ValueType::kU32: return load<uint32_t>(p);
    case ValueType::kI32: return load<int32_t>(p);
    case ValueType::kU64: return load<uint64_t>(p);
    case ValueType::kI64: return load<int64_t>(p);
    default: return 0;
  }
}

double read_float(const uint8_t* p, ValueType t) {
  return t == ValueType::kF32 ? static_cast<double>(load<float>(p)) : load<double>(p);
}

}  // namespace

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

GgufFile::~GgufFile() {
  if (mapped_ && base_ != nullptr) munmap(const_cast<uint8_t*>(base_), size_);
}

Result<std::shared_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO waits for a writer otherwise (`run -m fifo` hung before the
  // regular-file check below); it changes nothing for the regular files that get past it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return make_status(StatusCode::kIo, "{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_status(StatusCode::kIo, "{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_status(StatusCode::kInvalidArgument, "{}: not a regular file", path);
  }
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return make_status(StatusCode::kIo, "{}: cannot mmap {} bytes: {}", path, f->size_, std::strerror(e));
    }
    f->base_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  ::close(fd);
  GS_RETURN_IF_ERROR(f->parse());
  return f;
}

Result<std::shared_ptr<GgufFile>> GgufFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(name);
  f->owned_ = std::move(bytes);
  f->base_ = f->owned_.data();
  f->size_ = f->owned_.size();
  GS_RETURN_IF_ERROR(f->parse());
  return f;
}

Status GgufFile::parse() {
  Cursor c(base_, size_, path_);
  uint32_t magic = 0;
  GS_RETURN_IF_ERROR(c.read(&magic, "magic"));
  if (magic != kMagic) {
    return c.error(0, "magic", fmt::format("expected \"GGUF\", found 0x{:08x}", magic));
  }
  GS_RETURN_IF_ERROR(c.read(&version_, "version"));
  if (version_ != 2 && version_ != 3) {
    std::string hint = (version_ == 1) ? " (GGUF v1 is not supported)"
                       : (version_ >= 0x01000000u) ? " (big-endian file?)" : "";
    return c.error(4, "version", fmt::format("unsupported version {}{}; expected 2 or 3", version_, hint));
  }
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  GS_RETURN_IF_ERROR(c.read(&n_tensors, "tensor_count"));
  GS_RETURN_IF_ERROR(c.read(&n_kv, "metadata_kv_count"));
  // Each KV takes at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes; each
  // tensor info at least 8 + 1 + 4 + 8 + 4 + 8.
  if (n_kv > c.remaining() / 14) {
    return c.error(16, "metadata_kv_count", fmt::format("{} entries cannot fit in a {}-byte file", n_kv, size_));
  }
  if (n_tensors > c.remaining() / 33) {
    return c.error(8, "tensor_count", fmt::format("{} tensors cannot fit in a {}-byte file", n_tensors, size_));
  }

  kv_.reserve(static_cast<size_t>(std::min(n_kv, kMaxReserve)));
  std::unordered_set<std::string_view> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    kv.record_offset = c.pos();
    std::string_view key;
    const std::string field = fmt::format("metadata entry {} key", i);
    GS_RETURN_IF_ERROR(c.read_string(&key, field, kMaxKeyBytes));
    if (key.empty()) return c.error(kv.record_offset, field, "empty key");
    kv.key = std::string(key);
    const std::string vfield = fmt::format("metadata '{}'", printable(kv.key));
    const size_t type_at = c.pos();
    uint32_t raw_type = 0;
    GS_RETURN_IF_ERROR(c.read(&raw_type, vfield + " type"));
    if (!is_valid_value_type(raw_type)) {
      return c.error(type_at, vfield + " type", fmt::format("unknown value type {}", raw_type));
    }
    kv.type = static_cast<ValueType>(raw_type);
    kv.value_offset = c.pos();
    if (kv.type == ValueType::kArray) {
      // Peek element type and count (validated again by skip_value).
      if (c.remaining() >= 12) {
        kv.elem_type = static_cast<ValueType>(load<uint32_t>(base_ + c.pos()));
        kv.count = load<uint64_t>(base_ + c.pos() + 4);
      }
    }
    GS_RETURN_IF_ERROR(skip_value(c, kv.type, 0, vfield));
    kv.value_bytes = c.pos() - kv.value_offset;
    if (!keys.insert(std::string_view(reinterpret_cast<const char*>(base_ + kv.record_offset + 8), key.size())).second) {
      return c.error(kv.record_offset, field, fmt::format("duplicate key '{}'", printable(kv.key)));
    }
    kv_.push_back(std::move(kv));
  }

  if (const KeyValue* a = find("general.alignment")) {
    if (!is_integer(a->type)) {
      return c.error(a->value_offset, "metadata 'general.alignment'",
                     fmt::format("expected an integer, found {}", value_type_name(a->type)));
    }
    const i128 v = read_integer(base_ + a->value_offset, a->type);
    if (v <= 0 || v > (1 << 30) || (static_cast<uint64_t>(v) & (static_cast<uint64_t>(v) - 1)) != 0) {
      return c.error(a->value_offset, "metadata 'general.alignment'",
                     fmt::format("{} is not a power of two in [1, 2^30]", static_cast<int64_t>(v)));
    }
    alignment_ = static_cast<uint32_t>(v);
  }

  tensors_.reserve(static_cast<size_t>(std::min(n_tensors, kMaxReserve)));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.record_offset = c.pos();
    const std::string field = fmt::format("tensor {}", i);
    std::string_view name;
    GS_RETURN_IF_ERROR(c.read_string(&name, field + " name", kMaxTensorNameBytes));
    if (name.empty()) return c.error(t.record_offset, field + " name", "empty name");
    t.name = std::string(name);
    const std::string tf = fmt::format("tensor '{}'", printable(t.name));
    if (!names.insert(t.name).second) return c.error(t.record_offset, tf + " name", "duplicate tensor name");
    const size_t dims_at = c.pos();
    uint32_t n_dims = 0;
    GS_RETURN_IF_ERROR(c.read(&n_dims, tf + " n_dims"));
    if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims)) {
      return c.error(dims_at, tf + " n_dims", fmt::format("{} dimensions; expected 1..{}", n_dims, kMaxDims));
    }
    t.n_dims = static_cast<int>(n_dims);
    uint64_t n_elems = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const size_t at = c.pos();
      uint64_t ne = 0;
      GS_RETURN_IF_ERROR(c.read(&ne, tf + " ne"));
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return c.error(at, fmt::format("{} ne[{}]", tf, d), fmt::format("dimension {} is too large", ne));
      }
      t.ne[d] = static_cast<int64_t>(ne);
      if (ne != 0 && n_elems > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne) overflow = true;
      n_elems *= ne;
      if (overflow) {
        return c.error(at, fmt::format("{} ne[{}]", tf, d), "the product of the dimensions overflows");
      }
    }
    t.n_elements = static_cast<int64_t>(n_elems);
    const size_t type_at = c.pos();
    uint32_t raw_type = 0;
    GS_RETURN_IF_ERROR(c.read(&raw_type, tf + " type"));
    const auto traits = ggml_type_traits(raw_type);
    if (!traits) return c.error(type_at, tf + " type", fmt::format("unknown ggml type {}", raw_type));
    t.type = traits->type;
    auto row = ggml_row_size(t.type, t.ne[0]);
    if (!row.ok()) return c.error(dims_at, tf + " ne[0]", row.status().message());
    const uint64_t n_rows = t.ne[0] == 0 ? 0 : n_elems / static_cast<uint64_t>(t.ne[0]);
    if (n_rows != 0 && *row > std::numeric_limits<uint64_t>::max() / n_rows) {
      return c.error(dims_at, tf + " shape", "the byte size overflows");
    }
    const uint64_t bytes = static_cast<uint64_t>(*row) * n_rows;
    if (bytes > size_) {
      return c.error(dims_at, tf + " shape",
                     fmt::format("{} {} needs {} bytes, more than the whole file ({})",
                                 t.shape_string(), traits->name, bytes, size_));
    }
    t.size_bytes = static_cast<size_t>(bytes);
    const size_t off_at = c.pos();
    GS_RETURN_IF_ERROR(c.read(&t.offset, tf + " offset"));
    if (t.offset % alignment_ != 0) {
      return c.error(off_at, tf + " offset",
                     fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment_));
    }
    tensors_.push_back(std::move(t));
  }

  const size_t end_of_infos = c.pos();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  // Data ranges: inside the file and pairwise disjoint.
  std::vector<const TensorInfo*> order;
  order.reserve(tensors_.size());
  for (auto& t : tensors_) {
    const uint64_t avail = size_ > data_offset_ ? size_ - data_offset_ : 0;
    if (t.offset > avail || t.size_bytes > avail - t.offset) {
      return c.error(t.record_offset, fmt::format("tensor '{}' data", printable(t.name)),
                     fmt::format("bytes [{}, {}) of the data section at {} run past the end of the {}-byte file",
                                 t.offset, t.offset + t.size_bytes, data_offset_, size_));
    }
    t.data = base_ + data_offset_ + t.offset;
    order.push_back(&t);
  }
  // Zero-byte tensors occupy nothing; every other range must start at or after the end of
  // all ranges that start before it.
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  const TensorInfo* furthest = nullptr;  // the range ending last among those seen
  for (const TensorInfo* cur : order) {
    if (cur->size_bytes == 0) continue;
    if (furthest && cur->offset < furthest->offset + furthest->size_bytes) {
      return c.error(cur->record_offset, fmt::format("tensor '{}' offset", printable(cur->name)),
                     fmt::format("data [{}, {}) overlaps tensor '{}' at [{}, {})", cur->offset,
                                 cur->offset + cur->size_bytes, printable(furthest->name), furthest->offset,
                                 furthest->offset + furthest->size_bytes));
    }
    if (!furthest || cur->offset + cur->size_bytes > furthest->offset + furthest->size_bytes) furthest = cur;
  }
  return {};
}

const KeyValue* GgufFile::find(std::string_view key) const {
  for (const auto& kv : kv_) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {
Status missing(const std::string& path, std::string_view key, std::string_view expected) {
  return make_status(StatusCode::kNotFound, "{}: metadata '{}' is missing (expected {})", path, key, expected);
}
Status wrong_type(const std::string& path, const KeyValue& kv, std::string_view expected) {
  std::string found(value_type_name(kv.type));
  if (kv.type == ValueType::kArray) found = fmt::format("array of {}", value_type_name(kv.elem_type));
  return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' at byte {} is {}; expected {}", path,
                     kv.key, kv.record_offset, found, expected);
}
}  // namespace

Result<int64_t> GgufFile::get_i64(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an integer");
  if (!is_integer(kv->type)) return wrong_type(path_, *kv, "an integer");
  const i128 v = read_integer(base_ + kv->value_offset, kv->type);
  if (v > std::numeric_limits<int64_t>::max()) {
    return make_status(StatusCode::kOutOfRange, "{}: metadata '{}' value does not fit in i64", path_, key);
  }
  return static_cast<int64_t>(v);
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an unsigned integer");
  if (!is_integer(kv->type)) return wrong_type(path_, *kv, "an unsigned integer");
  const i128 v = read_integer(base_ + kv->value_offset, kv->type);
  if (v < 0) return make_status(StatusCode::kOutOfRange, "{}: metadata '{}' is negative ({})", path_, key, static_cast<int64_t>(v));
  return static_cast<uint64_t>(v);
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  GS_ASSIGN_OR_RETURN(uint64_t v, get_u64(key));
  if (v > std::numeric_limits<uint32_t>::max()) {
    return make_status(StatusCode::kOutOfRange, "{}: metadata '{}' = {} does not fit in u32", path_, key, v);
  }
  return static_cast<uint32_t>(v);
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
  GS_ASSIGN_OR_RETURN(int64_t v, get_i64(key));
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return make_status(StatusCode::kOutOfRange, "{}: metadata '{}' = {} does not fit in i32", path_, key, v);
  }
  return static_cast<int32_t>(v);
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "a float");
  if (kv->type != ValueType::kF32 && kv->type != ValueType::kF64) return wrong_type(path_, *kv, "f32");
  return static_cast<float>(read_float(base_ + kv->value_offset, kv->type));
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "a bool");
  if (kv->type != ValueType::kBool) return wrong_type(path_, *kv, "bool");
  return base_[kv->value_offset] != 0;
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "a string");
  if (kv->type != ValueType::kString) return wrong_type(path_, *kv, "string");
  const uint64_t len = load<uint64_t>(base_ + kv->value_offset);
  return std::string_view(reinterpret_cast<const char*>(base_ + kv->value_offset + 8), static_cast<size_t>(len));
}

Result<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an array of strings");
  if (kv->type != ValueType::kArray || kv->elem_type != ValueType::kString) {
    return wrong_type(path_, *kv, "array of string");
  }
  std::vector<std::string_view> out;
  out.reserve(static_cast<size_t>(kv->count));
  size_t p = kv->value_offset + 12;
  for (uint64_t i = 0; i < kv->count; ++i) {
    const uint64_t len = load<uint64_t>(base_ + p);
    out.emplace_back(reinterpret_cast<const char*>(base_ + p + 8), static_cast<size_t>(len));
    p += 8 + static_cast<size_t>(len);
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an array of integers");
  if (kv->type != ValueType::kArray || !is_integer(kv->elem_type)) {
    return wrong_type(path_, *kv, "array of integers");
  }
  const size_t w = value_type_scalar_bytes(kv->elem_type);
  std::vector<int64_t> out(static_cast<size_t>(kv->count));
  for (uint64_t i = 0; i < kv->count; ++i) {
    const i128 v = read_integer(base_ + kv->value_offset + 12 + i * w, kv->elem_type);
    if (v > std::numeric_limits<int64_t>::max()) {
      return make_status(StatusCode::kOutOfRange, "{}: metadata '{}'[{}] does not fit in i64", path_, key, i);
    }
    out[i] = static_cast<int64_t>(v);
  }
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an array of floats");
  if (kv->type != ValueType::kArray || (kv->elem_type != ValueType::kF32 && kv->elem_type != ValueType::kF64)) {
    return wrong_type(path_, *kv, "array of f32");
  }
  const size_t w = value_type_scalar_bytes(kv->elem_type);
  std::vector<float> out(static_cast<size_t>(kv->count));
  for (uint64_t i = 0; i < kv->count; ++i) {
    out[i] = static_cast<float>(read_float(base_ + kv->value_offset + 12 + i * w, kv->elem_type));
  }
  return out;
}

Result<std::vector<bool>> GgufFile::get_bool_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) return missing(path_, key, "an array of bools");
  if (kv->type != ValueType::kArray || kv->elem_type != ValueType::kBool) {
    return wrong_type(path_, *kv, "array of bool");
  }
  std::vector<bool> out(static_cast<size_t>(kv->count));
  for (uint64_t i = 0; i < kv->count; ++i) out[i] = base_[kv->value_offset + 12 + i] != 0;
  return out;
}

namespace {
// Materialises the (already validated) value at p; advances p.
Value read_value(const uint8_t* base, size_t& p, ValueType type, size_t max_items) {
  Value v;
  v.type = type;
  switch (type) {
    case ValueType::kString: {
      const uint64_t len = load<uint64_t>(base + p);
      v.data = std::string(reinterpret_cast<const char*>(base + p + 8), static_cast<size_t>(len));
      p += 8 + static_cast<size_t>(len);
      return v;
    }
    case ValueType::kArray: {
      ArrayValue a;
      a.elem_type = static_cast<ValueType>(load<uint32_t>(base + p));
      a.total_count = load<uint64_t>(base + p + 4);
      p += 12;
      for (uint64_t i = 0; i < a.total_count; ++i) {
        if (i < max_items) {
          a.items.push_back(read_value(base, p, a.elem_type, max_items));
        } else if (const size_t w = value_type_scalar_bytes(a.elem_type)) {
          p += static_cast<size_t>((a.total_count - i) * w);
          break;
        } else {
          (void)read_value(base, p, a.elem_type, 0);  // skip variable-size element
        }
      }
      v.data = std::move(a);
      return v;
    }
    case ValueType::kBool: v.data = base[p] != 0; break;
    case ValueType::kF32:
    case ValueType::kF64: v.data = read_float(base + p, type); break;
    case ValueType::kU8:
    case ValueType::kU16:
    case ValueType::kU32:
    case ValueType::kU64: v.data = static_cast<uint64_t>(read_integer(base + p, type)); break;
    case ValueType::kI8:
    case ValueType::kI16:
    case ValueType::kI32:
    case ValueType::kI64: v.data = static_cast<int64_t>(read_integer(base + p, type)); break;
  }
  p += value_type_scalar_bytes(type);  // the fixed-size scalars (0 bytes for anything else)
  return v;
}
}  // namespace

Result<Value> GgufFile::get_value(const KeyValue& kv, size_t max_items) const {
  size_t p = kv.value_offset;
  return read_value(base_, p, kv.type, max_items);
}

}  // namespace gs::gguf
