// gemmaserve run: one prompt through the model from the terminal (token ids or text),
// sampled with the runtime's sampler chain, optionally with the MTP drafter (speculative
// decoding through the same SpeculativeDecoder the engine uses).
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/registry/registry.h"
#include "commands.h"
#include "core/log.h"
#include "model/dump.h"
#include "model/gemma4_model.h"
#include "model/gguf_names.h"
#include "runtime/model_runner.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"
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
  std::string device = "cpu";
  std::string dump_dir;
  bool json = false;
  bool ignore_eos = false;
  std::string mtp;            // drafter GGUF
  int draft_max = 4;
  float draft_p_min = 0.0f;
  std::string draft_window = "w";  // "w" (Decision 2) or "w+1" (transformers)
};

Result<std::vector<int32_t>> parse_token_list(const std::string& s) {
  std::vector<int32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      out.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      return make_status(StatusCode::kInvalidArgument, "--prompt-tokens: '{}' is not a token id", item);
    }
  }
  if (out.empty()) return make_status(StatusCode::kInvalidArgument, "--prompt-tokens is empty");
  return out;
}

// The file's recommended sampling (general.sampling.*) fills what the user left unset.
SamplerConfig sampler_config(const RunArgs& a, const gguf::GgufFile& f, uint64_t seed) {
  SamplerConfig c;
  auto file_f32 = [&](std::string_view key, float dflt) {
    auto v = f.get_f32(key);
    return v.ok() ? *v : dflt;
  };
  c.temperature = a.temperature >= 0 ? a.temperature : file_f32(names::kSamplingTemp, 0.0f);
  c.top_k = a.top_k >= 0 ? a.top_k : static_cast<int32_t>(f.get_i32(names::kSamplingTopK).ok() ? *f.get_i32(names::kSamplingTopK) : 0);
  c.top_p = a.top_p >= 0 ? a.top_p : file_f32(names::kSamplingTopP, 1.0f);
  c.min_p = a.min_p;
  c.repetition_penalty = a.repetition_penalty;
  c.frequency_penalty = a.frequency_penalty;
  c.presence_penalty = a.presence_penalty;
  c.seed = seed;
  return c;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run(const RunArgs& a) {
  auto fail = [&](const Status& st) {
    std::fprintf(stderr, "gemmaserve run: %s\n", st.to_string().c_str());
    return 1;
  };
  BackendKind kind = BackendKind::kCpu;
  if (a.device == "cuda") {
    kind = BackendKind::kCuda;
  } else if (a.device != "cpu") {
    return fail(make_status(StatusCode::kInvalidArgument, "--device must be cpu or cuda"));
  }
  auto backend = create_backend(kind, BackendOptions{a.threads, 0});
  if (!backend.ok()) return fail(backend.status());
  auto model = Gemma4Model::load(a.model, **backend);
  if (!model.ok()) return fail(model.status());
  const Gemma4Config& c = (*model)->config();
  if (c.is_assistant()) return fail(make_status(StatusCode::kInvalidArgument, "{} is a drafter; give it with --mtp", a.model));

  std::shared_ptr<const text::Tokenizer> tok;
  if (auto t = text::Tokenizer::from_gguf((*model)->file()); t.ok()) {
    tok = *t;
  } else if (!a.prompt_text.empty()) {
    return fail(t.status());
  }
  std::vector<int32_t> prompt;
  if (!a.prompt_tokens.empty()) {
    auto ids = parse_token_list(a.prompt_tokens);
    if (!ids.ok()) return fail(ids.status());
    prompt = *ids;
  } else if (!a.prompt_text.empty()) {
    prompt = tok->encode(a.prompt_text, true, true);
  } else {
    return fail(make_status(StatusCode::kInvalidArgument, "give a prompt: -p TEXT or --prompt-tokens IDS"));
  }
  for (int32_t id : prompt) {
    if (id >= c.n_vocab) return fail(make_status(StatusCode::kInvalidArgument, "prompt token {} is outside the vocabulary of {}", id, c.n_vocab));
  }
  if (static_cast<int64_t>(prompt.size()) >= a.ctx) {
    return fail(make_status(StatusCode::kOutOfRange, "prompt of {} tokens does not fit the context of {}", prompt.size(), a.ctx));
  }
  std::vector<int32_t> eog;
  if (!a.ignore_eos) {
    if (tok) eog = tok->eog_ids();
    if (c.eos_token_id >= 0) eog.push_back(c.eos_token_id);
  }

  RunnerOptions ro;
  ro.max_tokens = std::max(1, a.ubatch);
  ro.max_outputs = std::max(16, a.draft_max + 1);
  ro.kv.n_ctx = a.ctx;
  ro.kv.n_seq_max = 1;
  if (a.kv_type == "f32") {
    ro.kv.type = GgmlType::F32;
  } else if (a.kv_type != "f16") {
    return fail(make_status(StatusCode::kInvalidArgument, "--kv-type must be f16 or f32"));
  }
  auto runner = ModelRunner::create(*model, ro);
  if (!runner.ok()) return fail(runner.status());
  if (!a.dump_dir.empty()) {
    auto dump = make_dir_dump(a.dump_dir);
    if (!dump.ok()) return fail(dump.status());
    (*runner)->forward().set_dump(*dump);
  }
  const uint64_t seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : std::random_device{}();
  Sampler sampler(sampler_config(a, (*model)->file(), seed));

  std::shared_ptr<Gemma4Model> assistant;
  if (!a.mtp.empty()) {
    auto m = Gemma4Model::load(a.mtp, **backend);
    if (!m.ok()) return fail(m.status());
    assistant = *m;
  }
  SpecOptions so;
  so.draft_max = assistant ? std::max(0, a.draft_max) : 0;
  so.draft_p_min = a.draft_p_min;
  if (a.draft_window == "w+1") {
    so.sliding = DraftSlidingWindow::kWindowPlusOne;
  } else if (a.draft_window != "w") {
    return fail(make_status(StatusCode::kInvalidArgument, "--draft-window must be w or w+1"));
  }
  auto dec = SpeculativeDecoder::create(**runner, assistant, so);
  if (!dec.ok()) return fail(dec.status());

  const int seq = (*runner)->add_sequence().value();
  if (Status st = (*dec)->start(seq); !st.ok()) return fail(st);
  std::optional<text::IncrementalDecoder> detok;
  if (tok && !a.json) detok.emplace(*tok);
  auto emit = [&](int32_t id) {
    if (a.json) return;
    if (detok) {
      std::fputs(detok->push(id).c_str(), stdout);
    } else {
      std::printf("%d ", id);
    }
    std::fflush(stdout);
  };

  const int64_t room = a.ctx - static_cast<int64_t>(prompt.size());
  const int64_t n_max = std::min<int64_t>(a.n_predict, room);
  std::vector<int32_t> out;
  auto take = [&](const std::vector<int32_t>& toks) {
    for (int32_t t : toks) {
      if (static_cast<int64_t>(out.size()) >= n_max) return true;
      out.push_back(t);
      emit(t);
      if (std::find(eog.begin(), eog.end(), t) != eog.end()) return true;
    }
    return static_cast<int64_t>(out.size()) >= n_max;
  };
  const auto t_prefill = std::chrono::steady_clock::now();
  SeqWork pre;
  pre.seq = seq;
  pre.sampler = &sampler;
  // The prompt's tokens enter the sampler's penalty history inside the step.
  pre.prefill = prompt;
  if (Status st = (*dec)->step({&pre, 1}); !st.ok()) return fail(st);
  const double prefill_ms = ms_since(t_prefill);

  const auto t_decode = std::chrono::steady_clock::now();
  bool done = n_max <= 0 || take(pre.tokens);
  while (!done) {
    SeqWork w;
    w.seq = seq;
    w.sampler = &sampler;
    w.draft_max = so.draft_max;
    w.max_tokens = static_cast<int>(n_max - static_cast<int64_t>(out.size()));
    w.stop_tokens = eog;
    if (Status st = (*dec)->step({&w, 1}); !st.ok()) return fail(st);
    done = take(w.tokens);
  }
  const double decode_ms = ms_since(t_decode);
  if (detok) std::fputs(detok->finish().c_str(), stdout);
  // Decode speed: the tokens after the first (which the prefill pass produced).
  const double n_decoded = out.empty() ? 0.0 : static_cast<double>(out.size() - 1);
  const double tps = decode_ms > 0 ? 1000.0 * n_decoded / decode_ms : 0.0;
  if (a.json) {
    nlohmann::json j;
    j["tokens"] = out;
    j["n_prompt"] = prompt.size();
    j["prefill_ms"] = prefill_ms;
    j["decode_ms"] = decode_ms;
    j["tokens_per_second"] = tps;
    j["prefill_tokens_per_second"] = prefill_ms > 0 ? 1000.0 * static_cast<double>(prompt.size()) / prefill_ms : 0.0;
    j["seed"] = seed;
    j["backend"] = (*backend)->description();
    const SpecStats& ss = (*dec)->stats();
    j["drafted"] = ss.drafted;
    j["accepted"] = ss.accepted;
    if (assistant) {
      j["draft_max"] = so.draft_max;
      j["acceptance_rate"] = ss.acceptance_rate();
      j["mean_accepted_length"] = ss.mean_accepted_length();
      j["drafted_by_position"] = ss.drafted_by_pos;
      j["accepted_by_position"] = ss.accepted_by_pos;
    }
    if (tok) {
      auto text = tok->decode(out);
      if (text.ok()) j["text"] = *text;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "prompt %zu tokens in %.1f ms, generated %zu tokens at %.2f tokens/s (%s)\n", prompt.size(),
                 prefill_ms, out.size(), tps, (*backend)->description().c_str());
    if (assistant) {
      const SpecStats& ss = (*dec)->stats();
      std::fprintf(stderr, "drafted %llu, accepted %llu (%.3f), %.2f accepted per round\n",
                   static_cast<unsigned long long>(ss.drafted), static_cast<unsigned long long>(ss.accepted),
                   ss.acceptance_rate(), ss.mean_accepted_length());
    }
  }
  return 0;
}

}  // namespace

