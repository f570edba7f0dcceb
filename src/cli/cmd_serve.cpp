// gemmaserve serve: the OpenAI-compatible server over a Gemma 4 GGUF (and its MTP drafter).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "int_option.h"
#include "core/host_memory.h"
#include "core/log.h"
#include "engine/engine_factory.h"
#include "runtime/kv_cache.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/openai_format.h"

namespace gs::cli {

namespace {

struct ServeArgs {
  std::string model;
  std::string drafter;
  int draft_max = 4;
  bool draft_adaptive = true;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key_file;
  std::vector<std::string> api_keys;
  int ctx_size = 0;
  int parallel = 4;
  int threads = 0;
  std::string alias;
  std::string device = "auto";
  std::string kv_type = "f16";
  size_t max_body_bytes = 0;  // 0: server::body_limit_for_context(ctx_size)
  int queue_size = 64;
  std::string reasoning = "on";
  int reasoning_budget = -1;
  std::string reasoning_format = "auto";
  int default_max_tokens = 4096;
  int shutdown_timeout_s = 10;
  std::string log_level = "info";
  int64_t cache_ram_mib = -1;  // llama-server's --cache-ram; accepted, nothing to cap (decision 0036)
  int64_t grammar_cache = 256;  // compiled schema grammars kept across requests (decisions 0066, 0072); 0: none
  int64_t grammar_cache_mib = 64;
  std::string slot_save_path;  // POST /slots/{id}?action=save|restore|erase (decision 0068)
};

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

uint64_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// glibc malloc arenas for the server (decision 0036): enough that the engine thread, the CPU
// backend's workers and the running requests' HTTP threads rarely wait on one another, few
// enough that the dozens of HTTP worker threads do not each grow an arena of their own.
constexpr int kServeMallocArenas = 4;

// Most HTTP worker threads. Each running or queued request holds one, so the server starts
// --parallel + --queue-size + 16 of them; a queue of tens of thousands would start that many
// threads at once (past the system's limit, the server aborted). Beyond this, connections wait
// for a worker before their request reaches the queue.
constexpr int kMaxHttpThreads = 4096;

int serve(const ServeArgs& a) {
  set_log_level(a.log_level);
  // Before any thread starts (arenas already made would stay). MALLOC_ARENA_MAX in the
  // environment, when set, is glibc's own choice and is left alone.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) limit_malloc_arenas(kServeMallocArenas);
  // Signals are taken by one thread (sigwait); every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  server::ServerOptions so;
  so.host = a.host;
  so.port = a.port;
  so.max_body_bytes = a.max_body_bytes > 0 ? a.max_body_bytes : server::body_limit_for_context(a.ctx_size);
  so.http_threads = std::min(a.parallel + a.queue_size + 16, kMaxHttpThreads);
  if (so.http_threads < a.parallel + a.queue_size + 16) {
    GS_LOG_INFO("{} HTTP worker threads for --parallel {} and --queue-size {}: requests beyond them wait for a "
                "worker (no 429) until one is free",
                so.http_threads, a.parallel, a.queue_size);
  }
  if (!a.api_key_file.empty()) {
    Result<server::ApiKeys> keys = server::ApiKeys::from_file(a.api_key_file);
    if (!keys.ok()) {
      std::fprintf(stderr, "gemmaserve serve: %s\n", keys.status().to_string().c_str());
      return 1;
    }
    so.keys = std::move(*keys);
  } else if (!a.api_keys.empty()) {
    Result<server::ApiKeys> keys = server::ApiKeys::from_keys(a.api_keys);
    if (!keys.ok()) {
      std::fprintf(stderr, "gemmaserve serve: %s\n", keys.status().to_string().c_str());
      return 1;
    }
    so.keys = std::move(*keys);
  }
  if (a.reasoning != "on" && a.reasoning != "off") {
    std::fprintf(stderr, "gemmaserve serve: --reasoning must be on or off\n");
    return 2;
  }
  so.limits.default_max_tokens = a.default_max_tokens;
  so.grammar_cache_entries = a.grammar_cache;
  so.grammar_cache_bytes = a.grammar_cache_mib << 20;
  so.build_info = std::string("gemmaserve ") + GS_VERSION;
  if (!a.slot_save_path.empty()) {
    // Slot files go in this folder (made when missing), under names the clients give.
    std::error_code ec;
    std::filesystem::create_directories(a.slot_save_path, ec);
    if (!std::filesystem::is_directory(a.slot_save_path, ec)) {
      std::fprintf(stderr, "gemmaserve serve: --slot-save-path %s is not a folder that can be made\n",
                   a.slot_save_path.c_str());
      return 1;
    }
    so.slot_save_path = a.slot_save_path;
  }

  auto http = std::make_unique<server::HttpServer>(so);
  if (Status bound = http->bind(); !bound.ok()) {
    std::fprintf(stderr, "gemmaserve serve: %s\n", bound.message().c_str());
    return 1;
  }
  // An IPv6 literal goes in brackets in a URL (RFC 3986 3.2.2): http://[::1]:8080.
  const std::string url_host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  GS_LOG_INFO("listening on http://{}:{} (model loading)", url_host, http->port());
  if (a.cache_ram_mib >= 0) {
    GS_LOG_INFO("--cache-ram {}: no host prompt cache to cap; prefixes are reused from the slots' KV cache, "
                "allocated once at start (kv_cache_bytes on /metrics)",
                a.cache_ram_mib);
  }
  std::thread http_thread([&] { http->run(); });

  std::atomic<bool> quit{false};
  std::shared_ptr<Engine> engine_for_signal;
  std::mutex engine_mu;
  std::thread signal_thread([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    while (!quit) {
      siginfo_t info;
      const int sig = sigtimedwait(&signals, &info, &tick);
      if (sig <= 0) continue;
      std::shared_ptr<Engine> engine;
      {
        std::lock_guard<std::mutex> lock(engine_mu);
        engine = engine_for_signal;
      }
      if (!engine) {
        // The model still loads: no request runs before it is there (they get 503 "loading"),
        // so there is nothing to drain, and the load (minutes for a large model on a GPU)
        // cannot be cut short from here. Before, the load went on to its end and a second
        // signal was never read: Ctrl-C did nothing until the model had loaded.
        GS_LOG_INFO("signal {} while the model loads: stopping now", sig);
        spdlog::default_logger()->flush();
        std::fflush(stdout);
        std::_Exit(0);
      }
      GS_LOG_INFO("signal {}: draining (up to {} s), then stopping", sig, a.shutdown_timeout_s);
      // Refuses new requests and ends the queued ones at once (503): only running ones
      // get the drain time.
      http->set_draining();
      engine->drain();  // set_draining drains it only once the server holds the model
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.shutdown_timeout_s);
      const timespec poll{0, 50 * 1000 * 1000};
      while (std::chrono::steady_clock::now() < deadline) {
        EngineMetrics m = engine->metrics();
        if (m.busy_slots == 0 && m.queue_length == 0) break;
        // A second SIGINT / SIGTERM while draining stops at once, as llama-server's second
        // Ctrl-C does: running requests are cut off, the exit status is 128 + the signal.
        const int again = sigtimedwait(&signals, &info, &poll);
        if (again > 0) {
          GS_LOG_WARN("signal {} again: stopping now, without waiting for running requests", again);
          spdlog::default_logger()->flush();
          std::_Exit(128 + again);
        }
      }
      engine->shutdown();
      http->stop();
      return;
    }
  });
  auto finish = [&](int code) {
    quit = true;
    signal_thread.join();
    http->stop();
    http_thread.join();
    return code;
  };

