#!/usr/bin/env bash
# `gemmaserve tokenize`: ids, --json, --parse-special, --decode, errors; on the full Gemma 4
# vocabulary and on the shipped model's cut-down one.
set -euo pipefail
BIN="$1"
SHARED="${GS_SHARED_DIR:?}"
VOCAB="$SHARED/test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf"
SHAKES="$SHARED/models/shakes-target.gguf"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect NAME GOT WANT
  [[ "$2" == "$3" ]] || fail "$1: got [$2], want [$3]"
}

expect "plain ids" "$(printf 'Hello world' | "$BIN" tokenize -m "$VOCAB")" "9259 1902"
expect "json" "$(printf 'Hello, world!' | "$BIN" tokenize -m "$VOCAB" --json)" '{"ids":[9259,236764,1902,236888]}'
expect "bos" "$(printf 'Hello world' | "$BIN" tokenize -m "$VOCAB" --add-special)" "2 9259 1902"
expect "parse special" "$(printf '<|turn>user\nHi<turn|>' | "$BIN" tokenize -m "$VOCAB" --parse-special)" \
  "105 2364 107 10979 106"
expect "specials as text" "$(printf '<turn|>' | "$BIN" tokenize -m "$VOCAB")" "236820 887 111038"
expect "user-defined always" "$(printf '<|channel>' | "$BIN" tokenize -m "$VOCAB")" "100"
expect "decode" "$(echo '9259 1902' | "$BIN" tokenize -m "$VOCAB" --decode)" "Hello world"
expect "decode json" "$(echo '{"ids":[105,2364]}' | "$BIN" tokenize -m "$VOCAB" --decode --json --render-special)" \
  '{"text":"<|turn>user"}'
expect "decode list" "$(echo '[9259, 1902]' | "$BIN" tokenize -m "$VOCAB" --decode)" "Hello world"

# Round trip of a UTF-8 line through both directions.
text='naïve café — 日本語 😀 	tabs  and  spaces'
ids="$(printf '%s' "$text" | "$BIN" tokenize -m "$VOCAB")"
expect "round trip" "$(echo "$ids" | "$BIN" tokenize -m "$VOCAB" --decode)" "$text"

# The shipped model's cut-down vocabulary gives the same text back.
ids="$(printf 'ROMEO:\nBut soft, what light' | "$BIN" tokenize -m "$SHAKES")"
expect "shakes round trip" "$(echo "$ids" | "$BIN" tokenize -m "$SHAKES" --decode)" $'ROMEO:\nBut soft, what light'

# --pieces: one line per id, whatever the piece (decision 0073): a newline piece printed as
# itself split the line; control bytes and the backslash are escaped.
expect "pieces" "$(printf 'ROMEO:\n\tx\\' | "$BIN" tokenize -m "$VOCAB" --pieces | cut -f2 | tr '\n' '|')" \
  'ROM|EO|:|\n|\t|x|\\|'
n_lines="$(printf 'a\n\nb\r\n' | "$BIN" tokenize -m "$VOCAB" --pieces | wc -l)"
expect "pieces lines" "$n_lines" "$(printf 'a\n\nb\r\n' | "$BIN" tokenize -m "$VOCAB" | wc -w)"

# Errors: a clear message and a non-zero status, never a crash.
if echo '1 x' | "$BIN" tokenize -m "$VOCAB" --decode 2>/dev/null; then fail "bad id accepted"; fi
if echo '99999999' | "$BIN" tokenize -m "$VOCAB" --decode 2>/dev/null; then fail "out-of-range id accepted"; fi
if printf 'x' | "$BIN" tokenize -m /dev/null 2>/dev/null; then fail "non-GGUF accepted"; fi
# A JSON id above INT64_MAX is refused under its own digits (it wrapped to -1 and the error
# named "token -1", an id that was never sent).
err="$(echo '[18446744073709551615]' | "$BIN" tokenize -m "$VOCAB" --decode 2>&1 >/dev/null || true)"
[[ "$err" == *"id 18446744073709551615 is out of range"* ]] || fail "huge JSON id: got [$err]"
err="$(echo '{"ids":[9223372036854775808]}' | "$BIN" tokenize -m "$VOCAB" --decode 2>&1 >/dev/null || true)"
[[ "$err" == *"id 9223372036854775808 is out of range"* ]] || fail "JSON id 2^63: got [$err]"
# A malformed id list is refused naming the item (decision 0053): "1,,2", ",1", "1," and "+1"
# were read as ids (1 2, 1, 1, 1). "1, 2" and a trailing newline stay one list.
expect "decode comma space" "$(echo '9259, 1902' | "$BIN" tokenize -m "$VOCAB" --decode)" "Hello world"
for bad in '9259,,1902:item 2 is empty' ',9259:item 1 is empty' '9259,:item 2 is empty' "+9259:item 1 '+9259'" \
           "0x10:item 1 '0x10'" "9259 1902.0:item 2 '1902.0'"; do
  input="${bad%%:*}"
  want="${bad#*:}"
  err="$(printf '%s\n' "$input" | "$BIN" tokenize -m "$VOCAB" --decode 2>&1 >/dev/null)" \
    && fail "decode of [$input] accepted"
  [[ "$err" == *"$want"* ]] || fail "decode of [$input]: got [$err], want [$want]"
done
echo "tokenize CLI: all checks passed"
