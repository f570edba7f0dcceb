#!/usr/bin/env bash
# --device cuda on a machine (or build) without a CUDA device says so and runs on the CPU:
# run, bench and serve used to exit with "no CUDA device is available" instead. Where a GPU
# is present the same calls simply run on it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# runs_ok NAME ARGS...: exits 0; where it fell back, it said so on stderr.
runs_ok() {
  local name="$1"
  shift
  timeout -k 5 120 "$BIN" "$@" > "$WORK/out" 2> "$WORK/err" < /dev/null
  local rc=$?
  [[ $rc -eq 0 ]] || fail "$name: exit status $rc: $(head -c 300 "$WORK/err")"
  if grep -q "running on the CPU" "$WORK/err"; then
    grep -q -- "--device cuda: .*: running on the CPU" "$WORK/err" || fail "$name: the fallback does not say why: $(cat "$WORK/err")"
  fi
}

runs_ok "run --device cuda" run -m "$TARGET" -p ROMEO: -n 2 --device cuda --json
grep -q '"finish_reason"' "$WORK/out" || fail "run --device cuda printed no result: $(cat "$WORK/out")"
runs_ok "bench --device cuda" bench -m "$TARGET" -p 8 -n 2 -r 1 --device cuda --json
grep -q '"pp8"' "$WORK/out" || fail "bench --device cuda measured nothing: $(head -c 300 "$WORK/out")"

# serve: the model loads (GET /health says ok) instead of the server giving up.
PORT="$(free_port)"
"$BIN" serve -m "$TARGET" --device cuda --host 127.0.0.1 --port "$PORT" --parallel 1 --shutdown-timeout 1 \
  > "$WORK/serve.log" 2>&1 &
PID=$!
healthy=0
wait_healthy "$PORT" "$PID" && healthy=1
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
[[ $healthy -eq 1 ]] || fail "serve --device cuda never became healthy: $(tail -c 400 "$WORK/serve.log")"
echo "device fallback: ok"
