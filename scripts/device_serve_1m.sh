#!/usr/bin/env bash
# The server at a 1M-token context on a lent GPU machine (binaries as in device_run.sh):
# `serve` on `synth --preset 31b` with its synthetic drafter, --ctx-size 1048576, one slot;
# /health, then chat requests (a short one, one of ~GS_S1M_WORDS words, a stream), with the
# server's log and the GPU memory it holds. The drafter is random, so what this shows is that
# the 1M configuration loads, serves and stays up, not its speed.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
D="$DRAFTER_31B"
synth_31b_pair || exit 1
PORT=18777
t0=$SECONDS
"$BIN" serve -m "$M" --mtp "$D" --device cuda -c 1048576 --parallel 1 --host 127.0.0.1 --port $PORT \
  >"$OUT/serve.log" 2>&1 &
PID=$!
up=0
for _ in $(seq 1 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/health)" = 200 ] && { up=1; break; }
  kill -0 $PID 2>/dev/null || break
  sleep 0.5
done
echo "healthy=$up after $((SECONDS - t0)) s"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
chat() {  # $1 label, $2 JSON body
  local t=$SECONDS
  curl -s -m 300 -o "$OUT/resp.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    http://127.0.0.1:$PORT/v1/chat/completions -d "$2" > "$OUT/code"
  python3 - "$OUT/resp.json" "$1" "$(cat "$OUT/code")" "$((SECONDS - t))" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    j = {"raw": open(sys.argv[1]).read()[:200]}
u = j.get("usage", {})
t = j.get("timings", {})
fin = (j.get("choices") or [{}])[0].get("finish_reason")
print(f"{sys.argv[2]}: HTTP {sys.argv[3]} in {sys.argv[4]} s, finish {fin}, usage {u}, "
      f"error {j.get('error', {}).get('message') if 'error' in j else None}")
PY
}
chat short '{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":32,"temperature":0}'
words=$(python3 -c "import random; random.seed(1); print(' '.join(random.choice(['alpha','beta','gamma','delta','river','stone','light','north']) for _ in range(${GS_S1M_WORDS:-6000})))")
chat long "{\"messages\":[{\"role\":\"user\",\"content\":\"$words\"}],\"max_tokens\":64,\"temperature\":0}"
t=$SECONDS
curl -s -N -m 120 -H 'Content-Type: application/json' http://127.0.0.1:$PORT/v1/chat/completions \
  -d '{"messages":[{"role":"user","content":"Count"}],"max_tokens":24,"stream":true}' > "$OUT/stream.txt"
echo "stream: $(grep -c '^data: ' "$OUT/stream.txt") events, last: $(tail -c 60 "$OUT/stream.txt" | tr '\n' ' ') in $((SECONDS - t)) s"
curl -s http://127.0.0.1:$PORT/metrics | grep -E "^gemmaserve_(spec|draft|kv)" | head -8
kill $PID; wait $PID 2>/dev/null
echo "server exit $?"
grep -iE "error|warn|fail" "$OUT/serve.log" | head -8
