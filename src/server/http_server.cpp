// HTTP routes of the OpenAI-compatible API on cpp-httplib.
#include "server/http_server.h"

#include <sys/socket.h>

#include <httplib.h>

#include <algorithm>
#include <exception>
#include <functional>

#include "core/host_memory.h"
#include "core/log.h"
#include "server/anthropic_format.h"
#include "server/anthropic_request.h"
#include "server/api_error.h"
#include "server/choice_set.h"
#include "server/http_head.h"
#include "server/http_listener.h"
#include "server/json_input.h"
#include "server/slot_actions.h"
#include "server/llama_completion_request.h"
#include "server/llama_native_format.h"
#include "server/listen_address.h"
#include "server/openai_format.h"
#include "server/prometheus.h"
#include "server/responses_format.h"
#include "server/responses_request.h"
#include "server/token_api.h"
#include "server/tool_integers.h"

namespace gs::server {

size_t body_limit_for_context(int64_t context_tokens) {
  constexpr size_t kFloor = size_t{8} << 20, kCeiling = size_t{1} << 30, kPerToken = 24;
  if (context_tokens <= 0) return kFloor;
  const size_t tokens = std::min(static_cast<size_t>(context_tokens), kCeiling);  // no overflow below
  return std::clamp(tokens * kPerToken, kFloor, kCeiling);
}

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.http_status;
  res.set_content(e.body(), "application/json");
}

// The Anthropic Messages routes (/v1/messages and below) answer errors in Anthropic's shape.
bool is_messages_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/v1/messages";
  return path.substr(0, kPrefix.size()) == kPrefix && (path.size() == kPrefix.size() || path[kPrefix.size()] == '/');
}

void send_anthropic_error(httplib::Response& res, const ApiError& e) {
  res.status = e.http_status;
  res.set_content(anthropic_error_body(e), "application/json");
}

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

// What one choice of a response has consumed so far.
struct ChoiceOutput {
  std::vector<ShownToken> all_tokens;
  std::vector<ShownToken> pending_logprobs;      // released but not yet sent (streaming)
  TextOffsets text_offsets;                      // completions logprobs
  int32_t n_tokens = 0;                          // tokens consumed so far (continuous usage)
  // Chat streams: content bytes sent, and those the logprob entries sent spell; an entry goes
  // out with the content chunk that carries its text, never ahead of it (decision 0055).
  size_t content_sent = 0;
  size_t content_spelled = 0;
  bool logprobs_sent = false;  // a chunk has carried this choice's logprobs
};

// Shared by a streamed or non-streamed response while its content provider runs.
struct ResponseState {
  std::unique_ptr<ChoiceSet> choices;
  std::vector<ChoiceOutput> outputs;  // one per choice
  ResponseMeta meta;
  bool chat = true;
  bool anthropic = false;  // /v1/messages: Anthropic's message and events (chat is true too)
  int32_t n_prompt = 0;    // prompt tokens (an Anthropic stream's message_start, continuous usage)
  bool responses = false;  // /v1/responses: a response object and its events (chat is true too)
  json responses_echo;     // the request fields the response object repeats
  bool include_usage = false;
  bool continuous_usage = false;  // each chunk's usage so far (GenerationOptions::continuous_usage)
  bool logprobs = false;
  ToolCallForm tool_call_form = ToolCallForm::kToolCalls;
  std::string echo_text;  // completions with echo (each choice's text begins with it)
  bool llama = false;      // POST /completion: llama-server's native answer and chunks (chat is false)
  LlamaCompletionEcho llama_echo;
  std::shared_ptr<const text::Tokenizer> tokenizer;
};

}  // namespace

// The route handlers; a friend of HttpServer.
class Routes {
 public:
  explicit Routes(HttpServer* s) : s_(s) {}

  // The server's cache of compiled grammars (null: none), which the request parsers compile
  // output schemas through (decision 0072) as plan_chat does the tools' (decision 0066).
  text::JsonGrammarCache* grammar_cache() const { return s_->options_.limits.grammar_cache.get(); }

  void health(const httplib::Request&, httplib::Response& res) {
    if (s_->draining_) return send_json(res, 503, {{"status", "shutting_down"}});
    if (!s_->model()) {
      res.set_header("Retry-After", "1");
      return send_json(res, 503, {{"status", "loading"}});
    }
    send_json(res, 200, {{"status", "ok"}});
  }

  void models(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    json entry = model_entry(*m);
    if (req.matches.size() > 1) {
      if (req.matches[1] != m->model_id) return send_error(res, not_found("no model named '" + std::string(req.matches[1]) + "'"));
      return send_json(res, 200, entry);
    }
    send_json(res, 200, {{"object", "list"}, {"data", json::array({entry})}});
  }

  void metrics(const httplib::Request&, httplib::Response& res) {
    auto m = s_->model();
    EngineInfo info;
    EngineMetrics metrics;
    if (m) {
      info = m->info;
      metrics = m->engine->metrics();
    }
    res.status = 200;
    res.set_content(render_prometheus(info, metrics, s_->counters(), s_->host_gauges(), m != nullptr),
                    "text/plain; version=0.0.4; charset=utf-8");
  }

  void chat(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    if (s_->draining_) return send_error(res, draining_error());
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, request_error(body.status()));
    keep_exact_tool_integers(req.body, &*body);
    Result<ChatCompletionRequest> parsed = parse_chat_request(*body, m->defaults, grammar_cache());
    if (!parsed.ok()) return send_error(res, request_error(parsed.status()));
    Result<GenerationPlan> plan = plan_chat(*parsed, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_error(res, request_error(plan.status()));
    auto state = std::make_shared<ResponseState>();
    state->chat = true;
    state->include_usage = parsed->gen.include_usage;
    state->continuous_usage = parsed->gen.continuous_usage;
    state->logprobs = parsed->gen.n_logprobs >= 0;
    state->tool_call_form = parsed->legacy_functions ? ToolCallForm::kFunctionCall : ToolCallForm::kToolCalls;
    state->meta = {make_response_id("chatcmpl-"), unix_now(), m->model_id};
    start(m, std::move(*plan), parsed->gen, state, req, res);
  }

