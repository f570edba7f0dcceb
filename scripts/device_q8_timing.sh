#!/usr/bin/env bash
# Where the q8_0 decode kernel's tile loop spends its cycles (decision 0035; docs/perf-notes.md,
# "Thirty-second session"), on a lent GPU machine: `bench` on `synth --preset 31b` with a q8_0
# cache at depth GS_QT_DEPTH (default 524288, zero fill), decode only, with GS_ATTN_Q8_TIMING=1
# (the kernel's measurement instantiation: CTA (0, 0, 0) of every launch prints the clock64
# cycles of each part of its tile loop for a warp with rows and a converter warp; with
# GS_ATTN_Q8_DSPLIT=1 or 2 in a setting, the register-dequantizing kernel's warp 0). Prints the
# mean cycles a tile of each part by role, once per setting of GS_QT (';'-separated
# environment settings, default one empty setting). Binaries as in device_run.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
[ -f "$MODEL_31B" ] || "$BIN" synth --preset 31b -o "$MODEL_31B" --quiet >"$OUT/synth.log" 2>&1
split_settings "${GS_QT:-}"
for s in "${settings[@]}"; do
  env $s GS_ATTN_Q8_TIMING=1 timeout 240 "$BIN" bench -m "$MODEL_31B" --device cuda --kv-type q8_0 -p 0 -n 8 \
    -d "${GS_QT_DEPTH:-524288}" --depth-fill zeros -r 1 >"$OUT/timing.log" 2>>"$OUT/bench.log"
  echo "== setting '$s' (exit $?)"
  python3 - "$OUT/timing.log" <<'PY'
import collections, sys
acc = collections.defaultdict(lambda: collections.Counter())
order = {}
for line in open(sys.argv[1], errors="replace"):
    w = line.split()
    if not w or w[0] != "q8t":
        continue
    kv = dict(zip(w[1::2], w[2::2]))
    key = (kv.pop("role"), kv.pop("F"), kv.pop("R"))
    c = acc[key]
    c["launches"] += 1
    order.setdefault(key, [k for k in kv if k != "tiles"])
    for k, v in kv.items():
        c[k] += int(v)
for (role, f, r), c in sorted(acc.items()):
    tiles = max(c["tiles"], 1)
    cells = " ".join(f"{k} {c[k] / tiles:7.0f}" for k in order[(role, f, r)] if c[k] or k == "total")
    print(f"  {role:4} F {f} R {r}: {c['launches']} launches, {tiles / c['launches']:.0f} tiles a launch; cycles a tile: {cells}")
PY
done
rm -f "$OUT/timing.log"
