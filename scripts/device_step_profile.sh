#!/usr/bin/env bash
# Where a decode step's GPU time goes, kernel by kernel, on a lent GPU machine (binaries as in
# device_run.sh): Nsight Compute times every kernel of a short `bench` on `synth --preset 31b`
# (each kernel alone: ncu serializes them, so overlaps between kernels are not counted), then
# prints the kernels grouped by name with their launches and time per decode step, next to the
# step time of the same bench without the profiler. The JSON and report stay under $OUT only
# until the summary is printed.
#   GS_STEP_N       decode steps of the profiled bench (default 4)
#   GS_STEP_DEPTH   context depth of the profiled bench (default 0)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
N="${GS_STEP_N:-4}"
D="${GS_STEP_DEPTH:-0}"
[ -f "$M" ] || "$BIN" synth --preset 31b -o "$M" --quiet >"$OUT/synth.log" 2>&1
timeout 200 "$BIN" bench -m "$M" --device cuda -p 0 -n "$N" -d "$D" -r 1 2>&1 | grep -E "tg|verify" | head -4
timeout 400 ncu --clock-control none --metrics gpu__time_duration.sum -o "$OUT/step" \
  "$BIN" bench -m "$M" --device cuda -p 0 -n "$N" -d "$D" -r 1 >"$OUT/step.log" 2>&1
echo "ncu exit $?"
ncu --import "$OUT/step.ncu-rep" --page raw --csv --metrics gpu__time_duration.sum >"$OUT/step.csv" 2>&1
rm -f "$OUT/step.ncu-rep"
python3 - "$OUT/step.csv" "$N" <<'PY'
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[hdr]
ki, ti = h.index("Kernel Name"), h.index("gpu__time_duration.sum")
unit = rows[hdr + 1][ti] if len(rows) > hdr + 1 else ""
body = [r for r in rows[hdr + 2:] if len(r) > max(ki, ti)]
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit.strip(), None)
if scale is None:
    print(f"unknown time unit {unit!r}: values printed as found")
    scale = 1.0
# The decode steps are the last launches: everything from the N-th last launch of the
# embedding kernel (one per step) on.
names = [r[ki] for r in body]
emb = [i for i, n in enumerate(names) if "embed" in n]
start = emb[-int(sys.argv[2])] if len(emb) >= int(sys.argv[2]) else 0
agg = {}
for r in body[start:]:
    n = re.sub(r"\(.*", "", r[ki])
    n = re.sub(r"gs::cuda::|\(anonymous namespace\)::|void ", "", n)
    n = n[:110]
    a = agg.setdefault(n, [0, 0.0])
    a[0] += 1
    a[1] += float(r[ti].replace(",", "")) * scale
steps = int(sys.argv[2])
tot = sum(v[1] for v in agg.values()) / steps
print(f"{len(body) - start} launches over the last {steps} steps; kernel time per step {tot:.1f} us (each kernel alone)")
for n, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"  {t / steps:8.1f} us  {c / steps:6.1f}x  {100 * t / steps / tot:5.1f}%  {n}")
PY
rm -f "$OUT/step.csv"
