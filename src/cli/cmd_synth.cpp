// gemmaserve synth: writes a Gemma-4-shaped GGUF with seeded random weights (presets tiny,
// tiny-assistant, 31b, 31b-assistant; every dimension can be overridden).
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "commands.h"
#include "int_option.h"
#include "gguf/gguf_summary.h"
#include "model/synth_writer.h"

namespace gs::cli {
namespace {

struct SynthOptions {
  std::string preset;
  std::string out;
  uint64_t seed = 1;
  std::string type;
  std::string name;
  std::string chat_template_path;
  int threads = 0;
  int split_max_tensors = 0;
  bool quiet = false;
  bool no_k_eq_v = false;
  // Dimension overrides; unset keeps the preset's value (a -1 sentinel did so for --n-layer -1).
  std::optional<int64_t> n_embd, n_embd_out, n_layer, n_ff, n_head, n_head_kv, n_head_kv_swa, head_dim, head_dim_swa,
      sliding_window, n_vocab, ctx, swa_period;
};

int run_synth(const SynthOptions& o) {
  try {
    const auto preset = synth::parse_preset(o.preset);
    if (!preset) {
      std::fprintf(stderr, "gemmaserve synth: unknown preset '%s' (tiny, tiny-assistant, 31b, 31b-assistant)\n",
                   o.preset.c_str());
      return 2;
    }
    synth::SynthConfig c = synth::preset_config(*preset);
    c.seed = o.seed;
    if (!o.name.empty()) c.name = o.name;
    if (!o.type.empty()) {
      auto t = synth::WeightTypes::parse(o.type);
      if (!t.ok()) {
        std::fprintf(stderr, "gemmaserve synth: %s\n", t.status().message().c_str());
        return 2;
      }
      c.types = *t;
    }
    const std::pair<const std::optional<int64_t>&, int64_t*> overrides[] = {
        {o.n_embd, &c.n_embd},         {o.n_embd_out, &c.n_embd_out},       {o.n_layer, &c.n_layer},
        {o.n_ff, &c.n_ff},             {o.n_head, &c.n_head},               {o.n_head_kv, &c.n_head_kv},
        {o.n_head_kv_swa, &c.n_head_kv_swa}, {o.head_dim, &c.head_dim},     {o.head_dim_swa, &c.head_dim_swa},
        {o.sliding_window, &c.sliding_window}, {o.n_vocab, &c.n_vocab},     {o.ctx, &c.n_ctx_train},
        {o.swa_period, &c.swa_period}};
    // The assistant's target width means nothing to a target (it was dropped without a word).
    if (o.n_embd_out && !c.assistant) {
      std::fprintf(stderr, "gemmaserve synth: --n-embd-out is an assistant's target width; preset %s is a target\n",
                   o.preset.c_str());
      return 2;
    }
    for (const auto& [value, field] : overrides) {
      if (value) *field = *value;
    }
    if (o.no_k_eq_v) c.k_eq_v = false;
    if (!o.chat_template_path.empty()) {
      std::ifstream in(o.chat_template_path, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "gemmaserve synth: cannot read %s\n", o.chat_template_path.c_str());
        return 1;
      }
      std::ostringstream ss;
      ss << in.rdbuf();
      if (in.bad()) {
        std::fprintf(stderr, "gemmaserve synth: --chat-template: cannot read %s\n", o.chat_template_path.c_str());
        return 1;
      }
      c.chat_template = ss.str();
    }
    if (Status s = c.validate(); !s.ok()) {
      // The config's messages begin "synth: " themselves ("gemmaserve synth: synth: ..." before).
      std::string_view message = s.message();
      if (message.rfind("synth: ", 0) == 0) message.remove_prefix(7);
      std::fprintf(stderr, "gemmaserve synth: %.*s\n", static_cast<int>(message.size()), message.data());
      return 2;
    }
    uint64_t total_bytes = 0;
    for (const auto& t : synth::plan_tensors(c)) total_bytes += t.bytes();
    if (!o.quiet) {
      std::fprintf(stderr, "synth: %s (%s, %s weights, seed %llu) -> %s, %s of tensor data\n", c.name.c_str(),
                   std::string(c.arch()).c_str(), c.types.name().c_str(), static_cast<unsigned long long>(c.seed),
                   o.out.c_str(), gguf::format_bytes(total_bytes).c_str());
    }
    int last_decile = 0;
    synth::SynthProgressFn progress;
    if (!o.quiet && total_bytes > (512u << 20)) {
      progress = [&](uint64_t done, uint64_t total) {
        const int decile = static_cast<int>(10 * done / std::max<uint64_t>(total, 1));
        if (decile > last_decile) {
          last_decile = decile;
          std::fprintf(stderr, "synth: %d%%\n", 10 * decile);
        }
      };
    }
    auto stats = synth::write_synth(c, o.out, o.threads, progress, o.split_max_tensors);
    if (!stats.ok()) {
      std::fprintf(stderr, "gemmaserve synth: %s\n", stats.status().to_string().c_str());
      return 1;
    }
    const double mbps = stats->seconds > 0 ? static_cast<double>(stats->file_bytes) / 1e6 / stats->seconds : 0.0;
    const std::string written =
        stats->paths.size() > 1 ? fmt::format("{} shards {} ... {}", stats->paths.size(), stats->paths.front(),
                                              stats->paths.back())
                                : stats->paths.front();
    std::printf("wrote %s: %zu tensors, %s parameters, %s in %.1f s (%.0f MB/s)\n", written.c_str(), stats->n_tensors,
                gguf::format_count(stats->n_params).c_str(), gguf::format_bytes(stats->file_bytes).c_str(),
                stats->seconds, mbps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmaserve synth: %s\n", e.what());
    return 1;
  }
}

}  // namespace

CommandEntry register_synth(CLI::App& app) {
  auto o = std::make_shared<SynthOptions>();
  CLI::App* sub = app.add_subcommand("synth", "Write a Gemma-4-shaped GGUF with seeded random weights");
  sub->add_option("--preset", o->preset, "tiny | tiny-assistant | 31b | 31b-assistant")->required();
  sub->add_option("-o,--output", o->out, "output GGUF file")->required();
  sub->add_option("--seed", o->seed, "random seed (default 1)")
      ->transform(decimal_integer<uint64_t>());
  sub->add_option("--type", o->type, "matrix type: q4_k_m (mix, default) or a ggml type (q8_0, q4_K, f16, ...)");
  sub->add_option("--name", o->name, "general.name");
  sub->add_option("--chat-template", o->chat_template_path, "file whose text becomes tokenizer.chat_template")
      ->check(CLI::ExistingFile);
  sub->add_option("--threads", o->threads, "generator threads (default: all cores)")->transform(decimal_integer<int>(0, 4096));
  sub->add_option("--split-max-tensors", o->split_max_tensors,
                  "write a split model as gguf-split does: shards of at most N tensors, named "
                  "OUTPUT-00001-of-0000M.gguf (OUTPUT without .gguf)")
      ->transform(decimal_integer<int>(1, 1 << 30));
  sub->add_flag("--quiet", o->quiet, "print only the final line");
  sub->add_flag("--no-k-eq-v", o->no_k_eq_v, "give full-attention layers their own attn_v");
  sub->add_option("--n-embd", o->n_embd, "embedding width")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-embd-out", o->n_embd_out, "assistant: the target's embedding width")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-layer", o->n_layer, "layers")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-ff", o->n_ff, "feed-forward width")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-head", o->n_head, "query heads")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-head-kv", o->n_head_kv, "KV heads of full-attention layers")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-head-kv-swa", o->n_head_kv_swa, "KV heads of sliding layers")->transform(decimal_integer<int64_t>());
  sub->add_option("--head-dim", o->head_dim, "head dim of full-attention layers")->transform(decimal_integer<int64_t>());
  sub->add_option("--head-dim-swa", o->head_dim_swa, "head dim of sliding layers")->transform(decimal_integer<int64_t>());
  sub->add_option("--sliding-window", o->sliding_window, "sliding window")->transform(decimal_integer<int64_t>());
  sub->add_option("--n-vocab", o->n_vocab, "vocabulary size")->transform(decimal_integer<int64_t>());
  sub->add_option("--ctx", o->ctx, "training context length (context_length)")->transform(decimal_integer<int64_t>());
  sub->add_option("--swa-period", o->swa_period, "layer il is full iff (il+1) % period == 0 (or last)")->transform(decimal_integer<int64_t>());
  return {sub, [o] { return run_synth(*o); }};
}

}  // namespace gs::cli
