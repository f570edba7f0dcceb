// Structured output (response_format json_object / json_schema, decision 0027): a JSON
// Schema compiled into a tree of value nodes, and a byte-level matcher that accepts exactly
// the prefixes of JSON texts the schema allows. The engine asks it, token by token, which
// tokens may come next (engine/json_constraint.h).
#pragma once

#include <bitset>
#include <climits>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace gs::text {

class RegexDfa;
struct RegexBudget;

// Most declared properties of one object, and most values of one enum.
inline constexpr int kJsonMaxKeys = 128;
// Deepest nesting of objects and arrays the matcher accepts.
inline constexpr int kJsonMaxDepth = 64;
// Whitespace between tokens is one space, or a newline and at most this many spaces or tabs
// of indentation: what compact and pretty-printed JSON use, and no room for a model to run
// on in blank lines (decision 0027).
inline constexpr int kJsonMaxIndent = 40;
// Most digits of a number's integer part and of its fraction (exponent: 2, so that every
// number is a finite double).
inline constexpr int kJsonMaxDigits = 20;
// Most digits of an integer's value where its bounds need no more: every one fits an int64
// (and "-0" is not written). Bounds of more digits widen it to theirs (NumberForm).
inline constexpr int kJsonMaxIntegerDigits = 18;
// The largest magnitude of such an integer, 10^18 - 1.
inline constexpr int64_t kJsonMaxInteger = 999'999'999'999'999'999;
// Most digits, integer part and fraction together, of a number whose digits are checked
// against bounds or a multipleOf (NumberForm): what a 128-bit integer holds.
inline constexpr int kJsonMaxExactDigits = 38;

// A number in units of 10^-e (NumberForm), exact up to 10^38 in magnitude.
__extension__ typedef __int128 JsonInt;
__extension__ typedef unsigned __int128 JsonUInt;
// 10^38: a bound of this magnitude or more bounds nothing the matcher writes (JsonGrammar::Node
// int_min / int_max at -/+ this: no bound).
inline constexpr JsonInt kJsonNoBound = static_cast<JsonInt>(10'000'000'000'000'000'000ULL) * 10'000'000'000'000'000'000ULL;

// How the value is written: JSON (RFC 8259), or the argument form of a Gemma 4 tool call
// (spec "Value formatting inside tool declarations/calls"): bare keys (`{city:...}`),
// strings between `<|"|>` delimiters with their text as it is (no escapes), numbers,
// true / false / null and lists as in JSON, and no whitespace between tokens.
enum class JsonSyntax { kJson, kGemmaCall };

class JsonGrammar {
 public:
  enum Kind : uint8_t {
    kObject = 1,
    kArray = 2,
    kString = 4,
    kNumber = 8,
    kTrue = 16,
    kFalse = 32,
    kNull = 64,
    kAnyKind = 127,
  };
  static constexpr int32_t kAny = -1;  // node index of "any JSON value"

