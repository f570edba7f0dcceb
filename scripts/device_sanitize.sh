#!/usr/bin/env bash
# compute-sanitizer over a filtered part of the device suite on a lent GPU machine (binaries
# as in device_run.sh): each tool of GS_SAN_TOOLS (default "initcheck memcheck") in turn,
# the last lines of each report printed, the whole reports under $OUT.
#   GS_SAN_FILTER=CudaAttention.SplitDecodeOperandOfTheNextMatmul scripts/device_sanitize.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
filter="${GS_SAN_FILTER:-CudaAttention.SplitDecodeOperandOfTheNextMatmul}"
for tool in ${GS_SAN_TOOLS:-initcheck memcheck}; do
  log="$OUT/san-$tool.log"
  timeout "${GS_SAN_TIMEOUT:-200}" "$SAN" --tool "$tool" --print-limit 20 \
    "$DEV/bin/gs_test_cuda" --gtest_color=no --gtest_filter="$filter" >"$log" 2>&1
  echo "== $tool exit $? ($(grep -c "========= " "$log") sanitizer lines)"
  grep -E "=========|\[  (FAILED|PASSED|  OK) \]" "$log" | head -40
done
