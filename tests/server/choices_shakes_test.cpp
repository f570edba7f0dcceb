// OpenAI's `n` on the real engine (the shakes model on the CPU, drafter off and on; decision
// 0030): with a seed, choice i is the answer of the same request with seed + i, however the
// choices were batched; greedy choices are all the same text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "server/shakes_http.h"

namespace gs {
namespace {

using json = nlohmann::json;

class ShakesChoices : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { server_.start(GetParam()); }
  void TearDown() override { server_.stop(); }

  std::vector<std::string> texts(const json& body, const std::string& path) {
    auto r = server_.post(body, path);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    std::vector<std::string> out;
    const json parsed = json::parse(r->body);
    for (const json& c : parsed["choices"]) {
      out.push_back(c.contains("message") ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>());
    }
    return out;
  }

  test::ShakesHttp server_;
};

TEST_P(ShakesChoices, ChoiceIIsTheAnswerToSeedPlusI) {
  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    json body{{"max_tokens", 12}, {"temperature", 1.0}, {"seed", 1234}, {"n", 3}};
    if (path == "/v1/completions") {
      body["prompt"] = "ROMEO:";
    } else {
      body["messages"] = json::array({{{"role", "user"}, {"content", "Speak."}}});
    }
    const std::vector<std::string> choices = texts(body, path);
    ASSERT_EQ(choices.size(), 3u) << path;
    for (int i = 0; i < 3; ++i) {
      json one = body;
      one.erase("n");
      one["seed"] = 1234 + i;
      const std::vector<std::string> alone = texts(one, path);
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(choices[i], alone[0]) << path << " choice " << i;
    }
    EXPECT_GT(std::set<std::string>(choices.begin(), choices.end()).size(), 1u)
        << path << ": three seeds gave one text";
    // Greedy: every choice is the one answer.
    body["temperature"] = 0;
    const std::vector<std::string> greedy = texts(body, path);
    ASSERT_EQ(greedy.size(), 3u);
    EXPECT_EQ(greedy[1], greedy[0]) << path;
    EXPECT_EQ(greedy[2], greedy[0]) << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Drafter, ShakesChoices, ::testing::Values(false, true),
                         [](const auto& param_info) { return param_info.param ? "DrafterOn" : "DrafterOff"; });

}  // namespace
}  // namespace gs
