// OpenAI request bodies as typed values: /v1/chat/completions and /v1/completions, parsed
// and validated from JSON. Every error names the field at fault (400 invalid_request_error).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

// Limits of a chat request, shared by the routes that build one (the OpenAI chat route and
// the Anthropic Messages adapter, anthropic_request.h).
inline constexpr size_t kMaxStopStrings = 16;
// Distinct ids in vLLM's stop_token_ids.
inline constexpr size_t kMaxStopTokenIds = 64;
inline constexpr size_t kMaxTools = 512;

// A function name the prompt and the output parser handle: 1-128 characters of a-z, A-Z,
// 0-9, '_', '-' and '.'.
bool valid_function_name(std::string_view name);

// The most choices (`n`) one request may ask for; more is a 400 naming n. A server also
// refuses an n above its slots plus its queue, which it could never hold at once.
inline constexpr int32_t kMaxChoices = 16;

// llama-server's reasoning_format (decision 0034): where a chat completion puts the model's
// thinking. Only how the output is written out: what is generated, where stop strings match,
// the tool calls and the usage are the same in every format.
enum class ReasoningFormat {
  kDeepseek,        // thoughts in reasoning_content; content holds the answer only
  kNone,            // not extracted: each block stays in content, with its markup
  kDeepseekLegacy,  // both: reasoning_content, and each block in content as under kNone
};

// "deepseek", "none", "deepseek-legacy", or "auto" (kDeepseek: Gemma 4 marks its thinking
// with its own tokens, which this server always recognises); nullopt for any other name.
std::optional<ReasoningFormat> parse_reasoning_format(std::string_view name);

// What the server fills in when a request leaves a field out.
struct RequestDefaults {
  SamplingParams sampling;            // the model's recommended sampling, or OpenAI's
  bool enable_thinking = true;        // --reasoning on|off
  int32_t reasoning_budget = -1;      // --reasoning-budget (-1: unlimited, 0: no thinking)
  ReasoningFormat reasoning_format = ReasoningFormat::kDeepseek;  // --reasoning-format
  int32_t n_vocab = 0;                // bound for top_k and prompt token ids (0: unchecked)
  // The model's chat template (its GGUF's tokenizer.chat_template, text::detect_chat_template).
  text::ChatTemplate chat_template = text::ChatTemplate::kGemma4;
};

// Fields both endpoints share.
struct GenerationOptions {
  std::optional<int32_t> max_tokens;  // unset: the server's default cap
  SamplingParams sampling;
  std::vector<std::string> stop;
  // Choices to generate (OpenAI's n, 1..kMaxChoices): each its own engine request, choice i
  // seeded with seed + i when a seed is given (decision 0030).
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  // stream_options.continuous_usage_stats (vLLM's), with include_usage: every chunk carries the
  // usage so far (its choice's completion tokens), not null.
  bool continuous_usage = false;
  int32_t n_logprobs = -1;            // -1: none; chat: top_logprobs; completions: logprobs
  // Extensions: "speculative": false turns MTP drafting off for the request; "draft_max"
  // lowers the drafts per round (0 also turns drafting off).
  bool speculative = true;
  std::optional<int32_t> draft_max;
  // cache_prompt (llama-server's, default true): false starts the request without the prefix
  // a slot kept from its previous request, so that its prompt is computed alone, as a fresh
  // server would (GenerationRequest::reuse_prefix).
  bool cache_prompt = true;
  // ignore_eos (vLLM, llama-server): generation goes on past the model's end-of-generation
  // tokens, to max_tokens or the context (GenerationRequest::ignore_eog); for benchmarks.
  bool ignore_eos = false;
  // stop_token_ids (vLLM): more end-of-generation token ids for this request
  // (GenerationRequest::extra_eog), distinct; they end it even under ignore_eos.
  std::vector<int32_t> stop_token_ids;
  // response_format json_object / json_schema (decision 0027): the grammar the output must
  // follow; null for free text.
  std::shared_ptr<const text::JsonGrammar> json_grammar;
};

