// The C++ chat renderer against Jinja2 renderings of the official Gemma 4 31B template.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "text/chat_format.h"
#include "text/chat_json.h"
#include "test_files.h"

namespace gs::text {
namespace {

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(test_files::read_file(path)); }

// Renders one golden's inputs; returns the error text on failure.
std::string render_inputs(const nlohmann::json& inputs, ChatTemplate variant) {
  auto messages = chat_messages_from_json(inputs.at("messages"));
  if (!messages.ok()) return "ERROR " + messages.status().to_string();
  auto tools = chat_tools_from_json(inputs.value("tools", nlohmann::json()));
  if (!tools.ok()) return "ERROR " + tools.status().to_string();
  ChatRenderOptions options;
  options.variant = variant;
  options.enable_thinking = inputs.value("enable_thinking", false);
  options.add_generation_prompt = inputs.value("add_generation_prompt", false);
  options.merge_leading_system = inputs.value("merge_leading_system", true);
  auto out = render_chat(*messages, *tools, options);
  if (!out.ok()) return "ERROR " + out.status().to_string();
  return *out;
}

void check_goldens(const nlohmann::json& file, const std::string& template_name, ChatTemplate variant,
                   int expected_count) {
  int n = 0;
  for (const auto& g : file.at("goldens")) {
    if (g.at("template") != template_name) continue;
    std::string want = g.at("rendered");
    ASSERT_EQ(want.rfind("<bos>", 0), 0u);
    want.erase(0, 5);  // the tokenizer adds BOS; render_chat leaves it out
    EXPECT_EQ(render_inputs(g.at("inputs"), variant), want) << template_name << " case " << g.at("case");
    ++n;
  }
  EXPECT_EQ(n, expected_count);
}

constexpr const char* k31B = "google-gemma-4-31B-it.jinja";
constexpr const char* kInterleaved = "google-gemma-4-31B-it-interleaved.jinja";

TEST(ChatFormatGolden, SharedGoldens31B) {
  check_goldens(read_json(test::shared_path("test-assets/chat-templates/gemma4-template-goldens.json")), k31B,
                ChatTemplate::kGemma4, 9);
}

TEST(ChatFormatGolden, ExtraGoldens31B) {
  check_goldens(read_json(test::source_path("tests/text/data/gemma4-extra-chat-goldens.json")), k31B,
                ChatTemplate::kGemma4, 16);
}

TEST(ChatFormatGolden, SharedGoldensInterleaved) {
  check_goldens(read_json(test::shared_path("test-assets/chat-templates/gemma4-template-goldens.json")),
                kInterleaved, ChatTemplate::kGemma4Interleaved, 9);
}

TEST(ChatFormatGolden, ExtraGoldensInterleaved) {
  check_goldens(read_json(test::source_path("tests/text/data/gemma4-extra-chat-goldens.json")), kInterleaved,
                ChatTemplate::kGemma4Interleaved, 16);
}

using test_files::read_file;

TEST(ChatFormatGolden, DetectsTheTemplateVariant) {
  const auto a = detect_chat_template(read_file(test::shared_path("test-assets/chat-templates/" + std::string(k31B))));
  EXPECT_TRUE(a.recognised);
  EXPECT_EQ(a.variant, ChatTemplate::kGemma4);
  const auto b =
      detect_chat_template(read_file(test::shared_path("test-assets/chat-templates/" + std::string(kInterleaved))));
  EXPECT_TRUE(b.recognised);
  EXPECT_EQ(b.variant, ChatTemplate::kGemma4Interleaved);
  EXPECT_FALSE(
      detect_chat_template(read_file(test::shared_path("test-assets/chat-templates/google-gemma-2-2b-it.jinja")))
          .recognised);
  EXPECT_FALSE(detect_chat_template("").recognised);
  // The shipped model embeds the 31B template.
  auto file = gguf::GgufFile::open(test::shared_path("models/shakes-target.gguf"));
  ASSERT_TRUE(file.ok());
  auto embedded = (*file)->get_string("tokenizer.chat_template");
  ASSERT_TRUE(embedded.ok());
  const auto c = detect_chat_template(*embedded);
  EXPECT_TRUE(c.recognised);
  EXPECT_EQ(c.variant, ChatTemplate::kGemma4);
}

}  // namespace
}  // namespace gs::text