  EngineOptions eo;
  eo.model_path = a.model;
  eo.drafter_path = a.drafter;
  eo.draft_max = a.drafter.empty() ? 0 : a.draft_max;
  eo.draft_adaptive = a.draft_adaptive;
  eo.n_ctx = a.ctx_size;
  eo.n_slots = a.parallel;
  eo.n_threads = a.threads;
  eo.queue_size = a.queue_size;
  const Result<DeviceChoice> device = parse_device_choice(a.device);  // the option admits only its three names
  eo.device = device.ok() ? *device : DeviceChoice::kAuto;
  const Result<GgmlType> kv_type = parse_kv_cache_type(a.kv_type);  // the option admits only its names
  eo.kv_type = kv_type.ok() ? *kv_type : GgmlType::F16;
  Result<LoadedEngine> loaded = create_engine(eo);
  if (!loaded.ok()) {
    std::fprintf(stderr, "gemmaserve serve: cannot start: %s\n", loaded.status().to_string().c_str());
    return finish(1);
  }
  {
    std::lock_guard<std::mutex> lock(engine_mu);
    engine_for_signal = loaded->engine;
  }
  auto ctx = std::make_shared<server::ModelContext>();
  ctx->engine = loaded->engine;
  ctx->tokenizer = loaded->tokenizer;
  ctx->model_id = a.alias.empty() ? loaded->model_name : a.alias;
  ctx->created = server::unix_now();
  ctx->info = loaded->engine->info();
  ctx->defaults.n_vocab = ctx->info.n_vocab;
  ctx->defaults.chat_template = loaded->chat_template.variant;
  ctx->model_path = a.model;
  ctx->chat_template_source = loaded->chat_template_source;
  ctx->defaults.enable_thinking = a.reasoning == "on" && a.reasoning_budget != 0;
  ctx->defaults.reasoning_budget = a.reasoning_budget;
  // The option admits only the names parse_reasoning_format knows.
  ctx->defaults.reasoning_format =
      server::parse_reasoning_format(a.reasoning_format).value_or(server::ReasoningFormat::kDeepseek);
  // The file's recommended sampling, where it gives one, for requests that leave it out.
  const RecommendedSampling& rec = loaded->sampling;
  if (rec.has_temperature) ctx->defaults.sampling.temperature = rec.temperature;
  if (rec.has_top_p) ctx->defaults.sampling.top_p = rec.top_p;
  if (rec.has_top_k) ctx->defaults.sampling.top_k = rec.top_k;
  const EngineInfo& info = ctx->info;
  http->set_model(ctx);

