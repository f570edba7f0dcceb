// write_synth: metadata (same keys as shared/tools/synth_gguf.py, spec §1.3), then tensor data
// generated piece by piece on a thread pool while a writer thread streams the previous batch.
#include "model/synth_writer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/gguf_writer.h"
#include "model/gguf_names.h"
#include "model/synth_blocks.h"
#include "model/synth_vocab.h"

namespace gs::synth {
namespace {

constexpr uint64_t kPieceBytes = 4u << 20;  // one unit of generation work
constexpr uint64_t kMaxBatchBytes = 256u << 20;

void add_metadata(gguf::GgufWriter& w, const SynthConfig& c) {
  const std::string_view a = c.arch();
  auto k = [&](std::string_view suffix) { return names::key(a, suffix); };
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.set_string(names::kArchitecture, a);
  w.set_string(names::kName, c.name);
  w.set_u32(names::kFileType, file_type(c.types));
  w.set_u32(names::kQuantVersion, 2);
  w.set_u32(k(names::kContextLength), u32(c.n_ctx_train));
  w.set_u32(k(names::kEmbeddingLength), u32(c.n_embd));
  if (c.assistant) w.set_u32(k(names::kEmbeddingLengthOut), u32(c.n_embd_out));
  w.set_u32(k(names::kBlockCount), u32(c.n_layer));
  w.set_u32(k(names::kFeedForwardLength), u32(c.n_ff));
  w.set_u32(k(names::kHeadCount), u32(c.n_head));
  std::vector<uint32_t> kv_heads;
  std::vector<bool> pattern;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    kv_heads.push_back(u32(c.is_swa(il) ? c.n_head_kv_swa : c.n_head_kv));
    pattern.push_back(c.is_swa(il));
  }
  w.set_u32_array(k(names::kHeadCountKv), kv_heads);
  w.set_u32(k(names::kKeyLength), u32(c.head_dim));
  w.set_u32(k(names::kValueLength), u32(c.head_dim));
  w.set_u32(k(names::kKeyLengthSwa), u32(c.head_dim_swa));
  w.set_u32(k(names::kValueLengthSwa), u32(c.head_dim_swa));
  w.set_f32(k(names::kRmsEps), c.rms_eps);
  w.set_u32(k(names::kSlidingWindow), u32(c.sliding_window));
  w.set_bool_array(k(names::kSlidingWindowPattern), pattern);
  // The assistant shares all its layers' KV with the target (spec §1.2).
  w.set_u32(k(names::kSharedKvLayers), c.assistant ? u32(c.n_layer) : 0);
  w.set_u32(k(names::kEmbeddingLengthPerLayerInput), 0);
  w.set_f32(k(names::kRopeFreqBase), c.rope_freq_base);
  w.set_f32(k(names::kRopeFreqBaseSwa), c.rope_freq_base_swa);
  w.set_u32(k(names::kRopeDimensionCount), u32(c.head_dim));
  w.set_u32(k(names::kRopeDimensionCountSwa), u32(c.head_dim_swa));
  if (c.assistant) {
    w.set_u32(k(names::kNextnPredictLayers), u32(c.n_layer));
  } else {
    w.set_f32(k(names::kFinalLogitSoftcapping), c.final_logit_softcap);
  }
  w.set_i32(names::kSamplingTopK, 64);
  w.set_f32(names::kSamplingTopP, 0.95f);
  w.set_f32(names::kSamplingTemp, 1.0f);

