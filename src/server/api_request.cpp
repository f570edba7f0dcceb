// Parsing and validation of OpenAI chat and text completion requests.
#include "server/api_request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "server/foreign_fields.h"
#include "server/json_input.h"
#include "server/output_schema.h"
#include "server/sampler_fields.h"
#include "server/tag_fields.h"
#include "server/token_fields.h"
#include "server/tool_grammars.h"
#include "text/chat_json.h"

namespace gs::server {

namespace {

using nlohmann::json;

constexpr int64_t kMaxTokensLimit = std::numeric_limits<int32_t>::max();

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

// As OpenAI's API: an assistant message with tool_calls that is not the last message is
// followed by tool messages that answer each of its calls (by tool_call_id; a tool or legacy
// function message that gives only a name answers a call of that name). One left unanswered
// was rendered as the call, a dangling `<|tool_response>` and whatever came next (a user
// turn, or the next assistant message's text inside the same model turn); the Messages and
// Responses routes already refuse it as their APIs do. A final assistant message's calls are
// left as they are: nothing follows them yet. A result whose tool_call_id matches no call is
// named first, in the renderer's words (the more precise fault). Hashed: linear in the calls.
Status check_calls_answered(const std::vector<text::ChatMessage>& messages) {
  for (size_t i = 0; i + 1 < messages.size(); ++i) {
    const text::ChatMessage& m = messages[i];
    if (m.role != text::ChatRole::kAssistant || m.tool_calls.empty()) continue;
    std::unordered_map<std::string_view, size_t> by_id;                 // a call's id -> its index
    std::unordered_map<std::string_view, std::vector<size_t>> by_name;  // unanswered calls of a name, last first
    for (size_t c = m.tool_calls.size(); c-- > 0;) {
      by_id[m.tool_calls[c].id] = c;
      by_name[m.tool_calls[c].name].push_back(c);
    }
    std::vector<bool> answered(m.tool_calls.size(), false);
    for (size_t k = i + 1; k < messages.size() && messages[k].role == text::ChatRole::kTool; ++k) {
      const text::ChatMessage& result = messages[k];
      if (!result.tool_call_id.empty()) {
        const auto found = by_id.find(result.tool_call_id);
        if (found == by_id.end()) {
          return invalid(fmt::format("messages[{}].tool_call_id \"{}\" matches no tool call of messages[{}]", k,
                                     result.tool_call_id, i));
        }
        answered[found->second] = true;
        continue;
      }
      // A name alone answers the first call of that name not answered yet.
      auto named = by_name.find(result.name);
      if (named == by_name.end()) continue;
      while (!named->second.empty() && answered[named->second.back()]) named->second.pop_back();
      if (named->second.empty()) continue;
      answered[named->second.back()] = true;
      named->second.pop_back();
    }
    constexpr size_t kNamed = 8;  // ids shown; thousands of calls would make a message of megabytes
    std::vector<std::string_view> missing;
    size_t n_missing = 0;
    for (size_t c = 0; c < m.tool_calls.size(); ++c) {
      if (answered[c]) continue;
      if (++n_missing <= kNamed) missing.push_back(m.tool_calls[c].id);
    }
    if (n_missing == 0) continue;
    return invalid(fmt::format("messages[{}]: an assistant message with tool_calls must be followed by tool messages "
                               "answering each call (tool_call_id); no tool message answers {}{}",
                               i, fmt::join(missing, ", "),
                               n_missing > kNamed ? fmt::format(" and {} more", n_missing - kNamed) : ""));
  }
  return {};
}

// Server policy on top of the text layer's structural conversion: the rules OpenAI states
// and the limits of this server (text only), with errors that name the field.
Status check_messages(const std::vector<text::ChatMessage>& messages) {
  if (messages.empty()) return invalid("messages must contain at least one message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const text::ChatMessage& m = messages[i];
    const std::string path = fmt::format("messages[{}]", i);
    for (size_t k = 0; k < m.content_parts.size(); ++k) {
      if (m.content_parts[k].type != text::ContentPartType::kText) {
        return invalid(fmt::format("{}.content[{}]: image, audio and video parts are not supported (this server "
                                   "reads text only)", path, k));
      }
    }
    if (m.role == text::ChatRole::kTool && m.tool_call_id.empty() && m.name.empty()) {
      return invalid(fmt::format("{}.tool_call_id is required for a tool message", path));
    }
    // Each id's first call, hashed: a scan per call made thousands of calls quadratic.
    std::unordered_map<std::string_view, size_t> first_with_id;
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      const std::string call = fmt::format("{}.tool_calls[{}]", path, k);
      if (m.tool_calls[k].id.empty()) return invalid(fmt::format("{}.id is required", call));
      const auto [first, fresh] = first_with_id.emplace(m.tool_calls[k].id, k);
      if (!fresh) {
        return invalid(fmt::format("{}.id '{}' is also the id of tool_calls[{}]", call, m.tool_calls[k].id, first->second));
      }
      const std::string& args = m.tool_calls[k].arguments_json;
      if (args.empty()) continue;
      // Bounded nesting here keeps the renderer's walk over the arguments shallow.
      const std::string what = fmt::format("{}.tool_calls[{}].function.arguments", path, k);
      Result<nlohmann::json> parsed = parse_json_object(args, kMaxJsonDepth, what);
      if (!parsed.ok()) return invalid(parsed.status().message());
    }
  }
  return check_calls_answered(messages);
}

// Content that OpenAI requires: present and not null for system, developer, user and tool
// messages (the converter treats a missing content as empty), and not an empty array of
// parts for system, developer and user. What the converter does not keep is checked here:
// the "type" of an assistant's tool calls.
Status check_required_content(const json& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) continue;
    const auto content = m.find("content");
    if (content != m.end() && content->is_array() && content->empty() && *role != "tool") {
      return invalid(fmt::format("messages[{}].content must not be an empty array", i));
    }
    if (*role == "assistant") {
      const auto calls = m.find("tool_calls");
      const auto function_call = m.find("function_call");  // the legacy form (decision 0030)
      const bool has_calls = (calls != m.end() && calls->is_array() && !calls->empty()) ||
                             (function_call != m.end() && !function_call->is_null());
      const auto has_text = [&m](const char* key) {
        const auto it = m.find(key);
        return it != m.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
      };
      // OpenAI requires content unless there are tool calls. An empty string stays accepted
      // (clients replay turns whose text was empty, e.g. reasoning-only ones), and so does a
      // turn that carries only reasoning (reasoning_content, or vLLM's name, reasoning).
      // A refusal (content null, the text in `refusal`) is the turn's text.
      if (!has_calls && (content == m.end() || content->is_null()) && !has_text("reasoning_content") &&
          !has_text("reasoning") && !has_text("refusal")) {
        return invalid(fmt::format("messages[{}].content is required for an assistant message without tool_calls", i));
      }
      if (calls == m.end() || !calls->is_array()) continue;
      for (size_t k = 0; k < calls->size(); ++k) {
        const json& call = (*calls)[k];
        const auto type = call.is_object() ? call.find("type") : call.end();
        if (type != call.end() && !type->is_null() && *type != "function") {
          return invalid(fmt::format("messages[{}].tool_calls[{}].type must be 'function', got {}", i, k, type->dump()));
        }
      }
      continue;
    }
    if (content == m.end() || content->is_null()) {
      return invalid(fmt::format("messages[{}].content is required", i));
    }
  }
  return {};
}

