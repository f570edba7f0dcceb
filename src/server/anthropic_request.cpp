// Anthropic Messages request bodies to the chat route's typed request, validated.
#include "server/anthropic_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/anthropic_output.h"
#include "server/foreign_fields.h"
#include "server/json_input.h"
#include "server/tag_fields.h"
#include "server/tool_grammars.h"
#include "text/chat_values.h"
#include "text/json_grammar.h"

namespace gs::server {

namespace {

using nlohmann::json;

constexpr int64_t kMaxTokensLimit = std::numeric_limits<int32_t>::max();

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// A required string field; "" is refused when `non_empty`.
Status read_required_string(const json& obj, const std::string& path, const char* key, bool non_empty,
                            std::string* out) {
  std::optional<std::string> s;
  GS_RETURN_IF_ERROR(read_string(obj, path, key, &s));
  if (!s) return invalid(fmt::format("{} is required", field_name(path, key)));
  if (non_empty && s->empty()) return invalid(fmt::format("{} must not be empty", field_name(path, key)));
  *out = std::move(*s);
  return {};
}

// The block's "type", required.
Status block_type(const json& block, const std::string& path, std::string* type) {
  if (!block.is_object()) return invalid(fmt::format("{} must be a content block (an object), got {}", path, json_type_name(block)));
  return read_required_string(block, path, "type", /*non_empty=*/false, type);
}

Status refuse_media(const std::string& path, const std::string& type) {
  return invalid(fmt::format("{}: {} blocks are not supported (this server reads text only)", path, type));
}

// The text of a text block.
Status read_text_block(const json& block, const std::string& path, text::ContentPart* part) {
  part->type = text::ContentPartType::kText;
  return read_required_string(block, path, "text", /*non_empty=*/false, &part->text);
}

// Content that may hold only text: a string, or an array of text blocks (system, a
// tool_result's content). Images and documents are refused by name, other blocks by type.
Status read_text_content(const json& content, const std::string& path, text::ChatMessage* m) {
  if (content.is_string()) {
    m->content = content.get<std::string>();
    return {};
  }
  if (!content.is_array()) {
    return invalid(fmt::format("{} must be a string or an array of text blocks, got {}", path, json_type_name(content)));
  }
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string bpath = fmt::format("{}[{}]", path, k);
    std::string type;
    GS_RETURN_IF_ERROR(block_type(content[k], bpath, &type));
    if (type == "image" || type == "document") return refuse_media(bpath, type);
    if (type != "text") return invalid(fmt::format("{}.type must be 'text', got '{}'", bpath, type));
    text::ContentPart part;
    GS_RETURN_IF_ERROR(read_text_block(content[k], bpath, &part));
    m->content_parts.push_back(std::move(part));
  }
  return {};
}

bool has_content(const text::ChatMessage& m) { return !m.content.empty() || !m.content_parts.empty(); }

Status read_system(const json& body, std::vector<text::ChatMessage>* out) {
  const auto it = body.find("system");
  if (it == body.end() || it->is_null()) return {};
  text::ChatMessage m;
  m.role = text::ChatRole::kSystem;
  GS_RETURN_IF_ERROR(read_text_content(*it, "system", &m));
  if (has_content(m)) out->push_back(std::move(m));
  return {};
}

// The calls of the assistant message just before a user message, by id, and the ids its
// tool_result blocks answered so far: hashed, so that a turn of thousands of calls and results
// costs linear time (a scan per block made a 2 MB body of 20000 pairs take 8 s of CPU).
struct CallsBefore {
  const text::ChatMessage* prev = nullptr;  // null when there is none
  std::string prev_path;
  std::unordered_map<std::string_view, const text::ChatToolCall*> by_id;
  std::unordered_set<std::string> answered;

