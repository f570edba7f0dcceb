#!/usr/bin/env bash
# Nsight Compute of the several-row int8 Q4_K forms (GS_MVS_Q4K=1: compute_sb at 5..16 rows,
# compute_sb4 at 2..4; decision 0028) on a lent GPU machine, as device_prof_pipes.sh does for the
# f16 form: device_profile.sh's summary, stall reasons and top SASS, then each pipe's
# utilisation. The kernels are picked by their template arguments (the demangled names end '(int)0, (int)3>'), the
# third launch of each in `bench --ops --ops-only matmul` (the Q4_K 5376 x 21504 matvec, rows 5
# and rows 2). Binaries as in device_run.sh (.dev/cuda).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh >/dev/null
export GS_PROF_NAME_BASE=demangled GS_MVS_Q4K=1
for form in "sb:\(int\)0, \(int\)3>" "sb4:\(int\)0, \(int\)4>"; do
  name="${form%%:*}"
  echo "== ${name} (${form#*:})"
  GS_PROF_KERNEL="${form#*:}" GS_PROF_SKIP=2 GS_PROF_NAME="$name" scripts/device_profile.sh 2>&1 | head -60
  python3 - "$OUT/$name.raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    d = dict(zip(rows[0], rows[2]))
    for h, v in d.items():
        if h.startswith("Kernel Name") or h == "Block Size" or h == "Grid Size":
            print(f"  {h}: {v[:120]}")
    for h, v in d.items():
        if "pipe" in h and h.endswith(".avg.pct_of_peak_sustained_active"):
            x = float(v.replace(",", "") or 0)
            if x > 0.5:
                print(f"  {h.replace('.avg.pct_of_peak_sustained_active', ''):60} {x:6.1f}%")
    for h, v in d.items():
        if "bank_conflict" in h or "local_" in h and "sum" in h:
            print(f"  {h}: {v}")
PY
done
rm -f "$OUT"/*.ncu-rep "$OUT"/*.sass.csv  # a call returns only a few files
