// Lists of integers as people type them on a command line or pipe them in: `bench -p 128,512`,
// `run --prompt-tokens 2,9259`, `tokenize --decode` input ("9259 1902", "1, 2, 3"). One reader,
// so that every such list takes the same forms and refuses the same typos (decision 0053).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gs {

// Reads `text` as integers separated by commas and/or whitespace ("1,2", "1 2", "1, 2" and a
// trailing newline are one list). Each item is a decimal integer: digits, with a leading '-'
// only; no '+', no "0x" (CLI11's own reading took "010" as 8 and "0x10" as 16), no fraction.
// Text with no item at all (empty or whitespace) gives an empty list; callers that need one
// item say so. Errors (kInvalidArgument), naming `what` (the flag or input) and the item by its
// 1-based position: an empty item ("1,,2", ",1", "1,": "item 2 is empty"), an item that is no
// decimal integer ("item 2 'x' is not a decimal integer"), or one outside [lo, hi] ("item 1
// (-5) is outside [0, 2147483647]", an integer past 64 bits included).
Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what, int64_t lo, int64_t hi);

}  // namespace gs
