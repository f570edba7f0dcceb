#!/usr/bin/env bash
# A/B of run-time kernel choices on a lent GPU machine, in one call: the device tests under
# each setting, the decode matmul microbenchmarks and tg128 / verify on the 31B-shaped file.
# Settings are environment assignments separated by ';' (empty = defaults), e.g.
#   GS_AB="GS_CUDA_MV=mma;;GS_CUDA_L2PF=0" scripts/device_ab_env.sh
# Binaries and libraries as in device_run.sh (.dev/cuda). Logs and JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
MODEL="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
[ -f "$MODEL" ] || ("$BIN" synth --preset 31b -o "$MODEL" --quiet >"$OUT/synth.log" 2>&1) &
synth_pid=$!
split_settings "${GS_AB:-}"
i=0
for s in "${settings[@]}"; do
  echo "== setting $i: '${s}'"
  if [ "${GS_AB_TESTS:-1}" = 1 ]; then
    env $s timeout 300 "$DEV/bin/gs_test_cuda" --gtest_color=no --gtest_filter="${GS_AB_FILTER:-*}" >"$OUT/tests_$i.log" 2>&1
    echo "tests exit $?: $(grep -cE '^\[       OK' "$OUT/tests_$i.log") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$OUT/tests_$i.log") failed"
    grep -E "^\[  FAILED  \]|Failure|error" "$OUT/tests_$i.log" | head -8
  fi
  env $s timeout 120 "$BIN" bench --ops --ops-only matmul --device cuda --json >"$OUT/mv_$i.json" 2>>"$OUT/bench.log"
  python3 - "$OUT/mv_$i.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])).get("results", []):
    print(f"  {r['test']:<34} {r['seconds']*1e6:8.1f} us  {r.get('pct_of_limit', 0):5.1f}%")
PY
  i=$((i + 1))
done
wait "$synth_pid"
i=0
for s in "${settings[@]}"; do
  env $s timeout 150 "$BIN" bench -m "$MODEL" --device cuda -p 0 -n 128 --verify 2,5,8 -r 2 --json \
    >"$OUT/tg_$i.json" 2>>"$OUT/bench.log"
  python3 - "$OUT/tg_$i.json" "$i" "$s" <<'PY'
import json, sys
res = json.load(open(sys.argv[1])).get("results", [])
print(f"setting {sys.argv[2]} '{sys.argv[3]}':", "  ".join(
    f"{r['test']} {r.get('tokens_per_s', 0):.1f} tok/s" if r["group"] == "tg" else
    f"{r['test']} {r.get('decode_steps', 0):.2f} steps" for r in res))
PY
  i=$((i + 1))
done