  std::printf("gemmaserve %s\n", GS_VERSION);
  std::printf("  model     %s (%s)\n", ctx->model_id.c_str(), a.model.c_str());
  std::printf("  backend   %s\n", info.backend.c_str());
  std::printf("  context   %d tokens per sequence, %d parallel sequences, queue %d\n", info.n_ctx, info.n_slots,
              info.queue_size);
  std::printf("  memory    weights %s, KV cache %s (%s), resident %s\n", human_bytes(info.weight_bytes).c_str(),
              human_bytes(info.kv_bytes).c_str(), a.kv_type.c_str(), human_bytes(resident_bytes()).c_str());
  if (info.has_drafter) {
    std::printf("  drafter   %s (up to %d drafts per round, %s)\n", a.drafter.c_str(), info.draft_max,
                a.draft_adaptive ? "adaptive" : "fixed");
  } else {
    std::printf("  drafter   none\n");
  }
  std::printf("  auth      %s\n", so.keys.enabled() ? "API key required" : "none (anyone who can reach the port)");
  std::printf("  listening http://%s:%d  (OpenAI API under /v1, GET /health, GET /metrics)\n", url_host.c_str(),
              http->port());
  const std::string auth_header = so.keys.enabled() ? " -H 'Authorization: Bearer YOUR_KEY'" : "";
  std::printf("  try: curl http://%s:%d/v1/completions -H 'Content-Type: application/json'%s -d "
              "'{\"prompt\":\"ROMEO:\",\"max_tokens\":64}'\n",
              url_host.c_str(), http->port(), auth_header.c_str());
  std::printf("       curl http://%s:%d/v1/chat/completions -H 'Content-Type: application/json'%s -d "
              "'{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":64}'\n",
              url_host.c_str(), http->port(), auth_header.c_str());
  std::printf("  stop      Ctrl-C or SIGTERM (running requests get %d s to finish; a second one stops at once)\n",
              a.shutdown_timeout_s);
  if (!so.keys.enabled() && a.host != "127.0.0.1" && a.host != "localhost" && a.host != "::1") {
    GS_LOG_WARN("listening on {} without an API key: anyone who can reach the port can use the model", a.host);
  }
  std::fflush(stdout);

  http_thread.join();  // returns once a signal stopped the server
  quit = true;
  signal_thread.join();
  loaded->engine->shutdown();
  GS_LOG_INFO("stopped");
  return 0;
}

}  // namespace

