// Split GGUF models: shard names, and GgufFile::open_model, which opens every shard of a
// split model, checks the shards against each other and serves their tensors as one file.
#include "gguf/gguf_split.h"

#include <fmt/format.h>

#include <cerrno>
#include <sys/stat.h>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_summary.h"

namespace gs::gguf {
namespace {

// The number of `digits` (at least 5, all decimal) or -1.
int parse_number(std::string_view digits) {
  if (digits.size() < 5 || digits.size() > 9) return -1;
  int v = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return -1;
    v = v * 10 + (ch - '0');
  }
  return v;
}

// gguf-split writes u16 counts; a shard's split.count or split.no outside it is malformed.
constexpr int64_t kMaxShards = 65535;

std::string shard_label(int number, int count) { return fmt::format("shard {} of {}", number, count); }

}  // namespace

std::optional<SplitName> parse_split_name(std::string_view path) {
  constexpr std::string_view kExt = ".gguf";
  constexpr std::string_view kOf = "-of-";
  if (path.size() < kExt.size() || path.substr(path.size() - kExt.size()) != kExt) return std::nullopt;
  std::string_view stem = path.substr(0, path.size() - kExt.size());
  const size_t of = stem.rfind(kOf);
  if (of == std::string_view::npos) return std::nullopt;
  const int count = parse_number(stem.substr(of + kOf.size()));
  const size_t dash = stem.rfind('-', of == 0 ? 0 : of - 1);
  if (of == 0 || dash == std::string_view::npos || dash == 0) return std::nullopt;  // no prefix
  const int number = parse_number(stem.substr(dash + 1, of - dash - 1));
  if (count < 1 || number < 1 || number > count) return std::nullopt;
  return SplitName{std::string(stem.substr(0, dash)), number, count};
}

std::string split_path(std::string_view prefix, int number, int count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, number, count);
}

