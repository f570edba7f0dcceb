// gemmaserve run: one prompt from the terminal through the same engine the server uses
// (scheduler, sampler chain, optional MTP drafter), streamed to stdout or as one JSON object.
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "int_option.h"
#include "core/int_list.h"
#include "engine/engine_factory.h"
#include "runtime/kv_cache.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace gs::cli {

namespace {

struct RunArgs {
  std::string model;
  std::string prompt_text;
  std::string prompt_tokens;
  int n_predict = 64;
  float temperature = -1.0f;  // -1: the file's general.sampling.temp, else greedy
  int top_k = -1;             // -1: the file's general.sampling.top_k, else off
  float top_p = -1.0f;        // -1: the file's general.sampling.top_p, else off
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int64_t seed = -1;          // -1: random
  int threads = 0;
  int ctx = 4096;
  int ubatch = 512;
  std::string kv_type = "f16";
  std::string device = "auto";
  std::string dump_dir;
  bool json = false;
  bool ignore_eos = false;
  std::string mtp;            // drafter GGUF
  int draft_max = 4;
  float draft_p_min = 0.0f;
  bool draft_adaptive = true;
  std::string draft_window = "w";  // "w" (Decision 2) or "w+1" (transformers)
};

// "1,2,3" (or "1 2 3"): ids in [0, 2^31 - 1], read by the one list reader (core/int_list.h):
// "1,,2" is a typo, not the prompt 1, 2 (the ids are used as given, so none is guessed), and
// " 2" and "+2" are refused as the other lists refuse them (decision 0053).
Result<std::vector<int32_t>> parse_token_list(const std::string& s) {
  GS_ASSIGN_OR_RETURN(const std::vector<int64_t> list, parse_int_list(s, "--prompt-tokens", 0, INT32_MAX));
  if (list.empty()) return make_status(StatusCode::kInvalidArgument, "--prompt-tokens is empty");
  return std::vector<int32_t>(list.begin(), list.end());
}

// The file's recommended sampling (general.sampling.*) fills what the user left unset;
// without either, decoding is greedy.
SamplingParams sampling_params(const RunArgs& a, const RecommendedSampling& file, uint64_t seed) {
  SamplingParams p;
  p.temperature = a.temperature >= 0 ? a.temperature : (file.has_temperature ? file.temperature : 0.0f);
  p.top_k = a.top_k >= 0 ? a.top_k : (file.has_top_k ? file.top_k : 0);
  p.top_p = a.top_p >= 0 ? a.top_p : (file.has_top_p ? file.top_p : 1.0f);
  p.min_p = a.min_p;
  p.repetition_penalty = a.repetition_penalty;
  p.frequency_penalty = a.frequency_penalty;
  p.presence_penalty = a.presence_penalty;
  p.has_seed = true;
  p.seed = seed;
  return p;
}

Result<EngineOptions> engine_options(const RunArgs& a) {
  EngineOptions eo;
  eo.model_path = a.model;
  eo.drafter_path = a.mtp;
  eo.draft_max = a.mtp.empty() ? 0 : a.draft_max;  // as serve: no draft rows planned without a drafter
  eo.draft_p_min = a.draft_p_min;
  eo.draft_adaptive = a.draft_adaptive;
  eo.n_ctx = a.ctx;
  eo.n_slots = 1;
  eo.n_threads = a.threads;
  eo.max_batch_tokens = std::max(1, a.ubatch);
  eo.queue_size = 1;
  eo.dump_dir = a.dump_dir;
  GS_ASSIGN_OR_RETURN(eo.device, parse_device_choice(a.device));
  GS_ASSIGN_OR_RETURN(eo.kv_type, parse_kv_cache_type(a.kv_type));
  if (a.draft_window == "w+1") {
    eo.draft_window_plus_one = true;
  } else if (a.draft_window != "w") {
    return make_status(StatusCode::kInvalidArgument, "--draft-window must be w or w+1");
  }
  return eo;
}

int run(const RunArgs& a) {
  auto fail = [&](const Status& st) {
    std::fprintf(stderr, "gemmaserve run: %s\n", st.to_string().c_str());
    return 1;
  };
  if (a.prompt_tokens.empty() && a.prompt_text.empty()) {
    return fail(make_status(StatusCode::kInvalidArgument, "give a prompt: -p TEXT or --prompt-tokens IDS"));
  }
  auto options = engine_options(a);
  if (!options.ok()) return fail(options.status());
  auto loaded = create_engine(*options);
  if (!loaded.ok()) return fail(loaded.status());
  Engine& engine = *loaded->engine;
  const text::Tokenizer& tok = *loaded->tokenizer;

  GenerationRequest req;
  if (!a.prompt_tokens.empty()) {
    auto ids = parse_token_list(a.prompt_tokens);
    if (!ids.ok()) return fail(ids.status());
    req.prompt = *ids;
  } else {
    req.prompt = tok.encode(a.prompt_text, true, true);
  }
  const uint64_t seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : std::random_device{}();
  req.sampling = sampling_params(a, loaded->sampling, seed);
  req.max_tokens = std::max(0, a.n_predict);
  req.speculative = !a.mtp.empty();
  req.draft_max = a.draft_max;
  req.ignore_eog = a.ignore_eos;

  auto stream = engine.submit(req);
  if (!stream.ok()) return fail(stream.status());
  std::optional<text::IncrementalDecoder> detok;
  if (!a.json) detok.emplace(tok);
  std::vector<int32_t> out;
  StreamEvent ev;
  for (;;) {
    if (!(*stream)->next(&ev, std::chrono::milliseconds(1000))) continue;
    if (ev.kind == StreamEvent::Kind::kError) return fail(ev.error);
    for (const GeneratedToken& t : ev.tokens) {
      out.push_back(t.id);
      if (detok) {
        std::fputs(detok->push(t.id).c_str(), stdout);
        std::fflush(stdout);
      }
    }
    if (ev.kind == StreamEvent::Kind::kDone) break;
  }
  const Usage& u = ev.usage;
  const EngineInfo info = engine.info();
  engine.shutdown();
  if (detok) std::fputs(detok->finish().c_str(), stdout);
  // Decode speed: the tokens after the first (which the prefill pass produced).
  const double n_decoded = out.empty() ? 0.0 : static_cast<double>(out.size() - 1);
  const double tps = u.decode_ms > 0 ? 1000.0 * n_decoded / u.decode_ms : 0.0;
  const double acceptance = u.drafted_tokens > 0 ? static_cast<double>(u.accepted_tokens) / u.drafted_tokens : 0.0;
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = out;
    j["n_prompt"] = req.prompt.size();
    j["n_cached"] = u.cached_tokens;
    j["finish_reason"] = finish_reason_name(ev.finish);
    j["prefill_ms"] = u.prefill_ms;
    j["decode_ms"] = u.decode_ms;
    j["tokens_per_second"] = tps;
    j["prefill_tokens_per_second"] =
        u.prefill_ms > 0 ? 1000.0 * static_cast<double>(req.prompt.size() - u.cached_tokens) / u.prefill_ms : 0.0;
    j["seed"] = seed;
    j["backend"] = info.backend;
    j["drafted"] = u.drafted_tokens;
    j["accepted"] = u.accepted_tokens;
    if (info.has_drafter) {
      j["draft_max"] = a.draft_max;
      j["acceptance_rate"] = acceptance;
    }
    if (auto text = tok.decode(out); text.ok()) j["text"] = *text;
    // The generated text may end inside a character, or hold bytes that are not UTF-8.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    // Flushed before the summary goes to stderr: where both go to one pipe or file
    // (`2>&1 | tee`), the summary ran on from the generated text's last line.
    std::printf("\n");
    std::fflush(stdout);
    // The first token comes from the prefill: with no decode step there is no rate to give
    // (it printed "at 0.00 tokens/s").
    const std::string rate = n_decoded > 0 ? fmt::format("at {:.2f} tokens/s", tps) : std::string("by the prefill alone");
    std::fprintf(stderr, "prompt %zu tokens in %.1f ms, generated %zu token%s %s (%s), finish: %s\n", req.prompt.size(),
                 u.prefill_ms, out.size(), out.size() == 1 ? "" : "s", rate.c_str(), info.backend.c_str(),
                 finish_reason_name(ev.finish));
    if (info.has_drafter) {
      std::fprintf(stderr, "drafted %d, accepted %d (%.3f)\n", u.drafted_tokens, u.accepted_tokens, acceptance);
    }
  }
  return 0;
}

