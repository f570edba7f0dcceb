// One line of text per parser event sequence, for comparisons and failure messages; shared by
// the output-parser tests and the text fuzzer (tools/fuzz/text_fuzz.cpp), so no gtest here.
#pragma once

#include <string>
#include <vector>

#include "text/output_parser.h"

namespace gs::text::test_util {

inline std::string describe(const std::vector<ParserEvent>& events) {
  std::string s;
  for (const auto& e : events) {
    switch (e.kind) {
      case ParserEventKind::kContent: s += "content[" + e.text + "] "; break;
      case ParserEventKind::kReasoning: s += "reasoning[" + e.text + "] "; break;
      case ParserEventKind::kToolCallBegin:
        s += "begin#" + std::to_string(e.tool_index) + "(" + e.tool_name + "," + e.tool_id + ") ";
        break;
      case ParserEventKind::kToolCallArgs: s += "args#" + std::to_string(e.tool_index) + "[" + e.text + "] "; break;
      case ParserEventKind::kToolCallEnd: s += "end#" + std::to_string(e.tool_index) + " "; break;
      case ParserEventKind::kStop: s += "stop[" + e.text + "] "; break;
      case ParserEventKind::kEndOfTurn: s += "end-of-turn "; break;
    }
  }
  return s;
}

}  // namespace gs::text::test_util
