// Parsing and validation of OpenAI chat and text completion requests.
#include "server/api_request.h"

#include <fmt/format.h>

#include <limits>

#include "server/json_input.h"

namespace gs::server {

namespace {

using nlohmann::json;

constexpr int64_t kMaxTokensLimit = std::numeric_limits<int32_t>::max();
constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxTools = 512;

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// OpenAI content: a string, or an array of parts ({"type":"text","text":...}). Only text
// parts are accepted: this server has no image or audio encoder.
Status read_content(const json& msg, const std::string& path, bool required, text::ChatMessage* out) {
  auto it = msg.find("content");
  if (it == msg.end() || it->is_null()) {
    if (required) return invalid(fmt::format("{}.content is required", path));
    return {};
  }
  if (it->is_string()) {
    out->content = it->get<std::string>();
    return {};
  }
  if (!it->is_array()) {
    return invalid(fmt::format("{}.content must be a string or an array of content parts, got {}", path,
                               json_type_name(*it)));
  }
  std::string joined;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& part = (*it)[i];
    const std::string ppath = fmt::format("{}.content[{}]", path, i);
    if (part.is_string()) {  // lenient: a bare string part
      joined += part.get<std::string>();
      continue;
    }
    if (!part.is_object()) return invalid(fmt::format("{} must be an object, got {}", ppath, json_type_name(part)));
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(part, ppath, "type", &type));
    if (!type) return invalid(fmt::format("{}.type is required", ppath));
    if (*type == "text" || *type == "input_text") {
      std::optional<std::string> t;
      GS_RETURN_IF_ERROR(read_string(part, ppath, "text", &t));
      if (!t) return invalid(fmt::format("{}.text is required", ppath));
      joined += *t;
    } else if (*type == "image_url" || *type == "input_image" || *type == "input_audio" || *type == "file") {
      return invalid(fmt::format("{}: content parts of type '{}' are not supported (this server reads text only)",
                                 ppath, *type));
    } else {
      return invalid(fmt::format("{}.type: unknown content part type '{}'", ppath, *type));
    }
  }
  out->content = std::move(joined);
  return {};
}

Status read_tool_calls(const json& msg, const std::string& path, text::ChatMessage* out) {
  auto it = msg.find("tool_calls");
  if (it == msg.end() || it->is_null()) return {};
  if (!it->is_array()) return invalid(fmt::format("{}.tool_calls must be an array, got {}", path, json_type_name(*it)));
  for (size_t i = 0; i < it->size(); ++i) {
    const json& tc = (*it)[i];
    const std::string tpath = fmt::format("{}.tool_calls[{}]", path, i);
    if (!tc.is_object()) return invalid(fmt::format("{} must be an object, got {}", tpath, json_type_name(tc)));
    text::ChatToolCall call;
    std::optional<std::string> id;
    GS_RETURN_IF_ERROR(read_string(tc, tpath, "id", &id));
    call.id = id.value_or("");
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(tc, tpath, "type", &type));
    if (type && *type != "function") {
      return invalid(fmt::format("{}.type must be 'function', got '{}'", tpath, *type));
    }
    auto fn = tc.find("function");
    if (fn == tc.end() || !fn->is_object()) return invalid(fmt::format("{}.function must be an object", tpath));
    std::optional<std::string> name;
    GS_RETURN_IF_ERROR(read_string(*fn, tpath + ".function", "name", &name));
    if (!name || name->empty()) return invalid(fmt::format("{}.function.name is required", tpath));
    call.name = *name;
    auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null()) {
      call.arguments_json = "{}";
    } else if (args->is_string()) {
      const std::string s = args->get<std::string>();
      if (s.empty()) {
        call.arguments_json = "{}";
      } else {
        Result<json> parsed = parse_json_object(s);
        if (!parsed.ok()) {
          return invalid(fmt::format("{}.function.arguments must be a JSON object encoded as a string: {}", tpath,
                                     parsed.status().message()));
        }
        call.arguments_json = s;
      }
    } else if (args->is_object()) {  // lenient: an object instead of its text
      call.arguments_json = args->dump();
    } else {
      return invalid(fmt::format("{}.function.arguments must be a string, got {}", tpath, json_type_name(*args)));
    }
    out->tool_calls.push_back(std::move(call));
  }
  return {};
}