  // One schema node: the values it allows, per JSON kind.
  struct Node {
    uint8_t kinds = kAnyKind;
    // Objects: the declared properties (names as the syntax writes them: JSON-escaped
    // without the quotes, or as they are for kGemmaCall) and
    // their nodes; keys outside them only when extra_keys (their values: extra_node).
    std::vector<std::string> keys;
    std::vector<int32_t> key_nodes;
    // Each key's hash as the matcher hashes a key it reads (Frame::key_hash: FNV-1a over the
    // code points of its value; kGemmaCall: over its bytes), so that a free key spelled with
    // escapes ("\u0061") is still the declared key it names. Filled by the compiler.
    std::vector<uint64_t> key_hashes;
    std::bitset<kJsonMaxKeys> required;
    bool extra_keys = true;
    bool closed = false;  // additionalProperties: false (not only "properties" given)
    int32_t extra_node = kAny;
    // minProperties and maxProperties (-1: unbounded): how many keys an object writes,
    // declared and extra together.
    int64_t min_properties = 0;
    int64_t max_properties = -1;
    // A union of object schemas told apart by a discriminator (decision 0027 point 2): the
    // alternatives' nodes (each allows objects only), non-empty only then. Such a node
    // declares one key, the discriminator, required and written first, whose value node is
    // the string enum of all alternatives' values for it; object_dispatch[i] is the
    // alternative (index into object_alts) whose value string_enum[i] of that node is. Once
    // the discriminator's value is read, the object is read under that alternative's node.
    std::vector<int32_t> object_alts;
    std::vector<int32_t> object_dispatch;
    // Arrays.
    int32_t items = kAny;
    int64_t min_items = 0;
    int64_t max_items = -1;  // -1: unbounded
    // Strings: when has_string_enum, one of string_enum (spelled as the keys are).
    bool has_string_enum = false;
    std::vector<std::string> string_enum;
    int64_t min_length = 0;   // code points
    int64_t max_length = -1;  // -1: unbounded
    // pattern and format (those format_pattern enforces), as one automaton over the code
    // points of the string's value (regex_dfa.h); null: none. The compiler merges these.
    std::shared_ptr<const RegexDfa> pattern;
    // The same bounded to min_length..max_length (RegexDfa::bounded; kGemmaCall: without
    // '<'), what the matcher reads; filled by the compiler (fill_string_form).
    std::shared_ptr<const RegexDfa> pattern_form;
    // Numbers: integers only (no fraction or exponent); when has_number_enum, one of
    // number_enum as written by nlohmann::json::dump.
    bool integer = false;
    // Integers (integer set): the least and the greatest value allowed, from minimum,
    // maximum, exclusiveMinimum and exclusiveMaximum (read on any node, applied where
    // integer is set), exact; -/+kJsonNoBound: no bound on that side.
    JsonInt int_min = -kJsonNoBound;
    JsonInt int_max = kJsonNoBound;
    // The same bounds as written (exclusive: the value itself is out), for numbers that may
    // have a fraction and for the numbers of an enum. A long double holds every int64,
    // uint64 and double bound exactly; a double bound is read as its shortest decimal (what
    // was written: 0.1 is 0.1).
    long double num_min = -std::numeric_limits<long double>::infinity();
    long double num_max = std::numeric_limits<long double>::infinity();
    bool num_min_exclusive = false;
    bool num_max_exclusive = false;
    // multipleOf (> 0), 0: none.
    long double multiple_of = 0;
    // How a number of this node is written and checked, filled by the compiler from the
    // fields above (fill_number_form). When exact: in plain decimal notation (no exponent),
    // with at most int_digits digits before the point and frac_digits after it, and its
    // value in units of 10^-frac_digits within units_lo .. units_hi and a multiple of
    // units_step, checked as each digit is written (every integer node; a number node with a
    // bound or a multipleOf). Otherwise a free number (kJsonMaxDigits digits, exponent).
    bool num_exact = false;
    int8_t frac_digits = 0;
    int8_t int_digits = kJsonMaxIntegerDigits;
    JsonInt units_lo = -kJsonMaxInteger;
    JsonInt units_hi = kJsonMaxInteger;
    JsonInt units_step = 1;
    bool has_number_enum = false;
    std::vector<std::string> number_enum;
    // The literal spellings a value of this node may take ("true", "false", "null" as the
    // kinds allow, and number_enum when set), filled by the compiler.
    std::vector<std::string> literals;
    // The fewest levels of object and array nesting that a value of this node needs, the
    // value's own included: as an object (its required properties' values one level down),
    // as an array (its first item one level down when min_items > 0), and of any kind the
    // node allows (0 for a scalar). kJsonMaxDepth + 1 stands for "none within the
    // matcher's depth" (a required property or item that leads back into the schema with
    // no way to stop). Filled by the compiler; the defaults are those of any value.
    int32_t object_depth = 1;
    int32_t array_depth = 1;
    int32_t min_depth = 0;
    // The largest min_depth among the values of the declared keys and of extra keys: where
    // the room left is at least this, every key fits (the matcher skips checking each).
    int32_t key_depth = 0;
    // Compiler scratch, empty once compiled: nodes whose values this union also allows, met
    // while they were still being compiled (a recursion through anyOf / oneOf).
    std::vector<int32_t> deferred;
  };

  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonGrammar> any_object();
  // The values `schema` (a JSON Schema, draft 2020-12 / OpenAI structured outputs subset)
  // allows. Read: type (and lists of types), properties, required, additionalProperties,
  // minProperties, maxProperties, items, minItems, maxItems, enum, const, minLength,
  // maxLength, pattern (regex_dfa.h's subset of ECMA-262), format (the formats
  // string_formats.h enforces; others ignored), anyOf, oneOf, allOf, $ref
  // to "#" and "#/..." ($defs, definitions; JSON pointers in URI fragments, percent-decoded
  // first), and minimum, maximum, exclusiveMinimum, exclusiveMaximum (draft 4's boolean
  // forms too) and multipleOf, held exactly as the digits are written (Node::num_exact;
  // an enum's numbers are kept within them with or without a type). Keywords beside $ref,
  // anyOf, oneOf and allOf apply (allOf). Annotations and value checks the matcher cannot
  // express (description, title, default, an unknown format, ...) are ignored. anyOf
  // alternatives are merged exactly or refused (decision 0027 point 2): different kinds
  // apart, one holding the other, ranges that meet, values listed (at most kJsonMaxKeys),
  // strings as the union of their automata, objects as a tagged union on a required string
  // discriminator (Node::object_alts); kGemmaCall merges what cannot be held loosely
  // instead, as before. oneOf is held as anyOf, so in the JSON syntax it is refused unless
  // its alternatives are proven to share no value (schema_overlap.h); uniqueItems: true is
  // refused unless maxItems is 0 or 1 (kGemmaCall: both are read loosely instead).
  // Errors: kInvalidArgument beginning with the path of the keyword at fault ("schema.
  // properties.a.items: ..."), or with `path` alone when no value of the schema nests
  // within kJsonMaxDepth levels (e.g. a required property whose schema is "#").
  // kGemmaCall: also kInvalidArgument for a property name the bare form cannot spell
  // (empty, or with whitespace, quotes or delimiters). A pattern: kInvalidArgument naming
  // ".pattern" and the feature it cannot hold, or the size past which it is refused
  // (kGemmaCall: such a pattern, or one that needs a '<', is ignored instead); a
  // pattern or format that no string within minLength / maxLength matches, and property
  // counts that no object meets, are refused naming the keyword.
  // `budget`: what its patterns may spend (regex_dfa.h), shared with other schemas compiled
  // for one request (its tools' arguments) so that their count does not multiply the cost;
  // null: a budget of its own.
  static Result<std::shared_ptr<const JsonGrammar>> from_schema(const nlohmann::json& schema,
                                                                 const std::string& path = "schema",
                                                                 JsonSyntax syntax = JsonSyntax::kJson,
                                                                 RegexBudget* budget = nullptr);
  JsonSyntax syntax() const { return syntax_; }

