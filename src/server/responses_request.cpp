// Translation of OpenAI Responses API bodies into chat completion requests (decision 0032).
#include "server/responses_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "server/foreign_fields.h"
#include "server/json_input.h"
#include "server/openai_format.h"
#include "server/tag_fields.h"

namespace gs::server {

namespace {

using nlohmann::json;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// Fields that ask the server to remember or look up earlier responses: there is nothing to
// look up (stateless), so they are refused rather than ignored (the model would answer
// without the context the client meant to give).
Status check_stateless(const json& body) {
  if (present(body, "previous_response_id")) {
    return invalid("previous_response_id: responses are not stored by this server (store is accepted but nothing "
                   "is kept); send the whole conversation in input");
  }
  if (present(body, "conversation")) {
    return invalid("conversation: conversations are not stored by this server; send the whole conversation in input");
  }
  if (present(body, "prompt")) return invalid("prompt: stored prompt templates are not supported by this server");
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "background", &b));
  if (b.value_or(false)) {
    return invalid("background: background responses are not supported (nothing is stored); send stream or wait");
  }
  GS_RETURN_IF_ERROR(read_bool(body, "", "store", &b));
  return {};
}

// Fields taken and not used (include, truncation, user, metadata, service_tier,
// prompt_cache_key, safety_identifier, text.verbosity, reasoning.summary) still have
// their types checked; asking for token log-probabilities, which this route does not return, is a 400
// rather than an empty `logprobs` array.
Status check_unused_fields(const json& body) {
  constexpr const char* kLogprobs = "message.output_text.logprobs";
  std::optional<int64_t> n;
  GS_RETURN_IF_ERROR(read_int(body, "", "top_logprobs", 0, 20, &n));
  if (n.value_or(0) > 0) {
    return invalid("top_logprobs: token log-probabilities are not returned on /v1/responses "
                   "(/v1/chat/completions returns them)");
  }
  if (const auto it = body.find("include"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid(fmt::format("include must be an array of strings, got {}", json_type_name(*it)));
    for (size_t k = 0; k < it->size(); ++k) {
      const json& v = (*it)[k];
      if (!v.is_string()) return invalid(fmt::format("include[{}] must be a string, got {}", k, json_type_name(v)));
      if (v.get<std::string>() == kLogprobs) {
        return invalid(fmt::format("include[{}]: {} is not returned on /v1/responses (/v1/chat/completions returns "
                                   "token log-probabilities)",
                                   k, kLogprobs));
      }
    }
  }
  GS_RETURN_IF_ERROR(check_openai_user(body));
  GS_RETURN_IF_ERROR(check_openai_metadata(body));
  GS_RETURN_IF_ERROR(check_openai_tags(body));
  GS_RETURN_IF_ERROR(check_responses_hints(body));
  std::optional<std::string> truncation;
  GS_RETURN_IF_ERROR(read_string(body, "", "truncation", &truncation));
  if (truncation && *truncation != "auto" && *truncation != "disabled") {
    return invalid(fmt::format("truncation must be \"auto\" or \"disabled\", got \"{}\"", *truncation));
  }
  return {};
}

// The text of a message item's content: a string, or parts of text (input_text, output_text,
// text, refusal) joined as written.
Status content_text(const json& content, const std::string& path, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return {};
  }
  if (!content.is_array()) {
    return invalid(fmt::format("{} must be a string or an array of content parts, got {}", path, json_type_name(content)));
  }
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string ppath = fmt::format("{}[{}]", path, k);
    if (!part.is_object()) return invalid(fmt::format("{} must be an object, got {}", ppath, json_type_name(part)));
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(part, ppath, "type", &type));
    if (!type) return invalid(fmt::format("{}.type is required", ppath));
    const char* key = nullptr;
    if (*type == "input_text" || *type == "output_text" || *type == "text") key = "text";
    if (*type == "refusal") key = "refusal";
    if (*type == "input_image" || *type == "input_file" || *type == "input_audio") {
      return invalid(fmt::format("{}.type: {} parts are not supported (this server reads text only)", ppath, *type));
    }
    if (!key) {
      return invalid(fmt::format("{}.type must be input_text, output_text or refusal, got '{}'", ppath, *type));
    }
    std::optional<std::string> text;
    GS_RETURN_IF_ERROR(read_string(part, ppath, key, &text));
    if (!text) return invalid(fmt::format("{}.{} is required", ppath, key));
    *out += *text;
  }
  return {};
}

