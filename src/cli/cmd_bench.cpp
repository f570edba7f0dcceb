// gemmaserve bench: llama-bench-style speed tests on a model file (prompt processing, token
// generation, MTP verify passes, at context depths) and, with --ops, the backend's ops alone.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "backend/registry/registry.h"
#include "bench_model.h"
#include "bench_ops.h"
#include "bench_util.h"
#include "commands.h"
#include "int_option.h"
#include "core/int_list.h"
#include "runtime/kv_cache.h"

namespace gs::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::string mtp;
  std::vector<int> prompt = {512};
  std::vector<int> gen = {128};
  std::vector<int> depth = {0};
  std::vector<int> verify;
  // The lists as given (-p 128,512 or -p 128 -p 512), read into the above by read_lists.
  std::vector<std::string> prompt_text, gen_text, depth_text, verify_text;
  std::string device = "auto";
  bool json = false;
  bool ops = false;
  bool quick = false;
  std::string ops_only;
  int reps = 3;
  int ubatch = 4096;
  int threads = 0;
  int draft_max = 4;
  std::string depth_fill = "prefill";
  std::string kv_type = "f16";
};

Result<BackendKind> pick_device(const std::string& d) {
  GS_ASSIGN_OR_RETURN(const DeviceChoice choice, parse_device_choice(d));
  std::string fallback;
  const BackendKind kind = backend_for(choice, &fallback);
  if (!fallback.empty()) std::fprintf(stderr, "gemmaserve bench: --device cuda: %s: running on the CPU\n", fallback.c_str());
  return kind;
}

// One list flag's items, all its occurrences together (core/int_list.h: "1,,2", "+1", "0x10"
// and "010" were read by CLI11 as 1,2 / 1 / 16 / 8; decision 0053). Untouched when not given.
Status read_list(const std::vector<std::string>& given, const char* flag, int64_t lo, int64_t hi,
                 std::vector<int>* out) {
  if (given.empty()) return {};
  out->clear();
  for (const std::string& g : given) {
    GS_ASSIGN_OR_RETURN(const std::vector<int64_t> items, parse_int_list(g, flag, lo, hi));
    if (items.empty()) return make_status(StatusCode::kInvalidArgument, "{}: no value in '{}'", flag, g);
    out->insert(out->end(), items.begin(), items.end());
  }
  return {};
}

Status read_lists(BenchArgs* a) {
  constexpr int64_t kCount = std::numeric_limits<int32_t>::max();
  GS_RETURN_IF_ERROR(read_list(a->prompt_text, "-p/--n-prompt", 0, kCount, &a->prompt));
  GS_RETURN_IF_ERROR(read_list(a->gen_text, "-n/--n-gen", 0, kCount, &a->gen));
  GS_RETURN_IF_ERROR(read_list(a->depth_text, "-d/--depth", 0, kCount, &a->depth));
  GS_RETURN_IF_ERROR(read_list(a->verify_text, "--verify", 1, 1 << 20, &a->verify));
  return {};
}

