// Tokenizer::from_gguf: the `tokenizer.ggml.*` metadata read into a Vocab (spec §8.1, §8.2).
// Every error names the file once and the key at fault, with the value as stored.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/log.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_summary.h"
#include "gguf/tokenizer_keys.h"
#include "text/tokenizer.h"

namespace gs::text {
namespace {

// `s` with the file's path in front, once (the reader's own errors already start with it).
Status in_file(const gguf::GgufFile& file, const Status& s) {
  const std::string& path = file.path();
  if (s.message().rfind(path + ": ", 0) == 0) return s;
  return Status(s.code(), fmt::format("{}: {}", path, s.message()));
}

// The id stored under `key`, which must name one of the n_tokens tokens.
Result<int32_t> token_id(const gguf::GgufFile& file, std::string_view key, size_t n_tokens) {
  GS_ASSIGN_OR_RETURN(const uint32_t id, file.get_u32(key));
  if (id >= n_tokens) {
    return make_status(StatusCode::kInvalidArgument, "tokenizer: metadata '{}' = {} is outside the vocabulary of {} tokens",
                       key, id, n_tokens);
  }
  return static_cast<int32_t>(id);
}

// A special token id that nothing here uses to encode, decode or stop (padding, mask): one the
// file gets wrong (another type, or outside the vocabulary) is a warning naming the file, the
// key and the value, and is read as absent (decision 0058). The id, or nullopt when absent or
// ignored.
std::optional<int32_t> unused_token_id(const gguf::GgufFile& file, std::string_view key, size_t n_tokens) {
  if (!file.has(key)) return std::nullopt;
  Result<int32_t> id = token_id(file, key, n_tokens);
  if (id.ok()) return *id;
  std::string why = id.status().message();
  if (why.rfind(file.path() + ": ", 0) == 0) why.erase(0, file.path().size() + 2);
  GS_LOG_WARN("{}: {}; ignored (nothing uses it)", file.path(), why);
  return std::nullopt;
}

}  // namespace

Status check_token_scores(const gguf::GgufFile& file) {
  const gguf::KeyValue* scores = file.find(names::kTokScores);
  if (scores == nullptr) return {};
  if (scores->type != gguf::ValueType::kArray || scores->elem_type != gguf::ValueType::kF32) {
    const std::string found = scores->type == gguf::ValueType::kArray
                                  ? fmt::format("array of {}", gguf::value_type_name(scores->elem_type))
                                  : std::string(gguf::value_type_name(scores->type));
    return make_status(StatusCode::kInvalidArgument,
                       "tokenizer: metadata '{}' is {}; expected an array of f32 (one score per token)",
                       names::kTokScores, found);
  }
  const gguf::KeyValue* tokens = file.find(names::kTokTokens);
  if (tokens == nullptr || tokens->type != gguf::ValueType::kArray) {
    return make_status(StatusCode::kInvalidArgument, "tokenizer: metadata '{}' has {} entries but '{}' is {}",
                       names::kTokScores, scores->count, names::kTokTokens,
                       tokens == nullptr ? "missing" : "not an array");
  }
  if (scores->count != tokens->count) {
    return make_status(StatusCode::kInvalidArgument, "tokenizer: metadata '{}' has {} entries but '{}' has {} tokens",
                       names::kTokScores, scores->count, names::kTokTokens, tokens->count);
  }
  return {};
}

namespace {

Result<Tokenizer::Vocab> read_vocab(const gguf::GgufFile& file) {
  GS_ASSIGN_OR_RETURN(const std::string_view model, file.get_string(names::kTokModel));
  if (model != "gemma4") {
    return make_status(StatusCode::kUnimplemented,
                       "tokenizer: {} = \"{}\" is not supported (only \"gemma4\")", names::kTokModel,
                       gguf::escape_text(model, 64));
  }
  Tokenizer::Vocab v;
  {
    GS_ASSIGN_OR_RETURN(auto tokens, file.get_string_array(names::kTokTokens));
    v.tokens.reserve(tokens.size());
    for (const auto s : tokens) v.tokens.emplace_back(s);
  }
  // Never read (merge ranks order the BPE), but a malformed array is a malformed file, which
  // llama.cpp would read past the end of (float[n_tokens]).
  GS_RETURN_IF_ERROR(check_token_scores(file));
  if (file.has(names::kTokTypes)) {
    GS_ASSIGN_OR_RETURN(auto types, file.get_int_array(names::kTokTypes));
    if (types.size() != v.tokens.size()) {
      return make_status(StatusCode::kInvalidArgument, "tokenizer: metadata '{}' has {} entries but '{}' has {} tokens",
                         names::kTokTypes, types.size(), names::kTokTokens, v.tokens.size());
    }
    v.types.reserve(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] < 0 || types[i] > 6) {
        return make_status(StatusCode::kInvalidArgument, "tokenizer: {}[{}] = {} is not a token type",
                           names::kTokTypes, i, types[i]);
      }
      v.types.push_back(static_cast<TokenType>(types[i]));
    }
  }
  {
    GS_ASSIGN_OR_RETURN(auto merges, file.get_string_array(names::kTokMerges));
    v.merges.reserve(merges.size());
    for (const auto s : merges) v.merges.emplace_back(s);
  }
  // Absent key: the token spelled `text`, if any (spec Decision 4: never a fixed id).
  const auto by_text = [&](std::string_view text, int32_t* out) {
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      if (v.tokens[i] == text) {
        *out = static_cast<int32_t>(i);
        break;
      }
    }
  };
  // The ids the engine uses are refused when wrong: BOS begins every prompt, EOS (and EOT
  // below) end the output, UNK stands for text no token spells (decision 0058).
  const auto special = [&](std::string_view key, std::string_view text, int32_t* out) -> Status {
    if (file.has(key)) {
      GS_ASSIGN_OR_RETURN(*out, token_id(file, key, v.tokens.size()));
      return Status::ok_status();
    }
    by_text(text, out);
    return Status::ok_status();
  };
  GS_RETURN_IF_ERROR(special(names::kTokBos, "<bos>", &v.bos_id));
  GS_RETURN_IF_ERROR(special(names::kTokEos, "<eos>", &v.eos_id));
  GS_RETURN_IF_ERROR(special(names::kTokUnk, "<unk>", &v.unk_id));
  // Padding is never used (nothing is batched by padding) and the mask token is for training:
  // a wrong id is a warning and is read as absent.
  if (const auto pad = unused_token_id(file, names::kTokPad, v.tokens.size())) {
    v.pad_id = *pad;
  } else {
    by_text("<pad>", &v.pad_id);
  }
  (void)unused_token_id(file, names::kTokMask, v.tokens.size());
  // llama.cpp adds BOS for gemma4 whatever the file says (spec §8.1); so do we.
  v.add_bos = true;
  if (file.has(names::kTokAddEos)) {
    GS_ASSIGN_OR_RETURN(v.add_eos, file.get_bool(names::kTokAddEos));
  }
  if (file.has(names::kTokEot)) {
    GS_ASSIGN_OR_RETURN(const int32_t eot, token_id(file, names::kTokEot, v.tokens.size()));
    v.extra_eog.push_back(eot);
  }
  return v;
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  Result<Vocab> vocab = read_vocab(file);
  if (!vocab.ok()) return in_file(file, vocab.status());
  Result<std::shared_ptr<const Tokenizer>> tok = from_vocab(std::move(vocab).value());
  if (!tok.ok()) return in_file(file, tok.status());
  return tok;
}

}  // namespace gs::text