  CallsBefore(const text::ChatMessage* p, std::string path) : prev(p), prev_path(std::move(path)) {
    if (prev == nullptr) return;
    by_id.reserve(prev->tool_calls.size());
    for (const auto& c : prev->tool_calls) by_id.emplace(c.id, &c);
  }
};

// One tool_result block of a user message: a tool message answering a call of the assistant
// message just before (calls->prev).
Status read_tool_result(const json& block, const std::string& path, CallsBefore* calls,
                        std::vector<text::ChatMessage>* results) {
  text::ChatMessage m;
  m.role = text::ChatRole::kTool;
  GS_RETURN_IF_ERROR(read_required_string(block, path, "tool_use_id", /*non_empty=*/true, &m.tool_call_id));
  if (calls->prev == nullptr || calls->prev->tool_calls.empty()) {
    // path is "messages[i].content[j]"; with no message before it, name the message it is in.
    const std::string where = calls->prev_path.empty()
                                  ? fmt::format("no message comes before {}", path.substr(0, path.find('.')))
                                  : fmt::format("{} holds none", calls->prev_path);
    return invalid(fmt::format("{}: a tool_result must answer a tool_use block of the assistant message just before "
                               "it, and {}",
                               path, where));
  }
  const auto call = calls->by_id.find(m.tool_call_id);
  if (call == calls->by_id.end()) {
    return invalid(
        fmt::format("{}.tool_use_id '{}' matches no tool_use block of {}", path, m.tool_call_id, calls->prev_path));
  }
  if (!calls->answered.insert(m.tool_call_id).second) {
    return invalid(fmt::format("{}.tool_use_id '{}' is answered twice in this message", path, m.tool_call_id));
  }
  m.name = call->second->name;
  std::optional<bool> is_error;
  GS_RETURN_IF_ERROR(read_bool(block, path, "is_error", &is_error));  // checked, not rendered
  const auto content = block.find("content");
  if (content != block.end() && !content->is_null()) {
    GS_RETURN_IF_ERROR(read_text_content(*content, path + ".content", &m));
  }
  results->push_back(std::move(m));
  return {};
}

// A user message: its tool_result blocks as tool messages (first, as the chat format wants
// them right after the calls), then its text as one user message.
Status read_user_message(const json& content, const std::string& path, CallsBefore* calls,
                         std::vector<text::ChatMessage>* out) {
  text::ChatMessage user;
  user.role = text::ChatRole::kUser;
  if (content.is_string()) {
    if (content.get_ref<const std::string&>().empty()) return invalid(fmt::format("{} must not be empty", path));
    user.content = content.get<std::string>();
    out->push_back(std::move(user));
    return {};
  }
  if (!content.is_array()) {
    return invalid(fmt::format("{} must be a string or an array of content blocks, got {}", path, json_type_name(content)));
  }
  if (content.empty()) return invalid(fmt::format("{} must not be empty", path));
  std::vector<text::ChatMessage> results;
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string bpath = fmt::format("{}[{}]", path, k);
    const json& block = content[k];
    std::string type;
    GS_RETURN_IF_ERROR(block_type(block, bpath, &type));
    if (type == "text") {
      text::ContentPart part;
      GS_RETURN_IF_ERROR(read_text_block(block, bpath, &part));
      user.content_parts.push_back(std::move(part));
    } else if (type == "tool_result") {
      GS_RETURN_IF_ERROR(read_tool_result(block, bpath, calls, &results));
    } else if (type == "image" || type == "document") {
      return refuse_media(bpath, type);
    } else {
      return invalid(fmt::format("{}.type '{}' is not a block this server reads in a user message (text, tool_result)",
                                 bpath, type));
    }
  }
  for (auto& r : results) out->push_back(std::move(r));
  if (!user.content_parts.empty()) out->push_back(std::move(user));
  return {};
}