Status read_messages(const json& body, std::vector<text::ChatMessage>* out) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return invalid("messages is required");
  if (!it->is_array()) return invalid(fmt::format("messages must be an array, got {}", json_type_name(*it)));
  if (it->empty()) return invalid("messages must contain at least one message");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string path = fmt::format("messages[{}]", i);
    if (!m.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(m)));
    std::optional<std::string> role_name;
    GS_RETURN_IF_ERROR(read_string(m, path, "role", &role_name));
    if (!role_name) return invalid(fmt::format("{}.role is required", path));
    Result<text::ChatRole> role = text::parse_chat_role(*role_name);
    if (!role.ok()) {
      return invalid(fmt::format("{}.role: unknown role '{}' (expected system, developer, user, assistant or tool)",
                                 path, *role_name));
    }
    text::ChatMessage msg;
    msg.role = *role;
    switch (msg.role) {
      case text::ChatRole::kSystem:
      case text::ChatRole::kDeveloper:
      case text::ChatRole::kUser:
        GS_RETURN_IF_ERROR(read_content(m, path, true, &msg));
        break;
      case text::ChatRole::kAssistant: {
        GS_RETURN_IF_ERROR(read_content(m, path, false, &msg));
        GS_RETURN_IF_ERROR(read_tool_calls(m, path, &msg));
        std::optional<std::string> reasoning;
        GS_RETURN_IF_ERROR(read_string(m, path, "reasoning_content", &reasoning));
        if (!reasoning) GS_RETURN_IF_ERROR(read_string(m, path, "reasoning", &reasoning));
        msg.reasoning_content = reasoning.value_or("");
        break;
      }
      case text::ChatRole::kTool: {
        GS_RETURN_IF_ERROR(read_content(m, path, true, &msg));
        std::optional<std::string> id;
        GS_RETURN_IF_ERROR(read_string(m, path, "tool_call_id", &id));
        msg.tool_call_id = id.value_or("");
        std::optional<std::string> name;
        GS_RETURN_IF_ERROR(read_string(m, path, "name", &name));
        msg.name = name.value_or("");
        if (msg.tool_call_id.empty() && msg.name.empty()) {
          return invalid(fmt::format("{}.tool_call_id is required for a tool message", path));
        }
        break;
      }
    }
    out->push_back(std::move(msg));
  }
  return {};
}

Status read_tools(const json& body, std::vector<text::ChatTool>* out) {
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_array()) return invalid(fmt::format("tools must be an array, got {}", json_type_name(*it)));
  if (it->size() > kMaxTools) return invalid(fmt::format("tools may list at most {} functions", kMaxTools));
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string path = fmt::format("tools[{}]", i);
    if (!t.is_object()) return invalid(fmt::format("{} must be an object, got {}", path, json_type_name(t)));
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(t, path, "type", &type));
    if (type && *type != "function") return invalid(fmt::format("{}.type must be 'function', got '{}'", path, *type));
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) return invalid(fmt::format("{}.function must be an object", path));
    const std::string fpath = path + ".function";
    text::ChatTool tool;
    std::optional<std::string> name;
    GS_RETURN_IF_ERROR(read_string(*fn, fpath, "name", &name));
    if (!name) return invalid(fmt::format("{}.name is required", fpath));
    if (!valid_function_name(*name)) {
      return invalid(fmt::format("{}.name '{}' must be 1-128 characters of a-z, A-Z, 0-9, _, - and .", fpath, *name));
    }
    for (const auto& other : *out) {
      if (other.name == *name) return invalid(fmt::format("{}.name '{}' is declared twice", fpath, *name));
    }
    tool.name = *name;
    std::optional<std::string> description;
    GS_RETURN_IF_ERROR(read_string(*fn, fpath, "description", &description));
    tool.description = description.value_or("");
    auto params = fn->find("parameters");
    if (params != fn->end() && !params->is_null()) {
      if (!params->is_object()) {
        return invalid(fmt::format("{}.parameters must be a JSON schema object, got {}", fpath, json_type_name(*params)));
      }
      tool.parameters = *params;
    }
    out->push_back(std::move(tool));
  }
  return {};
}

