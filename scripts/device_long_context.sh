#!/usr/bin/env bash
# Decode at long contexts on a lent GPU machine (binaries as in device_run.sh): on
# `synth --preset 31b` with its synthetic drafter (`31b-assistant`, random weights: nothing is
# accepted, so the mtp rows measure the drafting overhead, not a speed-up), tg64, verify 5 and
# tg64 with 4 drafts at depths reached with zero K/V (`--depth-fill zeros`, no prefill), and
# the first depth once more prefilled, to show that the fill does not change the timing.
#   GS_LC_DEPTHS (default 131072,524288,1048576), GS_LC_CHECK (default 131072; empty: none)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
D="$DRAFTER_31B"
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv,noheader
synth_31b_pair || exit 1
b() {  # $1 = json name, then bench args
  local out="$1"; shift
  local t0=$SECONDS
  timeout 500 "$BIN" bench -m "$M" --device cuda --json "$@" >"$OUT/$out.json" 2>>"$OUT/bench.log"
  echo "bench $out: exit $? in $((SECONDS - t0)) s"
}
b zeros -p 0 -n 64 -d "${GS_LC_DEPTHS:-131072,524288,1048576}" --depth-fill zeros --verify 5 -r 1 --mtp "$D"
[ -n "${GS_LC_CHECK-131072}" ] && b prefilled -p 0 -n 64 -d "${GS_LC_CHECK-131072}" --verify 5 -r 1
grep -E "filled|error|Error|fail" "$OUT/bench.log" | head -10
nvidia-smi --query-gpu=memory.used --format=csv,noheader
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
for f in ["zeros", "prefilled"]:
    try:
        j = json.load(open(os.path.join(out, f + ".json")))
    except Exception as e:
        print(f, "unreadable:", e)
        continue
    print("--", f, j.get("error", ""))
    for r in j.get("results", []):
        extra = ""
        if "tokens_per_s" in r: extra = f"{r['tokens_per_s']:8.2f} tok/s"
        if "limit_tokens_per_s" in r: extra += f" (limit {r['limit_tokens_per_s']:.1f})"
        if "decode_steps" in r: extra = f"{r['decode_steps']:6.3f} steps"
        if "drafted" in r: extra += f" drafted {r['drafted']} accepted {r['accepted']}"
        print(f"  {r['group']:8} {r['test'][:30]:30} {r['seconds'] * 1e3:9.3f} ms {r.get('gb_per_s', 0):6.0f} GB/s "
              f"{r.get('pct_of_limit', 0):5.1f}% {extra}")
PY