  void completions(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    if (s_->draining_) return send_error(res, draining_error());
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, request_error(body.status()));
    Result<CompletionRequest> parsed = parse_completion_request(*body, m->defaults, grammar_cache());
    if (!parsed.ok()) return send_error(res, request_error(parsed.status()));
    Result<GenerationPlan> plan = plan_completion(*parsed, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_error(res, request_error(plan.status()));
    auto state = std::make_shared<ResponseState>();
    state->chat = false;
    state->include_usage = parsed->gen.include_usage;
    state->continuous_usage = parsed->gen.continuous_usage;
    state->logprobs = parsed->gen.n_logprobs >= 0;
    state->meta = {make_response_id("cmpl-"), unix_now(), m->model_id};
    if (parsed->echo) {
      if (parsed->prompt_is_tokens) {
        Result<std::string> text = m->tokenizer->decode(parsed->prompt_tokens);
        state->echo_text = text.ok() ? *text : "";
      } else {
        state->echo_text = parsed->prompt_text;
      }
    }
    start(m, std::move(*plan), parsed->gen, state, req, res);
  }

  // POST /v1/messages: Anthropic's Messages API, translated into a chat request
  // (anthropic_request.h) and answered in Anthropic's shapes (anthropic_format.h).
  void messages(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res, /*anthropic=*/true);
    if (s_->draining_) return send_anthropic_error(res, draining_error());
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_anthropic_error(res, api_error_from_status(body.status()));
    keep_exact_tool_integers(req.body, &*body);
    Result<ChatCompletionRequest> parsed = parse_messages_request(*body, m->defaults, MessagesRoute::kCreate, grammar_cache());
    if (!parsed.ok()) return send_anthropic_error(res, api_error_from_status(parsed.status()));
    Result<GenerationPlan> plan = plan_chat(*parsed, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_anthropic_error(res, api_error_from_status(plan.status()));
    auto state = std::make_shared<ResponseState>();
    state->chat = true;
    state->anthropic = true;
    state->n_prompt = static_cast<int32_t>(plan->request.prompt.size());
    state->meta = {make_response_id("msg_"), unix_now(), m->model_id};
    start(m, *plan, parsed->gen, state, req, res);
  }

  // POST /v1/messages/count_tokens: {"input_tokens": N}, the prompt a /v1/messages body
  // would be read as (BOS included), without generating; answers while the server drains.
  void count_tokens(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res, /*anthropic=*/true);
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_anthropic_error(res, api_error_from_status(body.status()));
    keep_exact_tool_integers(req.body, &*body);
    Result<ChatCompletionRequest> parsed = parse_messages_request(*body, m->defaults, MessagesRoute::kCountTokens, grammar_cache());
    if (!parsed.ok()) return send_anthropic_error(res, api_error_from_status(parsed.status()));
    Result<GenerationPlan> plan = plan_chat(*parsed, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_anthropic_error(res, api_error_from_status(plan.status()));
    send_json(res, 200, {{"input_tokens", plan->request.prompt.size()}});
  }

  // POST /v1/responses: OpenAI's Responses API, translated into a chat request
  // (responses_request.h) and answered as a response object or its events (responses_format.h).
  void responses(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    if (s_->draining_) return send_error(res, draining_error());
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, responses_request_error(body.status()));
    keep_exact_tool_integers(req.body, &*body);
    Result<ResponsesRequest> parsed = parse_responses_request(*body, m->defaults, grammar_cache());
    if (!parsed.ok()) return send_error(res, responses_request_error(parsed.status()));
    Result<GenerationPlan> plan = plan_chat(parsed->chat, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_error(res, responses_request_error(parsed->translation.rename_error(plan.status())));
    auto state = std::make_shared<ResponseState>();
    state->chat = true;
    state->responses = true;
    state->responses_echo = std::move(parsed->echo);
    state->meta = {make_response_id("resp_"), unix_now(), m->model_id};
    start(m, *plan, parsed->chat.gen, state, req, res);
  }

  // GET, DELETE /v1/responses/{id} and below: nothing is stored, so no response is found.
  void stored_response(const httplib::Request&, httplib::Response& res) {
    ApiError e = not_found("responses are not stored by this server (store is accepted but nothing is kept), so "
                           "they cannot be retrieved, listed, cancelled or deleted");
    send_error(res, e);
  }

  // llama-server's utility routes: no generation, so they answer while the server drains.