Status read_tool_choice(const json& body, ChatCompletionRequest* req) {
  auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) {
    req->tool_choice = req->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    return {};
  }
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "auto") {
      req->tool_choice = req->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
    } else if (s == "none") {
      req->tool_choice = ToolChoice::kNone;
    } else if (s == "required") {
      req->tool_choice = ToolChoice::kRequired;
    } else {
      return invalid(fmt::format("tool_choice must be 'auto', 'none', 'required' or a function, got '{}'", s));
    }
  } else if (it->is_object()) {
    std::optional<std::string> type;
    GS_RETURN_IF_ERROR(read_string(*it, "tool_choice", "type", &type));
    if (type && *type != "function") return invalid(fmt::format("tool_choice.type must be 'function', got '{}'", *type));
    auto fn = it->find("function");
    std::optional<std::string> name;
    if (fn != it->end() && fn->is_object()) {
      GS_RETURN_IF_ERROR(read_string(*fn, "tool_choice.function", "name", &name));
    } else {
      GS_RETURN_IF_ERROR(read_string(*it, "tool_choice", "name", &name));
    }
    if (!name || name->empty()) return invalid("tool_choice.function.name is required");
    req->tool_choice = ToolChoice::kNamed;
    req->tool_choice_name = *name;
  } else {
    return invalid(fmt::format("tool_choice must be a string or an object, got {}", json_type_name(*it)));
  }
  if (req->tool_choice == ToolChoice::kRequired || req->tool_choice == ToolChoice::kNamed) {
    if (req->tools.empty()) return invalid("tool_choice asks for a tool call but tools is empty");
  }
  if (req->tool_choice == ToolChoice::kNamed) {
    bool found = false;
    for (const auto& t : req->tools) found = found || t.name == req->tool_choice_name;
    if (!found) {
      return invalid(fmt::format("tool_choice names the function '{}', which is not in tools", req->tool_choice_name));
    }
  }
  return {};
}

Status read_stop(const json& body, std::vector<std::string>* out) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_string()) {
    if (!it->get<std::string>().empty()) out->push_back(it->get<std::string>());
    return {};
  }
  if (!it->is_array()) return invalid(fmt::format("stop must be a string or an array of strings, got {}", json_type_name(*it)));
  if (it->size() > kMaxStopStrings) return invalid(fmt::format("stop may hold at most {} strings", kMaxStopStrings));
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) {
      return invalid(fmt::format("stop[{}] must be a string, got {}", i, json_type_name((*it)[i])));
    }
    std::string s = (*it)[i].get<std::string>();
    if (!s.empty()) out->push_back(std::move(s));
  }
  return {};
}

