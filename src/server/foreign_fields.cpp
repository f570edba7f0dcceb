// Other servers' fields that this server refuses unless they change nothing.
#include "server/foreign_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "server/api_request.h"
#include "server/json_input.h"
#include "server/tag_fields.h"

namespace gs::server {

namespace {

using nlohmann::json;

Status unsupported(const char* field, const std::string& why) {
  return Status(StatusCode::kUnimplemented, fmt::format("{} is not supported by this server: {}", field, why));
}

// A boolean field whose only accepted value is `neutral`.
Status bool_field(const json& body, const char* field, bool neutral, const char* why) {
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", field, &b));
  if (b && *b != neutral) return unsupported(field, why);
  return {};
}

template <typename... Args>
Status invalid_field(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}

// OpenAI's chat fields for output other than text: audio (modalities, audio) and a web search
// made before answering (web_search_options). Answering with text alone would pass for what
// was asked. modalities ["text"] (or null) asks for nothing more.
Status check_output_kinds(const json& body) {
  if (const auto it = body.find("modalities"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_field("modalities must be an array of strings, got {}", json_type_name(*it));
    for (size_t i = 0; i < it->size(); ++i) {
      const json& m = (*it)[i];
      if (!m.is_string()) return invalid_field("modalities[{}] must be a string, got {}", i, json_type_name(m));
      if (m.get_ref<const std::string&>() != "text") {
        return unsupported("modalities", fmt::format("it writes text only, not '{}'", m.get_ref<const std::string&>()));
      }
    }
  }
  if (present(body, "audio")) return unsupported("audio", "it writes text only (no audio output)");
  if (present(body, "web_search_options")) {
    return unsupported("web_search_options", "it does not search the web (declare a search tool in tools)");
  }
  return {};
}

// llama-server's generation options beyond sampling (its /completion fields, which its OpenAI
// routes read too) that change the answer. Each was ignored whatever its value or type.
Status check_llama_server_options(const json& body) {
  std::optional<int64_t> n;
  // A time limit on generation once a newline is out (FIM clients); 0 and -1 are "none".
  GS_RETURN_IF_ERROR(read_int(body, "", "t_max_predict_ms", -1, std::numeric_limits<int64_t>::max(), &n));
  if (n && *n > 0) return unsupported("t_max_predict_ms", "generation has no time limit here (send max_tokens)");
  // A stop once a line is indented less than this many blanks (code completion).
  GS_RETURN_IF_ERROR(read_int(body, "", "n_indent", 0, std::numeric_limits<int32_t>::max(), &n));
  if (n && *n != 0) return unsupported("n_indent", "generation never stops at a line's indentation here");
  // Its own name for several completions of the prompt.
  GS_RETURN_IF_ERROR(read_int(body, "", "n_cmpl", 1, std::numeric_limits<int32_t>::max(), &n));
  if (n && *n != 1) return unsupported("n_cmpl", "send n for several completions");
  if (const auto it = body.find("lora"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_field("lora must be an array of adapters, got {}", json_type_name(*it));
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_object()) {
        return invalid_field("lora[{}] must be an object (id, scale), got {}", i, json_type_name((*it)[i]));
      }
    }
    if (!it->empty()) return unsupported("lora", "no LoRA adapter is loaded here");
  }
  return bool_field(body, "post_sampling_probs", false,
                    "log-probabilities here are the model's own, before the sampler chain");
}

}  // namespace

Status check_foreign_fields(const json& body, bool chat) {
  GS_RETURN_IF_ERROR(bool_field(body, "include_stop_str_in_output", false,
                                "the matched stop string is never part of the output here"));
  GS_RETURN_IF_ERROR(bool_field(body, "use_beam_search", false, "it samples one sequence per choice"));
  GS_RETURN_IF_ERROR(bool_field(body, "skip_special_tokens", true,
                                "control tokens are never written into the text here"));
  GS_RETURN_IF_ERROR(bool_field(body, "return_tokens_as_token_ids", false,
                                "log-probabilities name their tokens by text and bytes"));
  GS_RETURN_IF_ERROR(bool_field(body, "return_token_ids", false,
                                "the answer carries its text, not its token ids (POST /tokenize gives a text's ids)"));
  if (const auto it = body.find("logits_processors"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) {
      return invalid_field("logits_processors must be an array of processors, got {}", json_type_name(*it));
    }
    if (!it->empty()) return unsupported("logits_processors", "no logits processor can be loaded here");
  }
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "spaces_between_special_tokens", &b));  // no special tokens in text
  std::optional<int64_t> n;
  GS_RETURN_IF_ERROR(read_int(body, "", "n_probs", 0, 1 << 20, &n));
  if (n && *n != 0) {
    return unsupported("n_probs", chat ? "send logprobs: true and top_logprobs" : "send logprobs (a count)");
  }
  if (present(body, "prompt_logprobs")) {
    return unsupported("prompt_logprobs", "the engine computes logits for the last prompt position only");
  }
  if (present(body, "truncate_prompt_tokens")) {
    return unsupported("truncate_prompt_tokens",
                       "prompts are never truncated here (one longer than the context is a 400)");
  }
  GS_RETURN_IF_ERROR(check_llama_server_options(body));
  if (!chat) return {};
  GS_RETURN_IF_ERROR(check_output_kinds(body));
  std::optional<std::string> s;
  GS_RETURN_IF_ERROR(read_string(body, "", "chat_template", &s));
  if (s && !s->empty()) {
    return unsupported("chat_template", "the prompt is rendered by the server's Gemma 4 chat format");
  }
  return bool_field(body, "echo", false, "the answer never repeats the last message");
}

