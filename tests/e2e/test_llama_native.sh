#!/usr/bin/env bash
# End to end: llama-server's native routes (decision 0061) and vLLM's /tokenize bodies
# (decision 0063) on the real binary, the bundled shakes pair, with curl: POST /completion
# (greedy = /v1/completions, streamed = whole without [DONE], n_predict 0 the prompt only and
# its cache reuse, a bad field a 400 naming it), GET /props, GET /slots (and fail_on_no_slot),
# the slot actions (save, erase, restore, and the restored prompt reused; decision 0068),
# POST /props 405, /tokenize and /detokenize in both forms, /v1/models' max_model_len; then a
# clean SIGTERM stop.
# Usage: test_llama_native.sh PATH/TO/gemmaserve
set -uo pipefail
. "$(dirname "$0")/lib.sh"

start_server -m "$TARGET" --mtp "$DRAFTER" --ctx-size 1024 --parallel 2 --log-level warn --slot-save-path "$WORK/slots"
ok "server healthy"
JSON=(-H "Content-Type: application/json")

post() {  # post PATH BODY -> the body in $WORK/r, the status on stdout
  curl -s -o "$WORK/r" -w '%{http_code}' "${JSON[@]}" "$URL$1" -d "$2"
}
check() {  # check NAME STATUS WANT PYTHON_ASSERTS (j: the answer's JSON)
  local name="$1" code="$2" want="$3" asserts="$4"
  if [ "$code" = "$want" ] && python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $asserts" "$WORK/r" 2>"$WORK/err"; then
    ok "$name"
  else
    bad "$name: status $code (want $want): $(head -c 400 "$WORK/r") $(tail -n 2 "$WORK/err")"
  fi
}

# /completion greedy against /v1/completions on the same prompt.
code="$(post /v1/completions '{"prompt":"ROMEO:","max_tokens":24,"temperature":0}')"
check "/v1/completions greedy" "$code" 200 'assert j["choices"][0]["text"]'
cp "$WORK/r" "$WORK/openai.json"
code="$(post /completion '{"prompt":"ROMEO:","n_predict":24,"temperature":0}')"
check "/completion greedy = /v1/completions" "$code" 200 "
o=json.load(open('$WORK/openai.json'))
assert j['content'] == o['choices'][0]['text'], (j['content'], o['choices'][0]['text'])
assert j['tokens_predicted'] == o['usage']['completion_tokens']
assert j['tokens_evaluated'] == o['usage']['prompt_tokens']
assert j['stop'] is True and j['stop_type'] in ('limit', 'eos')
for k in ('prompt_n', 'predicted_n', 'prompt_per_second', 'predicted_per_second', 'cache_n'): assert k in j['timings'], k
assert j['generation_settings']['n_predict'] == 24"
cp "$WORK/r" "$WORK/native.json"

# Streamed: data chunks, no [DONE], the same text, the last chunk stop: true.
curl -s -N "${JSON[@]}" "$URL/completion" -d '{"prompt":"ROMEO:","n_predict":24,"temperature":0,"stream":true}' > "$WORK/sse"
if python3 - "$WORK/sse" "$WORK/native.json" <<'PY'
import json, sys
lines = [l[6:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("data: ")]
assert lines and "[DONE]" not in lines, lines[-1:]
chunks = [json.loads(l) for l in lines]
assert chunks[-1]["stop"] is True and all(c["stop"] is False for c in chunks[:-1])
whole = json.load(open(sys.argv[2]))
assert "".join(c["content"] for c in chunks) == whole["content"]
PY
then ok "/completion streamed = whole, no [DONE]"; else bad "/completion stream: $(tail -c 400 "$WORK/sse")"; fi

# n_predict 0: the prompt only; the next request with that prompt finds it in the cache.
prompt='ROMEO:\nBut soft, what light through yonder window breaks?\nJULIET:\n'
code="$(post /completion "{\"prompt\":\"$prompt\",\"n_predict\":0}")"
check "/completion n_predict 0: the prompt only" "$code" 200 '
assert j["content"] == "" and j["tokens_predicted"] == 0 and j["stop_type"] == "limit", j
assert j["tokens_evaluated"] > 10'
n_prompt="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens_evaluated"])' "$WORK/r" 2>/dev/null || echo 0)"
code="$(post /completion "{\"prompt\":\"$prompt\",\"n_predict\":4,\"temperature\":0}")"
check "the next request reuses the prompt-only request's cache" "$code" 200 "
assert j['tokens_cached'] == $n_prompt - 1, (j['tokens_cached'], $n_prompt)
assert j['tokens_predicted'] == 4"
code="$(post /completion '{"prompt":"hi","n_predict":0,"max_tokens":3}')"
check "n_predict 0 beside max_tokens 3: 400 naming max_tokens" "$code" 400 'assert j["error"]["param"] == "max_tokens", j'
code="$(post /completion '{"prompt":"hi","grammar":"root ::= \"a\""}')"
check "/completion grammar: 400 naming it" "$code" 400 'assert j["error"]["param"] == "grammar", j'