Status read_messages(const json& body, std::vector<text::ChatMessage>* out) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return invalid("messages is required");
  GS_ASSIGN_OR_RETURN(*out, text::chat_messages_from_json(*it));
  GS_RETURN_IF_ERROR(check_required_content(*it));
  return check_messages(*out);
}

// The request fields that declare the tools and choose among them: `tools` / `tool_choice`,
// or their legacy (deprecated) forms `functions` / `function_call` (decision 0030).
struct ToolFields {
  const char* tools;
  const char* choice;
  bool legacy;
};
constexpr ToolFields kToolFields{"tools", "tool_choice", false};
constexpr ToolFields kLegacyToolFields{"functions", "function_call", true};

// A function's path in the list: "tools[2].function" (or "tools[2]" for a flat entry),
// "functions[2]".
std::string function_path(const json& body, const ToolFields& fields, size_t i) {
  const json& entry = body.at(fields.tools).at(i);  // read by read_tools: an object
  return fmt::format("{}[{}]{}", fields.tools, i, entry.contains("function") ? ".function" : "");
}

Status read_tools(const json& body, const ToolFields& fields, std::vector<text::ChatTool>* out) {
  auto it = body.find(fields.tools);
  if (it == body.end() || it->is_null()) return {};
  GS_ASSIGN_OR_RETURN(*out, text::chat_tools_from_json(*it, fields.tools));
  if (out->size() > kMaxTools) return invalid(fmt::format("{} may list at most {} functions", fields.tools, kMaxTools));
  for (size_t i = 0; i < out->size(); ++i) {
    const std::string& name = (*out)[i].name;
    if (!valid_function_name(name)) {
      return invalid(fmt::format("{}.name '{}' must be 1-128 characters of a-z, A-Z, 0-9, _, - and .",
                                 function_path(body, fields, i), name));
    }
    for (size_t k = 0; k < i; ++k) {
      if ((*out)[k].name == name) {
        return invalid(fmt::format("{}.name '{}' is declared twice", function_path(body, fields, i), name));
      }
    }
  }
  return {};
}

// A call forced to one known function (named, or "required" with one tool) follows that
// tool's `parameters` (request_plan, decision 0027); a schema the grammar cannot hold keeps a
// looser constraint, but one whose references resolve to nothing, or whose keywords leave no
// value, is broken, not merely unsupported: a 400 naming the keyword
// ("tools[0].function.parameters.properties.a.$ref", "...properties.a.enum").
Status check_forced_schema(const json& body, const ToolFields& fields, const ChatCompletionRequest& req) {
  const std::optional<size_t> forced = forced_tool(req);
  if (!forced || !req.tools[*forced].parameters.is_object()) return {};
  return check_forced_tool_schema(req.tools[*forced].parameters, function_path(body, fields, *forced) + ".parameters");
}

// tool_choice: "auto", "none", "required" or {"type": "function", "function": {"name"}};
// the legacy function_call: "auto", "none" or {"name"}.
Status read_tool_choice(const json& body, const ToolFields& fields, ChatCompletionRequest* req) {
  const bool legacy = fields.legacy;
  const std::string choice = fields.choice;
  auto it = body.find(fields.choice);
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
    } else if (s == "required" && !legacy) {
      req->tool_choice = ToolChoice::kRequired;
    } else {
      return invalid(fmt::format("{} must be {} or a function, got '{}'", choice,
                                 legacy ? "'auto', 'none'" : "'auto', 'none', 'required'", s));
    }
  } else if (it->is_object()) {
    std::optional<std::string> type;
    if (!legacy) GS_RETURN_IF_ERROR(read_string(*it, choice, "type", &type));
    if (type && *type != "function") return invalid(fmt::format("{}.type must be 'function', got '{}'", choice, *type));
    auto fn = it->find("function");
    std::optional<std::string> name;
    if (!legacy && fn != it->end() && fn->is_object()) {
      GS_RETURN_IF_ERROR(read_string(*fn, choice + ".function", "name", &name));
    } else {
      GS_RETURN_IF_ERROR(read_string(*it, choice, "name", &name));
    }
    if (!name || name->empty()) return invalid(fmt::format("{}.{}name is required", choice, legacy ? "" : "function."));
    req->tool_choice = ToolChoice::kNamed;
    req->tool_choice_name = *name;
  } else {
    return invalid(fmt::format("{} must be a string or an object, got {}", choice, json_type_name(*it)));
  }
  if (req->tool_choice == ToolChoice::kRequired || req->tool_choice == ToolChoice::kNamed) {
    if (req->tools.empty()) return invalid(fmt::format("{} asks for a tool call but {} is empty", choice, fields.tools));
  }
  if (req->tool_choice == ToolChoice::kNamed) {
    bool found = false;
    for (const auto& t : req->tools) found = found || t.name == req->tool_choice_name;
    if (!found) {
      return invalid(fmt::format("{} names the function '{}', which is not in {}", choice, req->tool_choice_name,
                                 fields.tools));
    }
  }
  return check_forced_schema(body, fields, *req);
}

