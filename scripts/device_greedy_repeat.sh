#!/usr/bin/env bash
# Is greedy output of one prompt repeatable on a GPU server when nothing else runs? On a lent
# GPU machine (binaries as in device_run.sh; a second build carried as gemmaserve_old.gz): the
# shakes pair, --parallel 1, for each binary with CUDA graphs on and off, the same greedy
# completion fresh, again (its prefix reused), after another prompt took the slot, and once
# more. Prints whether they agree and a piece of each text (thirty-sixth session: they agree in
# all four settings, so a stress run's "greedy not repeatable alone" comes from a prefix the
# slot kept from a request computed in a batch with others, not from a lone run).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
for bin in gemmaserve gemmaserve_old; do
  [ -x "$DEV/bin/$bin" ] || continue
  for g in 1 0; do
  GS_CUDA_GRAPHS=$g $DEV/bin/$bin serve -m models/shakes-target.gguf --mtp models/shakes-assistant.gguf --device cuda -c 2048 --parallel 1 --port 18700 --log-level warn > $OUT/s_$bin.log 2>&1 &
  sp=$!
  for i in $(seq 1 120); do curl -sf localhost:18700/health >/dev/null && break; sleep 0.25; done
  python3 - <<'PY' "$bin graphs=$g"
import json, urllib.request, sys
def g(p, n=48):
    req = urllib.request.Request("http://127.0.0.1:18700/v1/completions", json.dumps({"prompt": p, "max_tokens": n, "temperature": 0}).encode(), {"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=120).read())["choices"][0]["text"]
P = "the king of night and day speaks"
a = g(P); b = g(P); q = g("ROMEO: what light", 4); c = g(P); d = g(P)
print(sys.argv[1], "fresh==reused:", a == b, "fresh==after-other:", a == c, "c==d:", c == d)
for x in (a, c): print("   ", repr(x[40:100]))
PY
  kill $sp; wait $sp 2>/dev/null
  done
done
