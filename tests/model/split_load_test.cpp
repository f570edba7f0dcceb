// Split GGUF models (gguf-split's PREFIX-00001-of-0000N.gguf shards): loaded from a shard's
// path they give the unsplit model's logits bit for bit; a broken set of shards is refused
// with an error that names the file and the field at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "common/test_paths.h"
#include "gguf/gguf_split.h"
#include "model/gemma4_model.h"
#include "model/synth_writer.h"
#include "runtime/model_runner.h"
#include "test_gguf.h"

namespace gs::test {
namespace {

class SplitLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = create_cpu_backend(2);
    dir_ = temp_dir("split");
    RandomModelSpec s;
    s.matrix_type = GgmlType::Q8_0;  // quantized matrices next to f32 gains: mixed types per shard
    s.n_embd = 64;
    model_ = random_model(s);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string prefix(const std::string& tag) const { return (dir_ / tag).string(); }

  // The last prompt position's logits of the model at `path`; empty (with a failure) when it
  // does not load or run.
  std::vector<float> logits(const std::string& path) {
    auto model = Gemma4Model::load(path, *backend_);
    EXPECT_TRUE(model.ok()) << model.status().to_string();
    if (!model.ok()) return {};
    RunnerOptions o;
    o.max_tokens = 16;
    o.max_outputs = 1;
    o.kv.n_seq_max = 1;
    o.kv.n_ctx = 32;
    o.kv.type = GgmlType::F32;
    o.kv.page_size = 16;
    auto runner = ModelRunner::create(*model, o);
    EXPECT_TRUE(runner.ok()) << runner.status().to_string();
    if (!runner.ok()) return {};
    auto seq = (*runner)->add_sequence();
    EXPECT_TRUE(seq.ok());
    std::vector<ModelRunner::Token> prompt;
    for (int i = 0; i < 9; ++i) prompt.push_back({*seq, i == 0 ? 2 : 3 + 11 * i % 97, i == 8});
    const Status st = (*runner)->decode(prompt);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
    const auto l = (*runner)->logits(0);
    return {l.begin(), l.end()};
  }

  // Loads `path` expecting an error; returns its message.
  std::string load_error(const std::string& path, StatusCode code) {
    auto m = Gemma4Model::load(path, *backend_);
    EXPECT_FALSE(m.ok());
    if (m.ok()) return {};
    EXPECT_EQ(m.status().code(), code) << m.status().to_string();
    return m.status().message();
  }

  std::unique_ptr<Backend> backend_;
  std::filesystem::path dir_;
  EditableGguf model_;
};

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST_F(SplitLoad, ShardNamesRoundTrip) {
  EXPECT_EQ(gguf::split_path("d/m", 2, 3), "d/m-00002-of-00003.gguf");
  auto n = gguf::parse_split_name("d/m-x-00002-of-00003.gguf");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->prefix, "d/m-x");
  EXPECT_EQ(n->number, 2);
  EXPECT_EQ(n->count, 3);
  EXPECT_FALSE(gguf::parse_split_name("d/m.gguf").has_value());
  EXPECT_FALSE(gguf::parse_split_name("d/m-00004-of-00003.gguf").has_value());  // number past count
  EXPECT_FALSE(gguf::parse_split_name("d/m-00000-of-00003.gguf").has_value());  // 1-based
  EXPECT_FALSE(gguf::parse_split_name("d/m-0002-of-00003.gguf").has_value());   // 5 digits at least
  EXPECT_FALSE(gguf::parse_split_name("-00001-of-00003.gguf").has_value());     // no prefix
  EXPECT_FALSE(gguf::parse_split_name("d/m-00001-of-00003.bin").has_value());
}

// Two and three shards, loaded from any shard's path, give the whole file's logits exactly.
TEST_F(SplitLoad, SplitModelGivesTheWholeModelsLogits) {
  const std::string whole = (dir_ / "whole.gguf").string();
  ASSERT_TRUE(model_.write(whole).ok());
  const std::vector<float> expected = logits(whole);
  ASSERT_EQ(expected.size(), 101u);
  for (int n : {2, 3}) {
    const std::vector<std::string> paths = write_shards(split_shards(model_, n), prefix(fmt::format("m{}", n)));
    for (const std::string& p : paths) {
      SCOPED_TRACE(p);
      EXPECT_EQ(logits(p), expected);
    }
  }
  // gguf-split --no-tensor-first-split: shard 1 holds only the metadata.
  const auto paths = write_shards(split_shards(model_, 3, /*first_empty=*/true), prefix("empty1"));
  EXPECT_EQ(logits(paths[0]), expected);
}