// tools / tool_choice, or the legacy functions / function_call read as them (decision 0030):
// a request in the legacy form is answered in it (message.function_call, one call at most).
// A request that mixes the two forms is refused: which list would a choice name?
Status read_tool_fields(const json& body, ChatCompletionRequest* req) {
  const bool legacy = present(body, kLegacyToolFields.tools) || present(body, kLegacyToolFields.choice);
  if (legacy) {
    for (const char* current : {kToolFields.tools, kToolFields.choice}) {
      if (!present(body, current)) continue;
      const char* old = present(body, kLegacyToolFields.tools) ? kLegacyToolFields.tools : kLegacyToolFields.choice;
      return invalid(fmt::format("{} cannot be combined with {}: {} / {} are the deprecated form of tools / "
                                 "tool_choice; send one form",
                                 current, old, kLegacyToolFields.tools, kLegacyToolFields.choice));
    }
  }
  const ToolFields& fields = legacy ? kLegacyToolFields : kToolFields;
  req->legacy_functions = legacy;
  GS_RETURN_IF_ERROR(read_tools(body, fields, &req->tools));
  return read_tool_choice(body, fields, req);
}

// OpenAI's logit_bias: {"token id": bias} with bias in [-100, 100], added to the token's logit
// before sampling; llama-server's forms too: a bias of false (never sampled) and an array of
// [id, bias] pairs. Ids must be distinct and in the vocabulary (n_vocab > 0; 0: unchecked);
// token texts as keys are refused (the ids are what OpenAI sends). Out: sorted by id.
Status read_logit_bias(const json& body, int32_t n_vocab, std::vector<std::pair<int32_t, float>>* out) {
  out->clear();
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return {};
  const int64_t id_end = n_vocab > 0 ? n_vocab : std::numeric_limits<int32_t>::max();
  auto bias_of = [](const json& v, const std::string& where, float* b) -> Status {
    if (v.is_boolean() && !v.get<bool>()) {
      *b = -std::numeric_limits<float>::infinity();
      return {};
    }
    if (!v.is_number() || v.is_boolean()) {
      return invalid(fmt::format("{} must be a number in [-100, 100] or false, got {}", where, json_type_name(v)));
    }
    const double d = v.get<double>();
    if (!(d >= -100.0 && d <= 100.0)) return invalid(fmt::format("{} must be in [-100, 100], got {}", where, v.dump()));
    *b = static_cast<float>(d);
    return {};
  };
  auto add = [&](int64_t id, const std::string& shown, const std::string& where, float b) -> Status {
    if (id < 0 || id >= id_end) {
      return invalid(fmt::format("{}: token id {} is outside the vocabulary [0, {})", where, shown, id_end));
    }
    out->push_back({static_cast<int32_t>(id), b});
    return {};
  };
  if (it->is_object()) {
    for (auto e = it->begin(); e != it->end(); ++e) {
      const std::string& key = e.key();
      const std::string where = fmt::format("logit_bias: the bias of token id {}", key);
      int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (key.empty() || ec != std::errc() || end != key.data() + key.size()) {
        return invalid(fmt::format("logit_bias keys must be token ids (decimal integers), got \"{}\"", key));
      }
      float b = 0;
      GS_RETURN_IF_ERROR(bias_of(e.value(), where, &b));
      GS_RETURN_IF_ERROR(add(id, key, "logit_bias", b));
    }
  } else if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const json& pair = (*it)[i];
      const std::string where = fmt::format("logit_bias[{}]", i);
      if (!pair.is_array() || pair.size() != 2) return invalid(fmt::format("{} must be a pair [token id, bias]", where));
      if (!pair[0].is_number_integer()) {
        return invalid(fmt::format("{}[0] must be a token id (integer), got {}", where, json_type_name(pair[0])));
      }
      const bool too_large = pair[0].is_number_unsigned() && pair[0].get<uint64_t>() > static_cast<uint64_t>(id_end);
      float b = 0;
      GS_RETURN_IF_ERROR(bias_of(pair[1], where + "[1]", &b));
      GS_RETURN_IF_ERROR(add(too_large ? int64_t{-1} : pair[0].get<int64_t>(), pair[0].dump(), where, b));
    }
  } else {
    return invalid(fmt::format("logit_bias must be an object, got {}", json_type_name(*it)));
  }
  std::sort(out->begin(), out->end());
  for (size_t i = 1; i < out->size(); ++i) {
    if ((*out)[i].first == (*out)[i - 1].first) {
      return invalid(fmt::format("logit_bias names token id {} twice", (*out)[i].first));
    }
  }
  // Every token never sampled leaves nothing to sample (the sampler would fall back to token 0).
  if (n_vocab > 0 && static_cast<int64_t>(out->size()) == n_vocab &&
      std::all_of(out->begin(), out->end(), [](const auto& e) { return std::isinf(e.second) && e.second < 0; })) {
    return invalid(fmt::format("logit_bias bans every token of the vocabulary ({} of {}); nothing could be sampled",
                               n_vocab, n_vocab));
  }
  return {};
}

