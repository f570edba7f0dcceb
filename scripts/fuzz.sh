#!/usr/bin/env bash
# Builds the libFuzzer GGUF target (clang, ASan + UBSan) in build-fuzz/ and runs it for a
# bounded time on a seed corpus of the shared golden files plus small hostile files.
#   GS_FUZZ_SECONDS   run time in seconds (default 60; 0 builds only)
#   GS_FUZZ_BUILD_DIR build directory (default build-fuzz)
#   GS_SHARED_DIR     the shared/ folder (default ../shared)
# Prints executions/s and findings; exits non-zero when the fuzzer finds a crash, leak,
# timeout or out-of-memory input (saved under $GS_FUZZ_BUILD_DIR/findings/).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${GS_FUZZ_SECONDS:-60}"
build="${GS_FUZZ_BUILD_DIR:-build-fuzz}"
shared="${GS_SHARED_DIR:-../shared}"

for tool in clang clang++ cmake ninja python3; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (run scripts/setup.sh)" >&2; exit 1; }
done

sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-unknown-warning-option"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$sanitize" \
  -DGS_WITH_FUZZ=ON -DGS_WITH_CUDA=OFF -DBUILD_TESTING=OFF >/dev/null
if ! cmake --build "$build" --target gguf_fuzz -j"$(nproc)" >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log" >&2
  echo "fuzz: build failed" >&2
  exit 1
fi
[ "$seconds" -gt 0 ] || exit 0

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
if compgen -G "$shared/golden/*.gguf" >/dev/null; then
  cp "$shared"/golden/*.gguf "$corpus"/
else
  echo "fuzz: $shared/golden/*.gguf not found; fuzzing from the hand-made seeds only" >&2
fi
python3 tools/fuzz/make_seeds.py "$corpus"
findings="$build/findings"
mkdir -p "$findings"
rm -f "$findings"/*
log="$build/fuzz.log"

echo "fuzz: gguf_fuzz for ${seconds}s on $(ls "$corpus" | wc -l) seeds"
set +e
# Seeds longer than max_len are cut to it: the metadata and tensor directory of the golden
# files come first, which is what the reader parses.
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
  "$build/tools/fuzz/gguf_fuzz" "$corpus" -max_total_time="$seconds" -max_len=262144 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1
rc=$?
set -e

execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo "?")
n_found=$(find "$findings" -type f | wc -l)
echo "fuzz: ${execs} executions, ${rate} exec/s, coverage ${cov} edges, findings: ${n_found} (log: $log)"
if [ "$rc" -ne 0 ] || [ "$n_found" -ne 0 ]; then
  echo "fuzz: FAILED (exit $rc); inputs in $findings:" >&2
  ls -l "$findings" >&2
  grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -20 >&2
  exit 1
fi
