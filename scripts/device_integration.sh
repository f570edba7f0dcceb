#!/usr/bin/env bash
# GPU-host integration check (device tool): `run` and `serve` on CUDA with the bundled shakes
# pair, and speculative decoding on the 31B-shaped synthetic pair: plain vs fixed drafting vs
# adaptive drafting (random drafter: nothing is accepted, so adaptive must stay near plain).
# Needs the prebuilt binary and its non-CUDA libraries in .dev/lead/{bin,lib}. Summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
DEV=.dev/lead
BIN="$DEV/bin/gemmaserve"
export LD_LIBRARY_PATH="$PWD/$DEV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT="${OUT:-/tmp/gs-out}"
mkdir -p "$OUT"
T=models/shakes-target.gguf
A=models/shakes-assistant.gguf
summary=()
note() { summary+=("$1"); echo "$1"; }

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
ldd "$BIN" | grep "not found" && note "MISSING LIBRARIES"

# 1. run on CUDA: greedy text against the CPU's (computed on the dev machine), with and without MTP.
for mode in plain mtp; do
  extra=""; [ $mode = mtp ] && extra="--mtp $A --no-draft-adaptive"
  timeout 120 "$BIN" run -m $T -p "ROMEO:" -n 100 --temperature 0 --json --device cuda $extra \
    >"$OUT/run_$mode.json" 2>"$OUT/run_$mode.err"
  note "run cuda $mode: exit $? $(python3 - "$OUT/run_$mode.json" "$DEV/expected_romeo.json" <<'PY'
import json, sys
try:
    got = json.load(open(sys.argv[1])); ref = json.load(open(sys.argv[2]))
except Exception as e:
    print("no result:", e); sys.exit()
n = 0
while n < min(len(got["tokens"]), len(ref["tokens"])) and got["tokens"][n] == ref["tokens"][n]:
    n += 1
print(f'{got["backend"]}: {got["tokens_per_second"]:.1f} tok/s, first {n}/{len(ref["tokens"])} tokens equal the CPU, drafted {got["drafted"]} accepted {got["accepted"]}')
PY
)"
done

# 2. serve on the GPU (device auto), a chat request, a stream, metrics.
PORT=8093
timeout 120 "$BIN" serve -m $T --mtp $A --port $PORT --parallel 2 >"$OUT/serve.log" 2>&1 &
spid=$!
for i in $(seq 1 60); do curl -sf localhost:$PORT/health >/dev/null && break; sleep 0.5; done
curl -s localhost:$PORT/v1/chat/completions -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Speak, Romeo."}],"max_tokens":40,"temperature":0}' >"$OUT/chat.json"
note "serve chat: $(python3 -c "import json;j=json.load(open('$OUT/chat.json'));print(j['choices'][0]['finish_reason'], repr(j['choices'][0]['message']['content'][:60]), j['usage'])" 2>&1 | head -c 300)"
curl -sN localhost:$PORT/v1/chat/completions -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":20,"stream":true}' >"$OUT/stream.txt"
note "serve stream: $(grep -c '^data: ' "$OUT/stream.txt") events, last: $(tail -n 2 "$OUT/stream.txt" | head -c 40)"
curl -s localhost:$PORT/metrics >"$OUT/metrics.txt"
note "serve metrics: $(grep -E '^gemmaserve_(draft|requests)' "$OUT/metrics.txt" | head -4 | tr '\n' ' ')"
grep -E "backend|device|cuda" "$OUT/serve.log" | head -3
kill $spid; wait $spid 2>/dev/null

# 3. The 31B-shaped pair: plain, fixed drafting (4), adaptive drafting.
S=/tmp/g31.gguf; SA=/tmp/g31a.gguf
timeout 120 "$BIN" synth --preset 31b -o $S --quiet >"$OUT/synth.log" 2>&1
timeout 60 "$BIN" synth --preset 31b-assistant -o $SA --quiet >>"$OUT/synth.log" 2>&1
note "synth: $(ls -la $S $SA 2>&1 | awk '{print $5}' | tr '\n' ' ')"
P=2,818,1005,3520,5070,1031,27001,1106,235265
for mode in plain fixed adaptive; do
  case $mode in plain) extra="";; fixed) extra="--mtp $SA --no-draft-adaptive";; adaptive) extra="--mtp $SA";; esac
  timeout 150 "$BIN" run -m $S --prompt-tokens $P -n 128 --ignore-eos --temperature 0 --json --device cuda $extra \
    >"$OUT/31b_$mode.json" 2>"$OUT/31b_$mode.err"
  note "31b $mode: exit $? $(python3 -c "import json;j=json.load(open('$OUT/31b_$mode.json'));print(f\"{j['tokens_per_second']:.1f} tok/s, drafted {j['drafted']} accepted {j['accepted']}, tokens hash {hash(tuple(j['tokens']))%100000}\")" 2>&1 | tail -1)"
done
echo "===== summary"
printf '%s\n' "${summary[@]}"
