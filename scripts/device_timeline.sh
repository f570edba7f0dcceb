#!/usr/bin/env bash
# Nsight Systems timeline of decode on a lent GPU machine (binaries as in device_run.sh): tg N
# on the 31B-shaped synthetic file with the CUDA graph's kernels traced one by one, then the
# GPU time per kernel name (sum, count, mean) as a table under $OUT/timeline.txt, so a decode
# step's time can be split by kernel instead of by difference. Needs `nsys` on the PATH.
#   GS_TL_N  tokens to generate (default 32)   GS_TL_ENV  one VAR=value for the run (optional)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
M="$MODEL_31B"
command -v nsys >/dev/null || { echo "device_timeline: no nsys here" >&2; exit 2; }
[ -f "$M" ] || "$DEV/bin/gemmaserve" synth --preset 31b -o "$M" --quiet
N="${GS_TL_N:-32}"
env ${GS_TL_ENV:+"$GS_TL_ENV"} timeout 240 nsys profile --trace=cuda --cuda-graph-trace=node --sample=none \
  --cpuctxsw=none -o "$OUT/timeline" -f true \
  "$DEV/bin/gemmaserve" bench -m "$M" --device cuda -p 0 -n "$N" -r 1 >"$OUT/timeline.log" 2>&1
echo "nsys exit $?"
nsys stats --report cuda_gpu_kern_sum --format csv -o "$OUT/timeline" "$OUT/timeline.nsys-rep" >/dev/null 2>&1
python3 - "$OUT" "$N" <<'PY'
import csv, glob, sys
out, n = sys.argv[1], int(sys.argv[2])
f = (glob.glob(out + "/timeline*kern_sum*.csv") or [None])[0]
if not f:
    print("no kernel summary"); sys.exit(0)
rows = list(csv.DictReader(open(f)))
total = sum(float(r["Total Time (ns)"]) for r in rows)
lines = [f"GPU kernel time {total / 1e6:.1f} ms over the run ({n} tg steps plus warm-up and load)"]
for r in rows[:40]:
    name = r["Name"][:90]
    lines.append(f'{float(r["Time (%)"]):5.1f}% {float(r["Total Time (ns)"]) / 1e6:9.2f} ms {int(r["Instances"]):7d} x '
                 f'{float(r["Avg (ns)"]) / 1e3:8.2f} us  {name}')
open(out + "/timeline.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines[:28]))
PY
