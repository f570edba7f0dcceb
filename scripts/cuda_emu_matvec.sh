#!/usr/bin/env bash
# Runs src/backend/cuda/k_matvec_stream.cu's bulk-copy matvec on the CPU emulator of
# tools/cuda_emu (no GPU needed): every format it serves, 1..16 rows, row groups cut between
# CTAs, bulk copies landing at issue or only when waited for, or the block's fibers run in a
# random order (random: one warp can run ahead of another). Needs a build of the project
# (libgs_core.a in build/, ./scripts/build.sh). Usage: scripts/cuda_emu_matvec.sh
# [eager|lazy|random|both|all] [format filter, e.g. q6_K] (both = eager and lazy, the default)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${GS_EMU_DIR:-build/cuda_emu}"
CORE="${GS_BUILD_DIR:-build}/src/core/libgs_core.a"
[ -f "$CORE" ] || { echo "cuda_emu_matvec: $CORE is missing (run ./scripts/build.sh first)" >&2; exit 2; }
mkdir -p "$OUT"
CUDA_INC="${CUDA_HOME:-/usr/local/cuda}/include"
# Shared-memory qualifiers become host storage (see tools/cuda_emu/README.md).
sed -e 's/extern __shared__/extern/g' -e 's/__shared__/static/g' src/backend/cuda/k_matvec_stream.cu \
  >"$OUT/k_matvec_stream_emu.cpp"
CXX="${CXX:-g++}"
FLAGS=(-std=c++20 -O2 -g -Itools/cuda_emu -Isrc -isystem "$CUDA_INC" -Wno-unused-function -Wno-psabi -DFMT_SHARED
       -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB)
"$CXX" "${FLAGS[@]}" -c "$OUT/k_matvec_stream_emu.cpp" -o "$OUT/k_matvec_stream_emu.o"
"$CXX" "${FLAGS[@]}" tools/cuda_emu/matvec_emu_main.cpp src/backend/cuda/cuda_weight_repack.cpp \
  "$OUT/k_matvec_stream_emu.o" "$CORE" -lspdlog -lfmt -o "$OUT/matvec_emu"
mode="${1:-both}"
rc=0
for m in eager lazy random; do
  if [ "$mode" = all ] || { [ "$mode" = both ] && [ "$m" != random ]; } || [ "$mode" = "$m" ]; then
    echo "== $m"
    "$OUT/matvec_emu" "$m" "${2:-}" || rc=1
    # The opt-in int8 forms of Q4_K (decision 0028), verify rows against decode: GS_MVS_Q4K=1
    # (compute_sb4 for 2..4 rows, compute_sb above) on more row counts with every row of a
    # batch run alone, =2 (compute_mma8, kept for the device A/B) on the same cases as the
    # other formats.
    if [ -z "${2:-}" ] || [ "${2:-}" = q4_K ]; then
      echo "== $m, int8 Q4_K forms (GS_MVS_Q4K=1, rows 1-9 12 16, every row alone)"
      GS_MVS_Q4K=1 GS_EMU_ROWS=1,2,3,4,5,6,7,8,9,12,16 GS_EMU_ALL_ROWS=1 "$OUT/matvec_emu" "$m" q4_K |
        grep -E "FAIL|cases passed" || rc=1
      echo "== $m, int8 Q4_K forms (GS_MVS_Q4K=2)"
      GS_MVS_Q4K=2 "$OUT/matvec_emu" "$m" q4_K | grep -E "FAIL|cases passed" || rc=1
    fi
  fi
done
exit $rc