// Sampling, limits, stop strings, streaming: the fields both endpoints share.
Status read_generation_options(const json& body, const RequestDefaults& defaults, GenerationOptions* gen) {
  gen->sampling = defaults.sampling;
  std::optional<int64_t> i;
  std::optional<double> d;
  std::optional<bool> b;

  GS_RETURN_IF_ERROR(read_int(body, "", "max_completion_tokens", 1, kMaxTokensLimit, &i));
  if (!i) GS_RETURN_IF_ERROR(read_int(body, "", "max_tokens", 1, kMaxTokensLimit, &i));
  if (i) gen->max_tokens = static_cast<int32_t>(*i);

  GS_RETURN_IF_ERROR(read_number(body, "", "temperature", 0.0, 2.0, &d));
  if (d) gen->sampling.temperature = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "top_p", 0.0, 1.0, &d));
  if (d) gen->sampling.top_p = static_cast<float>(*d);
  const int64_t top_k_max = defaults.n_vocab > 0 ? defaults.n_vocab : kMaxTokensLimit;
  GS_RETURN_IF_ERROR(read_int(body, "", "top_k", 0, top_k_max, &i));
  if (i) gen->sampling.top_k = static_cast<int32_t>(*i);
  GS_RETURN_IF_ERROR(read_number(body, "", "min_p", 0.0, 1.0, &d));
  if (d) gen->sampling.min_p = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "presence_penalty", -2.0, 2.0, &d));
  if (d) gen->sampling.presence_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "frequency_penalty", -2.0, 2.0, &d));
  if (d) gen->sampling.frequency_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "repetition_penalty", 0.01, 10.0, &d));
  if (d) gen->sampling.repetition_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_int(body, "", "seed", std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max(), &i));
  if (i) {
    gen->sampling.has_seed = true;
    gen->sampling.seed = static_cast<uint64_t>(*i);
  }
  GS_RETURN_IF_ERROR(read_int(body, "", "n", 1, kMaxTokensLimit, &i));
  if (i && *i != 1) return invalid(fmt::format("n must be 1 (this server returns one choice), got {}", *i));
  GS_RETURN_IF_ERROR(read_stop(body, &gen->stop));

  GS_RETURN_IF_ERROR(read_bool(body, "", "stream", &b));
  gen->stream = b.value_or(false);
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object()) return invalid(fmt::format("stream_options must be an object, got {}", json_type_name(*so)));
    GS_RETURN_IF_ERROR(read_bool(*so, "stream_options", "include_usage", &b));
    gen->include_usage = b.value_or(false) && gen->stream;
  }
  return {};
}

Status read_response_format(const json& body) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid(fmt::format("response_format must be an object, got {}", json_type_name(*it)));
  std::optional<std::string> type;
  GS_RETURN_IF_ERROR(read_string(*it, "response_format", "type", &type));
  if (!type || *type == "text") return {};
  if (*type == "json_object" || *type == "json_schema") {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("response_format '{}' is not supported by this server yet", *type));
  }
  return invalid(fmt::format("response_format.type must be 'text', 'json_object' or 'json_schema', got '{}'", *type));
}

Status read_thinking(const json& body, const RequestDefaults& defaults, ChatCompletionRequest* req) {
  req->enable_thinking = defaults.enable_thinking;
  req->reasoning_budget = defaults.reasoning_budget;
  std::optional<std::string> effort;
  GS_RETURN_IF_ERROR(read_string(body, "", "reasoning_effort", &effort));
  if (effort) {
    if (*effort == "none") {
      req->enable_thinking = false;
    } else if (*effort == "minimal" || *effort == "low" || *effort == "medium" || *effort == "high" ||
               *effort == "xhigh") {
      req->enable_thinking = true;
    } else {
      return invalid(fmt::format("reasoning_effort must be none, minimal, low, medium, high or xhigh, got '{}'", *effort));
    }
  }
  auto kw = body.find("chat_template_kwargs");
  if (kw != body.end() && !kw->is_null()) {
    if (!kw->is_object()) {
      return invalid(fmt::format("chat_template_kwargs must be an object, got {}", json_type_name(*kw)));
    }
    std::optional<bool> b;
    GS_RETURN_IF_ERROR(read_bool(*kw, "chat_template_kwargs", "enable_thinking", &b));
    if (b) req->enable_thinking = *b;
  }
  std::optional<int64_t> budget;
  GS_RETURN_IF_ERROR(read_int(body, "", "reasoning_budget_tokens", 0, kMaxTokensLimit, &budget));
  if (!budget) GS_RETURN_IF_ERROR(read_int(body, "", "thinking_budget_tokens", 0, kMaxTokensLimit, &budget));
  if (budget) req->reasoning_budget = static_cast<int32_t>(*budget);
  // A budget of 0 means no thinking at all: render the non-thinking prompt (bug-case 25).
  if (req->reasoning_budget == 0) req->enable_thinking = false;
  return {};
}

}  // namespace

