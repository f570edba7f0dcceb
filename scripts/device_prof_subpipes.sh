#!/usr/bin/env bash
# Which unit the Q4_K tile saturates (docs/perf-notes.md, seventeenth session: its rate stops
# rising between 16 and 24 warps an SM while no pipe metric of --set full is above half its
# peak): Nsight Compute's per-pipe and per-sub-pipe counters (FMA heavy / lite, fp16, ALU,
# tensor, shared, ...) for the Q4_K 5376 x 21504 matvec of the microbenchmarks, under each
# setting of GS_AB (';'-separated, e.g. ";GS_MVS_DIAG=2"), as % of peak and as instructions
# per 16 x 256 tile. Binaries as in device_run.sh (.dev/cuda); ~30 s a setting.
#   GS_PROF_SKIP   matching launches to skip first (default 24: that matvec)
#   GS_PROF_TILES  its 16 x 256 tiles (default 28224), for the per-tile counts
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh >/dev/null
SKIP="${GS_PROF_SKIP:-24}"
TILES="${GS_PROF_TILES:-28224}"  # 16 x 256 tiles of a 5376 x 21504 matrix
split_settings "${GS_AB:-}"
metrics='gpu__time_duration.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,'
metrics+='smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,'
metrics+='regex:^sm__pipe_.*cycles_active\.avg\.pct_of_peak_sustained_active$,'
metrics+='regex:^sm__inst_executed_pipe_[a-z0-9_]*\.avg\.pct_of_peak_sustained_active$,'
metrics+='regex:^sm__inst_executed_pipe_[a-z0-9_]*\.sum$'
for s in "${settings[@]}"; do
  echo "== '${s}'"
  # shellcheck disable=SC2086
  env $s timeout 200 ncu --clock-control none --csv --metrics "$metrics" -k regex:matvec_stream_kernel -s "$SKIP" -c 1 \
    "$DEV/bin/gemmaserve" bench --ops --ops-only matmul --device cuda >"$OUT/subpipes.csv" 2>"$OUT/subpipes.log"
  echo "ncu exit $?"
  grep -E "^matvec_stream " "$OUT/subpipes.log" | head -4  # GS_MVS_OCC=1's lines, where the build has it
  python3 - "$OUT/subpipes.csv" "$TILES" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hdr = next((i for i, r in enumerate(rows) if "Metric Name" in r), None)
if hdr is None:
    print("  no metrics:", " ".join(" ".join(r) for r in rows[-3:])[:300]); sys.exit()
h = rows[hdr]
ni, vi = h.index("Metric Name"), h.index("Metric Value")
tiles = float(sys.argv[2])
for r in rows[hdr + 1:]:
    if len(r) <= max(ni, vi): continue
    name, v = r[ni], r[vi].replace(",", "")
    try:
        x = float(v)
    except ValueError:
        continue
    if name.endswith(".sum") and name.startswith("sm__inst_executed_pipe"):
        if x > 0: print(f"  {name:64} {x / tiles:10.1f} warp instructions a tile")
    elif x > 0.3 or "duration" in name or "warps" in name:
        print(f"  {name:64} {x:10.2f}")
PY
done
rm -f "$OUT/subpipes.csv"
