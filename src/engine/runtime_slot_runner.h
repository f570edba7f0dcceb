// The SlotRunner over the real model runtime: a Gemma 4 target (and optionally its MTP
// drafter) on a Backend, its KV cache, per-sequence samplers. The same code runs on any
// backend; it talks only to the runtime and model APIs.
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/engine_factory.h"
#include "engine/slot_runner.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs {

// Loads the target (and drafter) named in `options` on the chosen device. `target_file` is
// the already-opened target GGUF; the tokenizer gives the end-of-generation ids.
Result<std::unique_ptr<SlotRunner>> create_runtime_slot_runner(const EngineOptions& options,
                                                               std::shared_ptr<gguf::GgufFile> target_file,
                                                               const text::Tokenizer& tokenizer);

}  // namespace gs