// llama-server's n_predict: max_tokens by another name, where -1 (its "no limit") means the
// server's default cap. Given beside max_tokens / max_completion_tokens, the two must agree.
Status read_n_predict(const json& body, GenerationOptions* gen) {
  std::optional<int64_t> n;
  GS_RETURN_IF_ERROR(read_int(body, "", "n_predict", -1, kMaxTokensLimit, &n));
  if (!n) return {};
  if (*n == 0) return invalid("n_predict must be -1 (the server's limit) or at least 1, got 0");
  const std::optional<int32_t> limit = *n < 0 ? std::nullopt : std::optional<int32_t>(static_cast<int32_t>(*n));
  if (gen->max_tokens && gen->max_tokens != limit) {
    return invalid(fmt::format("n_predict ({}) disagrees with max_tokens ({}); send one of them", *n, *gen->max_tokens));
  }
  gen->max_tokens = limit;
  return {};
}

// min_tokens (vLLM): the end-of-generation tokens are not sampled before that many tokens
// (at most max_tokens). ignore_eos (vLLM, llama-server) goes on past them, as vLLM does: the
// tokens are generated and the request ends at max_tokens or the context.
Status read_eog_options(const json& body, GenerationOptions* gen) {
  std::optional<int64_t> n;
  GS_RETURN_IF_ERROR(read_int(body, "", "min_tokens", 0, kMaxTokensLimit, &n));
  if (n && gen->max_tokens && *n > *gen->max_tokens) {
    return invalid(fmt::format("min_tokens ({}) is more than max_tokens ({})", *n, *gen->max_tokens));
  }
  if (n) gen->sampling.min_tokens = static_cast<int32_t>(*n);
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "ignore_eos", &b));
  gen->ignore_eos = b.value_or(false);
  return {};
}

// Sampling, limits, stop strings, streaming: the fields both endpoints share.
Status read_generation_options(const json& body, const RequestDefaults& defaults, GenerationOptions* gen) {
  gen->sampling = defaults.sampling;
  std::optional<int64_t> i;
  std::optional<double> d;
  std::optional<bool> b;

  // OpenAI's max_completion_tokens and its older name max_tokens: both are read, and given
  // together they must agree (as n_predict must), rather than one being dropped unread.
  std::optional<int64_t> legacy_max;
  GS_RETURN_IF_ERROR(read_int(body, "", "max_completion_tokens", 1, kMaxTokensLimit, &i));
  GS_RETURN_IF_ERROR(read_int(body, "", "max_tokens", 1, kMaxTokensLimit, &legacy_max));
  if (i && legacy_max && *i != *legacy_max) {
    return invalid(fmt::format("max_tokens ({}) disagrees with max_completion_tokens ({}); send one of them",
                               *legacy_max, *i));
  }
  if (!i) i = legacy_max;
  if (i) gen->max_tokens = static_cast<int32_t>(*i);
  GS_RETURN_IF_ERROR(read_n_predict(body, gen));

  GS_RETURN_IF_ERROR(read_sampling(body, defaults, &gen->sampling, TopKOff::kZeroOrMinusOne));
  GS_RETURN_IF_ERROR(read_number(body, "", "min_p", 0.0, 1.0, &d));
  if (d) gen->sampling.min_p = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "presence_penalty", -2.0, 2.0, &d));
  if (d) gen->sampling.presence_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "frequency_penalty", -2.0, 2.0, &d));
  if (d) gen->sampling.frequency_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "repetition_penalty", 0.01, 10.0, &d));
  if (d) gen->sampling.repetition_penalty = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_llama_sampler_fields(body, &gen->sampling));
  GS_RETURN_IF_ERROR(read_int(body, "", "seed", std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max(), &i));
  // -1 is llama-server's "random seed" (its default, which its clients send): as no seed.
  // Every other value is a fixed seed (negative ones as their 64-bit pattern).
  if (i && *i != -1) {
    gen->sampling.has_seed = true;
    gen->sampling.seed = static_cast<uint64_t>(*i);
  }
  GS_RETURN_IF_ERROR(read_int(body, "", "n", 1, kMaxTokensLimit, &i));
  if (i && *i > kMaxChoices) {
    return invalid(fmt::format("n must be at most {} (choices of one request), got {}", kMaxChoices, *i));
  }
  gen->n = i ? static_cast<int32_t>(*i) : 1;
  // best_of = n asks for the n completions that n alone gives; more than n would need the
  // server to score and drop some, which it does not. vLLM takes it on chat too.
  GS_RETURN_IF_ERROR(read_int(body, "", "best_of", 1, kMaxTokensLimit, &i));
  if (i && *i != gen->n) {
    return invalid(fmt::format("best_of must equal n ({}): choosing the best of more completions is not supported, "
                               "got {}", gen->n, *i));
  }
  GS_RETURN_IF_ERROR(read_stop_strings(body, "stop", /*one_string=*/true, &gen->stop));
  GS_RETURN_IF_ERROR(read_logit_bias(body, defaults.n_vocab, &gen->sampling.logit_bias));
  GS_RETURN_IF_ERROR(read_eog_options(body, gen));
  GS_RETURN_IF_ERROR(read_token_fields(body, defaults.n_vocab, &gen->stop_token_ids));
  GS_RETURN_IF_ERROR(read_bool(body, "", "speculative", &b));
  gen->speculative = b.value_or(true);
  GS_RETURN_IF_ERROR(read_int(body, "", "draft_max", 0, 64, &i));
  if (i) gen->draft_max = static_cast<int32_t>(*i);
  GS_RETURN_IF_ERROR(read_bool(body, "", "cache_prompt", &b));
  gen->cache_prompt = b.value_or(true);

  GS_RETURN_IF_ERROR(read_bool(body, "", "stream", &b));
  gen->stream = b.value_or(false);
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object()) return invalid(fmt::format("stream_options must be an object, got {}", json_type_name(*so)));
    GS_RETURN_IF_ERROR(read_bool(*so, "stream_options", "include_usage", &b));
    std::optional<bool> continuous, obfuscation;
    GS_RETURN_IF_ERROR(read_bool(*so, "stream_options", "continuous_usage_stats", &continuous));
    // OpenAI's padding of each chunk against a length side channel: a hint, none is added here.
    GS_RETURN_IF_ERROR(read_bool(*so, "stream_options", "include_obfuscation", &obfuscation));
    // As OpenAI and vLLM: options of a stream that is not asked for are a mistake.
    if (!gen->stream) return invalid("stream_options is only allowed when stream is true");
    gen->include_usage = b.value_or(false);
    // As vLLM: the running usage only where the usage is asked for.
    gen->continuous_usage = gen->include_usage && continuous.value_or(false);
  }
  return {};
}

