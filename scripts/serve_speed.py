#!/usr/bin/env python3
"""Server decode speed for scripts/device_serve_speed.sh (stdlib only).

  serve_speed.py PORT chains   128-token chat requests under five sampler chains
  serve_speed.py PORT mtp      128-token greedy completions with and without drafting, twice

Prints one line: each request's timings.predicted_per_second (and, with drafting, the drafts
accepted of those made)."""
import json
import sys
import urllib.request

CHAINS = [("greedy", {"temperature": 0}),
          ("greedy rep1.1", {"temperature": 0, "repetition_penalty": 1.1}),
          ("T1 k64 p.95", {"temperature": 1, "top_k": 64, "top_p": 0.95}),
          ("T1", {"temperature": 1, "top_k": 0, "top_p": 1.0}),
          ("T.7 minp.05", {"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.05})]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=300).read().decode())


def main():
    port, mode = sys.argv[1], sys.argv[2]
    out = []
    if mode == "chains":
        post(port, "/v1/chat/completions", {"messages": [{"role": "user", "content": "warm up"}], "max_tokens": 16})
        for name, extra in CHAINS:
            body = {"messages": [{"role": "user", "content": "Tell a long story."}], "max_tokens": 128, "seed": 7,
                    "ignore_eos": True, **extra}
            t = post(port, "/v1/chat/completions", body).get("timings", {})
            out.append(f"{name} {t.get('predicted_per_second', 0):.1f}")
    else:
        post(port, "/v1/completions", {"prompt": "warm up", "max_tokens": 16})
        for _ in range(2):
            for spec in (True, False):
                body = {"prompt": "ROMEO:", "max_tokens": 128, "temperature": 0, "ignore_eos": True, "speculative": spec}
                t = post(port, "/v1/completions", body).get("timings", {})
                drafts = f" ({t.get('draft_n_accepted', '?')}/{t.get('draft_n', '?')} drafts)" if spec else ""
                out.append(f"{'mtp' if spec else 'plain'} {t.get('predicted_per_second', 0):.1f}{drafts}")
    print("; ".join(out))


if __name__ == "__main__":
    main()