  // POST /tokenize: llama-server's content, or vLLM's prompt, as ids (with BOS when
  // add_special), control-token text parsed unless parse_special is false; with_pieces adds
  // each id's piece. vLLM's messages: the ids the chat route would feed the model for that chat
  // (render_chat_request, then chat_prompt_ids, as plan_chat), with vLLM's count, max_model_len
  // and token_strs.
  void tokenize(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, request_error(body.status()));
    Result<TokenizeRequest> parsed = parse_tokenize_request(*body);
    if (!parsed.ok()) return send_error(res, request_error(parsed.status()));
    std::vector<int32_t> ids;
    if (parsed->form == TokenizeForm::kVllmMessages) {
      keep_exact_tool_integers(req.body, &*body);
      body->erase("add_special_tokens");  // this route's own fields, not the chat request's
      body->erase("return_token_strs");
      Result<ChatCompletionRequest> chat = parse_chat_request(*body, m->defaults, grammar_cache());
      if (!chat.ok()) return send_error(res, request_error(chat.status()));
      Result<text::RenderedPrompt> prompt = render_chat_request(*chat);
      if (!prompt.ok()) return send_error(res, request_error(prompt.status()));
      ids = chat_prompt_ids(*prompt, *m->tokenizer);
      if (parsed->add_special && m->tokenizer->bos_id() != text::kNoToken) {
        ids.insert(ids.begin(), m->tokenizer->bos_id());  // vLLM's tokenizer adds one before the template's
      }
    } else {
      ids = m->tokenizer->encode(parsed->content, parsed->add_special, parsed->parse_special);
    }
    TokenizeAnswer answer;
    answer.with_pieces = parsed->with_pieces;
    answer.vllm = parsed->form != TokenizeForm::kLlamaServer;
    answer.token_strs = parsed->token_strs;
    answer.max_model_len = m->info.n_ctx;
    res.status = 200;
    constexpr size_t kPartIds = 65536;
    auto writer = std::make_shared<TokenizeAnswerWriter>(std::move(ids), answer);
    std::string first;
    writer->next(*m->tokenizer, kPartIds, &first);
    if (writer->done()) {
      res.set_content(std::move(first), "application/json");
      return;
    }
    // A large answer is written as it is made, kPartIds entries at a time: its JSON is 7-25
    // times the body (an 8 MB body gave 200 MB with pieces), and built whole, a few such
    // requests at once held gigabytes until their clients read them.
    struct Parts {
      std::shared_ptr<ModelContext> model;  // keeps the tokenizer alive while writing
      std::shared_ptr<TokenizeAnswerWriter> writer;
      std::string first;
    };
    auto st = std::make_shared<Parts>(Parts{m, writer, std::move(first)});
    set_body(req, res, "application/json", [st](size_t, httplib::DataSink& sink) {
      std::string part = std::move(st->first);
      st->first.clear();
      if (part.empty()) st->writer->next(*st->model->tokenizer, kPartIds, &part);
      if (!sink.write(part.data(), part.size())) return false;
      if (st->writer->done()) sink.done();
      return true;
    });
  }

  // POST /detokenize: the text of token ids.
  void detokenize(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, request_error(body.status()));
    Result<DetokenizeRequest> parsed = parse_detokenize_request(*body, m->tokenizer->n_vocab());
    if (!parsed.ok()) return send_error(res, request_error(parsed.status()));
    res.status = 200;
    res.set_content(detokenize_response_json(*m->tokenizer, parsed->tokens), "application/json");
  }

  // POST /apply-template: a chat completion body's prompt, rendered as the chat route renders
  // it (render_chat_request), not generated from; the same 400s for a bad body.
  void apply_template(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, request_error(body.status()));
    keep_exact_tool_integers(req.body, &*body);
    Result<ChatCompletionRequest> parsed = parse_chat_request(*body, m->defaults, grammar_cache());
    if (!parsed.ok()) return send_error(res, request_error(parsed.status()));
    Result<text::RenderedPrompt> prompt = render_chat_request(*parsed);
    if (!prompt.ok()) return send_error(res, request_error(prompt.status()));
    send_json(res, 200, {{"prompt", std::move(prompt->text)}});
  }

  // POST /completion: llama-server's native completion (decision 0061), read into a
  // /v1/completions request and run on that route's path; answered in llama-server's shapes.
  void llama_completion(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    if (s_->draining_) return send_error(res, draining_error());
    Result<json> body = parse_json_object(req.body);
    if (!body.ok()) return send_error(res, llama_request_error(body.status()));
    Result<LlamaCompletionRequest> parsed = parse_llama_completion_request(*body, m->defaults, *m->tokenizer, grammar_cache());
    if (!parsed.ok()) return send_error(res, llama_request_error(parsed.status()));
    if (parsed->id_slot >= m->info.n_slots) {
      return send_error(res, bad_request(fmt::format("id_slot ({}) must be -1 (any slot) or below the {} slots",
                                                     parsed->id_slot, m->info.n_slots),
                                         "id_slot"));
    }
    const CompletionRequest& cr = parsed->completion;
    Result<GenerationPlan> plan = plan_completion(cr, *m->tokenizer, s_->options_.limits);
    if (!plan.ok()) return send_error(res, llama_request_error(plan.status()));
    auto state = std::make_shared<ResponseState>();
    state->chat = false;
    state->llama = true;
    plan->release_tokens = parsed->wants_tokens;
    state->logprobs = cr.gen.n_logprobs >= 0 || parsed->wants_tokens;  // the outputs keep the released tokens
    state->meta = {make_response_id("cmpl-"), unix_now(), m->model_id};
    const GenerationRequest& g = plan->request;
    LlamaSettings settings{g.sampling, g.max_tokens, cr.gen.stop, cr.gen.ignore_eos, cr.gen.stream, parsed->n_probs,
                           cr.gen.cache_prompt, drafts_a_round(m->info, g.speculative, g.draft_max)};
    Result<std::string> prompt = m->tokenizer->decode(g.prompt, text::DecodeOptions{.render_special = true});
    state->llama_echo = {m->model_id, prompt.ok() ? *prompt : "", static_cast<int32_t>(g.prompt.size()),
                         parsed->n_probs, parsed->return_tokens, llama_settings_json(settings)};
    start(m, *plan, cr.gen, state, req, res);
  }

  // GET /props: llama-server's server properties, read-only (its POST form is refused with 405).
  void props(const httplib::Request&, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    LlamaProps p;
    p.defaults.sampling = m->defaults.sampling;
    p.defaults.n_predict = s_->options_.limits.default_max_tokens;
    p.defaults.draft_max = drafts_a_round(m->info, /*speculative=*/true, s_->options_.limits.draft_max);
    p.n_ctx = m->info.n_ctx;
    p.n_slots = m->info.n_slots;
    p.has_drafter = m->info.has_drafter;
    p.model_path = m->model_path;
    p.chat_template = m->chat_template_source;
    const text::Tokenizer& tok = *m->tokenizer;
    if (tok.bos_id() != text::kNoToken) p.bos_token = std::string(tok.token_to_piece(tok.bos_id(), true));
    if (tok.eos_id() != text::kNoToken) p.eos_token = std::string(tok.token_to_piece(tok.eos_id(), true));
    p.build_info = s_->options_.build_info;
    send_json(res, 200, llama_props_json(p));
  }

  // GET /slots: each slot's state (llama-server's); with ?fail_on_no_slot=1 a 503 when every
  // slot is busy.
  void slots(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    const EngineMetrics metrics = m->engine->metrics();
    const std::string fail = req.get_param_value("fail_on_no_slot");
    if (!fail.empty() && fail != "0" && fail != "false") {
      const bool any_free = std::any_of(metrics.slots.begin(), metrics.slots.end(),
                                        [](const SlotState& st) { return !st.processing; });
      if (!any_free) {
        res.set_header("Retry-After", "1");
        return send_error(res, api_error_from_status(Status(StatusCode::kUnavailable, "no slot is available")));
      }
    }
    send_json(res, 200, llama_slots_json(metrics.slots, m->info.n_ctx, m->info.has_drafter));
  }

  // POST /slots/{id_slot}?action=save|restore|erase: llama-server's slot actions (decision 0068).
  void slot_action(const httplib::Request& req, httplib::Response& res) {
    auto m = s_->model();
    if (!m) return send_loading(res);
    const SlotActionReply r = run_slot_action(*m->engine, s_->options_.slot_save_path, req.matches[1].str(),
                                              req.get_param_value("action"), req.body);
    r.ok ? send_json(res, 200, r.body) : send_error(res, r.error);
  }

 private:
  // A request refused by validation: error.param names the field at fault (OpenAI's form).
  static ApiError request_error(const Status& status) {
    ApiError e = api_error_from_status(status);
    if (e.http_status == 400 && e.param.empty()) e.param = error_param(status.message());
    return e;
  }
  // The same for a /completion body: error.param names the native field too.
  static ApiError llama_request_error(const Status& status) {
    ApiError e = api_error_from_status(status);
    if (e.http_status == 400 && e.param.empty()) e.param = llama_completion_error_param(status.message());
    return e;
  }
  // Drafts a round for a request (`speculative`, its draft_max or -1 for the server's):
  // 0 without a drafter or with drafting off.
  static int32_t drafts_a_round(const EngineInfo& info, bool speculative, int32_t draft_max) {
    if (!info.has_drafter || !speculative) return 0;
    return draft_max >= 0 ? draft_max : info.draft_max;
  }
  // The same for a Responses body: error.param names the Responses field.
  static ApiError responses_request_error(const Status& status) {
    ApiError e = api_error_from_status(status);
    if (e.http_status == 400 && e.param.empty()) e.param = responses_error_param(status.message());
    return e;
  }
  // A 503 while the model loads, with Retry-After (seconds) as for a full queue's 429.
  static void send_loading(httplib::Response& res, bool anthropic = false) {
    res.set_header("Retry-After", "1");
    const ApiError e =
        api_error_from_status(Status(StatusCode::kUnavailable, "the model is still loading; try again shortly"));
    anthropic ? send_anthropic_error(res, e) : send_error(res, e);
  }
  static void send_outcome_error(httplib::Response& res, const ResponseState& st, const ApiError& e) {
    st.anthropic ? send_anthropic_error(res, e) : send_error(res, e);
  }
  static ApiError draining_error() {
    return api_error_from_status(Status(StatusCode::kUnavailable, "the server is shutting down"));
  }

  static json model_entry(const ModelContext& m) {
    return json{{"id", m.model_id},
                {"object", "model"},
                {"created", m.created},
                {"owned_by", "gemmaserve"},
                {"max_model_len", m.info.n_ctx},  // vLLM's key: the context a request may fill
                {"meta",
                 {{"n_ctx", m.info.n_ctx},
                  {"n_vocab", m.info.n_vocab},
                  {"n_slots", m.info.n_slots},
                  {"backend", m.info.backend},
                  {"drafter", m.info.has_drafter},
                  {"draft_max", m.info.draft_max}}}};
  }

  // Submits the plan's gen.n choices and installs the streamed or whole response.
  void start(const std::shared_ptr<ModelContext>& m, const GenerationPlan& plan, const GenerationOptions& gen,
             const std::shared_ptr<ResponseState>& state, const httplib::Request& req, httplib::Response& res) {
    const size_t n_prompt = plan.request.prompt.size();
    state->n_prompt = static_cast<int32_t>(n_prompt);
    const bool stream = gen.stream;
    // Choices beyond the slots wait in the queue; more than both could hold would be refused
    // with a 429 however long the client waited.
    const int64_t n_capacity = static_cast<int64_t>(m->info.n_slots) + m->info.queue_size;
    if (gen.n > 1 && gen.n > n_capacity) {
      ApiError e = api_error_from_status(Status(
          StatusCode::kInvalidArgument,
          fmt::format("n ({}) is more than this server holds at once ({} slots and {} queued requests)", gen.n,
                      m->info.n_slots, m->info.queue_size)));
      e.param = "n";
      return send_error(res, e);
    }
    state->tokenizer = m->tokenizer;
    state->choices = std::make_unique<ChoiceSet>(m->tokenizer, plan, gen.n);
    state->outputs.resize(static_cast<size_t>(state->choices->size()));
    Status started = state->choices->start(*m->engine);
    if (!started.ok()) {
      ApiError e = api_error_from_status(started);
      if (started.code() == StatusCode::kOutOfRange) {
        e.extra["n_prompt_tokens"] = n_prompt;
        e.extra["n_ctx"] = m->info.n_ctx;
        if (!state->chat) e.param = "prompt";
        if (state->responses) e.param = "input";
        // Anthropic's wording, which agents read to compact their context.
        if (state->anthropic) {
          e.message = fmt::format("prompt is too long: {} tokens > {} maximum (the context holds {} tokens)", n_prompt,
                                  std::max<int64_t>(int64_t{m->info.n_ctx} - 1, 0), m->info.n_ctx);
        }
      }
      if (e.http_status == 429) res.set_header("Retry-After", "1");
      return send_outcome_error(res, *state, e);
    }
    if (stream) {
      // The stream's headers commit it to 200, so they wait until a slot holds the request,
      // for up to options.stream_commit_wait: one that ends while it waits in the queue (a
      // drain's 503, a failure to start) gets that status and an error body, as a whole
      // response does (it was a 200 and an error event). A client that goes away meanwhile is
      // seen as a whole response sees it. A stream still queued after the wait is committed
      // (its later end is an error event).
      switch (wait_for_slot(*state, s_->options_.stream_commit_wait)) {
        case SlotWait::kAdmitted:
        case SlotWait::kStillQueued:
          break;
        case SlotWait::kEnded:
          return whole_response(*state, res);
        case SlotWait::kClientGone:
          client_gone(*state);
          return send_client_gone(res, *state);
      }
    }
    // Set here: httplib turns an unset status into 206 when the request has a Range header.
    res.status = 200;
    if (stream) {
      {
        std::lock_guard<std::mutex> lock(s_->counters_mu_);
        s_->counters_.streams_started++;
      }
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");
      HttpServer* server = s_;
      set_body(req, res, "text/event-stream", [server, state](size_t, httplib::DataSink& sink) {
        if (state->responses) return Routes(server).responses_stream_body(*state, sink);
        if (state->llama) return Routes(server).llama_stream_body(*state, sink);
        return state->anthropic ? Routes(server).anthropic_stream_body(*state, sink)
                                : Routes(server).stream_body(*state, sink);
      });
    } else {
      whole_response(*state, res);
    }
  }

  enum class SlotWait { kAdmitted, kEnded, kClientGone, kStillQueued };
  // Waits until a slot holds one of the request's choices, or the request ends before any
  // does (kEnded: its outcome is there to read), or its client goes away, or `limit` passes
  // with the request still queued (kStillQueued).
  static SlotWait wait_for_slot(ResponseState& st, std::chrono::milliseconds limit) {
    const auto until = Clock::now() + limit;
    for (;;) {
      if (st.choices->wait_started(std::chrono::milliseconds(100))) {
        return st.choices->admitted() ? SlotWait::kAdmitted : SlotWait::kEnded;
      }
      if (current_client_gone()) return SlotWait::kClientGone;
      if (Clock::now() >= until) return SlotWait::kStillQueued;
    }
  }

  // The answer to a request whose client went away: nobody reads it; 499 (client closed
  // request) is what the metrics count.
  static void send_client_gone(httplib::Response& res, const ResponseState& st) {
    res.set_header("Connection", "close");
    send_outcome_error(res, st, api_error_from_status(Status(StatusCode::kCancelled, "the client closed the connection")));
  }

  // A body written as it is made: chunked for HTTP/1.1; an HTTP/1.0 client knows no chunked
  // coding (RFC 9112 7.1), so it gets the bytes as they are, ended by closing the connection.
  static void set_body(const httplib::Request& req, httplib::Response& res, const char* type,
                       std::function<bool(size_t, httplib::DataSink&)> provider) {
    if (req.version == "HTTP/1.0") {
      res.set_header("Connection", "close");
      res.set_content_provider(type, std::move(provider));  // no length: the close ends it
    } else {
      res.set_chunked_content_provider(type, std::move(provider));
    }
  }

  void client_gone(ResponseState& st) {
    st.choices->cancel();
    std::lock_guard<std::mutex> lock(s_->counters_mu_);
    s_->counters_.client_disconnects++;
  }

  // Logs choice `index`'s outcome and counts its reasoning and tool calls.
  void count_result(const ResponseState& st, int index) {
    const GenerationResult& r = st.choices->choice(index).result();
    const Usage& u = r.usage;
    const std::string who = st.choices->size() > 1 ? fmt::format("{} choice {}", st.meta.id, index) : st.meta.id;
    if (r.error) {
      GS_LOG_WARN("{}: failed: {}", who, r.error->to_string());
    } else {
      GS_LOG_INFO("{}: {} prompt tokens ({} cached), {} generated, finish {}, prefill {:.0f} ms, decode {:.1f} tok/s{}",
                  who, u.prompt_tokens, u.cached_tokens, u.completion_tokens,
                  r.cancelled ? "cancelled" : r.finish_reason, u.prefill_ms,
                  u.decode_ms > 0 ? 1000.0 * std::max(u.completion_tokens - 1, 0) / u.decode_ms : 0.0,
                  u.drafted_tokens > 0 ? fmt::format(", drafts {}/{} accepted", u.accepted_tokens, u.drafted_tokens) : "");
    }
    std::lock_guard<std::mutex> lock(s_->counters_mu_);
    s_->counters_.reasoning_tokens += static_cast<uint64_t>(r.reasoning_tokens);
    s_->counters_.empty_reasoning_blocks += static_cast<uint64_t>(r.empty_reasoning_blocks);
    s_->counters_.tool_calls += r.tool_calls.size();
  }

  // The pending logprob entries of a choice, all of them, or for a chat stream's content
  // chunk (`content_only`) those whose text has been sent (content_sent).
  json take_logprobs(ResponseState& st, int index, bool content_only = false) {
    ChoiceOutput& out = st.outputs[static_cast<size_t>(index)];
    if (!st.logprobs || out.pending_logprobs.empty()) return nullptr;
    if (!st.chat) {
      json j = completion_logprobs_json(*st.tokenizer, out.pending_logprobs, out.text_offsets);
      out.pending_logprobs.clear();
      return j;
    }
    size_t n = 0;
    for (; n < out.pending_logprobs.size(); ++n) {
      const ShownToken& t = out.pending_logprobs[n];
      const size_t spelled = t.text ? t.text->size() : st.tokenizer->token_to_piece(t.token.id, true).size();
      if (content_only && out.content_spelled + spelled > out.content_sent) break;
      out.content_spelled += spelled;
    }
    if (n == 0) return nullptr;
    out.logprobs_sent = true;
    std::vector<ShownToken> taken(out.pending_logprobs.begin(), out.pending_logprobs.begin() + static_cast<std::ptrdiff_t>(n));
    out.pending_logprobs.erase(out.pending_logprobs.begin(), out.pending_logprobs.begin() + static_cast<std::ptrdiff_t>(n));
    return chat_logprobs_json(*st.tokenizer, taken);
  }

  // Server-sent events: each choice's role chunk, the choices' deltas as they come (each
  // chunk names its choice's index), each choice's finish chunk when it ends, then the usage
  // chunk of them all, [DONE]. One choice's engine failure ends the stream for all.
  bool stream_body(ResponseState& st, httplib::DataSink& sink) {
    auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    // With include_usage, every chunk before the usage chunk says "usage": null (OpenAI's
    // documented shape; typed clients read the field on each chunk), or with vLLM's
    // continuous_usage_stats the usage so far of the chunk's choice.
    auto chunk = [&](json j, int32_t n_completion) {
      if (st.continuous_usage) {
        j["usage"] = running_usage_json(st.n_prompt, n_completion);
      } else if (st.include_usage) {
        j["usage"] = nullptr;
      }
      return sse_event(j);
    };
    const int n = st.choices->size();
    for (int i = 0; i < n; ++i) {
      std::string first;
      if (st.chat) {
        first = chunk(chat_chunk_json(st.meta, i, json{{"role", "assistant"}, {"content", ""}}, "", nullptr), 0);
      } else if (!st.echo_text.empty()) {
        first = chunk(completion_chunk_json(st.meta, i, st.echo_text, "", nullptr), 0);
        st.outputs[static_cast<size_t>(i)].text_offsets.skip_text(st.echo_text);
      }
      if (!first.empty() && !write(first)) {
        client_gone(st);
        return false;
      }
    }
    auto last_write = Clock::now();
    while (!st.choices->finished()) {
      for (ChoicePoll& cp : st.choices->poll(std::chrono::milliseconds(100))) {
        const int i = cp.index;
        ChoiceOutput& out = st.outputs[static_cast<size_t>(i)];
        if (st.logprobs) out.pending_logprobs.insert(out.pending_logprobs.end(), cp.poll.tokens.begin(), cp.poll.tokens.end());
        out.n_tokens += cp.poll.n_tokens;
        for (const auto& d : cp.poll.deltas) {
          // Chat: logprobs go with the content they spell (reasoning and calls have none).
          if (st.chat && d.kind == OutputDelta::Kind::kContent) out.content_sent += d.text.size();
          json lp = !st.chat ? take_logprobs(st, i)
                    : d.kind == OutputDelta::Kind::kContent ? take_logprobs(st, i, /*content_only=*/true)
                                                            : json(nullptr);
          const std::string event =
              st.chat ? chunk(chat_chunk_json(st.meta, i, chat_delta_json(d, st.tool_call_form), "", lp), out.n_tokens)
                      : chunk(completion_chunk_json(st.meta, i, d.text, "", lp), out.n_tokens);
          if (!write(event)) {
            client_gone(st);
            return false;
          }
          last_write = Clock::now();
        }
        if (!cp.poll.finished) continue;
        const GenerationResult& result = st.choices->choice(i).result();
        count_result(st, i);
        if (result.error) {
          st.choices->cancel();
          ApiError e = request_error(*result.error);  // a request's own conflict names its field
          write(sse_event(e.to_json()));
          write("data: [DONE]\n\n");
          sink.done();
          return true;
        }
        if (result.cancelled) {
          st.choices->cancel();
          return false;
        }
        json lp = take_logprobs(st, i);
        if (st.chat && st.logprobs && lp.is_null() && !out.logprobs_sent) {
          // An answer without content (a call alone) has no entries: the finish chunk says so,
          // as the whole response's "content": [] does.
          lp = chat_logprobs_json(*st.tokenizer, {});
        }
        const int32_t n_completion = result.usage.completion_tokens;
        const std::string finish =
            st.chat ? chunk(chat_chunk_json(st.meta, i, json::object(), chat_finish_reason(result, st.tool_call_form), lp),
                            n_completion)
                    : chunk(completion_chunk_json(st.meta, i, "", result.finish_reason, lp), n_completion);
        if (!write(finish)) {
          client_gone(st);
          return false;
        }
        last_write = Clock::now();
      }
      if (!st.choices->finished() && Clock::now() - last_write >= s_->options_.keepalive_interval) {
        if (!write(": keep-alive\n\n")) {
          client_gone(st);
          return false;
        }
        last_write = Clock::now();
      }
    }
    if (st.include_usage) {
      const ResponseUsage usage = combine_usage(st.choices->results());
      const json j = st.chat ? chat_usage_chunk_json(st.meta, usage) : completion_usage_chunk_json(st.meta, usage);
      if (!write(sse_event(j))) return false;
    }
    write("data: [DONE]\n\n");
    sink.done();
    return true;
  }

  // One choice's server-sent events through a route's formatter (Events: delta(d) and
  // finish(result)): `first`, each delta's event, `keepalive` while idle, then the formatter's
  // end, or `fail`'s event for an engine failure after the start. False when the client left
  // or the request was cancelled.
  template <class Events>
  bool single_choice_stream(ResponseState& st, httplib::DataSink& sink, Events& events, const std::string& first,
                            const std::string& keepalive, const std::function<std::string(const ApiError&)>& fail) {
    auto write = [&](const std::string& s) { return s.empty() || sink.write(s.data(), s.size()); };
    if (!write(first)) {
      client_gone(st);
      return false;
    }
    auto last_write = Clock::now();
    for (;;) {
      // One choice: these routes never ask for more.
      for (ChoicePoll& cp : st.choices->poll(std::chrono::milliseconds(100))) {
        if constexpr (requires { events.poll(cp.poll); }) events.poll(cp.poll);  // its tokens, before its text
        for (const auto& d : cp.poll.deltas) {
          const std::string event = events.delta(d);
          if (event.empty()) continue;
          if (!write(event)) {
            client_gone(st);
            return false;
          }
          last_write = Clock::now();
        }
      }
      if (st.choices->finished()) break;
      if (Clock::now() - last_write >= s_->options_.keepalive_interval) {
        if (!write(keepalive)) {
          client_gone(st);
          return false;
        }
        last_write = Clock::now();
      }
    }
    const GenerationResult& result = st.choices->choice(0).result();
    count_result(st, 0);
    if (result.error) {
      write(fail(api_error_from_status(*result.error)));
      sink.done();
      return true;
    }
    if (result.cancelled) return false;
    if (!write(events.finish(result))) return false;
    sink.done();
    return true;
  }

  // Anthropic's server-sent events (AnthropicStream): message_start, the blocks, then
  // message_delta and message_stop; an engine failure after the start is an error event.
  // Keep-alives are ping events, as Anthropic's own.
  bool anthropic_stream_body(ResponseState& st, httplib::DataSink& sink) {
    AnthropicStream events(st.meta);
    const std::string first = events.start(st.n_prompt);
    return single_choice_stream(st, sink, events, first, AnthropicStream::ping(),
                                [](const ApiError& e) { return AnthropicStream::error(e); });
  }

  // The Responses API's server-sent events (ResponsesStream): response.created and
  // response.in_progress, the output items, then response.completed or response.incomplete;
  // an engine failure after the start is response.failed. No [DONE] (OpenAI sends none here).
  bool responses_stream_body(ResponseState& st, httplib::DataSink& sink) {
    ResponsesStream events(st.meta, st.responses_echo);
    const std::string first = events.start();
    return single_choice_stream(st, sink, events, first, ": keep-alive\n\n",
                                [&events](const ApiError& e) { return events.fail(e); });
  }

  // llama-server's /completion chunks (LlamaCompletionStream): one a piece of text, then the
  // whole answer with stop true; an engine failure after the start is an error chunk.
  bool llama_stream_body(ResponseState& st, httplib::DataSink& sink) {
    LlamaCompletionStream events(*st.tokenizer, st.llama_echo);
    return single_choice_stream(st, sink, events, "", ": keep-alive\n\n",
                                [](const ApiError& e) { return LlamaCompletionStream::fail(e); });
  }

  // A whole JSON response: the handler waits for the end of generation, so the status
  // follows the outcome (an engine failure after admission is its 5xx error, not a 200 with
  // an error body; one choice's failure fails the response and cancels the others). Nothing
  // is written meanwhile; a client that closes its connection is seen by
  // current_client_gone() and its choices are cancelled (decision 0010).
  void whole_response(ResponseState& st, httplib::Response& res) {
    for (;;) {
      for (ChoicePoll& cp : st.choices->poll(std::chrono::milliseconds(100))) {
        ChoiceOutput& out = st.outputs[static_cast<size_t>(cp.index)];
        if (st.logprobs) out.all_tokens.insert(out.all_tokens.end(), cp.poll.tokens.begin(), cp.poll.tokens.end());
        if (cp.poll.finished) count_result(st, cp.index);
      }
      if (st.choices->finished() || st.choices->first_error()) break;
      if (current_client_gone()) {
        client_gone(st);
        break;
      }
    }
    if (const GenerationResult* failed = st.choices->first_error()) {
      st.choices->cancel();
      return send_outcome_error(res, st, request_error(*failed->error));
    }
    if (!st.choices->finished()) return send_client_gone(res, st);
    const std::vector<const GenerationResult*> results = st.choices->results();
    for (const GenerationResult* r : results) {
      if (!r->cancelled) continue;
      res.set_header("Connection", "close");
      return send_outcome_error(res, st, api_error_from_status(Status(StatusCode::kCancelled, "the request was cancelled")));
    }
    if (st.anthropic) {
      res.status = 200;
      return res.set_content(anthropic_message_text(st.meta, *results[0]), "application/json");
    }
    if (st.responses) return send_json(res, 200, responses_response_json(st.meta, st.responses_echo, *results[0]));
    if (st.llama) {
      return send_json(res, 200, llama_completion_json(*st.tokenizer, st.llama_echo, *results[0], st.outputs[0].all_tokens));
    }
    json choices = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const GenerationResult& result = *results[i];
      ChoiceOutput& out = st.outputs[i];
      const int index = static_cast<int>(i);
      if (st.chat) {
        json lp = st.logprobs ? chat_logprobs_json(*st.tokenizer, out.all_tokens) : json(nullptr);
        choices.push_back(chat_choice_json(index, result, lp, st.tool_call_form));
        continue;
      }
      json lp = json(nullptr);
      if (st.logprobs) {
        out.text_offsets.skip_text(st.echo_text);
        lp = completion_logprobs_json(*st.tokenizer, out.all_tokens, out.text_offsets);
      }
      choices.push_back(completion_choice_json(index, st.echo_text + result.content, result, lp));
    }
    const ResponseUsage usage = combine_usage(results);
    send_json(res, 200, st.chat ? chat_completion_json(st.meta, std::move(choices), usage)
                                : completion_json(st.meta, std::move(choices), usage));
  }

  HttpServer* s_;
};

