// The JSON Schema `format`s that structured output enforces on strings, as regular
// expressions that regex_dfa.h compiles (decision 0027).
#pragma once

#include <string_view>

namespace gs::text {

// The anchored pattern whose matches are exactly the strings of `format` this server writes,
// or an empty view for a format it does not enforce (JSON Schema 2020-12 validation section
// 7.2: an implementation may treat an unknown format as an annotation only). Enforced:
// - "date": RFC 3339 section 5.6 full-date, with section 5.7's day limits (months of 30
//   days, February 29 only in leap years: divisible by 4, and by 400 for centuries);
// - "time": RFC 3339 full-time (partial-time and time-offset), hours 00-23, minutes and
//   seconds 00-59 (no leap second 60, which section 5.7 allows only at the end of some
//   days), at most 9 fraction digits; "T" and "Z" as upper or lower case (section 5.6 NOTE);
// - "date-time": full-date "T" full-time, as above;
// - "uuid": RFC 9562 section 4 (RFC 4122 section 3) hex-and-dash form, either case;
// - "ipv4": the dotted-quad of RFC 2673 section 3.2 (JSON Schema 2020-12 validation 7.3.4),
//   numbers 0-255 without leading zeros;
// - "email": a simple form of RFC 5321 section 4.1.2: a Dot-string local part (atext of
//   RFC 5322 section 3.2.3), "@", and a domain of at least two dot-separated labels of
//   letters, digits and inner hyphens, at most 63 characters each (RFC 1034 section 3.5).
//   Quoted local parts and address literals are not written.
std::string_view format_pattern(std::string_view format);

}  // namespace gs::text
