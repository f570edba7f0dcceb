# Sourced by the e2e scripts (tests/e2e/test_*.sh) after `set -uo pipefail`: the binary under
# test (the script's first argument), the shared data and its shakes pair, a scratch folder
# WORK removed at exit, and fail MESSAGE (exit 1). A script with more to clean up sets its own
# trap after sourcing this, and removes WORK there too.
BIN="${1:?usage: $(basename "$0") PATH/TO/gemmaserve}"
SHARED="${GS_SHARED_DIR:?}"
TARGET="$SHARED/models/shakes-target.gguf"
DRAFTER="$SHARED/models/shakes-assistant.gguf"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
