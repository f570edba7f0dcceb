#!/usr/bin/env bash
# Where a decode step's wall time goes inside its CUDA graph, on a lent GPU machine (binaries
# as in device_run.sh): Nsight Systems traces `bench -n N` on `synth --preset 31b` with the
# graph's kernels as separate events, and the summary splits the median step into the time
# some matvec runs, the time only other kernels run, and the time no kernel runs (launch
# boundaries), with each kernel kind's median duration and launches a step. Kernel-alone
# profiles (device_step_profile.sh) cannot show the overlap and gaps between kernels.
#   GS_TL_N (default 32 tokens), GS_TL_DEPTH (default 0)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
BIN="$DEV/bin/gemmaserve"
M="$MODEL_31B"
[ -n "$NSYS" ] || { echo "no nsys"; exit 1; }
[ -f "$M" ] || "$BIN" synth --preset 31b -o "$M" --quiet >>"$OUT/synth.log" 2>&1 || { echo "synth failed"; exit 1; }
args=(bench -m "$M" --device cuda -p 0 -n "${GS_TL_N:-32}" -d "${GS_TL_DEPTH:-0}" --depth-fill zeros -r 1)
timeout 200 "$NSYS" profile --trace=cuda --cuda-graph-trace=node --sample=none --cpuctxsw=none -o "$OUT/tl" \
  --force-overwrite true "$BIN" "${args[@]}" >"$OUT/nsys.log" 2>&1
