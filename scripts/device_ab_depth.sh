#!/usr/bin/env bash
# A/B of run-time settings at depth on a lent GPU machine, in one call: tg64 and verify 5 (and
# the prefills of GS_AB_PROMPTS, default none: e.g. 512,4096) on
# `synth --preset 31b` at the depths of GS_AB_DEPTHS (default 0,32768) under each setting of
# GS_AB (environment assignments separated by ';', empty = defaults), GS_AB_ROUNDS rounds
# (default 2) in alternating order; GS_AB_FILL=zeros reaches the depths without their prefill
# (bench --depth-fill). Binaries as in device_run.sh (.dev/cuda); a summary line
# per run, JSON removed (a device call returns only a few files). A setting with
# GS_AB_BIN=NAME runs $DEV/bin/NAME instead of gemmaserve (another build carried beside it).
#   GS_AB=";GS_ATTN_SPLIT_POS=64" scripts/device_ab_depth.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
[ -f "$M" ] || "$BIN" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1
split_settings "${GS_AB:-}"
for round in $(seq 1 "${GS_AB_ROUNDS:-2}"); do
  for s in "${settings[@]}"; do
    j="$OUT/depth.json"
    b="$(sed -n 's/.*GS_AB_BIN=\([^ ]*\).*/\1/p' <<<"$s")"
    bin_s="$BIN"
    [ -n "$b" ] && bin_s="$DEV/bin/$b"
    env $s timeout 300 "$bin_s" bench -m "$M" --device cuda -p "${GS_AB_PROMPTS:-0}" -n 64 -d "${GS_AB_DEPTHS:-0,32768}" --verify 5 -r 1 \
      ${GS_AB_FILL:+--depth-fill "$GS_AB_FILL"} --json >"$j" 2>>"$OUT/bench.log"
    python3 - "$j" "$round" "$s" <<'PY'
import json, sys
res = json.load(open(sys.argv[1])).get("results", [])
cells = []
for r in res:
    if r.get("group") not in ("pp", "tg", "verify"): continue
    v = f"{r['tokens_per_s']:.1f} tok/s" if "tokens_per_s" in r else f"{r.get('decode_steps', 0):.3f} steps"
    cells.append(f"{r['test']}@{r.get('depth', 0)} {r['seconds']*1e3:.2f} ms {v}")
print(f"round {sys.argv[2]} '{sys.argv[3]}': " + " | ".join(cells))
PY
    rm -f "$j"
  done
done
