#!/usr/bin/env bash
# Entry point on a lent GPU machine (the device tool): prebuilt binaries and the libraries
# they need are carried in .dev/cuda (see docs/perf-notes.md, "Running on the device
# machine"). Writes logs under $OUT and prints a summary last.
#   scripts/device_run.sh [tests|bench|all] [gtest filter]
set -uo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
filter="${2:-*}"
. scripts/device_env.sh
{
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv
  nproc; free -g | head -2; df -h /tmp | tail -1
  ldd "$DEV/bin/gemmaserve" | grep -i "not found" || echo "ldd: all libraries found"
} 2>&1 | tee "$OUT/device.txt"

test_status=skipped
if [ "$what" = tests ] || [ "$what" = all ]; then
  # The 31B file is written in the background while the tests run.
  if [ "$what" = all ] && [ -z "${GS_MODEL:-}" ]; then
    (nice -n 10 "$DEV/bin/gemmaserve" synth --preset 31b -o "$MODEL_31B" --quiet \
       >"$OUT/synth.log" 2>&1; echo "synth exit $? after $SECONDS s" >>"$OUT/synth.log") &
    synth_pid=$!
  fi
  timeout "${GS_TEST_TIMEOUT:-480}" scripts/device_test.sh --gtest_filter="$filter" >"$OUT/tests.log" 2>&1
  rc=$?
  test_status="exit $rc"
  grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|tests ran|Failure|error:|CUDA error" "$OUT/tests.log" | head -60
  grep -E "CUDA logits|CUDA vs CPU|logits vs" "$OUT/tests.log" | head -30
  if [ -n "${synth_pid:-}" ]; then wait "$synth_pid"; cat "$OUT/synth.log" | tail -2; fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  GS_BIN="$DEV/bin" scripts/device_bench.sh "$OUT/bench" 2>&1 | tee "$OUT/bench.txt" | tail -"${GS_TAIL:-90}"
fi
if [ "${GS_SWEEP:-0}" = 1 ]; then
  GS_BIN="$DEV/bin" scripts/device_sweep.sh /tmp/gs-sweep 2>&1 | tee "$OUT/sweep.txt"
fi
echo "tests: $test_status"
