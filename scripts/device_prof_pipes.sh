#!/usr/bin/env bash
# Nsight Compute of the Q4_K 5376 x 21504 decode matvec on a lent GPU machine, the full kernel
# and its compute side alone (GS_MVS_DIAG=2): device_profile.sh's summary and stall reasons,
# then each pipe's utilisation (average over the SMs, % of its peak while active), which says
# whether the tile body saturates a unit or waits on latency (docs/perf-notes.md, sixteenth
# session). Binaries as in device_run.sh (.dev/cuda); the reports' text and raw CSV under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh >/dev/null
for mode in 0 2; do
  echo "== GS_MVS_DIAG=$mode"
  GS_MVS_DIAG=$mode GS_PROF_NAME="prof$mode" scripts/device_profile.sh 2>&1 | head -60
  python3 - "$OUT/prof$mode.raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    d = dict(zip(rows[0], rows[2]))
    for h, v in d.items():
        if "pipe" in h and h.endswith(".avg.pct_of_peak_sustained_active"):
            x = float(v.replace(",", "") or 0)
            if x > 0.5:
                print(f"  {h.replace('.avg.pct_of_peak_sustained_active', ''):60} {x:6.1f}%")
PY
done
rm -f "$OUT"/*.ncu-rep "$OUT"/*.sass.csv  # a call returns only a few files
