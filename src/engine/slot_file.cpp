// Slot files: the header, the token ids, each layer's K and V rows, a SHA-256 digest (decisions
// 0068, 0070).
#include "engine/slot_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

namespace gs {

namespace {

constexpr char kMagic[8] = {'G', 'S', 'S', 'L', 'O', 'T', 'K', 'V'};
// Format 2 (decision 0070): SHA-256 fingerprint and digest. Format 1 (decision 0068) had a
// 64-bit fingerprint and checksum of our own; its files are refused ("save the slot again").
constexpr uint32_t kVersion = 2;
constexpr uint32_t kVersionOlder = 1;
// The magic and the version: what any format's file starts with.
constexpr size_t kPrefixBytes = 8 + 4;
// magic, version, kv_type, fingerprint (32 bytes), n_layer, n_embd, n_vocab, sliding_window,
// n_tokens, swa_lo; then 4 int32 a layer.
constexpr size_t kFixedHeaderBytes = kPrefixBytes + 4 + Sha256::kBytes + 4 * 4 + 4 + 4;
constexpr size_t kLayerBytes = 4 * 4;
constexpr size_t kDigestBytes = Sha256::kBytes;  // the SHA-256 of every byte before it, at the end
constexpr size_t kChunkBytes = 8u << 20;          // host staging per read or write

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

void put_bytes(std::vector<uint8_t>* out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n);
}
template <typename T>
void put(std::vector<uint8_t>* out, T v) {
  put_bytes(out, &v, sizeof(T));
}
template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::vector<uint8_t> header_bytes(const SlotFileModel& m, int32_t n_tokens, int32_t swa_lo) {
  std::vector<uint8_t> h;
  put_bytes(&h, kMagic, sizeof(kMagic));
  put<uint32_t>(&h, kVersion);
  put<uint32_t>(&h, static_cast<uint32_t>(m.kv_type));
  put_bytes(&h, m.fingerprint.data(), m.fingerprint.size());
  put<int32_t>(&h, m.n_layer);
  put<int32_t>(&h, m.n_embd);
  put<int32_t>(&h, m.n_vocab);
  put<int32_t>(&h, m.sliding_window);
  put<int32_t>(&h, n_tokens);
  put<int32_t>(&h, swa_lo);
  for (const auto& l : m.layers) {
    for (int32_t v : l) put<int32_t>(&h, v);
  }
  return h;
}

// First position of layer l's rows in a file whose sliding rows start at swa_lo.
int32_t rows_lo(const std::array<int32_t, 4>& l, int32_t swa_lo) { return l[0] != 0 ? swa_lo : 0; }

// Bytes of a file of n tokens whose sliding rows start at swa_lo.
uint64_t file_size(const SlotFileModel& m, int32_t n, int32_t swa_lo) {
  uint64_t b = kFixedHeaderBytes + kLayerBytes * m.layers.size() + 4ull * static_cast<uint64_t>(n) + kDigestBytes;
  for (const auto& l : m.layers) {
    b += 2ull * static_cast<uint64_t>(n - rows_lo(l, swa_lo)) * static_cast<uint64_t>(l[3]);
  }
  return b;
}

Status io_error(const std::string& what, const std::string& name) {
  return make_status(StatusCode::kIo, "slot file '{}': {}: {}", name, what, std::strerror(errno));
}

}  // namespace

Result<Sha256::Digest> model_fingerprint(const gguf::GgufFile& file) {
  GS_ASSIGN_OR_RETURN(Sha256 d, Sha256::create());
  for (const gguf::TensorInfo& t : file.tensors()) {
    const uint64_t name_bytes = t.name.size();
    GS_RETURN_IF_ERROR(d.update(&name_bytes, sizeof(name_bytes)));
    GS_RETURN_IF_ERROR(d.update(t.name.data(), t.name.size()));
    const uint64_t fields[] = {static_cast<uint64_t>(t.type), static_cast<uint64_t>(t.n_dims),
                               static_cast<uint64_t>(t.ne[0]), static_cast<uint64_t>(t.ne[1]),
                               static_cast<uint64_t>(t.ne[2]), static_cast<uint64_t>(t.ne[3]), t.size_bytes};
    GS_RETURN_IF_ERROR(d.update(fields, sizeof(fields)));
    if (t.data) GS_RETURN_IF_ERROR(d.update(t.data, std::min<size_t>(t.size_bytes, 64)));
  }
  return d.finish();
}