// The text of a reasoning item: its reasoning_text content, else its summary.
std::string reasoning_text(const json& item) {
  std::string out;
  for (const char* key : {"content", "summary"}) {
    const auto it = item.find(key);
    if (it == item.end() || !it->is_array()) continue;
    for (const json& part : *it) {
      if (!part.is_object()) continue;
      const auto text = part.find("text");
      if (text == part.end() || !text->is_string()) continue;
      if (!out.empty()) out += "\n\n";
      out += text->get<std::string>();
    }
    if (!out.empty()) break;
  }
  return out;
}

// Builds the chat messages of `input` in `t` (after the instructions' system message).
class InputTranslator {
 public:
  explicit InputTranslator(ResponsesTranslation* t) : t_(t), messages_(&t->chat_body["messages"]) {}

  Status add_item(const json& item, size_t i) {
    const std::string path = fmt::format("input[{}]", i);
    if (!item.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(item)));
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(item, path, "type", &type));
    if (!type) {
      if (!item.contains("role")) return invalid(fmt::format("{}.type is required", path));
      type = "message";
    }
    if (*type == "message") return add_message(item, path);
    if (*type == "function_call") return add_call(item, path);
    if (*type == "function_call_output") return add_call_output(item, path);
    if (*type == "reasoning") {
      pending_reasoning_ = reasoning_text(item);
      return {};
    }
    return invalid(fmt::format("{}.type: '{}' items are not supported (this server takes message, function_call, "
                               "function_call_output and reasoning items)", path, *type));
  }

  void add_user_text(const std::string& text) { push({{"role", "user"}, {"content", text}}, "input"); }

 private:
  void push(json message, std::string path) {
    messages_->push_back(std::move(message));
    t_->message_paths.push_back(std::move(path));
    t_->call_paths.emplace_back();
  }

  // The reasoning of the assistant turn being made: a reasoning item just before it.
  void take_reasoning(json* message) {
    if (!pending_reasoning_.empty()) (*message)["reasoning_content"] = std::move(pending_reasoning_);
    pending_reasoning_.clear();
  }

  Status add_message(const json& item, const std::string& path) {
    std::optional<std::string> role;
    GS_RETURN_IF_ERROR(read_string(item, path, "role", &role));
    if (!role) return invalid(fmt::format("{}.role is required", path));
    if (*role != "user" && *role != "system" && *role != "developer" && *role != "assistant") {
      return invalid(fmt::format("{}.role must be user, system, developer or assistant, got '{}'", path, *role));
    }
    const auto content = item.find("content");
    if (content == item.end() || content->is_null()) return invalid(fmt::format("{}.content is required", path));
    // As OpenAI's API: a message's content is a string of at least one character or at least
    // one part (an empty one rendered an empty turn).
    if (content->is_string() && content->get_ref<const std::string&>().empty()) {
      return invalid(fmt::format("{}.content must not be an empty string", path));
    }
    if (content->is_array() && content->empty()) {
      return invalid(fmt::format("{}.content must not be an empty array", path));
    }
    std::string text;
    GS_RETURN_IF_ERROR(content_text(*content, path + ".content", &text));
    json message{{"role", *role}, {"content", std::move(text)}};
    if (*role == "assistant") {
      take_reasoning(&message);
    } else {
      pending_reasoning_.clear();
    }
    push(std::move(message), path);
    return {};
  }

  Status add_call(const json& item, const std::string& path) {
    std::optional<std::string> call_id, name, arguments;
    GS_RETURN_IF_ERROR(read_string(item, path, "call_id", &call_id));
    GS_RETURN_IF_ERROR(read_string(item, path, "name", &name));
    if (!call_id || call_id->empty()) return invalid(fmt::format("{}.call_id is required", path));
    if (!name || name->empty()) return invalid(fmt::format("{}.name is required", path));
    const auto args = item.find("arguments");
    if (args != item.end() && args->is_object()) {
      arguments = dump_json(*args);
    } else {
      GS_RETURN_IF_ERROR(read_string(item, path, "arguments", &arguments));
    }
    json call{{"id", *call_id},
              {"type", "function"},
              {"function", {{"name", *name}, {"arguments", arguments.value_or("{}")}}}};
    // A call joins the assistant turn just before it (its text, or the calls before it),
    // unless that turn was answered already.
    if (messages_->empty() || messages_->back().value("role", "") != "assistant" || !pending_reasoning_.empty() ||
        outputs_.contains(messages_->size() - 1)) {
      json message{{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array()}};
      take_reasoning(&message);
      push(std::move(message), path);
    }
    json& turn = messages_->back();
    if (!turn.contains("tool_calls")) turn["tool_calls"] = json::array();
    turn["tool_calls"].push_back(std::move(call));
    if (call_turn_.emplace(*call_id, messages_->size() - 1).second) calls_.emplace_back(*call_id, path);
    t_->call_paths.back().push_back(path);
    return {};
  }

  Status add_call_output(const json& item, const std::string& path) {
    std::optional<std::string> call_id;
    GS_RETURN_IF_ERROR(read_string(item, path, "call_id", &call_id));
    if (!call_id || call_id->empty()) return invalid(fmt::format("{}.call_id is required", path));
    const auto output = item.find("output");
    if (output == item.end() || output->is_null()) return invalid(fmt::format("{}.output is required", path));
    std::string text;
    GS_RETURN_IF_ERROR(content_text(*output, path + ".output", &text));
    const auto turn = call_turn_.find(*call_id);
    if (turn == call_turn_.end()) {
      return invalid(fmt::format("{}.call_id '{}' answers no function_call item before it in input", path, *call_id));
    }
    pending_reasoning_.clear();
    // Placed right after its call's turn by finish(), whatever came between: OpenAI pairs an
    // output with its call by call_id, and Codex puts hook context (a developer message)
    // between a call and its output; the chat format wants the results right after the calls.
    answered_.insert(*call_id);
    outputs_[turn->second].push_back(
        {json{{"role", "tool"}, {"tool_call_id", *call_id}, {"content", std::move(text)}}, path});
    return {};
  }

 public:
  // The messages in their final order: each assistant turn with calls followed by the tool
  // messages of its outputs (in input order), then what came after the turn. A call without
  // an output is noted in unanswered_call: OpenAI's API refuses it, and the turn would read
  // as if the tool had answered nothing.
  void finish() {
    for (const auto& [call_id, path] : calls_) {
      if (answered_.contains(call_id)) continue;
      if (t_->unanswered_call.ok()) {
        t_->unanswered_call = invalid(fmt::format("{}.call_id: no tool output found for function call '{}' (each "
                                                  "function_call item needs a function_call_output item with its "
                                                  "call_id)",
                                                  path, call_id));
      }
      // The request is refused for it (after the chat parser's checks, which name other faults
      // of the input first); an empty output stands in meanwhile, so that the chat parser,
      // which refuses a call left unanswered too, reads the rest of it as it would otherwise.
      outputs_[call_turn_.at(call_id)].push_back(
          {json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", ""}}, path});
    }
    if (outputs_.empty()) return;
    json messages = json::array();
    std::vector<std::string> paths;
    std::vector<std::vector<std::string>> call_paths;
    for (size_t k = 0; k < messages_->size(); ++k) {
      messages.push_back(std::move((*messages_)[k]));
      paths.push_back(std::move(t_->message_paths[k]));
      call_paths.push_back(std::move(t_->call_paths[k]));
      const auto outputs = outputs_.find(k);
      if (outputs == outputs_.end()) continue;
      for (auto& [message, path] : outputs->second) {
        messages.push_back(std::move(message));
        paths.push_back(std::move(path));
        call_paths.emplace_back();
      }
    }
    *messages_ = std::move(messages);
    t_->message_paths = std::move(paths);
    t_->call_paths = std::move(call_paths);
    outputs_.clear();
  }

 private:
  ResponsesTranslation* t_;
  json* messages_;
  std::string pending_reasoning_;
  // The message index of each function_call item's assistant turn (hashed: linear time).
  std::unordered_map<std::string, size_t> call_turn_;
  // The tool messages (and their items' paths) answering the calls of messages_[k], by k.
  std::unordered_map<size_t, std::vector<std::pair<json, std::string>>> outputs_;
  std::vector<std::pair<std::string, std::string>> calls_;  // call_id and item path, in input order
  std::unordered_set<std::string> answered_;                // call_ids with an output
};

Status translate_input(const json& body, ResponsesTranslation* t) {
  t->chat_body["messages"] = json::array();
  std::optional<std::string> instructions;
  GS_RETURN_IF_ERROR(read_string(body, "", "instructions", &instructions));
  if (instructions && !instructions->empty()) {
    t->chat_body["messages"].push_back({{"role", "system"}, {"content", *instructions}});
    t->message_paths.push_back("instructions");
    t->call_paths.emplace_back();
  }
  InputTranslator tr(t);
  const auto input = body.find("input");
  if (input == body.end() || input->is_null()) return invalid("input is required");
  if (input->is_string()) {
    // As a message's content (add_message) and OpenAI's API: at least one character; an empty
    // one rendered an empty user turn.
    if (input->get_ref<const std::string&>().empty()) return invalid("input must not be an empty string");
    tr.add_user_text(input->get<std::string>());
    return {};
  }
  if (!input->is_array()) {
    return invalid(fmt::format("input must be a string or an array of items, got {}", json_type_name(*input)));
  }
  if (input->empty()) return invalid("input must not be an empty array");
  for (size_t i = 0; i < input->size(); ++i) GS_RETURN_IF_ERROR(tr.add_item((*input)[i], i));
  tr.finish();
  if (t->chat_body["messages"].empty()) return invalid("input holds no message (only reasoning items)");
  return {};
}

Status translate_tools(const json& body, json* chat) {
  const auto tools = body.find("tools");
  if (tools != body.end() && !tools->is_null()) {
    if (!tools->is_array()) return invalid(fmt::format("tools must be an array, got {}", json_type_name(*tools)));
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& tool = (*tools)[i];
      const std::string path = fmt::format("tools[{}]", i);
      if (!tool.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(tool)));
      std::optional<std::string> type;
      GS_RETURN_IF_ERROR(read_string(tool, path, "type", &type));
      if (!type) return invalid(fmt::format("{}.type is required", path));
      if (*type != "function") {
        return invalid(fmt::format("{}.type: '{}' tools are not supported (this server calls function tools only)",
                                   path, *type));
      }
      if (tool.contains("function")) {
        return invalid(fmt::format("{}.function: the Responses API's tools are flat ({{\"type\": \"function\", "
                                   "\"name\", \"parameters\"}}), not the chat form", path));
      }
    }
    (*chat)["tools"] = *tools;  // the chat parser reads the flat form too
  }
  const auto choice = body.find("tool_choice");
  if (choice == body.end() || choice->is_null()) return {};
  if (choice->is_object()) {
    std::optional<std::string> type, name;
    GS_RETURN_IF_ERROR(read_string(*choice, "tool_choice", "type", &type));
    if (!type) return invalid("tool_choice.type is required");
    if (*type != "function") {
      return invalid(fmt::format("tool_choice.type: '{}' is not supported (this server takes 'auto', 'none', "
                                 "'required' or {{\"type\": \"function\", \"name\"}})", *type));
    }
    GS_RETURN_IF_ERROR(read_string(*choice, "tool_choice", "name", &name));
    if (!name || name->empty()) return invalid("tool_choice.name is required");
    (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
    return {};
  }
  (*chat)["tool_choice"] = *choice;  // strings and wrong types: the chat parser's checks
  return {};
}

