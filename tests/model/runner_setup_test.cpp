// ModelRunner::create names what it could not allocate (decision 0053): the KV cache, the
// forward pass buffers, the logits or the hidden states, each with its size, and says which
// part failed, so that serve and run give advice that fits. Every failure was reported as the
// KV cache's ("... does not fit; lower --ctx-size"), also when the pass buffers of a large
// --ubatch were what did not fit. The allocations fail through a backend that refuses those
// above a size, as a full device would.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "forwarding_backend.h"
#include "golden_util.h"
#include "runtime/model_runner.h"
#include "test_gguf.h"

namespace gs::test {
namespace {

// A CPU backend whose device (and, when asked, host) allocations above `limit` bytes fail as
// a device out of memory does; everything else is the CPU backend's.
class LimitedBackend final : public ForwardingBackend {
 public:
  LimitedBackend() : ForwardingBackend(create_cpu_backend(1)) {}
  size_t limit = SIZE_MAX;
  bool limit_host = false;

  std::string description() const override { return "limited " + ForwardingBackend::description(); }
  Result<void*> alloc(size_t bytes) override {
    if (bytes > limit) return make_status(StatusCode::kResourceExhausted, "test backend: {} bytes is over the limit", bytes);
    return ForwardingBackend::alloc(bytes);
  }
  Result<void*> alloc_host(size_t bytes) override {
    if (limit_host && bytes > limit) {
      return make_status(StatusCode::kResourceExhausted, "test backend: {} host bytes is over the limit", bytes);
    }
    return inner().alloc_host(bytes);
  }
  void free_host(void* p) override { inner().free_host(p); }
};

struct FailingSetup {
  const char* name;
  int32_t n_ctx;
  int max_tokens;
  int max_outputs;
  bool limit_host;
  RunnerPart part;
  std::string starts_with;
};

TEST(RunnerSetup, AnAllocationThatFailsIsNamed) {
  LimitedBackend backend;
  const auto dir = temp_dir("runner-setup");
  RandomModelSpec spec;  // n_embd 64, n_vocab 101
  const std::string path = (dir / "m.gguf").string();
  ASSERT_TRUE(random_model(spec).write(path).ok());
  auto model = Gemma4Model::load(path, backend);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  backend.limit = size_t{1} << 20;  // 1 MiB a buffer from here on
  const std::vector<FailingSetup> setups = {
      // A context of 2^20 positions: each layer's pool is over the limit.
      {"kv", 1 << 20, 8, 4, false, RunnerPart::kKvCache, ""},
      // 2^15 rows a pass over a context of 64: the activations are.
      {"pass", 64, 1 << 15, 4, false, RunnerPart::kPassBuffers, "the forward pass buffers for 32768 rows: test backend"},
      // 2^13 output rows: 3.3 MB of logits (host) ...
      {"logits", 64, 8, 1 << 13, true, RunnerPart::kLogits, "the logits of 8192 rows x 101 (3.3 MB): test backend"},
      // ... and 2 MB of hidden states (device), where the host is not limited.
      {"hidden", 64, 8, 1 << 13, false, RunnerPart::kHidden, "the hidden states of 8192 rows x 64: test backend"},
  };
  for (const FailingSetup& s : setups) {
    SCOPED_TRACE(s.name);
    backend.limit_host = s.limit_host;
    RunnerOptions o;
    o.max_tokens = s.max_tokens;
    o.max_outputs = s.max_outputs;
    o.kv.n_seq_max = 1;
    o.kv.n_ctx = s.n_ctx;
    o.kv.max_ubatch = 8;
    o.kv.type = GgmlType::F32;
    RunnerPart part = RunnerPart::kNone;
    auto r = ModelRunner::create(*model, o, &part);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
    EXPECT_EQ(part, s.part) << r.status().to_string();
    EXPECT_EQ(r.status().message().rfind(s.starts_with, 0), 0u) << r.status().message();
  }
  // Within the limit it is set up, and says nothing failed.
  RunnerOptions o;
  o.max_tokens = 8;
  o.max_outputs = 4;
  o.kv.n_seq_max = 1;
  o.kv.n_ctx = 64;
  o.kv.type = GgmlType::F32;
  RunnerPart part = RunnerPart::kKvCache;
  auto r = ModelRunner::create(*model, o, &part);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(part, RunnerPart::kNone);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gs::test