Result<SlotFileModel> slot_file_model(const Gemma4Config& config, const gguf::GgufFile& file, const KvCache& kv) {
  SlotFileModel m;
  GS_ASSIGN_OR_RETURN(m.fingerprint, model_fingerprint(file));
  m.n_layer = config.n_layer;
  m.n_embd = config.n_embd;
  m.n_vocab = config.n_vocab;
  m.sliding_window = config.sliding_window;
  m.kv_type = kv.binding().layers.empty() ? GgmlType::F16 : kv.binding().layers[0].type;
  for (int il = 0; il < config.n_layer; ++il) {
    const Gemma4LayerConfig& l = config.layers[static_cast<size_t>(il)];
    m.layers.push_back({l.sliding ? 1 : 0, l.n_head_kv, l.head_dim, static_cast<int32_t>(kv.position_bytes(il))});
  }
  return m;
}

Result<uint64_t> write_slot_file(const std::string& path, const SlotFileModel& model, std::span<const int32_t> tokens,
                                 const KvCache& kv, int seq) {
  const std::string name = std::filesystem::path(path).filename().string();
  const int32_t n = static_cast<int32_t>(tokens.size());
  if (n > kv.length(seq)) {
    return make_status(StatusCode::kInvalidArgument, "slot file '{}': {} tokens but the cache holds {}", name, n,
                       kv.length(seq));
  }
  const int32_t swa_lo = std::min(kv.swa_oldest(seq), n);
  // The temporary file is ".gsslot.tmp.PID" beside the target: short, so that a target name
  // of the longest allowed length (255 bytes) still has one (a "<name>.tmp.PID" went past
  // NAME_MAX: a 500), and a leading '.', which no client's file name has, so that it can never
  // be, and overwrite, a file a client saved (decision 0069).
  const std::string tmp = (std::filesystem::path(path).parent_path() /
                           fmt::format(".gsslot.tmp.{}", static_cast<long>(::getpid())))
                              .string();
  File f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return io_error("cannot create it", name);
  auto fail = [&](Status st) {
    f.reset();
    std::remove(tmp.c_str());
    return st;
  };
  Result<Sha256> digest = Sha256::create();
  if (!digest.ok()) return fail(digest.status());
  uint64_t written = 0;
  // Writes the bytes and adds them to the digest (as they pass: no second pass over the file).
  auto write = [&](const void* p, size_t bytes) -> Status {
    GS_RETURN_IF_ERROR(digest->update(p, bytes));
    written += bytes;
    if (bytes != 0 && std::fwrite(p, 1, bytes, f.get()) != bytes) return io_error("cannot write it", name);
    return Status::ok_status();
  };
  const std::vector<uint8_t> header = header_bytes(model, n, swa_lo);
  if (Status st = write(header.data(), header.size()); !st.ok()) return fail(st);
  if (Status st = write(tokens.data(), tokens.size_bytes()); !st.ok()) return fail(st);
  std::vector<uint8_t> k, v, rows;
  for (int il = 0; il < model.n_layer; ++il) {
    const auto& l = model.layers[static_cast<size_t>(il)];
    const size_t row = static_cast<size_t>(l[3]);
    const int32_t chunk = static_cast<int32_t>(std::max<size_t>(1, kChunkBytes / (2 * row)));
    for (int32_t p = rows_lo(l, swa_lo); p < n; p += chunk) {
      const int32_t m = std::min(chunk, n - p);
      k.resize(static_cast<size_t>(m) * row);
      v.resize(k.size());
      rows.resize(2 * k.size());
      if (Status st = kv.read_positions(seq, il, p, m, k.data(), v.data()); !st.ok()) return fail(st);
      // Position by position: its K row, then its V row.
      for (int32_t i = 0; i < m; ++i) {
        std::memcpy(rows.data() + 2 * i * row, k.data() + i * row, row);
        std::memcpy(rows.data() + (2 * i + 1) * row, v.data() + i * row, row);
      }
      if (Status st = write(rows.data(), rows.size()); !st.ok()) return fail(st);
    }
  }
  Result<Sha256::Digest> sum = digest->finish();
  if (!sum.ok()) return fail(sum.status());
  if (std::fwrite(sum->data(), 1, kDigestBytes, f.get()) != kDigestBytes || std::fflush(f.get()) != 0) {
    return fail(io_error("cannot write it", name));
  }
  written += kDigestBytes;
  if (std::fclose(f.release()) != 0) {
    std::remove(tmp.c_str());
    return io_error("cannot write it", name);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = io_error("cannot rename the temporary file to it", name);
    std::remove(tmp.c_str());
    return st;
  }
  return written;
}

