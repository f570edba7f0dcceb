// IncrementalDecoder: token pieces through a UTF-8 assembler.
#include "text/detokenizer.h"

namespace gs::text {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {}

std::string IncrementalDecoder::push(int32_t id) {
  return utf8_.push(tokenizer_->token_to_piece(id, options_));
}

std::string IncrementalDecoder::push(std::span<const int32_t> ids) {
  std::string out;
  for (const int32_t id : ids) out += push(id);
  return out;
}

std::string IncrementalDecoder::finish() { return utf8_.finish(); }

}  // namespace gs::text
