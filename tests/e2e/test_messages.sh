#!/usr/bin/env bash
# End to end: Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) on the
# real gemmaserve binary with the bundled shakes pair, driven by curl and by a Python
# standard-library client (anthropic_client.py); then a clean SIGTERM stop.
# Usage: test_messages.sh PATH/TO/gemmaserve
set -uo pipefail
. "$(dirname "$0")/lib.sh"
KEY="sk-ant-e2e-$RANDOM$RANDOM"

printf '%s\n' "$KEY" > "$WORK/keys"
start_server -m "$TARGET" --mtp "$DRAFTER" --draft-max 4 --api-key-file "$WORK/keys" \
  --ctx-size 1024 --parallel 4 --shutdown-timeout 2
ok "server healthy"

# curl, as an Anthropic quick-start shows it: x-api-key and anthropic-version headers.
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/v1/messages" -H "x-api-key: $KEY" \
  -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
  -d '{"model":"claude-sonnet-4-5","max_tokens":40,"temperature":0,"messages":[{"role":"user","content":"ROMEO:"}]}')"
if [ "$code" = 200 ] && python3 - "$WORK/r" <<'EOF'
import json, re, sys
m = json.load(open(sys.argv[1]))
assert m["type"] == "message" and m["role"] == "assistant" and m["content"][0]["type"] == "text", m
assert re.search(r"thou|thee|thy|my|the", m["content"][0]["text"], re.I), m
assert m["stop_reason"] in ("end_turn", "max_tokens") and m["usage"]["output_tokens"] > 0, m
EOF
then ok "curl: a message that recites Shakespeare"; else bad "curl message -> $code $(cat "$WORK/r")"; fi

curl -s -N "$URL/v1/messages" -H "x-api-key: $KEY" -H 'content-type: application/json' \
  -d '{"model":"m","max_tokens":12,"stream":true,"messages":[{"role":"user","content":"ROMEO:"}]}' > "$WORK/sse"
if python3 - "$WORK/sse" <<'EOF'
import json, sys
names = [l[7:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("event: ")]
assert names[0] == "message_start" and names[-1] == "message_stop" and names[-2] == "message_delta", names
assert "content_block_start" in names and "content_block_delta" in names and "content_block_stop" in names, names
EOF
then ok "curl SSE: message_start, blocks, message_delta, message_stop"; else bad "SSE: $(head -c 600 "$WORK/sse")"; fi

code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/v1/messages" -H 'content-type: application/json' \
  -d '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}')"
if [ "$code" = 401 ] && python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); assert e["type"]=="error" and e["error"]["type"]=="authentication_error"' "$WORK/r"; then
  ok "no key -> 401 authentication_error"; else bad "no key -> $code $(cat "$WORK/r")"; fi

if python3 "$E2E/anthropic_client.py" "$URL" "$KEY"; then ok "python client checks"; else bad "python client checks"; fi

kill -0 "$PID" 2>/dev/null && ok "server still running" || bad "server died: $(tail -20 "$WORK/server.log")"
stop_on_sigterm

e2e_result "messages e2e"
