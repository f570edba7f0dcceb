#!/usr/bin/env bash
# A long prompt's prefill beside a decoding stream, on a lent GPU machine (binaries as in
# device_run.sh): `serve` on the 31B-shaped synthetic file, 2 slots of GS_FP_CTX (default
# 131072) positions, scripts/fair_prefill.py with GS_FP_WORDS (default 32000) words, for each
# carried binary named in GS_FP_BINS (default "gemmaserve"; e.g. "gemmaserve gemmaserve.prev").
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
synth_31b_pair >/dev/null || exit 1
port=8200
for b in ${GS_FP_BINS:-gemmaserve}; do
  port=$((port + 1))
  "$DEV/bin/$b" serve -m "$MODEL_31B" --device cuda --parallel 2 -c "${GS_FP_CTX:-131072}" --port $port \
    >"$OUT/fair_$b.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 240); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.5; done
  echo "$b: $(timeout 300 python3 scripts/fair_prefill.py $port --words "${GS_FP_WORDS:-32000}" 2>&1 | tail -1)"
  kill $spid; wait $spid 2>/dev/null
done
