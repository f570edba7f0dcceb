// llama-server's sampler fields (repeat_penalty, typical_p, mirostat, XTC, DRY, dynatemp,
// samplers, ...). Before, all were ignored whatever their type or value: a client asking
// for mirostat got the plain chain and took it for mirostat's. Now each is type-checked, a
// value that changes nothing is accepted, repeat_penalty is repetition_penalty, and any other
// value that would change sampling is refused by name (sampler_fields.h).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "server/api_request.h"
#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;
using server::parse_chat_request;
using server::parse_completion_request;
using server::RequestDefaults;

Result<server::ChatCompletionRequest> chat(const json& extra) {
  json body = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  for (const auto& [k, v] : extra.items()) body[k] = v;
  RequestDefaults d;
  d.n_vocab = 100;
  return parse_chat_request(body, d);
}

Result<server::CompletionRequest> completion(const json& extra) {
  json body{{"prompt", "x"}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  RequestDefaults d;
  d.n_vocab = 100;
  return parse_completion_request(body, d);
}

// What llama-server's web UI sends by default: every field at its neutral value.
json llama_ui_defaults() {
  return json::parse(R"({
    "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
    "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"],
    "dynatemp_range": 0, "dynatemp_exponent": 1, "typical_p": 1, "xtc_probability": 0, "xtc_threshold": 0.1,
    "repeat_last_n": 64, "repeat_penalty": 1, "presence_penalty": 0, "frequency_penalty": 0,
    "dry_multiplier": 0, "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": -1,
    "dry_sequence_breakers": ["\n", ":", "\"", "*"], "mirostat": 0, "mirostat_tau": 5, "mirostat_eta": 0.1,
    "top_n_sigma": -1, "min_keep": 0, "penalty_last_n": 64})");
}

TEST(SamplerFields, NeutralValuesAreAccepted) {
  auto r = chat(llama_ui_defaults());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ(r->gen.sampling.repetition_penalty, 1.0f);
  EXPECT_FLOAT_EQ(r->gen.sampling.temperature, 0.8f);
  auto c = completion(llama_ui_defaults());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  // Values llama.cpp reads as "off" although they are not the default.
  for (const json& extra : {json{{"typical_p", 1.5}},
                            json{{"xtc_probability", 0.5}, {"xtc_threshold", 0.6}},
                            json{{"dry_multiplier", 0.8}, {"dry_base", 0.5}},
                            json{{"dry_multiplier", 0.8}, {"dry_penalty_last_n", 0}},
                            json{{"top_n_sigma", 0}},
                            json{{"min_keep", 1}, {"top_k", 40}},
                            json{{"min_keep", 8}},  // no truncation sampler on
                            json{{"penalty_last_n", 256}},  // no penalty on
                            json{{"repeat_last_n", -1}, {"repeat_penalty", 1.0}},
                            json{{"repeat_penalty", 1.1}, {"repeat_last_n", 64}},
                            json{{"mirostat", 0}, {"mirostat_tau", 3}, {"mirostat_eta", 0.5}},
                            json{{"dynatemp_range", 0}, {"dynatemp_exponent", 2}},
                            json{{"samplers", json::array()}},
                            // Greedy: no sampler of the chain but the penalties acts.
                            json{{"samplers", json::array()}, {"temperature", 0}},
                            json{{"samplers", {"top_k"}}, {"temperature", 0}, {"top_k", 40}, {"top_p", 0.5}},
                            json{{"samplers", "e"}, {"temperature", 0}, {"repeat_penalty", 1.1}},
                            json{{"samplers", "edskypmxt"}, {"temperature", 0.7}, {"top_k", 5}},
                            json{{"samplers", {"top-k", "nucleus", "temp"}}, {"top_k", 5}, {"top_p", 0.9}}}) {
    auto e = chat(extra);
    EXPECT_TRUE(e.ok()) << extra.dump() << ": " << e.status().to_string();
    EXPECT_TRUE(completion(extra).ok()) << extra.dump();
  }
}