Status translate_text_format(const json& body, json* chat) {
  const auto text = body.find("text");
  if (text == body.end() || text->is_null()) return {};
  if (!text->is_object()) return invalid(fmt::format("text must be an object, got {}", json_type_name(*text)));
  const auto format = text->find("format");
  if (format == text->end() || format->is_null()) return {};
  if (!format->is_object()) return invalid(fmt::format("text.format must be an object, got {}", json_type_name(*format)));
  std::optional<std::string> type;
  GS_RETURN_IF_ERROR(read_string(*format, "text.format", "type", &type));
  if (!type) return invalid("text.format.type is required ('text', 'json_object' or 'json_schema')");
  if (*type == "text" || *type == "json_object") {
    (*chat)["response_format"] = {{"type", *type}};
    return {};
  }
  if (*type != "json_schema") {
    return invalid(fmt::format("text.format.type must be 'text', 'json_object' or 'json_schema', got '{}'", *type));
  }
  json js = json::object();
  for (const char* key : {"name", "schema", "strict", "description"}) {
    if (const auto it = format->find(key); it != format->end()) js[key] = *it;
  }
  if (!present(*format, "schema")) return invalid("text.format.schema is required (type json_schema)");
  (*chat)["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return {};
}

Status translate_reasoning(const json& body, json* chat) {
  const auto reasoning = body.find("reasoning");
  if (reasoning == body.end() || reasoning->is_null()) return {};
  if (!reasoning->is_object()) {
    return invalid(fmt::format("reasoning must be an object, got {}", json_type_name(*reasoning)));
  }
  std::optional<std::string> effort;
  GS_RETURN_IF_ERROR(read_string(*reasoning, "reasoning", "effort", &effort));
  if (effort) (*chat)["reasoning_effort"] = *effort;
  return {};
}

// OpenAI's Responses API refuses max_output_tokens below 16 ("integer below minimum value",
// param max_output_tokens); the chat route's max_tokens has no such minimum (decision 0058).
constexpr int64_t kMinOutputTokens = 16;

// max_output_tokens: an integer in [16, 2^31 - 1], or absent/null. A number below 16 (0 and
// negatives included, whole or not) is named with the minimum; the rest as read_int says.
Status check_max_output_tokens(const json& body) {
  const auto it = body.find("max_output_tokens");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_number() && it->get<double>() < static_cast<double>(kMinOutputTokens)) {
    return invalid(fmt::format("max_output_tokens is below its minimum value: expected a value >= {} (the "
                               "Responses API's minimum), got {}",
                               kMinOutputTokens, it->dump()));
  }
  std::optional<int64_t> n;
  return read_int(body, "", "max_output_tokens", kMinOutputTokens, INT32_MAX, &n);
}

