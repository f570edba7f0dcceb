#!/usr/bin/env bash
# End to end: reasoning_format (decision 0034) on the real gemmaserve binary with the bundled
# shakes model, served with --reasoning-format none. A reasoning prefill makes the model go on
# thinking and a reasoning budget closes the thought, so every answer has a thought and a
# text: none (the server's default here) leaves the thought in content, deepseek splits it off,
# deepseek-legacy does both; streamed and whole answers agree, n choices too; the Messages and
# Responses APIs keep their own reasoning blocks; a bad value is a 400 naming the field.
# Usage: test_reasoning_format.sh PATH/TO/gemmaserve
set -uo pipefail
. "$(dirname "$0")/lib.sh"

start_server -m "$TARGET" --ctx-size 1024 --parallel 4 --shutdown-timeout 2 --reasoning-format none
ok "server healthy (--reasoning-format none)"

if PYTHONPATH="$E2E" python3 - "$URL" <<'EOF'
import json
import sys
import urllib.error
import urllib.request

from e2e_http import Server

server = Server.from_argv()
CLOSE = "<channel|>"
verse = "Now is the winter of our discontent\nMade glorious summer by this sun of York;\n"
# The prompt ends inside a thought (a reasoning-only prefill): the model goes on thinking until
# the budget closes the thought, then answers.
BODY = {"messages": [{"role": "user", "content": "Tell of Richard."},
                     {"role": "assistant", "reasoning_content": verse}],
        "chat_template_kwargs": {"enable_thinking": True}, "reasoning_budget_tokens": 6,
        "max_tokens": 24, "temperature": 0}


def stream(body):
    """The concatenated deltas of each choice: {index: (content, reasoning or None, finish)}."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    req = urllib.request.Request(server.url + "/v1/chat/completions", json.dumps(body).encode(), server.headers)
    out, usage = {}, None
    for line in urllib.request.urlopen(req, timeout=120).read().decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        c = json.loads(line[6:])
        if c.get("usage"):
            usage = c["usage"]
        for ch in c["choices"]:
            content, reasoning, finish = out.get(ch["index"], ("", None, None))
            d = ch["delta"]
            content += d.get("content") or ""
            if "reasoning_content" in d:
                reasoning = (reasoning or "") + d["reasoning_content"]
            out[ch["index"]] = (content, reasoning, ch["finish_reason"] or finish)
    return out, usage


def check_stream(body, whole, what):
    st, usage = stream(body)
    assert len(st) == len(whole["choices"]), (what, st, whole)
    for c in whole["choices"]:
        m = c["message"]
        assert st[c["index"]] == (m["content"] or "", m.get("reasoning_content"), c["finish_reason"]), \
            (what, st[c["index"]], c)
    assert usage["completion_tokens"] == whole["usage"]["completion_tokens"], (what, usage, whole["usage"])


answers = {}
for fmt in (None, "none", "deepseek", "deepseek-legacy", "auto"):
    body = BODY if fmt is None else dict(BODY, reasoning_format=fmt)
    r = server.post("/v1/chat/completions", body, timeout=120)
    answers[fmt] = r
    check_stream(body, r, fmt)
default, none, split, legacy, auto = (answers[k]["choices"][0]["message"]
                                      for k in (None, "none", "deepseek", "deepseek-legacy", "auto"))
assert default == none, (default, none)
assert split.get("reasoning_content") and split["content"] is not None, split
assert CLOSE not in split["content"] and CLOSE not in split["reasoning_content"], split
# The prompt opened the thought, so the content has its text and the closer the budget forced.
assert "reasoning_content" not in none, none
assert none["content"] == split["reasoning_content"] + CLOSE + split["content"], (none, split)
assert legacy["content"] == none["content"] and legacy["reasoning_content"] == split["reasoning_content"], legacy
assert auto == split, (auto, split)
# The same tokens in every format (cached_tokens varies: later requests reuse the prompt).
usages = [(a["usage"]["completion_tokens"], a["usage"]["completion_tokens_details"]) for a in answers.values()]
assert all(u == usages[0] for u in usages), usages
print("formats: thought %r, answer %r" % (split["reasoning_content"][:40], split["content"][:40]))

# n choices: each choice is the one-choice answer (greedy), streamed alike.
for fmt in ("none", "deepseek-legacy"):
    body = dict(BODY, reasoning_format=fmt, n=2)
    r = server.post("/v1/chat/completions", body, timeout=120)
    assert [c["message"] for c in r["choices"]] == [answers[fmt]["choices"][0]["message"]] * 2, r
    check_stream(body, r, fmt + " n=2")

# A bad value: a 400 naming the field.
for bad in ("raw", 3):
    try:
        server.post("/v1/chat/completions", dict(BODY, reasoning_format=bad))
        raise AssertionError("reasoning_format %r was accepted" % (bad,))
    except urllib.error.HTTPError as e:
        err = json.loads(e.read().decode())["error"]
        assert e.code == 400 and err["param"] == "reasoning_format", (e.code, err)

# The Messages API (the same thought as a thinking block) and the Responses API keep the
# thinking out of the text, whatever the chat route's default.
m = server.post("/v1/messages", {"model": "m", "max_tokens": 24, "temperature": 0,
                                 "thinking": {"type": "adaptive"},
                                 "messages": [{"role": "user", "content": "Tell of Richard."},
                                              {"role": "assistant",
                                               "content": [{"type": "thinking", "thinking": verse,
                                                            "signature": ""}]}]}, timeout=120)
assert [b["type"] for b in m["content"]][:1] == ["thinking"], m
assert all("<|channel>" not in b.get("text", "") and CLOSE not in b.get("text", "") for b in m["content"]), m
r = server.post("/v1/responses", {"input": "Tell of Richard.", "max_output_tokens": 16, "temperature": 0,
                                  "reasoning": {"effort": "high"}}, timeout=120)
assert "<|channel>" not in r["output_text"] and CLOSE not in r["output_text"], r
EOF
then ok "formats, streaming, n, errors, other routes"; else bad "reasoning_format checks"; fi

kill -0 "$PID" 2>/dev/null && ok "server still running" || bad "server died: $(tail -20 "$WORK/server.log")"
stop_on_sigterm

e2e_result "reasoning_format e2e"
