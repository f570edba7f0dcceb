#!/usr/bin/env bash
# SIGTERM / SIGINT while serve is still loading its model stop it at once, with status 0:
# nothing runs before the model is there (requests get 503 "loading"), so there is nothing
# to drain. Before, the first signal was taken and the load went on to its end (tens of
# seconds for a large model on a GPU), and a second signal was never read: Ctrl-C did nothing
# until the model had loaded.
# The model is synthetic, with a vocabulary of 2M tokens so that its load (the tokenizer)
# takes a measurable while on the CPU; the stop must take well under that.
# Usage: test_signal_during_load.sh PATH/TO/gemmaserve
set -uo pipefail
BIN="${1:?usage: test_signal_during_load.sh PATH/TO/gemmaserve}"
WORK="$(mktemp -d)"
PID=""
cleanup() {
  [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$1" "$(now)"; }

MODEL="$WORK/vocab.gguf"
"$BIN" synth --preset tiny -o "$MODEL" --n-vocab 2000000 --n-embd 32 --n-ff 64 --head-dim 32 --head-dim-swa 32 \
  --quiet > "$WORK/synth.log" 2>&1 || fail "synth: $(cat "$WORK/synth.log")"

# start LOG: serve on a free port; sets PID and PORT once the listener is up (the load runs).
start() {
  "$BIN" serve -m "$MODEL" --port 0 -t 1 --log-level info > "$1" 2>&1 &
  PID=$!
  local port=""
  for _ in $(seq 1 600); do
    port="$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\) (model loading).*/\1/p' "$1" | head -1)"
    [ -n "$port" ] && break
    kill -0 "$PID" 2>/dev/null || fail "serve exited before listening: $(cat "$1")"
    sleep 0.01
  done
  [ -n "$port" ] || fail "serve never listened: $(cat "$1")"
  PORT="$port"
}

# How long the load takes here: from the listener to a healthy /health.
t0="$(now)"
start "$WORK/load.log"
for _ in $(seq 1 1200); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")" = 200 ] && break
  kill -0 "$PID" 2>/dev/null || fail "serve exited while loading: $(cat "$WORK/load.log")"
  sleep 0.02
done
load_s="$(since "$t0")"
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
[ "$rc" = 0 ] || fail "exit status $rc on SIGTERM after the load"
echo "load takes ${load_s} s"

for sig in TERM INT; do
  start "$WORK/$sig.log"
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")"
  [ "$code" = 503 ] || fail "/health during the load: $code (the load was over before the signal; a larger vocabulary is needed)"
  t0="$(now)"
  kill -"$sig" "$PID"
  for _ in $(seq 1 1200); do
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.01
  done
  wait "$PID"
  rc=$?
  PID=""
  stop_s="$(since "$t0")"
  [ "$rc" = 0 ] || fail "SIG$sig during the load: exit status $rc: $(cat "$WORK/$sig.log")"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) / 2 else 1)' "$stop_s" "$load_s" ||
    fail "SIG$sig during the load: stopped after ${stop_s} s, the load takes ${load_s} s (it waited for the load)"
  grep -q "while the model loads" "$WORK/$sig.log" || fail "SIG$sig during the load: no log line: $(cat "$WORK/$sig.log")"
  echo "ok   SIG$sig during the load: stopped after ${stop_s} s, status 0"
done
echo "signal during load: ok"
