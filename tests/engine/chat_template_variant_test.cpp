// create_engine tells which Gemma 4 chat template a model's GGUF carries, so that the server
// renders its prompts in that variant (text::detect_chat_template over tokenizer.chat_template).
#include <gtest/gtest.h>

#include <string>

#include "common/test_paths.h"
#include "engine/engine_factory.h"
#include "model/synth_writer.h"
#include "text/test_files.h"

namespace gs {
namespace {

EngineOptions cpu_options(const std::string& model) {
  EngineOptions o;
  o.model_path = model;
  o.device = DeviceChoice::kCpu;
  o.n_threads = 1;
  o.n_slots = 1;
  o.n_ctx = 64;
  return o;
}

// The variant of the file's template reaches LoadedEngine; a file that carries the older
// interleaved template was rendered in the 31B format, since nothing read its template.
TEST(ChatTemplateVariant, CreateEngineDetectsTheFilesTemplate) {
  const test::ScratchDir dir("chat_template_variant");
  struct Case {
    const char* file;
    std::string source;
    text::ChatTemplate variant;
    bool recognised;
  };
  auto jinja = [](const std::string& name) {
    return text::test_files::read_file(test::shared_path("test-assets/chat-templates/" + name));
  };
  const Case cases[] = {
      {"interleaved.gguf", jinja("google-gemma-4-31B-it-interleaved.jinja"), text::ChatTemplate::kGemma4Interleaved,
       true},
      {"31b.gguf", jinja("google-gemma-4-31B-it.jinja"), text::ChatTemplate::kGemma4, true},
      {"gemma2.gguf", jinja("google-gemma-2-2b-it.jinja"), text::ChatTemplate::kGemma4, false},
      {"none.gguf", "", text::ChatTemplate::kGemma4, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    synth::SynthConfig config = synth::preset_config(synth::Preset::kTiny);
    config.chat_template = c.source;
    const std::string path = (dir.path / c.file).string();
    ASSERT_TRUE(synth::write_synth(config, path, 1).ok());
    Result<LoadedEngine> loaded = create_engine(cpu_options(path));
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(loaded->chat_template.variant, c.variant);
    EXPECT_EQ(loaded->chat_template.recognised, c.recognised);
    loaded->engine->shutdown();
  }
}

}  // namespace
}  // namespace gs
