// create_engine's own load errors: a drafter that does not load, a vocabulary that does not
// fit the embedding, and a drafter whose vocabulary is not its target's, are named with the file
// once and the fields at fault; a vocabulary without Gemma 4's chat markup loads with a warning
// that names them.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>

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

// tokenizer.ggml.scores is never read (merge ranks order the BPE), so a malformed one loaded in
// silence: one of another type (llama.cpp reads float[n_tokens] from it whatever its type) or
// of another length than tokenizer.ggml.tokens. Either is now a load error naming the file and
// the field, in the target and in a drafter file alike. The shipped files (which have scores)
// still load.
TEST(EngineLoadErrors, MalformedTokenScoresNameTheFileAndTheField) {
  const test::ScratchDir dir("engine_load_scores");
  using Edit = std::function<void(gguf::Value&)>;
  auto floats = [](gguf::ValueType t, size_t n) {
    gguf::ArrayValue a{t, {}, n};
    for (size_t i = 0; i < n; ++i) {
      a.items.push_back(t == gguf::ValueType::kI32 ? gguf::Value{t, int64_t{0}} : gguf::Value{t, double{0}});
    }
    return gguf::Value{gguf::ValueType::kArray, std::move(a)};
  };
  const std::vector<std::pair<std::string, Edit>> edits = {
      {"one entry short",
       [](gguf::Value& v) {
         auto& a = std::get<gguf::ArrayValue>(v.data);
         a.items.pop_back();
         a.total_count = a.items.size();
       }},
      {"one entry more",
       [](gguf::Value& v) {
         auto& a = std::get<gguf::ArrayValue>(v.data);
         a.items.push_back(a.items.back());
         a.total_count = a.items.size();
       }},
      {"array of i32", [&](gguf::Value& v) { v = floats(gguf::ValueType::kI32, std::get<gguf::ArrayValue>(v.data).items.size()); }},
      {"array of f64", [&](gguf::Value& v) { v = floats(gguf::ValueType::kF64, std::get<gguf::ArrayValue>(v.data).items.size()); }},
      {"f32", [](gguf::Value& v) { v = gguf::Value{gguf::ValueType::kF32, double{0}}; }},
  };
  for (const bool in_drafter : {false, true}) {
    for (const auto& [what, change] : edits) {
      SCOPED_TRACE(what + (in_drafter ? " (drafter)" : " (target)"));
      const std::string path = (dir.path / (in_drafter ? "d.gguf" : "m.gguf")).string();
      copy_gguf(test::shared_path(in_drafter ? "models/shakes-assistant.gguf" : "models/shakes-target.gguf"), path,
                [&](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
                  gguf::Value out = v;
                  if (kv.key == "tokenizer.ggml.scores") change(out);
                  w.set_value(kv.key, out);
                });
      const std::string target = in_drafter ? test::shared_path("models/shakes-target.gguf") : path;
      auto loaded = create_engine(options(target, in_drafter ? path : ""));
      ASSERT_FALSE(loaded.ok());
      EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << loaded.status().to_string();
      const std::string& msg = loaded.status().message();
      EXPECT_NE(msg.find("'tokenizer.ggml.scores'"), std::string::npos) << msg;
      EXPECT_EQ(count(msg, path), 1u) << msg;
    }
  }
  auto shipped = create_engine(options(test::shared_path("models/shakes-target.gguf"),
                                       test::shared_path("models/shakes-assistant.gguf")));
  EXPECT_TRUE(shipped.ok()) << shipped.status().to_string();
}

// The tokens array of `v` (tokenizer.ggml.tokens) with `edit` applied to its strings.
gguf::Value edited_tokens(const gguf::Value& v, const std::function<void(std::vector<gguf::Value>&)>& edit) {
  gguf::Value out = v;
  auto& a = std::get<gguf::ArrayValue>(out.data);
  edit(a.items);
  a.total_count = a.items.size();
  return out;
}

size_t index_of(const std::vector<gguf::Value>& items, const std::string& text) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (std::get<std::string>(items[i].data) == text) return i;
  }
  ADD_FAILURE() << text << " is not in the vocabulary";
  return 0;
}

