# Sourced by the e2e scripts (tests/e2e/test_*.sh) after `set -uo pipefail`: the binary under
# test (the script's first argument), the shared data and its shakes pair, a scratch folder
# WORK removed at exit, and fail MESSAGE (exit 1). A script with more to clean up sets its own
# trap after sourcing this, and removes WORK there too. free_port prints a TCP port that is
# free now; wait_healthy PORT PID waits up to 30 s for GET /health to answer 200 (status 1 if
# it does not, or the process PID ends first).
BIN="${1:?usage: $(basename "$0") PATH/TO/gemmaserve}"
SHARED="${GS_SHARED_DIR:?}"
TARGET="$SHARED/models/shakes-target.gguf"
DRAFTER="$SHARED/models/shakes-assistant.gguf"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {
  local _
  for _ in $(seq 1 150); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health")" == 200 ]] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
