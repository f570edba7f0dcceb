#!/usr/bin/env bash
# Wrong flags and unusable files: every subcommand exits non-zero (never by a signal) with a
# message on stderr, quickly; a target passed as drafter and the other way round are refused.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

: > "$WORK/empty.gguf"
mkdir "$WORK/dir.gguf"
mkfifo "$WORK/fifo.gguf"  # opening it waited for a writer forever
printf 'hello world\n' > "$WORK/text.gguf"
head -c 100 "$TARGET" > "$WORK/head.gguf"
size="$(stat -c %s "$TARGET")"
head -c $((size - 10)) "$TARGET" > "$WORK/cut.gguf"

# refused NAME ARGS...: exit status 1..123 (an error, not a crash or a hang: serve once hung
# deaf to SIGTERM when its model failed at once) and a message.
refused() {
  local name="$1"
  shift
  timeout -k 5 60 "$BIN" "$@" > "$WORK/out" 2> "$WORK/err" < /dev/null
  local rc=$?
  [[ $rc -ge 1 && $rc -lt 124 ]] || fail "$name: exit status $rc: $(head -c 300 "$WORK/err")"
  [[ -s "$WORK/err" ]] || fail "$name: no message on stderr"
}

for f in empty dir fifo text head cut missing; do
  file="$WORK/$f.gguf"
  refused "inspect $f" inspect "$file"
  refused "run $f" run -m "$file" -p hi -n 2
  refused "tokenize $f" tokenize -m "$file"
  refused "serve $f" serve -m "$file" --port 0
  refused "serve drafter $f" serve -m "$TARGET" --mtp "$file" --port 0
done
# Sampling and batch values the server refuses with a 400 are refused by run too (NaN included).
for bad in "--temperature nan" "--temperature 3" "--top-k -5" "--top-p 7" "--min-p 2" "--repeat-penalty 0" \
           "--ubatch 0" "-t -3" "--draft-p-min 1.5" "--presence-penalty 9"; do
  refused "run $bad" run -m "$TARGET" -p hi -n 2 $bad
done
# The drafter's options without --mtp drafted nothing and said so nowhere (decision 0056).
for bad in "--draft-max 8" "--draft-p-min 0.5" "--no-draft-adaptive" "--draft-window w+1"; do
  refused "run $bad without --mtp" run -m "$TARGET" -p hi -n 2 $bad
  grep -q -- "--mtp" "$WORK/err" || fail "run $bad without --mtp: the message does not name --mtp: $(cat "$WORK/err")"
done
for bad in "--draft-max 8" "--no-draft-adaptive"; do
  refused "serve $bad without --mtp" serve -m "$TARGET" --port 0 $bad
  grep -q -- "--mtp" "$WORK/err" || fail "serve $bad without --mtp: the message does not name --mtp: $(cat "$WORK/err")"
done
refused "run: target as drafter" run -m "$TARGET" --mtp "$TARGET" -p hi -n 2
refused "run: drafter as target" run -m "$DRAFTER" -p hi -n 2
refused "serve: swapped" serve -m "$DRAFTER" --mtp "$TARGET" --port 0

