// Bodies and responses of POST /tokenize and POST /detokenize.
#include "server/token_api.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "server/json_input.h"
#include "server/openai_format.h"
#include "text/utf8.h"

namespace gs::server {

namespace {

using nlohmann::json;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

void append_int(int32_t v, std::string* out) {
  char buf[16];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

}  // namespace

Result<TokenizeRequest> parse_tokenize_request(const json& body) {
  TokenizeRequest req;
  auto it = body.find("content");
  if (it == body.end() || it->is_null()) return invalid("content is required (the text to tokenize)");
  if (!it->is_string()) return invalid(fmt::format("content must be a string, got {}", json_type_name(*it)));
  req.content = it->get<std::string>();
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "add_special", &b));
  req.add_special = b.value_or(false);
  GS_RETURN_IF_ERROR(read_bool(body, "", "parse_special", &b));
  req.parse_special = b.value_or(true);
  GS_RETURN_IF_ERROR(read_bool(body, "", "with_pieces", &b));
  req.with_pieces = b.value_or(false);
  return req;
}

Result<DetokenizeRequest> parse_detokenize_request(const json& body, int32_t n_vocab) {
  DetokenizeRequest req;
  auto it = body.find("tokens");
  if (it == body.end() || it->is_null()) return invalid("tokens is required (an array of token ids)");
  if (!it->is_array()) return invalid(fmt::format("tokens must be an array of token ids, got {}", json_type_name(*it)));
  req.tokens.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    Result<int32_t> id = read_token_id((*it)[i], fmt::format("tokens[{}]", i), n_vocab);
    if (!id.ok()) return id.status();
    req.tokens.push_back(*id);
  }
  return req;
}

void append_tokenize_entries(const text::Tokenizer& tok, std::span<const int32_t> ids, size_t begin, size_t end,
                             bool with_pieces, std::string* out) {
  std::string& o = *out;
  o.reserve(o.size() + (end - begin) * (with_pieces ? 32 : 7));
  for (size_t k = begin; k < end; ++k) {
    if (k > 0) o += ',';
    if (!with_pieces) {
      append_int(ids[k], &o);
      continue;
    }
    o += "{\"id\":";
    append_int(ids[k], &o);
    o += ",\"piece\":";
    const std::string_view piece = tok.token_to_piece(ids[k], /*render_special=*/true);
    if (text::is_valid_utf8(piece)) {
      o += dump_json(json(std::string(piece)));
    } else {
      o += '[';
      for (size_t b = 0; b < piece.size(); ++b) {
        if (b > 0) o += ',';
        append_int(static_cast<unsigned char>(piece[b]), &o);
      }
      o += ']';
    }
    o += '}';
  }
}

std::string tokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids, bool with_pieces) {
  std::string out = "{\"tokens\":[";
  append_tokenize_entries(tok, ids, 0, ids.size(), with_pieces, &out);
  out += "]}";
  return out;
}

std::string detokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids) {
  text::DecodeOptions options;
  options.render_special = true;
  Result<std::string> content = tok.decode(ids, options);
  // decode fails only on an id out of range, which the request parser refused.
  return dump_json(json{{"content", content.ok() ? std::move(*content) : std::string()}});
}

}  // namespace gs::server