namespace {

// A value of a chat field that asks for nothing beyond the chat route's defaults.
bool neutral_value(std::string_view field, const json& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) {
    const bool default_true = field == "add_generation_prompt" || field == "skip_special_tokens" ||
                              field == "spaces_between_special_tokens" || field == "speculative";
    return v.get<bool>() == default_true;
  }
  if (v.is_string()) return v.get_ref<const std::string&>().empty();  // json::empty() is false for any string
  if (v.is_array() || v.is_object()) return v.empty();
  if ((field == "n" || field == "best_of" || field == "n_cmpl") && v.is_number_integer()) return v.get<int64_t>() == 1;
  if (field == "n_indent" && v.is_number_integer()) return v.get<int64_t>() == 0;
  // No alternatives asked for.
  if (field == "top_logprobs" && v.is_number_integer()) return v.get<int64_t>() == 0;
  // llama-server's -1: no cap on the thinking, what a route without a budget gives anyway.
  if ((field == "reasoning_budget_tokens" || field == "thinking_budget_tokens") && v.is_number_integer() &&
      !v.is_number_unsigned()) {
    return v.get<int64_t>() == -1;
  }
  if (field == "t_max_predict_ms" && v.is_number_integer()) {
    return v.is_number_unsigned() ? v.get<uint64_t>() == 0 : v.get<int64_t>() >= -1 && v.get<int64_t>() <= 0;
  }
  return false;
}

}  // namespace

Status check_unread_chat_fields(const json& body, std::string_view route, std::span<const std::string_view> read_here,
                                std::span<const FieldRename> renames) {
  // The token routes' fields (content, tokens, ...) are in the list for error paths only.
  constexpr std::string_view kTokenRouteFields[] = {"content", "add_special", "parse_special", "with_pieces", "tokens"};
  const auto tags = chat_tag_field_names();  // checked where they belong; they change nothing
  for (const std::string_view field : chat_request_field_names()) {
    if (field == "reasoning_format") continue;
    if (std::find(tags.begin(), tags.end(), field) != tags.end()) continue;
    if (std::find(std::begin(kTokenRouteFields), std::end(kTokenRouteFields), field) != std::end(kTokenRouteFields)) {
      continue;
    }
    if (std::find(read_here.begin(), read_here.end(), field) != read_here.end()) continue;
    const auto it = body.find(field);
    if (it == body.end() || neutral_value(field, *it)) continue;
    const auto rename = std::find_if(renames.begin(), renames.end(), [&](const FieldRename& r) { return r.field == field; });
    if (rename != renames.end()) {
      return Status(StatusCode::kUnimplemented,
                    fmt::format("{} is not read on {}: send {}", field, route, rename->instead));
    }
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{} is a /v1/chat/completions field, not read on {}", field, route));
  }
  return {};
}