Result<ChatCompletionRequest> parse_chat_request(const json& body, const RequestDefaults& defaults) {
  ChatCompletionRequest req;
  std::optional<std::string> model;
  GS_RETURN_IF_ERROR(read_string(body, "", "model", &model));
  req.model = model.value_or("");
  GS_RETURN_IF_ERROR(read_messages(body, &req.messages));
  GS_RETURN_IF_ERROR(read_tools(body, &req.tools));
  GS_RETURN_IF_ERROR(read_tool_choice(body, &req));
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "parallel_tool_calls", &b));
  req.parallel_tool_calls = b.value_or(true);
  GS_RETURN_IF_ERROR(read_generation_options(body, defaults, &req.gen));
  GS_RETURN_IF_ERROR(read_response_format(body));
  GS_RETURN_IF_ERROR(read_thinking(body, defaults, &req));

  GS_RETURN_IF_ERROR(read_bool(body, "", "logprobs", &b));
  const bool logprobs = b.value_or(false);
  std::optional<int64_t> top;
  GS_RETURN_IF_ERROR(read_int(body, "", "top_logprobs", 0, 20, &top));
  if (top && !logprobs) return invalid("top_logprobs needs logprobs: true");
  if (logprobs) req.gen.n_logprobs = static_cast<int32_t>(top.value_or(0));
  return req;
}

Result<CompletionRequest> parse_completion_request(const json& body, const RequestDefaults& defaults) {
  CompletionRequest req;
  std::optional<std::string> model;
  GS_RETURN_IF_ERROR(read_string(body, "", "model", &model));
  req.model = model.value_or("");
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return invalid("prompt is required");
  const json* prompt = &*it;
  // A one-element batch is the same as its element.
  if (prompt->is_array() && prompt->size() == 1 && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    prompt = &(*prompt)[0];
  }
  if (prompt->is_string()) {
    req.prompt_text = prompt->get<std::string>();
    if (req.prompt_text.empty()) return invalid("prompt must not be empty");
  } else if (prompt->is_array()) {
    if (prompt->empty()) return invalid("prompt must not be empty");
    req.prompt_is_tokens = true;
    for (size_t i = 0; i < prompt->size(); ++i) {
      const json& v = (*prompt)[i];
      if (v.is_string() || v.is_array()) return invalid("prompt: batches of several prompts are not supported");
      if (!v.is_number_integer()) {
        return invalid(fmt::format("prompt[{}] must be a token id (integer), got {}", i, json_type_name(v)));
      }
      const int64_t id = v.get<int64_t>();
      if (id < 0 || (defaults.n_vocab > 0 && id >= defaults.n_vocab) || id > kMaxTokensLimit) {
        return invalid(fmt::format("prompt[{}]: token id {} is outside the vocabulary [0, {})", i, id, defaults.n_vocab));
      }
      req.prompt_tokens.push_back(static_cast<int32_t>(id));
    }
  } else {
    return invalid(fmt::format("prompt must be a string or an array of token ids, got {}", json_type_name(*prompt)));
  }
  GS_RETURN_IF_ERROR(read_generation_options(body, defaults, &req.gen));
  if (!req.gen.max_tokens) {
    // The legacy endpoint's documented default.
    if (body.find("max_tokens") == body.end()) req.gen.max_tokens = 16;
  }
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "echo", &b));
  req.echo = b.value_or(false);
  std::optional<std::string> suffix;
  GS_RETURN_IF_ERROR(read_string(body, "", "suffix", &suffix));
  if (suffix && !suffix->empty()) return Status(StatusCode::kUnimplemented, "suffix is not supported by this model");
  std::optional<int64_t> i;
  GS_RETURN_IF_ERROR(read_int(body, "", "best_of", 1, kMaxTokensLimit, &i));
  if (i && *i != 1) return invalid(fmt::format("best_of must be 1, got {}", *i));
  GS_RETURN_IF_ERROR(read_int(body, "", "logprobs", 0, 20, &i));
  if (i) req.gen.n_logprobs = static_cast<int32_t>(*i);
  return req;
}

}  // namespace gs::server
