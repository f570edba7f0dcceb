// vLLM's stop_token_ids, bad_words and allowed_token_ids.
#include "server/token_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "server/api_request.h"
#include "server/json_input.h"

namespace gs::server {

namespace {

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

Status read_stop_token_ids(const nlohmann::json& body, int32_t n_vocab, std::vector<int32_t>* out) {
  out->clear();
  auto it = body.find("stop_token_ids");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_array()) {
    return invalid(fmt::format("stop_token_ids must be an array of token ids, got {}", json_type_name(*it)));
  }
  const int64_t id_end = n_vocab > 0 ? n_vocab : std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < it->size(); ++i) {
    Result<int32_t> id = read_token_id((*it)[i], fmt::format("stop_token_ids[{}]", i), id_end);
    if (!id.ok()) return id.status();
    out->push_back(*id);
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  if (out->size() > kMaxStopTokenIds) {
    return invalid(fmt::format("stop_token_ids may hold at most {} distinct ids, got {}", kMaxStopTokenIds,
                               out->size()));
  }
  return {};
}

}  // namespace

Status read_token_fields(const nlohmann::json& body, int32_t n_vocab, std::vector<int32_t>* out) {
  for (const char* key : {"bad_words", "allowed_token_ids"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null() || (it->is_array() && it->empty())) continue;
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{} is not supported by this server (it does not constrain which tokens may be "
                              "sampled; logit_bias can ban tokens)", key));
  }
  return read_stop_token_ids(body, n_vocab, out);
}

}  // namespace gs::server