Result<std::shared_ptr<GgufFile>> GgufFile::open_model(const std::string& path) {
  std::shared_ptr<GgufFile> given;
  GS_ASSIGN_OR_RETURN(given, open(path));
  if (!given->has(names::kSplitCount)) return given;
  int64_t n_split = 0;
  GS_ASSIGN_OR_RETURN(n_split, given->get_i64(names::kSplitCount));
  const std::optional<SplitName> name = parse_split_name(path);
  // A shard name whose count differs from split.count (for one shard too: such a file is
  // not the whole model).
  const auto count_disagrees = [&]() {
    return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' = {}, but the file name says {} shards", path,
                       names::kSplitCount, n_split, name->count);
  };
  if (n_split == 1) {  // a split of one file is the whole model, unless its name says otherwise
    if (name && name->count != 1) return count_disagrees();
    return given;
  }
  if (n_split < 1 || n_split > kMaxShards) {
    return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' = {} is not a shard count (1..{})", path,
                       names::kSplitCount, n_split, kMaxShards);
  }
  const int n = static_cast<int>(n_split);
  int64_t given_no = 0;
  GS_ASSIGN_OR_RETURN(given_no, given->get_i64(names::kSplitNo));
  if (given_no < 0 || given_no >= n) {
    return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' = {} is not a shard index of {} shards (0..{})",
                       path, names::kSplitNo, given_no, n, n - 1);
  }
  if (!name) {
    return make_status(StatusCode::kNotFound,
                       "{}: metadata '{}' = {}: this file is {} of a split GGUF, but its name does not end in "
                       "-{:05d}-of-{:05d}.gguf, so the other shards cannot be found; give the shards the names "
                       "gguf-split wrote, or merge them into one file (llama-gguf-split --merge FIRST-SHARD OUT.gguf)",
                       path, names::kSplitCount, n, shard_label(static_cast<int>(given_no) + 1, n),
                       given_no + 1, n);
  }
  if (name->count != n) return count_disagrees();
  if (name->number != given_no + 1) {
    return make_status(StatusCode::kInvalidArgument,
                       "{}: metadata '{}' = {} (shard {}), but the file name says shard {}", path, names::kSplitNo,
                       given_no, given_no + 1, name->number);
  }

  std::vector<std::shared_ptr<GgufFile>> files(static_cast<size_t>(n));
  files[static_cast<size_t>(given_no)] = given;
  for (int i = 0; i < n; ++i) {
    if (files[static_cast<size_t>(i)]) continue;
    const std::string p = split_path(name->prefix, i + 1, n);
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 && errno == ENOENT) {
      return make_status(StatusCode::kNotFound, "{}: {} of the split model (from {}) is missing: no such file", p,
                         shard_label(i + 1, n), path);
    }
    auto r = open(p);
    if (!r.ok()) {
      return Status(r.status().code(),
                    fmt::format("{} (shard {} of the split model {})", r.status().message(), i + 1, path));
    }
    files[static_cast<size_t>(i)] = std::move(r).value();
  }

  // Every shard names the same split; the first carries the total tensor count (read here, so
  // that a shard 1 without it is refused before the tensors are counted).
  const GgufFile& first = *files[0];
  int64_t n_total = 0;
  GS_ASSIGN_OR_RETURN(n_total, first.get_i64(names::kSplitTensorsCount));
  for (int i = 0; i < n; ++i) {
    const GgufFile& f = *files[static_cast<size_t>(i)];
    int64_t count = 0;
    GS_ASSIGN_OR_RETURN(count, f.get_i64(names::kSplitCount));
    if (count != n) {
      return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' = {}, but {} says {} ({})", f.path(),
                         names::kSplitCount, count, path, n, shard_label(i + 1, n));
    }
    int64_t no = 0;
    GS_ASSIGN_OR_RETURN(no, f.get_i64(names::kSplitNo));
    if (no != i) {
      return make_status(StatusCode::kInvalidArgument,
                         "{}: metadata '{}' = {}, expected {}: the file is named as {} (split.no counts from 0)",
                         f.path(), names::kSplitNo, no, i, shard_label(i + 1, n));
    }
  }
  std::unordered_map<std::string_view, int> holder;  // tensor name -> shard index
  size_t n_held = 0;
  for (int i = 0; i < n; ++i) {
    const GgufFile& f = *files[static_cast<size_t>(i)];
    for (const TensorInfo& t : f.tensors()) {
      auto [it, fresh] = holder.emplace(t.name, i);
      if (!fresh) {
        return make_status(StatusCode::kInvalidArgument, "{}: tensor '{}' is also in {} ({}); a tensor belongs to one shard",
                           f.path(), escape_text(t.name), files[static_cast<size_t>(it->second)]->path(),
                           shard_label(it->second + 1, n));
      }
    }
    n_held += f.tensors().size();
  }
  // Each shard that carries the total (shard 1 must) is checked against what the shards
  // hold, so the error names the shard that is wrong, not one that disagrees with it.
  for (int i = 0; i < n; ++i) {
    const GgufFile& f = *files[static_cast<size_t>(i)];
    if (i > 0 && !f.has(names::kSplitTensorsCount)) continue;
    int64_t total = n_total;
    if (i > 0) {
      GS_ASSIGN_OR_RETURN(total, f.get_i64(names::kSplitTensorsCount));
    }
    if (total < 0 || static_cast<uint64_t>(total) != n_held) {
      return make_status(StatusCode::kInvalidArgument, "{}: metadata '{}' = {}, but the {} shards hold {} tensors",
                         f.path(), names::kSplitTensorsCount, total, n, n_held);
    }
  }

  // Shard 1 serves the model: its metadata, then every shard's tensors in shard order.
  std::shared_ptr<GgufFile> model = files[0];
  model->n_own_tensors_ = model->tensors_.size();
  model->tensors_.reserve(n_held);
  for (int i = 1; i < n; ++i) {
    for (TensorInfo t : files[static_cast<size_t>(i)]->tensors_) {
      t.shard = i;
      model->tensors_.push_back(std::move(t));
    }
    model->shards_.push_back(files[static_cast<size_t>(i)]);
  }
  return model;
}

std::vector<GgufFile::Shard> GgufFile::shards() const {
  std::vector<Shard> out;
  const size_t own = shards_.empty() ? tensors_.size() : n_own_tensors_;
  out.push_back({path_, size_, data_offset_, own});
  for (const auto& s : shards_) out.push_back({s->path_, s->size_, s->data_offset_, s->tensors_.size()});
  return out;
}

bool GgufFile::is_partial_shard() const {
  if (!shards_.empty() || !has(names::kSplitCount)) return false;
  auto n = get_i64(names::kSplitCount);
  return !n.ok() || *n != 1;
}

}  // namespace gs::gguf
