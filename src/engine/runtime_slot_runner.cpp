// The SlotRunner over the model runtime (waits for the runtime's forward pass to land).
#include "engine/runtime_slot_runner.h"

namespace gs {

Result<std::unique_ptr<SlotRunner>> create_runtime_slot_runner(const EngineOptions& options,
                                                               std::shared_ptr<gguf::GgufFile> target_file,
                                                               const text::Tokenizer& tokenizer) {
  (void)options;
  (void)target_file;
  (void)tokenizer;
  return Status(StatusCode::kUnimplemented,
                "this build has no model runtime yet (the Gemma 4 forward pass has not landed)");
}

}  // namespace gs