// response_format: {"type": "text"}, {"type": "json_object"} (any object; llama-server's
// "schema" beside it is honoured), or {"type": "json_schema", "json_schema": {"name": ...,
// "schema": {...}, "strict": ...}} (decision 0027).
Status read_response_format(const json& body, text::JsonGrammarCache* cache, GenerationOptions* gen) {
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_object()) return invalid(fmt::format("response_format must be an object, got {}", json_type_name(*it)));
  std::optional<std::string> type;
  GS_RETURN_IF_ERROR(read_string(*it, "response_format", "type", &type));
  if (!type) return invalid("response_format.type is required ('text', 'json_object' or 'json_schema')");
  if (*type == "text") return {};
  if (*type == "json_object") {
    auto schema = it->find("schema");
    if (schema == it->end() || schema->is_null()) {
      gen->json_grammar = text::JsonGrammar::any_object();
      return {};
    }
    GS_ASSIGN_OR_RETURN(gen->json_grammar, compile_output_schema(*schema, "response_format.schema", cache));
    return {};
  }
  if (*type == "json_schema") {
    auto js = it->find("json_schema");
    if (js == it->end() || !js->is_object()) {
      return invalid("response_format.json_schema must be an object with the schema (type json_schema)");
    }
    std::optional<std::string> name;
    GS_RETURN_IF_ERROR(read_string(*js, "response_format.json_schema", "name", &name));
    auto schema = js->find("schema");
    if (schema == js->end() || schema->is_null()) {
      gen->json_grammar = text::JsonGrammar::any_object();
      return {};
    }
    GS_ASSIGN_OR_RETURN(gen->json_grammar,
                        compile_output_schema(*schema, "response_format.json_schema.schema", cache));
    return {};
  }
  return invalid(fmt::format("response_format.type must be 'text', 'json_object' or 'json_schema', got '{}'", *type));
}

// vLLM's structured_outputs (the newer name of its guided_* fields): `json` (a schema, or a
// JSON string holding one) is read as guided_json is, `json_object: true` as response_format
// json_object; the constraints this server cannot apply (`regex`, `choice`, `grammar`,
// `structural_tag`) are refused by name, and its options (`disable_*`, `whitespace_pattern`,
// ...) pass. `set_by` names a field that already constrains the output (then a constraint
// here is a 400).
Status read_structured_outputs(const json& body, const char* set_by, text::JsonGrammarCache* cache,
                               GenerationOptions* gen) {
  auto so = body.find("structured_outputs");
  if (so == body.end() || so->is_null()) return {};
  if (!so->is_object()) {
    return invalid(fmt::format("structured_outputs must be an object, got {}", json_type_name(*so)));
  }
  for (const char* key : {"regex", "choice", "grammar", "structural_tag"}) {
    if (auto it = so->find(key); it != so->end() && !it->is_null()) {
      return Status(StatusCode::kUnimplemented,
                    fmt::format("structured_outputs.{} is not supported by this server (structured output: "
                                "structured_outputs.json, response_format json_object or json_schema)",
                                key));
    }
  }
  std::optional<bool> object;
  GS_RETURN_IF_ERROR(read_bool(*so, "structured_outputs", "json_object", &object));
  auto js = so->find("json");
  const bool has_json = js != so->end() && !js->is_null();
  if (!has_json && !object.value_or(false)) return {};
  const char* mine = has_json ? "structured_outputs.json" : "structured_outputs.json_object";
  if (set_by) return invalid(fmt::format("{} cannot be combined with {}: both constrain the output; send one", mine, set_by));
  if (has_json && object.value_or(false)) {
    return invalid("structured_outputs.json cannot be combined with structured_outputs.json_object; send one");
  }
  if (!has_json) {
    gen->json_grammar = text::JsonGrammar::any_object();
    return {};
  }
  json parsed;
  const json* schema = &*js;
  if (js->is_string()) {
    GS_ASSIGN_OR_RETURN(parsed, parse_json_object(js->get_ref<const std::string&>(), kMaxJsonDepth, mine));
    schema = &parsed;
  } else if (!js->is_object()) {
    return invalid(fmt::format("structured_outputs.json must be an object or a JSON string (a JSON Schema), got {}",
                               json_type_name(*js)));
  }
  GS_ASSIGN_OR_RETURN(gen->json_grammar, compile_output_schema(*schema, mine, cache));
  return {};
}