TEST_F(SplitLoad, TheModelFileListsEveryShardAndEveryTensor) {
  const auto paths = write_shards(split_shards(model_, 3), prefix("m"));
  auto f = gguf::GgufFile::open_model(paths[1]);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->path(), paths[0]);  // shard 1 serves the model, whichever was given
  EXPECT_FALSE((*f)->is_partial_shard());
  const auto shards = (*f)->shards();
  ASSERT_EQ(shards.size(), 3u);
  size_t total = 0;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(shards[k].path, paths[k]);
    EXPECT_GT(shards[k].n_tensors, 0u);
    total += shards[k].n_tensors;
  }
  ASSERT_EQ((*f)->tensors().size(), model_.tensors.size());
  EXPECT_EQ(total, model_.tensors.size());
  for (const EditableGguf::Tensor& t : model_.tensors) {
    const gguf::TensorInfo* info = (*f)->find_tensor(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    ASSERT_EQ(info->size_bytes, t.data.size()) << t.name;
    EXPECT_EQ(std::memcmp(info->data, t.data.data(), t.data.size()), 0) << t.name;
  }
  EXPECT_EQ((*f)->tensors().back().shard, 2);
}

// synth --split-max-tensors: the same tensors, bytes and logits as the file written whole.
TEST_F(SplitLoad, SynthWritesShardsLikeGgufSplit) {
  const synth::SynthConfig c = synth::preset_config(synth::Preset::kTiny);
  const std::string whole = (dir_ / "whole.gguf").string();
  auto w = synth::write_synth(c, whole, 2);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  auto s = synth::write_synth(c, (dir_ / "tiny.gguf").string(), 2, {}, 20);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const size_t n_shards = (w->n_tensors + 19) / 20;
  ASSERT_EQ(s->paths.size(), n_shards);
  EXPECT_EQ(s->paths[0], gguf::split_path(prefix("tiny"), 1, static_cast<int>(n_shards)));
  auto a = gguf::GgufFile::open(whole);
  auto b = gguf::GgufFile::open_model(s->paths.back());
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  EXPECT_EQ((*b)->shards().size(), n_shards);
  ASSERT_EQ((*b)->tensors().size(), (*a)->tensors().size());
  for (const gguf::TensorInfo& t : (*a)->tensors()) {
    const gguf::TensorInfo* u = (*b)->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->size_bytes, t.size_bytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.size_bytes), 0) << t.name;
  }
  const std::vector<float> expected = logits(whole);
  ASSERT_EQ(expected.size(), 1024u);
  EXPECT_EQ(logits(s->paths[0]), expected);
}

TEST_F(SplitLoad, MissingShardNamesThePathLookedFor) {
  const auto paths = write_shards(split_shards(model_, 3), prefix("m"));
  std::filesystem::remove(paths[1]);
  for (const std::string& given : {paths[0], paths[2]}) {
    const std::string msg = load_error(given, StatusCode::kNotFound);
    EXPECT_HAS(msg, paths[1]);
    EXPECT_HAS(msg, "shard 2 of 3");
    EXPECT_HAS(msg, "missing");
  }
}

TEST_F(SplitLoad, MalformedShardIsNamed) {
  const auto paths = write_shards(split_shards(model_, 3), prefix("m"));
  std::filesystem::resize_file(paths[2], std::filesystem::file_size(paths[2]) - 64);
  const std::string msg = load_error(paths[0], StatusCode::kDataLoss);
  EXPECT_HAS(msg, paths[2]);
  EXPECT_HAS(msg, "shard 3 of the split model");
}

TEST_F(SplitLoad, WrongSplitNoNamesTheShardAndTheField) {
  auto shards = split_shards(model_, 3);
  shards[1].set_kv(std::string(names::kSplitNo), u16_value(2));
  const auto paths = write_shards(shards, prefix("m"));
  const std::string msg = load_error(paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, paths[1]);
  EXPECT_HAS(msg, "'split.no' = 2, expected 1");
  // Given itself, the shard's name and its split.no disagree.
  const std::string own = load_error(paths[1], StatusCode::kInvalidArgument);
  EXPECT_HAS(own, paths[1]);
  EXPECT_HAS(own, "split.no");
}

