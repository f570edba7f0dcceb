#!/usr/bin/env bash
# The issue-7 numbers in one call on a lent GPU machine (binaries as in device_run.sh): the
# whole device test suite, then on `synth --preset 31b` pp512/pp4096, tg128 and verify 2/5/8,
# one launch per weight in the same run (GS_CUDA_MULTI=0: no matmul_multi grouping), pp4096
# (GS_DEPTH_PROMPTS; 0: none), tg64 and verify 5 at depths 32768 and 131072, and the decode
# matmul microbenchmarks. The suite's limit is GS_TEST_TIMEOUT (default 420 s: on the H200 the
# suite and its reruns took more than 280). JSON and logs
# under $OUT; a summary table last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader
("$BIN" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1; echo "synth exit $?" >>"$OUT/synth.log") &
synth_pid=$!
if [ "${GS_NUMBERS_TESTS:-1}" != 0 ]; then  # GS_NUMBERS_TESTS=0: the suite already ran on this build
  timeout "${GS_TEST_TIMEOUT:-420}" scripts/device_test.sh >"$OUT/tests.log" 2>&1
  tests_summary $?
fi
wait "$synth_pid"
tail -1 "$OUT/synth.log"
b() {  # $1 = json name, then env assignments, then bench args
  local out="$1"; shift
  local envs=()
  while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
  env "${envs[@]}" timeout 400 "$BIN" bench -m "$M" --device cuda --json "$@" >"$OUT/$out.json" 2>>"$OUT/bench.log"
}
b d0 -p 512,4096 -n 128 --verify 2,5,8 -r 3
b multi_off GS_CUDA_MULTI=0 -p 0 -n 128 --verify 5 -r 2
# GS_NUMBERS_FILL=zeros reaches the depths without their prefill (bench --depth-fill; the same
# step times within 1%, thirteenth session)
b depth -p "${GS_DEPTH_PROMPTS:-4096}" -n 64 -d "${GS_DEPTHS:-32768,131072}" --verify 5 -r 1 ${GS_NUMBERS_FILL:+--depth-fill "$GS_NUMBERS_FILL"}
timeout 120 "$BIN" bench --ops --ops-only matmul --device cuda --json >"$OUT/mv.json" 2>>"$OUT/bench.log"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
for f in ["d0", "multi_off", "depth", "mv"]:
    try:
        res = json.load(open(os.path.join(out, f + ".json"))).get("results", [])
    except Exception as e:
        print(f, "unreadable:", e)
        continue
    print("--", f)
    for r in res:
        extra = ""
        if "tokens_per_s" in r: extra = f"{r['tokens_per_s']:8.1f} tok/s"
        if "decode_steps" in r: extra = f"{r['decode_steps']:6.3f} steps"
        print(f"  {r['group']:8} {r['test'][:36]:36} {r['seconds'] * 1e3:9.3f} ms {r.get('gb_per_s', 0):6.0f} GB/s "
              f"{r.get('tflops', 0):6.1f} TF {r.get('pct_of_limit', 0):5.1f}% {extra}")
PY
