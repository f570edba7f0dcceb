#!/usr/bin/env python3
"""Instructions a tile of the bulk-copy matvec's consumer loop, read from the SASS that
scripts/sass.sh writes (no device needed).

For each kernel of k_matvec_stream.cu whose mangled name matches the regex: the SASS between the
consumer's release of the stage (its `SYNCS.ARRIVE.TRANS64.A1T0 ... +0x40` on the empty
barrier, after the tile's shared loads) and the segment-end test (`@P BRA P, ...`: `continue`
unless the row group or the CTA's range ends there), i.e. the tile's arithmetic with the
activations' loads. A backward branch inside that region is an inner loop (compute_mma8's
column tiles); its body counts `--iters` times (the column tiles a launch of that many rows
runs: rows 5 -> 2, rows 9 -> 3, rows 16 -> 4), the rest once. Static counts on the path that
computes a tile; the tile's shared loads before the release (6 LDS.128 for Tile<kQ4_K>, 8
LDS.64 + 1 LDS.128 for load_sb) and the wait are not in the region. Prints the registers and
stack of the kernel from the ptxas log next to the SASS, and the most frequent opcodes.

  scripts/sass.sh src/backend/cuda/k_matvec_stream.cu . /tmp/s/k.sass   # once
  scripts/sass_tile.py /tmp/s/k.sass 'WFormatE5ELi1ELi2ELb0ELi0ELi3EE' [--iters 2]

Kernel names: matvec_stream_kernel<F, NT, MB, XS, Diag, I8> mangles as
WFormatE<F>ELi<NT>ELi<MB>ELb<XS>ELi<Diag>ELi<I8>EE; Q4_K is F = 5.
"""
import argparse
import collections
import re
import sys


def parse(path, pat):
    funcs, cur, labels = collections.OrderedDict(), None, []
    for line in open(path):
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            cur = m.group(1) if pat.search(m.group(1)) else None
            if cur:
                funcs[cur] = []
            labels = []
            continue
        if cur is None:
            continue
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            labels.append(m.group(1))
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            funcs[cur].append((int(m.group(1), 16), labels, m.group(2)))
            labels = []
    return funcs


def opcode(text):
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    return t.split()[0].split(".")[0] if t else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sass")
    ap.add_argument("regex")
    ap.add_argument("--iters", type=int, default=1, help="trip count of an inner loop in the region")
    a = ap.parse_args()
    ptxas = open(re.sub(r"\.sass$", ".ptxas.txt", a.sass)).read()
    for name, ins in parse(a.sass, re.compile(a.regex)).items():
        lab = {l: addr for addr, ls, _ in ins for l in ls}
        rel = [i for i, (_, _, t) in enumerate(ins) if re.search(r"SYNCS\.ARRIVE\.TRANS64\.A1T0 RZ, \[\S+\+0x40\]", t)]
        if not rel:
            print(f"{name[-60:]}: no consumer release found")
            continue
        r0 = rel[-1] + 1
        end = next((i for i in range(r0, len(ins)) if re.search(r"\bBRA P\d", ins[i][2])), None)
        if end is None:
            print(f"{name[-60:]}: no segment-end test found")
            continue
        region = ins[r0:end]
        inner = []
        for i, (addr, _, t) in enumerate(region):
            m = re.search(r"BRA `\((\.L_x_\d+)\)", t)
            if m and m.group(1) in lab and lab[m.group(1)] <= addr and lab[m.group(1)] >= region[0][0]:
                inner.append((lab[m.group(1)], addr))
        n_body = sum(1 for addr, _, _ in region for lo, hi in inner if lo <= addr <= hi)
        total = len(region) - n_body + a.iters * n_body
        regs = re.search(re.escape(name) + r"'.*?\n(?:.*\n)??\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) "
                         r"bytes spill loads\n.*?Used (\d+) registers", ptxas)
        args = re.search(r"WFormatE(\d)ELi(\d)ELi(\d)ELb(\d)ELi(\d)ELi(\d)EE", name)
        label = "F=%s NT=%s MB=%s XS=%s Diag=%s I8=%s" % args.groups() if args else name[-60:]
        print(f"{label}: {total} instructions a tile ({len(region)} in the region {region[0][0]:#06x}..{region[-1][0]:#06x}"
              + (f", inner loop {n_body} x {a.iters}" if inner else "") + ")"
              + (f"; {regs.group(4)} registers, stack {regs.group(1)} B, spill stores {regs.group(2)} B, "
                 f"loads {regs.group(3)} B" if regs else ""))
        hist = collections.Counter(opcode(t) for _, _, t in region)
        print("   ", ", ".join(f"{o} {c}" for o, c in hist.most_common(16)))


if __name__ == "__main__":
    sys.exit(main())