// Request fields that mean the same in both APIs, passed to the chat parser as they are.
constexpr const char* kSameFields[] = {"model", "temperature", "top_p", "parallel_tool_calls", "stream", "top_k",
                                       "min_p", "seed", "presence_penalty", "frequency_penalty",
                                       "repetition_penalty", "speculative", "draft_max", "cache_prompt"};

// Chat paths renamed to Responses ones, at the start of an error message.
constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
    {"response_format.json_schema.schema", "text.format.schema"},
    {"response_format.json_schema", "text.format"},
    {"response_format", "text.format"},
    {"max_tokens", "max_output_tokens"},
    {"reasoning_effort", "reasoning.effort"},
    {"tool_choice.function.name", "tool_choice.name"},
    {"tool_choice.function", "tool_choice"},
};

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The index in "NAME[k]" at the start of `s` (s begins with "NAME["), and the length read.
std::optional<std::pair<size_t, size_t>> leading_index(std::string_view s, size_t open) {
  size_t k = open + 1;
  size_t v = 0;
  while (k < s.size() && s[k] >= '0' && s[k] <= '9' && k - open < 10) v = v * 10 + static_cast<size_t>(s[k++] - '0');
  if (k == open + 1 || k >= s.size() || s[k] != ']') return std::nullopt;
  return std::make_pair(v, k + 1);
}