// Other servers' spellings of a JSON Schema for the output, read as response_format
// json_schema with that schema (same compiler, errors naming the field they came from):
// llama-server's top-level "json_schema" (the schema), vLLM's "guided_json" (the schema, or a
// JSON string holding it). One request sets at most one of these and a non-text
// response_format: two would be two constraints on one output.
Status read_schema_aliases(const json& body, text::JsonGrammarCache* cache, GenerationOptions* gen) {
  const char* set_by = gen->json_grammar ? "response_format" : nullptr;
  for (const char* key : {"json_schema", "guided_json"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (set_by) {
      return invalid(fmt::format("{} cannot be combined with {}: both constrain the output; send one", key, set_by));
    }
    set_by = key;
    json parsed;
    const json* schema = &*it;
    if (it->is_string() && std::string_view(key) == "guided_json") {
      GS_ASSIGN_OR_RETURN(parsed, parse_json_object(it->get_ref<const std::string&>(), kMaxJsonDepth, key));
      schema = &parsed;
    } else if (!it->is_object()) {
      return invalid(fmt::format("{} must be {}, got {}", key,
                                 std::string_view(key) == "guided_json" ? "an object or a JSON string (a JSON Schema)"
                                                                         : "an object (a JSON Schema)",
                                 json_type_name(*it)));
    }
    GS_ASSIGN_OR_RETURN(gen->json_grammar, compile_output_schema(*schema, key, cache));
  }
  return read_structured_outputs(body, set_by, cache, gen);
}

// Constraints of other servers that this one cannot apply: refused by name rather than
// ignored (the client would take free text for constrained output). vLLM's guided_choice
// would need "exactly one of these strings"; the engine's allowed completions only fix how
// the output begins. An empty grammar string (llama-server's default) asks for nothing.
Status read_unsupported_constraints(const json& body) {
  for (const char* key : {"grammar", "guided_regex", "guided_grammar", "guided_choice", "structural_tag"}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) continue;
    if (it->is_string() && it->get_ref<const std::string&>().empty()) continue;
    return Status(StatusCode::kUnimplemented,
                  fmt::format("{} is not supported by this server (structured output: response_format json_object "
                              "or json_schema, json_schema, guided_json)", key));
  }
  return {};
}

Status read_output_format(const json& body, text::JsonGrammarCache* cache, GenerationOptions* gen) {
  GS_RETURN_IF_ERROR(read_response_format(body, cache, gen));
  GS_RETURN_IF_ERROR(read_schema_aliases(body, cache, gen));
  return read_unsupported_constraints(body);
}

Status read_thinking(const json& body, const RequestDefaults& defaults, ChatCompletionRequest* req) {
  req->enable_thinking = defaults.enable_thinking;
  req->reasoning_budget = defaults.reasoning_budget;
  std::optional<bool> asked;  // what the request itself says about thinking
  std::optional<std::string> effort;
  GS_RETURN_IF_ERROR(read_string(body, "", "reasoning_effort", &effort));
  if (effort) {
    if (*effort == "none") {
      asked = false;
    } else if (*effort == "minimal" || *effort == "low" || *effort == "medium" || *effort == "high" ||
               *effort == "xhigh") {
      asked = true;
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
    if (b) asked = *b;
  }
  if (asked) req->enable_thinking = *asked;
  // thinking_budget_tokens is another server's name for reasoning_budget_tokens; both at once
  // must agree (one silently winning would cap the thinking the client did not ask for).
  // -1 is llama-server's "unlimited" (its --reasoning-budget default); other negatives are a 400.
  std::optional<int64_t> budget, alias;
  GS_RETURN_IF_ERROR(read_int(body, "", "reasoning_budget_tokens", -1, kMaxTokensLimit, &budget));
  GS_RETURN_IF_ERROR(read_int(body, "", "thinking_budget_tokens", -1, kMaxTokensLimit, &alias));
  if (budget && alias && *budget != *alias) {
    return invalid(fmt::format("reasoning_budget_tokens ({}) and thinking_budget_tokens ({}) name the same budget and "
                               "must agree: send one",
                               *budget, *alias));
  }
  if (!budget) budget = alias;
  if (budget) {
    req->reasoning_budget = static_cast<int32_t>(*budget);
  } else if (asked.value_or(false) && req->reasoning_budget == 0) {
    // The server's --reasoning-budget 0 is its default ("no thinking"), not a cap on thinking
    // the request asks for: that thinks without one, as llama-server lets the request's
    // enable_thinking win over its --reasoning-budget 0.
    req->reasoning_budget = -1;
  }
  // A budget of 0 means no thinking at all: render the non-thinking prompt (bug-case 25).
  if (req->reasoning_budget == 0) req->enable_thinking = false;
  return {};
}

// vLLM's continue_final_message (decision 0010): absent or null, a final assistant message is
// continued as llama-server does; true asks for that and needs a final assistant message to
// continue; false closes that message's turn and begins a new one, as vLLM's default does.
Status read_continue_final_message(const json& body, ChatCompletionRequest* req) {
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "continue_final_message", &b));
  if (!b) return {};
  if (*b && (req->messages.empty() || req->messages.back().role != text::ChatRole::kAssistant)) {
    return invalid("continue_final_message is true but the last message is not an assistant message to continue");
  }
  req->continue_final_message = *b;
  return {};
}

// llama-server's reasoning_format (decision 0034); absent or null: the server's default.
Status read_reasoning_format(const json& body, const RequestDefaults& defaults, ChatCompletionRequest* req) {
  req->reasoning_format = defaults.reasoning_format;
  std::optional<std::string> name;
  GS_RETURN_IF_ERROR(read_string(body, "", "reasoning_format", &name));
  if (!name) return {};
  const std::optional<ReasoningFormat> format = parse_reasoning_format(*name);
  if (!format) {
    return invalid(fmt::format("reasoning_format must be 'none', 'deepseek', 'deepseek-legacy' or 'auto', got '{}'",
                               *name));
  }
  req->reasoning_format = *format;
  return {};
}

}  // namespace

std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name) {
  if (name == "deepseek" || name == "auto") return ReasoningFormat::kDeepseek;
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "deepseek-legacy") return ReasoningFormat::kDeepseekLegacy;
  return std::nullopt;
}

