#!/usr/bin/env bash
# serve with --queue-size at the top of its range: the HTTP server ran one worker thread per
# slot and queued request (--parallel + --queue-size + 16, 100017 here), started all at once;
# past the machine's thread limit std::thread threw and the process aborted (status 134,
# "Resource temporarily unavailable"). The workers are capped, and a thread that cannot start
# leaves those that did: the server answers and stops on SIGTERM with status 0.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

PORT="$(free_port)"
"$BIN" serve -m "$TARGET" --device cpu --host 127.0.0.1 --port "$PORT" --parallel 1 --queue-size 100000 \
  --ctx-size 256 --threads 1 --shutdown-timeout 1 > "$WORK/serve.log" 2>&1 &
PID=$!
wait_healthy "$PORT" "$PID" || { kill "$PID" 2>/dev/null; fail "serve --queue-size 100000 never became healthy: $(tail -c 400 "$WORK/serve.log")"; }
code="$(curl -s -o "$WORK/out" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/completions" \
  -H 'Content-Type: application/json' -d '{"prompt":"ROMEO:","max_tokens":4,"temperature":0}')"
[[ "$code" == 200 ]] || { kill "$PID" 2>/dev/null; fail "a completion gave $code: $(head -c 300 "$WORK/out")"; }
grep -q "HTTP worker threads" "$WORK/serve.log" || { kill "$PID" 2>/dev/null; fail "the cap on worker threads is not logged: $(head -c 600 "$WORK/serve.log")"; }
kill -TERM "$PID"
wait "$PID"
rc=$?
[[ $rc -eq 0 ]] || fail "serve exited with $rc after SIGTERM: $(tail -c 400 "$WORK/serve.log")"
echo "large queue: ok"
