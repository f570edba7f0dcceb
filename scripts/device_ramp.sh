#!/usr/bin/env bash
# The decode matvec's fixed cost a launch against its bytes (bench --ops --ops-only ramp,
# bench_ramp.h), with the real kernel and with each of its halves alone: GS_MVS_DIAG=1 streams
# the weights without computing, 2 computes without streaming (k_matvec_stream.cu). Binaries as
# in device_run.sh; JSON under $OUT; a summary table last. GS_RAMP_DIAGS (default "0 1 2"): which
# of the three to run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for d in ${GS_RAMP_DIAGS:-0 1 2}; do
  GS_MVS_DIAG=$d timeout 150 "$BIN" bench --ops --ops-only ramp --device cuda --json >"$OUT/ramp_$d.json" 2>>"$OUT/ramp.log" ||
    echo "ramp GS_MVS_DIAG=$d failed: $(tail -2 "$OUT/ramp.log")"
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
names = {0: "real", 1: "stream alone", 2: "compute alone"}
tab = {}
for d in (0, 1, 2):
    p = os.path.join(out, f"ramp_{d}.json")
    if not os.path.exists(p):
        continue
    for r in json.load(open(p)).get("results", []):
        if r["group"] == "ramp":
            tab.setdefault((r["test"], r["shape"]), {})[d] = (r["seconds"] * 1e6, r["gb_per_s"])
print(f"{'test':24} {'shape':12} " + " ".join(f"{names[d]:>22}" for d in (0, 1, 2)))
for (t, s), v in tab.items():
    cells = [f"{v[d][0]:10.2f} us {v[d][1]:6.0f} GB/s" if d in v else " " * 22 for d in (0, 1, 2)]
    print(f"{t:24} {s:12} " + " ".join(cells))
PY
