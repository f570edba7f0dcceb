// create_engine's own load errors: a drafter that does not load, and a vocabulary that does
// not fit the embedding, are named with the file once and the fields at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/test_paths.h"
#include "engine/engine_factory.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace gs {
namespace {

// A copy of `from` at `to` whose metadata `edit` changes (tensors as they are).
void copy_gguf(const std::string& from, const std::string& to,
               const std::function<void(const gguf::KeyValue&, const gguf::Value&, gguf::GgufWriter&)>& edit) {
  auto f = gguf::GgufFile::open(from);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  gguf::GgufWriter w;
  for (const gguf::KeyValue& kv : (*f)->metadata()) {
    if (kv.key == "general.alignment") continue;
    auto v = (*f)->get_value(kv);
    ASSERT_TRUE(v.ok());
    edit(kv, *v, w);
  }
  for (const gguf::TensorInfo& t : (*f)->tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    ASSERT_TRUE(w.add_tensor(t.name, t.type, ne).ok());
  }
  ASSERT_TRUE(w.begin(to).ok());
  for (const gguf::TensorInfo& t : (*f)->tensors()) ASSERT_TRUE(w.write_tensor(t.data, t.size_bytes).ok());
  ASSERT_TRUE(w.finish().ok());
}

EngineOptions options(const std::string& model, const std::string& drafter) {
  EngineOptions o;
  o.model_path = model;
  o.drafter_path = drafter;
  o.device = DeviceChoice::kCpu;
  o.n_threads = 1;
  o.n_slots = 1;
  o.n_ctx = 64;
  o.draft_max = 2;
  return o;
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

// It read "the drafter D: D: metadata '...' is missing": the model's error starts with the
// path already.
TEST(EngineLoadErrors, DrafterThatDoesNotLoadIsNamedOnce) {
  const test::ScratchDir dir("engine_load_drafter");
  const std::string drafter = (dir.path / "d.gguf").string();
  copy_gguf(test::shared_path("models/shakes-assistant.gguf"), drafter,
            [](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
              if (kv.key != "gemma4-assistant.embedding_length_out") w.set_value(kv.key, v);
            });
  auto loaded = create_engine(options(test::shared_path("models/shakes-target.gguf"), drafter));
  ASSERT_FALSE(loaded.ok());
  const std::string& msg = loaded.status().message();
  EXPECT_NE(msg.find("gemma4-assistant.embedding_length_out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("drafter"), std::string::npos) << msg;
  EXPECT_EQ(count(msg, drafter), 1u) << msg;
}

// It read "the model has N embedding rows but its vocabulary M tokens": no file, no field.
TEST(EngineLoadErrors, VocabularySmallerThanTheEmbeddingNamesTheFileAndBothFields) {
  const test::ScratchDir dir("engine_load_vocab");
  const std::string model = (dir.path / "m.gguf").string();
  copy_gguf(test::shared_path("models/shakes-target.gguf"), model,
            [](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
              gguf::Value cut = v;
              if (kv.key.rfind("tokenizer.ggml.", 0) == 0 && v.type == gguf::ValueType::kArray &&
                  kv.key != "tokenizer.ggml.merges") {
                auto& a = std::get<gguf::ArrayValue>(cut.data);
                a.items.pop_back();
                a.total_count = a.items.size();
              }
              w.set_value(kv.key, cut);
            });
  auto loaded = create_engine(options(model, ""));
  ASSERT_FALSE(loaded.ok());
  const std::string& msg = loaded.status().message();
  EXPECT_EQ(msg.rfind(model + ": ", 0), 0u) << msg;
  EXPECT_EQ(count(msg, model), 1u) << msg;
  EXPECT_NE(msg.find("token_embd.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gs
