// GGUF metadata keys of the tokenizer (spec §8.1). The text layer cannot see
// model/gguf_names.h (it sits below model), so it spells the few keys it reads here.
#pragma once

#include <string_view>

namespace gs::text::keys {

inline constexpr std::string_view kModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTokenTypes = "tokenizer.ggml.token_type";
inline constexpr std::string_view kMerges = "tokenizer.ggml.merges";
inline constexpr std::string_view kBosId = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view kEosId = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view kUnkId = "tokenizer.ggml.unknown_token_id";
inline constexpr std::string_view kPadId = "tokenizer.ggml.padding_token_id";
inline constexpr std::string_view kEotId = "tokenizer.ggml.eot_token_id";
inline constexpr std::string_view kAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr std::string_view kAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

}  // namespace gs::text::keys