bool valid_function_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Status read_sampling(const json& body, const RequestDefaults& defaults, SamplingParams* sampling,
                     TopKOff top_k_off) {
  std::optional<int64_t> i;
  std::optional<double> d;
  GS_RETURN_IF_ERROR(read_number(body, "", "temperature", 0.0, 2.0, &d));
  if (d) sampling->temperature = static_cast<float>(*d);
  GS_RETURN_IF_ERROR(read_number(body, "", "top_p", 0.0, 1.0, &d));
  if (d) sampling->top_p = static_cast<float>(*d);
  const int64_t top_k_max = defaults.n_vocab > 0 ? defaults.n_vocab : kMaxTokensLimit;
  const int64_t top_k_min = top_k_off == TopKOff::kZeroOrMinusOne ? -1 : 0;
  const Status k = read_int(body, "", "top_k", top_k_min, top_k_max, &i);
  if (const auto it = body.find("top_k"); !k.ok() && top_k_off == TopKOff::kZeroOrMinusOne &&
                                          it->is_number_integer() && !it->is_number_unsigned() &&
                                          it->get<int64_t>() < -1) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("top_k must be 0 or -1 (off: every token) or in [1, {}], got {}", top_k_max,
                              it->get<int64_t>()));
  }
  GS_RETURN_IF_ERROR(k);
  if (i) sampling->top_k = static_cast<int32_t>(std::max<int64_t>(*i, 0));  // -1 is vLLM's 0
  return {};
}

Status read_stop_strings(const json& body, const char* key, bool one_string, std::vector<std::string>* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return {};
  if (one_string && it->is_string()) {
    if (!it->get<std::string>().empty()) out->push_back(it->get<std::string>());
    return {};
  }
  if (!it->is_array()) {
    return invalid(fmt::format("{} must be {}an array of strings, got {}", key, one_string ? "a string or " : "",
                               json_type_name(*it)));
  }
  if (it->size() > kMaxStopStrings) return invalid(fmt::format("{} may hold at most {} strings", key, kMaxStopStrings));
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) {
      return invalid(fmt::format("{}[{}] must be a string, got {}", key, i, json_type_name((*it)[i])));
    }
    std::string s = (*it)[i].get<std::string>();
    if (!s.empty()) out->push_back(std::move(s));
  }
  return {};
}

std::optional<size_t> forced_tool(const ChatCompletionRequest& req) {
  if (req.tool_choice == ToolChoice::kRequired && req.tools.size() == 1) return 0;
  if (req.tool_choice != ToolChoice::kNamed) return std::nullopt;
  for (size_t i = 0; i < req.tools.size(); ++i) {
    if (req.tools[i].name == req.tool_choice_name) return i;  // names are unique (read_tools)
  }
  return std::nullopt;
}

Result<ChatCompletionRequest> parse_chat_request(const json& body, const RequestDefaults& defaults,
                                                 text::JsonGrammarCache* grammar_cache) {
  ChatCompletionRequest req;
  req.chat_template = defaults.chat_template;
  std::optional<std::string> model;
  GS_RETURN_IF_ERROR(check_other_routes_fields(body, ApiRoute::kChat));
  GS_RETURN_IF_ERROR(read_string(body, "", "model", &model));
  req.model = model.value_or("");
  GS_RETURN_IF_ERROR(read_messages(body, &req.messages));
  GS_RETURN_IF_ERROR(read_tool_fields(body, &req));
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "parallel_tool_calls", &b));
  // The legacy answer holds one function_call: the first complete call ends the output.
  req.parallel_tool_calls = b.value_or(true) && !req.legacy_functions;
  GS_RETURN_IF_ERROR(read_bool(body, "", "add_generation_prompt", &b));
  req.add_generation_prompt = b.value_or(true);
  GS_RETURN_IF_ERROR(read_continue_final_message(body, &req));
  GS_RETURN_IF_ERROR(read_generation_options(body, defaults, &req.gen));
  GS_RETURN_IF_ERROR(read_output_format(body, grammar_cache, &req.gen));
  GS_RETURN_IF_ERROR(check_foreign_fields(body, /*chat=*/true));
  GS_RETURN_IF_ERROR(check_openai_user(body));
  GS_RETURN_IF_ERROR(check_openai_metadata(body));
  GS_RETURN_IF_ERROR(check_openai_tags(body));
  GS_RETURN_IF_ERROR(check_chat_hints(body));
  GS_RETURN_IF_ERROR(read_thinking(body, defaults, &req));
  GS_RETURN_IF_ERROR(read_reasoning_format(body, defaults, &req));

  GS_RETURN_IF_ERROR(read_bool(body, "", "logprobs", &b));
  const bool logprobs = b.value_or(false);
  std::optional<int64_t> top;
  GS_RETURN_IF_ERROR(read_int(body, "", "top_logprobs", 0, 20, &top));
  if (top && !logprobs) return invalid("top_logprobs needs logprobs: true");
  if (logprobs) req.gen.n_logprobs = static_cast<int32_t>(top.value_or(0));
  return req;
}

