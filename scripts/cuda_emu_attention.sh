#!/usr/bin/env bash
# Runs src/backend/cuda/k_attention.cu's tensor-core kernels on the CPU emulator of
# tools/cuda_emu (no GPU needed): both cp.async modes, every case (or those whose name
# contains $2); `random` is eager with the fibers in a random order (not part of `both`).
# Usage: scripts/cuda_emu_attention.sh [lazy|eager|random|both] [filter]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${GS_EMU_DIR:-build/cuda_emu}"
mkdir -p "$OUT"
CUDA_INC="${CUDA_HOME:-/usr/local/cuda}/include"
# Shared-memory qualifiers become host storage: static arrays shared by the block's fibers and
# extern arrays defined by the emulator's k_common.cuh.
CXX="${CXX:-g++}"
FLAGS=(-std=c++20 -O2 -g -Itools/cuda_emu -Isrc -isystem "$CUDA_INC" -Wno-unused-function -Wno-psabi)
# The mma.sync kernels and the sm_90a wgmma kernel (its k_wgmma.cuh is the emulator's).
for src in k_attention k_attention_q8 k_attention_q8_dsplit sm90a/k_attention_wg; do
  name="$(basename "$src")"
  sed -e 's/extern __shared__/extern/g' -e 's/__shared__/static/g' "src/backend/cuda/$src.cu" >"$OUT/${name}_emu.cpp"
  "$CXX" "${FLAGS[@]}" -c "$OUT/${name}_emu.cpp" -o "$OUT/${name}_emu.o"
done
"$CXX" "${FLAGS[@]}" tools/cuda_emu/attn_emu_main.cpp "$OUT/k_attention_emu.o" "$OUT/k_attention_q8_emu.o" "$OUT/k_attention_q8_dsplit_emu.o" "$OUT/k_attention_wg_emu.o" -o "$OUT/attn_emu"
mode="${1:-both}"
rc=0
for m in lazy eager random; do
  if { [ "$mode" = both ] && [ "$m" != random ]; } || [ "$mode" = "$m" ]; then
    echo "== cp.async $m"
    "$OUT/attn_emu" "$m" "${2:-}" || rc=1
  fi
done
exit $rc