CommandEntry register_serve(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "Serve a Gemma 4 GGUF over an OpenAI-compatible HTTP API");
  sub->add_option("-m,--model", args->model, "Target model GGUF (a split model: its first shard)")->required()->check(CLI::ExistingFile);
  CLI::Option* mtp = sub->add_option("--mtp", args->drafter, "MTP drafter (assistant) GGUF for speculative decoding")
                         ->check(CLI::ExistingFile);
  // Without --mtp nothing drafts: these were dropped without a word (decision 0056).
  sub->add_option("--draft-max", args->draft_max, "Drafts per speculative round")->capture_default_str()
      ->transform(decimal_integer<int>(1, 16))
      ->needs(mtp);
  sub->add_flag("--draft-adaptive,!--no-draft-adaptive", args->draft_adaptive,
                "Choose each round's draft count from measured costs and acceptance, so drafting never makes "
                "decoding much slower (default on; off: always --draft-max)")
      ->needs(mtp);
  // Empty, --host bound whatever the resolver gives for "" and printed "http://:PORT", and
  // --alias was dropped for the file's name without a word.
  const CLI::Validator non_empty([](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                                 "NONEMPTY");
  sub->add_option("--host", args->host, "Address to listen on")->capture_default_str()->check(non_empty);
  sub->add_option("--port", args->port, "Port to listen on")->capture_default_str()->transform(decimal_integer<int>(0, 65535));
  auto* key_file = sub->add_option("--api-key-file", args->api_key_file,
                                   "File with API keys, one per line (keeps keys out of `ps`); blank lines and lines "
                                   "starting with # are skipped")
                       ->check(CLI::ExistingFile);
  sub->add_option("--api-key", args->api_keys, "An API key clients must send (repeatable)")->excludes(key_file);
  sub->add_option("-c,--ctx-size", args->ctx_size, "Context tokens per sequence (0: min(model, 8192))")
      ->capture_default_str()->transform(decimal_integer<int>(0, std::numeric_limits<int32_t>::max()));
  sub->add_option("-P,--parallel", args->parallel, "Sequences run at once (slots)")->capture_default_str()
      ->transform(decimal_integer<int>(1, 256));
  sub->add_option("-t,--threads", args->threads, "CPU threads (0: all cores)")->capture_default_str()
      ->transform(decimal_integer<int>(0, 4096));
  sub->add_option("--alias", args->alias, "Model name shown to clients (default: the file's name)")->check(non_empty);
  sub->add_option("--device", args->device, "cpu, cuda or auto")->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  sub->add_option("--kv-type", args->kv_type,
                  "KV cache type: f16, f32 or q8_0 (half the bytes of f16; llama.cpp's -ctk/-ctv q8_0)")
      ->capture_default_str()->check(CLI::IsMember({"f16", "f32", "q8_0"}));
  sub->add_option("--max-body-bytes", args->max_body_bytes,
                  "Largest request body accepted (413 above; default: the larger of 8 MiB and 24 bytes a context token)")
      ->transform(decimal_integer<size_t>(size_t{1} << 10, size_t{1} << 32));
  sub->add_option("--queue-size", args->queue_size,
                  "Requests that may wait for a slot (429 beyond; past about 4080 running and waiting requests, "
                  "further ones wait for an HTTP thread instead)")
      ->capture_default_str()->transform(decimal_integer<int>(0, 100000));
  sub->add_option("--reasoning", args->reasoning, "Thinking by default: on or off (requests can override)")
      ->capture_default_str()->check(CLI::IsMember({"on", "off"}));
  sub->add_option("--reasoning-budget", args->reasoning_budget,
                  "Default reasoning budget in tokens (-1: unlimited, 0: no thinking unless a request asks for "
                  "it, which then thinks without a cap; requests can set their own)")
      ->capture_default_str()->transform(decimal_integer<int>(-1, 1 << 30));
  sub->add_option("--reasoning-format", args->reasoning_format,
                  "Where chat completions put the thinking (requests can override with reasoning_format): "
                  "deepseek (reasoning_content), none (left in content, with its markup), deepseek-legacy (both), "
                  "auto (deepseek)")
      ->capture_default_str()->check(CLI::IsMember({"none", "deepseek", "deepseek-legacy", "auto"}));
  sub->add_option("--default-max-tokens", args->default_max_tokens,
                  "Completion tokens for a chat request that sets no max_tokens (/v1/completions keeps "
                  "OpenAI's default of 16)")
      ->capture_default_str()->transform(decimal_integer<int>(1, 1 << 30));
  sub->add_option("--shutdown-timeout", args->shutdown_timeout_s,
                  "Seconds to let running requests finish after SIGTERM/SIGINT")
      ->capture_default_str()->transform(decimal_integer<int>(0, 3600));
  sub->add_option("--cache-ram", args->cache_ram_mib,
                  "llama-server's host prompt-cache cap in MiB, accepted for its command lines: gemmaserve keeps "
                  "no host prompt cache (prefixes are reused from the slots' KV cache, fixed at start)")
      ->transform(decimal_integer<int64_t>(-1, int64_t{1} << 40));
  sub->add_option("--grammar-cache", args->grammar_cache,
                  "Compiled JSON Schema grammars (tool arguments, response_format and other output schemas) "
                  "kept across requests, so that a resent schema is not compiled again (0: none)")
      ->capture_default_str()->transform(decimal_integer<int64_t>(0, int64_t{1} << 20));
  sub->add_option("--grammar-cache-mib", args->grammar_cache_mib,
                  "Most memory of the kept grammars in MiB (estimated; least recently used dropped first)")
      ->capture_default_str()->transform(decimal_integer<int64_t>(1, int64_t{1} << 20));
  sub->add_option("--slot-save-path", args->slot_save_path,
                  "Folder of slot files: POST /slots/{id}?action=save|restore saves a slot's processed prompt "
                  "(tokens and KV cache) there and restores it, even after a restart (llama-server's; without "
                  "it the slot actions are refused)")
      ->check(non_empty);
  sub->add_option("--log-level", args->log_level, "trace, debug, info, warn, error or off")->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  return {sub, [args] { return serve(*args); }};
}

}  // namespace gs::cli
