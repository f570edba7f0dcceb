#!/usr/bin/env bash
# Greedy output does not depend on how a request was served (tests/e2e/differential.py, CI
# size): the shipped pair on the CPU, a few completions and chats (a drafted verse with
# logprobs, stop strings, a prompt that fills the context, a longer prompt, a reasoning
# budget, a forced tool call, structured output after a thought), each cold on a fresh server
# against the same request again, streamed, without the drafter and with draft_max 2, after
# a request sharing its prefix, under a concurrent load, as the cache of the next turn, on a
# --parallel 1 server, and with max_tokens N + 7 cut to N.
# `differential.py BIN TARGET DRAFTER` without --quick runs the full set (minutes on the CPU).
set -euo pipefail
BIN="$1"
SHARED="${GS_SHARED_DIR:?}"
HERE="$(cd "$(dirname "$0")" && pwd)"
python3 "$HERE/differential.py" "$BIN" "$SHARED/models/shakes-target.gguf" "$SHARED/models/shakes-assistant.gguf" \
  --quick --ctx 320 --long 24 --seed "${GS_DIFF_SEED:-7}"
