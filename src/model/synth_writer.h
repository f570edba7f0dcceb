// Writes a synthetic Gemma-4-shaped GGUF: metadata with the key set llama.cpp loads, and
// seeded random weights generated in parallel and streamed to disk in file order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/synth_config.h"

namespace gs::synth {

struct SynthStats {
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t file_bytes = 0;  // all files together
  double seconds = 0.0;
  std::vector<std::string> paths;  // the files written: one, or the shards in order
};

// Called after each written batch with the tensor bytes written so far and in total.
using SynthProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Writes `config` (validated first) to `path`. The output depends only on the config and
// its seed, not on n_threads (<= 0: all cores). Memory stays bounded (two batch buffers of
// at most 256 MiB) whatever the file size. `split_max_tensors` > 0 writes a split model as
// llama.cpp's gguf-split does (its --split-max-tensors): shards of at most that many
// tensors, named PATH-00001-of-0000N.gguf (PATH without its .gguf), shard 1 with every
// metadata key, each with split.no, split.count and split.tensors.count. Errors: invalid
// config, I/O.
Result<SynthStats> write_synth(const SynthConfig& config, const std::string& path, int n_threads,
                               const SynthProgressFn& progress = {}, int split_max_tensors = 0);

}  // namespace gs::synth
