// Whether the alternatives of a JSON Schema `oneOf` can share a value (decision 0027 point
// 11). The grammar holds a oneOf as an anyOf (at least one alternative matches); that is
// exactly oneOf only where no value matches two, which this proves or fails to prove.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>

namespace gs::text {

// The schema a "$ref" value names, or null when it names none (the compiler reports that).
using SchemaRefResolver = std::function<const nlohmann::json*(const nlohmann::json& ref)>;

// The first pair (i, j), i < j, of `alternatives` (a oneOf's array of schemas) that this
// cannot prove to share no value, each alternative read together with `beside` (the schema
// that holds the oneOf, whose other keywords hold for every alternative); nullopt when every
// pair is proven apart. Conservative: a pair is apart only by one of these, for every JSON
// kind both allow (a value's kind from `type`, `const` and `enum`; "integer" is a number):
//   - every `const` / `enum` value of one side is excluded by the other (its type, enum,
//     number bounds or string lengths);
//   - numbers: the two `minimum` / `maximum` / `exclusive*` ranges do not meet;
//   - strings: the two `minLength` .. `maxLength` ranges do not meet;
//   - objects: a key both require whose two schemas are apart (a discriminator: `"kind":
//     {"const": "a"}`), or a key one requires that the other, closed by
//     `additionalProperties: false`, does not declare.
// `$ref` (through `resolve`) and `allOf` add their keywords; `anyOf` and a nested `oneOf`
// limit the kinds to those of their alternatives. Every other keyword is left out, which
// only makes an alternative seem larger. Bounded work (kOneOfProofBudget schema reads and
// comparisons): a schema too large or deep to decide within it is not proven apart, and the
// answer says so (out_of_budget: the pair is where the work stopped, not one shown to
// overlap). Alternatives that are all consts or enums of scalars (beside annotations) are
// proven apart at once, by value, when no value is listed twice, whatever their number.
inline constexpr long long kOneOfProofBudget = 200000;
struct OneOfOverlap {
  size_t first = 0;
  size_t second = 0;
  bool out_of_budget = false;
};
std::optional<OneOfOverlap> first_overlapping_alternatives(const nlohmann::json& alternatives,
                                                           const nlohmann::json& beside,
                                                           const SchemaRefResolver& resolve);

}  // namespace gs::text
