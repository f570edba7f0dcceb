# Sourced by the e2e scripts (tests/e2e/test_*.sh) after `set -uo pipefail`: the binary under
# test (the script's first argument), the shared data and its shakes pair, this folder (E2E), a scratch folder
# WORK removed at exit, and fail MESSAGE (exit 1). A script with more to clean up sets its own
# trap after sourcing this, and removes WORK there too. free_port prints a TCP port that is
# free now; wait_healthy PORT PID waits up to 60 s for GET /health to answer 200 (status 1 if
# it does not, or the process PID ends first).
#
# Scripts that count their checks instead of stopping at the first: ok NAME / bad NAME print
# one line and count it; start_server ARGS... serves `$BIN serve ARGS` on a free port of
# 127.0.0.1 (sets PORT, URL, PID; log in $WORK/server.log; the server is killed at exit) and
# exits 1 with the log if it never becomes healthy; stop_on_sigterm [SECONDS] sends SIGTERM
# and checks a status-0 exit within SECONDS (10); e2e_result LABEL prints the counts and
# returns 1 (after the server log's tail) if a check failed.
BIN="${1:?usage: $(basename "$0") PATH/TO/gemmaserve}"
SHARED="${GS_SHARED_DIR:?}"
E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TARGET="$SHARED/models/shakes-target.gguf"
DRAFTER="$SHARED/models/shakes-assistant.gguf"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {
  local _
  for _ in $(seq 1 300); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" == 200 ]] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
start_server() {
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
  "$BIN" serve --host 127.0.0.1 --port "$PORT" "$@" > "$WORK/server.log" 2>&1 &
  PID=$!
  trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
  wait_healthy "$PORT" "$PID" || { echo "the server did not become healthy"; cat "$WORK/server.log"; exit 1; }
}
stop_on_sigterm() {
  local _ rc
  kill -TERM "$PID"
  for _ in $(seq 1 $((${1:-10} * 10))); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$PID" 2>/dev/null; then bad "server still running ${1:-10} s after SIGTERM"; return; fi
  wait "$PID"
  rc=$?
  [ "$rc" = 0 ] && ok "clean stop on SIGTERM" || bad "exit status $rc after SIGTERM"
}
e2e_result() {
  echo "$1: $PASS passed, $FAIL failed"
  [ "$FAIL" = 0 ] && return 0
  echo "--- server log"
  tail -n 40 "$WORK/server.log" 2>/dev/null
  return 1
}
