#!/usr/bin/env bash
# The server under a seeded random concurrent load (tests/e2e/stress.py) on the CPU: the
# shipped pair with 4 slots of 1024 positions, 6 clients for 25 s (completions, chats, streams
# dropped mid-way, long prompts dropped mid-prefill, prompts past the context, structured
# output, forced tool calls, malformed bodies); then no 5xx for a valid request, every 4xx an
# OpenAI-style error, no slot left busy, no engine error, greedy with the drafter = without.
# scripts/device_serve_stress.sh runs the same load on the GPU.
set -euo pipefail
BIN="$1"
SHARED="${GS_SHARED_DIR:?}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PORT=$((20000 + RANDOM % 20000))
LOG="$(mktemp)"
"$BIN" serve -m "$SHARED/models/shakes-target.gguf" --mtp "$SHARED/models/shakes-assistant.gguf" \
  --port "$PORT" --device cpu --parallel 4 -c 1024 >"$LOG" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.2; done
rc=0
python3 "$HERE/stress.py" "$PORT" --seconds "${GS_STRESS_SECONDS:-25}" --clients 6 --ctx 1024 \
  --seed "${GS_STRESS_SEED:-11}" || rc=$?
kill -0 $SPID 2>/dev/null || { echo "FAIL: the server died:"; tail -5 "$LOG"; exit 1; }
if grep -iE '\[(error|critical)\]' "$LOG"; then echo "FAIL: the server logged errors"; rc=1; fi
[ $rc = 0 ] && echo "stress: all checks passed"
exit $rc
