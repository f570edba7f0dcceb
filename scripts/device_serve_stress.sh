#!/usr/bin/env bash
# The server on the GPU under a randomized concurrent load (tests/e2e/stress.py), on a lent
# GPU machine (binaries as in device_run.sh): the bundled shakes pair with 8 slots, then the
# 31B-shaped synthetic pair (random weights: the drafter's drafts are rejected) with 4 slots
# of GS_STRESS_CTX (default 32768) positions. Each run: S seconds of C clients (GS_STRESS_SECONDS,
# default 90 / 60; GS_STRESS_CLIENTS, default 12 / 8), then the idle-server checks (no 5xx, no
# busy slot left, greedy with the drafter = without, greedy alone repeatable). Server logs and
# the stress output go to $OUT. Summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
B="$PWD/$DEV/bin/gemmaserve"
summary=()
note() { summary+=("$1"); echo "$1"; }

# stress NAME PORT SECONDS CLIENTS CTX -- SERVE_ARGS...: one server, one stress run.
stress() {
  local name=$1 port=$2 secs=$3 clients=$4 ctx=$5
  shift 6
  "$B" serve --port "$port" --device cuda "$@" >"$OUT/serve_$name.log" 2>&1 &
  local spid=$!
  for _ in $(seq 1 240); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.5; done
  timeout $((secs + 400)) python3 tests/e2e/stress.py "$port" --seconds "$secs" --clients "$clients" \
    --ctx "$ctx" --seed "${GS_STRESS_SEED:-7}" >"$OUT/stress_$name.txt" 2>&1
  local rc=$?
  kill -0 $spid 2>/dev/null && alive=alive || alive="DEAD ($(tail -2 "$OUT/serve_$name.log" | tr '\n' ' '))"
  note "$name: stress exit $rc, server $alive; $(grep -E '^(metrics|greedy|stress):' "$OUT/stress_$name.txt" | tr '\n' ' ')"
  grep '^FAIL' "$OUT/stress_$name.txt" | head -8
  grep -iE '\[(error|critical)\]' "$OUT/serve_$name.log" | head -5
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
stress shakes 8191 "${GS_STRESS_SECONDS:-90}" "${GS_STRESS_CLIENTS:-12}" 4096 -- \
  -m models/shakes-target.gguf --mtp models/shakes-assistant.gguf --parallel 8 -c 4096
synth_31b_pair && stress 31b 8192 "${GS_STRESS_SECONDS_31B:-60}" "${GS_STRESS_CLIENTS_31B:-8}" \
  "${GS_STRESS_CTX:-32768}" -- -m "$MODEL_31B" --mtp "$DRAFTER_31B" --parallel 4 -c "${GS_STRESS_CTX:-32768}"
echo "===== summary"
printf '%s\n' "${summary[@]}"
