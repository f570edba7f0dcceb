// A CLI11 check for 64-bit integer options. CLI11 2.1 reads an integer out of the option's
// range as the type's nearest bound (`--seed 99999999999999999999` was INT64_MAX) and a
// negative one into an unsigned option as its two's complement (`synth --seed -1` was
// 2^64 - 1) instead of refusing it; this check refuses what is not a decimal integer in
// [lo, hi] before the conversion.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <string>
#include <system_error>

namespace gs::cli {

template <typename T>
CLI::Validator exact_integer(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        T v{};
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
          return fmt::format("{} is not a decimal integer in [{}, {}]", s, lo, hi);
        }
        return {};
      },
      fmt::format("INT in [{} - {}]", lo, hi));
}

}  // namespace gs::cli
