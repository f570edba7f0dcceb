// gemmaserve inspect: a GGUF file's metadata (long arrays shortened), tensor table, totals
// by type and parameter count, as text or as JSON (--json) for scripts. A split model is
// shown whole (every shard's tensors, shard 1's metadata) with its shards listed.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "int_option.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_summary.h"

namespace gs::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  size_t max_items = 8;
};

nlohmann::json to_json(const gguf::Value& v) {
  using gguf::ValueType;
  switch (v.type) {
    case ValueType::kU8:
    case ValueType::kU16:
    case ValueType::kU32:
    case ValueType::kU64: return std::get<uint64_t>(v.data);
    case ValueType::kI8:
    case ValueType::kI16:
    case ValueType::kI32:
    case ValueType::kI64: return std::get<int64_t>(v.data);
    case ValueType::kF32:
    case ValueType::kF64: {
      const double d = std::get<double>(v.data);
      if (!std::isfinite(d)) return fmt::format("{}", d);  // NaN and inf are not JSON numbers
      return d;
    }
    case ValueType::kBool: return std::get<bool>(v.data);
    case ValueType::kString: return std::get<std::string>(v.data);
    case ValueType::kArray: {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& item : std::get<gguf::ArrayValue>(v.data).items) items.push_back(to_json(item));
      return items;
    }
  }
  return nullptr;
}

nlohmann::json shape_json(const gguf::TensorInfo& t) {
  nlohmann::json s = nlohmann::json::array();
  for (int i = 0; i < t.n_dims; ++i) s.push_back(t.ne[i]);
  return s;
}

int print_json(const gguf::GgufFile& f, const gguf::GgufSummary& sum, const InspectOptions& o) {
  nlohmann::json j;
  j["file"] = f.path();
  j["file_size"] = f.file_size();
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["data_offset"] = f.data_offset();
  const std::vector<gguf::GgufFile::Shard> shards = f.shards();
  if (shards.size() > 1) {
    nlohmann::json js = nlohmann::json::array();
    for (const auto& s : shards) {
      js.push_back({{"file", s.path}, {"file_size", s.file_size}, {"data_offset", s.data_offset},
                    {"n_tensors", s.n_tensors}});
    }
    j["shards"] = std::move(js);
  }
  nlohmann::json meta = nlohmann::json::array();
  for (const auto& kv : f.metadata()) {
    nlohmann::json e;
    e["key"] = kv.key;
    e["type"] = std::string(gguf::value_type_name(kv.type));
    if (kv.type == gguf::ValueType::kArray) {
      e["elem_type"] = std::string(gguf::value_type_name(kv.elem_type));
      e["count"] = kv.count;
    }
    auto v = f.get_value(kv, o.max_items);
    if (!v.ok()) {
      std::fprintf(stderr, "gemmaserve inspect: %s\n", v.status().to_string().c_str());
      return 1;
    }
    e["value"] = to_json(*v);
    meta.push_back(std::move(e));
  }
  j["metadata"] = std::move(meta);
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(ggml_type_name(t.type))},
                       {"shape", shape_json(t)},
                       {"n_elements", t.n_elements},
                       {"bytes", t.size_bytes},
                       {"offset", t.offset}});
    if (shards.size() > 1) tensors.back()["shard"] = t.shard + 1;  // 1-based, as in the file names
  }
  j["tensors"] = std::move(tensors);
  nlohmann::json by_type = nlohmann::json::object();
  for (const auto& tt : sum.by_type) {
    by_type[std::string(ggml_type_name(tt.type))] = {
        {"n_tensors", tt.n_tensors}, {"n_elements", tt.n_elements}, {"bytes", tt.bytes}};
  }
  j["totals"] = {{"n_tensors", sum.n_tensors},
                 {"n_params", sum.n_params},
                 {"tensor_bytes", sum.tensor_bytes},
                 {"by_type", std::move(by_type)}};
  // Keys, names and strings may hold invalid UTF-8: replace rather than throw.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

