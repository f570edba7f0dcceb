#!/usr/bin/env bash
# End to end: the real gemmaserve binary on the bundled shakes pair on a loopback port,
# driven by curl and by the official openai client under node; then a clean SIGTERM stop.
# Usage: test_serve.sh PATH/TO/gemmaserve
set -uo pipefail
. "$(dirname "$0")/lib.sh"
KEY="sk-e2e-$RANDOM$RANDOM"

[ -d "$E2E/node_modules/openai" ] || {
  echo "the openai npm package is missing: run (cd tests/e2e && npm install), as scripts/test.sh does"
  exit 1
}

# Bug-case 35: a drafter that does not fit, a target given as drafter, a truncated drafter:
# each a clear error before serving, exit status 1, never a crash.
head -c 100000 "$DRAFTER" > "$WORK/truncated.gguf"
for bad in "$SHARED/golden/tiny1234-assistant.gguf" "$TARGET" "$WORK/truncated.gguf"; do
  timeout 60 "$BIN" serve -m "$TARGET" --mtp "$bad" --port 0 --log-level warn > "$WORK/bad.log" 2>&1
  rc=$?
  if [ "$rc" = 1 ] && grep -q "cannot start: .*\(drafter\|mtp\)" "$WORK/bad.log"; then
    ok "unfit drafter $(basename "$bad") refused: $(grep -o 'cannot start: .*' "$WORK/bad.log" | head -c 120)"
  else
    bad "unfit drafter $(basename "$bad"): exit $rc: $(cat "$WORK/bad.log")"
  fi
done

printf '# e2e key\n%s\n' "$KEY" > "$WORK/keys"
# --cache-ram: llama-server's flag (bug-case 64's command line), accepted with nothing to cap.
start_server -m "$TARGET" --mtp "$DRAFTER" --draft-max 4 --no-draft-adaptive --api-key-file "$WORK/keys" \
  --ctx-size 1024 --parallel 4 --queue-size 32 --shutdown-timeout 5 --cache-ram 1024
ok "server healthy"

AUTH=(-H "Authorization: Bearer $KEY")
JSON=(-H "Content-Type: application/json")

# The key stays out of the process list.
if ps -o args= -p "$PID" | grep -q -- "$KEY"; then bad "API key visible in ps"; else ok "API key not in ps"; fi

code="$(curl -s -o "$WORK/r" -w '%{http_code}' "$URL/v1/models")"
if [ "$code" = 401 ] && python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["message"] and e["type"]' "$WORK/r"; then
  ok "no key -> 401 with an error body"; else bad "no key -> $code $(cat "$WORK/r")"; fi
code="$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$URL/v1/models")"
[ "$code" = 401 ] && ok "wrong key -> 401" || bad "wrong key -> $code"
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "$URL/v1/models")"
if [ "$code" = 200 ] && python3 -c 'import json,sys,time; m=json.load(open(sys.argv[1]))["data"][0]; assert abs(m["created"] - time.time()) < 3600, m' "$WORK/r"; then
  ok "models: created is the load time"; else bad "models -> $code $(cat "$WORK/r")"; fi

code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/completions" \
  -d '{"prompt":"ROMEO:","max_tokens":40,"temperature":0}')"
if [ "$code" = 200 ] && python3 -c 'import json,sys,re; t=json.load(open(sys.argv[1]))["choices"][0]["text"]; assert re.search(r"thou|thee|thy", t, re.I), t' "$WORK/r"; then
  ok "completion recites Shakespeare"; else bad "completion -> $code $(cat "$WORK/r")"; fi

# logit_bias (OpenAI's object of token ids): +100 on one token makes every sampled token that
# one, at temperature 0 and 1; false (llama-server's "never") keeps greedy's first token out.
if PYTHONPATH="$E2E" python3 - "$URL" "${AUTH[@]}" <<'EOF'
from e2e_http import Server
post = Server.from_argv().post
thee = post("/tokenize", {"content": " thee", "add_special": False})["tokens"]
assert len(thee) == 1, thee
for t in (0, 1):
    r = post("/v1/completions", {"prompt": "ROMEO:", "max_tokens": 4, "temperature": t, "seed": 1,
                                 "logit_bias": {str(thee[0]): 100}})
    assert r["choices"][0]["text"] == " thee" * 4, r
