#!/usr/bin/env bash
# Structured output on the GPU (decision 0027), with the binaries carried in .dev/cuda:
#  1. the device suite (scripts/device_test.sh), unless GS_JSON_TESTS=0;
#  2. the shakes pair served on CUDA with MTP: response_format json_schema requests (whole and
#     streamed), their content checked against the schema, drafting under the mask counted;
#  3. the 31B-shaped file served on CUDA: server decode speed, greedy and sampled, free and
#     under response_format (the sampler's and the masks' host cost on the 262k vocabulary
#     beside a GPU step).
# Summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
summary=()
note() { summary+=("$1"); echo "$1"; }

if [ "${GS_JSON_TESTS:-1}" = 1 ]; then
  (synth_31b_pair) &
  synth_pid=$!
  timeout 300 scripts/device_test.sh >"$OUT/tests.log" 2>&1
  note "$(tests_summary $?)"
  wait "$synth_pid"
else
  synth_31b_pair
fi

# serve FILE DRAFTER PORT: starts a server in the background, waits until it is healthy.
serve() {
  local extra=()
  [ -n "$2" ] && extra=(--mtp "$2")
  "$BIN" serve -m "$1" "${extra[@]}" --port "$3" --parallel 1 --ctx-size 4096 --device cuda >"$OUT/serve_$3.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 240); do curl -sf "localhost:$3/health" >/dev/null && return 0; sleep 0.5; done
  echo "server on $3 did not start: $(tail -3 "$OUT/serve_$3.log")"
  return 1
}

# 2. Shakes on CUDA with MTP.
PORT=8094
if serve models/shakes-target.gguf models/shakes-assistant.gguf $PORT; then
  note "$(python3 - $PORT <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
schema = {"type": "object", "properties": {"mood": {"enum": ["glad", "sad"]}, "name": {"type": "string", "maxLength": 8}},
          "required": ["mood", "name"], "additionalProperties": False}
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=120).read().decode()
ok = whole = bad = thought = 0
for seed in range(8):
    body = {"messages": [{"role": "user", "content": "A character and mood, as JSON."}], "max_tokens": 80,
            "temperature": 0 if seed == 0 else 1, "seed": seed,
            "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}}}
    r = json.loads(post(body))
    c = r["choices"][0]
    content = c["message"].get("content") or ""
    if c["finish_reason"] == "stop":
        try:
            v = json.loads(content)
            good = v.get("mood") in ("glad", "sad") and isinstance(v.get("name"), str) and set(v) == {"mood", "name"}
        except Exception:
            good = False
        whole += 1
        ok += good
        bad += not good
    elif content == "":
        thought += 1  # cut by max_tokens before the value (inside a thought)
    elif not content.startswith("{"):
        bad += 1
m = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
drafts = [l for l in m.splitlines() if l.startswith("gemmaserve_draft")][:2]
print(f"shakes cuda json_schema: {whole}/8 whole, {ok} follow the schema, {thought} cut inside a thought, {bad} bad; "
      f"{' '.join(drafts)}")
# A forced call of one function: its arguments follow the tool's schema (decision 0027 §7).
tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"}, "unit": {"enum": ["C", "F"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
calls = good = 0
for seed in range(6):
    body = {"messages": [{"role": "user", "content": "Weather in Rome?"}], "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "max_tokens": 60,
            "temperature": 0 if seed == 0 else 1.5, "seed": seed}
    c = json.loads(post(body))["choices"][0]
    if c["finish_reason"] != "tool_calls":
        continue
    calls += 1
    try:
        a = json.loads(c["message"]["tool_calls"][0]["function"]["arguments"])
        good += isinstance(a.get("city"), str) and a.get("unit") in ("C", "F") and set(a) <= {"city", "days", "unit"} and \
            (not "days" in a or isinstance(a["days"], int))
    except Exception:
        pass
print(f"shakes cuda forced call: {calls}/6 finished, {good} follow the schema")
PY
)"
  kill $spid; wait $spid 2>/dev/null
fi

# 3. The 31B-shaped file: server decode speed, 128 tokens a request, greedy and sampled, free
# and under response_format (a long string, a long array of integers, any object).
PORT=8095
if serve "$MODEL_31B" "" $PORT; then
  note "$(python3 - $PORT <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
def post(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=300).read().decode())
text = {"type": "object", "properties": {"text": {"type": "string", "minLength": 4000}}, "required": ["text"]}
ints = {"type": "array", "items": {"type": "integer"}, "minItems": 400}
modes = [("greedy", {"temperature": 0}), ("T1", {"temperature": 1}), ("T1 k64 p.95", {"temperature": 1, "top_k": 64, "top_p": 0.95}),
         ("json string", {"temperature": 1, "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": text}}}),
         ("json ints", {"temperature": 1, "response_format": {"type": "json_schema", "json_schema": {"name": "i", "schema": ints}}}),
         ("json object", {"temperature": 1, "response_format": {"type": "json_object"}})]
out = []
for rnd in range(2):
    for name, extra in modes:
        body = {"messages": [{"role": "user", "content": "Write JSON."}], "max_tokens": 128, "seed": 3 + rnd}
        body.update(extra)
        r = post(body)
        t = r.get("timings", {})
        out.append(f"{name}: {r['usage']['completion_tokens']} tok {t.get('predicted_per_second', 0):.1f} tok/s")
print("31b cuda server decode: " + "; ".join(out))
PY
)"
  kill $spid; wait $spid 2>/dev/null
fi
echo "== summary"
printf '%s\n' "${summary[@]}"