refused "no subcommand"
refused "unknown flag" run -m "$TARGET" -p hi --bogus
refused "run -n negative" run -m "$TARGET" -p hi -n -5
grep -q -- "--n-predict" "$WORK/err" || fail "run -n -5 does not name --n-predict: $(cat "$WORK/err")"
refused "run --draft-max negative" run -m "$TARGET" --mtp "$DRAFTER" -p hi --draft-max -3
refused "run without prompt" run -m "$TARGET"
refused "run bad token list" run -m "$TARGET" --prompt-tokens 1,x
refused "run token list with an empty item" run -m "$TARGET" --prompt-tokens 1,,2
refused "serve with an empty host" serve -m "$TARGET" --host "" --port 0
refused "serve with an empty alias" serve -m "$TARGET" --alias "" --port 0
# Both prompt forms: --prompt-tokens won and -p was dropped without a word.
refused "run -p and --prompt-tokens" run -m "$TARGET" -p hi --prompt-tokens 5,6 -n 2
refused "run --kv-type" run -m "$TARGET" -p hi --kv-type q4_0
# A level spdlog does not know used to switch logging off silently.
refused "serve --log-level" serve -m "$TARGET" --port 0 --log-level loud
# reasoning_format's names only (llama-server's; decision 0034).
refused "serve --reasoning-format" serve -m "$TARGET" --port 0 --reasoning-format raw
grep -q -- "--reasoning-format" "$WORK/err" || fail "serve --reasoning-format raw does not name the flag: $(cat "$WORK/err")"
refused "serve --kv-type" serve -m "$TARGET" --port 0 --kv-type q4_0
grep -q -- "--kv-type" "$WORK/err" || fail "serve --kv-type q4_0 does not name the flag: $(cat "$WORK/err")"
refused "bench --kv-type" bench -m "$TARGET" --kv-type bf16
# -1 wrapped around to an unlimited body size.
refused "serve --max-body-bytes -1" serve -m "$TARGET" --port 0 --max-body-bytes -1
refused "serve --parallel 0" serve -m "$TARGET" --port 0 --parallel 0
refused "serve --port" serve -m "$TARGET" --port 70000
refused "serve empty key" serve -m "$TARGET" --port 0 --api-key ""
refused "serve empty key file" serve -m "$TARGET" --port 0 --api-key-file "$WORK/empty.gguf"
# A key no HTTP client sends as written (a byte outside ASCII) answered every request with a
# 401; it is refused at start naming the file's line (decision 0054).
printf 'sk-one\n# note\nsk-cl\xc3\xa9\n' > "$WORK/keys-utf8"
refused "serve non-ASCII key" serve -m "$TARGET" --port 0 --api-key-file "$WORK/keys-utf8"
grep -q "line 3" "$WORK/err" || fail "a non-ASCII key is not refused naming its line: $(cat "$WORK/err")"
refused "serve non-ASCII --api-key" serve -m "$TARGET" --port 0 --api-key "sk-cl$(printf '\xc3\xa9')"
# Seeds out of range were taken as the nearest bound (INT64_MAX, or INT64_MIN: a random seed)
# or wrapped around (synth --seed -1 was 2^64 - 1).
for bad in 9223372036854775808 -9223372036854775809 -2 1e3 0x10; do
  refused "run --seed $bad" run -m "$TARGET" -p hi -n 1 --seed "$bad"
done
for bad in 18446744073709551616 -1 1.5; do
  refused "synth --seed $bad" synth --preset tiny -o "$WORK/x.gguf" --seed "$bad"
done
refused "synth preset" synth --preset huge -o "$WORK/x.gguf"
# tokenize's flags of one direction in the other changed nothing: --decode --pieces printed the
# text alone, --render-special without --decode was dropped (decision 0051).
for bad in "--decode --pieces" "--decode --parse-special" "--decode --add-special" "--render-special"; do
  refused "tokenize $bad" tokenize -m "$TARGET" $bad
  grep -q -- "${bad##* }" "$WORK/err" || fail "tokenize $bad does not name ${bad##* }: $(cat "$WORK/err")"
done
# A directory as the chat template file wrote a file without a template (the read failed
# silently); --n-embd-out, the assistant's target width, was dropped without a word for a
# target preset.
refused "synth --chat-template dir" synth --preset tiny -o "$WORK/x.gguf" --chat-template "$WORK/dir.gguf"
grep -q -- "--chat-template" "$WORK/err" || fail "synth --chat-template DIR does not name the flag: $(cat "$WORK/err")"
refused "synth --chat-template missing" synth --preset tiny -o "$WORK/x.gguf" --chat-template "$WORK/missing.jinja"
refused "synth --n-embd-out on a target" synth --preset tiny -o "$WORK/x.gguf" --n-embd-out 64
grep -q -- "--n-embd-out" "$WORK/err" || fail "synth --n-embd-out on a target does not name the flag: $(cat "$WORK/err")"
# -1 was the "keep the preset" sentinel: --n-layer -1 wrote the preset's 6 layers.
refused "synth --n-layer -1" synth --preset tiny -o "$WORK/x.gguf" --n-layer -1
# Shapes the loader refuses are refused before a byte is written (--n-layer 100000 was still
# writing after a minute, towards 24 GB of a file the loader refuses; decision 0052).
refused "synth --n-layer 100000" synth --preset tiny -o "$WORK/big.gguf" --n-layer 100000
grep -q "n_layer" "$WORK/err" || fail "synth --n-layer 100000 does not name the field: $(cat "$WORK/err")"
[[ ! -e "$WORK/big.gguf" ]] || fail "synth --n-layer 100000 wrote $WORK/big.gguf"
refused "synth --head-dim 32768" synth --preset tiny -o "$WORK/big.gguf" --head-dim 32768
refused "synth --threads -3" synth --preset tiny -o "$WORK/x.gguf" --threads -3
# A pass never holds more rows than the context: --ubatch 1048576 with -c 64 asked 17 GB of
# pass buffers, and where they did not fit said "the KV cache of 1 slot x 64 positions (0.0 GB)
# does not fit; lower --ctx-size" (decision 0052). Within 2 GB of address space it runs.
(ulimit -v 2000000; timeout -k 5 60 "$BIN" run -m "$TARGET" -p hi -n 2 -c 64 --ubatch 1048576 --device cpu -t 1 \
  > "$WORK/out" 2> "$WORK/err" < /dev/null) || fail "run --ubatch 1048576 -c 64: $(tail -c 300 "$WORK/err")"