namespace {

ConnectionLimits connection_limits(const ServerOptions& o) {
  ConnectionLimits limits;
  limits.n_workers = static_cast<size_t>(o.http_threads > 0 ? o.http_threads : 96);
  limits.head_timeout = o.head_timeout;
  limits.write_stall_budget = o.write_stall_budget;
  limits.max_body_bytes = o.max_body_bytes;
  limits.body_timeout = std::chrono::seconds(30);
  limits.idle_timeout = std::chrono::seconds(5);
  return limits;
}

}  // namespace

namespace {

// The 401 for a request head without a valid API key, whole, or "" when the key is valid or
// not needed (no keys, GET /health or its alias /v1/health, a CORS preflight). The server's
// only key check: it runs on the head, before the body is waited for, so a client without
// the key cannot make the server buffer bodies (8 MB a connection); the connection then closes.
std::string early_auth_answer(const ApiKeys& keys, std::string_view head, int* status) {
  if (!keys.enabled()) return {};
  const size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return {};  // the listener refuses it anyway
  const std::string_view method = line.substr(0, sp1);
  std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method == "OPTIONS" || path == "/health" || path == "/v1/health") return {};
  const std::string_view authorization = request_header(head, "authorization");
  const std::string_view x_api_key = request_header(head, "x-api-key");
  if (keys.matches_either(authorization, x_api_key)) return {};
  const bool presented = !authorization.empty() || !x_api_key.empty();
  // Anthropic's clients send the key as x-api-key (Claude Code's auth token as a bearer
  // token), and read errors in Anthropic's shape.
  const bool anthropic = is_messages_path(path);
  const ApiError e = unauthorized(presented ? "invalid API key"
                                  : anthropic ? "an API key is required: send 'x-api-key: <key>' or "
                                                "'Authorization: Bearer <key>'"
                                              : "an API key is required: send 'Authorization: Bearer <key>'");
  const std::string body = anthropic ? anthropic_error_body(e) : e.body();
  *status = 401;
  return "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nWWW-Authenticate: Bearer\r\n"
         "Access-Control-Allow-Origin: *\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)) {
  if (!options_.limits.grammar_cache && options_.grammar_cache_entries > 0) {
    options_.limits.grammar_cache = std::make_shared<text::JsonGrammarCache>(
        options_.grammar_cache_entries, options_.grammar_cache_bytes);
  }
  ConnectionLimits limits = connection_limits(options_);
  limits.early_answer = [this](std::string_view head, int* status) { return early_auth_answer(options_.keys, head, status); };
  limits.on_refusal = [this](int status) {
    std::lock_guard<std::mutex> lock(counters_mu_);
    counters_.responses_by_status[status]++;
  };
  svr_ = std::make_unique<HttpListener>(std::move(limits));
  // SO_REUSEADDR only (a restart can bind over connections in TIME_WAIT). httplib's default
  // adds SO_REUSEPORT, with which a second server on the same port bound too and the kernel
  // split the connections between the two.
  svr_->set_socket_options([this](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;  // the last one offered is the one that bound
  });
  started_unix_ = unix_now();
  install_routes();
  trimmer_ = std::make_unique<HeapTrimmer>(
      [this] {
        // Work done: responses sent (every request ends in one).
        const HttpCounters c = counters();
        uint64_t n = 0;
        for (const auto& [status, count] : c.responses_by_status) n += count;
        return n;
      },
      [this] {
        const std::shared_ptr<ModelContext> m = model();
        if (!m) return true;
        const EngineMetrics em = m->engine->metrics();
        return em.busy_slots == 0 && em.queue_length == 0;
      },
      options_.heap_trim);
}