int print_text(const gguf::GgufFile& f, const gguf::GgufSummary& sum, const InspectOptions& o) {
  fmt::print("{}: GGUF v{}, {} ({} bytes), alignment {}, data at byte {}\n", f.path(), f.version(),
             gguf::format_bytes(f.file_size()), f.file_size(), f.alignment(), f.data_offset());
  const std::vector<gguf::GgufFile::Shard> shards = f.shards();
  if (shards.size() > 1) {
    fmt::print("split model of {} shards (metadata from shard 1):\n", shards.size());
    for (size_t i = 0; i < shards.size(); ++i) {
      fmt::print("  shard {}: {}, {} ({} bytes), {} tensors, data at byte {}\n", i + 1, shards[i].path,
                 gguf::format_bytes(shards[i].file_size), shards[i].file_size, shards[i].n_tensors,
                 shards[i].data_offset);
    }
  }
  size_t key_w = 3, type_w = 4;
  for (const auto& kv : f.metadata()) {
    key_w = std::max(key_w, std::min<size_t>(kv.key.size(), 48));
    type_w = std::max(type_w, gguf::format_type(kv).size());
  }
  fmt::print("\nmetadata ({} entries):\n", f.metadata().size());
  for (const auto& kv : f.metadata()) {
    auto v = f.get_value(kv, o.max_items);
    if (!v.ok()) {
      std::fprintf(stderr, "gemmaserve inspect: %s\n", v.status().to_string().c_str());
      return 1;
    }
    fmt::print("  {:<{}}  {:<{}}  {}\n", gguf::escape_text(kv.key, 200), key_w,
               gguf::format_type(kv), type_w, gguf::format_value(*v));
  }
  size_t name_w = 4;
  for (const auto& t : f.tensors()) name_w = std::max(name_w, std::min<size_t>(t.name.size(), 64));
  fmt::print("\ntensors ({}):\n", f.tensors().size());
  const bool split = shards.size() > 1;
  fmt::print("  {:<{}}  {:<7}  {:<26}  {:>14}{}\n", "name", name_w, "type", "shape", "bytes", split ? "  shard" : "");
  for (const auto& t : f.tensors()) {
    fmt::print("  {:<{}}  {:<7}  {:<26}  {:>14}{}\n", gguf::escape_text(t.name, 200), name_w, ggml_type_name(t.type),
               t.shape_string(), t.size_bytes, split ? fmt::format("  {:>5}", t.shard + 1) : "");
  }
  fmt::print("\ntotals by type:\n");
  for (const auto& tt : sum.by_type) {
    fmt::print("  {:<7}  {:>5} tensors  {:>12} params  {:>10}\n", ggml_type_name(tt.type), tt.n_tensors,
               gguf::format_count(tt.n_elements), gguf::format_bytes(tt.bytes));
  }
  const double bpw = sum.n_params ? 8.0 * static_cast<double>(sum.tensor_bytes) / static_cast<double>(sum.n_params) : 0.0;
  fmt::print("  all      {:>5} tensors  {:>12} params  {:>10}  ({:.2f} bits per weight)\n", sum.n_tensors,
             gguf::format_count(sum.n_params), gguf::format_bytes(sum.tensor_bytes), bpw);
  fmt::print("parameters: {} ({})\n", sum.n_params, gguf::format_count(sum.n_params));
  return 0;
}

int run_inspect(const InspectOptions& o) {
  try {
    auto file = gguf::GgufFile::open_model(o.path);
    if (!file.ok()) {
      std::fprintf(stderr, "gemmaserve inspect: %s\n", file.status().to_string().c_str());
      return 1;
    }
    const gguf::GgufSummary sum = gguf::summarize(**file);
    return o.json ? print_json(**file, sum, o) : print_text(**file, sum, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmaserve inspect: %s\n", e.what());
    return 1;
  }
}

}  // namespace

CommandEntry register_inspect(CLI::App& app) {
  auto opts = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show a GGUF file's metadata, tensors, totals and parameter count");
  sub->add_option("file", opts->path, "GGUF file (of a split model: any shard, the others beside it)")->required();
  sub->add_flag("--json", opts->json, "JSON output for scripts");
  sub->add_option("--max-items", opts->max_items, "array items shown per array (default 8)")->transform(decimal_integer<size_t>(0, size_t{1} << 30));
  return {sub, [opts] { return run_inspect(*opts); }};
}

}  // namespace gs::cli