Result<SlotFileContents> check_slot_file(const std::string& path, const std::string& name, const SlotFileModel& model,
                                         int32_t n_ctx) {
  std::error_code ec;
  const std::filesystem::file_status fs = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(fs)) {
    return make_status(StatusCode::kNotFound, "slot file '{}' does not exist", name);
  }
  if (!std::filesystem::is_regular_file(fs)) {
    return make_status(StatusCode::kInvalidArgument, "slot file '{}' is not a regular file", name);
  }
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return io_error("cannot open it", name);
  if (std::fseek(f.get(), 0, SEEK_END) != 0) return io_error("cannot read it", name);
  const long end = std::ftell(f.get());
  if (end < 0 || std::fseek(f.get(), 0, SEEK_SET) != 0) return io_error("cannot read it", name);
  const uint64_t size = static_cast<uint64_t>(end);
  auto invalid = [&](const std::string& why) {
    return make_status(StatusCode::kInvalidArgument, "slot file '{}' {}", name, why);
  };
  uint8_t fixed[kFixedHeaderBytes];
  const size_t got = std::fread(fixed, 1, static_cast<size_t>(std::min<uint64_t>(size, sizeof(fixed))), f.get());
  if (got < kPrefixBytes) return invalid(fmt::format("is not a gemmaserve slot file (only {} bytes)", size));
  if (std::memcmp(fixed, kMagic, sizeof(kMagic)) != 0) return invalid("is not a gemmaserve slot file (no GSSLOTKV magic)");
  const uint32_t version = get<uint32_t>(fixed + 8);
  if (version == kVersionOlder) {
    return invalid(fmt::format("was written by an older gemmaserve, format {} (this server reads format {}); "
                               "save the slot again",
                               version, kVersion));
  }
  if (version != kVersion) return invalid(fmt::format("has version {}; this server reads version {}", version, kVersion));
  if (got < sizeof(fixed) || size < kFixedHeaderBytes + kDigestBytes) {
    return invalid(fmt::format("is truncated (only {} bytes)", size));
  }
  const uint32_t kv_type = get<uint32_t>(fixed + 12);
  Sha256::Digest fingerprint;
  std::memcpy(fingerprint.data(), fixed + 16, fingerprint.size());
  const uint8_t* dims = fixed + 16 + Sha256::kBytes;
  const int32_t n_layer = get<int32_t>(dims), n_embd = get<int32_t>(dims + 4);
  const int32_t n_vocab = get<int32_t>(dims + 8), window = get<int32_t>(dims + 12);
  const int32_t n = get<int32_t>(dims + 16), swa_lo = get<int32_t>(dims + 20);
  if (n_layer != model.n_layer || n_embd != model.n_embd || n_vocab != model.n_vocab || window != model.sliding_window) {
    return invalid(fmt::format("was saved for another model (n_layer {}, n_embd {}, n_vocab {}, sliding_window {}; "
                               "this model has {}, {}, {}, {})",
                               n_layer, n_embd, n_vocab, window, model.n_layer, model.n_embd, model.n_vocab,
                               model.sliding_window));
  }
  if (kv_type != static_cast<uint32_t>(model.kv_type)) {
    return invalid(fmt::format("holds a KV cache of another type (ggml type {}); this server's is {} (--kv-type)",
                               kv_type, ggml_type_name(model.kv_type)));
  }
  if (fingerprint != model.fingerprint) {
    return invalid(fmt::format("was saved for another model file (its tensors' SHA-256 fingerprint {}... differs from "
                               "this model's {}...)",
                               hex_prefix(fingerprint, 8), hex_prefix(model.fingerprint, 8)));
  }
  std::vector<uint8_t> layers(kLayerBytes * model.layers.size());
  if (std::fread(layers.data(), 1, layers.size(), f.get()) != layers.size()) return invalid("is truncated");
  for (size_t il = 0; il < model.layers.size(); ++il) {
    for (size_t j = 0; j < 4; ++j) {
      if (get<int32_t>(layers.data() + kLayerBytes * il + 4 * j) != model.layers[il][j]) {
        return invalid(fmt::format("was saved for another model or KV cache (layer {} differs)", il));
      }
    }
  }
  if (n < 0 || swa_lo < 0 || swa_lo > n) return invalid(fmt::format("is corrupt ({} tokens, sliding rows from {})", n, swa_lo));
  if (n > n_ctx) return invalid(fmt::format("holds {} tokens; this server's context is {} (--ctx-size)", n, n_ctx));
  const uint64_t expected = file_size(model, n, swa_lo);
  if (size != expected) {
    return invalid(fmt::format("is {} bytes; its header says {} (truncated or corrupt)", size, expected));
  }
  SlotFileContents c;
  c.tokens.resize(static_cast<size_t>(n));
  c.swa_lo = swa_lo;
  c.file_bytes = size;
  // The digest of the bytes as they are read: the one pass of the check.
  GS_ASSIGN_OR_RETURN(Sha256 digest, Sha256::create());
  GS_RETURN_IF_ERROR(digest.update(fixed, sizeof(fixed)));
  GS_RETURN_IF_ERROR(digest.update(layers.data(), layers.size()));
  if (std::fread(c.tokens.data(), 4, c.tokens.size(), f.get()) != c.tokens.size()) return invalid("is truncated");
  GS_RETURN_IF_ERROR(digest.update(c.tokens.data(), 4 * c.tokens.size()));
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    if (c.tokens[i] < 0 || c.tokens[i] >= model.n_vocab) {
      return invalid(fmt::format("is corrupt (token {} at position {} is outside the vocabulary)", c.tokens[i], i));
    }
  }
  std::vector<uint8_t> buf(kChunkBytes);
  uint64_t left = size - kDigestBytes - (kFixedHeaderBytes + layers.size() + 4 * c.tokens.size());
  while (left > 0) {
    const size_t m = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    if (std::fread(buf.data(), 1, m, f.get()) != m) return invalid("is truncated");
    GS_RETURN_IF_ERROR(digest.update(buf.data(), m));
    left -= m;
  }
  Sha256::Digest stored;
  if (std::fread(stored.data(), 1, stored.size(), f.get()) != stored.size()) return invalid("is truncated");
  GS_ASSIGN_OR_RETURN(const Sha256::Digest computed, digest.finish());
  if (stored != computed) return invalid("is corrupt (its SHA-256 checksum does not match its contents)");
  c.file = std::shared_ptr<std::FILE>(f.release(), FileCloser());
  return c;
}

