// The Gemma 4 tokenizer (`tokenizer.ggml.model = "gemma4"`), built from GGUF metadata.
//
// Encoding (spec §8.3): split out special-token text (USER_DEFINED tokens always, CONTROL
// and UNKNOWN tokens only with parse_special), escape spaces as U+2581, pre-split each raw
// fragment into runs of newlines and runs of everything else, then byte-pair-merge each
// run over its code points by merge rank (lowest rank first, leftmost on ties), falling
// back to <0xHH> byte tokens for pieces missing from the vocabulary. The BPE is a
// priority queue over a linked list of symbols: O(n log n) in the length of a run.
//
// Every special token is found by its text (spec Decision 4); no id is hard-coded.
// A Tokenizer is immutable after construction; all const methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "text/text_span.h"

namespace gs::gguf {
class GgufFile;
}

namespace gs::text {

// Token types as stored in `tokenizer.ggml.token_type` (llama.cpp's llama_token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <bos>, <eos>, <|turn>, <turn|>, ...: text only with parse/render special
  kUserDefined = 4,  // <|channel>, <|tool_call>, <|"|>, ...: always matched and rendered
  kUnused = 5,
  kByte = 6,         // <0x00> .. <0xFF>
};

inline constexpr int32_t kNoToken = -1;

struct DecodeOptions {
  // Render CONTROL tokens (<bos>, <|turn>, <turn|>, ...) as their text. USER_DEFINED
  // tokens (<|channel>, <|tool_call>, <|"|>, ...) are always rendered: the output parser
  // needs to see them.
  bool render_special = false;
  // Render the CONTROL tokens that are Gemma 4 markup (<|turn>, <turn|>, <|think|>, <|tool>,
  // <tool|>) as their text, other CONTROL tokens as "": the output parser must see a turn
  // opener, or the role word after it ("model\n") would read as content.
  bool render_markup = false;
};

// `tokenizer.ggml.scores`, where a file has it: an array of f32, one per entry of
// `tokenizer.ggml.tokens` (llama.cpp reads it as float[n_tokens] without looking; the Gemma 4
// tokenizer ranks merges and never uses it). Absent passes. Errors (kInvalidArgument) name the
// key: "tokenizer: metadata 'tokenizer.ggml.scores' is array of i32; expected an array of f32
// (one score per token)", "... has 3 entries but 'tokenizer.ggml.tokens' has 4 tokens".
Status check_token_scores(const gguf::GgufFile& file);

class Tokenizer {
 public:
  // Builds the tokenizer from `tokenizer.ggml.*` metadata. The GgufFile may be closed
  // afterwards (everything is copied). Errors: kNotFound (tokens or merges missing),
  // kUnimplemented (a tokenizer model other than "gemma4"), kInvalidArgument (arrays of
  // different lengths, an unparseable merge, a bos/eos/unknown/eot_token_id of another type
  // or outside the vocabulary: "tokenizer: metadata 'tokenizer.ggml.eos_token_id' = 99 is
  // outside the vocabulary of 6 tokens"). A padding_token_id or mask_token_id that is wrong the
  // same way is a warning (logged, naming the file, key and value) and is read as absent
  // (decision 0058): nothing uses them.
  static Result<std::shared_ptr<const Tokenizer>> from_gguf(const gguf::GgufFile& file);

  // Same, from plain arrays (tests, tools). `types` may be empty (all NORMAL, except
  // pieces spelled <0xHH>, which are BYTE).
  struct Vocab {
    std::vector<std::string> tokens;
    std::vector<TokenType> types;
    std::vector<std::string> merges;  // "left right", split at the first space after byte 0
    int32_t bos_id = kNoToken;
    int32_t eos_id = kNoToken;
    int32_t unk_id = kNoToken;
    int32_t pad_id = kNoToken;
    bool add_bos = true;
    bool add_eos = false;
    std::vector<int32_t> extra_eog;  // more end-of-generation ids (an eot_token_id)
  };
  static Result<std::shared_ptr<const Tokenizer>> from_vocab(Vocab vocab);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text` (bytes; invalid UTF-8 is kept byte for byte through byte
  // fallback). add_special: prepend BOS when add_bos() (and append EOS when add_eos()).
  // parse_special: also match CONTROL/UNKNOWN token text such as "<bos>" or "<|turn>"
  // (USER_DEFINED token text is matched either way, as llama.cpp does).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // Appends to `out` instead of returning a new vector.
  void encode_into(std::string_view text, bool add_special, bool parse_special,
                   std::vector<int32_t>* out) const;

  // Encodes a prompt from render_chat_prompt: CONTROL/UNKNOWN token text is matched only
  // where `markup` (sorted spans) says the renderer wrote exactly that token; USER_DEFINED
  // text is matched everywhere as in encode(). So "<|turn>" or "<turn|>" typed inside a
  // message stays text and cannot open or close a turn (prompt injection). Elsewhere the
  // result equals encode(text, add_special, /*parse_special=*/true).
  std::vector<int32_t> encode_prompt(std::string_view text, std::span<const TextSpan> markup,
                                     bool add_special) const;

  // Text of `ids`. Errors: kOutOfRange naming the first id outside [0, n_vocab). Byte
  // tokens are assembled into UTF-8; a sequence that stays invalid becomes U+FFFD, so the
  // result is always valid UTF-8.
  Result<std::string> decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  // The bytes one token contributes to decoded text: NORMAL and UNUSED with U+2581 turned
  // into a space, BYTE as its single raw byte (possibly half a UTF-8 character),
  // USER_DEFINED as its text, CONTROL/UNKNOWN as "" unless render_special. "" for an
  // invalid id.
  std::string_view token_to_piece(int32_t id, bool render_special = false) const;
  // The piece under `options` (render_special, then render_markup).
  std::string_view token_to_piece(int32_t id, const DecodeOptions& options) const;
  // The vocabulary entry itself ("▁Hello", "<0x0A>", "<|turn>"); "" for an invalid id.
  std::string_view token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;  // kUndefined for an invalid id
  bool is_valid(int32_t id) const { return id >= 0 && id < n_vocab(); }
  int32_t n_vocab() const;
  size_t n_merges() const;

  // Id of the vocabulary entry spelled exactly `text`, of any type ("<|turn>", "▁Hello").
  std::optional<int32_t> find_token(std::string_view text) const;

  int32_t bos_id() const;  // kNoToken when the vocabulary has none
  int32_t eos_id() const;
  int32_t unk_id() const;
  int32_t pad_id() const;
  // How many of the 256 byte values encode() cannot keep: those with no <0xHH> token, when
  // the vocabulary has no unknown token either (0 otherwise). Text outside the merges'
  // reach loses such bytes, so a loader should say so.
  int bytes_without_fallback() const;
  bool add_bos() const;  // forced true for gemma4 (spec §8.1: llama.cpp overrides the file)
  bool add_eos() const;
  // End-of-generation ids: EOS, "<turn|>", "<|tool_response>" (and "<end_of_turn>" or an
  // `eot_token_id` when present), found by text; sorted, no duplicates.
  const std::vector<int32_t>& eog_ids() const;
  bool is_eog(int32_t id) const;

  // Work counter of the last encode on this thread: merges applied plus queue pushes.
  // Lets tests assert O(n log n) growth without timing anything.
  static uint64_t last_encode_work();
  // Empties the memo of encoded segments (words repeat, so encode() remembers the ids of short
  // segments, in a few memos that encode calls lease from a pool: memory does not grow with the
  // number of threads that encode). For benchmarks and tests of cold encoding; call it while
  // no other thread encodes.
  static void clear_thread_cache();

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gs::text
