// Model benchmarks through ModelRunner (see bench_model.h). Times are wall-clock around
// complete decode() calls (each ends with its logits on the host), median of the repetitions.
#include "bench_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "bench_ops.h"
#include "engine/drafter_check.h"
#include "gguf/gguf_reader.h"
#include "model/gemma4_config.h"
#include "model/gemma4_model.h"
#include "runtime/kv_cache.h"
#include "runtime/model_runner.h"
#include "runtime/sampler.h"
#include "runtime/speculative.h"
#include "text/tokenizer.h"

namespace gs::cli {
namespace {

struct Totals {
  double weight_bytes = 0;   // every matrix once (token_embd read whole as the tied LM head)
  double matmul_params = 0;  // elements of the matrices a prompt token multiplies (no LM head)
  double head_params = 0;    // LM head elements
};

Totals totals(const Gemma4Model& m) {
  Totals t;
  for (const gguf::TensorInfo& ti : m.file().tensors()) {
    if (ti.n_dims < 2) continue;
    t.weight_bytes += static_cast<double>(ti.size_bytes);
    const bool head = ti.name == "output.weight" || (ti.name == "token_embd.weight" && !m.config().has_output);
    if (head) t.head_params += static_cast<double>(ti.n_elements);
    else if (ti.name != "token_embd.weight") t.matmul_params += static_cast<double>(ti.n_elements);
  }
  return t;
}

// K and V bytes (pools of `type`) read by one query at position p, over all layers.
double kv_bytes_at(const Gemma4Config& c, int64_t p, GgmlType type) {
  double b = 0;
  for (const Gemma4LayerConfig& l : c.layers) {
    const int64_t keys = l.sliding ? std::min<int64_t>(p + 1, c.sliding_window) : p + 1;
    b += static_cast<double>(keys) * l.n_head_kv * static_cast<double>(kv_head_bytes(type, l.head_dim)) * 2;
  }
  return b;
}

// Attention FLOP (QK and PV) of queries at positions [p0, p0 + n).
double attn_flops(const Gemma4Config& c, int64_t p0, int64_t n) {
  double f = 0;
  for (const Gemma4LayerConfig& l : c.layers) {
    double keys = 0;
    for (int64_t p = p0; p < p0 + n; ++p) keys += l.sliding ? std::min<int64_t>(p + 1, c.sliding_window) : p + 1;
    f += 4.0 * l.n_head * l.head_dim * keys;
  }
  return f;
}

constexpr int kMtpPrompt = 16;  // tokens prefilled before each tg N mtp run

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

class Bench {
 public:
  Bench(ModelRunner& r, const ModelBenchOptions& o) : r_(r), o_(o) {}

  // A fresh sequence filled to `depth` positions (not timed): prefilled, or zeros.
  Result<int> fresh(int depth) {
    GS_ASSIGN_OR_RETURN(int seq, r_.add_sequence());
    if (depth > 0 && o_.fill_zeros) {
      GS_RETURN_IF_ERROR(r_.kv().append_zeros(seq, depth));
      GS_RETURN_IF_ERROR(r_.backend().synchronize());
    } else if (depth > 0) {
      GS_RETURN_IF_ERROR(feed(seq, depth, false));
    }
    return seq;
  }
  // n token ids from the fixed stream.
  std::vector<int32_t> ids(int n) {
    std::vector<int32_t> v;
    for (int i = 0; i < n; ++i) v.push_back(next_id());
    return v;
  }
  const ModelBenchOptions& options() const { return o_; }
  // Appends n tokens (ids from a fixed stream) in one decode(); outputs: last row only, or all.
  Status feed(int seq, int n, bool all_outputs) {
    toks_.clear();
    for (int i = 0; i < n; ++i) toks_.push_back({seq, next_id(), all_outputs || i == n - 1});
    GS_RETURN_IF_ERROR(r_.decode(toks_));
    return r_.backend().synchronize();
  }