struct ChatCompletionRequest {
  std::string model;
  std::vector<text::ChatMessage> messages;
  std::vector<text::ChatTool> tools;
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;       // kNamed
  bool parallel_tool_calls = true;
  // The Responses API's max_tool_calls (decision 0053): at most this many calls in the answer,
  // the output ending after the last one; -1: no limit. The chat route has no such field.
  int32_t max_tool_calls = -1;
  // The tools came as the legacy `functions` / `function_call` (decision 0030): the answer
  // holds message.function_call (one call) and finish_reason "function_call".
  bool legacy_functions = false;
  bool enable_thinking = true;        // after reasoning_effort / chat_template_kwargs
  int32_t reasoning_budget = -1;
  // The chat route's reasoning_format, else the server's --reasoning-format. The Messages and
  // Responses adapters keep kDeepseek: their answers carry the thinking in blocks of their own.
  ReasoningFormat reasoning_format = ReasoningFormat::kDeepseek;
  // A trailing assistant message (without calls) is continued as a prefill, as llama-server
  // does on the chat route and Anthropic's API does. Off (the Responses API, where OpenAI
  // answers such input with a new message): it is a closed turn and a new one begins.
  bool continue_final_message = true;
  // vLLM's and llama-server's add_generation_prompt: false renders the messages without the
  // model's turn opener (POST /apply-template); a generating route takes false only where the
  // prompt ends in the model's turn anyway (request_plan.h).
  bool add_generation_prompt = true;
  // Which Gemma 4 template renders the messages: the model's (RequestDefaults::chat_template).
  text::ChatTemplate chat_template = text::ChatTemplate::kGemma4;
  GenerationOptions gen;
};

struct CompletionRequest {
  std::string model;
  std::string prompt_text;            // when the prompt was text
  std::vector<int32_t> prompt_tokens; // when the prompt was token ids
  bool prompt_is_tokens = false;
  bool echo = false;
  GenerationOptions gen;
};

// `grammar_cache` (null: none): the server's compiled grammars (decision 0072), through which
// the request's output schema (response_format, json_schema, guided_json, structured_outputs)
// compiles (server/output_schema.h): the same grammar or error as without it.
Result<ChatCompletionRequest> parse_chat_request(const nlohmann::json& body, const RequestDefaults& defaults,
                                                 text::JsonGrammarCache* grammar_cache = nullptr);

// The readers of request fields that the OpenAI routes and the Anthropic Messages adapter
// (anthropic_request.cpp) share; errors (kInvalidArgument) name the field, as the parsers'.
//
// Which top_k values turn top-k off: 0 only (Anthropic's range), or 0 and -1 (vLLM's "consider
// all tokens", which its clients send; the OpenAI-shaped routes).
enum class TopKOff { kZero, kZeroOrMinusOne };
// temperature ([0, 2]), top_p ([0, 1]) and top_k ([0, n_vocab], or [0, 2^31 - 1] when
// defaults.n_vocab is 0; -1 too with kZeroOrMinusOne, read as 0) into *sampling, each where
// the body has it.
Status read_sampling(const nlohmann::json& body, const RequestDefaults& defaults, SamplingParams* sampling,
                     TopKOff top_k_off = TopKOff::kZero);
// Stop strings under `key` appended to *out: an array of at most kMaxStopStrings strings, or
// (`one_string`) a single string too; empty strings are dropped, null or absent is none.
Status read_stop_strings(const nlohmann::json& body, const char* key, bool one_string, std::vector<std::string>* out);

// The tool a call is forced to: the one tool_choice names, or the only tool under
// "required". Its index in req.tools; nullopt when no call is forced to one known function.
std::optional<size_t> forced_tool(const ChatCompletionRequest& req);
// `grammar_cache`: as parse_chat_request's.
Result<CompletionRequest> parse_completion_request(const nlohmann::json& body, const RequestDefaults& defaults,
                                                   text::JsonGrammarCache* grammar_cache = nullptr);

// The request field that a validation error is about, spelled as OpenAI's error.param
// ("max_tokens", "messages[2].content", "tools[0].function.name"): every error of the
// parsers above, of the chat conversion and of the prompt renderer begins with the path of
// the field at fault ("messages[2].content must be ...", "tools[0].function.name: ...").
// "" when the message begins with no field of a request ("the request body is not JSON").
std::string error_param(std::string_view message);

// Every top-level field the request parsers of this header read (and /tokenize's and
// /detokenize's, token_api.h): the roots error_param() knows.
std::span<const std::string_view> chat_request_field_names();

}  // namespace gs::server
