// gemmaserve run: one prompt through the model from the terminal (token ids or text),
// sampled with the runtime's sampler chain, optionally with the MTP drafter.
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
  ro.max_outputs = 16;
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
  for (int32_t id : prompt) sampler.accept(id);

  const int seq = (*runner)->add_sequence().value();
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

  const auto t_prefill = std::chrono::steady_clock::now();
  std::vector<ModelRunner::Token> batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({seq, prompt[i], i + 1 == prompt.size()});
  if (Status st = (*runner)->decode(batch); !st.ok()) return fail(st);
  const double prefill_ms = ms_since(t_prefill);

  std::vector<int32_t> out;
  const auto t_decode = std::chrono::steady_clock::now();
  const int64_t room = a.ctx - static_cast<int64_t>(prompt.size());
  const int64_t n_max = std::min<int64_t>(a.n_predict, room);
  while (static_cast<int64_t>(out.size()) < n_max) {
    const int32_t next = sampler.sample((*runner)->logits(0));
    sampler.accept(next);
    out.push_back(next);
    emit(next);
    if (std::find(eog.begin(), eog.end(), next) != eog.end()) break;
    if (static_cast<int64_t>(out.size()) == n_max) break;
    ModelRunner::Token t{seq, next, true};
    if (Status st = (*runner)->decode({&t, 1}); !st.ok()) return fail(st);
  }
  const double decode_ms = ms_since(t_decode);
  if (detok) std::fputs(detok->finish().c_str(), stdout);
  const double tps = decode_ms > 0 ? 1000.0 * static_cast<double>(out.size()) / decode_ms : 0.0;
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
    if (tok) {
      auto text = tok->decode(out);
      if (text.ok()) j["text"] = *text;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "prompt %zu tokens in %.1f ms, generated %zu tokens at %.2f tokens/s (%s)\n", prompt.size(),
                 prefill_ms, out.size(), tps, (*backend)->description().c_str());
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
  return {sub, [a] { return run(*a); }};
}

}  // namespace gs::cli
