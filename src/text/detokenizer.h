// Incremental detokenizer: token ids in, UTF-8-complete text out (never half a character).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "text/tokenizer.h"
#include "text/utf8.h"

namespace gs::text {

// Streams the text of generated tokens. Byte-fallback tokens that form one character are
// held until the character is complete (bug-case 27); an invalid sequence becomes U+FFFD;
// finish() drops an incomplete tail (bug-case 58). Ids outside the vocabulary add nothing.
// The Tokenizer must outlive the decoder. Not thread-safe (one per request).
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tokenizer, DecodeOptions options = {});

  // Text completed by this token (possibly empty while a character is incomplete).
  std::string push(int32_t id);
  std::string push(std::span<const int32_t> ids);
  // Ends the stream; returns "" (incomplete bytes are dropped) and resets for reuse.
  std::string finish();
  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return utf8_.pending_bytes(); }

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  Utf8Assembler utf8_;
};

}  // namespace gs::text
