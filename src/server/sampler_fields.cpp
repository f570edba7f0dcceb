// llama-server's sampler fields: checked, mapped where this server has the sampler, and
// refused by name where a value would change sampling in a way it cannot.
#include "server/sampler_fields.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "server/json_input.h"

namespace gs::server {

namespace {

using json = nlohmann::json;

constexpr double kHuge = std::numeric_limits<double>::max();
// The penalty window of this server's sampler (SamplerConfig::penalty_last_n), llama.cpp's
// default repeat_last_n.
constexpr int64_t kPenaltyWindow = 64;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

Status unsupported(std::string_view field, const json& value, std::string_view why) {
  return Status(StatusCode::kUnimplemented, fmt::format("{} ({}) is not supported by this server: {}", field,
                                                        value.dump(), why));
}

bool penalties_on(const SamplingParams& s) {
  return s.repetition_penalty != 1.0f || s.frequency_penalty != 0.0f || s.presence_penalty != 0.0f;
}

// The samplers of this server's chain, in its order (runtime/sampler.h).
enum Chain : int { kPenalties, kTopK, kTopP, kMinP, kTemperature, kChainSize };
constexpr std::array<std::string_view, kChainSize> kChainNames = {"penalties", "top_k", "top_p", "min_p",
                                                                  "temperature"};

// A sampler name as llama.cpp spells it (names and their hyphenated forms, or one letter of
// its --sampling-seq string): one of Chain, kOff for a sampler this server lacks whose
// fields are checked to be off, kRefused for one that needs no field to act (infill), or -1.
constexpr int kOff = 100;
constexpr int kRefused = 101;
int sampler_id(std::string_view name) {
  if (name == "penalties" || name == "e") return kPenalties;
  if (name == "top_k" || name == "top-k" || name == "k") return kTopK;
  if (name == "top_p" || name == "top-p" || name == "nucleus" || name == "p") return kTopP;
  if (name == "min_p" || name == "min-p" || name == "m") return kMinP;
  if (name == "temperature" || name == "temp" || name == "t") return kTemperature;
  for (std::string_view off : {"dry", "d", "typ_p", "typ-p", "typical_p", "typical-p", "typical", "y", "xtc", "x",
                               "top_n_sigma", "top-n-sigma", "s"}) {
    if (name == off) return kOff;
  }
  if (name == "infill" || name == "i") return kRefused;
  return -1;
}

// Which samplers of the chain act on this request. At temperature <= 0 the pick is greedy
// (argmax, runtime/sampler.h): only the penalties act, top_k, top_p, min_p and temperature
// do not, so a list may leave them out.
std::array<bool, kChainSize> chain_on(const SamplingParams& s) {
  const bool drawn = s.temperature > 0.0f;
  return {penalties_on(s), drawn && s.top_k > 0, drawn && s.top_p < 1.0f, drawn && s.min_p > 0.0f,
          drawn && s.temperature != 1.0f};
}

Status read_samplers(const json& body, const SamplingParams& s) {
  const auto it = body.find("samplers");
  if (it == body.end() || it->is_null()) return {};
  std::vector<std::string> names;
  if (it->is_string()) {
    for (char c : it->get_ref<const std::string&>()) names.emplace_back(1, c);
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return invalid(fmt::format("samplers[{}] must be a string, got {}", i, json_type_name((*it)[i])));
      }
      names.push_back((*it)[i].get<std::string>());
    }
  } else {
    return invalid(fmt::format("samplers must be an array of sampler names or a string of sampler letters, got {}",
                               json_type_name(*it)));
  }
  std::array<int, kChainSize> at;
  at.fill(-1);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string where = it->is_array() ? fmt::format("samplers[{}]", i) : std::string("samplers");
    const int id = sampler_id(names[i]);
    if (id < 0) return invalid(fmt::format("{}: unknown sampler '{}'", where, names[i]));
    if (id == kRefused) {
      return Status(StatusCode::kUnimplemented,
                    fmt::format("{}: the sampler '{}' is not supported by this server", where, names[i]));
    }
    if (id == kOff) continue;
    if (at[static_cast<size_t>(id)] >= 0) return invalid(fmt::format("{}: '{}' is named twice", where, names[i]));
    at[static_cast<size_t>(id)] = static_cast<int>(i);
  }
  const std::array<bool, kChainSize> on = chain_on(s);
  int last = -1;
  std::string_view last_name;
  for (int k = 0; k < kChainSize; ++k) {
    if (!on[static_cast<size_t>(k)]) continue;
    const int pos = at[static_cast<size_t>(k)];
    if (pos < 0) {
      return unsupported("samplers", *it,
                         fmt::format("it leaves out {}, which this request's parameters turn on; this server's chain "
                                     "always runs penalties, top_k, top_p, min_p, temperature in that order",
                                     kChainNames[static_cast<size_t>(k)]));
    }
    if (pos < last) {
      return unsupported("samplers", *it,
                         fmt::format("it puts {} before {}; this server's chain runs penalties, top_k, top_p, "
                                     "min_p, temperature in that order",
                                     kChainNames[static_cast<size_t>(k)], last_name));
    }
    last = pos;
    last_name = kChainNames[static_cast<size_t>(k)];
  }
  return {};
}

}  // namespace

