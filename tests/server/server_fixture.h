// A live HttpServer on a loopback port over the real scheduler, a scripted fake model and
// the real tokenizer of the bundled shakes model: tests drive it over HTTP.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "common/test_paths.h"
#include "core/log.h"
#include "engine/fake_slot_runner.h"
#include "engine/scheduler.h"
#include "gguf/gguf_reader.h"
#include "server/http_server.h"
#include "text/tokenizer.h"

namespace gs::test {

// The output the fake model "generates" for every request: token ids, then end of turn
// (or endless filler when `endless`).
struct Script {
  std::mutex mu;
  std::vector<int32_t> ids;
  int32_t eog = 1;
  int32_t filler = 0;
  bool endless = false;
  std::vector<int32_t> last_prompt;  // the prompt of the latest request the model read

  void saw_prompt(const std::vector<int32_t>& prompt) {
    std::lock_guard<std::mutex> lock(mu);
    last_prompt = prompt;
  }

  int32_t next(size_t index) {
    std::lock_guard<std::mutex> lock(mu);
    if (index < ids.size()) return ids[index];
    return endless ? filler : eog;
  }
};

struct ServerFixtureOptions {
  int32_t n_slots = 4;
  int32_t n_ctx = 2048;
  int32_t queue_size = 16;
  std::chrono::milliseconds step_delay{0};
  bool has_drafter = false;
  std::vector<std::string> keys;
  size_t max_body_bytes = 1u << 20;
  bool load_model = true;
  bool enable_thinking = false;
  server::ReasoningFormat reasoning_format = server::ReasoningFormat::kDeepseek;  // --reasoning-format
  int http_threads = 0;                          // 0: the server's default
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds stream_commit_wait{10000};
  std::chrono::milliseconds write_stall_budget{60000};
};

class LiveServer {
 public:
  explicit LiveServer(ServerFixtureOptions o = {}) : o_(o) {
    set_log_level("warn");  // one info line per request would bury the test output
    tok = shakes_tokenizer();
    script = std::make_shared<Script>();
    script->eog = *tok->find_token("<turn|>");
    script->filler = tok->encode(" la", false, false).front();
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    so.max_body_bytes = o.max_body_bytes;
    so.keepalive_interval = std::chrono::milliseconds(200);
    so.http_threads = o.http_threads;
    so.head_timeout = o.head_timeout;
    so.write_stall_budget = o.write_stall_budget;
    so.stream_commit_wait = o.stream_commit_wait;
    if (!o.keys.empty()) so.keys = *server::ApiKeys::from_keys(o.keys);
    http = std::make_unique<server::HttpServer>(so);
    Status st = http->start_background();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (o.load_model) load();
  }
  ~LiveServer() {
    http->stop();
    if (engine) engine->shutdown();
  }

  void load() {
    FakeSlotRunner::Options ro;
    ro.n_slots = o_.n_slots;
    ro.n_ctx = o_.n_ctx;
    ro.n_vocab = tok->n_vocab();
    ro.max_batch_tokens = 256;
    ro.eog = tok->eog_ids();
    ro.step_delay = o_.step_delay;
    ro.has_drafter = o_.has_drafter;
    ro.draft_max = o_.has_drafter ? 3 : 0;
    auto s = script;
    ro.next = [s](const std::vector<int32_t>& h, size_t n_prompt) {
      if (h.size() == n_prompt) s->saw_prompt(h);
      return s->next(h.size() - n_prompt);
    };
    auto r = std::make_unique<FakeSlotRunner>(ro);
    runner = r.get();
    SchedulerOptions sched;
    sched.queue_size = o_.queue_size;
    engine = std::make_shared<Scheduler>(std::move(r), sched);
    auto ctx = std::make_shared<server::ModelContext>();
    ctx->engine = engine;
    ctx->tokenizer = tok;
    ctx->model_id = "shakes-test";
    ctx->created = 1764720000;  // what cmd_serve sets to the load time
    ctx->info = engine->info();
    ctx->defaults.n_vocab = tok->n_vocab();
    ctx->defaults.enable_thinking = o_.enable_thinking;
    ctx->defaults.reasoning_format = o_.reasoning_format;
    ctx->defaults.sampling.temperature = 0;
    http->set_model(ctx);
  }

  // The model will answer `text` (special-token text parsed), then end its turn.
  void answer(const std::string& text, bool endless = false) {
    std::lock_guard<std::mutex> lock(script->mu);
    script->ids = tok->encode(text, false, true);
    script->endless = endless;
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", http->port());
    c.set_read_timeout(20, 0);
    return c;
  }

  httplib::Result post(const std::string& path, const std::string& body, httplib::Headers headers = {}) const {
    return client().Post(path.c_str(), headers, body, "application/json");
  }
  httplib::Result get(const std::string& path, httplib::Headers headers = {}) const {
    return client().Get(path.c_str(), headers);
  }

  ServerFixtureOptions o_;
  std::shared_ptr<const text::Tokenizer> tok;
  std::shared_ptr<Script> script;
  FakeSlotRunner* runner = nullptr;
  std::shared_ptr<Scheduler> engine;
  std::unique_ptr<server::HttpServer> http;
};

// The server answers /health with 200 (it is up and still serving).
inline void expect_healthy(const LiveServer& s) {
  auto h = s.get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// The data payloads of an SSE body, in order ("[DONE]" included); comment lines skipped.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(pos, end - pos);
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    pos = end + 1;
  }
  return out;
}

}  // namespace gs::test