int run_bench(BenchArgs& a) {
  if (Status st = read_lists(&a); !st.ok()) {
    std::fprintf(stderr, "gemmaserve bench: %s\n", st.to_string().c_str());
    return 2;
  }
  if (!a.ops && a.model.empty()) {
    // A usage error, said before any work (it came after the backend's setup, below the
    // table's header on stdout).
    std::fprintf(stderr, "gemmaserve bench: bench needs -m FILE (or --ops)\n");
    return 2;
  }
  auto kind = pick_device(a.device);
  if (!kind.ok()) {
    std::fprintf(stderr, "gemmaserve bench: %s\n", kind.status().to_string().c_str());
    return 2;
  }
  if (*kind == BackendKind::kCpu && a.device == "auto")
    std::fprintf(stderr, "gemmaserve bench: no CUDA device found; running on the CPU\n");
  BackendOptions bo;
  bo.n_threads = a.threads;
  auto be = create_backend(*kind, bo);
  if (!be.ok()) {
    std::fprintf(stderr, "gemmaserve bench: %s\n", be.status().to_string().c_str());
    return 1;
  }
  Backend& b = **be;
  std::fprintf(stderr, "backend: %s\n", b.description().c_str());
  std::vector<BenchRow> rows;
  Status st;
  if (a.ops) {
    OpsBenchOptions o;
    o.quick = a.quick || *kind == BackendKind::kCpu;
    o.only = a.ops_only;
    if (a.depth.size() > 1 || a.depth.front() != 0) {
      o.depths.clear();
      for (int d : a.depth) o.depths.push_back(d > 0 ? d : 1);
    }
    st = run_ops_bench(b, o, rows);
  } else {
    ModelBenchOptions o;
    o.model = a.model;
    o.prompt = a.prompt;
    o.gen = a.gen;
    o.depth = a.depth;
    o.verify = a.verify;
    o.reps = a.reps;
    o.ubatch = a.ubatch;
    o.mtp = a.mtp;
    o.draft_max = a.draft_max;
    o.fill_zeros = a.depth_fill == "zeros";
    const Result<GgmlType> kv_type = parse_kv_cache_type(a.kv_type);  // the option admits only its names
    o.kv_type = kv_type.ok() ? *kv_type : GgmlType::F16;
    st = run_model_bench(b, o, rows);
  }
  if (a.json) {
    nlohmann::json j = {{"backend", b.description()}, {"results", rows_json(rows)}};
    if (!st.ok()) j["error"] = st.to_string();
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    print_rows(rows, stdout);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "gemmaserve bench: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

CommandEntry register_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* sub = app.add_subcommand("bench", "speed tests: prompt processing, generation, MTP verify, at depths");
  sub->add_option("-m,--model", a->model, "GGUF model file (a split model: its first shard)");
  CLI::Option* mtp = sub->add_option("--mtp", a->mtp, "MTP drafter GGUF (assistant): tg N also runs as speculative generation");
  // Without --mtp nothing drafts: the flag was silently ignored, so it is refused instead.
  sub->add_option("--draft-max", a->draft_max, "with --mtp: drafts per speculative round")
      ->transform(decimal_integer<int>(1, 16))
      ->needs(mtp);
  sub->add_option("--depth-fill", a->depth_fill,
                  "how the depth's positions are filled: prefill (a forward pass over them) or zeros (zero K and V, "
                  "no pass: decode at a 1M context without its prefill)")
      ->check(CLI::IsMember({"prefill", "zeros"}));
  sub->add_option("--kv-type", a->kv_type, "KV cache type: f16, f32 or q8_0")
      ->check(CLI::IsMember({"f16", "f32", "q8_0"}));
  // Negative sizes, repetitions or threads were taken silently (skipped or clamped), a
  // negative depth failed after the baselines as a "negative truncation point". The lists are
  // read by read_lists, which names a malformed item.
  sub->add_option("-p,--n-prompt", a->prompt_text, "prompt lengths to process (pp N; 0: none; a list: 128,512)");
  sub->add_option("-n,--n-gen", a->gen_text, "tokens to generate one by one (tg N; 0: none; a list)");
  sub->add_option("-d,--depth", a->depth_text, "context depths the tests start from (a list)");
  sub->add_option("--verify", a->verify_text, "verify passes of k tokens, 1 to 2^20 (MTP verification cost; a list)");
  sub->add_option("--device", a->device, "cuda, cpu or auto (default: cuda when a GPU is present)");
  sub->add_option("-r,--repetitions", a->reps, "repetitions of each test (median reported)")->transform(decimal_integer<int>(1, 100000));
  sub->add_option("-b,--ubatch", a->ubatch, "most tokens in one forward pass")->transform(decimal_integer<int>(1, 1 << 20));
  sub->add_option("-t,--threads", a->threads, "CPU threads (0: all cores)")->transform(decimal_integer<int>(0, 4096));
  CLI::Option* ops =
      sub->add_flag("--ops", a->ops, "benchmark the backend's ops at the Gemma-4-31B shapes (no model file)");
  sub->add_flag("--quick", a->quick, "fewer shapes and repetitions");
  // A misspelt group ran every group; without --ops the option was ignored.
  sub->add_option("--ops-only", a->ops_only, "with --ops: only this group (matmul, attention, small or ramp)")
      ->check(CLI::IsMember({"matmul", "attention", "small", "ramp"}))
      ->needs(ops);
  sub->add_flag("--json", a->json, "print JSON instead of a table");
  return {sub, [a] { return run_bench(*a); }};
}

}  // namespace gs::cli
