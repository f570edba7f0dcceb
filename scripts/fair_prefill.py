#!/usr/bin/env python3
"""Measures what a long prompt's prefill does to a stream that is decoding beside it, on a
running gemmaserve (loopback, stdlib only): stream A (a greedy completion, no drafter) decodes; once
it has produced some tokens, request B sends a prompt of about N words (max_tokens 1). Prints
A's gaps between tokens while B was prefilling (median, 90th percentile, max, tokens) and B's
latency. Usage: fair_prefill.py PORT --words N"""
import argparse, http.client, json, statistics, threading, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--words", type=int, default=30000)
    a = ap.parse_args()
    times, b_span = [], {}

    def stream_a():
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=3600)
        body = {"prompt": "Once upon a time", "max_tokens": 100000, "temperature": 0, "stream": True,
                "speculative": False}
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        while True:
            line = r.readline()
            if not line or line.strip() == b"data: [DONE]" or "end" in b_span and time.time() > b_span["end"] + 2:
                break
            if line.startswith(b"data: "):
                times.append(time.time())
        c.close()

    t = threading.Thread(target=stream_a, daemon=True)
    t.start()
    while len(times) < 20:
        time.sleep(0.05)
    words = " ".join(["river", "stone", "light", "morning", "garden", "silver"][i % 6] for i in range(a.words))
    c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=3600)
    b_span["start"] = time.time()
    c.request("POST", "/v1/completions", body=json.dumps({"prompt": words, "max_tokens": 1}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    res = json.loads(r.read())
    b_span["end"] = time.time()
    t.join(timeout=10)
    inside = [x for x in times if b_span["start"] <= x <= b_span["end"]]
    gaps = sorted(y - x for x, y in zip(inside, inside[1:]))
    n = res.get("usage", {}).get("prompt_tokens", 0) if isinstance(res, dict) else 0
    if gaps:
        dur = b_span["end"] - b_span["start"]
        print(f"B: {n} prompt tokens in {dur:.2f} s; A during it: {len(inside)} events ({len(inside) / dur:.1f} a second), "
              f"gap median {statistics.median(gaps) * 1e3:.0f} ms, p90 {gaps[int(0.9 * (len(gaps) - 1))] * 1e3:.0f} ms, "
              f"max {gaps[-1] * 1e3:.0f} ms")
    else:
        print(f"B: {n} prompt tokens in {b_span['end'] - b_span['start']:.2f} s; A produced {len(inside)} events during it")


if __name__ == "__main__":
    main()
