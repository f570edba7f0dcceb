#!/usr/bin/env bash
# The decode matmul microbenchmarks (`bench --ops --ops-only matmul`, rows 1 and 5) and, with
# GS_AB_TG=1, tg128 / verify 5 (GS_AB_VERIFY: another list of verify sizes, e.g. 2,5,8) on
# `synth --preset 31b`, under each setting of GS_AB (';'
# separated; a setting may hold several space-separated assignments; empty = defaults), then
# the same for $DEV/bin/gemmaserve.prev if it is there. One line per matmul. Binaries as in
# device_run.sh (.dev/cuda).
#   GS_AB=";GS_MVS_CTAS_PER_SM=1;GS_MVS_CTAS_PER_SM=1 GS_MVS_RING_KB=96" scripts/device_ab_ops.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
M="$MODEL_31B"
split_settings "${GS_AB:-}"
runs=()
for s in "${settings[@]}"; do runs+=("gemmaserve|$s"); done
[ -x "$DEV/bin/gemmaserve.prev" ] && runs+=("gemmaserve.prev|")
if [ "${GS_AB_TG:-0}" = 1 ] && [ ! -f "$M" ]; then
  "$DEV/bin/gemmaserve" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1
fi
for r in "${runs[@]}"; do
  bin="${r%%|*}" s="${r#*|}"
  echo "== $bin '${s}'"
  # shellcheck disable=SC2086
  env $s timeout 120 "$DEV/bin/$bin" bench --ops --ops-only matmul --device cuda --json >"$OUT/mv.json" 2>>"$OUT/bench.log"
  results=("$OUT/mv.json")
  if [ "${GS_AB_TG:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    env $s timeout 200 "$DEV/bin/$bin" bench -m "$M" --device cuda -p 0 -n 128 --verify "${GS_AB_VERIFY:-5}" -r 2 --json >"$OUT/tg.json" \
      2>>"$OUT/bench.log"
    results+=("$OUT/tg.json")
  fi
  python3 - "${results[@]}" <<'PY'
import json, sys
for f in sys.argv[1:]:
    try:
        res = json.load(open(f)).get("results", [])
    except Exception as e:
        print("  unreadable:", e); continue
    for r in res:
        if r["group"] == "matmul" and not r["test"].endswith(("rows 1", "rows 5")): continue
        if r["group"] not in ("matmul", "tg", "verify"): continue
        extra = f"{r['tokens_per_s']:.1f} tok/s" if "tokens_per_s" in r else (f"{r['decode_steps']:.3f} steps" if "decode_steps" in r else "")
        print(f"  {r['test'][:40]:40} {r['seconds'] * 1e6:10.1f} us {r.get('gb_per_s', 0):6.0f} GB/s {extra}")
PY
done
rm -f "$OUT/mv.json" "$OUT/tg.json"