# Where the pass buffers are what does not fit, the error names them (it blamed the KV cache
# and said only "lower --ctx-size"; decision 0053).
(ulimit -v 2000000; timeout -k 5 60 "$BIN" run -m "$TARGET" -p hi -n 1 -c 131072 --ubatch 131072 --device cpu -t 1 \
  > "$WORK/out" 2> "$WORK/err" < /dev/null) && fail "run --ubatch 131072 -c 131072 ran within 2 GB"
grep -q "the forward pass buffers for 131072 rows do not fit beside the KV cache" "$WORK/err" \
  && grep -q "lower --ubatch" "$WORK/err" || fail "run with pass buffers too large: $(cat "$WORK/err")"
# A million drafts planned 103 GB of drafter outputs before failing.
refused "run --draft-max huge" run -m "$TARGET" --mtp "$DRAFTER" -p hi --draft-max 1000000
# bench took negative sizes, repetitions, ubatch and threads silently (skipped or clamped);
# a negative depth failed after the baselines as a "negative truncation point".
for bad in "-p -5" "-n -1" "-d -4" "--verify 0" "-r 0" "-r -1" "-b 0" "-t -1" "-t 100000"; do
  refused "bench $bad" bench -m "$TARGET" --device cpu $bad
done
# bench's lists read "1,,2" as 1,2, "5," as 5, "+5" as 5, "010" as 8 and "0x10" as 16 (CLI11's
# own reading); each is refused naming the flag and the item, before anything loads (decision 0053).
for bad in "-p 1,,2" "-n 4," "-d ,4" "--verify +2" "-n 0x10" "-p 1.5" "-d 1;2"; do
  refused "bench $bad" bench -m "$TARGET" --device cpu -r 1 $bad
  grep -q -- "${bad%% *}.*item" "$WORK/err" || fail "bench $bad does not name the flag and item: $(cat "$WORK/err")"
  grep -q "backend:" "$WORK/err" && fail "bench $bad started work before refusing: $(cat "$WORK/err")"
done
# A leading zero is decimal: pp10, not CLI11's octal pp8.
timeout -k 5 60 "$BIN" bench -m "$TARGET" --device cpu -p 010 -n 0 -r 1 --json > "$WORK/out" 2> "$WORK/err" < /dev/null \
  || fail "bench -p 010: $(cat "$WORK/err")"
grep -q '"pp10"' "$WORK/out" || fail "bench -p 010 did not run pp10: $(head -c 600 "$WORK/out")"
refused "run --prompt-tokens +2" run -m "$TARGET" --prompt-tokens +2 -n 1
grep -q "item 1 '+2'" "$WORK/err" || fail "run --prompt-tokens +2 does not name the item: $(cat "$WORK/err")"
# A drafter that does not fit its target was refused by bench only after the calibration
# (copy and GEMM rows) and with another wording than run and serve: it is now checked first,
# with their message (decision 0053).
"$BIN" synth --preset tiny-assistant -o "$WORK/foreign-drafter.gguf" > /dev/null 2>&1 || fail "synth tiny-assistant"
refused "run: a foreign drafter" run -m "$TARGET" --mtp "$WORK/foreign-drafter.gguf" -p hi -n 1
run_err="$(grep "cannot draft for" "$WORK/err")" || fail "run with a foreign drafter: $(cat "$WORK/err")"
timeout -k 5 60 "$BIN" bench -m "$TARGET" --mtp "$WORK/foreign-drafter.gguf" --device cpu -p 4 -n 2 -r 1 --json \
  > "$WORK/out" 2> "$WORK/err" < /dev/null && fail "bench with a foreign drafter was accepted"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["results"] == [], j["results"]' "$WORK/out" \
  || fail "bench with a foreign drafter did benchmark work first: $(head -c 400 "$WORK/out")"
