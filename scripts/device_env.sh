# Sourced by the scripts that run prebuilt binaries on a lent GPU machine (device_run.sh,
# device_final.sh, device_ab_env.sh), from the repository root: where the carried binaries,
# libraries and shared data are (.dev/cuda, see docs/perf-notes.md "Running on the device
# machine"), where logs go ($OUT), and the 31B-shaped file they synthesize.
DEV=.dev/cuda
OUT="${OUT:-/tmp/gs-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$DEV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GS_SHARED_DIR="$PWD/$DEV/shared"
export GS_DEVICE_BIN="$PWD/$DEV/bin"
MODEL_31B=/tmp/gemma4-31b-synth-q4_k_m.gguf
DRAFTER_31B=/tmp/gemma4-31b-synth-assistant.gguf  # `synth --preset 31b-assistant` (random weights)
# synth_31b_pair: writes MODEL_31B and DRAFTER_31B unless they are there (log: $OUT/synth.log).
synth_31b_pair() {
  local bin="$PWD/$DEV/bin/gemmaserve"
  { [ -f "$MODEL_31B" ] || "$bin" synth --preset 31b -o "$MODEL_31B" --quiet; } >>"$OUT/synth.log" 2>&1 &&
    { [ -f "$DRAFTER_31B" ] || "$bin" synth --preset 31b-assistant -o "$DRAFTER_31B" --quiet; } >>"$OUT/synth.log" 2>&1 ||
    { echo "synth failed: $(tail -3 "$OUT/synth.log")"; return 1; }
}
# NSYS: the Nsight Systems CLI, a standalone install or else the one inside Nsight Compute
# (the device image has only the latter); empty if there is none.
NSYS="$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
  /usr/local/cuda/nsight-systems*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)"
# nsys_sqlite NAME: $OUT/NAME.sqlite from the trace `$NSYS profile -o $OUT/NAME` left (log:
# $OUT/nsys.log), removing the trace. The nsys inside Nsight Compute leaves a .qdstrm, which
# its QdstrmImporter turns into the report; the importer needs libdw.so.1, which the device
# image lacks (device_pack.sh carries Debian's in .dev/tools).
nsys_sqlite() {
  local r="$OUT/$1"
  if [ ! -f "$r.nsys-rep" ] && [ -f "$r.qdstrm" ]; then
    local imp
    imp="$(ls /opt/nvidia/nsight-compute/*/host/*/QdstrmImporter 2>/dev/null | head -1)"
    [ -n "$imp" ] && LD_LIBRARY_PATH="$PWD/.dev/tools:$LD_LIBRARY_PATH" timeout 200 "$imp" -i "$r.qdstrm" >>"$OUT/nsys.log" 2>&1
    rm -f "$r.qdstrm"
  fi
  timeout 200 "$NSYS" export --type sqlite -o "$r.sqlite" --force-overwrite true "$r.nsys-rep" >>"$OUT/nsys.log" 2>&1
  rm -f "$r.nsys-rep"
}
# tests_summary EXIT [LABEL]: the counts of $OUT/tests.log (a gtest run that exited EXIT) and
# the names of the failed tests.
tests_summary() {
  local log="$OUT/tests.log"
  echo "device tests${2:+ ($2)} exit $1: $(grep -cE '^\[       OK' "$log") ok, $(grep -cE '^\[  FAILED  \] [A-Z]' "$log") failed"
  grep -E "^\[  FAILED  \] [A-Z]" "$log" | head -8
}
# ncu_sass_top NAME [N]: the N (default 30) SASS instructions of $OUT/NAME.ncu-rep with the
# most warp stall samples, each with its share and its top stall reasons ($OUT/NAME.sass.csv
# keeps the whole source page).
ncu_sass_top() {
  local r="$OUT/$1"
  ncu --import "$r.ncu-rep" --page source --print-source sass --csv >"$r.sass.csv" 2>&1
  python3 - "$r.sass.csv" "${2:-30}" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hi = next((i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r)), None)
if hi is None:
    print("sass page: no header;", " | ".join(",".join(r)[:200] for r in rows[:3])); sys.exit()
head = [c.strip() for c in rows[hi]]
src = head.index("Source")
tot = next((i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All")), None)
if tot is None:
    print("sass page: no stall column:", head); sys.exit()
reasons = [i for i, c in enumerate(head) if c.startswith("stall_") or c.startswith("Stall ")]
def num(v):
    try: return float(v.replace(",", ""))
    except ValueError: return 0.0
body = [r for r in rows[hi + 1:] if len(r) == len(head)]
all_s = sum(num(r[tot]) for r in body) or 1.0
print(f"sass: {len(body)} instructions, {all_s:.0f} stall samples; top by samples:")
for r in sorted(body, key=lambda r: -num(r[tot]))[:int(sys.argv[2])]:
    top = sorted(((num(r[i]), head[i]) for i in reasons), reverse=True)[:3]
    why = ", ".join(f"{n} {v:.0f}" for v, n in top if v > 0)
    print(f"{num(r[tot]) / all_s * 100:5.1f}%  {r[0][:8]:8}  {r[src].strip()[:70]:70}  {why}")
PY
}
# ncu_summary NAME: the Nsight Compute report $OUT/NAME.ncu-rep as text ($OUT/NAME.txt), then
# its headline lines (kernel, duration, throughputs, occupancy, launch shape), the top warp
# stall reasons and the busiest pipes (from the raw CSV, removed after).
ncu_summary() {
  local r="$OUT/$1"
  ncu --import "$r.ncu-rep" --page details >"$r.txt" 2>&1
  ncu --import "$r.ncu-rep" --page raw --csv >"$r.raw.csv" 2>&1
  grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|Active Warps Per|Achieved Occupancy|Registers Per|Grid Size|Block Size|Dynamic Shared|L2 Hit Rate" "$r.txt" | head -20
  python3 - "$r.raw.csv" <<'PY'
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
        if h.startswith("sm__pipe_") and h.endswith("cycles_active.avg.pct_of_peak_sustained_active"):
            pipes.append((x, h.replace("sm__pipe_", "").replace("_cycles_active.avg.pct_of_peak_sustained_active", "")))
    print("stalls (warp cycles per issued instruction):", ", ".join(f"{n} {v:.2f}" for v, n in sorted(st, reverse=True)[:8]))
    print("pipes (% of peak, cycles active):", ", ".join(f"{n} {v:.1f}" for v, n in sorted(pipes, reverse=True)[:8]))
PY
  rm -f "$r.raw.csv"
}
# split_settings LIST: the array `settings` from a ';'-separated list of environment settings
# (each empty, or one or more space-separated assignments); one empty setting if LIST is empty.
split_settings() {
  IFS=';' read -r -a settings <<<"$1"
  [ ${#settings[@]} -eq 0 ] && settings=("")
  return 0
}
[ -f "$DEV/BUILD_INFO" ] && echo "binaries: $(cat "$DEV/BUILD_INFO")"
# The binaries travel gzipped (device_pack.sh) to keep the carried tree under 64 MiB.
for gz in "$DEV"/bin/*.gz; do
  [ -e "$gz" ] && gunzip -kf "$gz" && chmod +x "${gz%.gz}"
done
