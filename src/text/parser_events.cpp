// Assembling parser events into a message, and the canonical (merged) event list.
#include "text/output_parser.h"

namespace gs::text {

void MessageAccumulator::add(const ParserEvent& e) {
  switch (e.kind) {
    case ParserEventKind::kContent:
      message_.content += e.text;
      break;
    case ParserEventKind::kReasoning:
      message_.reasoning_content += e.text;
      break;
    case ParserEventKind::kToolCallBegin:
      message_.tool_calls.push_back(ParsedToolCall{e.tool_id, e.tool_name, {}});
      break;
    case ParserEventKind::kToolCallArgs:
      if (e.tool_index >= 0 && static_cast<size_t>(e.tool_index) < message_.tool_calls.size()) {
        message_.tool_calls[static_cast<size_t>(e.tool_index)].arguments_json += e.text;
      }
      break;
    case ParserEventKind::kToolCallEnd:
      break;
    case ParserEventKind::kStop:
      message_.stop = e.text;
      break;
    case ParserEventKind::kEndOfTurn:
      break;
  }
}

void MessageAccumulator::add(const std::vector<ParserEvent>& events) {
  for (const auto& e : events) add(e);
}

ParsedMessage parse_output(std::string_view text, const ParserOptions& options) {
  OutputParser parser(options);
  MessageAccumulator acc;
  acc.add(parser.feed(text));
  acc.add(parser.finish());
  return acc.message();
}

std::vector<ParserEvent> merge_events(const std::vector<ParserEvent>& events) {
  std::vector<ParserEvent> out;
  for (const auto& e : events) {
    const bool mergeable = e.kind == ParserEventKind::kContent || e.kind == ParserEventKind::kReasoning ||
                           e.kind == ParserEventKind::kToolCallArgs;
    if (mergeable && !out.empty() && out.back().kind == e.kind && out.back().tool_index == e.tool_index) {
      out.back().text += e.text;
      out.back().sources.insert(out.back().sources.end(), e.sources.begin(), e.sources.end());
      continue;
    }
    if (mergeable && e.text.empty()) continue;
    out.push_back(e);
  }
  return out;
}

}  // namespace gs::text