  // Node 0 is the root; kAny gives the node that allows every value.
  const Node& node(int32_t index) const;
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }

 private:
  friend class JsonSchemaCompiler;
  std::vector<Node> nodes_;
  JsonSyntax syntax_ = JsonSyntax::kJson;
};

// What makes a schema broken rather than beyond the grammar, besides its references: a keyword
// that leaves its schema no value (an empty enum, a const outside the enum, an enum no value of
// which fits the keywords beside it, minLength above maxLength, minItems above maxItems,
// property counts or number bounds that nothing meets), read as from_schema reads `schema` in
// `syntax` (an enum emptied only by values the call form cannot write is the call form's limit,
// not the schema's). Errors: that refusal, kInvalidArgument beginning with the keyword's path
// ("parameters.properties.a.enum must be a non-empty array"); OK where the schema compiles or
// is refused for another reason (a keyword the matcher cannot hold).
Status check_schema_values(const nlohmann::json& schema, const std::string& path, JsonSyntax syntax);

// Whether every "$ref" of `schema` that a reading of it reaches resolves within it: the
// references in its keywords that hold schemas (properties, items, anyOf, not, ...), and in
// the schemas those references name ("$defs" entries no reference reaches are not read),
// resolved as from_schema resolves them ("#" and "#/..." JSON pointers). The first that does
// not: kInvalidArgument beginning with its path ("parameters.properties.a.$ref: '#/$defs/x'
// names nothing in the schema"), as from_schema's. Unlike from_schema, it refuses nothing
// else, so it tells a broken schema from one the grammar merely cannot hold.
Status check_schema_refs(const nlohmann::json& schema, const std::string& path = "schema");

