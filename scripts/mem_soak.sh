#!/usr/bin/env bash
# Bug-case 64's long run: the server on the CPU with the shipped shakes pair, then N sequential
# text completions with unique prompts (tests/e2e/mem_growth.py), RssAnon + VmSwap sampled
# every K requests. Prints one CSV row a sample and the growth per request over the second
# half; fails when that exceeds GS_SOAK_MAX_GROWTH bytes a request (default 256) or a request
# fails. Not part of ctest (tests/server/host_memory_growth_test.cpp is the short form).
#   scripts/mem_soak.sh [BIN]     (default build/src/cli/gemmaserve)
# Environment: GS_SOAK_REQUESTS (5000), GS_SOAK_EVERY (100), GS_SOAK_MIN_WORDS (700),
# GS_SOAK_MAX_WORDS (2800) (about 1-4k tokens, the case's prompts), GS_SOAK_CTX (8192),
# GS_SOAK_MAX_TOKENS (2), GS_SOAK_DEVICE (cpu; cuda on a GPU host), GS_SOAK_ARGS (more `serve`
# options). On 2 busy cores a 1-4k-token
# prompt takes ~10 s; GS_SOAK_MIN_WORDS=20 GS_SOAK_MAX_WORDS=150 runs 3,000 requests in ~7 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build/src/cli/gemmaserve}"
SHARED="${GS_SHARED_DIR:-$PWD/../shared}"
MODELS="$SHARED/models"
[ -f "$MODELS/shakes-target.gguf" ] || MODELS="$PWD/models"
PORT=$((20000 + RANDOM % 20000))
LOG="$(mktemp)"
# shellcheck disable=SC2086
"$BIN" serve -m "$MODELS/shakes-target.gguf" --mtp "$MODELS/shakes-assistant.gguf" --device "${GS_SOAK_DEVICE:-cpu}" \
  -c "${GS_SOAK_CTX:-8192}" --port "$PORT" --log-level warn ${GS_SOAK_ARGS:-} >"$LOG" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -f "$LOG"' EXIT
for _ in $(seq 1 150); do curl -sf "localhost:$PORT/health" >/dev/null && break; sleep 0.2; done
rc=0
python3 tests/e2e/mem_growth.py "$PORT" "$SPID" --requests "${GS_SOAK_REQUESTS:-5000}" --every "${GS_SOAK_EVERY:-100}" \
  --min-words "${GS_SOAK_MIN_WORDS:-700}" --max-words "${GS_SOAK_MAX_WORDS:-2800}" \
  --max-tokens "${GS_SOAK_MAX_TOKENS:-2}" --max-growth-bytes-per-request "${GS_SOAK_MAX_GROWTH:-256}" || rc=$?
kill -0 $SPID 2>/dev/null || { echo "FAIL: the server died:"; tail -5 "$LOG"; exit 1; }
curl -s "localhost:$PORT/metrics" | grep -E '^gemmaserve_(process_|malloc_|heap_trims|kv_cache_bytes)' || true
exit $rc