CommandEntry register_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Generate from one prompt (token ids or text) and print the result");
  sub->add_option("-m,--model", a->model, "Gemma 4 GGUF file")->required();
  sub->add_option("-p,--prompt", a->prompt_text, "prompt text (BOS added; special-token text is parsed)");
  sub->add_option("--prompt-tokens", a->prompt_tokens, "prompt as comma-separated token ids (used as given)");
  sub->add_option("-n,--n-predict", a->n_predict, "tokens to generate")->capture_default_str();
  sub->add_option("--temperature", a->temperature, "0 = greedy (default: the file's general.sampling.temp, else 0)");
  sub->add_option("--top-k", a->top_k, "0 = off (default: the file's general.sampling.top_k)");
  sub->add_option("--top-p", a->top_p, "1 = off (default: the file's general.sampling.top_p)");
  sub->add_option("--min-p", a->min_p, "0 = off")->capture_default_str();
  sub->add_option("--repeat-penalty", a->repetition_penalty, "1 = off")->capture_default_str();
  sub->add_option("--frequency-penalty", a->frequency_penalty)->capture_default_str();
  sub->add_option("--presence-penalty", a->presence_penalty)->capture_default_str();
  sub->add_option("--seed", a->seed, "RNG seed (default: random)");
  sub->add_option("-t,--threads", a->threads, "CPU threads (0 = all cores)")->capture_default_str();
  sub->add_option("-c,--ctx-size", a->ctx, "context (positions) of the sequence")->capture_default_str();
  sub->add_option("--ubatch", a->ubatch, "most prompt tokens per forward pass")->capture_default_str();
  sub->add_option("--kv-type", a->kv_type, "KV cache type: f16 or f32")->capture_default_str();
  sub->add_option("--device", a->device, "cpu or cuda")->capture_default_str();
  sub->add_option("--dump", a->dump_dir, "write every named intermediate of every pass to this directory");
  sub->add_flag("--json", a->json, "print one JSON object: tokens, text, timings, tokens_per_second");
  sub->add_flag("--ignore-eos", a->ignore_eos, "do not stop at end-of-generation tokens");
  sub->add_option("--mtp", a->mtp, "MTP drafter GGUF (gemma4-assistant) for speculative decoding");
  sub->add_option("--draft-max", a->draft_max, "most drafts per round with --mtp")->capture_default_str();
  sub->add_option("--draft-p-min", a->draft_p_min, "stop drafting below this drafter probability")->capture_default_str();
  sub->add_option("--draft-window", a->draft_window,
                  "drafter's sliding window: w (spec Decision 2) or w+1 (transformers)")->capture_default_str();
  return {sub, [a] { return run(*a); }};
}

}  // namespace gs::cli