// `rest` with each "tool_calls[k]" (a call of the same chat message) replaced by calls[k], the
// function_call item it came from; "the id of tool_calls[k]" reads "the call_id of input[j]".
std::string name_sibling_calls(std::string_view rest, const std::vector<std::string>& calls) {
  constexpr std::string_view kCalls = "tool_calls";
  constexpr std::string_view kIdOf = "the id of ";
  std::string out;
  size_t from = 0;
  for (size_t at = rest.find("tool_calls["); at != std::string_view::npos; at = rest.find("tool_calls[", from)) {
    const auto k = leading_index(rest.substr(at), kCalls.size());
    if (!k || k->first >= calls.size()) break;
    std::string_view before = rest.substr(from, at - from);
    if (before.ends_with(kIdOf)) {
      out.append(before.substr(0, before.size() - kIdOf.size())).append("the call_id of ");
    } else {
      out.append(before);
    }
    out.append(calls[k->first]);
    from = at + k->second;
  }
  out.append(rest.substr(from));
  return out;
}

}  // namespace

bool ResponsesTranslation::is_tool_message(size_t k) const {
  const auto messages = chat_body.find("messages");
  if (messages == chat_body.end() || !messages->is_array() || k >= messages->size()) return false;
  const json& m = (*messages)[k];
  return m.is_object() && m.value("role", "") == "tool";
}

