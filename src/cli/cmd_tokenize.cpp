// gemmaserve tokenize: text on stdin -> token ids (or, with --decode, ids -> text), using
// the tokenizer of a GGUF file.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "core/int_list.h"
#include "gguf/gguf_reader.h"
#include "text/tokenizer.h"

namespace gs::cli {
namespace {

struct TokenizeArgs {
  std::string model;
  bool json = false;
  bool parse_special = false;
  bool add_special = false;
  bool decode = false;
  bool render_special = false;
  bool pieces = false;
};

std::string read_stdin() {
  std::string s((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return s;
}

// A vocabulary piece on one line of --pieces' text output: a newline, tab, carriage return
// or other control byte is written as \n, \t, \r or \xNN and a backslash as \\ (a piece that
// is a newline broke the one-id-a-line output). Other bytes, UTF-8 included, are as they are.
std::string line_safe_piece(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (const char ch : piece) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

// Ids from "1 2 3", "1,2,3", "[1,2,3]" or {"ids":[...]}. Errors name the bad item.
Result<std::vector<int32_t>> parse_ids(const std::string& in) {
  std::vector<int32_t> ids;
  const size_t first = in.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (in[first] == '[' || in[first] == '{')) {
    const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status(StatusCode::kInvalidArgument, "input is not valid JSON");
    const nlohmann::json* arr = &j;
    if (j.is_object()) {
      const auto it = j.find("ids");
      if (it == j.end()) return Status(StatusCode::kInvalidArgument, "JSON input needs an \"ids\" array");
      arr = &*it;
    }
    if (!arr->is_array()) return Status(StatusCode::kInvalidArgument, "\"ids\" must be an array");
    for (const auto& v : *arr) {
      if (!v.is_number_integer()) return Status(StatusCode::kInvalidArgument, "ids must be integers");
      // An id above INT64_MAX is an unsigned JSON number: read as int64 it wrapped to a
      // negative id, and the error named an id that was never sent. v.dump() names it as sent.
      const bool too_large = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT32_MAX);
      const int64_t x = too_large ? int64_t{0} : v.get<int64_t>();
      if (too_large || x < INT32_MIN || x > INT32_MAX) {
        return make_status(StatusCode::kOutOfRange, "id {} is out of range", v.dump());
      }
      ids.push_back(static_cast<int32_t>(x));
    }
    return ids;
  }
  // "1 2 3", "1,2,3", "1, 2": one list reader for every such list (core/int_list.h); "1,,2",
  // ",1", "1," and "+1" were read as ids (decision 0053).
  GS_ASSIGN_OR_RETURN(const std::vector<int64_t> list, parse_int_list(in, "the ids on stdin", INT32_MIN, INT32_MAX));
  for (const int64_t v : list) ids.push_back(static_cast<int32_t>(v));
  return ids;
}

int run_tokenize(const TokenizeArgs& a) {
  auto file = gguf::GgufFile::open_model(a.model);
  if (!file.ok()) {
    std::fprintf(stderr, "gemmaserve tokenize: %s\n", file.status().to_string().c_str());
    return 1;
  }
  auto tok = text::Tokenizer::from_gguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "gemmaserve tokenize: %s\n", tok.status().to_string().c_str());
    return 1;
  }
  const std::string input = read_stdin();
  if (a.decode) {
    auto ids = parse_ids(input);
    if (!ids.ok()) {
      std::fprintf(stderr, "gemmaserve tokenize --decode: %s\n", ids.status().to_string().c_str());
      return 1;
    }
    auto out = (*tok)->decode(*ids, text::DecodeOptions{.render_special = a.render_special});
    if (!out.ok()) {
      std::fprintf(stderr, "gemmaserve tokenize --decode: %s\n", out.status().to_string().c_str());
      return 1;
    }
    if (a.json) {
      std::cout << nlohmann::json{{"text", *out}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else {
      std::cout << *out;
    }
    return 0;
  }
  const std::vector<int32_t> ids = (*tok)->encode(input, a.add_special, a.parse_special);
  if (a.json) {
    nlohmann::json j{{"ids", ids}};
    if (a.pieces) {
      auto pieces = nlohmann::json::array();
      for (const int32_t id : ids) pieces.push_back(std::string((*tok)->token_text(id)));
      j["pieces"] = std::move(pieces);
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (a.pieces) {
    for (const int32_t id : ids) std::cout << id << "\t" << line_safe_piece((*tok)->token_text(id)) << "\n";
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

CommandEntry register_tokenize(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* sub = app.add_subcommand(
      "tokenize", "Tokenize text read from stdin with a GGUF's tokenizer (or --decode ids from stdin)");
  sub->add_option("-m,--model", args->model, "GGUF file whose tokenizer to use")->required()->check(CLI::ExistingFile);
  sub->add_flag("--json", args->json, "print {\"ids\": [...]} (with --decode: {\"text\": ...})");
  // The flags of one direction are refused in the other, where they would change nothing
  // (decision 0051): `--decode --pieces` printed the text alone.
  CLI::Option* decode =
      sub->add_flag("--decode", args->decode, "read token ids (\"1 2 3\", \"1,2\", [..] or {\"ids\":[..]}) and print text");
  sub->add_flag("--parse-special", args->parse_special,
                "match special-token text such as <bos> or <|turn> (USER_DEFINED tokens always match)")
      ->excludes(decode);
  sub->add_flag("--add-special", args->add_special, "prepend BOS as the model does for prompts")->excludes(decode);
  sub->add_flag("--render-special", args->render_special, "with --decode: print control tokens as their text")
      ->needs(decode);
  sub->add_flag("--pieces", args->pieces,
                "print each id with its vocabulary piece, a line each (control characters as \\n, \\t, \\xNN; "
                "a backslash as \\\\; not with --decode)")
      ->excludes(decode);
  return {sub, [args] { return run_tokenize(*args); }};
}

}  // namespace gs::cli
