// The real engine (the shakes model on the CPU, drafter on or off) behind a live HttpServer
// on a loopback port: tests of what the model does under a request's constraints.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "core/log.h"
#include "engine/engine_factory.h"
#include "server/http_server.h"

namespace gs::test {

// The chunks of an SSE body ("data: {...}" lines, not "[DONE]") that carry a choice.
inline std::vector<nlohmann::json> sse_choice_chunks(const std::string& body) {
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
    nlohmann::json c = nlohmann::json::parse(line.substr(6));
    if (!c["choices"].empty()) out.push_back(std::move(c));
  }
  return out;
}

class ShakesHttp {
 public:
  ShakesHttp() = default;
  ShakesHttp(const ShakesHttp&) = delete;
  ShakesHttp& operator=(const ShakesHttp&) = delete;
  ~ShakesHttp() { stop(); }

  // Loads the model (and the drafter when `drafter`) and starts the server.
  void start(bool drafter) {
    // Drafting every round (adaptive off): a drafted masked step would show.
    start(shakes_engine_options(drafter, /*adaptive=*/false), server::ServerOptions{});
  }
  // The same with the engine options `o` and the server options `so` (its host and port are
  // set here: a free loopback port).
  void start(const EngineOptions& o, server::ServerOptions so) {
    set_log_level("warn");
    auto loaded = create_engine(o);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    engine_ = loaded->engine;
    tokenizer_ = loaded->tokenizer;
    so.host = "127.0.0.1";
    so.port = 0;
    http_ = std::make_unique<server::HttpServer>(so);
    ASSERT_TRUE(http_->start_background().ok());
    auto ctx = std::make_shared<server::ModelContext>();
    ctx->engine = engine_;
    ctx->tokenizer = loaded->tokenizer;
    ctx->model_id = "shakes";
    ctx->info = engine_->info();
    ctx->defaults.n_vocab = loaded->tokenizer->n_vocab();
    http_->set_model(ctx);
  }

  // Stops the server and the engine (again: nothing).
  void stop() {
    if (http_) http_->stop();
    if (engine_) engine_->shutdown();
    http_.reset();
    engine_.reset();
  }

  httplib::Result post(const nlohmann::json& body, const std::string& path = "/v1/chat/completions") const {
    return post_body(path, body.dump());
  }
  // POSTs `body` as it is (which need not be JSON) with a JSON content type.
  httplib::Result post_body(const std::string& path, const std::string& body) const {
    httplib::Client c("127.0.0.1", http_->port());
    c.set_read_timeout(120, 0);
    return c.Post(path, body, "application/json");
  }

  Engine& engine() const { return *engine_; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  const server::HttpServer& http() const { return *http_; }

 private:
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::unique_ptr<server::HttpServer> http_;
};

}  // namespace gs::test
