// The OpenAI-compatible HTTP server: routes, auth, body limits, SSE streaming, metrics and
// error bodies, over an Engine and the model's tokenizer. It listens before the model is
// loaded (GET /health answers 503 until set_model()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "engine/engine.h"
#include "server/api_request.h"
#include "server/auth.h"
#include "server/heap_trimmer.h"
#include "server/prometheus.h"
#include "server/request_plan.h"
#include "text/tokenizer.h"

namespace httplib {
class Server;
}

namespace gs::server {

// The request body limit for a server whose sequences hold up to `context_tokens` tokens
// (0: unknown, at most 8192): the larger of 8 MiB and 24 bytes a token, so that a prompt that
// fills the context fits even as JSON with every character escaped (`\uXXXX`, 6 bytes; Gemma's
// tokens average 1 to 4 characters), e.g. 24 MiB at a 1M-token context; at most 1 GiB. Bytes.
size_t body_limit_for_context(int64_t context_tokens);

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port (tests)
  ApiKeys keys;                       // empty: no auth
  size_t max_body_bytes = 8u << 20;   // larger bodies get 413
  int http_threads = 0;               // 0: 96 (each running request holds one)
  // A request's head must arrive within this from its first byte (slow or stalled clients
  // would otherwise hold a worker); idle keep-alive connections close after 5 s.
  std::chrono::milliseconds head_timeout{10000};
  // A response waits at most this long in all for its client to read
  // (ConnectionLimits::write_stall_budget; decision 0047).
  std::chrono::milliseconds write_stall_budget{60000};
  PlanLimits limits;
  // The cache of compiled JSON Schema grammars, the tools' arguments (decision 0066) and the
  // output schemas (decision 0072), that the server makes when limits.grammar_cache is null:
  // at most this many entries (0: no cache) and about this many bytes of compiled grammars
  // (serve --grammar-cache, --grammar-cache-mib).
  int64_t grammar_cache_entries = 256;
  int64_t grammar_cache_bytes = int64_t{64} << 20;
  // Silence after which a stream gets an SSE comment (": keep-alive"): keeps proxies from
  // timing out during a long prefill and notices a client that has gone. A non-streamed
  // response writes nothing before its outcome (its status follows it); it watches the
  // socket instead (current_client_gone()).
  std::chrono::milliseconds keepalive_interval{1000};
  // How long a stream's headers wait for a slot (so that a stream a drain ends while queued
  // gets a 503) before the stream is committed anyway (200, then keep-alive comments): a
  // proxy in front cuts a connection silent for its read timeout (nginx's default: 60 s),
  // and a queue behind a long prefill can take minutes.
  std::chrono::milliseconds stream_commit_wait{10000};
  // malloc_trim once the server is idle after work (check_interval 0: never): glibc keeps
  // freed memory in its heaps, and resident memory grew with every request (bug-case 64).
  HeapTrimOptions heap_trim;
  // GET /props' build_info (llama-server's): the program and its version.
  std::string build_info = "gemmaserve";
  // --slot-save-path: the folder of slot files (POST /slots/{id}?action=...; decision 0068);
  // empty: the slot actions are refused (501).
  std::string slot_save_path;
};

// What set_model() hands over once the model is loaded.
struct ModelContext {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::string model_id;  // the name clients see (--alias, else the file name)
  int64_t created = 0;   // when the model was loaded (Unix seconds): /v1/models' `created`
  EngineInfo info;
  RequestDefaults defaults;  // what requests leave out (sampling, thinking, vocabulary bound)
  std::string model_path;            // the model file as given (GET /props' model_path)
  std::string chat_template_source;  // the file's tokenizer.chat_template, "" when it has none
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket. Errors: kUnavailable (address in use, bad host).
  Status bind();
  int port() const { return port_; }
  // Serves until stop(); call after bind(). Returns false when listening failed; returns
  // at once when stop() came first.
  bool run();
  // bind() + run() on a background thread (tests).
  Status start_background();
  // Stops listening, also a run() that has not started listening yet; returns once run()
  // has returned (background) or immediately.
  void stop();

  void set_model(std::shared_ptr<ModelContext> model);
  // The start of a drain: new generation requests are refused (503), requests still
  // waiting for a slot end now (a 503, or an error event where a stream has begun:
  // Engine::drain), and running ones are left to finish.
  void set_draining();
  bool ready() const;

  HttpCounters counters() const;
  // The process's memory and the idle trims, for /metrics (reads /proc/self/status).
  HostGauges host_gauges() const;

 private:
  void deepen_backlog();
  std::shared_ptr<ModelContext> model() const;
  void install_routes();

  ServerOptions options_;
  std::unique_ptr<httplib::Server> svr_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket, seen by the socket-options callback
  std::thread thread_;
  std::mutex run_mu_;                       // orders run() against stop()
  bool stop_requested_ = false;             // under run_mu_
  bool run_entered_ = false;                // under run_mu_
  std::atomic<bool> run_returned_{false};
  mutable std::mutex mu_;
  std::shared_ptr<ModelContext> model_;
  std::atomic<bool> draining_{false};
  mutable std::mutex counters_mu_;
  HttpCounters counters_;
  int64_t started_unix_ = 0;
  // Last: its thread reads the members above, so it stops first.
  std::unique_ptr<HeapTrimmer> trimmer_;

  friend class Routes;
};

}  // namespace gs::server
