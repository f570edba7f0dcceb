# Sourced by the scripts that run prebuilt binaries on a lent GPU machine (device_run.sh,
# device_final.sh, device_ab_env.sh), from the repository root: where the carried binaries,
# libraries and shared data are (.dev/cuda, see docs/perf-notes.md "Running on the device
# machine"), where logs go ($OUT), and the 31B-shaped file they synthesize.
DEV=.dev/cuda
OUT="${OUT:-/tmp/gs-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$DEV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GS_SHARED_DIR="$PWD/$DEV/shared"
export GS_DEVICE_BIN="$PWD/$DEV/bin"
MODEL_31B=/tmp/gemma4-31b-synth-q4_k_m.gguf
[ -f "$DEV/BUILD_INFO" ] && echo "binaries: $(cat "$DEV/BUILD_INFO")"
# The binaries travel gzipped (device_pack.sh) to keep the carried tree under 64 MiB.
for gz in "$DEV"/bin/*.gz; do
  [ -e "$gz" ] && gunzip -kf "$gz" && chmod +x "${gz%.gz}"
done