Status load_slot_file(const std::string& path, const std::string& name, const SlotFileModel& model,
                      const SlotFileContents& contents, KvCache& kv, int seq) {
  const int32_t n = static_cast<int32_t>(contents.tokens.size());
  const int32_t ring = kv.swa_ring();
  // The ring may be smaller than the saver's: only its newest positions are loaded.
  const int32_t swa_lo = ring > 0 ? std::max(contents.swa_lo, n - ring) : 0;
  GS_RETURN_IF_ERROR(kv.restore_shape(seq, n, swa_lo));
  // The file that was checked (still open): a file renamed over the name since is not read.
  File opened;
  std::FILE* f = contents.file.get();
  if (f == nullptr) {
    opened.reset(std::fopen(path.c_str(), "rb"));
    if (!opened) return io_error("cannot open it", name);
    f = opened.get();
  }
  const long data_start =
      static_cast<long>(kFixedHeaderBytes + kLayerBytes * model.layers.size() + 4 * contents.tokens.size());
  if (std::fseek(f, data_start, SEEK_SET) != 0) return io_error("cannot read it", name);
  std::vector<uint8_t> k, v, rows;
  for (int il = 0; il < model.n_layer; ++il) {
    const auto& l = model.layers[static_cast<size_t>(il)];
    const size_t row = static_cast<size_t>(l[3]);
    const int32_t file_lo = rows_lo(l, contents.swa_lo);
    const int32_t lo = rows_lo(l, swa_lo);
    if (lo > file_lo && std::fseek(f, static_cast<long>(2 * row * static_cast<size_t>(lo - file_lo)), SEEK_CUR) != 0) {
      return io_error("cannot read it", name);
    }
    const int32_t chunk = static_cast<int32_t>(std::max<size_t>(1, kChunkBytes / (2 * row)));
    for (int32_t p = lo; p < n; p += chunk) {
      const int32_t m = std::min(chunk, n - p);
      k.resize(static_cast<size_t>(m) * row);
      v.resize(k.size());
      rows.resize(2 * k.size());
      if (std::fread(rows.data(), 1, rows.size(), f) != rows.size()) {
        return make_status(StatusCode::kIo, "slot file '{}' changed while it was restored (it is shorter)", name);
      }
      for (int32_t i = 0; i < m; ++i) {
        std::memcpy(k.data() + i * row, rows.data() + 2 * i * row, row);
        std::memcpy(v.data() + i * row, rows.data() + (2 * i + 1) * row, row);
      }
      GS_RETURN_IF_ERROR(kv.write_positions(seq, il, p, m, k.data(), v.data()));
    }
  }
  return kv.sync();
}

}  // namespace gs
