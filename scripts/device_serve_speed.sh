#!/usr/bin/env bash
# Server decode speed against bench's, for several carried binaries in one call (an A/B of
# host-side changes: the sampler, the scheduler, the server). For each binary in GS_SS_BINS
# (names under .dev/cuda/bin, default "gemmaserve gemmaserve.prev"), GS_SS_ROUNDS rounds in
# alternation (default 2):
#   - `bench -p 0 -n 128` on the 31B-shaped file (tg128: the forward passes and the logits'
#     download, no sampling);
#   - `serve` on the same file (one slot, no drafter) and requests of 128 tokens through
#     /v1/chat/completions under several sampler chains; the server's own
#     timings.predicted_per_second for each.
# The difference between the two is the host's work a token (sampler, scheduler, output).
# GS_SS_MTP=1 adds the shakes pair with its drafter (below).
# Summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BINS="${GS_SS_BINS:-gemmaserve gemmaserve.prev}"
ROUNDS="${GS_SS_ROUNDS:-2}"
summary=()
note() { summary+=("$1"); echo "$1"; }
for b in $BINS; do
  [ -f "$DEV/bin/$b" ] || gunzip -kf "$DEV/bin/$b.gz" || { note "no binary $b"; exit 1; }
  chmod +x "$DEV/bin/$b"
done
synth_31b_pair || exit 1
note "$(nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

PORT=8097
for r in $(seq 1 "$ROUNDS"); do
  for b in $BINS; do
    tg=$("$DEV/bin/$b" bench -m "$MODEL_31B" -p 0 -n 128 -r 3 --device cuda 2>/dev/null | grep -E "\| tg128 " | head -1 |
      awk -F'|' '{print $4}' | xargs)
    "$DEV/bin/$b" serve -m "$MODEL_31B" --port $PORT --parallel 1 --ctx-size 4096 --device cuda >"$OUT/serve_${b}_$r.log" 2>&1 &
    spid=$!
    up=0
    for _ in $(seq 1 240); do curl -sf "localhost:$PORT/health" >/dev/null && { up=1; break; }; sleep 0.5; done
    if [ $up = 0 ]; then
      note "$b: server did not start: $(tail -3 "$OUT/serve_${b}_$r.log")"
      kill $spid 2>/dev/null
      continue
    fi
    res=$(python3 scripts/serve_speed.py $PORT chains)
    kill $spid; wait $spid 2>/dev/null
    note "round $r $b: bench tg128 $tg | served tok/s: $res"
  done
done
# GS_SS_MTP=1: the shakes pair with its trained drafter (real acceptance), the first binary
# only: bench's tg128 and tg128 with MTP against the server's greedy decode with the drafter
# and with "speculative": false (the server's host work a round shows beside a short GPU step).
if [ "${GS_SS_MTP:-0}" = 1 ]; then
  b="${BINS%% *}"
  T=models/shakes-target.gguf
  A=models/shakes-assistant.gguf
  rows=$("$DEV/bin/$b" bench -m "$T" --mtp "$A" --draft-max 4 -p 0 -n 128 -r 3 --device cuda 2>/dev/null |
    grep -E "\| tg128" | awk -F'|' '{gsub(/ +/, " "); print $3 ":" $4 "(" $5 ")"}' | xargs)
  "$DEV/bin/$b" serve -m "$T" --mtp "$A" --draft-max 4 --no-draft-adaptive --port $PORT --parallel 1 --ctx-size 4096 \
    --device cuda >"$OUT/serve_mtp.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 240); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.5; done
  res=$(python3 scripts/serve_speed.py $PORT mtp)
  kill $spid; wait $spid 2>/dev/null
  note "shakes $b: bench $rows | served tok/s: $res"
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
