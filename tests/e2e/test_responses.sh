#!/usr/bin/env bash
# End to end: POST /v1/responses (decision 0032) on the real gemmaserve binary with the
# bundled shakes pair: curl (whole, SSE event lines, errors, 404 for stored responses) and the
# official openai npm client's responses API (openai_responses.mjs).
# Usage: test_responses.sh PATH/TO/gemmaserve
set -uo pipefail
. "$(dirname "$0")/lib.sh"
KEY="sk-e2e-$RANDOM$RANDOM"
[ -d "$E2E/node_modules/openai" ] || {
  echo "the openai npm package is missing: run (cd tests/e2e && npm install), as scripts/test.sh does"
  exit 1
}

printf '%s\n' "$KEY" > "$WORK/keys"
start_server -m "$TARGET" --mtp "$DRAFTER" --draft-max 4 --api-key-file "$WORK/keys" --ctx-size 1024 \
  --parallel 2 --shutdown-timeout 2
AUTH=(-H "Authorization: Bearer $KEY")
JSON=(-H "Content-Type: application/json")

code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/responses" \
  -d '{"input":"ROMEO:","max_output_tokens":16,"temperature":0}')"
if [ "$code" = 200 ] && python3 - "$WORK/r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["object"] == "response" and r["id"].startswith("resp_"), r
assert r["status"] in ("completed", "incomplete"), r
assert r["output"][0]["type"] == "message" and r["output_text"], r
assert r["usage"]["output_tokens"] > 0, r
PY
then ok "whole response"; else bad "whole response: $code $(head -c 300 "$WORK/r")"; fi

code="$(curl -s -N -o "$WORK/s" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/responses" \
  -d '{"input":"ROMEO:","max_output_tokens":16,"temperature":0,"stream":true}')"
if [ "$code" = 200 ] && python3 - "$WORK/s" "$WORK/r" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
whole = json.load(open(sys.argv[2]))
events = []
for block in body.split("\n\n"):
    lines = [l for l in block.split("\n") if l and not l.startswith(":")]
    if not lines:
        continue
    assert lines[0].startswith("event: ") and lines[1].startswith("data: "), block
    data = json.loads(lines[1][6:])
    assert data["type"] == lines[0][7:], block
    assert data["sequence_number"] == len(events), block
    events.append(data)
types = [e["type"] for e in events]
assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"], types
assert types[-1] in ("response.completed", "response.incomplete"), types
text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
assert text == whole["output_text"] == events[-1]["response"]["output_text"], (text, whole["output_text"])
assert "[DONE]" not in body
PY
then ok "stream: event lines, sequence numbers, the same text as the whole response"; else bad "stream: $code $(head -c 300 "$WORK/s")"; fi

code="$(curl -s -o "$WORK/e" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/responses" \
  -d '{"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}')"
if [ "$code" = 400 ] && python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["param"]=="input[0].content[0].type", e' "$WORK/e"; then
  ok "a file part: 400 naming the field"; else bad "file part -> $code $(cat "$WORK/e")"; fi
code="$(curl -s -o "$WORK/e" -w '%{http_code}' "${AUTH[@]}" "$URL/v1/responses/resp_abc")"
[ "$code" = 404 ] && grep -q "not stored" "$WORK/e" && ok "GET a response: 404, not stored" || bad "GET -> $code $(cat "$WORK/e")"
code="$(curl -s -o /dev/null -w '%{http_code}' "${JSON[@]}" "$URL/v1/responses" -d '{"input":"x"}')"
[ "$code" = 401 ] && ok "no key -> 401" || bad "no key -> $code"

if (cd "$E2E" && timeout 300 node openai_responses.mjs "$PORT" "$KEY"); then ok "openai npm client: responses"; else bad "openai npm client: responses"; fi

curl -s -o /dev/null "$URL/health" && kill -0 "$PID" 2>/dev/null && ok "server alive afterwards" || bad "server died"
e2e_result "responses e2e"
