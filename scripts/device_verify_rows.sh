#!/usr/bin/env bash
# Bisects the bit-exactness of verify rows on a lent GPU machine (docs/perf-notes.md, ninth and
# tenth sessions): CudaMatmul.VerifyRowsReproduceDecode and FewRowGroupsLongRows repeated under
# each setting (';'-separated environment assignments in GS_VR, empty = defaults), the first
# mismatches printed; then, with GS_VR_SANITIZE=1, compute-sanitizer's racecheck and synccheck
# on the Q4_K cases. Binaries as in device_run.sh (.dev/cuda); logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
T="$DEV/bin/gs_test_cuda"
split_settings "${GS_VR:-}"
filter="${GS_VR_FILTER:-CudaMatmul.VerifyRowsReproduceDecode:CudaMatmul.FewRowGroupsLongRows}"
i=0
for s in "${settings[@]}"; do
  start=$(date +%s)
  env $s timeout "${GS_VR_TIMEOUT:-120}" "$T" --gtest_color=no --gtest_filter="$filter" \
    --gtest_repeat="${GS_VR_REPEAT:-4}" >"$OUT/vr_$i.log" 2>&1
  echo "== '$s': exit $?, $(( $(date +%s) - start )) s, $(grep -cE '^\[       OK' "$OUT/vr_$i.log") ok," \
    "$(grep -cE '^\[  FAILED  \] [A-Z].*ms\)' "$OUT/vr_$i.log") failed"
  grep -E "in the batch|that differ|y\[|Trace|rows [0-9]+$|q[0-9]_[0K0]* n_in" "$OUT/vr_$i.log" | head -24
  i=$((i + 1))
done
if [ "${GS_VR_SANITIZE:-0}" = 1 ]; then
  # GS_VR_SAN: ';'-separated "tool filter [env]" runs, e.g. "racecheck CudaMatmul.Few* GS_MVS_ARRIVE_ALL=1".
  CS=/usr/local/cuda/bin/compute-sanitizer
  IFS=';' read -r -a runs <<<"${GS_VR_SAN:-racecheck CudaMatmul.VerifyRowsReproduceDecode;synccheck CudaMatmul.VerifyRowsReproduceDecode}"
  j=0
  for r in "${runs[@]}"; do
    read -r tool filt envs <<<"$r"
    extra=""
    [ "$tool" = racecheck ] && extra="--racecheck-report hazard"
    start=$(date +%s)
    env $envs timeout "${GS_VR_SAN_TIMEOUT:-150}" $CS --tool "$tool" $extra --print-limit 20 "$T" --gtest_color=no \
      --gtest_filter="$filt" >"$OUT/san_$j.log" 2>&1
    echo "== $tool $filt $envs: exit $?, $(( $(date +%s) - start )) s"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Race|Barrier|at 0x|in the batch|FAILED|OK \]" "$OUT/san_$j.log" | head -20
    j=$((j + 1))
  done
fi
