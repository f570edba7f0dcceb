// Engine tokens -> text -> parsed output deltas for one request.
#include "server/generation.h"

#include <algorithm>
#include <limits>

namespace gs::server {

Generation::Generation(std::shared_ptr<const text::Tokenizer> tokenizer, GenerationPlan plan)
    : tokenizer_(std::move(tokenizer)),
      plan_(std::move(plan)),
      // Chat output goes to the parser, which must see <|turn> (a CONTROL token) to keep
      // the role line after it out of content.
      decoder_(*tokenizer_, text::DecodeOptions{.render_special = false, .render_markup = plan_.chat}),
      stop_matcher_(plan_.chat ? text::StopStrings{} : plan_.stop) {
  // As vLLM's min_tokens: a stop string is matched only where it ends in the text of a token
  // after the first min_tokens, wherever it begins (the engine holds the end-of-generation
  // tokens back as long). Text that may begin one is held back before that too, so one that
  // straddles the boundary is cut whole, streamed or not (decision 0007).
  stop_armed_ = plan_.request.sampling.min_tokens <= 0;
  // The logprobs must spell the returned text (decisions 0053, 0055): where a stop string may
  // cut a raw completion, a token is held until its text is decided; chat tokens are always
  // held until the parser has decided what content their text becomes. None of it is done for
  // a request that asks no logprobs (decision 0058) nor its token ids (release_tokens).
  logprobs_ = plan_.request.n_logprobs >= 0 || plan_.release_tokens;
  hold_tokens_ = logprobs_ && !plan_.chat && !plan_.stop.empty();
  if (plan_.chat) {
    text::ParserOptions options = plan_.parser;
    options.stop_armed = stop_armed_;
    parser_ = std::make_unique<text::OutputParser>(std::move(options));
  }
}

Generation::~Generation() { cancel(); }

Status Generation::start(Engine& engine) {
  GS_ASSIGN_OR_RETURN(stream_, engine.submit(plan_.request));
  return {};
}

void Generation::cancel() {
  if (stream_ && !finished_) stream_->cancel();
}

bool Generation::wait_started(std::chrono::milliseconds wait) {
  if (!stream_ || finished_) return true;
  return stream_->wait_started(wait);
}

void Generation::push_delta(OutputDelta delta, PollResult* out) {
  if ((delta.kind == OutputDelta::Kind::kContent || delta.kind == OutputDelta::Kind::kReasoning ||
       delta.kind == OutputDelta::Kind::kToolCallArgs) &&
      delta.text.empty()) {
    return;
  }
  if (!out->deltas.empty()) {
    OutputDelta& last = out->deltas.back();
    const bool mergeable = delta.kind != OutputDelta::Kind::kToolCallBegin && last.kind == delta.kind &&
                           last.tool_index == delta.tool_index;
    if (mergeable) {
      last.text += delta.text;
      return;
    }
  }
  out->deltas.push_back(std::move(delta));
}

void Generation::consume_parser_events(const std::vector<text::ParserEvent>& events, PollResult* out) {
  for (const auto& ev : events) {
    if (stopped_early_) return;
    if (ev.kind == text::ParserEventKind::kReasoning && !plan_.reasoning_content) continue;
    if (plan_.calls_only && tool_call_done_ &&
        (ev.kind == text::ParserEventKind::kContent || ev.kind == text::ParserEventKind::kReasoning)) {
      // Text after a forced call's complete call: the answer was the calls (decision 0016).
      stopped_early_ = true;
      if (!flushing_) result_.finish_reason = "tool_calls";
      if (stream_) stream_->cancel();
      return;
    }
    accumulator_.add(ev);
    OutputDelta d;
    switch (ev.kind) {
      case text::ParserEventKind::kContent:
        if (logprobs_) attribute_content(ev);
        d.kind = OutputDelta::Kind::kContent;
        d.text = ev.text;
        push_delta(std::move(d), out);
        break;
      case text::ParserEventKind::kReasoning:
        d.kind = OutputDelta::Kind::kReasoning;
        d.text = ev.text;
        push_delta(std::move(d), out);
        break;
      case text::ParserEventKind::kToolCallBegin:
        d.kind = OutputDelta::Kind::kToolCallBegin;
        d.tool_index = ev.tool_index;
        d.tool_id = ev.tool_id;
        d.tool_name = ev.tool_name;
        push_delta(std::move(d), out);
        break;
      case text::ParserEventKind::kToolCallArgs:
        d.kind = OutputDelta::Kind::kToolCallArgs;
        d.tool_index = ev.tool_index;
        d.text = ev.text;
        push_delta(std::move(d), out);
        break;
      case text::ParserEventKind::kToolCallEnd:
        tool_call_done_ = true;
        ++n_calls_done_;
        if (plan_.single_tool_call || (plan_.max_tool_calls > 0 && n_calls_done_ >= plan_.max_tool_calls)) {
          // parallel_tool_calls: false -> the first complete call ends the output, and
          // max_tool_calls N the N-th (the calls after it are never made). A call
          // that only the end of the output closes (cut by max_tokens, or ended without its
          // closer) takes the engine's finish reason instead (end()).
          stopped_early_ = true;
          if (!flushing_) result_.finish_reason = "tool_calls";
          if (stream_) stream_->cancel();
        }
        break;
      case text::ParserEventKind::kStop:
      case text::ParserEventKind::kEndOfTurn:  // the model began another turn: its answer is over
        if (ev.kind == text::ParserEventKind::kStop) result_.stop_sequence = ev.text;
        stopped_early_ = true;
        // OpenAI: a reply that called a tool finishes with "tool_calls", even when a stop
        // string then ends it.
        result_.finish_reason = tool_call_done_ ? "tool_calls" : "stop";
        if (stream_) stream_->cancel();
        break;
    }
  }
}

void Generation::attribute_content(const text::ParserEvent& event) {
  for (size_t k = 0; k < event.text.size(); ++k) {
    // In content order: a byte placed before the last one (text the parser moved) goes with it.
    const uint64_t source = std::max(k < event.sources.size() ? event.sources[k] : last_source_, last_source_);
    last_source_ = source;
    if (held_tokens_.empty() || source < prefix_bytes_) {
      orphan_ += event.text[k];
      continue;
    }
    const uint64_t at = source - prefix_bytes_;
    // The first held token whose bytes end after `at` (the last one where none does).
    auto it = std::upper_bound(held_tokens_.begin(), held_tokens_.end(), at,
                               [](uint64_t a, const HeldToken& h) { return a < h.raw_end(); });
    HeldToken& h = it == held_tokens_.end() ? held_tokens_.back() : *it;
    h.shown += orphan_;
    orphan_.clear();
    h.shown += event.text[k];
  }
}

void Generation::consume_tokens(const std::vector<GeneratedToken>& tokens, PollResult* out) {
  for (const auto& tok : tokens) {
    if (stopped_early_) return;
    n_tokens_seen_++;
    out->n_tokens++;
    if (!stop_armed_ && n_tokens_seen_ > plan_.request.sampling.min_tokens) {
      stop_armed_ = true;
      if (parser_) parser_->arm_stop_strings();
    }
    const size_t carry = decoder_.pending_bytes();
    const std::string piece = decoder_.push(tok.id);
    if (logprobs_) {
      HeldToken held{tok, decoded_size_, decoded_size_ + piece.size(), carry, 0, {}};
      if (hold_tokens_ || plan_.chat)  // a stop string's cut and the content's attribution read it
        held.piece_size = tokenizer_->token_to_piece(tok.id, text::DecodeOptions{.render_markup = plan_.chat}).size();
      held_tokens_.push_back(std::move(held));
    }
    decoded_size_ += piece.size();
    if (plan_.chat) {
      const bool was_reasoning = parser_->in_reasoning();
      consume_parser_events(parser_->feed(piece), out);
      if (was_reasoning || parser_->in_reasoning()) result_.reasoning_tokens++;
      release_tokens(out, stopped_early_);
    } else {
      std::string released = stop_matcher_.feed(piece, stop_armed_);
      result_.content += released;
      OutputDelta d;
      d.text = std::move(released);
      push_delta(std::move(d), out);
      if (stop_matcher_.stopped()) {
        stopped_early_ = true;
        result_.finish_reason = "stop";
        result_.stop_sequence = *stop_matcher_.matched();
        if (stream_) stream_->cancel();
      }
      release_tokens(out, stopped_early_);
    }
  }
}

void Generation::release_tokens(PollResult* out, bool all) {
  if (!logprobs_) return;  // nothing is held
  auto release = [&](const HeldToken& h, int32_t shown_bytes) {
    out->tokens.push_back(ShownToken{h.token, shown_bytes, std::nullopt});
  };
  if (plan_.chat) {
    // A token whose text became no content (the thinking split off, a call, markup) is left
    // out; one whose content is not its whole piece spells that content (decision 0055).
    auto release_chat = [&](HeldToken& h) {
      if (h.shown.empty()) return;
      ShownToken shown{h.token, -1, std::nullopt};
      if (h.shown != tokenizer_->token_to_piece(h.token.id, true)) shown.text = std::move(h.shown);
      out->tokens.push_back(std::move(shown));
    };
    if (all && !orphan_.empty() && !held_tokens_.empty()) {
      held_tokens_.back().shown += orphan_;
      orphan_.clear();
    }
    const uint64_t undecided = all ? std::numeric_limits<uint64_t>::max() : parser_->undecided_from();
    const uint64_t decided_end = undecided == std::numeric_limits<uint64_t>::max() ? undecided
                                 : undecided > prefix_bytes_                       ? undecided - prefix_bytes_
                                                                                   : 0;
    while (!held_tokens_.empty() && held_tokens_.front().raw_end() <= decided_end) {
      release_chat(held_tokens_.front());
      held_tokens_.pop_front();
    }
    return;
  }
  if (!hold_tokens_) {
    for (const HeldToken& h : held_tokens_) release(h, -1);
    held_tokens_.clear();
    return;
  }
  if (all) {
    // Where a stop string ended the output, its text and what follows are not returned: the
    // tokens from its first byte on are left out, and one it begins inside is cut there.
    // Raw completions return the decoded text up to the stop string (content is a prefix of it).
    std::optional<size_t> cut;
    if (stop_matcher_.stopped()) cut = result_.content.size();
    for (const HeldToken& h : held_tokens_) {
      if (!cut) {
        release(h, -1);
        continue;
      }
      // The piece bytes before the cut: the decoded bytes before it, less those that
      // completed a character of earlier pieces (exact for valid UTF-8).
      const int64_t before = static_cast<int64_t>(*cut) - static_cast<int64_t>(h.start) - static_cast<int64_t>(h.carry);
      if (h.piece_size == 0) {
        if (h.start < *cut) release(h, -1);
      } else if (before >= static_cast<int64_t>(h.piece_size)) {
        release(h, -1);
      } else if (before > 0) {
        release(h, static_cast<int32_t>(before));
      }
    }
    held_tokens_.clear();
    return;
  }
  // A token is decided once its text is out of what the matcher still holds; bytes the
  // decoder holds for an unfinished character may begin a stop string too.
  const size_t held = stop_matcher_.held_bytes();
  decided_ = std::max(decided_, decoded_size_ - std::min(held, decoded_size_));
  while (!held_tokens_.empty()) {
    const HeldToken& h = held_tokens_.front();
    const bool decided =
        h.end < decided_ || (h.end == decided_ && (decided_ < decoded_size_ || decoder_.pending_bytes() == 0));
    if (!decided) break;
    release(h, -1);
    held_tokens_.pop_front();
  }
}

void Generation::end(PollResult* out, FinishReason reason, const Usage& usage) {
  flushing_ = true;
  if (!stopped_early_) {
    const std::string tail = decoder_.finish();
    if (plan_.chat) {
      consume_parser_events(parser_->feed(tail), out);
      if (!stopped_early_) consume_parser_events(parser_->finish(), out);
    } else {
      std::string released = stop_matcher_.feed(tail, stop_armed_);
      if (stop_matcher_.stopped()) {
        result_.stop_sequence = *stop_matcher_.matched();
      } else {
        released += stop_matcher_.finish();
      }
      result_.content += released;
      OutputDelta d;
      d.text = std::move(released);
      push_delta(std::move(d), out);
    }
  }
  release_tokens(out, /*all=*/true);
  if (plan_.chat) {
    const text::ParsedMessage& msg = accumulator_.message();
    result_.content = msg.content;
    result_.reasoning_content = msg.reasoning_content;
    result_.tool_calls = msg.tool_calls;
    result_.empty_reasoning_blocks = parser_->stats().empty_reasoning_blocks;
  }
  result_.usage = usage;
  // Tokens the engine made after the stop (the rest of a verified draft, a step that ran
  // before the cancel landed) are never shown: usage counts what the answer is made of.
  if (stopped_early_) result_.usage.completion_tokens = std::min(usage.completion_tokens, n_tokens_seen_);
  if (result_.finish_reason.empty()) {
    switch (reason) {
      case FinishReason::kStop:
        result_.finish_reason = result_.tool_calls.empty() ? "stop" : "tool_calls";
        break;
      case FinishReason::kLength:
        result_.finish_reason = "length";
        break;
      case FinishReason::kCancelled:
        result_.cancelled = true;
        result_.finish_reason = "stop";
        break;
      case FinishReason::kError:
        result_.finish_reason = "stop";
        break;
    }
  }
  finished_ = true;
  out->finished = true;
}

PollResult Generation::poll(std::chrono::milliseconds wait) {
  PollResult out;
  if (finished_) {
    out.finished = true;
    return out;
  }
  if (n_tokens_seen_ == 0 && plan_.chat && !plan_.output_prefix.empty() && !prefix_fed_) {
    prefix_fed_ = true;
    prefix_bytes_ = plan_.output_prefix.size();
    consume_parser_events(parser_->feed(plan_.output_prefix), &out);
  }
  StreamEvent ev;
  // Drain whatever is ready; wait only for the first event.
  bool waited = false;
  while (!finished_) {
    if (!stream_->next(&ev, waited ? std::chrono::milliseconds(0) : wait)) break;
    waited = true;
    out.got_event = true;
    switch (ev.kind) {
      case StreamEvent::Kind::kTokens:
        consume_tokens(ev.tokens, &out);
        break;
      case StreamEvent::Kind::kDone:
        end(&out, ev.finish, ev.usage);
        break;
      case StreamEvent::Kind::kError:
        result_.error = ev.error;
        result_.finish_reason = "stop";
        finished_ = true;
        out.finished = true;
        break;
    }
  }
  return out;
}

}  // namespace gs::server
