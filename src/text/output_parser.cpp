// Gemma 4 output parser (stub until the implementation lands: everything is content).
#include "text/output_parser.h"

namespace gs::text {

struct OutputParser::State {
  ParserOptions options;
  ParserStats stats;
};

OutputParser::OutputParser(ParserOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
}
OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

std::vector<ParserEvent> OutputParser::feed(std::string_view text) {
  if (text.empty()) return {};
  return {ParserEvent{ParserEventKind::kContent, std::string(text), -1, {}, {}}};
}
std::vector<ParserEvent> OutputParser::finish() { return {}; }
bool OutputParser::in_reasoning() const { return false; }
bool OutputParser::stopped() const { return false; }
const ParserStats& OutputParser::stats() const { return state_->stats; }

void MessageAccumulator::add(const ParserEvent&) {}
void MessageAccumulator::add(const std::vector<ParserEvent>& events) {
  for (const auto& e : events) add(e);
}
ParsedMessage parse_output(std::string_view, const ParserOptions&) { return {}; }
std::vector<ParserEvent> merge_events(const std::vector<ParserEvent>& events) { return events; }

}  // namespace gs::text