Status ResponsesTranslation::rename_error(const Status& status) const {
  if (status.ok()) return status;
  const std::string& msg = status.message();
  std::string_view m(msg);
  std::string renamed;
  if (m.starts_with("messages must contain")) {
    renamed = "input must hold at least one message";
  } else if (m.starts_with("messages[")) {
    const auto idx = leading_index(m, std::string_view("messages").size());
    if (idx && idx->first < message_paths.size()) {
      std::string_view rest = m.substr(idx->second);
      std::string head = message_paths[idx->first];
      if (rest.starts_with(".tool_calls[")) {
        const auto call = leading_index(rest, std::string_view(".tool_calls").size());
        const auto& calls = call_paths[idx->first];
        if (call && call->first < calls.size()) {
          head = calls[call->first];
          rest = rest.substr(call->second);
          if (rest.starts_with(".function.arguments")) {
            head += ".arguments";
            rest = rest.substr(std::string_view(".function.arguments").size());
          } else if (rest.starts_with(".function.name")) {
            head += ".name";
            rest = rest.substr(std::string_view(".function.name").size());
          } else if (rest.starts_with(".id")) {
            head += ".call_id";
            rest = rest.substr(3);
          }
          // Another call of the same turn named after it ("... is also the id of
          // tool_calls[0]"): named as the item the client sent.
          renamed = head + name_sibling_calls(rest, calls);
        }
      } else if (rest.starts_with(".tool_call_id")) {
        head += ".call_id";
        rest = rest.substr(std::string_view(".tool_call_id").size());
      } else if (rest.starts_with(".content") && head.find('[') != std::string::npos &&
                 is_tool_message(idx->first)) {
        head += ".output";
        rest = rest.substr(std::string_view(".content").size());
      }
      if (renamed.empty()) renamed = head + std::string(rest);
    }
  } else if (m.starts_with("tools[")) {
    const auto idx = leading_index(m, std::string_view("tools").size());
    if (idx && m.substr(idx->second).starts_with(".function.")) {
      renamed = std::string(m.substr(0, idx->second)) + std::string(m.substr(idx->second + 9));
    }
  } else {
    for (const auto& [from, to] : kRenames) {
      if (m.starts_with(from) && (m.size() == from.size() || !is_ident_char(m[from.size()]))) {
        renamed = std::string(to) + std::string(m.substr(from.size()));
        break;
      }
    }
  }
  if (renamed.empty()) renamed = msg;
  // Later mentions of a message ("... matches no tool call of messages[2]").
  for (size_t at = renamed.find("messages[", 1); at != std::string::npos; at = renamed.find("messages[", at + 1)) {
    const auto idx = leading_index(std::string_view(renamed).substr(at), std::string_view("messages").size());
    if (!idx || idx->first >= message_paths.size()) continue;
    renamed.replace(at, idx->second, message_paths[idx->first]);
  }
  return Status(status.code(), std::move(renamed));
}