// A number in [lo, hi] (NaN refused: CLI::Range lets it through), or `sentinel` (the
// option's "use the file's value" marker) when one is given.
CLI::Validator in_range(double lo, double hi, std::optional<double> sentinel = std::nullopt) {
  return CLI::Validator(
      [lo, hi, sentinel](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || *end != '\0') return "not a number: " + s;
        if (sentinel && v == *sentinel) return {};
        if (!(v >= lo && v <= hi)) return fmt::format("{} is outside [{}, {}]", s, lo, hi);
        return {};
      },
      fmt::format("[{} - {}]", lo, hi));
}

}  // namespace

CommandEntry register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Generate from one prompt (token ids or text) through the engine and print it");
  sub->add_option("-m,--model", a->model, "Gemma 4 GGUF file (a split model: its first shard)")->required();
  CLI::Option* text_opt =
      sub->add_option("-p,--prompt", a->prompt_text, "prompt text (BOS added; special-token text is parsed)");
  // Both at once: one was silently dropped (the token list won).
  sub->add_option("--prompt-tokens", a->prompt_tokens, "prompt as comma-separated token ids (used as given)")
      ->excludes(text_opt);
  sub->add_option("-n,--n-predict", a->n_predict, "tokens to generate")->capture_default_str()
      ->transform(decimal_integer<int>(1, std::numeric_limits<int>::max()));
  sub->add_option("--temperature", a->temperature, "0 = greedy (default: the file's general.sampling.temp, else 0)")
      ->check(in_range(0.0, 2.0, -1.0));
  sub->add_option("--top-k", a->top_k, "0 = off (default or -1: the file's general.sampling.top_k)")
      ->transform(decimal_integer<int>(-1, 1000000000));
  sub->add_option("--top-p", a->top_p, "1 = off (default: the file's general.sampling.top_p)")
      ->check(in_range(0.0, 1.0, -1.0));
  sub->add_option("--min-p", a->min_p, "0 = off")->capture_default_str()->check(in_range(0.0, 1.0));
  sub->add_option("--repeat-penalty", a->repetition_penalty, "1 = off")->capture_default_str()
      ->check(in_range(0.01, 10.0));
  sub->add_option("--frequency-penalty", a->frequency_penalty)->capture_default_str()->check(in_range(-2.0, 2.0));
  sub->add_option("--presence-penalty", a->presence_penalty)->capture_default_str()->check(in_range(-2.0, 2.0));
  sub->add_option("--seed", a->seed, "RNG seed (default or -1: random)")
      ->transform(decimal_integer<int64_t>(-1, std::numeric_limits<int64_t>::max()));
  sub->add_option("-t,--threads", a->threads, "CPU threads (0 = all cores)")->capture_default_str()
      ->transform(decimal_integer<int>(0, 4096));
  sub->add_option("-c,--ctx-size", a->ctx, "context (positions) of the sequence")->capture_default_str()
      ->transform(decimal_integer<int>(0, std::numeric_limits<int>::max()));
  sub->add_option("--ubatch", a->ubatch, "most prompt tokens per forward pass")->capture_default_str()
      ->transform(decimal_integer<int>(1, 1 << 20));
  sub->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0 (half the bytes of f16)")
      ->capture_default_str()->check(CLI::IsMember({"f16", "f32", "q8_0"}));
  sub->add_option("--device", a->device, "auto (CUDA when a GPU is present), cpu or cuda")->capture_default_str();
  sub->add_option("--dump", a->dump_dir, "write every named intermediate of every pass to this directory");
  sub->add_flag("--json", a->json, "print one JSON object: tokens, text, timings, tokens_per_second, drafted, accepted");
  sub->add_flag("--ignore-eos", a->ignore_eos, "do not stop at end-of-generation tokens");
  CLI::Option* mtp = sub->add_option("--mtp", a->mtp, "MTP drafter GGUF (gemma4-assistant) for speculative decoding");
  // The drafter's options without --mtp: nothing drafts, and they were dropped without a word
  // (bench refused them already); refused by CLI11 as "--draft-max requires --mtp" (decision 0056).
  sub->add_option("--draft-max", a->draft_max, "most drafts per round with --mtp")->capture_default_str()
      ->transform(decimal_integer<int>(0, 16))  // serve's bound (a million planned 103 GB of drafter outputs)
      ->needs(mtp);
  sub->add_option("--draft-p-min", a->draft_p_min, "stop drafting below this drafter probability")->capture_default_str()
      ->check(in_range(0.0, 1.0))
      ->needs(mtp);
  sub->add_flag("--draft-adaptive,!--no-draft-adaptive", a->draft_adaptive,
               "choose each round's draft count from measured costs (default on; off: always --draft-max)")
      ->needs(mtp);
  sub->add_option("--draft-window", a->draft_window,
                  "drafter's sliding window: w (spec Decision 2) or w+1 (transformers)")->capture_default_str()
      ->needs(mtp);
  return {sub, [a] { return run(*a); }};
}

}  // namespace gs::cli
