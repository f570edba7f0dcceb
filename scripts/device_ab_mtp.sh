#!/usr/bin/env bash
# MTP rounds of two builds on a lent GPU machine (binaries as in device_ab.sh: the new one in
# .dev/cuda/bin, the previous gemmaserve as .dev/cuda/bin/gemmaserve.prev.gz): the device
# tests of the drafting path on the new build, then on `synth --preset 31b` + `31b-assistant`
# tg64, verify 5 and tg64 with 4 drafts a round (nothing is accepted with the random
# drafter: the round's cost), alternating builds, at depth 0 and at GS_ABM_DEPTH (default
# 1048576, zero-filled).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
NEW="$DEV/bin/gemmaserve"
PREV="$DEV/bin/gemmaserve.prev"
[ -f "$PREV.gz" ] && gunzip -kf "$PREV.gz" && chmod +x "$PREV"
M="$MODEL_31B"
D="$DRAFTER_31B"
synth_31b_pair &
synth_pid=$!
timeout 240 "$GS_DEVICE_BIN/gs_test_cuda" --gtest_filter="${GS_ABM_TESTS:-CudaOps.*:CudaSpeculative.*:CudaSynth.*:CudaModel.*}" \
  >"$OUT/tests.log" 2>&1
tests_summary $?
wait "$synth_pid"
row() {  # $1 label, $2 binary, then bench args
  local label="$1" bin="$2"; shift 2
  timeout 300 "$bin" bench -m "$M" --mtp "$D" --device cuda --json -p 0 -n 64 --verify 5 "$@" >"$OUT/ab.json" 2>>"$OUT/bench.log"
  python3 - "$OUT/ab.json" "$label" <<'PY'
import json, sys
try:
    res = json.load(open(sys.argv[1])).get("results", [])
except Exception as e:
    print(sys.argv[2], "unreadable", e); sys.exit(0)
parts = []
for r in res:
    if r["group"] == "tg": parts.append(f"tg {r['seconds'] * 1e3:.3f} ms")
    if r["group"] == "verify": parts.append(f"verify5 {r['seconds'] * 1e3:.3f} ms")
    if r["group"] == "tg-mtp": parts.append(f"mtp4 round {r['seconds'] * 1e3:.3f} ms ({r['drafted']} drafted)")
print(f"{sys.argv[2]:>12}: " + ", ".join(parts))
PY
}
for round in 1 2; do
  row "new d0" "$NEW" -r 2
  [ -x "$PREV" ] && row "prev d0" "$PREV" -r 2
done
DEPTH="${GS_ABM_DEPTH:-1048576}"
row "new d$DEPTH" "$NEW" -r 1 -d "$DEPTH" --depth-fill zeros
[ -x "$PREV" ] && row "prev d$DEPTH" "$PREV" -r 1 -d "$DEPTH" --depth-fill zeros
grep -iE "error|fail" "$OUT/bench.log" | head -5