TEST(SamplerFields, WrongTypesNameTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"repeat_penalty", "1.1"}}, "repeat_penalty"},
      {{{"repeat_penalty", 0}}, "repeat_penalty"},
      {{{"repeat_last_n", 1.5}}, "repeat_last_n"},
      {{{"penalty_last_n", -2}}, "penalty_last_n"},
      {{{"typical_p", true}}, "typical_p"},
      {{{"typical_p", -0.1}}, "typical_p"},
      {{{"mirostat", "2"}}, "mirostat"},
      {{{"mirostat", 3}}, "mirostat"},
      {{{"mirostat_tau", "5"}}, "mirostat_tau"},
      {{{"mirostat_eta", json::array()}}, "mirostat_eta"},
      {{{"xtc_probability", 2}}, "xtc_probability"},
      {{{"xtc_threshold", "x"}}, "xtc_threshold"},
      {{{"dry_multiplier", "0"}}, "dry_multiplier"},
      {{{"dry_base", false}}, "dry_base"},
      {{{"dry_allowed_length", 1.5}}, "dry_allowed_length"},
      {{{"dry_penalty_last_n", "all"}}, "dry_penalty_last_n"},
      {{{"dry_sequence_breakers", "\n"}}, "dry_sequence_breakers"},
      {{{"dry_sequence_breakers", {"a", 1}}}, "dry_sequence_breakers[1]"},
      {{{"dynatemp_range", "0"}}, "dynatemp_range"},
      {{{"dynatemp_exponent", json::object()}}, "dynatemp_exponent"},
      {{{"top_n_sigma", "-1"}}, "top_n_sigma"},
      {{{"min_keep", -1}}, "min_keep"},
      {{{"samplers", 5}}, "samplers"},
      {{{"samplers", {"top_k", 3}}}, "samplers[1]"},
      {{{"samplers", {"top_k", "warp"}}}, "samplers[1]"},
      {{{"samplers", {"top_k", "top-k"}}}, "samplers[1]"},
      {{{"samplers", "kq"}}, "samplers"},
  };
  for (const auto& [extra, param] : cases) {
    auto r = chat(extra);
    ASSERT_FALSE(r.ok()) << extra.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << extra.dump() << ": " << r.status().message();
    EXPECT_EQ(server::error_param(r.status().message()), param) << extra.dump() << ": " << r.status().message();
    EXPECT_FALSE(completion(extra).ok()) << extra.dump();
  }
}

TEST(SamplerFields, ValuesThatWouldChangeSamplingAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"typical_p", 0.9}}, "typical_p"},
      {{{"mirostat", 2}}, "mirostat"},
      {{{"mirostat", 1}, {"mirostat_tau", 5}}, "mirostat"},
      {{{"xtc_probability", 0.5}}, "xtc_probability"},
      {{{"xtc_probability", 0.5}, {"xtc_threshold", 0.5}}, "xtc_probability"},
      {{{"dry_multiplier", 0.8}}, "dry_multiplier"},
      {{{"dynatemp_range", 0.5}}, "dynatemp_range"},
      {{{"top_n_sigma", 1.5}}, "top_n_sigma"},
      {{{"min_keep", 5}, {"top_p", 0.9}}, "min_keep"},
      {{{"repeat_last_n", 128}, {"repeat_penalty", 1.1}}, "repeat_last_n"},
      {{{"penalty_last_n", -1}, {"frequency_penalty", 0.5}}, "penalty_last_n"},
      // The chain runs penalties, top_k, top_p, min_p, temperature: one left out while on,
      // or two in another order, would be another chain.
      {{{"samplers", {"top_k", "temperature"}}, {"top_p", 0.9}}, "samplers"},
      {{{"samplers", {"temperature", "top_k"}}, {"top_k", 40}, {"temperature", 0.7}}, "samplers"},
      {{{"samplers", {"top_k", "temperature"}}, {"repeat_penalty", 1.1}}, "samplers"},
      {{{"samplers", "tk"}, {"top_k", 40}, {"temperature", 0.7}}, "samplers"},
      // Greedy (temperature 0): the penalties still act before the argmax.
      {{{"samplers", json::array()}, {"temperature", 0}, {"repeat_penalty", 1.1}}, "samplers"},
      {{{"samplers", {"infill"}}}, "samplers[0]"},
  };
  for (const auto& [extra, param] : cases) {
    auto r = chat(extra);
    ASSERT_FALSE(r.ok()) << extra.dump();
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << extra.dump() << ": " << r.status().message();
    EXPECT_EQ(server::error_param(r.status().message()), param) << extra.dump() << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("not supported"), std::string::npos) << r.status().message();
    EXPECT_EQ(completion(extra).status().code(), StatusCode::kUnimplemented) << extra.dump();
  }
}

