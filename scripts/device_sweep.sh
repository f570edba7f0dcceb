#!/usr/bin/env bash
# Decode-matmul sizing rules side by side (GS_CUDA_MV unset = "split", "grid"), each on the
# matmul microbenchmarks and on tg / verify of the model; JSON under $1.
#   GS_BIN (default build/src/cli), GS_MODEL (default /tmp/gemma4-31b-synth-q4_k_m.gguf)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-bench-out}"
mkdir -p "$OUT_DIR"
BIN="${GS_BIN:-build/src/cli}/gemmaserve"
MODEL="${GS_MODEL:-/tmp/gemma4-31b-synth-q4_k_m.gguf}"
for rule in split grid; do
  export GS_CUDA_MV=$rule
  timeout 120 "$BIN" bench --ops --ops-only matmul --device cuda --json >"$OUT_DIR/mv_$rule.json" 2>/dev/null
  [ "$rule" = grid ] && timeout 200 "$BIN" bench -m "$MODEL" --device cuda -p 0 -n 128 --verify 5,8 -r 2 --json \
    >"$OUT_DIR/tg_$rule.json" 2>/dev/null
done
unset GS_CUDA_MV
python3 - "$OUT_DIR" <<'PY' || true
import json, sys, os
out = sys.argv[1]
rows = {}
for rule in ["split", "grid"]:
    p = os.path.join(out, f"mv_{rule}.json")
    if os.path.exists(p):
        for r in json.load(open(p)).get("results", []):
            if r["group"] == "matmul":
                rows.setdefault(r["test"], {})[rule] = (r["seconds"], r["gb_per_s"])
print(f"{'matmul':40} {'split us':>9} {'GB/s':>6} {'grid us':>9} {'GB/s':>6}")
for k, v in rows.items():
    a = v.get("split", (0, 0)); b = v.get("grid", (0, 0))
    print(f"{k[:40]:40} {a[0]*1e6:9.2f} {a[1]:6.0f} {b[0]*1e6:9.2f} {b[1]:6.0f}")
p = os.path.join(out, "tg_grid.json")
if os.path.exists(p):
    for r in json.load(open(p)).get("results", []):
        if r["group"] in ("tg", "verify"):
            print("grid rule:", r["test"], r["shape"], f"{r['seconds']*1e3:.2f} ms")
PY
