#!/usr/bin/env python3
"""A whole request's time with an output schema (decision 0072): POSTs the same chat request
with response_format json_schema (40 pattern-constrained properties, bench/tool_grammar_bench's
bounded_schema) to a running server N+1 times, one connection each, and prints the last N times
(ms) and their median; the first request fills the slot's kept prefix. Then GET /metrics' grammar
cache lines. Usage: grammar_cache_request_bench.py PORT [N]."""
import json
import statistics
import sys
import time
import urllib.request


def schema():
    """bench/tool_grammar_bench.cpp's bounded_schema: 40 validation patterns with counted repeats."""
    props = {}
    for i in range(40):
        k = i % 4
        if k == 0:
            p = r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63}){0,3}\.[a-z]{2," + str(6 + i) + "}$"
        elif k == 1:
            p = r"^https://[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63}){1,4}/p" + str(i) + "/[A-Za-z0-9_-]{1,128}$"
        elif k == 2:
            p = r"^\+?[0-9]{1,3}[ -]?\(?[0-9]{1,4}\)?([ -]?[0-9]{2,4}){2," + str(3 + i % 5) + "}$"
        else:
            p = "^[A-Z]{2}[0-9]{2}[A-Z0-9]{" + str(10 + i % 20) + ",30}$"
        props["f%d" % i] = {"type": "string", "pattern": p, "maxLength": 254}
    return {"type": "object", "properties": props, "additionalProperties": False}


def main():
    port = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    body = json.dumps({
        "messages": [{"role": "user", "content": "Fill in the form as JSON."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "form", "schema": schema()}},
        "max_tokens": 1,
        "chat_template_kwargs": {"enable_thinking": False},
    }).encode()
    times = []
    for i in range(n + 1):
        req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            r.read()
        ms = (time.perf_counter() - t0) * 1000
        if i > 0:
            times.append(ms)
    print("ms:", " ".join("%.1f" % t for t in times))
    print("min %.1f median %.1f max %.1f" % (min(times), statistics.median(times), max(times)))
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("gemmaserve_grammar_cache_"):
                print(line, flush=True)


if __name__ == "__main__":
    main()
