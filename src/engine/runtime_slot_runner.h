// The SlotRunner over the real model runtime: a Gemma 4 target (and optionally its MTP
// drafter) on a Backend, its KV cache, per-sequence samplers. The same code runs on any
// backend; it talks only to the runtime and model APIs.
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/engine_factory.h"
#include "engine/slot_runner.h"
#include "gguf/gguf_reader.h"
#include "runtime/model_runner.h"
#include "text/tokenizer.h"

namespace gs {

// Loads the target (and drafter) named in `options` on the chosen device. `target_file` is
// the already-opened target GGUF; the tokenizer gives the end-of-generation ids.
Result<std::unique_ptr<SlotRunner>> create_runtime_slot_runner(const EngineOptions& options,
                                                               std::shared_ptr<gguf::GgufFile> target_file,
                                                               const text::Tokenizer& tokenizer);

// The error for a ModelRunner that could not be set up for lack of memory (`why`, its status,
// and `part`, what failed), as serve and run print it: what did not fit, its size, the KV
// cache allocated before it (`kv_bytes` for `options.n_slots` slots of `n_ctx` positions) and
// the flags that shrink it: "the KV cache of 4 slots x 2000000000 positions each (...) does not
// fit: ...; lower --ctx-size (positions per slot) or --parallel", "the forward pass buffers for
// 131072 rows do not fit beside the KV cache of 1 slot x 131072 positions (0.4 GB): cpu
// backend: cannot allocate ...; lower --ubatch (rows per pass) or --ctx-size", the logits' and
// hidden states' naming --parallel and --draft-max where there are several slots or drafts.
// All kResourceExhausted.
Status runner_setup_error(const Status& why, RunnerPart part, const EngineOptions& options, int32_t n_ctx,
                          double kv_bytes, const RunnerOptions& ro);

}  // namespace gs