// The state of reading one JSON text under a grammar, byte by byte. Copyable and cheap to
// copy (a stack of small frames), so a caller tests a continuation on a copy. In the JSON
// syntax a string's raw text never spells Gemma markup (`<|...`, `<word|>`), which the output
// parser would read as markup and cut out of the content: a '<' that begins one is written
// `\u003c` (an enum value or key is spelled so).
class JsonMatcher {
 public:
  explicit JsonMatcher(std::shared_ptr<const JsonGrammar> grammar);

  // Takes `other`'s reading state (same grammar): a cheap copy for testing continuations.
  void assign_state(const JsonMatcher& other) {
    stack_ = other.stack_;
    ws_run_ = other.ws_run_;
    ws_newline_ = other.ws_newline_;
    done_ = other.done_;
    key_hashes_ = other.key_hashes_;
  }
  // Reads one byte; false when the grammar allows no text that continues with it (the
  // matcher is then unchanged).
  bool feed(unsigned char c);
  // Reads bytes until one is refused; false when one was (the matcher is then left after the
  // bytes before it: test on a copy).
  bool feed(std::string_view bytes);
  // A whole value has been read and nothing may follow it.
  bool done() const { return done_; }
  // The text read so far is a whole value (done, or a top-level number that may go on).
  bool can_end() const;
  // Inside a string whose content is free (no enum, no pattern), at a character boundary: how many
  // more characters it may take (INT64_MAX: no bound), -1 when not in such a string. Any
  // bytes without '"', '\\' or control characters that are whole UTF-8 characters, up to
  // that many, may follow.
  int64_t free_string_room() const;
  bool in_free_string() const { return free_string_room() == INT64_MAX; }

 private:
  // One open value. kValue: a value not begun (its first byte picks the kind).
  struct Frame {
    enum Type : uint8_t { kValue, kObject, kArray, kString, kNumber, kLiteral };
    Type type = kValue;
    uint8_t phase = 0;                 // object / array / number state
    int32_t node = JsonGrammar::kAny;  // the schema node of this value
    // Objects: the declared keys already written, and the node of the key just read.
    std::bitset<kJsonMaxKeys> seen;
    int32_t value_node = JsonGrammar::kAny;
    int64_t count = 0;                 // arrays: items written; objects: keys written
    int32_t hash_base = 0;             // objects: where their extra keys' hashes begin in key_hashes_
    // Strings (values and keys) and literals: the candidates (string enum, declared keys,
    // literal spellings) still equal to the bytes read, and how many bytes were read.
    std::bitset<kJsonMaxKeys> cand;
    int32_t pos = 0;
    bool is_key = false;
    bool free = true;                  // strings: content not limited to the candidates
    uint8_t esc = 0;                   // 0: none; 1: after '\'; 2..5: reading \u digit esc-2
    uint16_t hex = 0;
    bool low_surrogate_next = false;   // a high-surrogate escape must be followed by a low one
    uint8_t utf8_need = 0;             // continuation bytes still due
    uint8_t utf8_lo = 0x80;
    uint8_t utf8_hi = 0xBF;
    int64_t length = 0;                // strings: code points so far
    uint32_t cp = 0;                   // strings: the code point being read (its bits so far; a high surrogate)
    uint32_t cp_min = 0;               // strings: the least code point of the UTF-8 form begun
    int32_t pstate = 0;                // strings with a pattern: the automaton's state
    uint64_t key_hash = 0xCBF29CE484222325ull;  // keys: a hash (FNV-1a) of the code points read
    uint8_t digits = 0;                // numbers: digits of the current part
    bool negative = false;             // numbers: a '-' was read
    JsonInt value = 0;                 // exact numbers: the digits read (integer part, fraction), as an integer
    uint8_t delim = 0;                 // kGemmaCall strings: bytes of a `<|"|>` read (open: 1..4)
    uint8_t mark = 0;                  // kJson strings: a raw '<' (1), then [a-z_]+ (2), then '|' (3)
    bool opening = false;              // kGemmaCall strings: still reading the opening delimiter
  };

