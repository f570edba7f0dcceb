// general.sampling.* (spec §1.3: informational, i32 / f32): the defaults a served model's
// file recommends. They become the default of every request that leaves them out, so a
// value no request could ask for (NaN, a negative temperature, top_p above 1) is not taken.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "common/test_paths.h"
#include "engine/engine_factory.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace gs {
namespace {

std::shared_ptr<gguf::GgufFile> write_and_open(gguf::GgufWriter& w, const std::string& tag) {
  const std::filesystem::path dir = test::temp_dir(tag);
  const std::string path = (dir / "s.gguf").string();
  EXPECT_TRUE(w.begin(path).ok());
  EXPECT_TRUE(w.finish().ok());
  auto f = gguf::GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  std::filesystem::remove_all(dir);
  return f.ok() ? *f : nullptr;
}

TEST(RecommendedSampling, ValidValuesOfAnyNumericStorageAreTaken) {
  gguf::GgufWriter w;
  w.set_value("general.sampling.temp", gguf::Value{gguf::ValueType::kF64, 0.7});
  w.set_f32("general.sampling.top_p", 0.95f);
  w.set_u32("general.sampling.top_k", 64);
  auto f = write_and_open(w, "rec_ok");
  ASSERT_NE(f, nullptr);
  const RecommendedSampling s = read_recommended_sampling(*f);
  EXPECT_TRUE(s.has_temperature);
  EXPECT_FLOAT_EQ(s.temperature, 0.7f);
  EXPECT_TRUE(s.has_top_p);
  EXPECT_FLOAT_EQ(s.top_p, 0.95f);
  EXPECT_TRUE(s.has_top_k);
  EXPECT_EQ(s.top_k, 64);
}

TEST(RecommendedSampling, ValuesNoRequestCouldAskForAreNotTaken) {
  for (const float temp : {std::nanf(""), -1.0f, 3.0f}) {
    gguf::GgufWriter w;
    w.set_f32("general.sampling.temp", temp);
    w.set_f32("general.sampling.top_p", temp == 3.0f ? 1.5f : -0.1f);
    w.set_i32("general.sampling.top_k", -5);
    auto f = write_and_open(w, "rec_bad");
    ASSERT_NE(f, nullptr);
    const RecommendedSampling s = read_recommended_sampling(*f);
    EXPECT_FALSE(s.has_temperature) << temp;
    EXPECT_FALSE(s.has_top_p) << temp;
    EXPECT_FALSE(s.has_top_k) << temp;
  }
  gguf::GgufWriter w;
  w.set_string("general.sampling.temp", "0.7");
  auto f = write_and_open(w, "rec_type");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(read_recommended_sampling(*f).has_temperature);
}

// The warning for a value that is not used names the file and the key once, and says why:
// a key of the wrong type gave "F: metadata 'K' F: metadata 'K' at byte N is string; ..."
// (the reader's message, which names both already, after the same prefix).
TEST(RecommendedSampling, TheWarningNamesTheFileAndKeyOnce) {
  gguf::GgufWriter w;
  w.set_string("general.sampling.top_k", "5");
  w.set_f32("general.sampling.top_p", 1.5f);
  const std::filesystem::path dir = test::temp_dir("rec_warn");
  const std::string path = (dir / "s.gguf").string();
  ASSERT_TRUE(w.begin(path).ok());
  ASSERT_TRUE(w.finish().ok());
  auto f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto previous = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("rec_test", sink));
  const RecommendedSampling s = read_recommended_sampling(**f);
  spdlog::set_default_logger(previous);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(s.has_top_k);
  EXPECT_FALSE(s.has_top_p);
  const auto count = [](const std::string& line, const std::string& what) {
    size_t n = 0;
    for (size_t at = line.find(what); at != std::string::npos; at = line.find(what, at + 1)) ++n;
    return n;
  };
  const std::vector<std::string> lines = sink->last_formatted();
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_EQ(count(line, path), 1u) << line;
    EXPECT_EQ(count(line, "general.sampling."), 1u) << line;
    EXPECT_NE(line.find("the recommended value is not used"), std::string::npos) << line;
  }
  EXPECT_NE(lines[0].find("'general.sampling.top_p' = 1.5 is outside [0, 1]"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("'general.sampling.top_k' at byte"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("is string"), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace gs