// An assistant message: text, its reasoning (thinking blocks) and its calls (tool_use).
Status read_assistant_message(const json& content, const std::string& path, bool last, text::ChatMessage* out) {
  out->role = text::ChatRole::kAssistant;
  std::unordered_set<std::string> ids;  // of the tool_use blocks so far
  const bool empty = (content.is_string() && content.get_ref<const std::string&>().empty()) ||
                     (content.is_array() && content.empty());
  if (empty && !last) {
    return invalid(fmt::format("{} must not be empty (only a final assistant message, a prefill, may be)", path));
  }
  if (content.is_string()) {
    out->content = content.get<std::string>();
    return {};
  }
  if (!content.is_array()) {
    return invalid(fmt::format("{} must be a string or an array of content blocks, got {}", path, json_type_name(content)));
  }
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string bpath = fmt::format("{}[{}]", path, k);
    const json& block = content[k];
    std::string type;
    GS_RETURN_IF_ERROR(block_type(block, bpath, &type));
    if (type == "text") {
      text::ContentPart part;
      GS_RETURN_IF_ERROR(read_text_block(block, bpath, &part));
      out->content_parts.push_back(std::move(part));
    } else if (type == "thinking") {
      std::string thinking;
      GS_RETURN_IF_ERROR(read_required_string(block, bpath, "thinking", /*non_empty=*/false, &thinking));
      if (thinking.empty()) continue;
      if (!out->reasoning_content.empty()) out->reasoning_content += "\n\n";
      out->reasoning_content += thinking;
    } else if (type == "redacted_thinking") {
      continue;  // encrypted reasoning of another model: nothing this one can read
    } else if (type == "tool_use") {
      text::ChatToolCall call;
      GS_RETURN_IF_ERROR(read_required_string(block, bpath, "id", /*non_empty=*/true, &call.id));
      GS_RETURN_IF_ERROR(read_required_string(block, bpath, "name", /*non_empty=*/true, &call.name));
      if (!ids.insert(call.id).second) {
        return invalid(fmt::format("{}.id '{}' is the id of another tool_use block", bpath, call.id));
      }
      const auto input = block.find("input");
      if (input == block.end() || input->is_null()) {
        call.arguments_json = "{}";
      } else if (!input->is_object()) {
        return invalid(fmt::format("{}.input must be an object, got {}", bpath, json_type_name(*input)));
      } else {
        // As text the renderer reads as OpenAI's arguments string: an integer beyond 64 bits
        // (kept by keep_exact_tool_integers) prints its digits, not the double nlohmann read.
        call.arguments_json = text::chat::dump_json_exact(*input);
      }
      out->tool_calls.push_back(std::move(call));
    } else if (type == "image" || type == "document") {
      return refuse_media(bpath, type);
    } else {
      return invalid(fmt::format(
          "{}.type '{}' is not a block this server reads in an assistant message (text, thinking, redacted_thinking, "
          "tool_use)",
          bpath, type));
    }
  }
  return {};
}

Status read_messages(const json& body, std::vector<text::ChatMessage>* out) {
  const auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return invalid("messages is required");
  if (!it->is_array()) return invalid(fmt::format("messages must be an array, got {}", json_type_name(*it)));
  if (it->empty()) return invalid("messages must contain at least one message");
  // The index in *out of the previous message when it is an assistant's, else kNone.
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t prev_assistant = kNone;
  // As Anthropic's API: each tool_use of an assistant message is answered by a tool_result in
  // the next message (the turn after it would render a call without its result). Reported
  // after the other checks, which name the block at fault more precisely.
  std::optional<Status> unanswered;
  auto check_answered = [&](size_t assistant_index, const CallsBefore* calls) {
    if (unanswered || prev_assistant == kNone) return;
    std::vector<std::string_view> missing;
    for (const auto& c : (*out)[prev_assistant].tool_calls) {
      if (calls == nullptr || !calls->answered.contains(c.id)) missing.push_back(c.id);
    }
    if (missing.empty()) return;
    unanswered = invalid(fmt::format("messages[{}]: tool_use ids were found without tool_result blocks in the next "
                                     "message: {}; each tool_use block must have its tool_result in the user message "
                                     "that follows",
                                     assistant_index, fmt::join(missing, ", ")));
  };
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string path = fmt::format("messages[{}]", i);
    if (!m.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(m)));
    std::string role;
    GS_RETURN_IF_ERROR(read_required_string(m, path, "role", /*non_empty=*/false, &role));
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) return invalid(fmt::format("{}.content is required", path));
    if (role == "user") {
      const text::ChatMessage* prev = prev_assistant == kNone ? nullptr : &(*out)[prev_assistant];
      CallsBefore calls(prev, i == 0 ? std::string() : fmt::format("messages[{}]", i - 1));
      GS_RETURN_IF_ERROR(read_user_message(*content, path + ".content", &calls, out));
      check_answered(i - 1, &calls);
      prev_assistant = kNone;
    } else if (role == "assistant") {
      check_answered(i - 1, nullptr);
      text::ChatMessage a;
      GS_RETURN_IF_ERROR(read_assistant_message(*content, path + ".content", i + 1 == it->size(), &a));
      out->push_back(std::move(a));
      prev_assistant = out->size() - 1;
    } else {
      return invalid(fmt::format(
          "{}.role must be 'user' or 'assistant' (a system prompt is the top-level system field), got '{}'", path, role));
    }
  }
  // A final assistant message's calls are left as they are: nothing follows them yet.
  if (unanswered) return *unanswered;
  return {};
}