  SynthVocab v = build_vocab(c.n_vocab);
  w.set_string(names::kTokModel, "gemma4");
  w.set_string_array(names::kTokTokens, v.tokens);
  w.set_f32_array(names::kTokScores, v.scores);
  w.set_i32_array(names::kTokTypes, v.types);
  w.set_string_array(names::kTokMerges, v.merges);
  w.set_u32(names::kTokBos, 2);
  w.set_u32(names::kTokEos, 1);
  w.set_u32(names::kTokUnk, 3);
  w.set_u32(names::kTokPad, 0);
  w.set_u32(names::kTokMask, 4);
  w.set_bool(names::kTokAddBos, true);
  w.set_bool(names::kTokAddEos, false);
  w.set_bool(names::kTokAddSpacePrefix, false);
  if (!c.chat_template.empty()) w.set_string(names::kChatTemplate, c.chat_template);
}

// A contiguous run of one tensor's bytes, generated as a unit with its own seed.
struct Piece {
  size_t tensor;
  uint64_t index;        // piece number within the tensor (part of the seed)
  uint64_t first_block;  // blocks (elements for plain types) from the tensor's start
  uint64_t n_blocks;
  uint64_t bytes;
  uint64_t buf_offset = 0;
};

std::vector<Piece> split_tensor(const PlannedTensor& t, size_t ti) {
  const auto& tr = ggml_type_traits(t.type);
  const uint64_t n_blocks = static_cast<uint64_t>(t.n_elements()) / static_cast<uint64_t>(tr.block_elems);
  const uint64_t per = t.fill == Fill::kMatrix ? std::max<uint64_t>(1, kPieceBytes / tr.block_bytes) : n_blocks;
  std::vector<Piece> out;
  for (uint64_t b = 0, i = 0; b < n_blocks; b += per, ++i) {
    const uint64_t n = std::min(per, n_blocks - b);
    out.push_back({ti, i, b, n, n * tr.block_bytes});
  }
  return out;
}

void generate(const SynthConfig& c, const PlannedTensor& t, size_t ti, const Piece& p, uint8_t* dst) {
  Rng rng(derive_seed(c.seed, ti, p.index));
  switch (t.fill) {
    case Fill::kMatrix: fill_random_blocks(t.type, dst, p.n_blocks, kWeightStd, rng); return;
    case Fill::kNorm:
    case Fill::kOutputScale:
    case Fill::kRopeFreqs: break;
  }
  // 1-D F32 tensors: one piece each.
  const int64_t n = t.n_elements();
  const int64_t n_rot = static_cast<int64_t>(static_cast<float>(c.head_dim) * c.partial_rotary_factor / 2);
  for (int64_t i = 0; i < n; ++i) {
    float v = 1.0f;
    switch (t.fill) {
      case Fill::kNorm: v = 1.0f + 0.2f * (rng.uniform() - 0.5f); break;
      case Fill::kOutputScale: v = 0.9f + 0.2f * rng.uniform(); break;
      case Fill::kRopeFreqs: v = i < n_rot ? 1.0f : 1e30f; break;
      case Fill::kMatrix: break;
    }
    std::memcpy(dst + 4 * i, &v, 4);
  }
}

}  // namespace