# /props and /slots.
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/props")"
check "GET /props" "$code" 200 '
assert j["total_slots"] == 2, j["total_slots"]
s = j["default_generation_settings"]
assert s["n_ctx"] == 1024 and s["speculative"] is True, s
assert j["chat_template"] and j["build_info"].startswith("gemmaserve")'
code="$(curl -s -o "$WORK/r" -w '%{http_code}' -X POST "${JSON[@]}" "$URL/props" -d '{}')"
[ "$code" = 405 ] && ok "POST /props: 405" || bad "POST /props: $code"
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/slots")"
check "GET /slots" "$code" 200 '
assert len(j) == 2 and [s["id"] for s in j] == [0, 1], j
for s in j:
  assert s["n_ctx"] == 1024 and s["is_processing"] is False and isinstance(s["next_token"], list), s
  assert "prompt" not in s'
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/slots?fail_on_no_slot=1")"
[ "$code" = 200 ] && ok "GET /slots?fail_on_no_slot=1 with idle slots: 200" || bad "fail_on_no_slot idle: $code"

# /tokenize and /detokenize, llama-server's bodies and vLLM's.
code="$(post /tokenize '{"content":"ROMEO: But soft"}')"
check "/tokenize content" "$code" 200 'assert j["tokens"] and all(isinstance(t, int) for t in j["tokens"])'
llama_ids="$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["tokens"]))' "$WORK/r" 2>/dev/null || echo '[]')"
code="$(post /tokenize '{"prompt":"ROMEO: But soft","add_special_tokens":false,"return_token_strs":true}')"
check "/tokenize vLLM prompt" "$code" 200 "
assert j['tokens'] == $llama_ids, (j['tokens'], $llama_ids)
assert j['count'] == len(j['tokens']) and j['max_model_len'] == 1024
assert len(j['token_strs']) == j['count']"
code="$(post /tokenize '{"messages":[{"role":"user","content":"Hello"}]}')"
check "/tokenize vLLM messages" "$code" 200 'assert j["count"] == len(j["tokens"]) > 3 and j["tokens"][0] == 2, j'
code="$(post /detokenize "{\"tokens\":$llama_ids}")"
check "/detokenize: content and prompt" "$code" 200 'assert j["content"] == j["prompt"] == "ROMEO: But soft", j'
code="$(post /tokenize '{"prompt":"a","content":"b"}')"
check "/tokenize with two forms: 400" "$code" 400 'assert j["error"]["param"] == "content", j'
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/v1/models")"
check "/v1/models max_model_len" "$code" 200 'assert j["data"][0]["max_model_len"] == 1024, j'

# Slot actions (decision 0068): both slots erased, the prompt evaluated into one, that slot
# saved, both erased, the file restored into slot 1, and the prompt served from it.
for slot in 0 1; do
  code="$(post "/slots/$slot?action=erase" "")"
  check "slot $slot erase" "$code" 200 "assert j['id_slot'] == $slot and j['n_erased'] >= 0, j"
done
code="$(post /completion "{\"prompt\":\"$prompt\",\"n_predict\":0}")"
best=-1; best_n=-1
for slot in 0 1; do
  code="$(post "/slots/$slot?action=save" "{\"filename\":\"s$slot.bin\"}")"
  n="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_saved"])' "$WORK/r" 2>/dev/null || echo -2)"
  [ "$code" = 200 ] && [ "$n" -gt "$best_n" ] && { best=$slot; best_n=$n; }
done
[ "$best_n" -gt 10 ] && ok "slot save: $best_n tokens from slot $best" || bad "slot save: $(head -c 300 "$WORK/r")"
for slot in 0 1; do
  code="$(post "/slots/$slot?action=erase" "")"
  check "slot $slot erase again" "$code" 200 "assert j['id_slot'] == $slot and j['n_erased'] == ($best_n if $slot == $best else 0), j"
done
code="$(post "/slots/1?action=restore" "{\"filename\":\"s$best.bin\"}")"
check "slot restore into slot 1" "$code" 200 "assert j['n_restored'] == $best_n and j['n_read'] > 0, j"
code="$(post /completion "{\"prompt\":\"$prompt\",\"n_predict\":4}")"
check "the restored prompt is reused" "$code" 200 'assert j["tokens_cached"] == j["tokens_evaluated"] - 1 > 10, j'
code="$(post "/slots/0?action=restore" '{"filename":"../etc/passwd"}')"
check "slot restore of a path: 400" "$code" 400 'assert j["error"]["param"] == "filename", j'

# --slot-save-path that names a file, not a folder: serve refuses to start, naming it.
touch "$WORK/not-a-folder"
if timeout 20 "$BIN" serve -m "$TARGET" --port "$(free_port)" --slot-save-path "$WORK/not-a-folder" >"$WORK/out" 2>&1; then
  bad "serve with --slot-save-path on a file started"
elif grep -q "slot-save-path" "$WORK/out"; then
  ok "serve with --slot-save-path on a file: refused"
else
  bad "serve with --slot-save-path on a file: $(head -c 300 "$WORK/out")"
fi

# The server is still whole after all that.
code="$(post /completion '{"prompt":"ROMEO:","n_predict":4}')"
check "a last /completion" "$code" 200 'assert j["tokens_predicted"] == 4'
stop_on_sigterm 10
e2e_result "llama-server routes e2e"
