// Generation's logprob tokens (PollResult::tokens): held, attributed to the content and
// released only for a request that asks logprobs (decision 0058); the text is the same either way.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/generation.h"
#include "server_fixture.h"

namespace gs::server {
namespace {

using namespace std::chrono_literals;
using test::LiveServer;

struct Outcome {
  std::string content;      // the content deltas joined
  std::string result;       // GenerationResult::content
  std::string spelled;      // the released tokens' text (ShownToken::text, else the piece)
  size_t n_released = 0;    // tokens released over all polls
  std::string finish;
};

Outcome run(LiveServer& s, bool chat, int32_t n_logprobs, const text::StopStrings& stop) {
  GenerationPlan plan;
  plan.chat = chat;
  plan.request.prompt = s.tok->encode("Hi", true, false);
  plan.request.max_tokens = 40;
  plan.request.n_logprobs = n_logprobs;
  plan.request.sampling.temperature = 0;
  if (chat) {
    plan.parser.stop = stop;
  } else {
    plan.stop = stop;
  }
  Generation g(s.tok, plan);
  Outcome out;
  const Status st = g.start(*s.engine);
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st.ok()) return out;
  for (int polls = 0; !g.finished() && polls < 1000; ++polls) {
    PollResult r = g.poll(100ms);
    for (const OutputDelta& d : r.deltas) {
      if (d.kind == OutputDelta::Kind::kContent) out.content += d.text;
    }
    for (const ShownToken& t : r.tokens) {
      ++out.n_released;
      if (t.text) {
        out.spelled += *t.text;
      } else {
        // As the logprobs show it: chat, the piece with special tokens spelled; a completion,
        // the piece as its text decodes.
        const std::string piece(s.tok->token_to_piece(t.token.id, /*render_special=*/chat));
        out.spelled += t.shown_bytes < 0 ? piece : piece.substr(0, static_cast<size_t>(t.shown_bytes));
      }
    }
  }
  EXPECT_TRUE(g.finished());
  out.result = g.result().content;
  out.finish = g.result().finish_reason;
  return out;
}

// The chat content's attribution to tokens (and a raw completion's holding of tokens for its
// stop strings) ran for every request, logprobs asked or not, and released the tokens to a
// caller that dropped them. Without logprobs (n_logprobs -1) no token is released now; with
// them (0 or more alternatives) the released tokens spell the content exactly as before. The
// text, the finish and the stop are the same either way.
TEST(GenerationLogprobs, TokensAreReleasedOnlyWhenLogprobsAreAsked) {
  LiveServer s;
  s.answer("<|channel>thought\nLet me think.<channel|>Hello there, good friend. Farewell.");
  for (const bool chat : {true, false}) {
    for (const bool with_stop : {false, true}) {
      SCOPED_TRACE(std::string(chat ? "chat" : "completion") + (with_stop ? ", stop" : ""));
      const text::StopStrings stop = with_stop ? text::StopStrings{"friend"} : text::StopStrings{};
      const Outcome without = run(s, chat, -1, stop);
      EXPECT_EQ(without.n_released, 0u);
      EXPECT_FALSE(without.result.empty());
      for (const int32_t n : {0, 2}) {
        const Outcome with = run(s, chat, n, stop);
        EXPECT_GT(with.n_released, 0u) << n;
        EXPECT_EQ(with.spelled, with.content) << n;
        EXPECT_EQ(with.content, without.content) << n;
        EXPECT_EQ(with.result, without.result) << n;
        EXPECT_EQ(with.finish, without.finish) << n;
      }
      if (with_stop) {
        EXPECT_EQ(without.result.find("friend"), std::string::npos) << without.result;
      }
      if (chat) {
        EXPECT_EQ(without.result.find("Let me think"), std::string::npos) << without.result;
      }
    }
  }
}

}  // namespace
}  // namespace gs::server