  bool feed_value(unsigned char c, bool ws);
  bool feed_object(unsigned char c, bool ws);
  bool feed_array(unsigned char c, bool ws);
  bool feed_string(unsigned char c);
  bool feed_gemma_string(unsigned char c);
  bool feed_bare_key(unsigned char c);
  // A string's content byte: narrows the candidates, counts characters; false if refused.
  bool content_byte(Frame* s, unsigned char c, bool new_char) const;
  // A string's pattern (Node::pattern_form) after a byte: `complete` when code point `cp` is
  // whole (the automaton steps), else the code points the character can still become must
  // lead somewhere viable. True when the node has no pattern. s->length counts the character.
  bool pattern_byte(Frame* s, bool complete, uint32_t cp) const;
  // The top string is whole: checks it against its candidates and bounds, pops it.
  bool close_string(const Frame& s);
  bool feed_number(unsigned char c, bool ws);
  // A number of an exact form (JsonGrammar::Node::num_exact): digits checked against its
  // bounds and multipleOf, no exponent.
  bool feed_exact_number(unsigned char c);
  // The top number frame `f` is a whole number its node allows (exact forms: within bounds,
  // a multiple of the step).
  bool number_complete(const Frame& f) const;
  bool feed_literal(unsigned char c, bool ws);
  // Replaces the top kValue frame by the value that byte c begins; false when `node` allows none.
  bool start_value(unsigned char c);
  // The top frame's value is whole: pops it, then feeds c to what is below (a number or a
  // literal ends at the first byte that cannot continue it). Restores both on failure.
  bool end_and_feed(unsigned char c);
  // Pops the finished top frame and moves its parent past the value.
  void pop_finished();
  bool take_ws(unsigned char c);
  int depth() const;

  std::shared_ptr<const JsonGrammar> grammar_;
  std::vector<Frame> stack_;
  int32_t ws_run_ = 0;       // whitespace bytes since the last token
  bool ws_newline_ = false;  // that whitespace began with a newline
  bool done_ = false;
  // Hashes of the extra keys written in the open objects that count them (minProperties:
  // a key written twice is one property), each object's from its hash_base.
  std::vector<uint64_t> key_hashes_;
};

// Whether `bytes` is a non-empty run of whole, valid UTF-8 characters with no '"', '\\',
// control character (< 0x20) or '<' (which may begin Gemma markup, written only escaped): text
// that a free JSON string may take as it is.
bool json_string_safe(std::string_view bytes);
// The same for the string text of a Gemma 4 tool call: whole, valid UTF-8 characters with no
// '<' (which may begin the closing `<|"|>`) and no NUL.
bool gemma_string_safe(std::string_view bytes);
// The number of UTF-8 characters in `bytes` (the bytes that are not continuation bytes).
int64_t utf8_chars(std::string_view bytes);

}  // namespace gs::text
