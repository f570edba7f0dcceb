#!/usr/bin/env python3
"""Differential test of gemmaserve's greedy output on the CPU (stdlib only, seeded).

Greedy output (temperature 0) must not depend on how a request was served. For a set of
requests (text completions and chats; short and long prompts; thinking on and off; tools and
forced calls; response_format json_schema; stop strings; logit_bias; logprobs; penalties;
reasoning prefills with budgets; a prompt that fills the context) it
compares the result (text, finish_reason, tool_calls, reasoning_content,
usage.completion_tokens and reasoning_tokens, and the logprobs when asked for) of a cold request on a fresh server
with the same request served:
  repeat    again on the same server (the slot's kept cache: cached_tokens > 0)
  prefix    after a request in the same slot that shares a long prefix with it (a different
            tail, or a longer prompt the cut falls inside)
  load      while 3 other clients stream unrelated requests
  spec      with "speculative": false and with draft_max 1..3
  stream    streamed (the deltas concatenated, tool-call argument deltas too)
  turn2     the next turn (answer and follow-up appended) after this one, whose generated
            tokens the slot keeps, against that turn on a fresh server
  ring      after a request that shares a long prefix and then runs just few enough (or just
            too many) other tokens for the sliding-window ring to still hold the cut
  parallel1 by a --parallel 1 server
  altserver by a server of 2 slots, one CPU thread and 8 drafts every round
  cut       with max_tokens N + k, cut to N tokens (compared by the logprobs' tokens)
Every difference is printed; the exit status is 1 when there is one. The servers are
started here, on free loopback ports.

Usage: differential.py BIN TARGET.gguf DRAFTER.gguf [--seed N] [--quick] [--only NAME,...]
       [--variants v1,v2,...] [--long N] [--verbose]"""
import argparse, http.client, json, os, random, signal, socket, subprocess, sys, tempfile, threading, time

# Public-domain lines the bundled model knows (it was trained on tinyshakespeare).
LINES = [
    "ROMEO:", "But, soft! what light through yonder window breaks?",
    "It is the east, and Juliet is the sun.", "JULIET:", "O Romeo, Romeo! wherefore art thou Romeo?",
    "Deny thy father and refuse thy name;", "KING RICHARD III:",
    "Now is the winter of our discontent", "Made glorious summer by this sun of York;",
    "And all the clouds that lour'd upon our house", "In the deep bosom of the ocean buried.",
    "First Citizen:", "Before we proceed any further, hear me speak.", "All:", "Speak, speak.",
    "You are all resolved rather to die than to famish?", "MENENIUS:", "What work's, my countrymen, in hand?",
    "DUKE VINCENTIO:", "Of government the properties to unfold,", "KING HENRY VI:",
    "Ah, what a life were this! how sweet! how lovely!", "GLOUCESTER:", "Was ever woman in this humour woo'd?",
]


