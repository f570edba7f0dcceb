#!/usr/bin/env bash
# End to end: `gemmaserve serve` renders chat prompts in the Gemma 4 template variant its
# model file carries. A file whose tokenizer.chat_template is the older interleaved template
# gets tool results as <|turn>tool turns, as Jinja2 renders that template (the expected text
# below); before, every model was prompted in the 31B template's format.
# Usage: test_chat_template_variant.sh PATH/TO/gemmaserve
set -uo pipefail
BIN="${1:?usage: test_chat_template_variant.sh PATH/TO/gemmaserve}"
SHARED="${GS_SHARED_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}"
TEMPLATES="$SHARED/test-assets/chat-templates"
WORK="$(mktemp -d)"
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }

BODY='{"messages":[{"role":"user","content":"Weather in Oslo?"},
  {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
    "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
  {"role":"tool","tool_call_id":"c1","content":"sunny"}],
  "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
  "chat_template_kwargs":{"enable_thinking":false}}'
# Jinja2 3.1.6 (trim_blocks, lstrip_blocks), bos_token "", over each template.
WANT_INTERLEAVED='<|turn>system
<|tool>declaration:get_weather{description:<|"|><|"|>,parameters:{type:<|"|>OBJECT<|"|>}}<tool|><turn|>
<|turn>user
Weather in Oslo?<turn|>
<|turn>model
<|tool_call>call:get_weather{city:<|"|>Oslo<|"|>}<tool_call|><turn|>
<|turn>tool
sunny<turn|>
<|turn>model
<|channel>thought
<channel|>'
WANT_31B='<|turn>system
<|tool>declaration:get_weather{description:<|"|><|"|>,parameters:{type:<|"|>OBJECT<|"|>}}<tool|><turn|>
<|turn>user
Weather in Oslo?<turn|>
<|turn>model
<|tool_call>call:get_weather{city:<|"|>Oslo<|"|>}<tool_call|><|tool_response>response:get_weather{value:<|"|>sunny<|"|>}<tool_response|>'

# prompt_of TEMPLATE_FILE: /apply-template's prompt from a server on a model carrying it.
prompt_of() {
  local model="$WORK/$(basename "$1" .jinja).gguf"
  "$BIN" synth --preset tiny --chat-template "$1" -o "$model" --quiet > /dev/null || return 1
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$BIN" serve -m "$model" --host 127.0.0.1 --port "$port" --parallel 1 --threads 1 --log-level warn \
    > "$WORK/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break
    sleep 0.1
  done
  curl -s "http://127.0.0.1:$port/apply-template" -H 'Content-Type: application/json' -d "$BODY" |
    python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["prompt"])'
  kill "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  PID=""
}

got="$(prompt_of "$TEMPLATES/google-gemma-4-31B-it-interleaved.jinja")"
[ "$got" = "$WANT_INTERLEAVED" ] && ok "interleaved template: tool results as <|turn>tool turns" ||
  bad "interleaved template: got [$got]"
got="$(prompt_of "$TEMPLATES/google-gemma-4-31B-it.jinja")"
[ "$got" = "$WANT_31B" ] && ok "31B template: tool results in the model turn" || bad "31B template: got [$got]"

echo "chat template variant: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
