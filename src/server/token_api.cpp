// Bodies and responses of POST /tokenize and POST /detokenize (llama-server's and vLLM's forms).
#include "server/token_api.h"

#include <fmt/format.h>

#include <algorithm>
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
  const int given = present(body, "content") + present(body, "prompt") + present(body, "messages");
  if (given == 0) {
    return invalid("content is required (the text to tokenize; vLLM's prompt or messages are taken too)");
  }
  if (given > 1) return invalid("content, prompt and messages: give one of them (the text or the chat to tokenize)");
  std::optional<bool> b;
  if (present(body, "content")) {  // llama-server
    const json& c = body["content"];
    if (!c.is_string()) return invalid(fmt::format("content must be a string, got {}", json_type_name(c)));
    req.content = c.get<std::string>();
    GS_RETURN_IF_ERROR(read_bool(body, "", "add_special", &b));
    req.add_special = b.value_or(false);
    GS_RETURN_IF_ERROR(read_bool(body, "", "parse_special", &b));
    req.parse_special = b.value_or(true);
    GS_RETURN_IF_ERROR(read_bool(body, "", "with_pieces", &b));
    req.with_pieces = b.value_or(false);
    return req;
  }
  // vLLM: special-token text is parsed, as its tokenizers split added tokens out.
  req.parse_special = true;
  if (present(body, "prompt")) {
    const json& p = body["prompt"];
    if (!p.is_string()) return invalid(fmt::format("prompt must be a string, got {}", json_type_name(p)));
    req.form = TokenizeForm::kVllmPrompt;
    req.content = p.get<std::string>();
  } else {
    req.form = TokenizeForm::kVllmMessages;
  }
  GS_RETURN_IF_ERROR(read_bool(body, "", "add_special_tokens", &b));
  req.add_special = b.value_or(req.form == TokenizeForm::kVllmPrompt);
  GS_RETURN_IF_ERROR(read_bool(body, "", "return_token_strs", &b));
  req.token_strs = b.value_or(false);
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

namespace {

// Entry k of the tokens array: the id, or {"id","piece"} (pieces that are no valid UTF-8 alone
// as their byte values).
void append_id_entry(const text::Tokenizer& tok, int32_t id, bool with_pieces, std::string* out) {
  std::string& o = *out;
  if (!with_pieces) {
    append_int(id, &o);
    return;
  }
  o += "{\"id\":";
  append_int(id, &o);
  o += ",\"piece\":";
  const std::string_view piece = tok.token_to_piece(id, /*render_special=*/true);
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

}  // namespace

TokenizeAnswerWriter::TokenizeAnswerWriter(std::vector<int32_t> ids, TokenizeAnswer answer)
    : ids_(std::move(ids)), answer_(answer) {}

void TokenizeAnswerWriter::close_ids(std::string* out) {
  std::string& o = *out;
  o += ']';
  if (!answer_.vllm) {
    o += '}';
    phase_ = Phase::kDone;
    return;
  }
  if (answer_.token_strs && !ids_.empty()) {
    o += ",\"token_strs\":[";
    phase_ = Phase::kStrings;
    next_ = 0;
    return;
  }
  o += answer_.token_strs ? ",\"token_strs\":[]" : ",\"token_strs\":null";
  o += fmt::format(",\"count\":{},\"max_model_len\":{}}}", ids_.size(), answer_.max_model_len);
  phase_ = Phase::kDone;
}

void TokenizeAnswerWriter::next(const text::Tokenizer& tok, size_t max_entries, std::string* out) {
  std::string& o = *out;
  if (phase_ == Phase::kDone) return;
  const size_t end = std::min(ids_.size(), next_ + std::max<size_t>(max_entries, 1));
  if (phase_ == Phase::kIds) {
    if (!opened_) {
      o += "{\"tokens\":[";
      opened_ = true;
    }
    o.reserve(o.size() + (end - next_) * (answer_.with_pieces ? 32 : 7));
    for (; next_ < end; ++next_) {
      if (next_ > 0) o += ',';
      append_id_entry(tok, ids_[next_], answer_.with_pieces, &o);
    }
    if (next_ == ids_.size()) close_ids(&o);
    return;
  }
  for (; next_ < end; ++next_) {  // kStrings: the vocabulary strings (vLLM's token_strs)
    if (next_ > 0) o += ',';
    o += dump_json(json(std::string(tok.token_text(ids_[next_]))));
  }
  if (next_ == ids_.size()) {
    o += fmt::format("],\"count\":{},\"max_model_len\":{}}}", ids_.size(), answer_.max_model_len);
    phase_ = Phase::kDone;
  }
}

std::string tokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids, bool with_pieces) {
  TokenizeAnswer a;
  a.with_pieces = with_pieces;
  TokenizeAnswerWriter w(std::vector<int32_t>(ids.begin(), ids.end()), a);
  std::string out;
  while (!w.done()) w.next(tok, ids.size() + 1, &out);
  return out;
}

std::string detokenize_response_json(const text::Tokenizer& tok, std::span<const int32_t> ids) {
  text::DecodeOptions options;
  options.render_special = true;
  Result<std::string> content = tok.decode(ids, options);
  // decode fails only on an id out of range, which the request parser refused.
  const std::string text = content.ok() ? std::move(*content) : std::string();
  return dump_json(json{{"content", text}, {"prompt", text}});
}

}  // namespace gs::server