Status read_tools(const json& body, std::vector<text::ChatTool>* out) {
  const auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_array()) return invalid(fmt::format("tools must be an array, got {}", json_type_name(*it)));
  if (it->size() > kMaxTools) return invalid(fmt::format("tools may list at most {} tools", kMaxTools));
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string path = fmt::format("tools[{}]", i);
    if (!t.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(t)));
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(t, path, "type", &type));
    if (type && *type == "function") {
      return invalid(fmt::format("{}.type 'function' is the chat completions form of a tool; on this route a tool is "
                                 "Anthropic's: name, description and input_schema",
                                 path));
    }
    if (type && *type != "custom") {
      return invalid(fmt::format("{}.type '{}' is one of Anthropic's server tools, which this server does not run; "
                                 "declare a client tool with name, description and input_schema",
                                 path, *type));
    }
    text::ChatTool tool;
    GS_RETURN_IF_ERROR(read_required_string(t, path, "name", /*non_empty=*/false, &tool.name));
    if (!valid_function_name(tool.name)) {
      return invalid(fmt::format("{}.name '{}' must be 1-128 characters of a-z, A-Z, 0-9, _, - and .", path, tool.name));
    }
    for (const auto& other : *out) {
      if (other.name == tool.name) return invalid(fmt::format("{}.name '{}' is declared twice", path, tool.name));
    }
    std::optional<std::string> description;
    GS_RETURN_IF_ERROR(read_string(t, path, "description", &description));
    tool.description = description.value_or("");
    const auto schema = t.find("input_schema");
    if (schema == t.end() || schema->is_null()) return invalid(fmt::format("{}.input_schema is required", path));
    if (!schema->is_object()) {
      return invalid(fmt::format("{}.input_schema must be a JSON Schema object, got {}", path, json_type_name(*schema)));
    }
    // A tool's input is an object (Anthropic's API requires type "object"); a schema of
    // another type could only be followed by dropping it (a forced call then wrote an object
    // with a made-up key). Without "type" the object is implied, as other servers read it.
    if (const auto schema_type = schema->find("type"); schema_type != schema->end() && *schema_type != "object") {
      return invalid(fmt::format("{}.input_schema.type must be 'object' (a tool's input is an object), got {}", path,
                                 schema_type->dump(-1, ' ', false, json::error_handler_t::replace)));
    }
    tool.parameters = *schema;
    out->push_back(std::move(tool));
  }
  return {};
}

Status read_tool_choice(const json& body, ChatCompletionRequest* req) {
  req->tool_choice = req->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  const auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid(fmt::format("tool_choice must be an object, got {}", json_type_name(*it)));
  std::string type;
  GS_RETURN_IF_ERROR(read_required_string(*it, "tool_choice", "type", /*non_empty=*/false, &type));
  std::optional<bool> no_parallel;
  GS_RETURN_IF_ERROR(read_bool(*it, "tool_choice", "disable_parallel_tool_use", &no_parallel));
  req->parallel_tool_calls = !no_parallel.value_or(false);
  if (type == "auto") return {};
  if (type == "none") {
    req->tool_choice = ToolChoice::kNone;
    return {};
  }
  if (type != "any" && type != "tool") {
    return invalid(fmt::format("tool_choice.type must be 'auto', 'any', 'tool' or 'none', got '{}'", type));
  }
  if (req->tools.empty()) return invalid(fmt::format("tool_choice '{}' asks for a tool call but tools is empty", type));
  if (type == "any") {
    req->tool_choice = ToolChoice::kRequired;
  } else {
    GS_RETURN_IF_ERROR(read_required_string(*it, "tool_choice", "name", /*non_empty=*/true, &req->tool_choice_name));
    bool found = false;
    for (const auto& t : req->tools) found = found || t.name == req->tool_choice_name;
    if (!found) return invalid(fmt::format("tool_choice.name '{}' is not a tool in tools", req->tool_choice_name));
    req->tool_choice = ToolChoice::kNamed;
  }
  // A call forced to one tool follows its input_schema (decision 0027): one whose references
  // resolve to nothing, or whose keywords leave no value, is broken, not merely unsupported.
  const std::optional<size_t> forced = forced_tool(*req);
  if (forced && req->tools[*forced].parameters.is_object()) {
    return check_forced_tool_schema(req->tools[*forced].parameters, fmt::format("tools[{}].input_schema", *forced));
  }
  return {};
}