namespace {

constexpr std::string_view kChatRoute = "/v1/chat/completions";
constexpr std::string_view kCompletionsRoute = "/v1/completions";
constexpr std::string_view kMessagesRoute = "/v1/messages";
constexpr std::string_view kResponsesRoute = "/v1/responses";

// A field of `owner` and what to send instead on each route (indexed by ApiRoute); nullptr
// where that route reads the field itself, "" where it has nothing in its place.
struct OtherRouteField {
  std::string_view field;
  std::string_view owner;
  std::array<const char*, 4> instead;  // chat, completions, messages, responses
};

constexpr OtherRouteField kOtherRouteFields[] = {
    // /v1/completions
    {"prompt", kCompletionsRoute, {"messages", nullptr, nullptr, nullptr}},
    {"suffix", kCompletionsRoute, {"", nullptr, nullptr, nullptr}},
    // The chat route (the translated routes refuse these through check_unread_chat_fields).
    {"messages", kChatRoute, {nullptr, "prompt", nullptr, nullptr}},
    {"tools", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"tool_choice", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"functions", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"function_call", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"reasoning_effort", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"chat_template_kwargs", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"reasoning_budget_tokens", kChatRoute, {nullptr, "", nullptr, nullptr}},
    {"thinking_budget_tokens", kChatRoute, {nullptr, "", nullptr, nullptr}},
    // Alternatives a token: a count in /v1/completions' own logprobs (the Messages route refuses
    // it through check_unread_chat_fields, the Responses route by its own reader).
    {"top_logprobs", kChatRoute, {nullptr, "logprobs (the number of alternatives a token)", nullptr, nullptr}},
    // /v1/messages
    {"system", kMessagesRoute, {"a system message in messages", "it in prompt", nullptr, "instructions"}},
    {"stop_sequences", kMessagesRoute, {"stop", "stop", nullptr, ""}},
    {"output_config", kMessagesRoute, {"response_format (reasoning_effort for effort)", "response_format", nullptr,
                                       "text.format (reasoning.effort for effort)"}},
    {"output_format", kMessagesRoute, {"response_format", "response_format", nullptr, "text.format"}},
    {"thinking",
     kMessagesRoute,
     {"reasoning_effort or chat_template_kwargs.enable_thinking (reasoning_budget_tokens for a budget)", "", nullptr,
      "reasoning.effort"}},
    // /v1/responses
    {"input", kResponsesRoute, {"messages", "prompt", "messages", nullptr}},
    {"instructions", kResponsesRoute, {"a system message in messages", "it in prompt", "system", nullptr}},
    {"max_output_tokens", kResponsesRoute, {"max_tokens", "max_tokens", "max_tokens", nullptr}},
    {"text", kResponsesRoute, {"response_format", "response_format", "", nullptr}},
    {"reasoning", kResponsesRoute, {"reasoning_effort", "", "thinking", nullptr}},
    {"previous_response_id",
     kResponsesRoute,
     {"the whole conversation in messages", "", "the whole conversation in messages", nullptr}},
};

constexpr std::array<std::string_view, std::size(kOtherRouteFields)> other_field_names() {
  std::array<std::string_view, std::size(kOtherRouteFields)> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kOtherRouteFields[i].field;
  return out;
}

constexpr auto kOtherRouteFieldNames = other_field_names();

std::string_view route_path(ApiRoute route) {
  switch (route) {
    case ApiRoute::kChat: return kChatRoute;
    case ApiRoute::kCompletions: return kCompletionsRoute;
    case ApiRoute::kMessages: return kMessagesRoute;
    case ApiRoute::kResponses: return kResponsesRoute;
  }
  return kChatRoute;
}

}  // namespace

std::span<const std::string_view> other_route_field_names() { return kOtherRouteFieldNames; }

Status check_other_routes_fields(const json& body, ApiRoute route, std::string_view shown_route) {
  for (const OtherRouteField& f : kOtherRouteFields) {
    const char* instead = f.instead[static_cast<size_t>(route)];
    if (instead == nullptr) continue;  // this route reads it
    const auto it = body.find(f.field);
    if (it == body.end() || neutral_value(f.field, *it)) continue;
    if ((f.field == "tool_choice" || f.field == "function_call") && it->is_string() &&
        (it->get_ref<const std::string&>() == "none" || it->get_ref<const std::string&>() == "auto")) {
      continue;  // without tools, what there is anyway
    }
    std::string message = fmt::format("{} is a {} field, not read on {}", f.field, f.owner,
                                      shown_route.empty() ? route_path(route) : shown_route);
    if (*instead != '\0') message += fmt::format(": send {}", instead);
    return Status(StatusCode::kUnimplemented, std::move(message));
  }
  return {};
}

}  // namespace gs::server