def shakespeare(rng, n_lines):
    """A seeded pseudo-play: speaker lines followed by verse lines."""
    out = []
    for _ in range(n_lines):
        out.append(rng.choice(LINES))
    return "\n".join(out) + "\n"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, args, parallel, extra=()):
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="gs-diff-", suffix=".log", delete=False)
        cmd = [args.bin, "serve", "-m", args.target, "--mtp", args.drafter, "--port", str(self.port),
               "--device", "cpu", "--parallel", str(parallel), "-c", str(args.ctx)] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.tail()}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the server did not become healthy")

    def tail(self):
        with open(self.log.name, errors="replace") as f:
            return "".join(f.readlines()[-5:])

    def errors(self):
        with open(self.log.name, errors="replace") as f:
            return [l.rstrip() for l in f if "[error]" in l or "[critical]" in l]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.unlink(self.log.name)

    def post(self, path, body, timeout=600):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            r = c.getresponse()
            raw = r.read().decode("utf-8", "replace")
            if r.status != 200:
                raise RuntimeError(f"{path}: status {r.status}: {raw[:300]}")
            return json.loads(raw)
        finally:
            c.close()

    def stream(self, path, body, timeout=600, on_first=None):
        """The events of a streamed request, parsed."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                raise RuntimeError(f"{path} (stream): status {r.status}: {r.read()[:300]!r}")
            events = []
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.decode("utf-8").rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    break
                ev = json.loads(data)
                if "error" in ev:
                    raise RuntimeError(f"{path} (stream): error event {data[:300]}")
                events.append(ev)
                if on_first and len(events) == 2:
                    on_first()
            return events
        finally:
            c.close()


def tokenize(srv, text):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    try:
        c.request("POST", "/tokenize", body=json.dumps({"content": text, "add_special": True}),
                  headers={"Content-Type": "application/json"})
        return json.loads(c.getresponse().read())["tokens"]
    finally:
        c.close()


# ---- results -------------------------------------------------------------------------------

def logprobs_of(chat, lp):
    """[(token, logprob)] of a logprobs object (chat or completions form), or None."""
    if lp is None:
        return None
    if chat:
        return [(t["token"], t["logprob"], tuple((a["token"], a["logprob"]) for a in t["top_logprobs"]))
                for t in lp["content"]]
    return [(t, l, tuple(sorted(top.items()))) for t, l, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])]


def normalize(chat, r):
    """The fields that must not depend on how the request was served."""
    ch = r["choices"][0]
    out = {"finish_reason": ch["finish_reason"], "completion_tokens": r["usage"]["completion_tokens"],
           "reasoning_tokens": r["usage"]["completion_tokens_details"]["reasoning_tokens"]}
    if chat:
        m = ch["message"]
        out["content"] = m.get("content")
        out["reasoning_content"] = m.get("reasoning_content")
        out["tool_calls"] = [(t["function"]["name"], t["function"]["arguments"]) for t in m.get("tool_calls") or []]
    else:
        out["text"] = ch["text"]
    out["logprobs"] = logprobs_of(chat, ch.get("logprobs"))
    return out, r["usage"]["prompt_tokens_details"]["cached_tokens"]


def normalize_stream(chat, events):
    """The same fields from a stream's events: deltas concatenated, tool calls by index."""
    out = {"finish_reason": None, "completion_tokens": None, "reasoning_tokens": None}
    text, reasoning, calls, lps = "", "", {}, []
    any_lp = False
    for ev in events:
        if ev.get("usage"):
            out["completion_tokens"] = ev["usage"]["completion_tokens"]
            out["reasoning_tokens"] = ev["usage"]["completion_tokens_details"]["reasoning_tokens"]
            cached = ev["usage"]["prompt_tokens_details"]["cached_tokens"]
        for ch in ev.get("choices") or []:
            if ch.get("finish_reason"):
                out["finish_reason"] = ch["finish_reason"]
            lp = ch.get("logprobs")
            if lp is not None:
                any_lp = True
                if chat:
                    lps.extend(lp["content"])
                else:
                    lps.append(lp)
            if chat:
                d = ch.get("delta") or {}
                text += d.get("content") or ""
                reasoning += d.get("reasoning_content") or ""
                for tc in d.get("tool_calls") or []:
                    slot = calls.setdefault(tc["index"], ["", ""])
                    f = tc.get("function") or {}
                    if f.get("name"):
                        slot[0] += f["name"]
                    slot[1] += f.get("arguments") or ""
            else:
                text += ch.get("text") or ""
    if chat:
        out["content"] = text if (text or not calls) else None
        out["reasoning_content"] = reasoning or None
        out["tool_calls"] = [tuple(calls[i]) for i in sorted(calls)]
        out["logprobs"] = logprobs_of(True, {"content": lps}) if any_lp else None
    else:
        out["text"] = text
        if any_lp:
            merged = {"tokens": [], "token_logprobs": [], "top_logprobs": []}
            for lp in lps:
                for k in merged:
                    merged[k].extend(lp[k])
            out["logprobs"] = logprobs_of(False, merged)
        else:
            out["logprobs"] = None
    return out, cached


def diff(a, b):
    keys = [k for k in a if a.get(k) != b.get(k)]
    parts = []
    for k in keys:
        x, y = a.get(k), b.get(k)
        if k == "logprobs" and x and y:
            i = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
            parts.append(f"logprobs differ at token {i}: {x[i] if i < len(x) else None} vs {y[i] if i < len(y) else None}")
        else:
            parts.append(f"{k}: {json.dumps(x)[:400]} vs {json.dumps(y)[:400]}")
    return "; ".join(parts)


