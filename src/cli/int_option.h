// The one check of every integer command-line option (serve, run, bench, inspect, synth):
// a decimal integer in the option's range, the same forms for all (decision 0055).
//
// CLI11 2.1 reads integers with base 0 (`-c 010` was a context of 8, `--port 0x1f90` was
// 8080), reads one out of the type's range as the type's nearest bound, and a negative one
// into an unsigned option as its two's complement. This check runs on the option's text
// before that conversion: it refuses what is not a decimal integer (digits, with a leading
// '-' only: no '+', no "0x", no fraction or exponent, as core/int_list.h reads list items)
// or lies outside [lo, hi], naming the option ("--port: '0x10' is not a decimal integer"),
// and rewrites the text as the value's plain digits, so that CLI11's base-0 reading gives
// the decimal value (`010` is ten). Attach it with `->transform(...)`: `->check(...)` makes
// a validator's rewrite void, and "010" passed as ten was then read as 8.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <string>
#include <system_error>

namespace gs::cli {

// The validator's name: tests/cli checks that every integer option carries it.
inline constexpr const char* kDecimalIntegerCheck = "DECIMAL";

template <typename T>
CLI::Validator decimal_integer(T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  CLI::Validator v(
      [lo, hi](std::string& s) -> std::string {
        const size_t digits_at = !s.empty() && s[0] == '-' ? 1 : 0;
        const bool decimal = s.size() > digits_at && s.find_first_not_of("0123456789", digits_at) == std::string::npos;
        if (!decimal) return fmt::format("'{}' is not a decimal integer (digits, with a leading '-' only)", s);
        T value{};
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        // A negative number for an unsigned option, or one past the type, is out of range too.
        if (ec != std::errc() || end != s.data() + s.size() || value < lo || value > hi) {
          return fmt::format("{} is outside [{}, {}]", s, lo, hi);
        }
        s = fmt::format("{}", value);
        return {};
      },
      fmt::format("INT in [{} - {}]", lo, hi));
  v.name(kDecimalIntegerCheck);
  return v;
}

}  // namespace gs::cli