 private:
  int32_t next_id() {
    next_ = (next_ * 1103515245u + 12345u) & 0x7fffffffu;
    return 2 + static_cast<int32_t>(next_ % static_cast<uint32_t>(r_.config().n_vocab - 2));
  }
  ModelRunner& r_;
  const ModelBenchOptions& o_;
  std::vector<ModelRunner::Token> toks_;
  uint32_t next_ = 12345;
};

}  // namespace

Status run_model_bench(Backend& b, const ModelBenchOptions& o, std::vector<BenchRow>& rows) {
  // The sequence's context (the deepest depth, the longest pass or generation, 64 spare) is
  // an int32: sizes near 2^31 overflowed it (-d 2147483647 then prefilled 2^31 tokens into
  // the model's own context and aborted with std::bad_alloc).
  {
    int64_t deepest = 0, longest = 0;
    for (int d : o.depth) deepest = std::max<int64_t>(deepest, d);
    for (const std::vector<int>* v : {&o.prompt, &o.gen, &o.verify}) {
      for (int n : *v) longest = std::max<int64_t>(longest, n);
    }
    if (deepest + longest + 64 > std::numeric_limits<int32_t>::max()) {
      return make_status(StatusCode::kInvalidArgument,
                         "-d {} and a pass or generation of {} tokens need {} positions, more than a sequence holds "
                         "({}): lower -d, -p, -n or --verify",
                         deepest, longest, deepest + longest + 64, std::numeric_limits<int32_t>::max());
    }
  }
  // The files are checked before any benchmark work (decision 0053): a drafter given as the
  // model, or a drafter that does not fit the model, was refused only after the calibration
  // below and the model's load, and the drafter with another wording than serve's.
  // Each file is opened (and its header read) once: the weights load from the files checked
  // here (the target was opened a second time to load, decision 0055).
  GS_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> file, gguf::GgufFile::open_model(o.model));
  std::shared_ptr<gguf::GgufFile> drafter_file;
  {
    GS_ASSIGN_OR_RETURN(const Gemma4Config config, load_gemma4_config(*file));
    if (config.is_assistant()) {
      return make_status(StatusCode::kInvalidArgument, "{} is an MTP drafter (gemma4-assistant), not a target model; "
                         "bench -m takes a target", o.model);
    }
    if (!o.mtp.empty()) {
      Result<std::shared_ptr<const text::Tokenizer>> tok = text::Tokenizer::from_gguf(*file);
      GS_ASSIGN_OR_RETURN(drafter_file, check_drafter_files(*file, tok.ok() ? tok->get() : nullptr, o.model, o.mtp));
    }
  }
  const bool quick = b.kind() == BackendKind::kCpu;  // the CPU oracle is slow: small ceilings
  GS_ASSIGN_OR_RETURN(const double copy_bw, measure_copy_bandwidth(b, quick, rows));
  GS_ASSIGN_OR_RETURN(const double gemm_flops, measure_gemm_flops(b, quick, rows));

  const double t_load0 = now_s();
  GS_ASSIGN_OR_RETURN(std::shared_ptr<Gemma4Model> model, Gemma4Model::from_file(std::move(file), b));
  GS_RETURN_IF_ERROR(b.synchronize());
  const double t_load = now_s() - t_load0;
  const Gemma4Config& c = model->config();  // not an assistant: refused above
  const Totals tot = totals(*model);
  std::fprintf(stderr, "model: %s, %d layers, n_embd %d, %.2f GB of matrices, loaded in %.1f s\n", o.model.c_str(),
               c.n_layer, c.n_embd, tot.weight_bytes / 1e9, t_load);

  int max_depth = 0, max_batch = 1;
  for (int d : o.depth) max_depth = std::max(max_depth, d);
  for (int p : o.prompt) max_batch = std::max(max_batch, p);
  for (int k : o.verify) max_batch = std::max(max_batch, k);
  int max_gen = 0;
  for (int n : o.gen) max_gen = std::max(max_gen, n);
  RunnerOptions ro;
  ro.max_tokens = std::max(1, std::min(o.ubatch, std::max(max_batch, 1)));
  ro.max_tokens = std::max(ro.max_tokens, std::min(o.ubatch, 512));  // depth fills in big passes
  int max_verify = 1;
  for (int k : o.verify) max_verify = std::max(max_verify, k);
  ro.max_outputs = std::max({16, max_verify, o.mtp.empty() ? 0 : o.draft_max + 1});  // a verify pass's rows
  ro.kv.n_seq_max = 1;
  ro.kv.n_ctx = max_depth + std::max(max_batch, max_gen) + 64;
  // Every test rolls back a whole pass (to the depth it started from): the sliding ring then
  // needs one position more than a pass and the window (KvCache sizes it for a rollback that
  // keeps a pass's first token), or pp N at a depth failed where window + N filled the ring's
  // pages exactly (pp4096 of the 31B: "the sliding-window ring only holds positions from ...").
  // So passes may hold one row more than any test feeds at once.
  ro.max_tokens += 1;
  ro.kv.max_ubatch = ro.max_tokens;
  ro.kv.type = o.kv_type;
  RunnerPart failed = RunnerPart::kNone;
  Result<std::unique_ptr<ModelRunner>> made_runner = ModelRunner::create(model, ro, &failed);
  if (!made_runner.ok() && (failed == RunnerPart::kKvCache || failed == RunnerPart::kNone)) {
    // The sequence's KV cache is what -d, -p, -n and --verify size: "cannot allocate N bytes"
    // alone named neither it nor them (serve and run say as much for their --ctx-size).
    return make_status(made_runner.status().code(),
                       "the KV cache of 1 sequence x {} positions ({:.1f} GB; -d {} and a pass or generation of {} "
                       "tokens) does not fit: {}; lower -d, -p, -n or --verify",
                       ro.kv.n_ctx, KvCache::pool_bytes(c, ro.kv) / 1e9, max_depth, std::max(max_batch, max_gen),
                       made_runner.status().message());
  }
  GS_ASSIGN_OR_RETURN(std::unique_ptr<ModelRunner> runner, std::move(made_runner));
  std::unique_ptr<SpeculativeDecoder> spec;
  if (!o.mtp.empty()) {
    Result<std::shared_ptr<Gemma4Model>> drafter = Gemma4Model::from_file(std::move(drafter_file), b);
    // Its kind and fit were checked from the files before the calibration (check_drafter_files).
    if (!drafter.ok()) return drafter_load_error(drafter.status(), o.mtp);
    SpecOptions so;
    so.draft_max = o.draft_max;
    Result<std::unique_ptr<SpeculativeDecoder>> made = SpeculativeDecoder::create(*runner, *drafter, so);
    if (!made.ok())
      return make_status(made.status().code(), "the drafter {} cannot draft for {}: {}", o.mtp, o.model,
                         made.status().message());
    spec = std::move(*made);
  }
  Bench bench(*runner, o);
  const int reps = std::max(1, o.reps);