// Anthropic's MCP connector (mcp_servers): the API connects to those servers and runs their
// tools itself. This server does not, and answering without the tools the client gave would
// be silently wrong, so a non-empty list is refused by name, as server tools are (an empty
// one asks for nothing).
Status check_mcp_servers(const json& body) {
  const auto it = body.find("mcp_servers");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_array()) return invalid(fmt::format("mcp_servers must be an array, got {}", json_type_name(*it)));
  if (it->empty()) return {};
  return invalid("mcp_servers: remote MCP servers are not run by this server; declare their tools in tools (name, "
                 "description and input_schema) and run them in the client");
}

// The least thinking.budget_tokens Anthropic's API accepts.
constexpr int64_t kMinThinkingBudget = 1024;

// `budget` (out): thinking.budget_tokens as sent, unset when none was.
Status read_thinking(const json& body, const RequestDefaults& defaults, ChatCompletionRequest* req,
                     std::optional<int64_t>* budget) {
  req->enable_thinking = defaults.enable_thinking;
  req->reasoning_budget = defaults.reasoning_budget;
  const auto it = body.find("thinking");
  if (it != body.end() && !it->is_null()) {
    if (!it->is_object()) return invalid(fmt::format("thinking must be an object, got {}", json_type_name(*it)));
    std::string type;
    GS_RETURN_IF_ERROR(read_required_string(*it, "thinking", "type", /*non_empty=*/false, &type));
    if (type == "enabled" || type == "adaptive") {
      req->enable_thinking = true;
      // Anthropic's API refuses a budget under 1024 tokens (on count_tokens too); 1..1023 were
      // accepted here, so a request that Anthropic refuses ran.
      GS_RETURN_IF_ERROR(read_int(*it, "thinking", "budget_tokens", kMinThinkingBudget, kMaxTokensLimit, budget));
      // Anthropic's API requires the budget with "enabled" (on count_tokens too; decision 0053);
      // "adaptive" leaves it to the model (a budget sent with it is read all the same, decision
      // 0050). Without one, "enabled" ran under the server's --reasoning-budget.
      if (type == "enabled" && !*budget) {
        return invalid("thinking.budget_tokens is required when thinking.type is 'enabled' (at least 1024 and less "
                       "than max_tokens); send thinking.type 'adaptive' to think without a budget");
      }
      if (*budget) {
        req->reasoning_budget = static_cast<int32_t>(**budget);
      } else if (req->reasoning_budget == 0) {
        // "adaptive" without a budget under the server's --reasoning-budget 0, a default ("no
        // thinking") that yields to a request asking for thinking, as on the chat route.
        req->reasoning_budget = -1;
      }
    } else if (type == "disabled") {
      // Nothing else is read: a budget_tokens beside "disabled" is not looked at (decision 0053).
      req->enable_thinking = false;
    } else {
      return invalid(fmt::format("thinking.type must be 'enabled', 'adaptive' or 'disabled', got '{}'", type));
    }
  }
  // A budget of 0 (the server's --reasoning-budget 0) means no thinking, as on the chat route.
  if (req->reasoning_budget == 0) req->enable_thinking = false;
  return {};
}