// A vocabulary without one of Gemma 4's chat markers (or with one typed BYTE, which the encoder
// never writes as that one token) spells the marker out of ordinary pieces in every chat prompt.
// It still loads, since raw completions, tokenization and bench need no markers (the golden
// tiny model and the reference synth_gguf.py vocabulary have none), with one warning at load
// that names the file, the field and the marker (decision 0045).
TEST(EngineLoadErrors, VocabularyWithoutAChatMarkerLoadsWithAWarningNamingTheFieldAndTheToken) {
  const test::ScratchDir dir("engine_load_markup");
  struct Case {
    std::string marker;
    bool as_byte;  // kept, but typed BYTE (never matched as one token)
  };
  const Case cases[] = {{"<|turn>", false}, {"<turn|>", false}, {"<|channel>", false}, {"<|\"|>", false},
                        {"<|tool_call>", false}, {"<tool_response|>", false}, {"<|think|>", false}, {"<turn|>", true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.marker + (c.as_byte ? " (typed BYTE)" : ""));
    const std::string model = (dir.path / "m.gguf").string();
    size_t at = 0;
    copy_gguf(test::shared_path("models/shakes-target.gguf"), model,
              [&](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
                if (kv.key == "tokenizer.ggml.tokens") {
                  at = index_of(std::get<gguf::ArrayValue>(v.data).items, c.marker);
                  if (!c.as_byte) {
                    w.set_value(kv.key, edited_tokens(v, [&](std::vector<gguf::Value>& items) {
                                  items[at].data = std::string("renamed") + c.marker;
                                }));
                    return;
                  }
                }
                if (kv.key == "tokenizer.ggml.token_type" && c.as_byte) {
                  gguf::Value t = v;
                  std::get<gguf::ArrayValue>(t.data).items[at].data = int64_t{6};  // BYTE
                  w.set_value(kv.key, t);
                  return;
                }
                w.set_value(kv.key, v);
              });
    const auto previous = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("markers_test", sink));
    auto loaded = create_engine(options(model, ""));
    spdlog::set_default_logger(previous);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    size_t warnings = 0;
    for (const std::string& line : sink->last_formatted()) {
      if (line.find("chat markers") == std::string::npos) continue;
      ++warnings;
      EXPECT_EQ(count(line, model), 1u) << line;
      EXPECT_NE(line.find("tokenizer.ggml.tokens"), std::string::npos) << line;
      EXPECT_NE(line.find("'" + c.marker + "'"), std::string::npos) << line;
    }
    EXPECT_EQ(warnings, 1u);
  }
}

// The golden tiny pair (Hugging Face's tiny Gemma 4 and its drafter, whose vocabulary has no
// chat markers) loads for run and serve, drafter and all: golden parity runs on it.
TEST(EngineLoadErrors, TheGoldenTinyPairLoads) {
  auto loaded = create_engine(options(test::shared_path("golden/tiny1234-target.gguf"),
                                      test::shared_path("golden/tiny1234-assistant.gguf")));
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
}

// The shipped model has every marker: no such warning.
TEST(EngineLoadErrors, TheShippedVocabularyHasEveryChatMarker) {
  const auto previous = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("markers_test", sink));
  auto loaded = create_engine(options(test::shared_path("models/shakes-target.gguf"), ""));
  spdlog::set_default_logger(previous);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  for (const std::string& line : sink->last_formatted()) EXPECT_EQ(line.find("chat markers"), std::string::npos) << line;
}

