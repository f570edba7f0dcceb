#!/usr/bin/env bash
# Nsight Compute profile of one kernel of the decode matmul microbenchmarks on a lent GPU
# machine (binaries as in device_run.sh): the summary, the warp stall reasons per issued
# instruction and the SASS instructions with the most stall samples. Writes the report,
# the raw metrics and the annotated SASS under $OUT.
#   GS_PROF_KERNEL  kernel name regex (default matvec_stream_kernel)
#   GS_PROF_SKIP    matching launches to skip first (default 24: the Q4_K 5376 x 21504 matvec)
#   GS_PROF_NAME    report name (default prof)
#   GS_PROF_NAME_BASE  what the regex matches: function (default), demangled (with the template
#                   arguments, e.g. '\(int\)3>' for the int8 compute_sb form) or mangled
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
K="${GS_PROF_KERNEL:-matvec_stream_kernel}"
SKIP="${GS_PROF_SKIP:-24}"
NAME="${GS_PROF_NAME:-prof}"
timeout 240 ncu --clock-control none --kernel-name-base "${GS_PROF_NAME_BASE:-function}" --set full --import-source no -k "regex:$K" -s "$SKIP" -c 1 -o "$OUT/$NAME" \
  "$DEV/bin/gemmaserve" bench --ops --ops-only matmul --device cuda >"$OUT/$NAME.log" 2>&1
echo "ncu exit $?"
ncu --import "$OUT/$NAME.ncu-rep" --page details >"$OUT/$NAME.txt" 2>&1
ncu --import "$OUT/$NAME.ncu-rep" --page raw --csv >"$OUT/$NAME.raw.csv" 2>&1
ncu --import "$OUT/$NAME.ncu-rep" --page source --csv --print-source sass >"$OUT/$NAME.sass.csv" 2>&1 || true
grep -E "^  [a-zA-Z_]|Duration|Issued Instructions  |Issue Slots Busy|Eligible Warps|Active Warps Per|DRAM Throughput|L1/TEX Hit|Registers Per|Achieved Active" \
  "$OUT/$NAME.txt" | head -14
python3 - "$OUT/$NAME.raw.csv" "$OUT/$NAME.sass.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) >= 3:
    head, vals = rows[0], rows[2]
    st = [(float(v.replace(",", "")), h) for h, v in zip(head, vals)
          if "issue_stalled" in h and h.endswith("per_issue_active.ratio") and v.replace(",", "").replace(".", "").isdigit()]
    print("stall reasons (warp cycles per issued instruction):")
    for v, h in sorted(st, reverse=True)[:12]:
        print(f"  {v:7.3f}  {h.replace('smsp__average_warps_issue_stalled_', '').replace('_per_issue_active.ratio', '')}")
try:
    src = list(csv.reader(open(sys.argv[2])))
    hdr = next(i for i, r in enumerate(src) if any("Source" == c for c in r))
    h = src[hdr]
    si = h.index("Source")
    cand = [i for i, c in enumerate(h) if "Sampling" in c and "All" in c]
    ci = cand[0] if cand else None
    if ci is not None:
        body = [r for r in src[hdr + 1:] if len(r) > max(si, ci)]
        tot = sum(float(r[ci] or 0) for r in body) or 1
        print(f"top SASS by stall samples ({h[ci]}):")
        for r in sorted(body, key=lambda r: -float(r[ci] or 0))[:25]:
            print(f"  {100 * float(r[ci] or 0) / tot:5.1f}%  {r[si][:90]}")
except Exception as e:
    print("source page:", e)
PY
