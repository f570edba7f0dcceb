#!/usr/bin/env python3
"""A small Anthropic Messages API client (Python standard library only) that drives a live
gemmaserve on the shakes pair through POST /v1/messages and /v1/messages/count_tokens, the
way Anthropic's SDKs and agents do, and checks every answer's shape.

Usage: anthropic_client.py URL KEY. Prints "ok   NAME" / "FAIL NAME: why" lines; exits 1
when any check failed.
"""
import http.client
import json
import socket
import sys
import threading
import urllib.parse

URL, KEY = sys.argv[1], sys.argv[2]
HOST = urllib.parse.urlparse(URL)
FAILED = []


def ok(name):
    print(f"ok   {name}")


def bad(name, why):
    FAILED.append(name)
    print(f"FAIL {name}: {why}")


def request(method, path, body=None, headers=None, raw=None):
    """(status, headers, body text) of one request."""
    conn = http.client.HTTPConnection(HOST.hostname, HOST.port, timeout=120)
    h = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    h.update(headers if headers is not None else {"x-api-key": KEY})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    return r.status, dict(r.getheaders()), text


def events(text):
    """[(event name, data)] of an SSE body; comment lines skipped."""
    out, name = [], None
    for line in text.split("\n"):
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, json.loads(line[6:])))
    return out


def assemble(evs):
    """The message a stream builds up, after checking Anthropic's event order."""
    assert evs and evs[0][0] == "message_start", evs[:1]
    assert evs[-1][0] == "message_stop", evs[-1:]
    msg = evs[0][1]["message"]
    assert msg["content"] == [] and msg["stop_reason"] is None and msg["role"] == "assistant", msg
    open_index, partial = None, {}
    for name, data in evs[1:-1]:
        assert data["type"] == name, (name, data)
        if name == "content_block_start":
            assert open_index is None and data["index"] == len(msg["content"]), data
            open_index = data["index"]
            msg["content"].append(data["content_block"])
        elif name == "content_block_delta":
            assert data["index"] == open_index, data
            block, d = msg["content"][open_index], data["delta"]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "input_json_delta":
                partial[open_index] = partial.get(open_index, "") + d["partial_json"]
            else:
                raise AssertionError(f"unknown delta {d}")
        elif name == "content_block_stop":
            assert data["index"] == open_index, data
            if open_index in partial:
                msg["content"][open_index]["input"] = json.loads(partial[open_index])
            open_index = None
        elif name == "message_delta":
            assert open_index is None, "message_delta with a block open"
            msg["stop_reason"] = data["delta"]["stop_reason"]
            msg["stop_sequence"] = data["delta"]["stop_sequence"]
            msg["usage"].update(data["usage"])
        elif name != "ping":
            raise AssertionError(f"unexpected event {name}")
    return msg


def message(body, headers=None):
    status, _, text = request("POST", "/v1/messages", body, headers)
    if status != 200:
        raise AssertionError(f"{status} {text}")
    return json.loads(text)


def text_of(msg):
    return "".join(b["text"] for b in msg["content"] if b["type"] == "text")


def check(name, fn):
    try:
        fn()
        ok(name)
    except Exception as e:  # noqa: BLE001 (a failed check of any kind is reported, then the next runs)
        bad(name, repr(e)[:600])


USER = [{"role": "user", "content": "ROMEO:"}]
BASE = {"model": "claude-sonnet-4-5", "max_tokens": 32, "temperature": 0, "messages": USER}
TOOLS = [{"name": "get_weather", "description": "Weather of a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
         {"name": "get_time", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
STATE = {}


def whole_message():
    m = message(dict(BASE, system="You are a poet."))
    assert m["type"] == "message" and m["role"] == "assistant" and m["id"].startswith("msg_"), m
    assert m["stop_reason"] in ("end_turn", "max_tokens") and m["stop_sequence"] is None, m
    assert m["content"] and m["content"][0]["type"] == "text" and m["content"][0]["text"], m
    u = m["usage"]
    assert 0 < u["output_tokens"] <= 32 and u["input_tokens"] + u["cache_read_input_tokens"] > 5, u
    STATE["greedy"] = text_of(message(BASE))


def streamed_equals_whole():
    status, headers, text = request("POST", "/v1/messages", dict(BASE, stream=True))
    assert status == 200 and headers.get("Content-Type", "").startswith("text/event-stream"), (status, headers)
    msg = assemble(events(text))
    assert text_of(msg) == STATE["greedy"], (text_of(msg), STATE["greedy"])
    assert msg["usage"]["output_tokens"] > 0 and msg["stop_reason"] in ("end_turn", "max_tokens"), msg


def stop_sequence():
    words = STATE["greedy"].split()
    stop = next((w for w in words[2:] if len(w) > 2), None)
    assert stop, STATE["greedy"]
    m = message(dict(BASE, stop_sequences=[stop]))
    assert m["stop_reason"] == "stop_sequence" and m["stop_sequence"] == stop, m
    assert STATE["greedy"].startswith(text_of(m)) and stop not in text_of(m), (text_of(m), stop)


def count_tokens():
    status, _, text = request("POST", "/v1/messages/count_tokens", {"model": "x", "messages": USER})
    assert status == 200, (status, text)
    m = message(BASE)
    u = m["usage"]
    assert json.loads(text) == {"input_tokens": u["input_tokens"] + u["cache_read_input_tokens"]}, (text, u)


def forced_tool_use():
    for choice in ({"type": "any"}, {"type": "tool", "name": "get_time"}):
        body = dict(BASE, tools=TOOLS, tool_choice=choice, messages=[{"role": "user", "content": "Weather in Oslo?"}])
        m = message(body)
        calls = [b for b in m["content"] if b["type"] == "tool_use"]
        assert calls and calls[0]["name"] in ("get_weather", "get_time"), m
        assert isinstance(calls[0]["input"], dict) and calls[0]["id"], m
        if choice["type"] == "tool":
            assert calls[0]["name"] == "get_time", m
        assert m["stop_reason"] in ("tool_use", "max_tokens"), m
        _, _, text = request("POST", "/v1/messages", dict(body, stream=True))
        streamed = assemble(events(text))
        assert [b for b in streamed["content"] if b["type"] == "tool_use"][0]["input"] == calls[0]["input"], (streamed, m)
        STATE["call"] = calls[0]


def tool_result_round_trip():
    call = STATE["call"]
    m = message(dict(BASE, tools=TOOLS, messages=[
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": call["id"], "name": call["name"],
                                           "input": call["input"]}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "snow, -3 C"},
                                     {"type": "text", "text": "And so?"}]}]))
    assert m["type"] == "message" and m["stop_reason"], m


