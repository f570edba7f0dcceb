#!/usr/bin/env bash
# The int8 Q4_K matvec forms (decision 0028, opt-in GS_MVS_Q4K=1) on a lent GPU machine, in
# one call (~5-6 minutes): the accuracy tests with the forms on (CudaSynth against the CPU
# oracle, every CudaMatmul test with verify rows against decode, greedy with the drafter),
# then the Q4_K matvec microbenchmarks (rows 1 and 5) and tg128 / verify 2, 5 and 8 on `synth
# --preset 31b` (scripts/device_ab_ops.sh), by default under three settings in the same call: the f16
# form (GS_MVS_Q4K unset), the int8 forms with compute_sb for 2..16 rows (=1) and with the
# twenty-first session's compute_mma8 (=2; the same decode, so tg128 should match =1). GS_AB
# overrides the settings. Binaries as in device_run.sh (.dev/cuda).
#   scripts/device_int8.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
echo "== accuracy, GS_MVS_Q4K=1"
GS_MVS_Q4K=1 timeout 240 "$DEV/bin/gs_test_cuda" --gtest_color=no \
  --gtest_filter='CudaSynth.EveryWeightTypeAgainstCpu:CudaMatmul.*:CudaSpeculative.*' >"$OUT/int8_tests.log" 2>&1
echo "gs_test_cuda exit $?"
grep -E "^\[  (PASSED|FAILED)|q4_K |q4_k_m" "$OUT/int8_tests.log" | head -20
# The 31B file is written here, in the foreground (a background writer and a wait on its
# process name matched the waiting shell's own command line in the twentieth session).
[ -f "$MODEL_31B" ] || "$DEV/bin/gemmaserve" synth --preset 31b -o "$MODEL_31B" --quiet >"$OUT/synth.log" 2>&1
echo "== speed"
GS_AB_TG=1 GS_AB_VERIFY="${GS_AB_VERIFY:-2,5,8}" GS_AB="${GS_AB:-;GS_MVS_Q4K=1;GS_MVS_Q4K=2}" scripts/device_ab_ops.sh 2>&1 |
  grep -E "==|q4_K|tg128|verify"
