// GGUF tokenizer metadata keys (spec §8.1): the one spelling, shared by the text layer
// (which reads them) and the model layer (whose gguf_names.h includes this and writes them).
#pragma once

#include <string_view>

namespace gs::names {

inline constexpr std::string_view kTokModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokPre = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTokScores = "tokenizer.ggml.scores";
inline constexpr std::string_view kTokTypes = "tokenizer.ggml.token_type";
inline constexpr std::string_view kTokMerges = "tokenizer.ggml.merges";
inline constexpr std::string_view kTokBos = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view kTokEos = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view kTokUnk = "tokenizer.ggml.unknown_token_id";
inline constexpr std::string_view kTokPad = "tokenizer.ggml.padding_token_id";
inline constexpr std::string_view kTokMask = "tokenizer.ggml.mask_token_id";
inline constexpr std::string_view kTokEot = "tokenizer.ggml.eot_token_id";
inline constexpr std::string_view kTokAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr std::string_view kTokAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr std::string_view kTokAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

}  // namespace gs::names
