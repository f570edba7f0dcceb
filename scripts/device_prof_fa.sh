#!/usr/bin/env bash
# Nsight Compute on the 64-row attention kernel at head_dim 512 (the 31B's full layers) on a
# lent GPU machine (binaries as in device_run.sh): its first launch in a prefill of
# GS_PF_TOKENS (default 512) tokens at depth GS_PF_DEPTH (default 131072, zero fill), and its
# first launch in a decode step at that depth. Duration, throughputs, occupancy, pipe use and
# the top warp stall reasons of each.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
B="$DEV/bin/gemmaserve"
synth_31b_pair >/dev/null || exit 1
D="${GS_PF_DEPTH:-131072}"
prof() {  # NAME, then bench args
  local name=$1; shift
  timeout 240 ncu --clock-control none --set full --kernel-name-base mangled -k regex:FaCfgILi512 -s 0 -c 1 \
    -o "$OUT/$name" "$B" bench -m "$MODEL_31B" --device cuda -r 1 --depth-fill zeros -d "$D" "$@" >"$OUT/$name.log" 2>&1
  echo "== $name: ncu exit $?"
  ncu --import "$OUT/$name.ncu-rep" --page details >"$OUT/$name.txt" 2>&1
  ncu --import "$OUT/$name.ncu-rep" --page raw --csv >"$OUT/$name.raw.csv" 2>&1
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|Active Warps Per|Achieved Occupancy|Registers Per|Grid Size|Block Size|Dynamic Shared|L2 Hit Rate" "$OUT/$name.txt" | head -16
  python3 - "$OUT/$name.raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    head, vals = rows[0], rows[2]
    st, pipes = [], []
    for h, v in zip(head, vals):
        try:
            x = float(v.replace(",", ""))
        except ValueError:
            continue
        if "issue_stalled" in h and h.endswith("per_issue_active.ratio"):
            st.append((x, h.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", "")))
        if h.startswith("sm__inst_executed_pipe_") and h.endswith("pct_of_peak_sustained_active"):
            pipes.append((x, h.replace("sm__inst_executed_pipe_", "").replace(".avg.pct_of_peak_sustained_active", "")))
        if h.startswith("sm__pipe_") and "cycles_active" in h and h.endswith("pct_of_peak_sustained_active"):
            pipes.append((x, h))
    print("stalls (cycles per issued instruction):", ", ".join(f"{n} {v:.2f}" for v, n in sorted(st, reverse=True)[:8]))
    print("pipes (% of peak):", ", ".join(f"{n} {v:.1f}" for v, n in sorted(pipes, reverse=True)[:8]))
PY
}
prof fa_prefill -p "${GS_PF_TOKENS:-512}" -n 0
prof fa_decode -p 0 -n 4
rm -f "$OUT"/*.ncu-rep "$OUT"/*.raw.csv
