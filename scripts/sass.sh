#!/usr/bin/env bash
# The SASS of a CUDA source here, without a GPU or device time: compiles it for sm_90a with
# the project's include roots (run ./scripts/build.sh once first), disassembles it with the
# nvdisasm of Debian's nvidia-cuda-toolkit (11.8, from the non-free component, fetched once
# into $GS_SASS_TOOLS; CUDA 13.0 ships no disassembler here) and prints, per kernel whose
# mangled name matches the regex, its instruction count, register count and the most frequent
# opcodes. nvdisasm 11.8 does not know CUDA 13's ELF header encoding of the architecture, so
# the script rewrites the header (ABI version 7, e_flags 0x005a055a, the CUDA 12 encoding of
# sm_90); the instruction encoding itself is the same.
#   scripts/sass.sh FILE.cu [kernel regex] [out.sass]
set -euo pipefail
cd "$(dirname "$0")/.."
src="${1:?usage: scripts/sass.sh FILE.cu [kernel regex] [out.sass]}"
re="${2:-.}"
out="${3:-/tmp/gs-sass/$(basename "$src" .cu).sass}"
tools="${GS_SASS_TOOLS:-/tmp/gs-nvdisasm}"
mkdir -p "$(dirname "$out")"
if [ ! -x "$tools/usr/bin/nvdisasm" ]; then
  apt="$tools/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  cat >"$apt/nonfree.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt" -o "Dir::State::Lists=$apt/lists"
        -o "Dir::Cache=$apt/cache")
  apt-get "${opts[@]}" update >/dev/null
  (cd "$apt" && apt-get "${opts[@]}" download nvidia-cuda-toolkit >/dev/null 2>&1)
  dpkg -x "$apt"/nvidia-cuda-toolkit_*.deb "$tools"
fi
[ -d build/include_roots ] || { echo "sass.sh: build/include_roots is missing (run ./scripts/build.sh)" >&2; exit 2; }
cubin="${out%.sass}.cubin"
nvcc -cubin -I build/include_roots/gs_backend -I build/include_roots/gs_core -I src -O3 \
  -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -std=c++17 -Xptxas -v -o "$cubin" "$src" \
  2>"${out%.sass}.ptxas.txt"
python3 - "$cubin" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
d[8] = 7
struct.pack_into("<I", d, 0x30, 0x005a055a)
open(sys.argv[1], "wb").write(d)
PY
"$tools/usr/bin/nvdisasm" -c "$cubin" >"$out"
python3 - "$out" "$re" "${out%.sass}.ptxas.txt" <<'PY'
import collections, re, sys
sass, pat, ptxas = sys.argv[1], re.compile(sys.argv[2]), open(sys.argv[3]).read()
regs = dict(re.findall(r"Compiling entry function '(\S+)'.*?\n.*?\n?.*?Used (\d+) registers", ptxas, re.S))
cur, body = None, collections.defaultdict(list)
for line in open(sass):
    m = re.match(r"\s*\.text\.(\S+):", line)
    if m:
        cur = m.group(1)
        continue
    m = re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if cur and m:
        body[cur].append(m.group(2).split(".")[0])
for name, ops in body.items():
    if not pat.search(name):
        continue
    top = ", ".join(f"{o} {n}" for o, n in collections.Counter(ops).most_common(10))
    print(f"{name[:110]}\n  {len(ops)} instructions, {regs.get(name, '?')} registers; {top}")
print(f"(SASS in {sass})")
PY