grep -qF "${run_err#*the drafter }" "$WORK/err" || fail "bench and run differ on a foreign drafter: [$run_err] [$(cat "$WORK/err")]"
# A depth or pass whose KV cache cannot be allocated said only "cpu backend: cannot allocate
# 512000065536 bytes" (decision 0060): it names the KV cache, its positions and the flags to lower.
for big in "-d 2000000000 -p 4 -n 0" "-p 2000000000 -n 0"; do
  refused "bench $big" bench -m "$TARGET" --device cpu -r 1 $big
  grep -q "the KV cache of 1 sequence x 20000000[0-9][0-9] positions" "$WORK/err" && grep -q "lower -d, -p, -n or --verify" "$WORK/err" \
    || fail "bench $big: a KV cache too large does not say why: $(cat "$WORK/err")"
done
# bench without -m set up the backend and printed the table's header on stdout before it said
# that it needs one (decision 0062).
for args in "-p 8" "--mtp $DRAFTER -p 8" "--device cpu -n 4"; do
  refused "bench $args (no -m)" bench $args
  grep -q -- "needs -m" "$WORK/err" || fail "bench $args: does not say it needs -m: $(cat "$WORK/err")"
  grep -q "backend:" "$WORK/err" && fail "bench $args started work before refusing: $(cat "$WORK/err")"
  [[ -s "$WORK/out" ]] && fail "bench $args printed before refusing: $(head -c 300 "$WORK/out")"
done
# A drafter given to bench as the model said only "a KV cache belongs to a target model".
refused "bench: drafter as target" bench -m "$DRAFTER" --device cpu -p 4 -n 0 -r 1
grep -q "MTP drafter" "$WORK/err" || fail "bench -m DRAFTER does not say it is a drafter: $(cat "$WORK/err")"
# A KV cache that cannot be allocated said only "cannot allocate N bytes": it now says how
# many slots of how many positions, and what to lower.
refused "serve: KV too large" serve -m "$TARGET" --port 0 --ctx-size 2000000000 --parallel 4
grep -q "4 slots x 2000000000 positions" "$WORK/err" && grep -q "lower --ctx-size" "$WORK/err" \
  || fail "serve with a KV cache too large does not say why: $(cat "$WORK/err")"
# With one slot (run, or serve --parallel 1) there is no --parallel to lower: run has no such
# flag, and serve's cannot go below 1 (both said "lower --ctx-size ... or --parallel").
for cmd in "run -p hi -n 1 -c 2000000000" "serve --port 0 --ctx-size 2000000000 --parallel 1"; do
  refused "${cmd%% *}: KV too large, one slot" $cmd -m "$TARGET"
  grep -q "1 slot x 2000000000 positions" "$WORK/err" && grep -q "lower --ctx-size" "$WORK/err" \
    && ! grep -q -- "--parallel" "$WORK/err" || fail "$cmd: a KV cache too large: $(cat "$WORK/err")"
done
# One generated token comes from the prefill alone: run printed "generated 1 tokens at 0.00
# tokens/s" (breaker round 17).
timeout -k 5 120 "$BIN" run -m "$TARGET" -p ROMEO: -n 1 --device cpu > "$WORK/out" 2> "$WORK/err" < /dev/null \
  || fail "run -n 1: exit status $?: $(head -c 300 "$WORK/err")"
grep -q "generated 1 token by the prefill alone" "$WORK/err" && ! grep -q "0.00 tokens/s" "$WORK/err" \
  || fail "run -n 1 reports a rate it did not measure: $(cat "$WORK/err")"
echo "cli errors: ok"