TEST_F(SplitLoad, MismatchedSplitCountNamesTheShardAndTheField) {
  auto shards = split_shards(model_, 3);
  shards[2].set_kv(std::string(names::kSplitCount), u16_value(4));
  const auto paths = write_shards(shards, prefix("m"));
  const std::string msg = load_error(paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, paths[2]);
  EXPECT_HAS(msg, "'split.count' = 4");
  // A file named as one of 2 that says 3 shards.
  auto two = split_shards(model_, 2);
  two[0].set_kv(std::string(names::kSplitCount), u16_value(3));
  const auto two_paths = write_shards(two, prefix("two"));
  const std::string named = load_error(two_paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(named, two_paths[0]);
  EXPECT_HAS(named, "'split.count' = 3");
  EXPECT_HAS(named, "file name says 2 shards");
  // A shard without split.count.
  auto bare = split_shards(model_, 2);
  bare[1].remove_kv(std::string(names::kSplitCount));
  const auto bare_paths = write_shards(bare, prefix("bare"));
  const std::string missing = load_error(bare_paths[0], StatusCode::kNotFound);
  EXPECT_HAS(missing, bare_paths[1]);
  EXPECT_HAS(missing, "split.count");
}

// A shard 1 of 3 whose split.count says 1 was loaded as a whole model, and refused with
// "tensor 'blk.N...' is missing" about a tensor of another shard instead of the count.
TEST_F(SplitLoad, SplitCountOfOneUnderAShardNameOfSeveralIsNamed) {
  auto shards = split_shards(model_, 3);
  shards[0].set_kv(std::string(names::kSplitCount), u16_value(1));
  const auto paths = write_shards(shards, prefix("one"));
  const std::string msg = load_error(paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, paths[0]);
  EXPECT_HAS(msg, "'split.count' = 1");
  EXPECT_HAS(msg, "file name says 3 shards");
  // A whole model named as the one shard of one still loads.
  auto whole = split_shards(model_, 1);
  EXPECT_FALSE(logits(write_shards(whole, prefix("whole"))[0]).empty());
}

TEST_F(SplitLoad, DuplicateTensorNamesItAndBothShards) {
  auto shards = split_shards(model_, 3);
  shards[2].tensors.push_back(shards[0].tensors.front());
  const int32_t n = static_cast<int32_t>(model_.tensors.size() + 1);  // so that only the duplicate is wrong
  for (auto& s : shards) s.set_kv(std::string(names::kSplitTensorsCount), i32_value(n));
  const auto paths = write_shards(shards, prefix("m"));
  const std::string msg = load_error(paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, paths[2]);
  EXPECT_HAS(msg, paths[0]);
  EXPECT_HAS(msg, fmt::format("'{}'", shards[0].tensors.front().name));
}

TEST_F(SplitLoad, WrongTotalTensorCountNamesTheField) {
  auto shards = split_shards(model_, 2);
  const int32_t n = static_cast<int32_t>(model_.tensors.size());
  shards[0].set_kv(std::string(names::kSplitTensorsCount), i32_value(n + 1));
  shards[1].set_kv(std::string(names::kSplitTensorsCount), i32_value(n + 1));
  const auto paths = write_shards(shards, prefix("m"));
  const std::string msg = load_error(paths[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, paths[0]);
  EXPECT_HAS(msg, fmt::format("'split.tensors.count' = {}, but the 2 shards hold {} tensors", n + 1, n));
  // A later shard that disagrees with shard 1.
  shards[0].set_kv(std::string(names::kSplitTensorsCount), i32_value(n));
  const auto again = write_shards(shards, prefix("again"));
  const std::string later = load_error(again[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(later, again[1]);
  EXPECT_HAS(later, "split.tensors.count");
  // Shard 1 wrong and a later shard right: the error names shard 1, not the shard that is
  // right.
  shards[0].set_kv(std::string(names::kSplitTensorsCount), i32_value(n + 1));
  shards[1].set_kv(std::string(names::kSplitTensorsCount), i32_value(n));
  const auto first_wrong = write_shards(shards, prefix("first"));
  const std::string blamed = load_error(first_wrong[0], StatusCode::kInvalidArgument);
  EXPECT_HAS(blamed, first_wrong[0]);
  EXPECT_EQ(blamed.find(first_wrong[1]), std::string::npos) << blamed;
  EXPECT_HAS(blamed, fmt::format("'split.tensors.count' = {}, but the 2 shards hold {} tensors", n + 1, n));
  // Shard 1 without it.
  shards[0].remove_kv(std::string(names::kSplitTensorsCount));
  const auto bare = write_shards(shards, prefix("bare"));
  const std::string missing = load_error(bare[0], StatusCode::kNotFound);
  EXPECT_HAS(missing, bare[0]);
  EXPECT_HAS(missing, "split.tensors.count");
}

// A shard opened on its own (GgufFile::open, not open_model) is only part of the model: the
// config refuses it by name, shard 1 and later ones alike.
TEST_F(SplitLoad, ShardOpenedAloneIsRefusedByName) {
  const auto paths = write_shards(split_shards(model_, 3), prefix("m"));
  for (int k : {0, 2}) {
    auto f = gguf::GgufFile::open(paths[k]);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_TRUE((*f)->is_partial_shard());
    auto m = Gemma4Model::from_file(*f, *backend_);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
    EXPECT_HAS(m.status().message(), paths[k]);
    EXPECT_HAS(m.status().message(), "'split.count' = 3");
    EXPECT_HAS(m.status().message(), fmt::format("shard {} of a split GGUF", k + 1));
  }
}

}  // namespace
}  // namespace gs::test
