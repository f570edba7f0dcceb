#!/usr/bin/env bash
# One device call for a kernel change behind run-time switches: a filtered part of the device
# suite (GS_CHECK_FILTER, gtest syntax; default the attention, op, model and speculative
# tests), then tg64 / verify 5 at GS_AB_DEPTHS under each setting of GS_AB, alternating
# (scripts/device_ab_depth.sh, depths reached without prefill unless GS_AB_FILL is set).
# Binaries as in device_run.sh (.dev/cuda).
#   GS_AB=";GS_ATTN_EARLY=0" scripts/device_check_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
("$DEV/bin/gemmaserve" synth --preset 31b -o "$MODEL_31B" --quiet >"$OUT/synth.log" 2>&1) &
synth_pid=$!
filter="${GS_CHECK_FILTER:-CudaAttention.*:CudaOps.*:CudaSynth.*:CudaModel.*:CudaGolden.*:CudaSpeculative.*}"
timeout "${GS_TEST_TIMEOUT:-280}" "$DEV/bin/gs_test_cuda" --gtest_color=no --gtest_filter="$filter" >"$OUT/tests.log" 2>&1
tests_summary $? "$filter"
grep -B2 -A8 "Failure" "$OUT/tests.log" | head -60
grep -E "bit for bit" "$OUT/tests.log" | head
wait "$synth_pid"
GS_AB_FILL="${GS_AB_FILL-zeros}" GS_AB_DEPTHS="${GS_AB_DEPTHS:-0,32768,131072}" scripts/device_ab_depth.sh