Result<SynthStats> write_synth(const SynthConfig& c, const std::string& path, int n_threads,
                               const SynthProgressFn& progress, int split_max_tensors) {
  GS_RETURN_IF_ERROR(c.validate());
  if (split_max_tensors < 0) {
    return make_status(StatusCode::kInvalidArgument, "split_max_tensors = {} is negative", split_max_tensors);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<PlannedTensor> plan = plan_tensors(c);
  // One writer per file; tensor ti goes to shard ti / split_max_tensors.
  const size_t per_shard = split_max_tensors > 0 ? static_cast<size_t>(split_max_tensors) : std::max<size_t>(plan.size(), 1);
  const size_t n_shards = std::max<size_t>(1, (plan.size() + per_shard - 1) / per_shard);
  if (split_max_tensors > 0 && n_shards > 65535) {
    return make_status(StatusCode::kInvalidArgument, "{} tensors at {} a shard make {} shards; at most 65535",
                       plan.size(), split_max_tensors, n_shards);
  }
  std::vector<gguf::GgufWriter> writers(n_shards);
  SynthStats stats;
  if (split_max_tensors > 0) {
    const std::string prefix = path.size() > 5 && path.ends_with(".gguf") ? path.substr(0, path.size() - 5) : path;
    for (size_t k = 0; k < n_shards; ++k) {
      stats.paths.push_back(gguf::split_path(prefix, static_cast<int>(k + 1), static_cast<int>(n_shards)));
    }
  } else {
    stats.paths.push_back(path);
  }
  add_metadata(writers[0], c);
  for (size_t k = 0; k < n_shards && split_max_tensors > 0; ++k) {
    writers[k].set_value(names::kSplitNo, gguf::Value{gguf::ValueType::kU16, uint64_t{k}});
    writers[k].set_value(names::kSplitCount, gguf::Value{gguf::ValueType::kU16, uint64_t{n_shards}});
    writers[k].set_i32(names::kSplitTensorsCount, static_cast<int32_t>(plan.size()));
  }
  uint64_t total = 0;
  for (size_t ti = 0; ti < plan.size(); ++ti) {
    const PlannedTensor& t = plan[ti];
    GS_RETURN_IF_ERROR(writers[ti / per_shard].add_tensor(t.name, t.type, t.ne));
    total += t.bytes();
    stats.n_params += static_cast<uint64_t>(t.n_elements());
  }
  stats.n_tensors = plan.size();
  for (size_t k = 0; k < n_shards; ++k) GS_RETURN_IF_ERROR(writers[k].begin(stats.paths[k]));

  ThreadPool pool(n_threads);
  const uint64_t batch_cap =
      std::min<uint64_t>(kMaxBatchBytes, std::max<uint64_t>(32u << 20, 4 * kPieceBytes * static_cast<uint64_t>(pool.n_threads())));
  // All pieces in file order; batches are consecutive runs of at most batch_cap bytes.
  std::vector<Piece> pieces;
  for (size_t ti = 0; ti < plan.size(); ++ti) {
    for (const Piece& p : split_tensor(plan[ti], ti)) pieces.push_back(p);
  }
  std::vector<uint8_t> buf[2];
  std::thread writer;
  Status write_status;
  uint64_t done = 0;
  size_t next = 0;
  for (int k = 0; next < pieces.size(); ++k) {
    const size_t first = next;
    uint64_t bytes = 0;
    while (next < pieces.size() && (next == first || bytes + pieces[next].bytes <= batch_cap)) {
      pieces[next].buf_offset = bytes;
      bytes += pieces[next++].bytes;
    }
    std::vector<uint8_t>& b = buf[k % 2];
    b.resize(bytes);
    pool.parallel_for(static_cast<int64_t>(next - first), [&](int64_t lo, int64_t hi, int) {
      for (int64_t i = lo; i < hi; ++i) {
        const Piece& p = pieces[first + static_cast<size_t>(i)];
        generate(c, plan[p.tensor], p.tensor, p, b.data() + p.buf_offset);
      }
    });
    if (writer.joinable()) writer.join();
    GS_RETURN_IF_ERROR(write_status);
    if (progress && done > 0) progress(done, total);
    writer = std::thread([&, first, last = next, data = b.data()] {
      for (size_t i = first; i < last && write_status.ok(); ++i) {
        write_status = writers[pieces[i].tensor / per_shard].write_tensor_chunk(data + pieces[i].buf_offset, pieces[i].bytes);
      }
    });
    done += bytes;
  }
  if (writer.joinable()) writer.join();
  GS_RETURN_IF_ERROR(write_status);
  if (progress) progress(done, total);
  for (gguf::GgufWriter& w : writers) GS_RETURN_IF_ERROR(w.finish());
  stats.file_bytes = 0;
  for (const std::string& p : stats.paths) {
    if (FILE* f = std::fopen(p.c_str(), "rb")) {
      std::fseek(f, 0, SEEK_END);
      stats.file_bytes += static_cast<uint64_t>(std::ftell(f));
      std::fclose(f);
    }
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace gs::synth
