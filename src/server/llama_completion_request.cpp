// llama-server's POST /completion body: its own fields read here, the rest by /v1/completions'
// reader over a translated copy of the body.
#include "server/llama_completion_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>

#include "server/foreign_fields.h"
#include "server/json_input.h"

namespace gs::server {

namespace {

using nlohmann::json;

constexpr std::string_view kRoute = "/completion";

// The native fields this reader names in its errors (roots of error.param beyond error_param's).
constexpr std::string_view kNativeFields[] = {
    "id_slot",         "return_tokens",  "n_keep",         "n_discard",        "timings_per_token",
    "return_progress", "response_fields", "multimodal_data", "image_data",      "grammar_lazy",
    "grammar_triggers", "preserved_tokens", "prompt_string"};

Status invalid(std::string message) { return Status(StatusCode::kInvalidArgument, std::move(message)); }

Status unsupported(std::string_view field, std::string_view why) {
  return Status(StatusCode::kUnimplemented, fmt::format("{} is not supported on {}: {}", field, kRoute, why));
}

// An integer 0 under `key`.
bool is_zero(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && it->is_number_integer() && it->get<int64_t>() == 0;
}

// The answer's length limit under its three names (llama-server reads the other two as n_predict).
constexpr const char* kLimitFields[] = {"n_predict", "max_tokens", "max_completion_tokens"};

// A field whose only honoured values are null, false, "", [] or {} (nothing asked).
Status neutral_only(const json& body, const char* key, std::string_view why) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return {};
  const json& v = *it;
  const bool nothing = (v.is_boolean() && !v.get<bool>()) || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
                       ((v.is_array() || v.is_object()) && v.empty());
  return nothing ? Status() : unsupported(key, why);
}

// /v1/completions' fields that the native answer has no place for.
Status check_openai_only_fields(const json& body) {
  GS_RETURN_IF_ERROR(neutral_only(body, "echo", "the answer's content never repeats the prompt (its `prompt` field "
                                                "holds the prompt as read)"));
  if (present(body, "logprobs")) {  // false or 0 asks nothing
    const json& v = body["logprobs"];
    const bool nothing = (v.is_boolean() && !v.get<bool>()) || is_zero(body, "logprobs");
    if (!nothing) return unsupported("logprobs", "send n_probs (completion_probabilities), or use /v1/completions");
  }
  // The chat route's count of alternatives (0 asks none); here n_probs is that count.
  if (present(body, "top_logprobs") && !is_zero(body, "top_logprobs")) {
    return unsupported("top_logprobs", "send n_probs (the alternatives a token, in completion_probabilities)");
  }
  GS_RETURN_IF_ERROR(neutral_only(body, "suffix", "this model has no fill-in-the-middle form"));
  GS_RETURN_IF_ERROR(neutral_only(body, "stream_options",
                                  "each streamed chunk carries tokens_predicted and tokens_evaluated already"));
  for (const char* key : {"n", "best_of"}) {
    std::optional<int64_t> n;
    GS_RETURN_IF_ERROR(read_int(body, "", key, 1, std::numeric_limits<int32_t>::max(), &n));
    if (n && *n != 1) return unsupported(key, "the answer is one completion; send one request per completion");
  }
  return {};
}

// llama-server's native fields beyond sampling: honoured, accepted where they change nothing
// here, or refused by name.
Status read_native_fields(const json& body, LlamaCompletionRequest* req) {
  std::optional<int64_t> i;
  std::optional<bool> b;
  GS_RETURN_IF_ERROR(read_int(body, "", "n_probs", 0, std::numeric_limits<int32_t>::max(), &i));
  if (i && *i > kMaxNProbs) {
    return unsupported("n_probs", fmt::format("at most {} alternatives a token, got {}", kMaxNProbs, *i));
  }
  req->n_probs = static_cast<int32_t>(i.value_or(0));
  GS_RETURN_IF_ERROR(read_bool(body, "", "return_tokens", &b));
  req->return_tokens = b.value_or(false);
  // The slot: the scheduler picks one by the prompt's cached prefix, any slot gives the same
  // answer; -1 is llama-server's "any idle slot".
  GS_RETURN_IF_ERROR(read_int(body, "", "id_slot", -1, std::numeric_limits<int32_t>::max(), &i));
  req->id_slot = static_cast<int32_t>(i.value_or(-1));
  // What a context shift keeps and drops: a sequence here ends when its context is full and
  // is never shifted, so these change nothing.
  GS_RETURN_IF_ERROR(read_int(body, "", "n_keep", -1, std::numeric_limits<int32_t>::max(), &i));
  GS_RETURN_IF_ERROR(read_int(body, "", "n_discard", 0, std::numeric_limits<int32_t>::max(), &i));
  GS_RETURN_IF_ERROR(read_bool(body, "", "timings_per_token", &b));
  if (b.value_or(false)) return unsupported("timings_per_token", "timings come in the final answer only");
  GS_RETURN_IF_ERROR(read_bool(body, "", "return_progress", &b));
  if (b.value_or(false)) return unsupported("return_progress", "no prompt-processing progress is reported");
  GS_RETURN_IF_ERROR(neutral_only(body, "response_fields", "the answer always has all its fields"));
  GS_RETURN_IF_ERROR(neutral_only(body, "multimodal_data", "this server reads text only"));
  GS_RETURN_IF_ERROR(neutral_only(body, "image_data", "this server reads text only"));
  // The companions of a GBNF grammar (which read_output_format refuses by name).
  GS_RETURN_IF_ERROR(neutral_only(body, "grammar_lazy", "there is no GBNF grammar here"));
  GS_RETURN_IF_ERROR(neutral_only(body, "grammar_triggers", "there is no GBNF grammar here"));
  return neutral_only(body, "preserved_tokens", "there is no GBNF grammar here");
}

// One prompt as text or token ids.
struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> tokens;
};

