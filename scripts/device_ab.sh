#!/usr/bin/env bash
# A quick A/B of two builds on a lent GPU machine: the device test suite on the new build
# ($DEV/bin/gemmaserve), then tg128 / verify 5 and the decode matmul microbenchmarks of the new
# and the previous one ($DEV/bin/gemmaserve.prev), alternating, on `synth --preset 31b`.
# GS_AB_TESTS=0 skips the tests, GS_AB_ROUNDS sets the tg rounds (2). Logs and JSON under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
M="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
("$DEV/bin/gemmaserve" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1; echo "synth exit $?" >>"$OUT/synth.log") &
synth_pid=$!
if [ "${GS_AB_TESTS:-1}" != 0 ]; then
  timeout "${GS_TEST_TIMEOUT:-280}" scripts/device_test.sh >"$OUT/tests.log" 2>&1
  tests_summary $?
  grep -B2 -A6 "Failure" "$OUT/tests.log" | head -40
fi
wait "$synth_pid"
tail -1 "$OUT/synth.log"
# Variants: the new build, the previous one, and the new one under each setting of GS_AB_ENVS
# (semicolon-separated, e.g. "GS_CUDA_MULTI=0;GS_MVS_XS=0").
IFS=';' read -r -a envs <<<"${GS_AB_ENVS:-}"
run_tg() {  # $1 = label, $2 = binary, $3 = env assignment or empty
  env ${3:+"$3"} timeout 200 "$DEV/bin/$2" bench -m "$M" --device cuda -p 0 -n 128 --verify 5 -r 2 --json \
    >"$OUT/tg_$1.json" 2>>"$OUT/bench.log"
}
for round in $(seq 1 "${GS_AB_ROUNDS:-2}"); do
  run_tg "new_$round" gemmaserve ""
  run_tg "prev_$round" gemmaserve.prev ""
  i=0
  for e in "${envs[@]}"; do
    i=$((i + 1))
    [ -n "$e" ] && run_tg "env${i}_$round" gemmaserve "$e"
  done
done
for v in gemmaserve gemmaserve.prev; do
  timeout 120 "$DEV/bin/$v" bench --ops --ops-only matmul --device cuda --json >"$OUT/mv_$v.json" 2>>"$OUT/bench.log"
done
i=0
for e in "${envs[@]}"; do
  i=$((i + 1))
  [ -n "$e" ] && env "$e" timeout 120 "$DEV/bin/gemmaserve" bench --ops --ops-only matmul --device cuda --json \
    >"$OUT/mv_env$i.json" 2>>"$OUT/bench.log"
done
echo "env settings: ${GS_AB_ENVS:-none}"
python3 - "$OUT" <<'PY'
import json, os, sys, glob
out = sys.argv[1]
# The matmul lines first, the tg / verify lines last (the end of the output is what a device
# call returns), then the JSON files go (a call brings back only a few files).
for f in sorted(glob.glob(os.path.join(out, "mv_*.json"))) + sorted(glob.glob(os.path.join(out, "tg_*.json"))):
    try:
        res = json.load(open(f)).get("results", [])
    except Exception as e:
        print(f, "unreadable:", e); continue
    print("--", os.path.basename(f))
    for r in res:
        extra = ""
        if "tokens_per_s" in r: extra = f"{r['tokens_per_s']:8.1f} tok/s"
        if "decode_steps" in r: extra = f"{r['decode_steps']:6.3f} steps"
        if r['group'] in ('memory', 'gemm') or (r['group'] == 'matmul' and not r['test'].endswith(('rows 1', 'rows 5'))):
            continue
        print(f"  {r['group']:8} {r['test'][:40]:40} {r['seconds'] * 1e6:10.1f} us {r.get('gb_per_s', 0):6.0f} GB/s {extra}")
PY
rm -f "$OUT"/tg_*.json "$OUT"/mv_*.json
