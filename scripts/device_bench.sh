#!/usr/bin/env bash
# The issue-7 numbers on a GPU host: the op microbenchmarks, then a Gemma-4-31B-shaped
# Q4_K_M file (gemmaserve synth --preset 31b) through `gemmaserve bench` (pp512/pp4096,
# tg128, tg64 at depths, verify passes). JSON and one log (bench.log) go to $1 (default:
# bench-out/).
#   GS_BIN      folder of the gemmaserve binary (default: build/src/cli)
#   GS_MODEL    use this GGUF instead of synthesizing one
#   GS_DEPTHS   depths for tg64 (default 32768,131072); GS_SKIP_OPS=1 skips the op benches
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-bench-out}"
mkdir -p "$OUT_DIR"
BIN="${GS_BIN:-build/src/cli}/gemmaserve"
DEPTHS="${GS_DEPTHS-32768,131072}"
status=0

if [ "${GS_SKIP_OPS:-0}" != 1 ]; then
  echo "== op benchmarks"
  timeout 300 "$BIN" bench --ops --device cuda --json >"$OUT_DIR/ops.json" 2>>"$OUT_DIR/bench.log" || status=1
fi

MODEL="${GS_MODEL:-}"
if [ -z "$MODEL" ]; then
  MODEL="${GS_MODEL_DIR:-/tmp}/gemma4-31b-synth-q4_k_m.gguf"
  if [ ! -f "$MODEL" ]; then
    echo "== synth --preset 31b"
    start=$(date +%s)
    timeout 240 "$BIN" synth --preset 31b -o "$MODEL" --quiet >>"$OUT_DIR/bench.log" 2>&1 || status=1
    echo "synth: $(( $(date +%s) - start )) s, $(du -h "$MODEL" 2>/dev/null | cut -f1)"
  fi
fi

echo "== model bench (depth 0)"
timeout 400 "$BIN" bench -m "$MODEL" --device cuda -p 512,4096 -n 128 --verify 1,2,5,8 -r 3 --json \
  >"$OUT_DIR/bench_d0.json" 2>>"$OUT_DIR/bench.log" || status=1
if [ -n "$DEPTHS" ]; then
  echo "== model bench (depths $DEPTHS)"
  timeout 500 "$BIN" bench -m "$MODEL" --device cuda -p 0 -n 64 -d "$DEPTHS" --verify 5 -r 2 --json \
    >"$OUT_DIR/bench_depth.json" 2>>"$OUT_DIR/bench.log" || status=1
fi
tail -12 "$OUT_DIR/bench.log"

python3 - "$OUT_DIR" <<'PY' || true
import json, sys, glob, os
out = sys.argv[1]
for f in ["ops.json", "bench_d0.json", "bench_depth.json"]:
    p = os.path.join(out, f)
    if not os.path.exists(p):
        continue
    try:
        j = json.load(open(p))
    except Exception as e:
        print(f"{f}: unreadable ({e})")
        continue
    print(f"-- {f}: {j.get('backend', '')} {j.get('error', '')}")
    for r in j.get("results", []):
        t = r["seconds"]
        ts = f"{t*1e3:9.3f} ms" if t >= 1e-3 else f"{t*1e6:9.2f} us"
        extra = ""
        if "tokens_per_s" in r:
            extra = f"{r['tokens_per_s']:8.1f} tok/s"
        if "decode_steps" in r:
            extra = f"{r['decode_steps']:6.2f} steps"
        print(f"{r['group']:9} {r['test'][:38]:38} {r['shape'][:22]:22} {ts} "
              f"{r['gb_per_s']:7.0f} GB/s {r['tflops']:7.1f} TF {r['pct_of_limit']:6.1f}% {extra}")
PY
exit $status
