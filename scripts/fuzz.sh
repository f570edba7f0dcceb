#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs them for a
# bounded time: gguf_fuzz (the GGUF reader; seeds: the shared golden files plus small hostile
# files) for 1/2 of it, quant_fuzz (quantizers and dequantizers on arbitrary bytes) for 1/4,
# text_fuzz (tokenizer round trips, incremental detokenizer, output parser over any chunking, on
# the shared Gemma 4 vocabulary) for 1/4 less json_fuzz's 1/8 (the structured-output grammar on
# hostile schemas and bytes), which takes its time from gguf_fuzz's half.
#   GS_FUZZ_SECONDS   total run time in seconds (default 60; 0 builds only)
#   GS_FUZZ_BUILD_DIR build directory (default build-fuzz)
#   GS_SHARED_DIR     the shared/ folder (default ../shared)
# Prints executions/s and findings per target; exits non-zero when a fuzzer finds a crash,
# leak, timeout or out-of-memory input (saved under $GS_FUZZ_BUILD_DIR/findings/).
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
if ! cmake --build "$build" --target gguf_fuzz quant_fuzz text_fuzz json_fuzz -j"$(nproc)" >"$build/build.log" 2>&1; then
  tail -40 "$build/build.log" >&2
  echo "fuzz: build failed" >&2
  exit 1
fi
[ "$seconds" -gt 0 ] || exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
findings="$build/findings"
mkdir -p "$findings" "$work/gguf" "$work/quant" "$work/text" "$work/json"
rm -f "$findings"/*
if compgen -G "$shared/golden/*.gguf" >/dev/null; then
  cp "$shared"/golden/*.gguf "$work/gguf"/
else
  echo "fuzz: $shared/golden/*.gguf not found; fuzzing from the hand-made seeds only" >&2
fi
python3 tools/fuzz/make_seeds.py "$work/gguf"
python3 tools/fuzz/make_seeds.py --text "$work/text"
# Structured output: a schema, NUL, then output bytes.
printf '%s\0%s' '{"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"enum":[1,"x",null]}},"required":["a"]}' \
  '{"a": "\u00e9", "b": 1}' >"$work/json/schema"
printf '%s\0%s' '{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"$ref":"#/$defs/n"}' '[[],[[]]]' \
  >"$work/json/recursive"
printf '%s\0%s' 'x' '{"k": [1.5e3, true, "\ud83d\ude00"]}' >"$work/json/any"
printf '%s\0%s' '!{"type":"object","properties":{"city":{"type":"string"},"n":{"enum":[1,2]}}}' \
  '{city:<|"|>a <b<|"|>,n:2}' >"$work/json/call"
# Patterns (text/regex_dfa.h), formats and property counts.
printf '%s\0%s' '{"type":"object","properties":{"id":{"type":"string","pattern":"^[A-Z]{2,3}-\\d{1,4}(x|yz)*$","maxLength":9},"d":{"type":"string","format":"date-time"}},"minProperties":1,"maxProperties":2}' \
  '{"id": "AB-12xyz", "d": "2024-02-29T23:59:59Z"}' >"$work/json/pattern"
printf '%s\0%s' '!{"type":"object","properties":{"u":{"type":"string","format":"uuid"},"e":{"type":"string","pattern":"[^<]+@[a-z]+\\.(com|org)"}}}' \
  '{u:<|"|>123e4567-e89b-12d3-a456-426614174000<|"|>,e:<|"|>a@b.org<|"|>}' >"$work/json/call_pattern"
vocab="$shared/test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf"
# Inputs of past findings stay in the corpus so a regression shows at once.
for t in gguf quant text json; do
  if compgen -G "tools/fuzz/regressions/${t}_fuzz/*" >/dev/null; then cp tools/fuzz/regressions/${t}_fuzz/* "$work/$t"/; fi
done

failed=0
# run TARGET SECONDS MAX_LEN CORPUS
run() {
  local target="$1" secs="$2" max_len="$3" corpus="$4" log="$build/$1.log" rc dict=()
  if [ -f "tools/fuzz/$target.dict" ]; then dict=(-dict="tools/fuzz/$target.dict"); fi
  echo "fuzz: $target for ${secs}s on $(ls "$corpus" | wc -l) seeds"
  set +e
  # Seeds longer than max_len are cut to it: the metadata and tensor directory of the
  # golden files come first, which is what the reader parses.
  GS_FUZZ_VOCAB="$vocab" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
    "$build/tools/fuzz/$target" "$corpus" -max_total_time="$secs" -max_len="$max_len" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/$target-" "${dict[@]}" >"$log" 2>&1
  rc=$?
  set -e
  local execs rate cov found
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo "?")
  found=$(find "$findings" -type f -name "$target-*" | wc -l)
  echo "fuzz: $target: ${execs} executions, ${rate} exec/s, coverage ${cov} edges, findings: ${found} (log: $log)"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $target FAILED (exit $rc); inputs in $findings:" >&2
    ls -l "$findings" >&2
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -20 >&2
    failed=1
  fi
}
quant_secs=$((seconds / 4))
text_secs=$((seconds / 4))
if [ ! -f "$vocab" ]; then
  echo "fuzz: $vocab not found; text_fuzz not run, its time goes to gguf_fuzz" >&2
  text_secs=0
fi
json_secs=$((seconds / 8))
run gguf_fuzz $((seconds - quant_secs - text_secs - json_secs)) 262144 "$work/gguf"
[ "$quant_secs" -gt 0 ] && run quant_fuzz "$quant_secs" 4096 "$work/quant"
# Texts of a few KB: each input is encoded, decoded and parsed several times.
[ "$text_secs" -gt 0 ] && run text_fuzz "$text_secs" 4096 "$work/text"
[ "$json_secs" -gt 0 ] && run json_fuzz "$json_secs" 4096 "$work/json"
exit "$failed"
