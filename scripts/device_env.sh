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
DRAFTER_31B=/tmp/gemma4-31b-synth-assistant.gguf  # `synth --preset 31b-assistant` (random weights)
# synth_31b_pair: writes MODEL_31B and DRAFTER_31B unless they are there (log: $OUT/synth.log).
synth_31b_pair() {
  local bin="$PWD/$DEV/bin/gemmaserve"
  { [ -f "$MODEL_31B" ] || "$bin" synth --preset 31b -o "$MODEL_31B" --quiet; } >>"$OUT/synth.log" 2>&1 &&
    { [ -f "$DRAFTER_31B" ] || "$bin" synth --preset 31b-assistant -o "$DRAFTER_31B" --quiet; } >>"$OUT/synth.log" 2>&1 ||
    { echo "synth failed: $(tail -3 "$OUT/synth.log")"; return 1; }
}
[ -f "$DEV/BUILD_INFO" ] && echo "binaries: $(cat "$DEV/BUILD_INFO")"
# The binaries travel gzipped (device_pack.sh) to keep the carried tree under 64 MiB.
for gz in "$DEV"/bin/*.gz; do
  [ -e "$gz" ] && gunzip -kf "$gz" && chmod +x "${gz%.gz}"
done