Result<CompletionRequest> parse_completion_request(const json& body, const RequestDefaults& defaults,
                                                   text::JsonGrammarCache* grammar_cache) {
  CompletionRequest req;
  GS_RETURN_IF_ERROR(check_other_routes_fields(body, ApiRoute::kCompletions));
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
      // An id above INT64_MAX is an unsigned JSON number: as int64 it read as negative, and
      // the error named a different id than the one sent. v.dump() names it as sent.
      const bool too_large = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxTokensLimit);
      const int64_t id = too_large ? int64_t{-1} : v.get<int64_t>();
      if (too_large || id < 0 || (defaults.n_vocab > 0 && id >= defaults.n_vocab) || id > kMaxTokensLimit) {
        return invalid(fmt::format("prompt[{}]: token id {} is outside the vocabulary [0, {})", i, v.dump(),
                                   defaults.n_vocab));
      }
      req.prompt_tokens.push_back(static_cast<int32_t>(id));
    }
  } else {
    return invalid(fmt::format("prompt must be a string or an array of token ids, got {}", json_type_name(*prompt)));
  }
  GS_RETURN_IF_ERROR(read_generation_options(body, defaults, &req.gen));
  GS_RETURN_IF_ERROR(read_output_format(body, grammar_cache, &req.gen));
  GS_RETURN_IF_ERROR(check_foreign_fields(body, /*chat=*/false));
  // OpenAI's legacy completions take `user` but no `metadata` (left unread, as other fields
  // this route does not know).
  GS_RETURN_IF_ERROR(check_openai_user(body));
  if (!req.gen.max_tokens) {
    // The legacy endpoint's documented default, for a missing or null max_tokens (OpenAI's
    // and vLLM's reading of null) when max_completion_tokens did not set it either.
    const auto mt = body.find("max_tokens");
    const auto np = body.find("n_predict");  // n_predict -1: the server's cap, not 16
    if ((mt == body.end() || mt->is_null()) && (np == body.end() || np->is_null())) req.gen.max_tokens = 16;
  }
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_bool(body, "", "echo", &b));
  req.echo = b.value_or(false);
  std::optional<std::string> suffix;
  GS_RETURN_IF_ERROR(read_string(body, "", "suffix", &suffix));
  if (suffix && !suffix->empty()) return Status(StatusCode::kUnimplemented, "suffix is not supported by this model");
  std::optional<int64_t> i;
  GS_RETURN_IF_ERROR(read_int(body, "", "logprobs", 0, 20, &i));
  if (i) req.gen.n_logprobs = static_cast<int32_t>(*i);
  // OpenAI's echo with logprobs scores the prompt's own tokens (what lm-eval-harness reads);
  // the engine computes logits for the last prompt position only, so an answer would hold the
  // generated tokens' logprobs where such a client expects the prompt's. Refused instead.
  if (req.echo && i) {
    return Status(StatusCode::kUnimplemented,
                  "logprobs with echo (the prompt tokens' logprobs) are not supported; send echo or logprobs alone");
  }
  return req;
}

namespace {

// Every top-level field the request parsers read (these two and /tokenize's and
// /detokenize's in token_api.h): the roots an error's path may start from.
constexpr std::string_view kRequestFields[] = {
    "model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_completion_tokens", "max_tokens",
    "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed",
    "n", "stop", "logit_bias", "speculative", "draft_max", "cache_prompt", "stream", "stream_options", "response_format",
    "reasoning_effort", "chat_template_kwargs", "reasoning_budget_tokens", "thinking_budget_tokens", "logprobs",
    "top_logprobs", "prompt", "echo", "suffix", "best_of", "json_schema", "guided_json", "grammar", "guided_regex",
    "guided_grammar", "guided_choice", "structural_tag", "n_predict", "min_tokens", "ignore_eos", "functions",
    "function_call", "stop_token_ids", "bad_words", "allowed_token_ids", "reasoning_format", "add_generation_prompt",
    "continue_final_message", "structured_outputs", "include_stop_str_in_output", "use_beam_search",
    "skip_special_tokens", "spaces_between_special_tokens", "return_tokens_as_token_ids", "return_token_ids",
    "logits_processors", "n_probs",
    "prompt_logprobs", "truncate_prompt_tokens", "chat_template", "modalities", "audio", "web_search_options",
    "repeat_penalty", "repeat_last_n", "penalty_last_n", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta",
    "xtc_probability", "xtc_threshold", "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
    "dry_sequence_breakers", "dynatemp_range", "dynatemp_exponent", "top_n_sigma", "min_keep", "samplers",
    "t_max_predict_ms", "n_indent", "n_cmpl", "lora", "post_sampling_probs",
    "content", "add_special", "parse_special", "with_pieces", "tokens", "add_special_tokens", "return_token_strs",
    "user", "metadata", "service_tier",
    "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "store", "verbosity", "prediction",
};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the identifier at s[i], 0 when none starts there.
size_t ident_length(std::string_view s, size_t i) {
  if (i >= s.size() || !is_ident_start(s[i])) return 0;
  size_t n = 1;
  while (i + n < s.size() && is_ident_char(s[i + n])) ++n;
  return n;
}

}  // namespace

std::span<const std::string_view> chat_request_field_names() { return kRequestFields; }

std::string error_param(std::string_view message) {
  // path := ident ( "[" digits "]" | "[\"" key "\"]" | "." ["$"] ident )*, then the end, a
  // blank, ':' or ','
  // (the "$" of a JSON Schema keyword: "response_format.json_schema.schema.$ref").
  size_t i = ident_length(message, 0);
  if (i == 0) return {};
  const std::string_view root = message.substr(0, i);
  const auto others = other_route_field_names();
  if (std::find(std::begin(kRequestFields), std::end(kRequestFields), root) == std::end(kRequestFields) &&
      std::find(others.begin(), others.end(), root) == others.end()) {
    return {};
  }
  while (i < message.size()) {
    if (message[i] == '[' && i + 1 < message.size() && message[i + 1] == '"') {
      // A quoted key: logit_bias["5"], as the JSON reader names a value under a key that is
      // no identifier.
      const size_t close = message.find('"', i + 2);
      if (close == std::string_view::npos || close + 1 >= message.size() || message[close + 1] != ']') break;
      i = close + 2;
    } else if (message[i] == '[') {
      size_t k = i + 1;
      while (k < message.size() && is_digit(message[k])) ++k;
      if (k == i + 1 || k >= message.size() || message[k] != ']') break;
      i = k + 1;
    } else if (message[i] == '.' && ident_length(message, i + 1) > 0) {
      i += 1 + ident_length(message, i + 1);
    } else if (message[i] == '.' && i + 1 < message.size() && message[i + 1] == '$' &&
               ident_length(message, i + 2) > 0) {
      i += 2 + ident_length(message, i + 2);
    } else {
      break;
    }
  }
  if (i < message.size() && message[i] != ' ' && message[i] != ':' && message[i] != ',') return {};
  return std::string(message.substr(0, i));
}

}  // namespace gs::server
