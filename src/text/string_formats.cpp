// Regular expressions of the enforced JSON Schema string formats (string_formats.h).
#include "text/string_formats.h"

namespace gs::text {

namespace {

#define GS_DATE                                                                                \
  "(?:\\d{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1\\d|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|"      \
  "(?:0[13578]|1[02])-31)|(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|"       \
  "[13579][26])00)-02-29)"
#define GS_TIME                                                                                \
  "(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)"
#define GS_IPV4_PART "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)"
#define GS_ATEXT "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
#define GS_LABEL "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

constexpr std::string_view kDate = "^" GS_DATE "$";
constexpr std::string_view kTime = "^" GS_TIME "$";
constexpr std::string_view kDateTime = "^" GS_DATE "[Tt]" GS_TIME "$";
constexpr std::string_view kUuid = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
constexpr std::string_view kIpv4 = "^(?:" GS_IPV4_PART "\\.){3}" GS_IPV4_PART "$";
constexpr std::string_view kEmail = "^" GS_ATEXT "+(?:\\." GS_ATEXT "+)*@" GS_LABEL "(?:\\." GS_LABEL ")+$";

#undef GS_DATE
#undef GS_TIME
#undef GS_IPV4_PART
#undef GS_ATEXT
#undef GS_LABEL

}  // namespace

std::string_view format_pattern(std::string_view format) {
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return kDateTime;
  if (format == "uuid") return kUuid;
  if (format == "ipv4") return kIpv4;
  if (format == "email") return kEmail;
  return {};
}

}  // namespace gs::text
