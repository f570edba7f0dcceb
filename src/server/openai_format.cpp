// Builders of OpenAI response JSON.
#include "server/openai_format.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "text/utf8.h"

namespace gs::server {

using nlohmann::json;

std::string make_response_id(const char* prefix) {
  static constexpr char kChars[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % 62];
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ResponseUsage combine_usage(const std::vector<const GenerationResult*>& results) {
  ResponseUsage out;
  Usage& u = out.usage;
  for (size_t i = 0; i < results.size(); ++i) {
    const Usage& c = results[i]->usage;
    if (i == 0) {
      u.prompt_tokens = c.prompt_tokens;
      u.cached_tokens = c.cached_tokens;
    }
    u.cached_tokens = std::min(u.cached_tokens, c.cached_tokens);
    u.completion_tokens += c.completion_tokens;
    u.drafted_tokens += c.drafted_tokens;
    u.accepted_tokens += c.accepted_tokens;
    u.queue_ms = std::max(u.queue_ms, c.queue_ms);
    u.prefill_ms = std::max(u.prefill_ms, c.prefill_ms);
    u.decode_ms = std::max(u.decode_ms, c.decode_ms);
    out.reasoning_tokens += results[i]->reasoning_tokens;
  }
  return out;
}

json usage_json(const ResponseUsage& r) {
  const Usage& u = r.usage;
  return json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
              {"completion_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}}};
}

json running_usage_json(int32_t prompt_tokens, int32_t completion_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}};
}

json timings_json(const Usage& u) {
  // The tokens the prefill computed: the prompt less the prefix reused from the cache
  // (llama-server's prompt_n). Its rate counted the cached ones too: a reused 400-token prompt
  // whose one new token took 5 ms "ran" at 80000 tok/s.
  const int32_t prefilled = std::max(u.prompt_tokens - u.cached_tokens, 0);
  json t{{"queue_ms", u.queue_ms},  {"prompt_n", prefilled},          {"prompt_ms", u.prefill_ms},
         {"predicted_n", u.completion_tokens}, {"predicted_ms", u.decode_ms}};
  if (u.prefill_ms > 0 && prefilled > 0) t["prompt_per_second"] = 1000.0 * prefilled / u.prefill_ms;
  if (u.decode_ms > 0 && u.completion_tokens > 1) {
    t["predicted_per_second"] = 1000.0 * (u.completion_tokens - 1) / u.decode_ms;
  }
  t["draft_n"] = u.drafted_tokens;
  t["draft_n_accepted"] = u.accepted_tokens;
  return t;
}

namespace {

json token_bytes(std::string_view piece) {
  json bytes = json::array();
  for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

std::string token_string(const text::Tokenizer& tok, int32_t id) {
  return text::sanitize_utf8(tok.token_to_piece(id, true));
}

// The legacy completions' spelling of a token: its text, or for a piece that is not valid
// UTF-8 by itself (a byte-fallback token, part of a character) "bytes:" and its bytes as
// \xNN, as OpenAI writes them. Distinct pieces stay distinct keys of top_logprobs (as U+FFFD
// they collided).
std::string completion_piece_string(std::string_view piece) {
  if (text::is_valid_utf8(piece)) return std::string(piece);
  std::string out = "bytes:";
  for (const char c : piece) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  return out;
}

std::string completion_token_string(const text::Tokenizer& tok, int32_t id) {
  return completion_piece_string(tok.token_to_piece(id, true));
}

// The text a logprobs entry spells for `shown`: its piece (special tokens as their text), or
// the kept part of it where a stop string cut the token.
std::string_view shown_piece(const text::Tokenizer& tok, const ShownToken& shown) {
  std::string_view piece = tok.token_to_piece(shown.token.id, true);
  if (shown.shown_bytes >= 0) piece = piece.substr(0, static_cast<size_t>(shown.shown_bytes));
  return piece;
}

}  // namespace

json chat_logprobs_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens) {
  json content = json::array();
  for (const ShownToken& shown : tokens) {
    const GeneratedToken& t = shown.token;
    const std::string_view piece = shown_piece(tok, shown);
    json top = json::array();
    for (const auto& alt : t.top) {
      const std::string_view p = tok.token_to_piece(alt.token, true);
      top.push_back({{"token", token_string(tok, alt.token)}, {"logprob", alt.logprob}, {"bytes", token_bytes(p)}});
    }
    // Chat entries spell the content that came from the token (decision 0055).
    const std::string_view spelled = shown.text ? std::string_view(*shown.text) : piece;
    content.push_back({{"token", shown.text || shown.shown_bytes >= 0 ? text::sanitize_utf8(spelled)
                                                                     : token_string(tok, t.id)},
                       {"logprob", t.logprob},
                       {"bytes", token_bytes(spelled)},
                       {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

namespace {
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
}  // namespace

void TextOffsets::skip_text(std::string_view text) { chars += code_points(text); }

size_t TextOffsets::next(std::string_view piece) {
  const size_t at = chars;
  chars += code_points(assembler.push(piece));
  return at;
}

json completion_logprobs_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens,
                              TextOffsets& text_offsets) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const ShownToken& shown : tokens) {
    const GeneratedToken& t = shown.token;
    toks.push_back(shown.shown_bytes < 0 ? completion_token_string(tok, t.id)
                                         : completion_piece_string(shown_piece(tok, shown)));
    lps.push_back(t.logprob);
    json top = json::object();
    // Most probable first; a later alternative never replaces an earlier one's entry.
    for (const auto& alt : t.top) top.emplace(completion_token_string(tok, alt.token), alt.logprob);
    tops.push_back(std::move(top));
    std::string_view piece = tok.token_to_piece(t.id, false);
    if (shown.shown_bytes >= 0) piece = piece.substr(0, std::min(piece.size(), static_cast<size_t>(shown.shown_bytes)));
    offsets.push_back(text_offsets.next(piece));
  }
  return json{{"tokens", std::move(toks)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

std::string chat_finish_reason(const GenerationResult& r, ToolCallForm form) {
  if (form == ToolCallForm::kFunctionCall && r.finish_reason == "tool_calls") return "function_call";
  return r.finish_reason;
}

json chat_choice_json(int index, const GenerationResult& r, const json& logprobs, ToolCallForm form) {
  json message{{"role", "assistant"}};
  if (r.content.empty() && !r.tool_calls.empty()) {
    message["content"] = nullptr;
  } else {
    message["content"] = r.content;
  }
  if (!r.reasoning_content.empty()) message["reasoning_content"] = r.reasoning_content;
  if (!r.tool_calls.empty()) {
    switch (form) {
      case ToolCallForm::kToolCalls: {
        json calls = json::array();
        for (const auto& c : r.tool_calls) {
          calls.push_back(
              {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
        }
        message["tool_calls"] = std::move(calls);
        break;
      }
      case ToolCallForm::kFunctionCall:
        // The legacy answer holds one call; the plan ends the output after the first.
        message["function_call"] = {{"name", r.tool_calls[0].name}, {"arguments", r.tool_calls[0].arguments_json}};
        break;
    }
  }
  return json{{"index", index},
              {"message", std::move(message)},
              {"logprobs", logprobs},
              {"finish_reason", chat_finish_reason(r, form)}};
}

json chat_completion_json(const ResponseMeta& meta, json choices, const ResponseUsage& usage) {
  return json{{"id", meta.id},
              {"object", "chat.completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "gemmaserve"},
              {"choices", std::move(choices)},
              {"usage", usage_json(usage)},
              {"timings", timings_json(usage.usage)}};
}

json chat_delta_json(const OutputDelta& d, ToolCallForm form) {
  switch (d.kind) {
    case OutputDelta::Kind::kContent:
      return json{{"content", d.text}};
    case OutputDelta::Kind::kReasoning:
      return json{{"reasoning_content", d.text}};
    case OutputDelta::Kind::kToolCallBegin:
      if (form == ToolCallForm::kFunctionCall) return json{{"function_call", {{"name", d.tool_name}, {"arguments", ""}}}};
      return json{{"tool_calls", json::array({{{"index", d.tool_index},
                                                {"id", d.tool_id},
                                                {"type", "function"},
                                                {"function", {{"name", d.tool_name}, {"arguments", ""}}}}})}};
    case OutputDelta::Kind::kToolCallArgs:
      if (form == ToolCallForm::kFunctionCall) return json{{"function_call", {{"arguments", d.text}}}};
      return json{{"tool_calls", json::array({{{"index", d.tool_index}, {"function", {{"arguments", d.text}}}}})}};
  }
  return json::object();
}

json chat_chunk_json(const ResponseMeta& meta, int index, json delta, const std::string& finish_reason,
                     const json& logprobs) {
  json choice{{"index", index},
              {"delta", std::move(delta)},
              {"logprobs", logprobs},
              {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  return json{{"id", meta.id},
              {"object", "chat.completion.chunk"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "gemmaserve"},
              {"choices", json::array({std::move(choice)})}};
}

json chat_usage_chunk_json(const ResponseMeta& meta, const ResponseUsage& usage) {
  return json{{"id", meta.id},
              {"object", "chat.completion.chunk"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", "gemmaserve"},
              {"choices", json::array()},
              {"usage", usage_json(usage)},
              {"timings", timings_json(usage.usage)}};
}

json completion_choice_json(int index, const std::string& text, const GenerationResult& r, const json& logprobs) {
  return json{{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", r.finish_reason}};
}

json completion_json(const ResponseMeta& meta, json choices, const ResponseUsage& usage) {
  return json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", std::move(choices)},
              {"usage", usage_json(usage)},
              {"timings", timings_json(usage.usage)}};
}

json completion_chunk_json(const ResponseMeta& meta, int index, const std::string& text,
                           const std::string& finish_reason, const json& logprobs) {
  json choice{{"index", index},
              {"text", text},
              {"logprobs", logprobs},
              {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  return json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", json::array({std::move(choice)})}};
}

json completion_usage_chunk_json(const ResponseMeta& meta, const ResponseUsage& usage) {
  return json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"choices", json::array()},
              {"usage", usage_json(usage)}};
}

}  // namespace gs::server
