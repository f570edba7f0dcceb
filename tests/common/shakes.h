// The bundled shakes model in tests: its tokenizer (read once), the real engine's options
// on the CPU, and one request run to its end.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "common/test_paths.h"
#include "engine/completion_constraint.h"
#include "engine/engine.h"
#include "engine/engine_factory.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs::test {

inline std::shared_ptr<const text::Tokenizer> shakes_tokenizer() {
  static std::shared_ptr<const text::Tokenizer> tok = [] {
    auto file = gguf::GgufFile::open(shared_path("models/shakes-target.gguf"));
    EXPECT_TRUE(file.ok()) << file.status().to_string();
    auto t = text::Tokenizer::from_gguf(**file);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return *t;
  }();
  return tok;
}

// Its token pieces (engine/completion_constraint.h), built once.
inline std::shared_ptr<const TokenPieces> shakes_pieces() {
  static auto pieces = std::make_shared<const TokenPieces>(*shakes_tokenizer());
  return pieces;
}

// The shakes pair (the drafter when `drafter`) on the CPU: 2 threads, 2 slots, 1024
// positions, 3 drafts a round; `adaptive` as served, or drafting every round.
inline EngineOptions shakes_engine_options(bool drafter, bool adaptive) {
  EngineOptions o;
  o.model_path = shared_path("models/shakes-target.gguf");
  if (drafter) o.drafter_path = shared_path("models/shakes-assistant.gguf");
  o.device = DeviceChoice::kCpu;
  o.n_threads = 2;
  o.n_slots = 2;
  o.n_ctx = 1024;
  o.draft_max = 3;
  o.draft_adaptive = adaptive;
  return o;
}

struct EngineOutput {
  std::vector<int32_t> ids;  // every emitted token (not the end-of-generation one)
  FinishReason finish = FinishReason::kError;
  Usage usage;
};

// Submits `req` and reads its events to the end (a test failure on an error or a timeout).
inline EngineOutput run_request(Engine& engine, const GenerationRequest& req,
                                std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
  EngineOutput out;
  auto stream = engine.submit(req);
  EXPECT_TRUE(stream.ok()) << stream.status().to_string();
  if (!stream.ok()) return out;
  StreamEvent ev;
  for (;;) {
    if (!(*stream)->next(&ev, timeout)) {
      ADD_FAILURE() << "timeout";
      return out;
    }
    if (ev.kind == StreamEvent::Kind::kTokens) {
      for (const auto& t : ev.tokens) out.ids.push_back(t.id);
    } else {
      EXPECT_EQ(ev.kind, StreamEvent::Kind::kDone) << ev.error.to_string();
      out.finish = ev.finish;
      out.usage = ev.usage;
      return out;
    }
  }
}

}  // namespace gs::test
