#!/usr/bin/env bash
# Nsight Compute of the Q4_K 5376 x 21504 decode matvec, the full kernel and its compute side alone
# (GS_MVS_DIAG=2): device_profile.sh's summary and stalls, then every pipe-utilisation metric of the
# raw page (which pipe the tile body keeps busy). Binaries as in device_run.sh (.dev/cuda).
cd "$(dirname "$0")/.."
set -uo pipefail
. scripts/device_env.sh >/dev/null
for mode in 0 2; do
  echo "== GS_MVS_DIAG=$mode"
  GS_MVS_DIAG=$mode GS_PROF_NAME=prof$mode scripts/device_profile.sh 2>&1 | head -60
  python3 - "$OUT/prof$mode.raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    head, units, vals = rows[0], rows[1], rows[2]
    for h, u, v in zip(head, units, vals):
        if ("pipe" in h and ("pct" in h or "inst_executed" in h)) or "sm__cycles_elapsed.avg.per_second" in h or "gpc__cycles_elapsed.max" in h or "inst_executed.sum" == h.split(".")[0]+".sum":
            print(f"  {h:90} {v:>14} {u}")
PY
done
rm -f $OUT/*.ncu-rep $OUT/*.sass.csv
ls -la $OUT
