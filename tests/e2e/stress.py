#!/usr/bin/env python3
"""Randomized concurrent stress of a running gemmaserve (loopback only, stdlib only).

C clients send a seeded random mix for S seconds: completions and chats, streamed or not,
greedy or sampled, with and without the drafter; streams dropped after a few events; long
prompts dropped mid-prefill; structured output; forced tool calls; prompts past the context;
malformed requests. Then, with the server idle again, it checks:
  - no valid request got a 5xx, every 4xx body is an OpenAI-style error object, the server
    never refused a connection;
  - structured answers that ended with "stop" parse as JSON, forced calls carry JSON arguments;
  - /health answers 200, /metrics shows no busy slot and an empty queue, and the KV cache is
    back to what it held before the run (only cached prefixes remain);
  - greedy output of fixed prompts is the same alone (the whole prompt computed after the run,
    cache_prompt false), and with / without the drafter; under load and with a prefix kept from
    the load, reported (under load a failure with --strict-greedy).
Exit status 0 when every check holds. Usage: stress.py PORT [--seconds S] [--clients C]
[--seed N] [--ctx N] [--key KEY] [--strict-greedy]"""
import argparse, http.client, json, random, re, socket, sys, threading, time

WORDS = ("the king of night and day speaks to his love in the garden where roses fall "
         "upon the stone of old walls while the moon keeps watch over sleeping towns").split()