// max_tokens (required, as Anthropic's API has it), sampling, stop sequences, streaming.
Status read_generation(const json& body, const RequestDefaults& defaults, GenerationOptions* gen) {
  gen->sampling = defaults.sampling;
  std::optional<int64_t> i;
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_int(body, "", "max_tokens", 1, kMaxTokensLimit, &i));
  if (!i) return invalid("max_tokens is required");
  gen->max_tokens = static_cast<int32_t>(*i);
  // Anthropic's temperature range is [0, 1]; the chat route's wider one is accepted too.
  GS_RETURN_IF_ERROR(read_sampling(body, defaults, &gen->sampling, TopKOff::kZero));  // Anthropic's top_k >= 0
  GS_RETURN_IF_ERROR(read_stop_strings(body, "stop_sequences", /*one_string=*/false, &gen->stop));
  GS_RETURN_IF_ERROR(read_bool(body, "", "stream", &b));
  gen->stream = b.value_or(false);
  // llama-server's, read on its Anthropic route too: false computes the whole prompt.
  GS_RETURN_IF_ERROR(read_bool(body, "", "cache_prompt", &b));
  gen->cache_prompt = b.value_or(true);
  return {};
}

}  // namespace

Result<ChatCompletionRequest> parse_messages_request(const json& body, const RequestDefaults& defaults,
                                                     MessagesRoute route, text::JsonGrammarCache* grammar_cache) {
  ChatCompletionRequest req;
  req.chat_template = defaults.chat_template;
  // Chat completion fields this route does not read are refused, not dropped (foreign_fields.h).
  constexpr std::string_view kReadHere[] = {"model", "messages", "tools", "tool_choice", "max_tokens",
                                            "temperature", "top_p", "top_k", "stream", "metadata",
                                            "cache_prompt"};
  constexpr FieldRename kRenames[] = {{"stop", "stop_sequences"},
                                      {"max_completion_tokens", "max_tokens"},
                                      {"n_predict", "max_tokens"},
                                      {"reasoning_effort", "thinking"},
                                      {"chat_template_kwargs", "thinking"},
                                      {"reasoning_budget_tokens", "thinking.budget_tokens"},
                                      {"thinking_budget_tokens", "thinking.budget_tokens"},
                                      {"response_format", "output_config.format"},
                                      {"json_schema", "output_config.format"},
                                      {"guided_json", "output_config.format"},
                                      {"structured_outputs", "output_config.format"},
                                      {"functions", "tools"},
                                      {"function_call", "tool_choice"},
                                      {"user", "metadata.user_id"}};
  GS_RETURN_IF_ERROR(check_unread_chat_fields(body, "/v1/messages", kReadHere, kRenames));
  GS_RETURN_IF_ERROR(check_anthropic_metadata(body));
  GS_RETURN_IF_ERROR(check_anthropic_service_tier(body));
  GS_RETURN_IF_ERROR(check_other_routes_fields(body, ApiRoute::kMessages));
  std::optional<std::string> model;
  GS_RETURN_IF_ERROR(read_string(body, "", "model", &model));
  req.model = model.value_or("");
  GS_RETURN_IF_ERROR(read_system(body, &req.messages));
  GS_RETURN_IF_ERROR(read_messages(body, &req.messages));
  GS_RETURN_IF_ERROR(read_tools(body, &req.tools));
  GS_RETURN_IF_ERROR(check_mcp_servers(body));
  GS_RETURN_IF_ERROR(read_tool_choice(body, &req));
  std::optional<int64_t> budget;
  GS_RETURN_IF_ERROR(read_thinking(body, defaults, &req, &budget));
  GS_RETURN_IF_ERROR(read_anthropic_output(body, grammar_cache, &req.gen));
  if (route == MessagesRoute::kCreate) {
    GS_RETURN_IF_ERROR(read_generation(body, defaults, &req.gen));
    // As Anthropic's API: the thinking budget is part of max_tokens, so it must leave room for
    // the answer (a budget at or above the limit could spend it all on the thought).
    if (budget && req.gen.max_tokens && *budget >= *req.gen.max_tokens) {
      return invalid(fmt::format("thinking.budget_tokens ({}) must be less than max_tokens ({})", *budget,
                                 *req.gen.max_tokens));
    }
  }
  return req;
}

}  // namespace gs::server
