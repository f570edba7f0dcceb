#!/usr/bin/env bash
# Decode attention at depth on a lent GPU machine (binaries as in device_run.sh): the
# attention rows of `bench --ops` (full and sliding layers, 1 and 5 tokens) under each KV
# split size of GS_ATTN_SPLITS (default "64 256"), then Nsight Compute on the first full-layer
# decode launch at depth GS_ATTN_PROF_DEPTH (default 32768; 0 skips it): duration, DRAM
# throughput and warp stall reasons.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
B="$DEV/bin/gemmaserve"
split_settings "${GS_ATTN_SETTINGS:-GS_ATTN_SPLIT_POS=64;GS_ATTN_SPLIT_POS=256}"
for s in "${settings[@]}"; do
  echo "== '$s'"
  env $s "$B" bench --ops --ops-only attention --device cuda -d "${GS_ATTN_DEPTHS:-4096,32768,131072}" 2>&1 |
    grep -E "decode|full|sliding" | grep -v -i prefill
done
D="${GS_ATTN_PROF_DEPTH:-32768}"
if [ "$D" != 0 ] && command -v ncu >/dev/null; then
  env ${GS_ATTN_PROF_ENV:-} timeout 200 ncu --clock-control none --set full -k "regex:attn_(fa|mma)_kernel" -s 0 -c 1 -o "$OUT/attn" \
    "$B" bench --ops --ops-only attention --device cuda -d "$D" >"$OUT/attn.log" 2>&1
  echo "ncu exit $?"
  ncu_summary attn
fi
