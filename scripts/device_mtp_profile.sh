#!/usr/bin/env bash
# Where an MTP round's time goes on a lent GPU machine (binaries as in device_run.sh): Nsight
# Systems traces `bench --mtp` on `synth --preset 31b` + `31b-assistant` (kernels inside the
# CUDA graphs, copies, API calls), and the summary splits each draft step into the drafter
# graph's GPU time, its logits download and the host time between steps (the argmax and the
# launches), next to the verify pass of the same rounds.
#   GS_MTP_DEPTH (default 0), GS_MTP_N (default 16 tokens)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
D="$DRAFTER_31B"
echo "nsys: ${NSYS:-none}"
synth_31b_pair || exit 1
args=(bench -m "$M" --mtp "$D" --device cuda -p 0 -n "${GS_MTP_N:-16}" -d "${GS_MTP_DEPTH:-0}" --depth-fill zeros -r 1 --verify 5)
timeout 200 "$BIN" "${args[@]}" 2>/dev/null | grep -E "tg|verify"
[ -n "$NSYS" ] || exit 0
timeout 300 "$NSYS" profile --trace=cuda --cuda-graph-trace=node --sample=none --cpuctxsw=none -o "$OUT/mtp" \
  --force-overwrite true "$BIN" "${args[@]}" >"$OUT/nsys.log" 2>&1
echo "nsys exit $?"
nsys_sqlite mtp
python3 - "$OUT/mtp.sqlite" <<'PY'
import sqlite3, sys, collections
db = sqlite3.connect(sys.argv[1])
names = dict(db.execute("select id, value from StringIds"))
ev = []  # (start, end, kind, label, bytes)
for s, e, n in db.execute("select start, end, shortName from CUPTI_ACTIVITY_KIND_KERNEL"):
    ev.append((s, e, "K", names.get(n, "?"), 0))
for s, e, k, b in db.execute("select start, end, copyKind, bytes from CUPTI_ACTIVITY_KIND_MEMCPY"):
    ev.append((s, e, "M%d" % k, "memcpy", b))
try:
    for s, e, b in db.execute("select start, end, bytes from CUPTI_ACTIVITY_KIND_MEMSET"):
        ev.append((s, e, "S", "memset", b))
except Exception:
    pass
ev.sort()
# Drafter steps end with a D2H copy of one row of logits (n_vocab floats); find them.
d2h = [x for x in ev if x[2] == "M2"]
sizes = collections.Counter(x[4] for x in d2h)
print("D2H copies by size:", sizes.most_common(6))
row = min(b for b in sizes if b > 100000) if any(b > 100000 for b in sizes) else None
if row is None:
    sys.exit(0)
# Walk the timeline: a draft step = the events after the previous D2H copy up to and
# including a D2H copy of `row` bytes; report GPU busy, copy time and idle gaps.
steps, verifies = [], []
prev_end = None
cur = []
for x in ev:
    cur.append(x)
    if x[2] == "M2":
        busy = sum(e - s for s, e, k, _, _ in cur if k == "K")
        nk = sum(1 for c in cur if c[2] == "K")
        first = cur[0][0]
        span = x[1] - (prev_end if prev_end is not None else first)
        rec = dict(span=span, busy=busy, nk=nk, copy=x[1] - x[0], bytes=x[4],
                   gap_before=(first - prev_end) if prev_end is not None else 0)
        (steps if x[4] == row and nk < 200 else verifies).append(rec)  # a target pass has ~700 kernels
        prev_end = x[1]
        cur = []
def summ(name, rs):
    if not rs:
        return
    rs = rs[len(rs) // 4:]  # skip warm-up
    m = lambda k: sorted(r[k] for r in rs)[len(rs) // 2] / 1e3
    print(f"{name}: n {len(rs)}, median span {m('span'):.1f} us: host before the first GPU event "
          f"{m('gap_before'):.1f}, {m('nk'):.0f} kernels busy {m('busy'):.1f}, D2H {m('copy'):.1f} us "
          f"({rs[0]['bytes']} B), the rest idle between them")
summ("draft step (1 row of logits)", steps)
summ("target pass downloads", verifies)
# The kernels of the draft steps, by name (time per step).
per = collections.defaultdict(float)
cnt = collections.Counter()
cur, in_steps = [], 0
for x in ev:
    cur.append(x)
    if x[2] == "M2":
        if x[4] == row and sum(1 for c in cur if c[2] == "K") < 200:
            in_steps += 1
            for s, e, k, n, _ in cur:
                if k == "K":
                    per[n] += e - s
                    cnt[n] += 1
        cur = []
print("draft-step kernels (us per step, launches per step):")
for n, t in sorted(per.items(), key=lambda kv: -kv[1])[:14]:
    print(f"  {t / in_steps / 1e3:8.1f} us {cnt[n] / in_steps:5.1f}x  {n[:90]}")
PY
