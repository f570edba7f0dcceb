// The tool-name constraint: token masks that keep generated text on one of the allowed
// completions, and the real engine (the shakes model on the CPU, drafter on and off) that
// always spells a declared tool name after a forced "<|tool_call>call:".
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/shakes.h"
#include "core/log.h"
#include "engine/completion_constraint.h"
#include "engine/engine_factory.h"
#include "gguf/gguf_reader.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace gs {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kCompletions = {"get_weather{", "get_time{", "lookup_stock{"};

using test::shakes_pieces;
using test::shakes_tokenizer;

bool starts_with_a_completion(const std::string& text) {
  for (const auto& c : kCompletions) {
    if (text.compare(0, c.size(), c) == 0) return true;
  }
  return false;
}

TEST(CompletionConstraint, AllowsExactlyTheTokensThatStayOnACompletion) {
  auto pieces = shakes_pieces();
  CompletionConstraint c(pieces, kCompletions);
  ASSERT_TRUE(c.active());
  std::vector<int32_t> allowed;
  c.allowed(&allowed);
  ASSERT_FALSE(allowed.empty());
  for (int32_t id = 0; id < pieces->n_vocab(); ++id) {
    const std::string& p = pieces->piece(id);
    bool ok = false;
    for (const auto& comp : kCompletions) {
      ok = ok || (!p.empty() && (p.size() <= comp.size() ? comp.compare(0, p.size(), p) == 0
                                                         : p.compare(0, comp.size(), comp) == 0));
    }
    EXPECT_EQ(ok, std::binary_search(allowed.begin(), allowed.end(), id)) << "token " << id << " '" << p << "'";
  }
}

TEST(CompletionConstraint, EndsOnceANameAndItsBraceAreComplete) {
  auto tok = shakes_tokenizer();
  CompletionConstraint c(shakes_pieces(), kCompletions);
  // Byte by byte through "get_", then the shared prefix splits.
  const auto byte_token = [&](char ch) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(ch));
    auto id = tok->find_token(name);
    EXPECT_TRUE(id.has_value()) << name;
    return *id;
  };
  for (char ch : std::string("get_t")) {
    std::vector<int32_t> allowed;
    c.allowed(&allowed);
    EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), byte_token(ch))) << ch;
    EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), byte_token('x')));
    c.advance(byte_token(ch));
    EXPECT_TRUE(c.active());
  }
  std::vector<int32_t> allowed;
  c.allowed(&allowed);
  // Only "get_time{" is left: 'w' (get_weather) is not allowed any more.
  EXPECT_FALSE(std::binary_search(allowed.begin(), allowed.end(), byte_token('w')));
  for (char ch : std::string("ime")) c.advance(byte_token(ch));
  EXPECT_TRUE(c.active());
  c.advance(byte_token('{'));
  EXPECT_FALSE(c.active());
  EXPECT_EQ(c.text(), "get_time{");
  c.allowed(&allowed);
  EXPECT_TRUE(allowed.empty());  // inactive: no mask
}

TEST(CompletionConstraint, EmptyListIsInactive) {
  CompletionConstraint c(shakes_pieces(), {});
  EXPECT_FALSE(c.active());
  CompletionConstraint d(shakes_pieces(), {""});
  EXPECT_FALSE(d.active());
}

// The real engine on the shakes model (CPU): a chat prompt with three tools that ends in the
// forced opener, as request_plan writes it for tool_choice "required".
class ToolNameEngine : public ::testing::TestWithParam<bool> {
 protected:
  static std::vector<int32_t> prompt() {
    std::vector<text::ChatMessage> messages(1);
    messages[0].content = "What is the weather in Paris, and the time?";
    std::vector<text::ChatTool> tools;
    for (const auto& c : kCompletions) {
      text::ChatTool t;
      t.name = c.substr(0, c.size() - 1);
      t.description = "looks something up";
      t.parameters = {{"type", "object"}, {"properties", {{"q", {{"type", "string"}}}}}};
      tools.push_back(t);
    }
    auto rendered = text::render_chat_prompt(messages, tools, {});
    EXPECT_TRUE(rendered.ok()) << rendered.status().to_string();
    rendered->text += std::string(text::markup::kToolCallOpen) + "call:";
    return shakes_tokenizer()->encode_prompt(rendered->text, rendered->markup, true);
  }