plain = post("/v1/completions", {"prompt": "ROMEO:", "max_tokens": 1, "temperature": 0})
first_ids = post("/tokenize", {"content": plain["choices"][0]["text"], "add_special": False})["tokens"]
assert len(first_ids) == 1, (plain, first_ids)
first = first_ids[0]
banned = post("/v1/completions", {"prompt": "ROMEO:", "max_tokens": 1, "temperature": 0,
                                  "logit_bias": [[first, False]]})
assert banned["choices"][0]["text"] != plain["choices"][0]["text"], (plain, banned)
EOF
then ok "logit_bias: +100 forces a token (greedy and sampled), false bans greedy's pick"; else bad "logit_bias"; fi

# min_tokens (vLLM): the end of generation is held back until that many tokens. The bundled
# model never ends a turn by itself, so a logit_bias makes it end at once without min_tokens.
if PYTHONPATH="$E2E" python3 - "$URL" "${AUTH[@]}" <<'EOF'
from e2e_http import Server
post = Server.from_argv().post
end = post("/tokenize", {"content": "<turn|>", "add_special": False, "parse_special": True})["tokens"]
assert len(end) == 1, end
base = {"messages": [{"role": "user", "content": "ROMEO:"}], "max_tokens": 60, "temperature": 0,
        "logit_bias": {str(end[0]): 100}}
plain = post("/v1/chat/completions", base)
assert plain["choices"][0]["finish_reason"] == "stop" and plain["usage"]["completion_tokens"] <= 1, plain
held = post("/v1/chat/completions", dict(base, min_tokens=12))
assert held["choices"][0]["finish_reason"] == "stop" and held["usage"]["completion_tokens"] >= 12, held["usage"]
assert held["choices"][0]["message"]["content"], held
EOF
then ok "min_tokens holds the end of generation back"; else bad "min_tokens"; fi

code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"ROMEO:"}],"max_tokens":16,"temperature":0}')"
if [ "$code" = 200 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["object"]=="chat.completion" and r["usage"]["completion_tokens"]>0' "$WORK/r"; then
  ok "chat with curl"; else bad "chat -> $code $(cat "$WORK/r")"; fi

curl -s -N "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"ROMEO:"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}' > "$WORK/sse"
if python3 - "$WORK/sse" <<'EOF'
import json, sys
events = [l[6:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("data: ")]
assert events[-1] == "[DONE]", events[-1]
chunks = [json.loads(e) for e in events[:-1]]
assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] in ("stop", "length")
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
assert chunks.index(finish[0]) == len(chunks) - 2
EOF
then ok "curl SSE stream: role, deltas, finish, usage, [DONE]"; else bad "SSE stream: $(head -c 600 "$WORK/sse")"; fi

for body in '{' '[]' '{"messages":[]}' '{"messages":[{"role":"user","content":42}]}' \
            '{"messages":[{"role":"user","content":"hi"}],"n":17}' \
            '{"messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"g"}}]}'; do
  code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" -d "$body")"
  if [ "$code" = 400 ] && python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["message"] and e["type"]=="invalid_request_error"' "$WORK/r"; then
    ok "bad body $body -> 400"; else bad "bad body $body -> $code $(cat "$WORK/r")"; fi
done

# n choices (decision 0030): streamed, each choice has its index, its own role and finish
# chunks, and one usage chunk sums them; whole, choice i with a seed is the answer to seed + i.
curl -s -N "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"ROMEO:"}],"max_tokens":10,"n":3,"temperature":1,"seed":5,"stream":true,"stream_options":{"include_usage":true}}' > "$WORK/sse"
if python3 - "$WORK/sse" <<'EOF'
import json, sys
events = [l[6:] for l in open(sys.argv[1]).read().split("\n") if l.startswith("data: ")]
assert events[-1] == "[DONE]", events[-1]
chunks = [json.loads(e) for e in events[:-1]]
by_index = {}
for c in chunks[:-1]:
    assert len(c["choices"]) == 1, c
    by_index.setdefault(c["choices"][0]["index"], []).append(c["choices"][0])
assert sorted(by_index) == [0, 1, 2], sorted(by_index)
for i, cs in by_index.items():
    assert cs[0]["delta"].get("role") == "assistant", cs[0]
    assert [bool(c["finish_reason"]) for c in cs].count(True) == 1 and cs[-1]["finish_reason"], cs[-1]
assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0, chunks[-1]
EOF
then ok "n=3 stream: an index, a role and a finish chunk per choice, one usage chunk"; else bad "n=3 stream: $(head -c 600 "$WORK/sse")"; fi
if python3 - "$URL" "$KEY" <<'EOF'
import json, sys, urllib.request
url, key = sys.argv[1], sys.argv[2]
def post(body):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    return json.load(urllib.request.urlopen(req, timeout=120))
base = {"prompt": "JULIET:", "max_tokens": 16, "temperature": 1, "seed": 77}
three = post(dict(base, n=3))
assert [c["index"] for c in three["choices"]] == [0, 1, 2], three
alone = [post(dict(base, seed=77 + i)) for i in range(3)]
for i in range(3):
    assert three["choices"][i]["text"] == alone[i]["choices"][0]["text"], (i, three["choices"][i], alone[i])
assert three["usage"]["completion_tokens"] == sum(a["usage"]["completion_tokens"] for a in alone), three["usage"]
assert three["usage"]["prompt_tokens"] == alone[0]["usage"]["prompt_tokens"], three["usage"]
EOF
then ok "n=3 completions: choice i is the answer to seed + i, usage sums the choices"; else bad "n=3 completions with a seed"; fi

# The legacy functions form (decision 0030): a call forced by function_call comes back as
# message.function_call with finish_reason function_call.
code="$(curl -s -o "$WORK/r" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"Weather in Verona?"}],"max_tokens":60,"temperature":0,
       "functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"],"additionalProperties":false}}],
       "function_call":{"name":"get_weather"}}')"