TEST(SamplerFields, RepeatPenaltyIsRepetitionPenalty) {
  auto r = chat({{"repeat_penalty", 1.3}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ(r->gen.sampling.repetition_penalty, 1.3f);
  r = chat({{"repeat_penalty", 1.3}, {"repetition_penalty", 1.3}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ(r->gen.sampling.repetition_penalty, 1.3f);
  r = chat({{"repeat_penalty", 1.3}, {"repetition_penalty", 1.2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(server::error_param(r.status().message()), "repeat_penalty") << r.status().message();
  auto c = completion({{"repeat_penalty", 0.9}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FLOAT_EQ(c->gen.sampling.repetition_penalty, 0.9f);
}

// llama-server reads seed -1 (its default, which its clients send) as "a random seed": the
// server took it as the fixed seed 2^64 - 1, so every request that sent it drew the same
// answer (a UI's "regenerate" gave the same text again). Other values stay fixed seeds.
TEST(SamplerFields, SeedMinusOneIsARandomSeed) {
  for (const bool is_chat : {true, false}) {
    SCOPED_TRACE(is_chat ? "chat" : "completion");
    auto sampling_of = [&](const json& extra) -> SamplingParams {
      if (is_chat) {
        auto r = chat(extra);
        EXPECT_TRUE(r.ok()) << r.status().to_string();
        return r.ok() ? r->gen.sampling : SamplingParams{};
      }
      auto r = completion(extra);
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      return r.ok() ? r->gen.sampling : SamplingParams{};
    };
    EXPECT_FALSE(sampling_of({{"seed", -1}}).has_seed);
    EXPECT_FALSE(sampling_of({{"seed", nullptr}}).has_seed);
    const SamplingParams minus_two = sampling_of({{"seed", -2}});
    EXPECT_TRUE(minus_two.has_seed);
    EXPECT_EQ(minus_two.seed, ~uint64_t{1});
    const SamplingParams zero = sampling_of({{"seed", 0}});
    EXPECT_TRUE(zero.has_seed);
    EXPECT_EQ(zero.seed, 0u);
  }
}

// Over HTTP on the real engine: repeat_penalty gives what repetition_penalty gives, and the
// refusals are 400s naming the field (code "unsupported" for a value, "invalid_value" for a type).
class ShakesSamplerFields : public ::testing::Test {
 protected:
  void SetUp() override { server_.start(/*drafter=*/false); }
  void TearDown() override { server_.stop(); }
  test::ShakesHttp server_;
};

TEST_F(ShakesSamplerFields, RepeatPenaltyAndRefusalsOverHttp) {
  const json base{{"prompt", "ROMEO:"}, {"max_tokens", 32}, {"temperature", 0}, {"ignore_eos", true}};
  auto text_of = [&](const json& extra) {
    json body = base;
    for (const auto& [k, v] : extra.items()) body[k] = v;
    auto r = server_.post(body, "/v1/completions");
    EXPECT_TRUE(r);
    if (!r) return std::string();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body)["choices"][0]["text"].get<std::string>();
  };
  const std::string plain = text_of(json::object());
  const std::string repetition = text_of({{"repetition_penalty", 3}});
  const std::string repeat = text_of({{"repeat_penalty", 3}});
  EXPECT_EQ(repeat, repetition);
  EXPECT_NE(repeat, plain) << "a penalty of 3 changed nothing in 32 greedy tokens";
  // Sampled with a seed, too.
  EXPECT_EQ(text_of({{"temperature", 1}, {"seed", 5}, {"repeat_penalty", 1.5}}),
            text_of({{"temperature", 1}, {"seed", 5}, {"repetition_penalty", 1.5}}));
  // llama-server's web UI defaults, greedy: the plain greedy answer (every field neutral).
  json ui = llama_ui_defaults();
  ui["temperature"] = 0;
  EXPECT_EQ(text_of(ui), plain);

  for (const auto& [extra, param, code] : std::vector<std::tuple<json, std::string, json>>{
           {{{"mirostat", 2}}, "mirostat", "unsupported"},
           {{{"typical_p", "0.5"}}, "typical_p", "invalid_value"},
           {{{"samplers", {"temperature", "top_k"}}, {"top_k", 4}, {"temperature", 0.5}}, "samplers", "unsupported"}}) {
    json body = base;
    for (const auto& [k, v] : extra.items()) body[k] = v;
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      json b = body;
      if (std::string(path) == "/v1/chat/completions") {
        b.erase("prompt");
        b["messages"] = json::array({{{"role", "user"}, {"content", "Speak."}}});
      }
      auto r = server_.post(b, path);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << path << " " << extra.dump() << " -> " << r->body;
      const json e = json::parse(r->body);
      EXPECT_EQ(e["error"]["param"], param) << r->body;
      EXPECT_EQ(e["error"]["code"], code) << r->body;
    }
  }
}

// Sampled answers with seed -1 differ from request to request, as without a seed; a fixed
// seed gives the same answer each time.
TEST_F(ShakesSamplerFields, SeedMinusOneDrawsAFreshSeedEachRequest) {
  auto text_of = [&](const json& seed) {
    const json body{{"prompt", "ROMEO:"}, {"max_tokens", 24}, {"temperature", 1}, {"ignore_eos", true}, {"seed", seed}};
    auto r = server_.post(body, "/v1/completions");
    EXPECT_TRUE(r);
    if (!r) return std::string();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body)["choices"][0]["text"].get<std::string>();
  };
  std::set<std::string> texts;
  for (int i = 0; i < 4; ++i) texts.insert(text_of(-1));
  EXPECT_GE(texts.size(), 2u) << "four requests with seed -1 gave one answer: " << *texts.begin();
  EXPECT_EQ(text_of(-2), text_of(-2));
}

}  // namespace
}  // namespace gs