Result<ResponsesTranslation> translate_responses_request(const json& body) {
  ResponsesTranslation t;
  t.chat_body = json::object();
  GS_RETURN_IF_ERROR(check_stateless(body));
  // Chat completion fields this route does not read are refused, not dropped (foreign_fields.h).
  constexpr std::string_view kReadHere[] = {
      "model", "tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "top_k", "min_p", "seed",
      "presence_penalty", "frequency_penalty", "repetition_penalty", "speculative", "draft_max", "stream",
      "stream_options", "top_logprobs", "prompt", "user", "metadata", "cache_prompt"};
  constexpr FieldRename kRenames[] = {{"max_tokens", "max_output_tokens"},
                                      {"max_completion_tokens", "max_output_tokens"},
                                      {"n_predict", "max_output_tokens"},
                                      {"messages", "input"},
                                      {"response_format", "text.format"},
                                      {"json_schema", "text.format"},
                                      {"guided_json", "text.format"},
                                      {"structured_outputs", "text.format"},
                                      {"reasoning_effort", "reasoning.effort"},
                                      {"chat_template_kwargs", "reasoning.effort"},
                                      {"functions", "tools"},
                                      {"function_call", "tool_choice"}};
  GS_RETURN_IF_ERROR(check_unread_chat_fields(body, "/v1/responses", kReadHere, kRenames));
  GS_RETURN_IF_ERROR(check_other_routes_fields(body, ApiRoute::kResponses));
  GS_RETURN_IF_ERROR(check_unused_fields(body));
  GS_RETURN_IF_ERROR(translate_input(body, &t));
  GS_RETURN_IF_ERROR(translate_tools(body, &t.chat_body));
  GS_RETURN_IF_ERROR(translate_text_format(body, &t.chat_body));
  GS_RETURN_IF_ERROR(translate_reasoning(body, &t.chat_body));
  // Read here alone (it was read twice: checked here, then read again when the chat request
  // was made); parse_responses_request sets it on the chat request.
  GS_RETURN_IF_ERROR(check_max_output_tokens(body));
  std::optional<int64_t> max_calls;
  GS_RETURN_IF_ERROR(read_int(body, "", "max_tool_calls", 1, INT32_MAX, &max_calls));
  if (max_calls) t.max_tool_calls = static_cast<int32_t>(*max_calls);
  for (const char* key : kSameFields) {
    if (const auto it = body.find(key); it != body.end()) t.chat_body[key] = *it;
  }
  if (const auto it = body.find("max_output_tokens"); it != body.end()) t.chat_body["max_tokens"] = *it;
  // metadata, user, include, truncation, service_tier, ...: accepted, not used
  // (check_unused_fields).
  return t;
}