def thinking_request():
    # A budget_tokens Anthropic accepts is at least 1024 (more than this test's context), so the
    # adaptive form, which takes none, is the one run; the enabled form's bounds are in errors().
    m = message(dict(BASE, thinking={"type": "adaptive"}))
    assert all(b["type"] in ("thinking", "text", "tool_use") for b in m["content"]), m
    for b in m["content"]:
        if b["type"] == "thinking":
            assert b["signature"] == "" and isinstance(b["thinking"], str), b


def errors():
    cases = [
        ({k: v for k, v in BASE.items() if k != "max_tokens"}, 400, "invalid_request_error", "max_tokens is required"),
        (dict(BASE, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]),
         400, "invalid_request_error", "text only"),
        (dict(BASE, messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x"}]}]),
         400, "invalid_request_error", "tool_result"),
        (dict(BASE, messages=[{"role": "system", "content": "x"}]), 400, "invalid_request_error", "role"),
        (dict(BASE, thinking={"type": "enabled", "budget_tokens": 0}), 400, "invalid_request_error",
         "thinking.budget_tokens must be in [1024, "),
        (dict(BASE, thinking={"type": "enabled", "budget_tokens": 1023}), 400, "invalid_request_error",
         "thinking.budget_tokens must be in [1024, "),
        (dict(BASE, thinking={"type": "enabled", "budget_tokens": 1024}), 400, "invalid_request_error",
         "thinking.budget_tokens (1024) must be less than max_tokens (32)"),
        (dict(BASE, thinking={"type": "enabled"}), 400, "invalid_request_error",
         "thinking.budget_tokens is required when thinking.type is 'enabled'"),
    ]
    for body, status, etype, words in cases:
        s, _, text = request("POST", "/v1/messages", body)
        e = json.loads(text)
        assert s == status and e["type"] == "error" and e["error"]["type"] == etype, (s, text)
        assert words in e["error"]["message"], (words, text)
    s, h, text = request("GET", "/v1/messages")
    assert s == 405 and h.get("Allow") == "POST" and json.loads(text)["error"]["type"] == "invalid_request_error", (s, text)
    s, _, text = request("POST", "/v1/messages", raw=b"{nope")
    assert s == 400 and json.loads(text)["type"] == "error", (s, text)


def auth():
    s, _, text = request("POST", "/v1/messages", BASE, headers={})
    e = json.loads(text)
    assert s == 401 and e["type"] == "error" and e["error"]["type"] == "authentication_error", (s, text)
    s, _, text = request("POST", "/v1/messages", BASE, headers={"x-api-key": "wrong"})
    assert s == 401, (s, text)
    s, _, text = request("POST", "/v1/messages", BASE, headers={"authorization": f"Bearer {KEY}"})
    assert s == 200, (s, text)


def concurrent_streams():
    results = [None] * 4

    def run(i):
        try:
            _, _, text = request("POST", "/v1/messages", dict(BASE, stream=True, max_tokens=16 + i))
            results[i] = assemble(events(text))
        except Exception as e:  # noqa: BLE001
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert isinstance(r, dict) and r["usage"]["output_tokens"] > 0, r


def client_leaves_mid_stream():
    sock = socket.create_connection((HOST.hostname, HOST.port), timeout=30)
    body = json.dumps(dict(BASE, stream=True, max_tokens=400)).encode()
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"x-api-key: {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    while b"content_block_delta" not in got:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    sock.close()
    m = message(dict(BASE, max_tokens=4))
    assert m["usage"]["output_tokens"] > 0, m


for name, fn in [("whole message", whole_message), ("stream equals whole (greedy)", streamed_equals_whole),
                 ("stop_sequences", stop_sequence), ("count_tokens", count_tokens),
                 ("forced tool_use (any, tool), whole and streamed", forced_tool_use),
                 ("tool_result round trip", tool_result_round_trip), ("thinking enabled", thinking_request),
                 ("errors in Anthropic's shape", errors), ("auth: x-api-key, bearer, 401", auth),
                 ("4 concurrent streams", concurrent_streams), ("client leaves mid-stream", client_leaves_mid_stream)]:
    check(name, fn)
sys.exit(1 if FAILED else 0)