echo "nsys exit $?: $(grep -E '^\| *tg' "$OUT/nsys.log" | head -1)"
nsys_sqlite tl
python3 - "$OUT/tl.sqlite" <<'PY'
import sqlite3, sys, collections, re
db = sqlite3.connect(sys.argv[1])
names = dict(db.execute("select id, value from StringIds"))
cols = [r[1] for r in db.execute("pragma table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
nm = "demangledName" if "demangledName" in cols else "shortName"
K = sorted((s, e, names.get(n, "?"), gx) for s, e, n, gx in
           db.execute(f"select start, end, {nm}, gridX from CUPTI_ACTIVITY_KIND_KERNEL"))
D2H = sorted((s, e) for s, e in db.execute("select start, end from CUPTI_ACTIVITY_KIND_MEMCPY where copyKind = 2"))
def kind(n, gx):
    m = re.search(r"matvec_stream_kernel<\((?:gs::cuda::)?WFormat\)(\d+)", n)
    if m:
        f = {"3": "Q8_0", "4": "Q4_0", "5": "Q4_K", "6": "Q5_K", "7": "Q6_K"}.get(m.group(1), m.group(1))
        return f"matvec {f} grid {gx}", True
    if "matvec_stream_kernel" in n:
        return f"matvec ? grid {gx}", True
    m = re.search(r"(\w+_kernel\w*)(<[^>]*>)?", n)
    return (m.group(0) if m else n)[:60], False
# Steps: the kernels between consecutive device-to-host copies (the step's picks / logits).
steps, i = [], 0
for s, e in D2H:
    cur = []
    while i < len(K) and K[i][0] < s:
        cur.append(K[i]); i += 1
    if cur:
        steps.append(cur)
cnts = collections.Counter(len(c) for c in steps)
mode = cnts.most_common(1)[0][0]
steps = [c for c in steps if len(c) == mode]
steps = steps[len(steps) // 4:]  # skip warm-up
print(f"{len(steps)} steps of {mode} kernels")
mv_names = sorted({n for c in steps[:1] for _, _, n, _ in c if "matvec_stream_kernel" in n})
for n in mv_names[:4]:
    print("  matvec kernel:", n[:160])
def union(iv):
    t, end = 0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            t += e - s; end = e
        elif e > end:
            t += e - end; end = e
    return t
rec = []
for c in steps:
    span = c[-1][1] - c[0][0]
    all_u = union([(s, e) for s, e, _, _ in c])
    mv_u = union([(s, e) for s, e, n, g in c if kind(n, g)[1]])
    mv_sum = sum(e - s for s, e, n, g in c if kind(n, g)[1])
    n_mv = sum(1 for s, e, n, g in c if kind(n, g)[1])
    rec.append((span, all_u, mv_u, mv_sum, n_mv))
med = lambda j: sorted(r[j] for r in rec)[len(rec) // 2] / 1e3
span, all_u, mv_u = med(0), med(1), med(2)
print(f"median step span {span:.1f} us (first kernel start to last kernel end)")
print(f"  some matvec running      {mv_u:8.1f} us ({100 * mv_u / span:.1f}%), {med(4) * 1e3:.0f} launches, "
      f"sum of their durations {med(3):.1f} us")
print(f"  only other kernels       {all_u - mv_u:8.1f} us ({100 * (all_u - mv_u) / span:.1f}%)")
print(f"  no kernel running        {span - all_u:8.1f} us ({100 * (span - all_u) / span:.1f}%)")
per = collections.defaultdict(list)
for c in steps:
    tot = collections.defaultdict(lambda: [0, 0])
    for s, e, n, g in c:
        k = kind(n, g)[0]
        tot[k][0] += e - s; tot[k][1] += 1
    for k, v in tot.items():
        per[k].append(v)
print("kernel kinds (median us a step, launches a step, us a launch):")
for k, v in sorted(per.items(), key=lambda kv: -sorted(x[0] for x in kv[1])[len(kv[1]) // 2]):
    t = sorted(x[0] for x in v)[len(v) // 2] / 1e3
    n = v[0][1]
    print(f"  {t:8.1f} us {n:4d}x {t / n:7.2f}  {k}")
# Gaps and overlaps at each boundary into a matvec: previous kernel's end to the matvec's start.
gaps = []
for c in steps:
    for a, b in zip(c, c[1:]):
        if kind(b[2], b[3])[1]:
            gaps.append(b[0] - a[1])
gaps.sort()
if gaps:
    q = lambda f: gaps[int(f * (len(gaps) - 1))] / 1e3
    print(f"start of a matvec minus the end of the kernel before it (us): p10 {q(.1):.2f} median {q(.5):.2f} p90 {q(.9):.2f}")
# Where the idle time is: the gaps with no kernel running, by the kinds on either side.
idle = collections.defaultdict(lambda: [0, 0])
for c in steps:
    end, prev = None, None
    for s, e, n, g in c:
        if end is not None and s > end:
            k = (prev, kind(n, g)[0])
            idle[k][0] += s - end; idle[k][1] += 1
        if end is None or e > end:
            end, prev = e, kind(n, g)[0]
print("idle gaps by the kernel that ended last -> the kernel that starts (us a step, gaps a step):")
for k, v in sorted(idle.items(), key=lambda kv: -kv[1][0])[:10]:
    print(f"  {v[0] / len(steps) / 1e3:8.1f} us {v[1] / len(steps):6.1f}x  {k[0]} -> {k[1]}")
# The dependent chain between consecutive matvecs: a matvec's consumers wait for the small
# kernels after the previous matvec, so each step splits into, per matvec, "chain" (the
# previous matvec's end to the last small kernel's end before this matvec starts) and
# "effective" (from then to this matvec's end), grouped by the small kernels in between.
grp = collections.defaultdict(lambda: [[], [], 0])
tot_chain, tot_eff = [], []
for c in steps:
    mv = [i for i, k in enumerate(c) if kind(k[2], k[3])[1]]
    tc = te = 0
    for a, b in zip(mv, mv[1:]):
        P, M = c[a], c[b]
        small = c[a + 1:b]
        ready = max([P[1]] + [k[1] for k in small])
        chain, eff = ready - P[1], M[1] - ready
        key = ",".join(re.sub(r"<.*", "", kind(k[2], k[3])[0])[:28] for k in small) or "(none)"
        key = kind(P[2], P[3])[0].replace("matvec ", "") + " -> " + key + " -> " + kind(M[2], M[3])[0].replace("matvec ", "")
        grp[key][0].append(chain); grp[key][1].append(eff); grp[key][2] += 1
        tc += chain; te += eff
    tot_chain.append(tc); tot_eff.append(te)
md = lambda v: sorted(v)[len(v) // 2] / 1e3
print(f"a step: small-kernel chains {md(tot_chain):.1f} us, matvecs from ready to end {md(tot_eff):.1f} us")
print("by boundary (median chain us, median effective matvec us, count a step, chain us a step):")
for k, v in sorted(grp.items(), key=lambda kv: -md(kv[1][0]) * kv[1][2]):
    n = v[2] / len(steps)
    print(f"  chain {md(v[0]):6.2f}  eff {md(v[1]):6.2f}  {n:5.1f}x  {md(v[0]) * n:7.1f}  {k[:150]}")
PY
rm -f "$OUT/tl.sqlite"
