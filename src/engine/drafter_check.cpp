// A drafter's file checked against its target's before any weights load.
#include "engine/drafter_check.h"

#include <string_view>
#include <vector>

#include "gguf/gguf_summary.h"
#include "model/gemma4_config.h"
#include "model/gguf_names.h"

namespace gs {

namespace {

// A drafter's token ids index its target's vocabulary (it reads the target's embedding of the
// newest token and proposes ids the target verifies). One whose own vocabulary is another
// (another order, another length) proposed ids that mean other tokens to the target: the
// output stayed right, since every draft is verified, but nearly every draft was wasted,
// silently. A drafter file without a vocabulary drafts in its target's.
Status check_drafter_vocabulary(const gguf::GgufFile& drafter, const text::Tokenizer& target) {
  if (!drafter.has(names::kTokTokens)) return {};
  GS_ASSIGN_OR_RETURN(const std::vector<std::string_view> tokens, drafter.get_string_array(names::kTokTokens));
  if (tokens.size() != static_cast<size_t>(target.n_vocab())) {
    return make_status(StatusCode::kInvalidArgument,
                       "drafter/target mismatch: metadata '{}' has {} tokens in the drafter and {} in the target",
                       names::kTokTokens, tokens.size(), target.n_vocab());
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view mine = target.token_text(static_cast<int32_t>(i));
    if (tokens[i] != mine) {
      return make_status(StatusCode::kInvalidArgument,
                         "drafter/target mismatch: metadata '{}'[{}] is '{}' in the drafter and '{}' in the target (the "
                         "drafter must share its target's vocabulary)",
                         names::kTokTokens, i, gguf::escape_text(tokens[i], 60), gguf::escape_text(mine, 60));
    }
  }
  return {};
}

}  // namespace

Status drafter_load_error(const Status& st, const std::string& drafter_path) {
  std::string_view why = st.message();
  if (why.rfind(drafter_path + ": ", 0) == 0) why.remove_prefix(drafter_path.size() + 2);
  return make_status(st.code(), "the drafter {}: {}", drafter_path, why);
}

Result<std::shared_ptr<gguf::GgufFile>> check_drafter_files(const gguf::GgufFile& target_file,
                                                            const text::Tokenizer* target_tokenizer,
                                                            const std::string& target_path,
                                                            const std::string& drafter_path) {
  Result<std::shared_ptr<gguf::GgufFile>> drafter = gguf::GgufFile::open_model(drafter_path);
  if (!drafter.ok()) return drafter_load_error(drafter.status(), drafter_path);
  Result<Gemma4Config> config = load_gemma4_config(**drafter);
  if (!config.ok()) return drafter_load_error(config.status(), drafter_path);
  if (!config->is_assistant()) {
    return make_status(StatusCode::kInvalidArgument, "--mtp {} is not a gemma4-assistant (MTP drafter) file",
                       drafter_path);
  }
  if (Status st = text::check_token_scores(**drafter); !st.ok()) {
    return make_status(st.code(), "{}: {}", drafter_path, st.message());
  }
  Result<Gemma4Config> target = load_gemma4_config(target_file);
  if (!target.ok() || target->is_assistant()) return *drafter;
  Status st = target_tokenizer ? check_drafter_vocabulary(**drafter, *target_tokenizer) : Status();
  if (st.ok()) st = pair_assistant_with_target(*target, &*config);
  if (!st.ok()) {
    return make_status(st.code(), "the drafter {} cannot draft for {}: {}", drafter_path, target_path, st.message());
  }
  return *drafter;
}

}  // namespace gs