HttpServer::~HttpServer() { stop(); }

std::shared_ptr<ModelContext> HttpServer::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

void HttpServer::set_model(std::shared_ptr<ModelContext> model) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = std::move(model);
}

void HttpServer::set_draining() {
  draining_ = true;
  if (std::shared_ptr<ModelContext> m = model()) m->engine->drain();
}

bool HttpServer::ready() const { return model() != nullptr && !draining_; }

HttpCounters HttpServer::counters() const {
  HttpCounters c;
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    c = counters_;
  }
  if (options_.limits.grammar_cache) c.grammar_cache = options_.limits.grammar_cache->stats();
  return c;
}

HostGauges HttpServer::host_gauges() const {
  HostGauges g;
  g.memory = read_host_memory();
  g.heap_trims = trimmer_ ? trimmer_->trims() : 0;
  g.heap_trimmed_at_responses = trimmer_ ? trimmer_->trimmed_at_activity() : 0;
  return g;
}

void HttpServer::install_routes() {
  httplib::Server& svr = *svr_;
  svr.set_payload_max_length(options_.max_body_bytes);
  // Idle, head and body deadlines are the listener's (connection_limits()).
  svr.set_keep_alive_max_count(100);
  svr.set_write_timeout(10, 0);
  svr.set_tcp_nodelay(true);

  // Browsers may call the API from a page of another origin (CORS, as llama-server allows):
  // every response says any origin may read it, and preflights are answered below. The API
  // key, when there is one, is checked on the request head (early_auth_answer) for every
  // request but GET /health and the preflight itself (a browser sends no key with it).
  svr.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request& req, httplib::Response& res) {
        if (res.body.empty()) {
          const ApiError e = api_error_for_http_status(res.status);
          is_messages_path(req.path) ? send_anthropic_error(res, e) : send_error(res, e);
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  svr.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    GS_LOG_ERROR("handler for {} {} threw: {}", req.method, req.path, what);
    const ApiError e = api_error_from_status(Status(StatusCode::kInternal, "internal error: " + what));
    is_messages_path(req.path) ? send_anthropic_error(res, e) : send_error(res, e);
  });
  svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(counters_mu_);
      counters_.responses_by_status[res.status]++;
    }
    GS_LOG_DEBUG("{} {} -> {}", req.method, req.path, res.status);
  });

  auto route = [this](void (Routes::*fn)(const httplib::Request&, httplib::Response&)) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        Routes routes(this);
        (routes.*fn)(req, res);
      } catch (const std::exception& e) {
        GS_LOG_ERROR("handler for {} {} threw: {}", req.method, req.path, e.what());
        const ApiError err = api_error_from_status(Status(StatusCode::kInternal, std::string("internal error: ") + e.what()));
        is_messages_path(req.path) ? send_anthropic_error(res, err) : send_error(res, err);
      }
    };
  };
  svr.Get("/health", route(&Routes::health));
  svr.Get("/v1/health", route(&Routes::health));
  svr.Get("/metrics", route(&Routes::metrics));
  svr.Get("/v1/models", route(&Routes::models));
  svr.Get("/models", route(&Routes::models));
  svr.Get(R"(/v1/models/(.+))", route(&Routes::models));
  svr.Post("/v1/chat/completions", route(&Routes::chat));
  svr.Post("/chat/completions", route(&Routes::chat));
  svr.Post("/v1/completions", route(&Routes::completions));
  svr.Post("/completions", route(&Routes::completions));
  svr.Post("/tokenize", route(&Routes::tokenize));
  svr.Post("/detokenize", route(&Routes::detokenize));
  svr.Post("/apply-template", route(&Routes::apply_template));
  svr.Post("/completion", route(&Routes::llama_completion));
  svr.Get("/props", route(&Routes::props));
  svr.Get("/slots", route(&Routes::slots));
  svr.Post(R"(/slots/([^/]+))", route(&Routes::slot_action));
  svr.Post("/v1/responses", route(&Routes::responses));
  svr.Get(R"(/v1/responses/.+)", route(&Routes::stored_response));
  svr.Delete(R"(/v1/responses/.+)", route(&Routes::stored_response));
  svr.Post(R"(/v1/responses/.+)", route(&Routes::stored_response));
  svr.Post("/v1/messages", route(&Routes::messages));
  svr.Post("/v1/messages/count_tokens", route(&Routes::count_tokens));
  // A known route asked with another method: 405 with Allow (RFC 9110 §15.5.6), not 404.
  auto wrong_method = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      const ApiError e = api_error_for_http_status(405);
      is_messages_path(req.path) ? send_anthropic_error(res, e) : send_error(res, e);
      res.set_header("Allow", allow);
    };
  };
  // A CORS preflight (OPTIONS with Access-Control-Request-Method) of a known route: 204 with
  // what the route allows; any other OPTIONS: the same, without the CORS fields.
  auto preflight = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      res.status = 204;
      res.set_header("Allow", std::string(allow) + ", OPTIONS");
      if (req.has_header("Access-Control-Request-Method")) {
        res.set_header("Access-Control-Allow-Methods", std::string(allow) + ", OPTIONS");
        const std::string asked = req.get_header_value("Access-Control-Request-Headers");
        res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
        res.set_header("Access-Control-Max-Age", "86400");
      }
    };
  };
  const char* const get_paths[] = {"/health", "/v1/health", "/metrics", "/v1/models", "/models", R"(/v1/models/(.+))",
                                   "/props", "/slots"};
  const char* const post_paths[] = {"/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions",
                                    "/tokenize", "/detokenize", "/apply-template", "/v1/messages",
                                    "/v1/messages/count_tokens", "/v1/responses", "/completion"};
  for (const char* path : get_paths) {
    svr.Options(path, preflight("GET"));
    svr.Post(path, wrong_method("GET"));
    svr.Put(path, wrong_method("GET"));
    svr.Patch(path, wrong_method("GET"));
    svr.Delete(path, wrong_method("GET"));
  }
  for (const char* path : post_paths) {
    svr.Options(path, preflight("POST"));
    svr.Get(path, wrong_method("POST"));
    svr.Put(path, wrong_method("POST"));
    svr.Patch(path, wrong_method("POST"));
    svr.Delete(path, wrong_method("POST"));
  }
  // /v1/responses/{id} (and .../cancel) takes GET, POST and DELETE (all answered with the 404
  // that says nothing is stored); its preflight was a 404 "no such route", which a browser
  // reports as a CORS failure instead of that answer.
  svr.Options(R"(/v1/responses/.+)", preflight("GET, POST, DELETE"));
  // POST /slots/{id_slot}?action=... (decision 0068): its preflight, and 405 for other methods.
  svr.Options(R"(/slots/([^/]+))", preflight("POST"));
  svr.Get(R"(/slots/([^/]+))", wrong_method("POST"));
  svr.Put(R"(/slots/([^/]+))", wrong_method("POST"));
  svr.Patch(R"(/slots/([^/]+))", wrong_method("POST"));
  svr.Delete(R"(/slots/([^/]+))", wrong_method("POST"));
  svr.Put(R"(/v1/responses/.+)", wrong_method("GET, POST, DELETE"));
  svr.Patch(R"(/v1/responses/.+)", wrong_method("GET, POST, DELETE"));
}

