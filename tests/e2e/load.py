#!/usr/bin/env python3
"""Concurrent-load measurement of a running gemmaserve (loopback only, bounded): N clients
each send R text completions of T tokens; prints aggregate generated tokens/s, mean latency
and the drafter's acceptance. Not a test: numbers for docs/perf-notes.md.
Usage: load.py PORT --clients N --requests R --tokens T [--no-spec] [--key KEY]"""
import argparse, json, threading, time, urllib.request

PROMPTS = ["ROMEO:", "JULIET:\nO", "First Citizen:\nWe are", "KING HENRY:", "To be, or not",
           "MENENIUS:\nWhat", "Now is the winter", "DUKE VINCENTIO:\n"]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--no-spec", action="store_true")
    ap.add_argument("--key", default="")
    a = ap.parse_args()
    url = f"http://127.0.0.1:{a.port}/v1/completions"
    headers = {"Content-Type": "application/json"}
    if a.key:
        headers["Authorization"] = "Bearer " + a.key
    stats = {"tokens": 0, "latency": [], "drafted": 0, "accepted": 0}
    lock = threading.Lock()

    def client(i):
        for r in range(a.requests):
            body = {"prompt": PROMPTS[(i * a.requests + r) % len(PROMPTS)], "max_tokens": a.tokens, "temperature": 0,
                    "speculative": not a.no_spec}
            t0 = time.time()
            req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
            res = json.load(urllib.request.urlopen(req, timeout=600))
            dt = time.time() - t0
            with lock:
                stats["tokens"] += res["usage"]["completion_tokens"]
                stats["latency"].append(dt)
                stats["drafted"] += res["timings"]["draft_n"]
                stats["accepted"] += res["timings"]["draft_n_accepted"]

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    acc = stats["accepted"] / stats["drafted"] if stats["drafted"] else 0.0
    print(f"clients {a.clients} requests {a.clients * a.requests} tokens {stats['tokens']} wall {wall:.1f} s "
          f"aggregate {stats['tokens'] / wall:.1f} tok/s mean latency {sum(stats['latency']) / len(stats['latency']):.2f} s "
          f"drafted {stats['drafted']} accepted {stats['accepted']} ({acc:.2f})")

if __name__ == "__main__":
    main()
