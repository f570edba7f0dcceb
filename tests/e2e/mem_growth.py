#!/usr/bin/env python3
"""Host memory of a running gemmaserve over many sequential requests with unique prompts
(bug-case 64). Sends N text completions one after another, each prompt a fresh random
sequence of words of about --min-words..--max-words words, and every --every requests
samples the server's /proc/PID/status (RssAnon, VmSwap, Threads) and, when the server has
them, the gemmaserve_process_* gauges of /metrics. Prints one CSV row per sample and a
summary: the growth per request over the second half of the run (after warm-up).
Loopback only; standard library only.
Usage: mem_growth.py PORT PID [--requests N] [--every K] [--min-words A] [--max-words B]
       [--max-tokens T] [--seed S] [--max-growth-bytes-per-request X]
Exit status 1 when --max-growth-bytes-per-request is given and the second half grew faster,
or when a request failed."""
import argparse, json, random, sys, time, urllib.request

WORDS = ("the and to of my a that in is not with for be his your this but he have thou me as "
         "so will what her him all by shall do no are our if on o good lord now thy sir more come "
         "king well love let or then from at how they there should would let us she them than "
         "which may when make know say man one yet first upon here like death heaven night blood "
         "sweet fair grace queen father brother noble honour gentle duke fortune speak heart").split()


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "VmSwap", "Threads", "VmRSS"):
                out[key] = int(value.split()[0]) * (1 if key == "Threads" else 1024)
    out.setdefault("VmSwap", 0)
    return out


def metrics(port):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    except OSError:
        return {}
    got = {}
    for line in text.splitlines():
        if line.startswith("gemmaserve_process_") or line.startswith("gemmaserve_host_"):
            name, _, value = line.rpartition(" ")
            got[name.replace("gemmaserve_", "")] = float(value)
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("pid", type=int)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--min-words", type=int, default=200)
    ap.add_argument("--max-words", type=int, default=800)
    ap.add_argument("--max-tokens", type=int, default=2)
    ap.add_argument("--seed", type=int, default=64)
    ap.add_argument("--max-growth-bytes-per-request", type=float, default=None)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    url = f"http://127.0.0.1:{a.port}/v1/completions"
    rows = []
    t0 = time.time()
    gauge_names = None
    for i in range(a.requests + 1):
        if i % a.every == 0:
            s = status(a.pid)
            m = metrics(a.port)
            if gauge_names is None:
                gauge_names = sorted(m)
                print("requests,seconds,rss_anon_bytes,vm_swap_bytes,threads" + "".join("," + g for g in gauge_names))
            row = (i, time.time() - t0, s["RssAnon"], s["VmSwap"], s["Threads"])
            rows.append(row)
            print("%d,%.1f,%d,%d,%d" % row + "".join(",%d" % m.get(g, -1) for g in gauge_names), flush=True)
        if i == a.requests:
            break
        n = rng.randint(a.min_words, a.max_words)
        # A number first: no two prompts share even their first token's run, so no slot's
        # kept cache is reused and every prompt is tokenized afresh.
        prompt = f"{i} " + " ".join(rng.choice(WORDS) for _ in range(n))
        body = {"prompt": prompt, "max_tokens": a.max_tokens, "temperature": 0}
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        try:
            json.load(urllib.request.urlopen(req, timeout=600))
        except Exception as e:  # noqa: BLE001 (any failure fails the run)
            print(f"FAIL: request {i}: {e}", file=sys.stderr)
            return 1
    half = rows[len(rows) // 2]
    last = rows[-1]
    first = rows[0]
    per_request = ((last[2] + last[3]) - (half[2] + half[3])) / max(1, last[0] - half[0])
    print(f"summary: {last[0]} requests in {last[1]:.0f} s; RssAnon+VmSwap {first[2] + first[3]} -> "
          f"{half[2] + half[3]} (request {half[0]}) -> {last[2] + last[3]} bytes; "
          f"second half {per_request:.0f} bytes/request; threads {first[4]} -> {last[4]}")
    if a.max_growth_bytes_per_request is not None and per_request > a.max_growth_bytes_per_request:
        print(f"FAIL: grew {per_request:.0f} bytes/request after warm-up (limit {a.max_growth_bytes_per_request:.0f})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