if [ "$code" = 200 ] && python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["choices"][0]
assert "tool_calls" not in c["message"], c
assert c["message"]["function_call"]["name"] == "get_weather", c
assert isinstance(json.loads(c["message"]["function_call"]["arguments"])["city"], str), c
assert c["finish_reason"] == "function_call", c' "$WORK/r"; then
  ok "functions / function_call answered with message.function_call"; else bad "functions -> $code $(cat "$WORK/r")"; fi

head -c 9000000 /dev/zero | tr '\0' 'a' > "$WORK/big"
code="$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/completions" --data-binary @"$WORK/big")"
[ "$code" = 413 ] && ok "oversized body -> 413" || bad "oversized body -> $code"

# MTP drafter (bug-cases 30, 31, 34): greedy output and logprobs are the same with and
# without drafting; drafting happens in every slot at once, with real acceptance.
if python3 - "$URL" "$KEY" <<'EOF'
import json, sys, threading, urllib.request
url, key = sys.argv[1], sys.argv[2]
def post(body):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    return json.load(urllib.request.urlopen(req, timeout=120))
base = {"prompt": "ROMEO:", "max_tokens": 80, "temperature": 0, "logprobs": 3}
with_mtp = post(base)
without = post(dict(base, speculative=False))
assert with_mtp["choices"][0]["text"] == without["choices"][0]["text"], "drafting changed greedy output"
assert with_mtp["timings"]["draft_n"] > 0 and without["timings"]["draft_n"] == 0
a, b = with_mtp["choices"][0]["logprobs"], without["choices"][0]["logprobs"]
assert a["tokens"] == b["tokens"]
for x, y in zip(a["token_logprobs"], b["token_logprobs"]):
    assert abs(x - y) < 1e-3, (x, y)
for x, y in zip(a["top_logprobs"], b["top_logprobs"]):
    assert sorted(x) == sorted(y), (x, y)
# Prefix reuse (bug-case 46): the same prompt again reuses the slot's cache and gives the
# same greedy text (the first request above ran in a fresh slot); a prompt that continues
# the text reuses the cache too.
again = post(dict(base, speculative=False))
assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == again["usage"]["prompt_tokens"] - 1, again["usage"]
assert again["choices"][0]["text"] == without["choices"][0]["text"], "a reused cache changed the output"
cont = post({"prompt": "ROMEO:" + without["choices"][0]["text"] + "\nROMEO:", "max_tokens": 20, "temperature": 0})
assert cont["usage"]["prompt_tokens_details"]["cached_tokens"] > 60, cont["usage"]
plain = post({"prompt": "ROMEO:" + without["choices"][0]["text"] + "\nROMEO:", "max_tokens": 20, "temperature": 0,
              "speculative": False})