// A drafter whose vocabulary is not its target's (another order, or another length) loaded and
// drafted ids that mean other tokens to the target: the output stayed right (every draft is
// verified), but nearly every draft was wasted, silently. It is refused, naming both files, the
// field and the first entry that differs.
TEST(EngineLoadErrors, DrafterWithAnotherVocabularyNamesTheFieldAndTheEntry) {
  const test::ScratchDir dir("engine_load_drafter_vocab");
  const std::string target = test::shared_path("models/shakes-target.gguf");
  const std::string drafter = (dir.path / "d.gguf").string();
  using Edit = std::function<void(std::vector<gguf::Value>&)>;
  const std::pair<const char*, Edit> cases[] = {
      {"[7]", [](std::vector<gguf::Value>& items) { std::swap(items[7], items[8]); }},
      {"25000", [](std::vector<gguf::Value>& items) { items.resize(25000); }},
  };
  for (const auto& [expected, edit] : cases) {
    SCOPED_TRACE(expected);
    copy_gguf(test::shared_path("models/shakes-assistant.gguf"), drafter,
              [&](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
                if (kv.key == "tokenizer.ggml.tokens") {
                  w.set_value(kv.key, edited_tokens(v, edit));
                } else if (kv.key == "tokenizer.ggml.token_type" || kv.key == "tokenizer.ggml.scores") {
                  gguf::Value t = v;
                  auto& a = std::get<gguf::ArrayValue>(t.data);
                  if (std::string(expected) == "25000") a.items.resize(25000);
                  a.total_count = a.items.size();
                  w.set_value(kv.key, t);
                } else {
                  w.set_value(kv.key, v);
                }
              });
    auto loaded = create_engine(options(target, drafter));
    ASSERT_FALSE(loaded.ok()) << "a drafter with another vocabulary loaded";
    const std::string& msg = loaded.status().message();
    EXPECT_EQ(count(msg, drafter), 1u) << msg;
    EXPECT_NE(msg.find(target), std::string::npos) << msg;
    EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  }
  // The drafter as shipped, with its target's vocabulary, still loads.
  auto same = create_engine(options(target, test::shared_path("models/shakes-assistant.gguf")));
  ASSERT_TRUE(same.ok()) << same.status().to_string();
  same->engine->shutdown();
}

// general.name reached the serve banner, the log and every response's "model" as the file held
// it: a NUL cut the banner's line where printf met it, control bytes reached the terminal, and a
// name of 100 KB was the model id. It is escaped and cut as the load errors' text values are.
TEST(EngineLoadErrors, TheModelNameIsEscapedAndCut) {
  const test::ScratchDir dir("engine_load_model_name");
  const std::string model = (dir.path / "m.gguf").string();
  const std::string name = std::string("shakes\0\x1b[2J\xff\xc3", 13) + "\xc3\xa9" + std::string(100000, 'x');
  copy_gguf(test::shared_path("models/shakes-target.gguf"), model,
            [&](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
              if (kv.key == "general.name") {
                w.set_string(kv.key, name);
              } else {
                w.set_value(kv.key, v);
              }
            });
  auto loaded = create_engine(options(model, ""));
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const std::string& id = loaded->model_name;
  EXPECT_EQ(id.rfind("shakes\\x00\\x1b[2J\\xff\\xc3\xc3\xa9xxx", 0), 0u) << id;
  EXPECT_NE(id.find("...(100015 bytes)"), std::string::npos) << id;
  EXPECT_LT(id.size(), kMaxModelNameBytes + 64) << id;
  for (const char c : id) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << id;
  loaded->engine->shutdown();
}


// tokenizer.chat_template and general.name of another type than string were passed over in
// silence (the default template's format, the file's stem), where a template the server does
// not reproduce and a recommended sampling value of the wrong type are warned about: each is
// one warning naming the file, the key and the type found (decision 0056).
TEST(EngineLoadErrors, ChatTemplateOrNameOfAnotherTypeLoadsWithAWarningNamingTheKey) {
  const test::ScratchDir dir("engine_load_key_types");
  for (const std::string key : {"tokenizer.chat_template", "general.name"}) {
    SCOPED_TRACE(key);
    const std::string model = (dir.path / "m.gguf").string();
    copy_gguf(test::shared_path("models/shakes-target.gguf"), model,
              [&](const gguf::KeyValue& kv, const gguf::Value& v, gguf::GgufWriter& w) {
                if (kv.key == key) {
                  w.set_u32(kv.key, 5);
                } else {
                  w.set_value(kv.key, v);
                }
              });
    const auto previous = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("key_types_test", sink));
    auto loaded = create_engine(options(model, ""));
    spdlog::set_default_logger(previous);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    size_t warnings = 0;
    for (const std::string& line : sink->last_formatted()) {
      if (line.find("'" + key + "'") == std::string::npos) continue;
      ++warnings;
      EXPECT_EQ(count(line, model), 1u) << line;
      EXPECT_NE(line.find("is u32; expected string"), std::string::npos) << line;
    }
    EXPECT_EQ(warnings, 1u);
    if (key == "general.name") {
      EXPECT_EQ(loaded->model_name, "m");
    }
    loaded->engine->shutdown();
  }
}

}  // namespace
}  // namespace gs
