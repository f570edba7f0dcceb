#!/usr/bin/env bash
# A quick A/B of two builds on a lent GPU machine: the device test suite on the new build
# ($DEV/bin/gemmaserve), then tg128 / verify 5 and the decode matmul microbenchmarks of the new
# and the previous one ($DEV/bin/gemmaserve.prev), alternating, on `synth --preset 31b`.
# GS_AB_TESTS=0 skips the tests. Logs and JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
M="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
("$DEV/bin/gemmaserve" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1; echo "synth exit $?" >>"$OUT/synth.log") &
synth_pid=$!
if [ "${GS_AB_TESTS:-1}" != 0 ]; then
  timeout "${GS_TEST_TIMEOUT:-280}" scripts/device_test.sh >"$OUT/tests.log" 2>&1
  echo "device tests exit $?: $(grep -cE '^\[       OK' "$OUT/tests.log") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$OUT/tests.log") failed"
  grep -E "^\[  FAILED  \] [A-Z]" "$OUT/tests.log" | head -8
  grep -B2 -A6 "Failure" "$OUT/tests.log" | head -40
fi
wait "$synth_pid"
tail -1 "$OUT/synth.log"
for round in 1 2; do
  for v in gemmaserve gemmaserve.prev; do
    timeout 200 "$DEV/bin/$v" bench -m "$M" --device cuda -p 0 -n 128 --verify 5 -r 2 --json \
      >"$OUT/tg_${v}_$round.json" 2>>"$OUT/bench.log"
  done
done
for v in gemmaserve gemmaserve.prev; do
  timeout 120 "$DEV/bin/$v" bench --ops --ops-only matmul --device cuda --json >"$OUT/mv_$v.json" 2>>"$OUT/bench.log"
done
python3 - "$OUT" <<'PY'
import json, os, sys, glob
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "tg_*.json"))) + sorted(glob.glob(os.path.join(out, "mv_*.json"))):
    try:
        res = json.load(open(f)).get("results", [])
    except Exception as e:
        print(f, "unreadable:", e); continue
    print("--", os.path.basename(f))
    for r in res:
        extra = ""
        if "tokens_per_s" in r: extra = f"{r['tokens_per_s']:8.1f} tok/s"
        if "decode_steps" in r: extra = f"{r['decode_steps']:6.3f} steps"
        print(f"  {r['group']:8} {r['test'][:40]:40} {r['seconds'] * 1e6:10.1f} us {r.get('gb_per_s', 0):6.0f} GB/s {extra}")
PY
