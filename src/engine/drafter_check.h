// The checks of an MTP drafter against its target that need only the two files, made before
// any weights load: serve and run make them before the target's weights go to the device,
// bench before its calibration and benchmarks (decision 0053), all with the same errors.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs {

// `drafter_path` (any shard of a split model) must open as a GGUF whose config loads, be a
// gemma4-assistant, have sound token scores, have its target's vocabulary where it carries one,
// and have shapes that pair with the target's (pair_assistant_with_target: widths, vocabulary
// size, each layer's head dim, KV heads, RoPE and sliding window). `target_file` is the opened
// target, `target_path` its name as the user gave it, `target_tokenizer` its tokenizer (null: the
// vocabularies are not compared, for bench, which reads no tokenizer). A
// target whose config does not load or that is itself an assistant passes: the caller refuses
// the target by its own errors. Errors (the codes of the failed step), as serve has them:
//   "the drafter D: <why it does not open or load>",
//   "--mtp D is not a gemma4-assistant (MTP drafter) file",
//   "D: <token scores>",
//   "the drafter D cannot draft for T: <the mismatch, naming both values>".
// Returns the opened drafter file, for its weights to load from (Gemma4Model::from_file), so
// that the file is opened and its header read once (decision 0055).
Result<std::shared_ptr<gguf::GgufFile>> check_drafter_files(const gguf::GgufFile& target_file, const text::Tokenizer* target_tokenizer,
                           const std::string& target_path, const std::string& drafter_path);

// A failure to open or load the drafter `drafter_path` as "the drafter D: <why>", the path
// named once (the loaders' messages start with it already); the code is st's.
Status drafter_load_error(const Status& st, const std::string& drafter_path);

}  // namespace gs