# ---- the requests ---------------------------------------------------------------------------

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                      "parameters": {"type": "object",
                                                     "properties": {"city": {"type": "string"},
                                                                    "unit": {"enum": ["c", "f"]}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "recite", "description": "Recite a play's line",
                                      "parameters": {"type": "object",
                                                     "properties": {"play": {"type": "string", "maxLength": 24},
                                                                    "act": {"type": "integer"}},
                                                     "required": ["play", "act"]}}},
]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                           "lines": {"type": "integer"},
                                           "moods": {"type": "array", "items": {"enum": ["sad", "glad", "mad"]},
                                                     "maxItems": 3}},
          "required": ["name", "lines"], "additionalProperties": False}


def make_cases(rng, ids, long_lines, ctx_end_prompt):
    """(name, chat, body, cut N or None). Greedy everywhere; `ids` token ids for logit_bias;
    `ctx_end_prompt` token ids that leave a few positions of the context."""
    long_play = shakespeare(rng, long_lines)
    long_chat = [{"role": "system", "content": "You are a player of the Globe."}]
    for i in range(6):
        long_chat.append({"role": "user", "content": shakespeare(rng, max(1, long_lines // 12))})
        long_chat.append({"role": "assistant", "content": shakespeare(rng, max(1, long_lines // 12))})
    long_chat.append({"role": "user", "content": "ROMEO:"})
    C = []
    def comp(name, prompt, cut=None, **kw):
        C.append((name, False, dict({"prompt": prompt, "temperature": 0, "max_tokens": 40}, **kw), cut))
    def chat(name, messages, cut=None, **kw):
        C.append((name, True, dict({"messages": messages, "temperature": 0, "max_tokens": 40}, **kw), cut))
    user = lambda s: [{"role": "user", "content": s}]
    # A prompt that ends inside a thought (a reasoning-only prefill): the model goes on
    # thinking, so the reasoning budget and a structured value's thought come into play.
    thinking = lambda s, r: user(s) + [{"role": "assistant", "reasoning_content": r}]
    think_on = {"enable_thinking": True}
    verse = "Now is the winter of our discontent\nMade glorious summer by this sun of York;\n"
    comp("c_romeo", "ROMEO:", cut=20, max_tokens=48)
    comp("c_verse", "KING RICHARD III:\n" + verse, cut=30, max_tokens=64, logprobs=1)
    comp("c_logprobs", "To be, or not", cut=16, logprobs=3, max_tokens=32)
    comp("c_stop", "KING HENRY VI:\n", stop=["\n\n", " the "], max_tokens=64)
    comp("c_stop_late", "MENENIUS:\nWhat", stop=["Rome", "lord"], max_tokens=80)
    comp("c_stop_logprobs", "ROMEO:\n", stop=["thou", "\n\n"], logprobs=2, max_tokens=48)
    comp("c_stop_verse", verse, stop=["York"], max_tokens=64, logprobs=0)
    comp("c_bias", "JULIET:\nO", logit_bias={str(ids["thee"]): 6, str(ids["love"]): -100}, cut=12)
    comp("c_penalty", "First Citizen:\nWe are", repetition_penalty=1.3, frequency_penalty=0.4,
         presence_penalty=0.3, max_tokens=48, cut=24)
    comp("c_penalty_verse", verse, repetition_penalty=0.8, presence_penalty=-0.5, max_tokens=48, cut=20)
    comp("c_echo", "Now is the winter", echo=True, max_tokens=24)
    comp("c_tokens", [2] + ids["romeo"], max_tokens=32, cut=10)
    comp("c_ignore_eos", "GLOUCESTER:", ignore_eos=True, max_tokens=48)
    comp("c_long", long_play, cut=24, max_tokens=40, logprobs=2)
    comp("c_long_penalty", long_play + "GLOUCESTER:", repetition_penalty=1.2, max_tokens=32)
    if ctx_end_prompt:
        comp("c_ctx_end", ctx_end_prompt, max_tokens=64, cut=8)
    chat("h_plain", user("Speak, Romeo."), cut=20)
    chat("h_no_think", user("Speak, Juliet."), cut=20, chat_template_kwargs={"enable_thinking": False})
    chat("h_think", user("Who is Juliet?"), cut=30, max_tokens=64, chat_template_kwargs=think_on)
    chat("h_prefill", user("Go on.") + [{"role": "assistant", "content": verse}], max_tokens=48, cut=20)
    chat("h_think_prefill", thinking("Tell of Richard.", verse), max_tokens=64, cut=20,
         chat_template_kwargs=think_on)
    for budget in (1, 3, 6):
        chat(f"h_think_budget{budget}", thinking("Tell of Richard.", verse), max_tokens=48,
             reasoning_budget_tokens=budget, chat_template_kwargs=think_on)
    chat("h_think_budget_penalty", thinking("Tell of Juliet.", verse), max_tokens=48, reasoning_budget_tokens=4,
         repetition_penalty=1.3, presence_penalty=0.5, chat_template_kwargs=think_on)
    chat("h_logprobs", user("Say a line."), logprobs=True, top_logprobs=2, cut=14)
    chat("h_stop", user("A speech, please."), stop=["\n", "my"], max_tokens=64)
    chat("h_stop_think", thinking("A speech.", "ROMEO:"), stop=["love", "\n\n"], max_tokens=64,
         chat_template_kwargs=think_on)
    chat("h_bias", user("Love?"), logit_bias={str(ids["thee"]): 8}, cut=10)
    chat("h_tool_required", user("Weather in Verona?"), tools=TOOLS[:1], tool_choice="required", max_tokens=48)
    chat("h_tool_named", user("Recite Hamlet."), tools=TOOLS,
         tool_choice={"type": "function", "function": {"name": "recite"}}, max_tokens=48, logprobs=True)
    chat("h_tool_required_many", user("Do something."), tools=TOOLS, tool_choice="required", max_tokens=48)
    chat("h_tool_auto", user("Weather in Padua?"), tools=TOOLS, max_tokens=40, cut=16)
    chat("h_tool_single", user("Weather twice?"), tools=TOOLS[:1], tool_choice="required",
         parallel_tool_calls=False, max_tokens=64)
    chat("h_tool_think", thinking("Weather in Mantua?", "ROMEO:"), tools=TOOLS[:1], tool_choice="required",
         max_tokens=64, chat_template_kwargs=think_on)
    chat("h_tool_free", user("Weather in Milan?"), tools=[{"type": "function", "function": {"name": "free"}}],
         tool_choice="required", max_tokens=32)
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}
    chat("h_json", user("A character record."), max_tokens=64, response_format=schema, logprobs=True)
    chat("h_json_think", thinking("A record, after thought.", verse), max_tokens=96, response_format=schema,
         chat_template_kwargs=think_on)
    chat("h_json_think_budget", thinking("A record.", verse), max_tokens=96, response_format=schema,
         reasoning_budget_tokens=5, frequency_penalty=0.7, chat_template_kwargs=think_on)
    chat("h_json_tools", user("A record or a call."), max_tokens=64, response_format=schema, tools=TOOLS)
    chat("h_json_object", user("Any JSON."), max_tokens=48, response_format={"type": "json_object"})
    chat("h_long", long_chat, cut=20, max_tokens=40, logprobs=True)
    chat("h_long_think", long_chat[:-1] + user("And Juliet?"), max_tokens=48, chat_template_kwargs=think_on)
    return C


ALL_VARIANTS = "repeat,stream,spec,prefix,load,ring,turn2,parallel1,altserver,cut"
# --quick: one case of each kind of output path (and every variant but ring and altserver).
QUICK_CASES = "c_verse,c_stop_logprobs,c_ctx_end,c_long,h_think_budget3,h_tool_named,h_json_think_budget"


def prefix_variants(chat, body, rng):
    """Bodies to send first so that the case's request shares a long prefix in the slot."""
    out = []
    if chat:
        msgs = body["messages"]
        last = msgs[-1]
        key = "content" if "content" in last else "reasoning_content"
        other = dict(body, messages=msgs[:-1] + [dict(last, **{key: last[key] + " Speak again, " + rng.choice(LINES)})],
                     max_tokens=8)
        out.append(("tail", other))
        longer = dict(body, messages=msgs + [{"role": "assistant", "content": rng.choice(LINES)},
                                             {"role": "user", "content": rng.choice(LINES)}], max_tokens=8)
        out.append(("longer", longer))
        # The previous turn's own answer becomes part of the history (multi-turn reuse).
    else:
        p = body["prompt"]
        cut = max(1, len(p) * 3 // 4)
        # Token-id prompts get other ids (the vocabulary's first ordinary ones) where text
        # prompts get other lines.
        more = (lambda: [rng.randrange(300, 3000) for _ in range(6)]) if isinstance(p, list) else \
            (lambda: " " + rng.choice(LINES) + "\n" + rng.choice(LINES))
        out.append(("tail", dict(body, prompt=p[:cut] + more(), max_tokens=8)))
        out.append(("longer", dict(body, prompt=p + more(), max_tokens=8)))
        # A shorter prompt whose answer continues into the case's prompt.
        out.append(("shorter", dict(body, prompt=p[: max(1, len(p) // 2)], max_tokens=24)))
    return out


class Differential:
    def __init__(self, a):
        self.a = a
        self.failures = []
        self.counts = {}
        self.rng = random.Random(a.seed)

    def note(self, variant, ok):
        c = self.counts.setdefault(variant, [0, 0])
        c[0] += 1
        c[1] += 0 if ok else 1

    def compare(self, case, variant, ref, got):
        ok = ref == got
        self.note(variant, ok)
        if not ok:
            self.failures.append(f"{case} [{variant}]: {diff(ref, got)}")
            print(f"DIFF {case} [{variant}]: {diff(ref, got)}", flush=True)
        elif self.a.verbose:
            print(f"same {case} [{variant}]", flush=True)

    def request(self, srv, chat, body):
        path = "/v1/chat/completions" if chat else "/v1/completions"
        if body.get("stream"):
            events = srv.stream(path, dict(body, stream_options={"include_usage": True}))
            return normalize_stream(chat, events)
        return normalize(chat, srv.post(path, body))

    def load(self, srv, stop, started):
        """3 clients streaming unrelated requests until `stop` is set."""
        n_load = 16 if self.a.quick else 60

        def client(i):
            rng = random.Random(self.a.seed * 100 + i)
            first = [True]
            def mark():
                if first[0]:
                    first[0] = False
                    started.release()
            while not stop.is_set():
                chat = i == 1
                if chat:
                    body = {"messages": [{"role": "user", "content": rng.choice(LINES)}], "max_tokens": n_load,
                            "temperature": 0.9, "stream": True,
                            "chat_template_kwargs": {"enable_thinking": i % 2 == 0}}
                else:
                    n = rng.choice([3, 30]) if i == 2 else 4
                    body = {"prompt": shakespeare(rng, n), "max_tokens": n_load, "temperature": 0.8, "stream": True,
                            "speculative": rng.random() < 0.7}
                try:
                    srv.stream("/v1/chat/completions" if chat else "/v1/completions", body, on_first=mark)
                except (OSError, RuntimeError, http.client.HTTPException) as e:
                    self.failures.append(f"load client {i}: {e}")
                    mark()
                    return
        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
        return threads

    def run_case(self, srv, p1, alt, name, chat, body, cut, variants):
        ref, cached = self.request(srv, chat, body)
        if cached != 0:
            self.failures.append(f"{name}: the cold request had {cached} cached tokens")
        if self.a.verbose:
            print(f"{name}: {json.dumps({k: v for k, v in ref.items() if k != 'logprobs'})[:300]}", flush=True)
        if "repeat" in variants:
            got, cached = self.request(srv, chat, body)
            if cached == 0:
                self.failures.append(f"{name} [repeat]: no cached tokens on the same request again")
            self.compare(name, "repeat", ref, got)
        if "stream" in variants:
            self.compare(name, "stream", ref, self.request(srv, chat, dict(body, stream=True))[0])
        quick = self.a.quick
        if "spec" in variants:
            self.compare(name, "spec-off", ref, self.request(srv, chat, dict(body, speculative=False))[0])
            for dm in (2,) if quick else (1, 2, 3):
                self.compare(name, f"draft_max={dm}", ref, self.request(srv, chat, dict(body, draft_max=dm))[0])
            if not quick:
                self.compare(name, "spec-off-stream", ref,
                             self.request(srv, chat, dict(body, speculative=False, stream=True))[0])
        if "prefix" in variants:
            for kind, first in prefix_variants(chat, body, self.rng)[:1 if quick else 3]:
                self.request(srv, chat, first)
                got, cached = self.request(srv, chat, body)
                self.compare(name, f"prefix-{kind}", ref, got)
                if cached == 0 and kind != "shorter":
                    self.failures.append(f"{name} [prefix-{kind}]: nothing cached")
        if "load" in variants:
            stop, started = threading.Event(), threading.Semaphore(0)
            threads = self.load(srv, stop, started)
            for _ in threads:
                started.acquire(timeout=120)
            try:
                self.compare(name, "load", ref, self.request(srv, chat, body)[0])
                if not quick:
                    self.compare(name, "load-stream", ref, self.request(srv, chat, dict(body, stream=True))[0])
            finally:
                stop.set()
                for t in threads:
                    t.join()
        if "ring" in variants and not chat and isinstance(body["prompt"], str) and not body.get("echo"):
            self.check_ring(srv, name, body, ref)
        if "turn2" in variants:
            self.check_turn2(srv, name, chat, body, ref)
        if "parallel1" in variants and p1 is not None:
            self.compare(name, "parallel1", ref, self.request(p1, chat, body)[0])
        if "altserver" in variants and alt is not None:
            self.compare(name, "altserver", ref, self.request(alt, chat, body)[0])
        if "cut" in variants and cut:
            self.check_cut(srv, name, chat, body, cut)

    def check_ring(self, srv, name, body, ref):
        """The slot's cache cut back near the oldest position its sliding-window rings still
        hold (model: window 128, ring 768 positions with the server's 512-row steps), on a
        fresh server: the request before this one shares its first m tokens and then runs f
        other tokens; the cut at m is taken for f = 639 (cached_tokens = m) and refused, a
        fresh start, for f = 640 (cached_tokens = 0)."""
        toks = tokenize(srv, body["prompt"])
        m = max(640, len(toks) * 3 // 4)
        if m >= len(toks) or m + 640 >= self.a.ctx:
            return
        filler = [t for t in toks[:m] if t != toks[m] and t > 3] * 4
        fresh = Server(self.a, 4)
        try:
            for f, want in ((639, m), (640, 0)):
                fresh.post("/v1/completions", {"prompt": toks[:m] + filler[:f], "max_tokens": 1, "temperature": 0})
                got, cached = self.request(fresh, False, body)
                self.compare(name, f"ring-{f}", ref, got)
                if cached != want:
                    self.failures.append(f"{name} [ring-{f}]: {cached} tokens cached, expected {want}")
        finally:
            fresh.stop()

    def check_turn2(self, srv, name, chat, body, ref):
        """The next turn (the answer and a follow-up appended) on the server whose slot holds
        this one's cache, generated tokens included, against the same on a fresh server."""
        if chat:
            if ref["tool_calls"] or ref["content"] is None or body.get("response_format") or \
                    body["messages"][-1]["role"] == "assistant":
                return
            answer = {"role": "assistant", "content": ref["content"]}
            if ref["reasoning_content"]:
                answer["reasoning_content"] = ref["reasoning_content"]
            nxt = dict(body, messages=body["messages"] + [answer, {"role": "user", "content": "Go on."}])
        else:
            if not isinstance(body["prompt"], str) or body.get("echo"):
                return
            nxt = dict(body, prompt=body["prompt"] + ref["text"] + "\n")
        got, cached = self.request(srv, chat, nxt)
        cold = Server(self.a, 4)
        try:
            want, _ = self.request(cold, chat, nxt)
        finally:
            cold.stop()
        self.compare(name, "turn2", want, got)

    def check_cut(self, srv, name, chat, body, n):
        """max_tokens n against max_tokens n + k cut to n tokens (tokens from the logprobs)."""
        lp = {"logprobs": True, "top_logprobs": 0} if chat else {"logprobs": 0}
        if "logprobs" in body:
            lp = {}
        short, _ = self.request(srv, chat, dict(body, max_tokens=n, **lp))
        for k in (7,) if self.a.quick else (1, 7):
            longer, _ = self.request(srv, chat, dict(body, max_tokens=n + k, **lp))
            if longer["completion_tokens"] <= n:
                self.compare(name, f"cut+{k}", short, longer)
                continue
            ok = (short["finish_reason"] == "length" and short["completion_tokens"] == n and
                  short["logprobs"] == longer["logprobs"][:n])
            self.note(f"cut+{k}", ok)
            if not ok:
                msg = (f"{name} [cut+{k}]: max_tokens {n}: finish {short['finish_reason']}, "
                       f"{short['completion_tokens']} tokens; {diff({'logprobs': short['logprobs']}, {'logprobs': longer['logprobs'][:n]})}")
                self.failures.append(msg)
                print("DIFF " + msg, flush=True)

    def token_ids(self, srv):
        ids = {}
        for word in ("thee", "love", "romeo"):
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            c.request("POST", "/tokenize", body=json.dumps({"content": " " + word if word != "romeo" else "ROMEO:\nBut, soft!"}),
                      headers={"Content-Type": "application/json"})
            toks = json.loads(c.getresponse().read())["tokens"]
            c.close()
            ids[word] = toks if word == "romeo" else toks[0]
        return ids

    def run(self):
        a = self.a
        if a.quick and a.variants == ALL_VARIANTS:
            a.variants = ALL_VARIANTS.replace(",ring", "").replace(",altserver", "")
        variants = set(a.variants.split(","))
        probe = Server(a, 4)
        try:
            ids = self.token_ids(probe)
            # A prompt that leaves 18 positions of the context: generation ends there.
            toks = tokenize(probe, shakespeare(random.Random(a.seed + 1), a.ctx // 5))
            ctx_end = toks[: a.ctx - 18] if len(toks) >= a.ctx - 18 else None
        finally:
            probe.stop()
        cases = make_cases(random.Random(a.seed), ids, a.long, ctx_end)
        if a.quick and not a.only:
            a.only = QUICK_CASES
        if a.only:
            keep = a.only.split(",")
            unknown = set(keep) - {c[0] for c in cases}
            if unknown:
                raise SystemExit(f"unknown cases: {sorted(unknown)}")
            cases = [c for c in cases if c[0] in keep]
        if a.quick:
            # CI size: shorter answers.
            cases = [(n, chat, dict(b, max_tokens=min(b["max_tokens"], 24)), min(cut, 12) if cut else None)
                     for n, chat, b, cut in cases]
        p1 = Server(a, 1) if "parallel1" in variants else None
        # Other server options: one CPU thread, 2 slots, 8 drafts a round every round.
        alt = Server(a, 2, ("-t", "1", "--draft-max", "8", "--no-draft-adaptive")) if "altserver" in variants else None
        t0 = time.time()
        try:
            for name, chat, body, cut in cases:
                srv = Server(a, 4)  # cold: a fresh server for every case
                try:
                    self.run_case(srv, p1, alt, name, chat, body, cut, variants)
                except (OSError, RuntimeError, http.client.HTTPException, KeyError, ValueError) as e:
                    self.failures.append(f"{name}: {type(e).__name__}: {e}")
                    print(f"ERROR {name}: {e}", flush=True)
                finally:
                    errs = srv.errors()
                    if errs:
                        self.failures.append(f"{name}: the server logged errors: {errs[:3]}")
                    srv.stop()
                if a.verbose:
                    print(f"-- {name} done at {time.time() - t0:.1f} s", flush=True)
        finally:
            for extra in (p1, alt):
                if extra:
                    errs = extra.errors()
                    if errs:
                        self.failures.append(f"a server logged errors: {errs[:3]}")
                    extra.stop()
        total = sum(c[0] for c in self.counts.values())
        print(f"differential: {len(cases)} requests, {total} comparisons in {time.time() - t0:.1f} s: " +
              ", ".join(f"{k} {c[0]}" + (f" ({c[1]} differ)" if c[1] else "") for k, c in sorted(self.counts.items())))
        for f in self.failures:
            print("FAIL: " + f)
        return 1 if self.failures else 0


def main():
    # A SIGTERM (a ctest timeout) unwinds, so that the servers started here are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin")
    ap.add_argument("target")
    ap.add_argument("drafter")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ctx", type=int, default=2560, help="context per slot (a case fills it)")
    ap.add_argument("--long", type=int, default=240, help="lines of the long prompts (about 10 tokens a line)")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--variants", default=ALL_VARIANTS)
    ap.add_argument("--quick", action="store_true",
                    help="CI size: a few cases, short answers, fewer forms of each variant")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    sys.exit(Differential(a).run())


if __name__ == "__main__":
    main()