class Stress:
    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        self.failures = []
        self.counts = {}
        self.stop_at = 0.0

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)

    def count(self, key):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def headers(self):
        h = {"Content-Type": "application/json"}
        if self.a.key:
            h["Authorization"] = "Bearer " + self.a.key
        return h

    def post(self, path, body, timeout=600):
        """(status, parsed body or raw text). Raises on connection errors."""
        c = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode()
            c.request("POST", path, body=data, headers=self.headers())
            r = c.getresponse()
            raw = r.read().decode("utf-8", "replace")
            try:
                return r.status, json.loads(raw)
            except ValueError:
                return r.status, raw
        finally:
            c.close()

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=30)
        try:
            c.request("GET", path, headers=self.headers())
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def check_error_shape(self, kind, status, body):
        if not (isinstance(body, dict) and isinstance(body.get("error"), dict) and "message" in body["error"]):
            self.fail(f"{kind}: {status} without an OpenAI-style error body: {str(body)[:200]}")

    def expect_ok(self, kind, status, body):
        """A valid request: 200, or a 4xx that names a client-side limit (never a 5xx)."""
        if status == 200:
            return isinstance(body, dict)
        if 400 <= status < 500:
            self.check_error_shape(kind, status, body)
            self.count(f"{kind} {status}")
            return False
        self.fail(f"{kind}: status {status}: {str(body)[:300]}")
        return False

    # ---- request kinds -----------------------------------------------------------------
    def words(self, rng, n):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def sampling(self, rng):
        b = {"max_tokens": rng.randint(1, self.a.max_tokens)}
        if rng.random() < 0.5:
            b["temperature"] = 0
        else:
            b["temperature"] = rng.choice([0.3, 0.8, 1.0, 1.5])
            b["top_p"] = rng.choice([0.5, 0.9, 1.0])
            b["seed"] = rng.randint(0, 1 << 30)
        if rng.random() < 0.3:
            b["speculative"] = False
        return b

    def k_completion(self, rng):
        b = {"prompt": self.words(rng, rng.randint(1, 60))}
        b.update(self.sampling(rng))
        s, r = self.post("/v1/completions", b)
        if self.expect_ok("completion", s, r) and not r.get("choices"):
            self.fail(f"completion: no choices: {str(r)[:200]}")

    def k_chat(self, rng):
        msgs = [{"role": "user", "content": self.words(rng, rng.randint(1, 40))}]
        if rng.random() < 0.3:
            msgs = [{"role": "system", "content": "Answer briefly."}] + msgs
        b = {"messages": msgs}
        b.update(self.sampling(rng))
        if rng.random() < 0.3:
            b["chat_template_kwargs"] = {"enable_thinking": True}
        s, r = self.post("/v1/chat/completions", b)
        if self.expect_ok("chat", s, r):
            ch = (r.get("choices") or [{}])[0]
            if "message" not in ch:
                self.fail(f"chat: no message: {str(r)[:200]}")

    def stream(self, rng, drop_after):
        """A streamed chat read to [DONE], or dropped after `drop_after` events."""
        b = {"messages": [{"role": "user", "content": self.words(rng, rng.randint(1, 30))}], "stream": True}
        b.update(self.sampling(rng))
        if drop_after is not None:
            b["max_tokens"] = self.a.max_tokens
        c = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=600)
        try:
            c.request("POST", "/v1/chat/completions", body=json.dumps(b).encode(), headers=self.headers())
            r = c.getresponse()
            if r.status != 200:
                raw = r.read().decode("utf-8", "replace")
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                self.expect_ok("stream", r.status, body)
                return
            events, done = 0, False
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data: "):
                    continue
                if line == b"data: [DONE]":
                    done = True
                    break
                try:
                    ev = json.loads(line[6:])
                except ValueError:
                    self.fail(f"stream: event is not JSON: {line[:200]!r}")
                    break
                if "error" in ev:
                    self.fail(f"stream: error event: {str(ev)[:200]}")
                    break
                events += 1
                if drop_after is not None and events >= drop_after:
                    c.sock.shutdown(socket.SHUT_RDWR)
                    self.count("stream dropped")
                    return
            if drop_after is None and not done:
                self.fail("stream: ended without [DONE]")
        finally:
            c.close()

    def k_stream(self, rng):
        self.stream(rng, None)

    def k_stream_drop(self, rng):
        self.stream(rng, rng.randint(1, 8))

    def k_prefill_drop(self, rng):
        """A long prompt whose client leaves while it is still being read."""
        b = {"prompt": self.words(rng, rng.randint(self.a.ctx // 8, self.a.ctx // 3)), "max_tokens": 16}
        c = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=rng.uniform(0.05, 1.0))
        try:
            c.request("POST", "/v1/completions", body=json.dumps(b).encode(), headers=self.headers())
            r = c.getresponse()
            r.read()
            if r.status >= 500:
                self.fail(f"prefill_drop: status {r.status}")
        except (socket.timeout, TimeoutError):
            self.count("prefill dropped")
        finally:
            c.close()

    def k_too_long(self, rng):
        b = {"prompt": self.words(rng, self.a.ctx + rng.randint(1, 500)), "max_tokens": 4}
        s, r = self.post("/v1/completions", b)
        if s == 200:
            self.count("too_long 200")  # a tokenizer may merge words; then it fits
        elif 400 <= s < 500:
            self.check_error_shape("too_long", s, r)
        else:
            self.fail(f"too_long: status {s}: {str(r)[:200]}")

    def k_json(self, rng):
        schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                                   "n": {"type": "integer"},
                                                   "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                            "maxItems": 3}},
                  "required": ["name", "n"], "additionalProperties": False}
        b = {"messages": [{"role": "user", "content": "Give a record. " + self.words(rng, 5)}],
             "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
             "max_tokens": 96}
        b.update({k: v for k, v in self.sampling(rng).items() if k != "max_tokens"})
        s, r = self.post("/v1/chat/completions", b)
        if self.expect_ok("json", s, r):
            ch = r["choices"][0]
            if ch.get("finish_reason") == "stop":
                try:
                    v = json.loads(ch["message"].get("content") or "")
                    if not (isinstance(v, dict) and "name" in v and isinstance(v.get("n"), int)):
                        self.fail(f"json: value does not match the schema: {ch['message']['content'][:200]}")
                except ValueError:
                    self.fail(f"json: 'stop' with content that is not JSON: {str(ch['message'])[:200]}")

    def k_tool(self, rng):
        tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                                   "parameters": {"type": "object",
                                                                  "properties": {"city": {"type": "string"}},
                                                                  "required": ["city"]}}}]
        b = {"messages": [{"role": "user", "content": "Weather in " + rng.choice(WORDS) + "?"}], "tools": tools,
             "tool_choice": rng.choice(["required", "auto", {"type": "function", "function": {"name": "get_weather"}}]),
             "max_tokens": 64, "stream": False}
        b.update({k: v for k, v in self.sampling(rng).items() if k != "max_tokens"})
        s, r = self.post("/v1/chat/completions", b)
        if self.expect_ok("tool", s, r):
            ch = r["choices"][0]
            for tc in ch["message"].get("tool_calls") or []:
                try:
                    json.loads(tc["function"]["arguments"])
                except (ValueError, KeyError, TypeError):
                    self.fail(f"tool: arguments are not JSON: {str(tc)[:200]}")
            if b["tool_choice"] != "auto" and ch.get("finish_reason") == "tool_calls" and not ch["message"].get("tool_calls"):
                self.fail("tool: finish_reason tool_calls without a call")

    def k_bad(self, rng):
        bodies = [b"{", b"[]", b'{"messages": 5}', b'{"messages": [{"role": "user"}]}',
                  b'{"prompt": "x", "max_tokens": -3}', b'{"prompt": "x", "temperature": "hot"}',
                  b'{"prompt": [[1, 2], "x"]}', b'{"prompt": "x", "top_p": 1e400}',
                  b'{"messages": [{"role": "wizard", "content": "x"}]}', b'\xff\xfe{"prompt": "x"}',
                  b'{"prompt": "x", "stop": [' + b",".join(b'"s"' for _ in range(300)) + b"]}",
                  b'{"prompt": [999999999]}']
        path = rng.choice(["/v1/completions", "/v1/chat/completions"])
        s, r = self.post(path, rng.choice(bodies))
        if s >= 500:
            self.fail(f"bad request got {s}: {str(r)[:200]}")
        elif s >= 400:
            self.check_error_shape("bad", s, r)

    # ---- the run -------------------------------------------------------------------------
    def client(self, i):
        rng = random.Random(self.a.seed * 1000 + i)
        kinds = [(self.k_completion, 20), (self.k_chat, 15), (self.k_stream, 12), (self.k_stream_drop, 12),
                 (self.k_prefill_drop, 5), (self.k_too_long, 3), (self.k_json, 10), (self.k_tool, 10),
                 (self.k_bad, 8)]
        total = sum(w for _, w in kinds)
        while time.time() < self.stop_at:
            x, pick = rng.uniform(0, total), kinds[-1][0]
            for k, w in kinds:
                if x < w:
                    pick = k
                    break
                x -= w
            self.count(pick.__name__)
            try:
                pick(rng)
            except ConnectionRefusedError as e:
                self.fail(f"{pick.__name__}: connection refused ({e})")
                return
            except (http.client.HTTPException, OSError) as e:
                # A dropped stream or a client timeout ends here by design; any other
                # transport error while the server should answer is a failure.
                if pick not in (self.k_stream_drop, self.k_prefill_drop):
                    self.fail(f"{pick.__name__}: transport error {type(e).__name__}: {e}")

    def metrics(self):
        s, t = self.get("/metrics")
        vals = {}
        for m in re.finditer(r"^gemmaserve_([a-z_]+) ([0-9.e+-]+)$", t, re.M):
            vals[m.group(1)] = float(m.group(2))
        return s, vals

    def greedy(self, prompt, spec, cache_prompt=True):
        s, r = self.post("/v1/completions", {"prompt": prompt, "max_tokens": 48, "temperature": 0,
                                             "speculative": spec, "cache_prompt": cache_prompt})
        if s != 200:
            self.fail(f"greedy reference: status {s}: {str(r)[:200]}")
            return None
        return r["choices"][0]["text"]

    def run(self):
        prompts = ["ROMEO:", "Now is the winter of", "the king of night and day speaks",
                   "First Citizen:\nBefore we proceed"]
        alone = {p: self.greedy(p, True) for p in prompts}
        plain = {p: self.greedy(p, False) for p in prompts}
        _, before = self.metrics()
        self.stop_at = time.time() + self.a.seconds
        threads = [threading.Thread(target=self.client, args=(i,)) for i in range(self.a.clients)]
        loaded = {}

        def under_load():
            time.sleep(min(2.0, self.a.seconds / 4))
            for p in prompts:
                loaded[p] = self.greedy(p, True)

        threads.append(threading.Thread(target=under_load))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The server frees a dropped request's slot when it notices the client is gone.
        deadline, m = time.time() + 60, {}
        while time.time() < deadline:
            s, m = self.metrics()
            if s == 200 and m.get("busy_slots") == 0 and m.get("queue_length") == 0:
                break
            time.sleep(0.5)
        else:
            self.fail(f"after the run: busy_slots {m.get('busy_slots')}, queue_length {m.get('queue_length')}")
        s, _ = self.get("/health")
        if s != 200:
            self.fail(f"/health: {s} after the run")
        # After the load a slot may keep a prefix of these prompts that a batch computed, whose
        # sums can differ in their last bits from a lone run's (decision 0010, "Prompt-prefix
        # reuse"): the repeat computes its whole prompt (cache_prompt false), as the first run did
        # on the fresh server; the answer with a kept prefix is reported.
        reused_differs = []
        for p in prompts:
            again = self.greedy(p, True, cache_prompt=False)
            if again != alone[p]:
                self.fail(f"greedy not repeatable alone for {p!r}: {alone[p]!r} then {again!r}")
            if self.greedy(p, True) != alone[p]:
                reused_differs.append(p)
            if plain[p] != alone[p]:
                self.fail(f"greedy with the drafter differs from without for {p!r}: {alone[p]!r} vs {plain[p]!r}")
        diff_load = [p for p in prompts if loaded.get(p) != alone[p]]
        print(f"counts: {json.dumps(self.counts, sort_keys=True)}")
        print(f"metrics: requests {m.get('requests_total', 0) - before.get('requests_total', 0):.0f}, "
              f"cancelled {m.get('requests_cancelled_total', 0) - before.get('requests_cancelled_total', 0):.0f}, "
              f"failed {m.get('requests_failed_total', 0) - before.get('requests_failed_total', 0):.0f}, "
              f"generated {m.get('generated_tokens_total', 0) - before.get('generated_tokens_total', 0):.0f} tokens")
        if m.get("requests_failed_total", 0) != before.get("requests_failed_total", 0):
            self.fail("requests_failed_total grew during the run (an engine error)")
        print(f"greedy under load equal to alone: {len(prompts) - len(diff_load)} of {len(prompts)}")
        print(f"greedy after the load with a kept prefix equal to alone: {len(prompts) - len(reused_differs)} of "
              f"{len(prompts)}")
        if diff_load and self.a.strict_greedy:
            self.fail(f"greedy under load differs for {diff_load}")
        for f in self.failures:
            print("FAIL:", f)
        print("stress:", "ok" if not self.failures else f"{len(self.failures)} failures")
        return 0 if not self.failures else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=2048, help="the server's context per slot (for the long prompts)")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--key", default="")
    ap.add_argument("--strict-greedy", action="store_true")
    a = ap.parse_args()
    sys.exit(Stress(a).run())


if __name__ == "__main__":
    main()