Status HttpServer::bind() {
  if (options_.port == 0) {
    const int p = svr_->bind_to_any_port(options_.host);
    if (p <= 0) {
      const std::string why = listen_address_problem(options_.host);
      return make_status(StatusCode::kUnavailable, "cannot listen on {} (any port): {}", options_.host,
                         why.empty() ? "the address is not one of this machine's" : why);
    }
    port_ = p;
    deepen_backlog();
    return {};
  }
  if (!svr_->bind_to_port(options_.host, options_.port)) {
    const std::string why = listen_address_problem(options_.host);
    return make_status(StatusCode::kUnavailable, "cannot listen on {}:{}: {}", options_.host, options_.port,
                       why.empty() ? "the port is in use, or the address is not one of this machine's" : why);
  }
  port_ = options_.port;
  deepen_backlog();
  return {};
}

// httplib listens with a backlog of 5, so a burst of connects had SYNs dropped and retried
// after a second; listen() again on the bound socket sets the kernel's maximum instead.
void HttpServer::deepen_backlog() {
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
}

bool HttpServer::run() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    if (stop_requested_) return true;
    run_entered_ = true;
  }
  const bool ok = svr_->listen_after_bind();
  run_returned_ = true;
  return ok;
}

Status HttpServer::start_background() {
  GS_RETURN_IF_ERROR(bind());
  thread_ = std::thread([this] { run(); });
  return {};
}

void HttpServer::stop() {
  bool entered = false;
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_requested_ = true;
    entered = run_entered_;
  }
  if (entered && svr_) {
    // httplib's stop() acts only on a listener that already runs: one that comes before
    // listen_after_bind() got going is lost and the listener serves forever (serve with
    // a file that fails at once hung, deaf to SIGTERM). Wait until it runs or gave up.
    while (!svr_->is_running() && !run_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    svr_->stop();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace gs::server