  // Generates up to 16 tokens; returns the text.
  static std::string generate(Engine& engine, const GenerationRequest& req, Usage* usage) {
    const test::EngineOutput out = test::run_request(engine, req, 60s);
    *usage = out.usage;
    const std::vector<int32_t>& ids = out.ids;
    text::DecodeOptions o;
    auto text = shakes_tokenizer()->decode(ids, o);
    EXPECT_TRUE(text.ok());
    return text.ok() ? *text : "";
  }
};

TEST_P(ToolNameEngine, RequiredToolChoiceAlwaysSpellsADeclaredName) {
  const bool drafter = GetParam();
  set_log_level("warn");
  // Drafting every round (adaptive off): a drafted masked step would show.
  const EngineOptions o = test::shakes_engine_options(drafter, /*adaptive=*/false);
  auto loaded = create_engine(o);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Engine& engine = *loaded->engine;
  const std::vector<int32_t> p = prompt();

  GenerationRequest base;
  base.prompt = p;
  base.max_tokens = 16;
  base.speculative = drafter;
  base.ignore_eog = false;

  // Control: unconstrained, the tiny model does not write a declared name at every seed,
  // so what follows tests the constraint and not the model.
  int unconstrained_names = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenerationRequest req = base;
    req.sampling.temperature = 1.0f;
    req.sampling.has_seed = true;
    req.sampling.seed = seed;
    Usage u;
    unconstrained_names += starts_with_a_completion(generate(engine, req, &u)) ? 1 : 0;
  }
  EXPECT_LT(unconstrained_names, 6);

  std::string greedy_text;
  for (uint64_t seed = 0; seed <= 6; ++seed) {
    GenerationRequest req = base;
    req.allowed_completions = kCompletions;
    if (seed == 0) {
      req.sampling.temperature = 0.0f;  // greedy
    } else {
      req.sampling.temperature = 1.0f;
      req.sampling.top_p = seed % 2 == 0 ? 0.9f : 1.0f;
      req.sampling.min_p = seed % 3 == 0 ? 0.05f : 0.0f;
      req.sampling.has_seed = true;
      req.sampling.seed = seed;
    }
    Usage u;
    const std::string text = generate(engine, req, &u);
    EXPECT_TRUE(starts_with_a_completion(text)) << "seed " << seed << ": '" << text << "'";
    if (seed == 0) greedy_text = text;
  }

  // Greedy is the same with and without the drafter (the constrained steps draft nothing;
  // drafting after them is exact), and repeatable.
  GenerationRequest req = base;
  req.allowed_completions = kCompletions;
  req.sampling.temperature = 0.0f;
  req.speculative = !drafter;
  Usage u;
  EXPECT_EQ(generate(engine, req, &u), greedy_text);

  // While the constraint holds, nothing is drafted: a name longer than the tokens allowed
  // keeps every step constrained, so the request drafts nothing; unconstrained, the same
  // request drafts (draft_max 3 every round, adaptive off).
  if (drafter) {
    const std::string long_name = "get_weather_for_the_city_of_verona_and_its_surroundings_today{";
    GenerationRequest constrained = base;
    constrained.allowed_completions = {long_name, "get_time_for_the_city_of_verona_and_its_surroundings_today{"};
    constrained.max_tokens = 6;
    constrained.sampling.temperature = 0.0f;
    Usage cu;
    const std::string text = generate(engine, constrained, &cu);
    EXPECT_TRUE(std::any_of(constrained.allowed_completions.begin(), constrained.allowed_completions.end(),
                            [&](const std::string& c) { return c.compare(0, text.size(), text) == 0; }))
        << text;
    EXPECT_EQ(cu.drafted_tokens, 0);
    GenerationRequest free_req = constrained;
    free_req.allowed_completions.clear();
    Usage fu;
    generate(engine, free_req, &fu);
    EXPECT_GT(fu.drafted_tokens, 0);
  }
  loaded->engine->shutdown();
}

INSTANTIATE_TEST_SUITE_P(Drafter, ToolNameEngine, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