Result<ResponsesRequest> parse_responses_request(const json& body, const RequestDefaults& defaults,
                                                 text::JsonGrammarCache* grammar_cache) {
  ResponsesRequest req;
  GS_ASSIGN_OR_RETURN(req.translation, translate_responses_request(body));
  Result<ChatCompletionRequest> chat = parse_chat_request(req.translation.chat_body, defaults, grammar_cache);
  if (!chat.ok()) return req.translation.rename_error(chat.status());
  GS_RETURN_IF_ERROR(req.translation.unanswered_call);
  req.chat = std::move(*chat);
  // At most max_tool_calls function calls are made (read by translate_responses_request): the
  // output ends after the last one allowed (decision 0053).
  if (req.translation.max_tool_calls) req.chat.max_tool_calls = *req.translation.max_tool_calls;
  // OpenAI answers input that ends with an assistant message with a new message; continuing
  // it (the chat route's prefill) gave its text's continuation as the output.
  req.chat.continue_final_message = false;
  // The answer's reasoning items carry the thinking: the server's --reasoning-format (a chat
  // completions setting, decision 0034) does not apply.
  req.chat.reasoning_format = ReasoningFormat::kDeepseek;

  json& e = req.echo;
  auto given = [&body](const char* key, json fallback) {
    const auto it = body.find(key);
    return it == body.end() || it->is_null() ? std::move(fallback) : *it;
  };
  e["instructions"] = given("instructions", nullptr);
  e["tools"] = given("tools", json::array());
  e["tool_choice"] = given("tool_choice", "auto");
  // The sampling in force, as the float it is held in, shown with 6 digits (0.7, not 0.699999988).
  auto shown = [](float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; };
  e["temperature"] = given("temperature", shown(req.chat.gen.sampling.temperature));
  e["top_p"] = given("top_p", shown(req.chat.gen.sampling.top_p));
  e["max_output_tokens"] = given("max_output_tokens", nullptr);
  e["parallel_tool_calls"] = req.chat.parallel_tool_calls;
  e["max_tool_calls"] = given("max_tool_calls", nullptr);
  e["text"] = given("text", json{{"format", {{"type", "text"}}}});
  e["reasoning"] = given("reasoning", json{{"effort", nullptr}, {"summary", nullptr}});
  e["metadata"] = given("metadata", json::object());
  e["store"] = false;  // nothing is kept, whatever was asked
  e["truncation"] = given("truncation", "disabled");
  e["user"] = given("user", nullptr);
  e["previous_response_id"] = nullptr;
  e["background"] = false;
  return req;
}

std::string responses_error_param(std::string_view message) {
  static constexpr std::string_view kRoots[] = {
      "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
      "temperature", "top_p", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty",
      "repetition_penalty", "speculative", "draft_max", "stream", "reasoning", "text", "previous_response_id",
      "conversation", "prompt", "background", "store", "top_logprobs", "include", "truncation", "max_tool_calls",
      "user", "metadata", "service_tier", "prompt_cache_key", "prompt_cache_retention", "safety_identifier"};
  size_t i = 0;
  while (i < message.size() && is_ident_char(message[i])) ++i;
  // A chat completion field refused here (check_unread_chat_fields) is named as sent.
  const std::string_view root = message.substr(0, i);
  const auto chat_fields = chat_request_field_names();
  const auto others = other_route_field_names();
  if (i == 0 || (std::find(std::begin(kRoots), std::end(kRoots), root) == std::end(kRoots) &&
                 std::find(chat_fields.begin(), chat_fields.end(), root) == chat_fields.end() &&
                 std::find(others.begin(), others.end(), root) == others.end())) {
    return {};
  }
  while (i < message.size()) {
    if (message[i] == '[') {
      const auto idx = leading_index(message, i);
      if (!idx) break;
      i = idx->second;
    } else if (message[i] == '.' && i + 1 < message.size() && (is_ident_char(message[i + 1]) || message[i + 1] == '$')) {
      i += 2;
      while (i < message.size() && is_ident_char(message[i])) ++i;
    } else {
      break;
    }
  }
  if (i < message.size() && message[i] != ' ' && message[i] != ':' && message[i] != ',') return {};
  return std::string(message.substr(0, i));
}

}  // namespace gs::server
