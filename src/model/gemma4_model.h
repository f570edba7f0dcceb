// Gemma4Model: a loaded Gemma 4 file (target or assistant): its config and its weights on
// a backend. Immutable after load; shared by the forward passes that run it.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_config.h"
#include "model/gemma4_weights.h"

namespace gs {

class Gemma4Model {
 public:
  // Opens `path` (a whole file, or a shard of a split model: every shard is opened), reads
  // the config and binds the weights on `backend` (which must outlive the model). Errors:
  // those of GgufFile::open_model, load_gemma4_config, bind_gemma4_weights.
  static Result<std::shared_ptr<Gemma4Model>> load(const std::string& path, Backend& backend);
  static Result<std::shared_ptr<Gemma4Model>> from_file(std::shared_ptr<gguf::GgufFile> file, Backend& backend);

  const Gemma4Config& config() const { return config_; }
  // Load-time overrides (e.g. RoPE scaling from command-line flags), before any forward
  // pass is created from the model.
  Gemma4Config& mutable_config() { return config_; }
  const Gemma4Weights& weights() const { return weights_; }
  Backend& backend() const { return *backend_; }
  const gguf::GgufFile& file() const { return *file_; }
  std::shared_ptr<gguf::GgufFile> file_ptr() const { return file_; }

 private:
  Gemma4Model() = default;
  std::shared_ptr<gguf::GgufFile> file_;
  Backend* backend_ = nullptr;
  Gemma4Config config_;
  Gemma4Weights weights_;
};

}  // namespace gs