// An array of token ids and strings with at least one of each (llama-server's mixed prompt).
bool is_mixed(const json& a) {
  bool number = false, string = false;
  for (const json& v : a) {
    if (v.is_number()) {
      number = true;
    } else if (v.is_string()) {
      string = true;
    } else {
      return false;
    }
  }
  return number && string;
}

bool all_numbers(const json& a) {
  return std::all_of(a.begin(), a.end(), [](const json& v) { return v.is_number(); });
}

Result<Prompt> read_one_prompt(const json& p, const std::string& where, const RequestDefaults& defaults,
                               const text::Tokenizer& tok) {
  const int64_t id_end = defaults.n_vocab > 0 ? defaults.n_vocab : std::numeric_limits<int32_t>::max();
  Prompt out;
  if (p.is_string()) {
    out.text = p.get<std::string>();
    return out;
  }
  if (p.is_object()) {
    if (const auto m = p.find("multimodal_data"); m != p.end() && !m->is_null() && !(m->is_array() && m->empty())) {
      return unsupported(where + ".multimodal_data", "this server reads text only");
    }
    const auto s = p.find("prompt_string");
    if (s == p.end() || !s->is_string()) {
      return invalid(fmt::format("{}.prompt_string must be a string, got {}", where,
                                 s == p.end() ? "nothing" : json_type_name(*s)));
    }
    out.text = s->get<std::string>();
    return out;
  }
  if (!p.is_array()) {
    return invalid(fmt::format("{} must be a string, an array of token ids (and strings) or an object, got {}", where,
                               json_type_name(p)));
  }
  if (all_numbers(p) || is_mixed(p)) {
    for (size_t k = 0; k < p.size(); ++k) {
      const std::string at = fmt::format("{}[{}]", where, k);
      if (p[k].is_string()) {
        // BOS before a first string only, as llama-server tokenizes a mixed prompt.
        tok.encode_into(p[k].get_ref<const std::string&>(), /*add_special=*/k == 0, /*parse_special=*/true, &out.tokens);
        continue;
      }
      GS_ASSIGN_OR_RETURN(const int32_t id, read_token_id(p[k], at, id_end));
      out.tokens.push_back(id);
    }
    return out;
  }
  for (size_t k = 0; k < p.size(); ++k) {
    if (!p[k].is_number() && !p[k].is_string()) {
      return invalid(fmt::format("{}[{}] must be a token id or a string, got {}", where, k, json_type_name(p[k])));
    }
  }
  // Strings only: a list of prompts, which cannot stand for one prompt of a list.
  return invalid(fmt::format("{} must be one prompt (a string, or token ids mixed with strings), got a list of "
                             "strings", where));
}

