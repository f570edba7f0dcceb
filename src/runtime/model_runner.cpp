// ModelRunner: splits a decode call into forward passes, reserves cache positions, gathers
// the outputs of every pass.
#include "runtime/model_runner.h"

#include <fmt/format.h>

#include <algorithm>

namespace gs {

const char* runner_part_name(RunnerPart part) {
  switch (part) {
    case RunnerPart::kNone: return "nothing";
    case RunnerPart::kKvCache: return "the KV cache";
    case RunnerPart::kPassBuffers: return "the forward pass buffers";
    case RunnerPart::kLogits: return "the logits";
    case RunnerPart::kHidden: return "the hidden states";
  }
  return "nothing";
}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(std::shared_ptr<const Gemma4Model> target,
                                                         const RunnerOptions& o, RunnerPart* failed) {
  RunnerPart unused = RunnerPart::kNone;
  RunnerPart& part = failed ? *failed : unused;
  part = RunnerPart::kNone;
  if (!target) return make_status(StatusCode::kInvalidArgument, "no model");
  if (o.max_tokens <= 0 || o.max_outputs <= 0) {
    return make_status(StatusCode::kInvalidArgument, "max_tokens {} and max_outputs {} must be positive", o.max_tokens,
                       o.max_outputs);
  }
  std::unique_ptr<ModelRunner> r(new ModelRunner());
  r->model_ = std::move(target);
  r->max_tokens_ = o.max_tokens;
  r->max_outputs_ = o.max_outputs;
  KvCacheOptions kvo = o.kv;
  kvo.max_ubatch = std::min(kvo.max_ubatch, o.max_tokens);  // a pass never holds more
  const Gemma4Config& c = r->model_->config();
  // Each step names what it sets up in its error: the caller's advice depends on it.
  auto failing = [&](RunnerPart p, const Status& st, std::string what) {
    part = p;
    return make_status(st.code(), "{}: {}", what, st.message());
  };
  {
    Result<std::unique_ptr<KvCache>> kv = KvCache::create(c, r->model_->backend(), kvo);
    if (!kv.ok()) {
      part = RunnerPart::kKvCache;
      return kv.status();
    }
    r->kv_ = std::move(*kv);
  }
  {
    auto forward = Gemma4Forward::create(r->model_, o.max_tokens, std::min(o.max_tokens, o.max_outputs));
    if (!forward.ok()) {
      return failing(RunnerPart::kPassBuffers, forward.status(),
                     fmt::format("the forward pass buffers for {} rows", o.max_tokens));
    }
    r->forward_ = std::move(*forward);
  }
  const size_t n_logits = static_cast<size_t>(o.max_outputs) * c.n_vocab;
  {
    auto logits = HostBuffer::make(r->model_->backend(), n_logits * sizeof(float));
    if (!logits.ok()) {
      return failing(RunnerPart::kLogits, logits.status(),
                     fmt::format("the logits of {} rows x {} ({:.1f} MB)", o.max_outputs, c.n_vocab,
                                 static_cast<double>(n_logits) * sizeof(float) / 1e6));
    }
    r->logits_buf_ = std::move(*logits);
  }
  r->logits_ = r->logits_buf_.as<float>();
  std::fill(r->logits_, r->logits_ + n_logits, 0.0f);
  {
    const size_t n_hidden = static_cast<size_t>(o.max_outputs) * c.n_embd;
    auto hidden = DeviceBuffer::make(r->model_->backend(), n_hidden * sizeof(float));
    if (!hidden.ok()) {
      return failing(RunnerPart::kHidden, hidden.status(),
                     fmt::format("the hidden states of {} rows x {}", o.max_outputs, c.n_embd));
    }
    r->hidden_buf_ = std::move(*hidden);
  }
  r->hidden_ = Mat::of(r->hidden_buf_.as<float>(), o.max_outputs, c.n_embd);
  r->tokens_.resize(o.max_tokens);
  r->positions_.resize(o.max_tokens);
  r->rows_.resize(o.max_tokens);
  r->out_rows_.resize(o.max_tokens);
  r->pass_count_.assign(static_cast<size_t>(r->kv_->n_seq_max()), 0);
  r->pass_next_.assign(static_cast<size_t>(r->kv_->n_seq_max()), 0);
  return r;
}

std::span<const float> ModelRunner::logits(int i) const {
  const size_t v = static_cast<size_t>(model_->config().n_vocab);
  return {logits_ + static_cast<size_t>(i) * v, v};
}

Status ModelRunner::decode(std::span<const Token> tokens) {
  const Gemma4Config& c = model_->config();
  // Check everything first, so that an error leaves every sequence as it was.
  int n_out = 0;
  std::vector<std::pair<int, int32_t>> touched;  // (seq, length before) for rollback
  for (const Token& t : tokens) {
    if (!kv_->has_sequence(t.seq)) return make_status(StatusCode::kInvalidArgument, "unknown sequence {}", t.seq);
    if (t.id < 0 || t.id >= c.n_vocab) {
      return make_status(StatusCode::kInvalidArgument, "token id {} is outside the vocabulary [0, {})", t.id, c.n_vocab);
    }
    n_out += t.output ? 1 : 0;
    if (std::find_if(touched.begin(), touched.end(), [&](auto& p) { return p.first == t.seq; }) == touched.end()) {
      touched.emplace_back(t.seq, kv_->length(t.seq));
    }
  }
  if (n_out > max_outputs_) {
    return make_status(StatusCode::kInvalidArgument, "{} output rows exceed the planned {}", n_out, max_outputs_);
  }
  n_outputs_ = 0;
  size_t begin = 0;
  while (begin < tokens.size()) {
    // Grow the pass while it fits max_tokens rows and max_ubatch rows per sequence.
    std::fill(pass_count_.begin(), pass_count_.end(), 0);
    size_t end = begin;
    while (end < tokens.size() && end - begin < static_cast<size_t>(max_tokens_) &&
           pass_count_[tokens[end].seq] < kv_->max_ubatch()) {
      ++pass_count_[tokens[end].seq];
      ++end;
    }
    const Status st = run_pass(tokens.subspan(begin, end - begin));
    if (!st.ok()) {
      for (auto& [seq, len] : touched) (void)kv_->truncate(seq, len);
      n_outputs_ = 0;
      return st;
    }
    begin = end;
  }
  return {};
}

Status ModelRunner::run_pass(std::span<const Token> pass) {
  // Reserve each sequence's positions of this pass (pass_count_ holds the counts).
  for (const Token& t : pass) {
    if (pass_count_[t.seq] > 0) {
      GS_ASSIGN_OR_RETURN(pass_next_[t.seq], kv_->append(t.seq, pass_count_[t.seq]));
      pass_count_[t.seq] = 0;
    }
  }
  int k = 0;
  for (size_t i = 0; i < pass.size(); ++i) {
    tokens_[i] = pass[i].id;
    rows_[i] = pass[i].seq;
    positions_[i] = pass_next_[pass[i].seq]++;
    if (pass[i].output) out_rows_[k++] = static_cast<int32_t>(i);
  }
  GS_RETURN_IF_ERROR(kv_->sync());
  const size_t n = pass.size();
  ForwardBatch batch{{tokens_.data(), n}, {positions_.data(), n}, {rows_.data(), n}, {out_rows_.data(), static_cast<size_t>(k)}};
  GS_RETURN_IF_ERROR(forward_->run(batch, kv_->binding()));
  if (k > 0) {
    Backend& b = model_->backend();
    const size_t v = static_cast<size_t>(model_->config().n_vocab);
    GS_RETURN_IF_ERROR(b.download(logits_ + static_cast<size_t>(n_outputs_) * v, forward_->logits().data,
                                  static_cast<size_t>(k) * v * sizeof(float)));
    b.copy(forward_->hidden(), hidden_.slice_rows(n_outputs_, k));
    n_outputs_ += k;
  }
  return {};
}

}  // namespace gs
