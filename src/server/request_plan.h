// From a typed OpenAI request to what the engine and the output pipeline need: the
// rendered and tokenized prompt, limits, sampling, parser options and tool-choice forcing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/api_request.h"
#include "server/generation.h"
#include "text/chat_format.h"
#include "text/json_grammar_cache.h"
#include "text/regex_dfa.h"
#include "text/tokenizer.h"

namespace gs::server {

struct PlanLimits {
  int32_t default_max_tokens = 4096;  // when a request gives none (bug-case 26: never unbounded)
  int32_t draft_max = -1;             // -1: the engine's default
  // What the patterns of all the tool schemas a forced call compiles may spend together (one
  // schema's budget; decision 0051).
  text::RegexBudget tool_pattern_budget;
  // JSON Schema grammars compiled for earlier requests: the tools' arguments here (decision
  // 0066), the output schemas through the request parsers (decision 0072, HttpServer passes
  // the same object); shared by the requests a server plans at once (thread-safe); null: each
  // request compiles its own.
  std::shared_ptr<text::JsonGrammarCache> grammar_cache;
};

// The prompt text a chat request puts before the model's first token: the messages rendered
// with the Gemma 4 format (tools declared unless tool_choice is "none"; the generation prompt
// unless add_generation_prompt is false, and then no forced-call opener), then the forced
// tool-call opener for tool_choice "required" (`<|tool_call>call:`, or `<|tool_call>call:NAME{`
// when only one tool is declared) or a named function (`<|tool_call>call:NAME{`). Without BOS
// (the tokenizer adds it). `markup` spans the renderer's markup tokens (the opener holds
// only user-defined tokens). What plan_chat tokenizes and POST /apply-template returns; the
// text tokenized with BOS and special-token text parsed gives plan_chat's ids unless a
// message spells control-token text ("<|turn>"), which encode_prompt keeps as text.
// Errors: kInvalidArgument from the renderer (e.g. an unknown tool_call_id).
Result<text::RenderedPrompt> render_chat_request(const ChatCompletionRequest& req);

// The model's input for a rendered chat prompt: BOS, then the text with control tokens only
// where the renderer wrote markup (message text cannot open or close a turn). What plan_chat
// feeds the model, and vLLM's /tokenize `messages` form answers.
std::vector<int32_t> chat_prompt_ids(const text::RenderedPrompt& prompt, const text::Tokenizer& tok);

// Chat: render_chat_request (always with the generation prompt: add_generation_prompt false is
// kUnimplemented unless the prompt ends in the model's turn either way), tokenized with BOS,
// control tokens only where the renderer wrote markup (message text cannot inject a turn). A
// reasoning budget
// (> 0, thinking on) goes to the engine with the ids of `<|channel>` and `<channel|>`.
// Errors: kInvalidArgument from the renderer (e.g. an unknown tool_call_id), and for a final
// assistant message with tool calls ("messages: the last message is an assistant message with
// tool calls; ..."): nothing answers them, and the model would write their results itself.
Result<GenerationPlan> plan_chat(const ChatCompletionRequest& req, const text::Tokenizer& tok,
                                 const PlanLimits& limits);
// Text completion: the prompt text tokenized with BOS (special-token text parsed), or the
// token ids as given; raw output with stop strings.
Result<GenerationPlan> plan_completion(const CompletionRequest& req, const text::Tokenizer& tok,
                                       const PlanLimits& limits);

}  // namespace gs::server