Result<Prompt> read_prompt(const json& body, const RequestDefaults& defaults, const text::Tokenizer& tok) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return invalid("prompt is required");
  const json& p = *it;
  // An array that is neither token ids nor a mixed prompt is a list of prompts.
  if (p.is_array() && !p.empty() && !all_numbers(p) && !is_mixed(p)) {
    if (p.size() > 1) {
      return unsupported("prompt", fmt::format("one prompt a request ({} were sent); send one request per prompt",
                                               p.size()));
    }
    return read_one_prompt(p[0], "prompt[0]", defaults, tok);
  }
  return read_one_prompt(p, "prompt", defaults, tok);
}

// llama-server's n_predict 0 (or max_tokens 0, which it reads as n_predict's other name): the
// prompt only. True when one of the limits is 0; the others, when given, must be 0 too.
Result<bool> read_prompt_only(const json& body) {
  const char* zero = nullptr;
  for (const char* key : kLimitFields) {
    if (is_zero(body, key)) zero = key;
  }
  if (!zero) return false;
  for (const char* key : kLimitFields) {
    if (present(body, key) && !is_zero(body, key)) {
      return invalid(fmt::format("{} ({}) disagrees with {} (0: the prompt only); send one of them", key,
                                 body[key].dump(), zero));
    }
  }
  return true;
}

}  // namespace

Result<LlamaCompletionRequest> parse_llama_completion_request(const json& body, const RequestDefaults& defaults,
                                                              const text::Tokenizer& tok,
                                                              text::JsonGrammarCache* grammar_cache) {
  LlamaCompletionRequest req;
  // The OpenAI fields first: their errors name what this route takes instead (n_probs for
  // top_logprobs, which check_other_routes_fields would send to /v1/completions' logprobs).
  GS_RETURN_IF_ERROR(check_openai_only_fields(body));
  GS_RETURN_IF_ERROR(check_other_routes_fields(body, ApiRoute::kCompletions, kRoute));
  GS_RETURN_IF_ERROR(read_native_fields(body, &req));
  GS_ASSIGN_OR_RETURN(Prompt prompt, read_prompt(body, defaults, tok));
  if (prompt.text && prompt.text->empty()) return invalid("prompt must not be empty");
  if (!prompt.text && prompt.tokens.empty()) return invalid("prompt must not be empty");

  GS_ASSIGN_OR_RETURN(const bool prompt_only, read_prompt_only(body));

  // The rest as /v1/completions reads it: the prompt as text or ids, n_predict -1 where no
  // limit is given (the server's, not that route's 16), n_probs read above.
  json translated = body;
  translated.erase("n_probs");
  translated.erase("logprobs");      // what is left of it asks nothing (check_openai_only_fields)
  translated.erase("top_logprobs");  // the same
  translated["prompt"] = prompt.text ? json(*prompt.text) : json(prompt.tokens);
  const bool limited =
      std::any_of(std::begin(kLimitFields), std::end(kLimitFields), [&](const char* key) { return present(body, key); });
  if (prompt_only) {
    for (const char* key : kLimitFields) translated.erase(key);  // /v1/completions takes 1 or more
  } else if (!limited) {
    translated["n_predict"] = -1;
  }
  GS_ASSIGN_OR_RETURN(req.completion, parse_completion_request(translated, defaults, grammar_cache));
  GenerationOptions& gen = req.completion.gen;
  if (prompt_only) {
    // The engine prefills the prompt into a slot's cache and generates nothing (GenerationRequest::max_tokens).
    if (gen.sampling.min_tokens > 0) {
      return invalid(fmt::format("min_tokens ({}) is more than n_predict (0: the prompt only)", gen.sampling.min_tokens));
    }
    gen.max_tokens = 0;
  }
  gen.n_logprobs = req.n_probs > 0 ? req.n_probs : -1;
  req.wants_tokens = gen.stream || req.return_tokens;
  return req;
}

std::string llama_completion_error_param(std::string_view message) {
  std::string param = error_param(message);
  if (!param.empty()) return param;
  for (const std::string_view field : kNativeFields) {
    if (message.substr(0, field.size()) != field) continue;
    if (message.size() == field.size() || message[field.size()] == ' ' || message[field.size()] == ':' ||
        message[field.size()] == ',') {
      return std::string(field);
    }
  }
  // "prompt[0].multimodal_data ..." is error_param's ("prompt" is one of its roots).
  return {};
}

}  // namespace gs::server