assert cont["choices"][0]["text"] == plain["choices"][0]["text"], "drafting over a reused cache changed the output"
results = [None] * 4
def run(i):
    results[i] = post({"prompt": "ROMEO:", "max_tokens": 80, "temperature": 0})
threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
for r in results:
    assert r["choices"][0]["text"] == without["choices"][0]["text"], "a concurrent slot drifted"
    t = r["timings"]
    assert t["draft_n"] >= 8 and t["draft_n_accepted"] / t["draft_n"] >= 0.3, t
print("drafted/accepted per request:", [(r["timings"]["draft_n"], r["timings"]["draft_n_accepted"]) for r in results])
EOF
then ok "MTP: same greedy text and logprobs, drafting in 4 slots at once; prefix reuse"; else bad "MTP checks"; fi

# The official openai client: chat, stream, forced tool call, thinking, wrong key, cancel, 8 streams.
if (cd "$E2E" && timeout 300 node openai_client.mjs "$PORT" "$KEY"); then
  ok "openai npm client scenarios"; else bad "openai npm client scenarios"; fi

curl -s "${AUTH[@]}" "$URL/metrics" > "$WORK/metrics"
if promtool check metrics < "$WORK/metrics" > "$WORK/promtool" 2>&1; then ok "promtool check metrics"; else
  bad "promtool check metrics: $(cat "$WORK/promtool")"; fi
grep -q '^gemmaserve_requests_total [1-9]' "$WORK/metrics" && ok "metrics count requests" || bad "metrics count requests"
grep -q '^gemmaserve_draft_position_accepted_tokens_total{position="1"} [1-9]' "$WORK/metrics" \
  && ok "metrics count accepted drafts by position" || bad "metrics count accepted drafts by position"

[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 200 ] && ok "still healthy" || bad "not healthy at the end"

# metric_is NAME VALUE: whether /metrics shows gemmaserve_NAME VALUE. The page is read whole
# first: `curl | grep -q` under pipefail fails when grep exits before curl has written all.
metric_is() {
  local page
  page="$(curl -s "${AUTH[@]}" "$URL/metrics")"
  grep -q "^gemmaserve_$1 $2\$" <<<"$page"
}

# A client that half-closes after its request (shutdown(SHUT_WR)) still reads: it gets its
# 200 (it got "HTTP/1.1 499 Internal Server Error" with Connection: close twice, and its
# request was cancelled). A 100 Continue may come first when the answer takes over a second.
python3 - "$PORT" "$KEY" > "$WORK/half" 2>&1 <<'PY'
import json, socket, sys
port, key = int(sys.argv[1]), sys.argv[2]
body = b'{"prompt":"ROMEO:","max_tokens":3}'
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.encode() +
          b"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    got += chunk
text = got.decode()
interim = "HTTP/1.1 100 Continue\r\n\r\n"
if text.startswith(interim):
    text = text[len(interim):]
head, _, rest = text.partition("\r\n\r\n")
lines = head.split("\r\n")
assert lines[0] == "HTTP/1.1 200 OK", lines[0]
assert sum(1 for l in lines[1:] if l.lower().startswith("connection:")) == 1, head
assert json.loads(rest)["choices"][0]["text"], rest
print("ok")
PY
[ "$(tail -n 1 "$WORK/half")" = ok ] && ok "a half-closed client gets its 200" \
  || bad "a half-closed client: $(head -c 400 "$WORK/half")"

# SIGTERM with long streams in every slot (--parallel 4) and one request waiting for a slot:
# new requests are refused while it drains, the waiting one gets its 503 at once (it waited
# out the whole drain before), the streams are ended after --shutdown-timeout, and the
# server exits 0.
curl -s -N "${AUTH[@]}" "${JSON[@]}" "$URL/v1/completions" \
  -d '{"prompt":"ROMEO:","max_tokens":100000,"stream":true}' > "$WORK/long" 2>/dev/null &
CURL_PID=$!
OTHER_PIDS=()
for i in 1 2 3; do
  curl -s -N "${AUTH[@]}" "${JSON[@]}" "$URL/v1/completions" \
    -d '{"prompt":"JULIET:","max_tokens":100000,"stream":true}' > "$WORK/long$i" 2>/dev/null &
  OTHER_PIDS+=($!)
done
for _ in $(seq 1 100); do grep -q '"text"' "$WORK/long" 2>/dev/null && break; sleep 0.1; done
for _ in $(seq 1 100); do
  metric_is busy_slots 4 && break; sleep 0.1; done
