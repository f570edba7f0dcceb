#!/usr/bin/env bash
# The q8_0 KV cache (decision 0035) on a lent GPU machine, in one call: its device tests (the
# attention kernels on q8_0 pools, kv_store, the fused attention inputs, the model's greedy
# output with drafts), then pp512, tg64 and verify 5 on `synth --preset 31b` at depths reached with
# zero K/V, with an f16 and with a q8_0 cache, alternating. Binaries as in device_run.sh.
#   GS_Q8_DEPTHS (default 0,131072,524288), GS_Q8_PROMPTS (pp N, default 512; 0: none),
#   GS_Q8_ROUNDS (default 1), GS_Q8_TESTS=0: no tests, GS_Q8_FILTER: the tests' gtest filter,
#   GS_Q8_VARIANTS: the runs of a round, ';'-separated, each a --kv-type and environment
#   assignments (default "f16;q8_0;q8_0 GS_ATTN_Q8_DSPLIT=1;q8_0 GS_ATTN_Q8_DSPLIT=2": the
#   64-row kernel's q8_0 form with its row-less warps dequantizing into two f16 stages, then
#   the kernel that dequantizes into the mma registers at head_dim 512, k_attention_q8_dsplit.cu,
#   with decode at one and at two CTAs an SM; its device test is CudaAttention.Q8_0DsplitKernel).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader
mem_mib="$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1 | tr -dc 0-9)"
mem_mib="${mem_mib:-0}"
if [ "${GS_Q8_TESTS:-1}" != 0 ]; then
  timeout 280 "$DEV/bin/gs_test_cuda" \
    --gtest_filter="${GS_Q8_FILTER:-CudaAttention.Q8_0*:CudaAttention.PoolsPagesAndBatches:CudaOps.KvStoreAndCopy:CudaOps.QkvNormRopeStore:CudaModel.*Q8_0*:CudaSpeculative.*Q8_0*}" \
    >"$OUT/tests.log" 2>&1
  tests_summary $? "q8_0 KV"
  grep -E "Failure|fast path|rel_l2|Which is" "$OUT/tests.log" | head -20
fi
[ -f "$MODEL_31B" ] || "$BIN" synth --preset 31b -o "$MODEL_31B" --quiet >"$OUT/synth.log" 2>&1
IFS=';' read -r -a variants <<<"${GS_Q8_VARIANTS:-f16;q8_0;q8_0 GS_ATTN_Q8_DSPLIT=1;q8_0 GS_ATTN_Q8_DSPLIT=2}"
for round in $(seq 1 "${GS_Q8_ROUNDS:-1}"); do
  for variant in "${variants[@]}"; do
    read -r kv envs <<<"$variant"
    t0=$SECONDS
    depths="${GS_Q8_DEPTHS:-0,131072,524288}"
    # An f16 cache past 524288 positions does not fit a card under 100 GB (an H100): those
    # depths are left out of its run (bench sizes the context for the deepest one).
    if [ "$kv" = f16 ] && [ "$mem_mib" -lt 100000 ]; then
      depths="$(tr ',' '\n' <<<"$depths" | awk '$1 <= 524288' | paste -sd,)"
    fi
    [ -n "$depths" ] || continue
    env ${envs:-} timeout 240 "$BIN" bench -m "$MODEL_31B" --device cuda --kv-type "$kv" -p "${GS_Q8_PROMPTS:-512}" -n 64 -d "$depths" \
      --depth-fill zeros --verify 5 -r 1 --json >"$OUT/q8.json" 2>>"$OUT/bench.log"
    rc=$?
    python3 - "$OUT/q8.json" "$round" "$variant" "$rc" "$((SECONDS - t0))" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"round {sys.argv[2]} {sys.argv[3]}: exit {sys.argv[4]}, unreadable: {e}"); sys.exit()
cells = []
for r in j.get("results", []):
    if r.get("group") not in ("pp", "tg", "verify"): continue
    v = f"{r['tokens_per_s']:.1f} tok/s ({r.get('pct_of_limit', 0):.0f}%)" if "tokens_per_s" in r else f"{r.get('decode_steps', 0):.3f} steps"
    cells.append(f"{r['test']} {r['seconds'] * 1e3:.2f} ms {v}")
print(f"round {sys.argv[2]} kv {sys.argv[3]} (exit {sys.argv[4]}, {sys.argv[5]} s): " + " | ".join(cells) + (" ERROR " + j["error"] if "error" in j else ""))
PY
    rm -f "$OUT/q8.json"
  done
done
grep -iE "error|fail" "$OUT/bench.log" | head -5 || true  # no match is not a failure
