// parse_int_list (core/int_list.h): the one reader of integer lists on the command line and in
// tokenize's input. Empty items, signs other than '-', hex and octal, fractions and values
// outside the range are refused naming the item (decision 0053).
#include "core/int_list.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace gs {
namespace {

std::vector<int64_t> ok(std::string_view text, int64_t lo = 0, int64_t hi = 1000) {
  auto r = parse_int_list(text, "--list", lo, hi);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : std::vector<int64_t>{};
}

std::string refused(std::string_view text, int64_t lo = 0, int64_t hi = 1000) {
  auto r = parse_int_list(text, "--list", lo, hi);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(IntList, CommasAndWhitespaceSeparate) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(ok("1,2,3"), (V{1, 2, 3}));
  EXPECT_EQ(ok("1 2 3"), (V{1, 2, 3}));
  EXPECT_EQ(ok("1, 2 ,3\n"), (V{1, 2, 3}));
  EXPECT_EQ(ok(" 7 "), (V{7}));
  EXPECT_EQ(ok("010"), (V{10}));  // decimal, not octal
  EXPECT_EQ(ok("-3,4", -5, 5), (V{-3, 4}));
  EXPECT_EQ(ok(""), V{});
  EXPECT_EQ(ok(" \n\t"), V{});
  EXPECT_EQ(ok("-9223372036854775808,9223372036854775807", std::numeric_limits<int64_t>::min(),
               std::numeric_limits<int64_t>::max()),
            (V{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}));
}

// Each was read as a shorter or other list: "1,,2" as 1, 2 (tokenize --decode, bench -p), "+1"
// as 1, "0x10" as 16 and "010" as 8 (CLI11's base-0 reading of bench's lists).
TEST(IntList, MalformedItemsAreNamed) {
  EXPECT_EQ(refused("1,,2"), "--list: item 2 is empty (between commas, or before the first or after the last)");
  EXPECT_EQ(refused(",1").rfind("--list: item 1 is empty", 0), 0u);
  EXPECT_EQ(refused("1,").rfind("--list: item 2 is empty", 0), 0u);
  EXPECT_EQ(refused("1 2, ,3").rfind("--list: item 3 is empty", 0), 0u);
  EXPECT_EQ(refused(","), refused(",5"));
  EXPECT_EQ(refused("1,x"), "--list: item 2 'x' is not a decimal integer");
  EXPECT_EQ(refused("+1"), "--list: item 1 '+1' is not a decimal integer");
  EXPECT_EQ(refused("0x10"), "--list: item 1 '0x10' is not a decimal integer");
  EXPECT_EQ(refused("1.5"), "--list: item 1 '1.5' is not a decimal integer");
  EXPECT_EQ(refused("1e3"), "--list: item 1 '1e3' is not a decimal integer");
  EXPECT_EQ(refused("1;2"), "--list: item 1 '1;2' is not a decimal integer");
  EXPECT_EQ(refused("- 1").rfind("--list: item 1 '-' is not", 0), 0u);
  EXPECT_EQ(refused("5,-5"), "--list: item 2 (-5) is outside [0, 1000]");
  EXPECT_EQ(refused("1001"), "--list: item 1 (1001) is outside [0, 1000]");
  EXPECT_EQ(refused("99999999999999999999"), "--list: item 1 (99999999999999999999) is outside [0, 1000]");
}

}  // namespace
}  // namespace gs
