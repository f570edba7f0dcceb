// Rendering, tokenizing and option mapping for chat and text completion requests.
#include "server/request_plan.h"

#include <optional>
#include <string>

#include "core/log.h"
#include "engine/held_calls.h"
#include "server/tool_grammars.h"
#include "text/chat_format.h"
#include "text/json_grammar.h"

namespace gs::server {

namespace {

// min_tokens holds the end-of-generation tokens back, and a constrained output's last step
// allows only those (or a call's closer): the two cannot both hold. ignore_eos goes on past
// them, where a constrained output has ended (its constraint is over, so free text would follow
// the value): the same. `forced_call`: tool_choice forces a call (one whose schema the compiler
// cannot follow leaves no constraint, but the answer is still the call).
Status check_end_holders(const GenerationRequest& r, bool forced_call) {
  const bool constrained = r.json.grammar || !r.allowed_completions.empty() || r.forced_calls.on || forced_call;
  if (r.sampling.min_tokens > 0 && constrained) {
    return Status(StatusCode::kInvalidArgument,
                  "min_tokens cannot be combined with structured output (response_format, json_schema) or a forced "
                  "tool call");
  }
  if (r.ignore_eog && constrained) {
    return Status(StatusCode::kInvalidArgument,
                  "ignore_eos cannot be combined with structured output (response_format, json_schema) or a forced "
                  "tool call: the answer ends with the value, and text after it would not follow the schema");
  }
  return {};
}

void fill_common(const GenerationOptions& gen, const PlanLimits& limits, GenerationRequest* r) {
  r->json.grammar = gen.json_grammar;
  r->max_tokens = gen.max_tokens ? *gen.max_tokens : limits.default_max_tokens;
  r->sampling = gen.sampling;
  r->n_logprobs = gen.n_logprobs;
  r->speculative = gen.speculative && gen.draft_max.value_or(1) != 0;
  r->draft_max = gen.draft_max ? *gen.draft_max : limits.draft_max;
  r->reuse_prefix = gen.cache_prompt;
  r->ignore_eog = gen.ignore_eos;
  r->extra_eog = gen.stop_token_ids;
}

// How a forced call's arguments may begin (decision 0016, extended): `key:` for each
// property the tool's schema declares, and `}` when it requires none. Empty (no constraint)
// when the schema declares no properties or admits others (`additionalProperties` other than
// false or absent). Only the first key is constrained; what follows it is the model's.
std::vector<std::string> first_key_completions(const text::ChatTool& tool) {
  const nlohmann::json& p = tool.parameters;
  if (!p.is_object()) return {};
  const auto props = p.find("properties");
  if (props == p.end() || !props->is_object() || props->empty()) return {};
  const auto extra = p.find("additionalProperties");
  if (extra != p.end() && !(extra->is_boolean() && !extra->get<bool>())) return {};
  std::vector<std::string> out;
  for (const auto& item : props->items()) {
    const std::string& key = item.key();
    // A key the bare form cannot spell unambiguously leaves the arguments free.
    if (key.empty() || key.find_first_of(" \t\r\n:,{}[]\"'<>=") != std::string::npos) return {};
    out.push_back(key + ":");
  }
  const auto req = p.find("required");
  if (req == p.end() || !req->is_array() || req->empty()) out.push_back("}");
  return out;
}

// The forced call's opener (decision 0016): the prompt ends inside the call, so the model
// can only continue it. With one function known (named, or "required" with a single tool)
// the opener goes up to the argument dict's '{', which leaves the model no way out of the
// call form. "" when no call is forced.
std::string forced_call_prefix(const ChatCompletionRequest& req) {
  const std::string opener = std::string(text::markup::kToolCallOpen) + "call:";
  switch (req.tool_choice) {
    case ToolChoice::kAuto:
    case ToolChoice::kNone:
      return {};
    case ToolChoice::kRequired:
      return req.tools.size() == 1 ? opener + req.tools[0].name + "{" : opener;
    case ToolChoice::kNamed:
      return opener + req.tool_choice_name + "{";
  }
  return {};
}

// The calls an answer may hold as the text after their "<|tool_call>": each function the
// choice allows (auto and "required": every tool; named: that one), spelled "call:NAME{" and
// then following its schema, or "call:NAME{key:" where the grammar cannot hold the schema.
// `more_calls`: another call may follow a call's closer; `list_openers`: the openers are
// needed (not for the first of forced calls, which the prompt and the request's own
// constraint begin, when no other may follow). Off when the markup is unknown.
void plan_calls(const ChatCompletionRequest& req, const text::Tokenizer& tok, ToolGrammars& grammars,
                bool more_calls, bool list_openers, ForcedCalls* f) {
  const auto open = tok.find_token(text::markup::kToolCallOpen);
  const auto close = tok.find_token(text::markup::kToolCallClose);
  if (!open || !close) return;
  f->on = true;
  f->open_token = *open;
  f->close_token = *close;
  f->more_calls = more_calls;
  for (size_t i = 0; list_openers && i < req.tools.size(); ++i) {
    const text::ChatTool& t = req.tools[i];
    if (req.tool_choice == ToolChoice::kNamed && t.name != req.tool_choice_name) continue;
    const std::string opener = "call:" + t.name + "{";
    std::string why_not;
    if (auto g = grammars.grammar(i, &why_not)) {
      f->openers.push_back(opener);
      f->arguments.push_back({opener, std::move(g)});
      continue;
    }
    const std::vector<std::string> keys = first_key_completions(t);
    if (keys.empty()) f->openers.push_back(opener);
    for (const auto& k : keys) f->openers.push_back(opener + k);
  }
}

bool parallel_calls(const ChatCompletionRequest& req) {
  return req.parallel_tool_calls && req.max_tool_calls != 1;
}

// After a forced call (decision 0016, "After the forced call"): only an end, or where parallel
// calls are permitted, more calls of the kind the choice allows.
void plan_later_calls(const ChatCompletionRequest& req, const text::Tokenizer& tok, ToolGrammars& grammars,
                      GenerationRequest* r) {
  const bool more = parallel_calls(req);
  plan_calls(req, tok, grammars, more, /*list_openers=*/more, &r->forced_calls);
}

// A prefill that left a tool call open before its arguments' "{" (`written`: the call's text
// after its opener, "call:get" or ""): the rest must complete the opener of a declared function
// ("call:NAME{", or "call:NAME{key:" where the grammar cannot hold the schema), as the name of a
// call forced among several (decision 0016), and a function's arguments then follow its schema.
// Nothing when no declared opener begins with `written`: the call's text is the model's.
void plan_open_call_name(const ChatCompletionRequest& req, const text::Tokenizer& tok, ToolGrammars& grammars,
                         std::string_view written, GenerationRequest* r) {
  ForcedCalls all;
  plan_calls(req, tok, grammars, /*more_calls=*/false, /*list_openers=*/true, &all);
  const auto rest_of = [written](const std::string& opener) -> std::optional<std::string> {
    if (opener.size() <= written.size() || !opener.starts_with(written)) return std::nullopt;
    return opener.substr(written.size());
  };
  for (const std::string& opener : all.openers) {
    if (auto rest = rest_of(opener)) r->allowed_completions.push_back(std::move(*rest));
  }
  for (const CallArguments& a : all.arguments) {
    if (auto rest = rest_of(a.opener)) r->call_arguments.push_back({std::move(*rest), a.grammar});
  }
}

// Structured output where a prefill left a tool call open (`open_call`, from its opener on):
// the answer is calls only, as after a forced call's opener. When the open call names a
// declared function whose schema the grammar holds, and the arguments written so far begin a
// value of it, the rest of them follows it up to the call's closer; otherwise the call's text
// is the model's up to its closer (the form of a forced call whose schema cannot be held).
void plan_open_call(const ChatCompletionRequest& req, const text::Tokenizer& tok, ToolGrammars& grammars,
                    std::string_view open_call, GenerationRequest* r) {
  plan_calls(req, tok, grammars, parallel_calls(req), /*list_openers=*/parallel_calls(req), &r->forced_calls);
  if (!r->forced_calls.on) return;
  if (open_call.find('{') == std::string_view::npos) {
    plan_open_call_name(req, tok, grammars, open_call.substr(text::markup::kToolCallOpen.size()), r);
    return;
  }
  const std::string head = std::string(text::markup::kToolCallOpen) + "call:";
  if (open_call.substr(0, head.size()) != head) return;
  const std::string_view rest = open_call.substr(head.size());
  const size_t brace = rest.find('{');
  if (brace == std::string_view::npos) return;
  const std::string_view name = rest.substr(0, brace);
  for (size_t i = 0; i < req.tools.size(); ++i) {
    if (req.tools[i].name != name) continue;
    std::string why_not;
    auto g = grammars.grammar(i, &why_not);
    if (!g) return;
    const std::string arguments(rest.substr(brace));
    if (!text::JsonMatcher(g).feed(arguments)) return;
    r->json.grammar = std::move(g);
    r->json.prefix = arguments;
    r->json.end_tokens = {r->forced_calls.close_token};
    return;
  }
}

bool tools_offered(const ChatCompletionRequest& req) {
  return req.tool_choice != ToolChoice::kNone && !req.tools.empty();
}

// The tool call that `prefill` (an assistant message's open text) opened and did not close,
// from its opener on ("<|tool_call>call:get_weather{city:"); "" when it ends outside one.
std::string open_tool_call(std::string_view prefill) {
  const size_t open = prefill.rfind(text::markup::kToolCallOpen);
  if (open == std::string_view::npos) return "";
  if (prefill.find(text::markup::kToolCallClose, open) != std::string_view::npos) return "";
  return std::string(prefill.substr(open));
}

// The call a prefill left open (`open_tool_call`), where the tool choice lets the answer go on
// with it: under auto any such call; under a forced choice ("required", a named function) one
// whose text so far can still be, or already is, the opener of a function the choice allows
// ("call:NAME{"). "" otherwise: a forced choice then begins its own call after the prefill.
// Before (decision 0067), a forced choice always wrote its opener after the prefill's text, so
// the model read a call opened inside the open one, and the prefill's call was dropped.
std::string continued_open_call(const ChatCompletionRequest& req, const text::RenderedPrompt& prompt) {
  if (!tools_offered(req) || !prompt.prefill) return "";
  std::string open = open_tool_call(prompt.prefill_text);
  if (open.empty() || req.tool_choice == ToolChoice::kAuto) return open;
  const std::string_view written = std::string_view(open).substr(text::markup::kToolCallOpen.size());
  for (const text::ChatTool& t : req.tools) {
    if (req.tool_choice == ToolChoice::kNamed && t.name != req.tool_choice_name) continue;
    const std::string opener = "call:" + t.name + "{";
    if (opener.starts_with(written) || written.starts_with(opener)) return open;
  }
  return "";
}

// How the output goes on inside a thought the prompt left open (`prompt.prefill_reasoning`):
// after a prefill's reasoning, or its text's own thought with text in it, the output continues
// that text; right after its text's opener the output may write the "thought" label first; after
// the label alone, the block's leading whitespace is still the label's.
void continue_open_thought(const text::RenderedPrompt& prompt, text::ParserOptions* parser) {
  if (!prompt.prefill_reasoning) return;
  const size_t at = prompt.prefill ? text::open_thought_offset(prompt.prefill_text) : std::string_view::npos;
  if (at == std::string_view::npos) {
    parser->continues_reasoning = true;  // reasoning_content's thought, with its text
    return;
  }
  std::string_view after = std::string_view(prompt.prefill_text).substr(at);
  if (after.empty()) {
    parser->continues_reasoning = true;
    parser->reasoning_label_pending = true;
    return;
  }
  while (!after.empty() && (after.back() == ' ' || after.back() == '\n' || after.back() == '\t' || after.back() == '\r')) {
    after.remove_suffix(1);
  }
  if (after == text::markup::kThoughtLabel) {
    parser->starts_in_reasoning = true;
    return;
  }
  parser->continues_reasoning = true;
}

// The messages rendered, with or without the generation prompt (the model's turn opener and
// its thought block), without the forced call's opener.
Result<text::RenderedPrompt> render_messages(const ChatCompletionRequest& req, bool add_generation_prompt) {
  text::ChatRenderOptions options;
  options.variant = req.chat_template;
  options.enable_thinking = req.enable_thinking;
  options.add_generation_prompt = add_generation_prompt;
  options.prefill_assistant = req.continue_final_message;  // a trailing assistant message is continued (llama-server)
  const std::span<const text::ChatTool> tools =
      tools_offered(req) ? std::span<const text::ChatTool>(req.tools) : std::span<const text::ChatTool>();
  return text::render_chat_prompt(req.messages, tools, options);
}

// render_chat_request's prompt with or without the generation prompt; without it, no forced
// call's opener either (that too begins the answer).
Result<text::RenderedPrompt> render_chat(const ChatCompletionRequest& req, bool add_generation_prompt) {
  GS_ASSIGN_OR_RETURN(text::RenderedPrompt prompt, render_messages(req, add_generation_prompt));
  if (!add_generation_prompt) return prompt;
  // A call the prefill left open is continued, not followed by a forced call's opener.
  const std::string opener = continued_open_call(req, prompt).empty() ? forced_call_prefix(req) : std::string();
  if (!opener.empty() && prompt.prefill_reasoning) {
    // A forced call comes after the thought a prefill left open: closed as the template
    // closes one.
    prompt.text += "\n";
    prompt.markup.push_back(text::TextSpan{prompt.text.size(), text::markup::kChannelClose.size()});
    prompt.text += text::markup::kChannelClose;
    prompt.prefill_reasoning = false;
  }
  prompt.text += opener;
  return prompt;
}

}  // namespace

Result<text::RenderedPrompt> render_chat_request(const ChatCompletionRequest& req) {
  return render_chat(req, req.add_generation_prompt);
}

std::vector<int32_t> chat_prompt_ids(const text::RenderedPrompt& prompt, const text::Tokenizer& tok) {
  return tok.encode_prompt(prompt.text, prompt.markup, /*add_special=*/true);
}

Result<GenerationPlan> plan_chat(const ChatCompletionRequest& req, const text::Tokenizer& tok,
                                 const PlanLimits& limits) {
  // A final assistant message with tool calls leaves the template's tool response open: the
  // model would write the tools' results itself. OpenAI's API refuses such a history (its calls
  // need tool messages after them); /apply-template still renders it (it does not generate).
  if (!req.messages.empty() && req.messages.back().role == text::ChatRole::kAssistant &&
      !req.messages.back().tool_calls.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "messages: the last message is an assistant message with tool calls; a generation needs their "
                  "results after it (a tool message, or a tool_result block, for each call), or the calls removed");
  }
  GenerationPlan plan;
  plan.chat = true;
  const bool tools_on = tools_offered(req);
  const std::span<const text::ChatTool> tools =
      tools_on ? std::span<const text::ChatTool>(req.tools) : std::span<const text::ChatTool>();
  if (!req.add_generation_prompt) {
    // Generation writes the model's turn, so it needs the prompt to end in it: false is taken
    // only where the prompt ends there anyway (a continued final assistant message, vLLM's
    // continue_final_message form; after a tool result), not read as true.
    GS_ASSIGN_OR_RETURN(const text::RenderedPrompt without, render_messages(req, false));
    GS_ASSIGN_OR_RETURN(const text::RenderedPrompt with, render_messages(req, true));
    if (without.text != with.text) {
      return Status(StatusCode::kUnimplemented,
                    "add_generation_prompt: false is supported only by /apply-template here, or where the prompt "
                    "ends in the model's turn anyway (a final assistant message, which is continued): a generated "
                    "answer is the model's turn");
    }
  }
  GS_ASSIGN_OR_RETURN(text::RenderedPrompt prompt, render_chat(req, true));
  // A prefill that ends inside a tool call it opened: the output goes on with that call, so the
  // parser starts from the call's opener, as after a forced call's (decision 0048); under a
  // forced choice too where the call can be one it allows (decision 0067).
  const std::string open_call = continued_open_call(req, prompt);
  const bool prefill_call = !open_call.empty();  // the answer goes on with a call the prefill opened
  plan.output_prefix = prefill_call ? open_call : forced_call_prefix(req);
  plan.parser.forced_call = !plan.output_prefix.empty();
  // Every grammar of a tool's arguments that the plan needs, each compiled once, from one
  // pattern budget for all the tools.
  ToolGrammars grammars(req.tools, limits.tool_pattern_budget, limits.grammar_cache.get());
  switch (req.tool_choice) {
    case ToolChoice::kAuto:
    case ToolChoice::kNone:
      break;
    case ToolChoice::kRequired:
      if (prefill_call) break;  // the prefill's call, planned below
      if (req.tools.size() == 1) {
        plan.request.allowed_completions = first_key_completions(req.tools[0]);
      } else {
        // Several tools: the name is the model's to choose, but only among the declared
        // ones; the engine masks every token that would leave "NAME{" (decision 0016). Then
        // the chosen function's arguments follow its schema where the schema compiler holds
        // it (decision 0027), and otherwise only their first key is constrained (a free key
        // where the schema leaves it free).
        for (size_t i = 0; i < req.tools.size(); ++i) {
          const text::ChatTool& t = req.tools[i];
          std::string why_not;
          if (auto g = grammars.grammar(i, &why_not)) {
            plan.request.allowed_completions.push_back(t.name + "{");
            plan.request.call_arguments.push_back({t.name + "{", std::move(g)});
            continue;
          }
          if (!why_not.empty()) {
            GS_LOG_WARN("tool_choice 'required' may call '{}', whose parameters the schema compiler cannot follow "
                        "({}): only their first key is constrained",
                        t.name, why_not);
          }
          const std::vector<std::string> keys = first_key_completions(t);
          if (keys.empty()) plan.request.allowed_completions.push_back(t.name + "{");
          for (const auto& k : keys) plan.request.allowed_completions.push_back(t.name + "{" + k);
        }
      }
      break;
    case ToolChoice::kNamed:
      if (prefill_call) break;
      for (const auto& t : req.tools) {
        if (t.name == req.tool_choice_name) plan.request.allowed_completions = first_key_completions(t);
      }
      break;
  }
  // The forced opener holds only user-defined tokens, which match anywhere.
  plan.request.prompt = chat_prompt_ids(prompt, tok);
  fill_common(req.gen, limits, &plan.request);
  const bool structured = plan.request.json.grammar != nullptr;
  if (plan.request.json.grammar) {
    // Structured output (decision 0027): a forced call is the output, the format is moot;
    // otherwise a thought may come first, and a tool call instead of the value when tools
    // are offered.
    if (req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kNamed) {
      plan.request.json.grammar.reset();
    } else if (prefill_call) {
      // The answer is the rest of the call the prefill opened, and the calls after it: the
      // value's grammar has no place in it (it was applied inside the call's arguments).
      // The call's own schema takes its place where it can read the arguments written so far.
      plan.request.json.grammar.reset();
      plan_open_call(req, tok, grammars, plan.output_prefix, &plan.request);
    } else {
      // A thought may come first: thinking on, or a prefill that left one open (which the value
      // follows once it is closed, thinking on or off).
      if (req.enable_thinking || prompt.prefill_reasoning) {
        const auto open = tok.find_token(text::markup::kChannelOpen);
        const auto close = tok.find_token(text::markup::kChannelClose);
        if (open && close) {
          plan.request.json.think_open = *open;
          plan.request.json.think_close = *close;
          if (const auto turn = tok.find_token(text::markup::kTurnOpen)) plan.request.json.thought_breakers.push_back(*turn);
        }
      }
      if (tools_on) {
        if (const auto call = tok.find_token(text::markup::kToolCallOpen)) plan.request.json.escape_tokens.push_back(*call);
        // A call instead of the value is a call of a declared function that follows its schema,
        // and the answer is calls only, as with a forced call.
        plan_calls(req, tok, grammars, parallel_calls(req), /*list_openers=*/true, &plan.request.json.calls);
      }
      // An assistant prefill whose text can begin the value ("{", as Anthropic's API is
      // steered) is its start: the output goes on from it, so prefill plus answer is one
      // value (before, a second value began after it). Other text ("Here it is:") stays
      // before the value, which the answer then holds whole, as llama-server does.
      if (prompt.prefill && text::JsonMatcher(plan.request.json.grammar).feed(prompt.prefill_text)) {
        plan.request.json.prefix = prompt.prefill_text;
      }
    }
  }
  // tool_choice auto without structured output (decision 0065): the text is the model's until it
  // opens a call; from the opener on the call is held as a forced call is, to a declared function
  // and its schema, and only an end or more calls follow it. A prefill that left a call open is
  // continued under the same rules at once. Not with min_tokens or ignore_eos, which hold back
  // or go past the end that a call's answer comes to: there the calls stay the model's.
  if (!structured && tools_on && req.tool_choice == ToolChoice::kAuto && plan.request.sampling.min_tokens <= 0 &&
      !plan.request.ignore_eog) {
    if (prefill_call) {
      plan_open_call(req, tok, grammars, plan.output_prefix, &plan.request);
    } else {
      plan_calls(req, tok, grammars, parallel_calls(req), /*list_openers=*/true, &plan.request.lazy_calls);
    }
  }
  const bool forced_call = tools_on && (req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kNamed);
  if (forced_call && prefill_call) {
    // A forced choice whose call the prefill opened: the rest of it, among the functions the
    // choice allows, under their schemas; then the calls after a forced one.
    plan_open_call(req, tok, grammars, plan.output_prefix, &plan.request);
  }
  // A forced call of one known function: its arguments follow the tool's schema, in the call
  // form, from the "{" in the prompt to the call's closer.
  const std::optional<size_t> forced = forced_tool(req);
  const auto call_close = tok.find_token(text::markup::kToolCallClose);
  if (!plan.request.call_arguments.empty()) {
    if (call_close) {
      plan.request.call_end_tokens = {*call_close};
    } else {
      plan.request.call_arguments.clear();  // no closer to end the arguments: the names alone
    }
  }
  if (forced && call_close && !prefill_call) {  // (the prefill's call was planned above)
    const text::ChatTool& t = req.tools[*forced];
    std::string why_not;
    if (auto g = grammars.grammar(*forced, &why_not)) {
      plan.request.json.grammar = std::move(g);
      plan.request.json.prefix = "{";
      plan.request.json.end_tokens = {*call_close};
      plan.request.allowed_completions.clear();
    } else if (!why_not.empty()) {
      // Accepted (real tool schemas carry such keywords, and OpenAI takes them), but the
      // arguments are then the model's: said once per request, where an operator looks.
      GS_LOG_WARN("tool_choice forces '{}', whose parameters the schema compiler cannot follow ({}): only the "
                  "call's form is constrained",
                  t.name, why_not);
    }
  }
  if (req.enable_thinking && req.reasoning_budget > 0) {
    const auto open = tok.find_token(text::markup::kChannelOpen);
    const auto close = tok.find_token(text::markup::kChannelClose);
    if (open && close) {
      plan.request.reasoning_budget = req.reasoning_budget;
      plan.request.reasoning_open = *open;
      plan.request.reasoning_close = *close;
    }
  }
  // A prefill's open thought (its reasoning with thinking on, or one its text opened): the
  // reasoning budget and a structured-output value's thought both start inside it.
  plan.request.starts_in_thought = prompt.prefill_reasoning;
  plan.parser.parse_reasoning = true;
  // Where the thinking goes (decision 0034): the parser writes the blocks into the content
  // for none and deepseek-legacy; the Generation drops the reasoning events for none.
  switch (req.reasoning_format) {
    case ReasoningFormat::kDeepseek:
      plan.parser.reasoning_in_content = false;
      plan.reasoning_content = true;
      break;
    case ReasoningFormat::kNone:
      plan.parser.reasoning_in_content = true;
      plan.reasoning_content = false;
      break;
    case ReasoningFormat::kDeepseekLegacy:
      plan.parser.reasoning_in_content = true;
      plan.reasoning_content = true;
      break;
  }
  // A call's opener (a forced call's, or the one a prefill left open) follows the prefill's text, so the
  // output is the call, not content.
  // A prefill's open thought (its reasoning, thinking on and no text after it; or a thought its
  // text opened): the output goes on with it, as reasoning, not content.
  plan.parser.continues_content = prompt.prefill && plan.output_prefix.empty() && !prompt.prefill_reasoning;
  continue_open_thought(prompt, &plan.parser);
  plan.parser.parse_tool_calls = tools_on;
  for (const auto& t : tools) plan.parser.tool_names.push_back(t.name);  // namespaced names (decision 0024)
  plan.parser.stop = text::StopStrings(req.gen.stop);  // built once, shared by the choices
  plan.single_tool_call = tools_on && (!req.parallel_tool_calls || req.max_tool_calls == 1);
  plan.max_tool_calls = tools_on ? req.max_tool_calls : -1;
  if (forced_call && !prefill_call) plan_later_calls(req, tok, grammars, &plan.request);
  plan.calls_only = forced_call;
  // Where a constraint holds every call's text after its opener to a declared function's opener
  // (the lazy calls of tool_choice auto, a call instead of a structured value, the calls after a
  // forced one), a call that max_tokens cuts inside its header is a cut call, not content
  // (decision 0067: it came out as "call:get_w").
  plan.parser.calls_held = calls_held_from_opener(plan.request.lazy_calls) ||
                           (plan.request.json.grammar && calls_held_from_opener(plan.request.json.calls)) ||
                           (calls_held_from_opener(plan.request.forced_calls) && plan.request.forced_calls.more_calls);
  GS_RETURN_IF_ERROR(check_end_holders(plan.request, forced_call));
  return plan;
}

Result<GenerationPlan> plan_completion(const CompletionRequest& req, const text::Tokenizer& tok,
                                       const PlanLimits& limits) {
  GenerationPlan plan;
  plan.chat = false;
  if (req.prompt_is_tokens) {
    plan.request.prompt = req.prompt_tokens;
  } else {
    plan.request.prompt = tok.encode(req.prompt_text, /*add_special=*/true, /*parse_special=*/true);
  }
  fill_common(req.gen, limits, &plan.request);
  plan.stop = text::StopStrings(req.gen.stop);  // built once, shared by the choices
  GS_RETURN_IF_ERROR(check_end_holders(plan.request, /*forced_call=*/false));
  return plan;
}

}  // namespace gs::server
