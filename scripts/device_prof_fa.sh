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
  ncu_summary "$name"
}
prof fa_prefill -p "${GS_PF_TOKENS:-512}" -n 0
prof fa_decode -p 0 -n 4
rm -f "$OUT"/*.ncu-rep