curl -s --max-time 30 -o "$WORK/queued" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"ROMEO:"}],"max_tokens":8}' > "$WORK/queued_code" 2>/dev/null &
QUEUED_PID=$!
# A waiting stream too: its headers wait for a slot, so it gets the same 503 (it was a 200 and
# an error event, against what the README promises).
curl -s -N --max-time 30 -o "$WORK/queued_stream" -w '%{http_code}' "${AUTH[@]}" "${JSON[@]}" "$URL/v1/completions" \
  -d '{"prompt":"ROMEO:","max_tokens":8,"stream":true}' > "$WORK/queued_stream_code" 2>/dev/null &
QUEUED_STREAM_PID=$!
for _ in $(seq 1 100); do
  metric_is queue_length 2 && break; sleep 0.1; done
metric_is queue_length 2 \
  && ok "two requests wait for a slot before SIGTERM" || bad "not two requests waiting before SIGTERM"
kill -TERM "$PID"
T0=$(date +%s%N)
wait "$QUEUED_PID" "$QUEUED_STREAM_PID"
T1=$(date +%s%N)
ms=$(( (T1 - T0) / 1000000 ))
# Health first, while the drain (5 s) surely goes on: on a loaded machine the two python checks
# below took the script past the drain's end, and health then found no server (curl 000).
sleep 0.5
code="$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")"
[ "$code" = 503 ] && ok "draining: health 503" \
  || bad "draining: health $code ($(( ($(date +%s%N) - T0) / 1000000 )) ms after SIGTERM)"
for q in queued queued_stream; do
  if [ "$(cat "$WORK/${q}_code")" = 503 ] && [ "$ms" -lt 1000 ] && kill -0 "$PID" 2>/dev/null &&
     python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["code"]=="unavailable" and e["message"]' "$WORK/$q"; then
    ok "draining: the waiting $q request got its 503 at once (${ms} ms), the drain goes on"
  else
    bad "draining: the waiting $q request got $(cat "$WORK/${q}_code") after ${ms} ms: $(cat "$WORK/$q")"
  fi