  for (int depth : o.depth) {
    const std::string at = depth > 0 ? " @ d" + std::to_string(depth) : "";
    // One sequence filled to `depth` once; every test appends and rolls back to it.
    const double tf0 = now_s();
    GS_ASSIGN_OR_RETURN(int seq, bench.fresh(depth));
    if (depth > 0) std::fprintf(stderr, "filled depth %d in %.1f s\n", depth, now_s() - tf0);
    // Back to `depth` after a test. A test that wrote more positions past it than the sliding
    // ring keeps (tg N for N near the ubatch or beyond it; tg N mtp writes its prompt and
    // drafts too) cannot be truncated there: the depth is filled again (not timed).
    auto rollback = [&]() -> Status {
      const Status st = runner->truncate(seq, depth);
      if (st.code() != StatusCode::kFailedPrecondition) return st;
      GS_RETURN_IF_ERROR(runner->remove_sequence(seq));
      GS_ASSIGN_OR_RETURN(seq, bench.fresh(depth));
      return {};
    };
    // pp N: a prompt of N tokens after `depth` cached ones.
    for (int n : o.prompt) {
      if (n <= 0) continue;
      std::vector<double> t;
      for (int r = 0; r < reps + 1; ++r) {
        const double t0 = now_s();
        GS_RETURN_IF_ERROR(bench.feed(seq, n, false));
        if (r > 0) t.push_back(now_s() - t0);  // the first run warms up
        GS_RETURN_IF_ERROR(rollback());
      }
      const double s = median(t);
      const double flops = 2.0 * n * tot.matmul_params + 2.0 * tot.head_params + attn_flops(c, depth, n);
      BenchRow row{"pp", "pp" + std::to_string(n) + at, std::to_string(n / s).substr(0, 8) + " tok/s", s, 0,
                   flops / s / 1e12, 100.0 * (flops / s) / gemm_flops, "f16 GEMM rate"};
      row.extra = {{"n_prompt", n}, {"depth", depth}, {"tokens_per_s", n / s}};
      rows.push_back(row);
    }
    // tg N: N single-token steps, each with its logits.
    double one = 0;
    std::vector<double> tg_s(o.gen.size(), 0.0);  // seconds a token of each tg N, for tg N mtp
    for (size_t gi = 0; gi < o.gen.size(); ++gi) {
      const int n = o.gen[gi];
      if (n <= 0) continue;
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        for (int w = 0; w < 2; ++w) GS_RETURN_IF_ERROR(bench.feed(seq, 1, true));  // warm up (graph capture)
        const double t0 = now_s();
        for (int i = 0; i < n; ++i) GS_RETURN_IF_ERROR(bench.feed(seq, 1, true));
        t.push_back((now_s() - t0) / n);
        GS_RETURN_IF_ERROR(rollback());
      }
      const double s = median(t);
      one = s;
      tg_s[gi] = s;
      const double bytes = tot.weight_bytes + kv_bytes_at(c, depth + n / 2, o.kv_type);
      BenchRow row{"tg", "tg" + std::to_string(n) + at, std::to_string(1.0 / s).substr(0, 8) + " tok/s", s, bytes / s,
                   0, 100.0 * (bytes / copy_bw) / s, "bytes / copy bandwidth"};
      row.extra = {{"n_gen", n}, {"depth", depth}, {"tokens_per_s", 1.0 / s}, {"limit_tokens_per_s", copy_bw / bytes}};
      rows.push_back(row);
    }
    // tg N with MTP: N tokens from greedy speculative rounds of draft_max drafts each, timed
    // after a prompt of kMtpPrompt tokens (prefilled through the decoder, not timed). The
    // first run warms up (graph captures); drafted / accepted count the timed runs.
    for (size_t gi = 0; spec && gi < o.gen.size(); ++gi) {
      const int n = o.gen[gi];
      if (n <= 0) continue;
      std::vector<double> t;
      int64_t drafted = 0, accepted = 0;
      for (int r = 0; r < reps + 1; ++r) {
        Sampler sampler{SamplerConfig{}};
        GS_RETURN_IF_ERROR(spec->start(seq));
        const std::vector<int32_t> prompt = bench.ids(kMtpPrompt);
        SeqWork w;
        w.seq = seq;
        w.sampler = &sampler;
        w.prefill = prompt;
        GS_RETURN_IF_ERROR(spec->step(std::span<SeqWork>(&w, 1)));
        GS_RETURN_IF_ERROR(runner->backend().synchronize());
        const double t0 = now_s();
        int made = 0;
        int64_t d = 0, a = 0;
        while (made < n) {
          SeqWork g;
          g.seq = seq;
          g.sampler = &sampler;
          g.draft_max = o.draft_max;
          g.max_tokens = n - made;
          GS_RETURN_IF_ERROR(spec->step(std::span<SeqWork>(&g, 1)));
          made += static_cast<int>(g.tokens.size());
          d += g.n_drafted;
          a += g.n_accepted;
        }
        if (r > 0) {
          t.push_back((now_s() - t0) / n);
          drafted += d;
          accepted += a;
        }
        GS_RETURN_IF_ERROR(rollback());
      }
      const double s = median(t);
      const double plain = gi < tg_s.size() ? tg_s[gi] : 0;
      BenchRow row{"tg-mtp", "tg" + std::to_string(n) + " mtp" + std::to_string(o.draft_max) + at,
                   std::to_string(1.0 / s).substr(0, 8) + " tok/s", s, 0, 0, 0, ""};
      row.extra = {{"n_gen", n},
                   {"depth", depth},
                   {"draft_max", o.draft_max},
                   {"tokens_per_s", 1.0 / s},
                   {"drafted", drafted},
                   {"accepted", accepted},
                   {"acceptance", drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0},
                   {"vs_plain", plain > 0 ? plain / s : 0.0}};
      if (plain > 0) {
        row.pct = 100.0 * plain / s;
        row.limit = "of plain tg (" + std::to_string(accepted) + "/" + std::to_string(drafted) + " drafts accepted)";
      } else {
        row.limit = std::to_string(accepted) + "/" + std::to_string(drafted) + " drafts accepted";
      }
      rows.push_back(row);
    }
    // verify-k: one pass of k tokens (all with logits), rolled back after each repetition.
    if (!o.verify.empty()) {
      if (one == 0) {
        std::vector<double> t1;
        for (int r = 0; r < 3 + reps; ++r) {
          const double t0 = now_s();
          GS_RETURN_IF_ERROR(bench.feed(seq, 1, true));
          if (r >= 3) t1.push_back(now_s() - t0);
          GS_RETURN_IF_ERROR(rollback());
        }
        one = median(t1);
      }
      for (int k : o.verify) {
        if (k <= 0) continue;
        std::vector<double> t;
        for (int r = 0; r < 2 + reps; ++r) {
          const double t0 = now_s();
          GS_RETURN_IF_ERROR(bench.feed(seq, k, true));
          if (r >= 2) t.push_back(now_s() - t0);
          GS_RETURN_IF_ERROR(rollback());
        }
        const double s = median(t);
        // The least a pass must move: the weights, and the KV range of its last token once
        // (the k tokens of one sequence read the same pool; the 64-row attention kernel reads
        // it once for all of them at depth, decision 0020).
        const double bytes = tot.weight_bytes + kv_bytes_at(c, depth + k - 1, o.kv_type);
        BenchRow row{"verify", "verify" + std::to_string(k) + at,
                     std::to_string(s / one).substr(0, 5) + " decode steps", s, bytes / s, 0,
                     100.0 * (bytes / copy_bw) / s, "bytes / copy bandwidth"};
        row.extra = {{"k", k}, {"depth", depth}, {"decode_steps", s / one}, {"decode_step_s", one}};
        rows.push_back(row);
      }
    }
    GS_RETURN_IF_ERROR(runner->remove_sequence(seq));
  }
  return {};
}

}  // namespace gs::cli
