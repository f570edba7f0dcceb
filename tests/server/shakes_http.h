// The real engine (the shakes model on the CPU, drafter on or off) behind a live HttpServer
// on a loopback port: tests of what the model does under a request's constraints.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "common/test_paths.h"
#include "core/log.h"
#include "engine/engine_factory.h"
#include "server/http_server.h"

namespace gs::test {

class ShakesHttp {
 public:
  // Loads the model (and the drafter when `drafter`) and starts the server.
  void start(bool drafter) {
    set_log_level("warn");
    EngineOptions o;
    o.model_path = shared_path("models/shakes-target.gguf");
    if (drafter) o.drafter_path = shared_path("models/shakes-assistant.gguf");
    o.device = DeviceChoice::kCpu;
    o.n_threads = 2;
    o.n_slots = 2;
    o.n_ctx = 1024;
    o.draft_max = 3;
    o.draft_adaptive = false;  // draft every round: a drafted masked step would show
    auto loaded = create_engine(o);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    engine_ = loaded->engine;
    tokenizer_ = loaded->tokenizer;
    server::ServerOptions so;
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

  void stop() {
    if (http_) http_->stop();
    if (engine_) engine_->shutdown();
  }

  httplib::Result post(const nlohmann::json& body, const std::string& path = "/v1/chat/completions") const {
    httplib::Client c("127.0.0.1", http_->port());
    c.set_read_timeout(120, 0);
    return c.Post(path, body.dump(), "application/json");
  }

  const text::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::unique_ptr<server::HttpServer> http_;
};

}  // namespace gs::test
