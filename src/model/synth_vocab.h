// The vocabulary of synthetic files: the real Gemma 4 special-token strings at their ids
// (spec §8.2), byte-fallback tokens, and ordinary pieces with the merges that build them,
// so that the tokenizer and the chat format work on a synthetic model for real.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gs::synth {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenKind : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kByte = 6 };

struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // TokenKind values
  std::vector<float> scores;
  std::vector<std::string> merges;  // "left right", by rank
};

// The smallest n_vocab with every fixed id (specials up to <turn|> 106, "\n" 107, byte
// tokens <0x00>..<0xFF> at 238..493 as in Gemma 4) and every single-character piece.
int64_t min_vocab_size();

// A vocabulary of exactly n_vocab tokens (n_vocab >= min_vocab_size()). Ids 0..4 are
// <pad> <eos> <bos> <unk> <mask>; the multimodal markers sit at their real ids when
// n_vocab reaches them; free ids take single characters, then word pieces of a small
// English word list (each built by a chain of merges), then "<unusedN>" fillers.
SynthVocab build_vocab(int64_t n_vocab);

}  // namespace gs::synth