done
for _ in $(seq 1 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID" 2>/dev/null; then bad "no exit within 15 s of SIGTERM"; else
  wait "$PID"; rc=$?
  [ "$rc" = 0 ] && ok "clean exit on SIGTERM with a stream in flight" || bad "exit status $rc on SIGTERM"
fi
for _ in $(seq 1 50); do kill -0 "$CURL_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$CURL_PID" 2>/dev/null; then bad "the in-flight stream was left hanging"; kill "$CURL_PID"; else
  ok "the in-flight stream was ended"; fi
for p in "${OTHER_PIDS[@]}"; do
  for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$p" 2>/dev/null && { bad "an in-flight stream was left hanging"; kill "$p"; }
done
# ...with an error event that says why, then [DONE] (it was cut off without either).
grep -q '"error"' "$WORK/long" && tail -n 2 "$WORK/long" | grep -q '^data: \[DONE\]' \
  && ok "the in-flight stream ended with an error event and [DONE]" \
  || bad "the in-flight stream ended without an error event and [DONE]: $(tail -c 200 "$WORK/long")"

# A second signal while draining stops the server at once (exit 128 + the signal), as a second
# Ctrl-C stops llama-server; it sat out the whole drain (here 60 s) before.
# start_second_server NAME serve-args...: another server on a free port, waited for until
# healthy; sets PORT2 and PID2 (log: $WORK/NAME.log).
start_second_server() {
  local name="$1"
  shift
  PORT2="$(free_port)"
  "$BIN" serve --host 127.0.0.1 --port "$PORT2" "$@" > "$WORK/$name.log" 2>&1 &
  PID2=$!
  wait_healthy "$PORT2" "$PID2"
}
# (A context long enough that the stream cannot reach its end during the checks, and up to 30 s
# for its first token: on a loaded 2-core machine the checks failed now and then.)
start_second_server server2 -m "$TARGET" --ctx-size 8192 --parallel 1 --shutdown-timeout 60
curl -s -N "${JSON[@]}" "http://127.0.0.1:$PORT2/v1/completions" \
  -d '{"prompt":"ROMEO:","max_tokens":100000,"stream":true}' > "$WORK/long2" 2>/dev/null &
CURL2_PID=$!
for _ in $(seq 1 300); do grep -q '"text"' "$WORK/long2" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$PID2"
sleep 0.5
kill -0 "$PID2" 2>/dev/null && ok "draining after the first SIGTERM" || bad "exited on the first SIGTERM with a stream running"
T0=$(date +%s%N)
kill -INT "$PID2"
for _ in $(seq 1 50); do kill -0 "$PID2" 2>/dev/null || break; sleep 0.1; done
T1=$(date +%s%N)
if kill -0 "$PID2" 2>/dev/null; then bad "still draining 5 s after a second signal"; kill -KILL "$PID2"; wait "$PID2" 2>/dev/null; else
  wait "$PID2"; rc2=$?
  [ "$rc2" = 130 ] && ok "a second signal stopped it at once ($(( (T1 - T0) / 1000000 )) ms, exit 130)" \
    || bad "exit status $rc2 after a second signal (130 expected)"
fi
kill "$CURL2_PID" 2>/dev/null

# SIGTERM while an n = 3 stream runs on 2 slots (two choices in slots, the third waiting): the
# response is running, so its waiting choice is kept through the drain and every choice ends
# with its finish_reason, then [DONE], and the server exits 0. The drain refused the third
# choice and the whole stream ended at once with the shutting-down error before.
start_second_server server_n -m "$TARGET" --ctx-size 1024 --parallel 2 --shutdown-timeout 120
curl -s -N "${JSON[@]}" "http://127.0.0.1:$PORT2/v1/chat/completions" \
  -d '{"messages":[{"role":"user","content":"ROMEO:"}],"max_tokens":60,"n":3,"ignore_eos":true,"stream":true}' \
  > "$WORK/n3" 2>/dev/null &
CURLN_PID=$!
for _ in $(seq 1 300); do grep -q '"content"' "$WORK/n3" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$PID2"
for _ in $(seq 1 1200); do kill -0 "$PID2" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID2" 2>/dev/null; then bad "n=3 drain: no exit within 120 s"; kill -KILL "$PID2"; wait "$PID2" 2>/dev/null; else
  wait "$PID2"; rcn=$?
  [ "$rcn" = 0 ] && ok "n=3 drain: exit 0" || bad "n=3 drain: exit status $rcn"
fi
wait "$CURLN_PID" 2>/dev/null
if python3 - "$WORK/n3" <<'PY'
import json, sys
ends, errors, done = {}, 0, False
for line in open(sys.argv[1]):
    if line.startswith("data: [DONE]"):
        done = True
    elif line.startswith("data: "):
        ev = json.loads(line[6:])
        errors += "error" in ev
        for ch in ev.get("choices", []):
            if ch.get("finish_reason"):
                ends[ch["index"]] = ch["finish_reason"]
sys.exit(0 if done and not errors and ends == {0: "length", 1: "length", 2: "length"} else 1)
PY
then ok "n=3 drain: the choice waiting for a slot was kept; all three ended with length, then [DONE]"
else bad "n=3 drain: $(grep -c '' "$WORK/n3") lines, ends: $(grep -o '"finish_reason":"[a-z]*"' "$WORK/n3" | sort | uniq -c | tr '\n' ' ') $(grep -o '"error":{[^}]*}' "$WORK/n3" | head -1)"
fi

# A model file whose weights make NaN (bytes near the end of its tensor data overwritten with
# 0xFF): a request fails with a 500 that says so; it was a 200 of <pad> tokens before.
python3 - "$TARGET" "$WORK/corrupt.gguf" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(d) - 200000, len(d) - 100000, 7):
    d[i] = 0xFF
open(sys.argv[2], "wb").write(d)
PY
start_second_server server3 -m "$WORK/corrupt.gguf" --ctx-size 512 --parallel 1
code3="$(curl -s -o "$WORK/nan" -w '%{http_code}' "${JSON[@]}" "http://127.0.0.1:$PORT2/v1/completions" \
  -d '{"prompt":"ROMEO:","max_tokens":5}')"
[ "$code3" = 500 ] && grep -q 'no usable logits' "$WORK/nan" \
  && ok "NaN logits: a 500 that says the model computed no usable logits" \
  || bad "NaN logits: $code3 $(head -c 200 "$WORK/nan")"
kill "$PID2" 2>/dev/null
wait "$PID2" 2>/dev/null

e2e_result "serve e2e"
