// Slot files (decisions 0068, 0070): a slot's processed prompt, its token ids and their KV
// cache, on disk, so that a restart or another slot skips the prompt's prefill. One header says
// what must match to restore it (the model's shapes and a SHA-256 fingerprint of its tensors,
// the cache's type); a SHA-256 digest at the end covers every byte before it (format 2).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/ggml_type.h"
#include "core/status.h"
#include "engine/sha256.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_config.h"
#include "runtime/kv_cache.h"

namespace gs {

// What a slot file must share with the cache it is restored into. Layers: one per target
// layer {sliding (0/1), n_head_kv, head_dim, bytes of one position's K (or V) row}.
struct SlotFileModel {
  Sha256::Digest fingerprint{};  // model_fingerprint of the target file
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_vocab = 0;
  int32_t sliding_window = 0;
  GgmlType kv_type = GgmlType::F16;
  std::vector<std::array<int32_t, 4>> layers;
};

// The SHA-256 fingerprint of a model file: of every tensor's name (its length, then its bytes),
// type, shape and byte size, and the first 64 bytes of its data (so that two fine-tunes of one
// shape differ), in file order. Reads a few bytes of each tensor from the mapping; no more.
// Errors: kInternal (OpenSSL's digest failed).
Result<Sha256::Digest> model_fingerprint(const gguf::GgufFile& file);

// The model description of a cache `kv` of the target `config` from `file`. Errors: those of
// model_fingerprint.
Result<SlotFileModel> slot_file_model(const Gemma4Config& config, const gguf::GgufFile& file, const KvCache& kv);

// What check_slot_file read: the tokens, where the sliding layers' rows start, the file's size.
struct SlotFileContents {
  std::vector<int32_t> tokens;
  int32_t swa_lo = 0;       // first position of the sliding layers' rows
  uint64_t file_bytes = 0;
  // The file checked, kept open for load_slot_file: a file renamed over the name after the
  // check (another server saving it) is not the one loaded (decision 0069).
  std::shared_ptr<std::FILE> file;
};

// Writes `tokens` (the sequence's positions [0, n)) and their K and V of every layer of
// sequence `seq` of `kv` (full layers: [0, n); sliding layers: [swa_oldest, n)) to `path`
// through a temporary file beside it, renamed at the end. Returns the bytes written.
// Errors: kInvalidArgument (n beyond the sequence's length), kIo (naming the file), kInternal
// (OpenSSL's digest failed), the cache's.
Result<uint64_t> write_slot_file(const std::string& path, const SlotFileModel& model, std::span<const int32_t> tokens,
                                 const KvCache& kv, int seq);

// Reads the whole file without touching any cache: its header against `model`, its size
// against the header, its SHA-256 digest, every token id in [0, n_vocab) and n <= n_ctx.
// Errors, each naming the file by `name`: kNotFound (no such file), kInvalidArgument (not a
// slot file, another format (format 1, an older gemmaserve's: "save the slot again"), another
// model or cache type, truncated or longer than its header says, a digest or token that does
// not match), kIo, kInternal (OpenSSL's digest failed).
Result<SlotFileContents> check_slot_file(const std::string& path, const std::string& name, const SlotFileModel& model,
                                         int32_t n_ctx);

// Loads a checked file's K and V into the empty sequence `seq` of `kv` (restore_shape, then
// write_positions; sliding rows older than the ring are skipped), from the file check_slot_file
// opened (contents.file; `path` only where it is null). Errors: kIo (the file was cut short in
// place since it was checked), the cache's; the sequence is then partly written.
Status load_slot_file(const std::string& path, const std::string& name, const SlotFileModel& model,
                      const SlotFileContents& contents, KvCache& kv, int seq);

}  // namespace gs
