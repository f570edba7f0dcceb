// The C++ chat renderer against Jinja2 renderings of the official Gemma 4 31B template.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "common/test_paths.h"
#include "text/chat_format.h"
#include "text/chat_json.h"

namespace gs::text {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Renders one golden's inputs; returns the error text on failure.
std::string render_inputs(const nlohmann::json& inputs) {
  auto messages = chat_messages_from_json(inputs.at("messages"));
  if (!messages.ok()) return "ERROR " + messages.status().to_string();
  auto tools = chat_tools_from_json(inputs.value("tools", nlohmann::json()));
  if (!tools.ok()) return "ERROR " + tools.status().to_string();
  ChatRenderOptions options;
  options.enable_thinking = inputs.value("enable_thinking", false);
  options.add_generation_prompt = inputs.value("add_generation_prompt", false);
  options.merge_leading_system = inputs.value("merge_leading_system", true);
  auto out = render_chat(*messages, *tools, options);
  if (!out.ok()) return "ERROR " + out.status().to_string();
  return *out;
}

void check_goldens(const nlohmann::json& file, int expected_count) {
  int n = 0;
  for (const auto& g : file.at("goldens")) {
    if (g.at("template") != "google-gemma-4-31B-it.jinja") continue;
    std::string want = g.at("rendered");
    ASSERT_EQ(want.rfind("<bos>", 0), 0u);
    want.erase(0, 5);  // the tokenizer adds BOS; render_chat leaves it out
    EXPECT_EQ(render_inputs(g.at("inputs")), want) << "case " << g.at("case");
    ++n;
  }
  EXPECT_EQ(n, expected_count);
}

TEST(ChatFormatGolden, SharedGoldens31B) {
  check_goldens(read_json(test::shared_path("test-assets/chat-templates/gemma4-template-goldens.json")), 9);
}

TEST(ChatFormatGolden, ExtraGoldens31B) {
  check_goldens(read_json(test::source_path("tests/text/data/gemma4-extra-chat-goldens.json")), 16);
}

}  // namespace
}  // namespace gs::text
