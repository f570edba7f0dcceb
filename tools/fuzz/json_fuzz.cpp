// libFuzzer target: the structured-output grammar (text/json_grammar.h) on hostile schemas and
// hostile output bytes.
//
// Input: a schema (JSON text) up to the first NUL byte, then the bytes to feed. A schema
// that begins with '!' is read (without it) in the Gemma tool-call form. A schema that does
// not parse, or that the compiler refuses, gives any JSON object. Properties: no crash, no
// sanitizer finding; a refused byte leaves the matcher as it was; whatever the JSON-form
// matcher takes whole is JSON that nlohmann::json accepts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "text/json_grammar.h"

namespace {

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "json_fuzz: %s\n%.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  std::string_view schema_text = in.substr(0, nul);
  const bool gemma = !schema_text.empty() && schema_text[0] == '!';
  if (gemma) schema_text.remove_prefix(1);
  const auto syntax = gemma ? gs::text::JsonSyntax::kGemmaCall : gs::text::JsonSyntax::kJson;
  const std::string_view bytes = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  std::shared_ptr<const gs::text::JsonGrammar> grammar = gs::text::JsonGrammar::any_object();
  const nlohmann::json schema = nlohmann::json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_discarded()) {
    auto compiled = gs::text::JsonGrammar::from_schema(schema, "schema", syntax);
    if (compiled.ok()) grammar = *compiled;
  }
  gs::text::JsonMatcher m(grammar);
  size_t taken = 0;
  for (const char c : bytes) {
    const gs::text::JsonMatcher before = m;
    if (!m.feed(static_cast<unsigned char>(c))) {
      // Refused: the matcher must be as it was (it answers every probe byte the same).
      for (const unsigned char probe : std::string_view("\"}],:0a \nt{[-.e\\u\x80")) {
        gs::text::JsonMatcher x = m;
        gs::text::JsonMatcher y = before;
        if (x.feed(probe) != y.feed(probe) || x.can_end() != y.can_end() || x.done() != y.done() ||
            x.free_string_room() != y.free_string_room()) {
          fail("a refused byte changed the matcher", bytes.substr(0, taken + 1));
        }
      }
      break;
    }
    ++taken;
  }
  if (!gemma && grammar->syntax() == gs::text::JsonSyntax::kJson && taken == bytes.size() && m.can_end() &&
      !nlohmann::json::accept(bytes)) {
    fail("took a text that is not JSON", bytes);
  }
  return 0;
}
