#!/usr/bin/env bash
# Final measurement on a lent GPU machine: the device tests, then an A/B of two builds
# ($DEV/bin/gemmaserve = new, $DEV/bin/gemmaserve.prev = previous) on tg128/verify at depth
# 0; the build whose tests pass and that decodes faster then runs pp512/pp4096, depths
# 32768/131072 and the decode matmul microbenchmarks. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
MODEL="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/device.txt"
(nice -n 10 "$DEV/bin/gemmaserve" synth --preset 31b -o "$MODEL" --quiet >"$OUT/synth.log" 2>&1) &
synth_pid=$!
timeout 240 scripts/device_test.sh >"$OUT/tests.log" 2>&1
test_rc=$?
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" "$OUT/tests.log" | head -20
wait "$synth_pid"; tail -1 "$OUT/synth.log"
tg() {  # $1 = binary; prints tokens/s of tg128
  "$1" bench -m "$MODEL" --device cuda -p 0 -n 128 --verify 5,8 -r 2 --json 2>>"$OUT/bench.log" | tee "$2" |
    python3 -c "import json,sys; j=json.load(sys.stdin); print([r['extra'] if False else r.get('tokens_per_s', r.get('decode_steps')) for r in j['results'] if r['group'] in ('tg','verify')])" 2>/dev/null
}
echo "new:  $(tg "$DEV/bin/gemmaserve" "$OUT/ab_new.json")"
echo "prev: $(tg "$DEV/bin/gemmaserve.prev" "$OUT/ab_prev.json")"
pick=$(python3 - "$OUT" "$test_rc" <<'PY'
import json, sys, os
out, rc = sys.argv[1], int(sys.argv[2])
def tps(f):
    try:
        return [r["tokens_per_s"] for r in json.load(open(os.path.join(out, f)))["results"] if r["group"] == "tg"][0]
    except Exception:
        return 0
new, prev = tps("ab_new.json"), tps("ab_prev.json")
print("gemmaserve" if rc == 0 and new >= prev else "gemmaserve.prev")
PY
)
echo "using $pick (tests exit $test_rc)"
BIN="$DEV/bin/$pick"
timeout 150 "$BIN" bench -m "$MODEL" --device cuda -p 512,4096 -n 0 -r 3 --json >"$OUT/pp.json" 2>>"$OUT/bench.log"
timeout 300 "$BIN" bench -m "$MODEL" --device cuda -p 0 -n 64 -d 32768,131072 --verify 5 -r 2 --json \
  >"$OUT/depth.json" 2>>"$OUT/bench.log"
timeout 60 "$BIN" bench --ops --ops-only matmul --device cuda --json >/tmp/mv.json 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def rows(f):
    p = f if f.startswith("/") else os.path.join(out, f)
    try:
        return json.load(open(p)).get("results", [])
    except Exception as e:
        print(f, "unreadable", e); return []
for f in ["ab_new.json", "ab_prev.json", "pp.json", "depth.json", "/tmp/mv.json"]:
    print("--", os.path.basename(f))
    for r in rows(f):
        t = r["seconds"]
        extra = ""
        if "tokens_per_s" in r: extra = f"{r['tokens_per_s']:8.1f} tok/s"
        if "decode_steps" in r: extra = f"{r['decode_steps']:6.3f} steps"
        print(f"{r['group']:8} {r['test'][:34]:34} {t*1e3:9.3f} ms {r['gb_per_s']:6.0f} GB/s {r['tflops']:6.1f} TF {r['pct_of_limit']:5.1f}% {extra}")
PY