Status read_llama_sampler_fields(const json& body, SamplingParams* sampling) {
  std::optional<double> d;
  std::optional<int64_t> i;

  // repeat_penalty: repetition_penalty by llama.cpp's name (the same sampler and range).
  GS_RETURN_IF_ERROR(read_number(body, "", "repeat_penalty", 0.01, 10.0, &d));
  if (d) {
    std::optional<double> other;
    GS_RETURN_IF_ERROR(read_number(body, "", "repetition_penalty", 0.01, 10.0, &other));
    if (other && *other != *d) {
      return invalid(fmt::format("repeat_penalty ({}) disagrees with repetition_penalty ({}); send one of them",
                                 body["repeat_penalty"].dump(), body["repetition_penalty"].dump()));
    }
    sampling->repetition_penalty = static_cast<float>(*d);
  }
  const bool penalties = penalties_on(*sampling);
  for (const char* key : {"repeat_last_n", "penalty_last_n"}) {
    GS_RETURN_IF_ERROR(read_int(body, "", key, -1, std::numeric_limits<int32_t>::max(), &i));
    if (i && *i != kPenaltyWindow && penalties) {
      return unsupported(key, body[key],
                         fmt::format("the penalties see the last {} tokens; send {} or leave it out", kPenaltyWindow,
                                     kPenaltyWindow));
    }
  }

  GS_RETURN_IF_ERROR(read_number(body, "", "typical_p", 0.0, kHuge, &d));
  if (d && *d < 1.0) return unsupported("typical_p", body["typical_p"], "there is no typical sampling; send 1 (off)");

  GS_RETURN_IF_ERROR(read_int(body, "", "mirostat", 0, 2, &i));
  if (i && *i != 0) return unsupported("mirostat", body["mirostat"], "there is no mirostat sampling; send 0 (off)");
  GS_RETURN_IF_ERROR(read_number(body, "", "mirostat_tau", 0.0, kHuge, &d));
  GS_RETURN_IF_ERROR(read_number(body, "", "mirostat_eta", 0.0, kHuge, &d));

  std::optional<double> xtc_threshold;
  GS_RETURN_IF_ERROR(read_number(body, "", "xtc_threshold", 0.0, kHuge, &xtc_threshold));
  GS_RETURN_IF_ERROR(read_number(body, "", "xtc_probability", 0.0, 1.0, &d));
  // llama.cpp's XTC does nothing with a threshold above 0.5 (its default is 0.1).
  if (d && *d > 0.0 && xtc_threshold.value_or(0.1) <= 0.5) {
    return unsupported("xtc_probability", body["xtc_probability"], "there is no XTC sampling; send 0 (off)");
  }

  std::optional<double> dry_base;
  std::optional<int64_t> dry_last_n;
  GS_RETURN_IF_ERROR(read_number(body, "", "dry_base", 0.0, kHuge, &dry_base));
  GS_RETURN_IF_ERROR(read_int(body, "", "dry_allowed_length", 0, std::numeric_limits<int32_t>::max(), &i));
  GS_RETURN_IF_ERROR(read_int(body, "", "dry_penalty_last_n", -1, std::numeric_limits<int32_t>::max(), &dry_last_n));
  if (const auto it = body.find("dry_sequence_breakers"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return invalid(fmt::format("dry_sequence_breakers must be an array of strings, got {}", json_type_name(*it)));
    }
    for (size_t k = 0; k < it->size(); ++k) {
      if (!(*it)[k].is_string()) {
        return invalid(fmt::format("dry_sequence_breakers[{}] must be a string, got {}", k, json_type_name((*it)[k])));
      }
    }
  }
  GS_RETURN_IF_ERROR(read_number(body, "", "dry_multiplier", 0.0, kHuge, &d));
  // llama.cpp's DRY does nothing with a base below 1 or a window of 0 (defaults 1.75, -1).
  if (d && *d > 0.0 && dry_base.value_or(1.75) >= 1.0 && dry_last_n.value_or(-1) != 0) {
    return unsupported("dry_multiplier", body["dry_multiplier"], "there is no DRY sampling; send 0 (off)");
  }

  GS_RETURN_IF_ERROR(read_number(body, "", "dynatemp_exponent", 0.0, kHuge, &d));
  GS_RETURN_IF_ERROR(read_number(body, "", "dynatemp_range", 0.0, kHuge, &d));
  if (d && *d > 0.0) {
    return unsupported("dynatemp_range", body["dynatemp_range"], "there is no dynamic temperature; send 0 (off)");
  }

  GS_RETURN_IF_ERROR(read_number(body, "", "top_n_sigma", -kHuge, kHuge, &d));
  if (d && *d > 0.0) {
    return unsupported("top_n_sigma", body["top_n_sigma"], "there is no top-n-sigma sampling; send -1 (off)");
  }

  GS_RETURN_IF_ERROR(read_int(body, "", "min_keep", 0, std::numeric_limits<int32_t>::max(), &i));
  // Every truncation keeps at least the most likely token: min_keep 1 is what it does anyway.
  const bool truncates = sampling->top_k > 0 || sampling->top_p < 1.0f || sampling->min_p > 0.0f;
  if (i && *i > 1 && truncates) {
    return unsupported("min_keep", body["min_keep"],
                       "top_k, top_p and min_p keep at least one token, not more; send 0 or 1");
  }

  return read_samplers(body, *sampling);
}

}  // namespace gs::server
