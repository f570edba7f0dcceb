#!/usr/bin/env bash
# End to end: `gemmaserve synth` writes files that `gemmaserve inspect` (text and --json)
# reads back with the expected inventory; bad input gives a non-zero exit and a message.
# Usage: test_synth_inspect.sh PATH/TO/gemmaserve
set -uo pipefail
BIN="${1:?usage: test_synth_inspect.sh PATH/TO/gemmaserve}"
SHARED="${GS_SHARED_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# synth: tiny target and assistant, with and without a type override.
check "synth tiny" "'$BIN' synth --preset tiny -o '$WORK/tiny.gguf' --seed 3 >'$WORK/synth.out' 2>&1"
check "synth prints a summary" "grep -q 'wrote .*86 tensors' '$WORK/synth.out'"
check "synth tiny-assistant q8_0" "'$BIN' synth --preset tiny-assistant --type q8_0 -o '$WORK/asst.gguf' --quiet >/dev/null 2>&1"
check "synth 31b override" "'$BIN' synth --preset 31b --n-embd 256 --n-layer 3 --n-ff 512 --n-vocab 600 --head-dim 64 --head-dim-swa 32 --n-head 4 --n-head-kv 1 --n-head-kv-swa 2 -o '$WORK/small31b.gguf' --quiet >/dev/null 2>&1"
check "synth is deterministic" "'$BIN' synth --preset tiny -o '$WORK/tiny2.gguf' --seed 3 --threads 1 --quiet >/dev/null 2>&1 && cmp -s '$WORK/tiny.gguf' '$WORK/tiny2.gguf'"

# inspect, text.
"$BIN" inspect "$WORK/tiny.gguf" >"$WORK/inspect.txt" 2>&1
check "inspect exits 0" "[ $? -eq 0 ]"
check "inspect shows the architecture" "grep -q 'general.architecture .*\"gemma4\"' '$WORK/inspect.txt'"
check "inspect shortens arrays" "grep -q 'tokenizer.ggml.tokens .*\\.\\.\\.\\] (1024 items)' '$WORK/inspect.txt'"
check "inspect lists tensors" "grep -q 'blk.5.attn_q.weight' '$WORK/inspect.txt'"
check "inspect prints the parameter count" "grep -q '^parameters: ' '$WORK/inspect.txt'"

# inspect --json, checked with python's json module.
"$BIN" inspect --json "$WORK/asst.gguf" >"$WORK/asst.json" 2>"$WORK/asst.err"
check "inspect --json exits 0" "[ $? -eq 0 ]"
check "inspect --json content" "python3 - '$WORK/asst.json' <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
meta = {m['key']: m for m in j['metadata']}
assert meta['general.architecture']['value'] == 'gemma4-assistant'
assert meta['gemma4-assistant.embedding_length_out']['value'] == 128
tok = meta['tokenizer.ggml.tokens']
assert tok['count'] == 1024 and len(tok['value']) == 8 and tok['value'][2] == '<bos>'
names = [t['name'] for t in j['tensors']]
assert 'nextn.pre_projection.weight' in names and 'blk.0.attn_k.weight' not in names
assert j['totals']['n_tensors'] == len(names) == 49
assert sum(v['n_tensors'] for v in j['totals']['by_type'].values()) == 49
assert j['totals']['n_params'] == sum(t['n_elements'] for t in j['tensors'])
assert set(j['totals']['by_type']) == {'f32', 'q8_0'}
PY"

# The shared goldens open too.
for f in "$SHARED/golden/quant-vectors.gguf" "$SHARED/models/shakes-target.gguf"; do
  check "inspect $(basename "$f")" "'$BIN' inspect --json '$f' | python3 -c 'import json,sys; json.load(sys.stdin)'"
done

# A split model (llama.cpp gguf-split's layout): synth writes the shards, inspect shows the
# model whole from its first shard, run gives the whole file's greedy tokens (the drafter split
# too), and a missing shard is refused by its path.
check "synth --split-max-tensors" "'$BIN' synth --preset tiny -o '$WORK/split.gguf' --seed 3 --split-max-tensors 30 >'$WORK/split.out' 2>&1"
check "synth names the shards" "grep -q 'wrote 3 shards .*split-00001-of-00003.gguf' '$WORK/split.out' && [ -f '$WORK/split-00003-of-00003.gguf' ]"
check "synth a split drafter" "'$BIN' synth --preset tiny-assistant -o '$WORK/asplit.gguf' --split-max-tensors 20 --quiet >/dev/null 2>&1 && [ -f '$WORK/asplit-00003-of-00003.gguf' ]"
check "synth the drafter whole" "'$BIN' synth --preset tiny-assistant -o '$WORK/awhole.gguf' --quiet >/dev/null 2>&1"
"$BIN" inspect "$WORK/split-00001-of-00003.gguf" >"$WORK/split.txt" 2>&1
check "inspect a split model" "grep -q 'split model of 3 shards' '$WORK/split.txt' && grep -q 'blk.5.attn_q.weight' '$WORK/split.txt'"
"$BIN" inspect --json "$WORK/split-00002-of-00003.gguf" >"$WORK/split.json" 2>&1
check "inspect --json a split model from shard 2" "python3 - '$WORK/split.json' '$WORK/tiny.gguf' <<'PY'
import json, subprocess, sys
j = json.load(open(sys.argv[1]))
assert j['file'].endswith('split-00001-of-00003.gguf'), j['file']
assert [s['n_tensors'] for s in j['shards']] == [30, 30, 26], j['shards']
assert j['totals']['n_tensors'] == len(j['tensors']) == 86
assert [t['shard'] for t in j['tensors']] == [1] * 30 + [2] * 30 + [3] * 26
PY"
greedy() { "$BIN" run -m "$1" "${@:2}" -p 'the cat' -n 12 --temperature 0 --ignore-eos --json -t 2 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])'; }
whole_tokens="$(greedy "$WORK/tiny.gguf")"
check "run the whole file" "[ -n '$whole_tokens' ]"
check "run a split model: the same tokens" "[ \"\$(greedy '$WORK/split-00001-of-00003.gguf')\" = '$whole_tokens' ]"
check "run a split model and drafter: the same tokens" "[ \"\$(greedy '$WORK/split-00001-of-00003.gguf' --mtp '$WORK/asplit-00001-of-00003.gguf')\" = '$whole_tokens' ]"
# run's text and its summary on one stream (2>&1 into a pipe, as `| tee log` has it): the
# summary begins a line of its own (it ran on from the text's last line: decision 0073), and
# says "1 thread".
"$BIN" run -m "$WORK/tiny.gguf" -p 'the cat' -n 6 --temperature 0 --ignore-eos -t 1 2>&1 | cat >"$WORK/run.both"
check "run's summary starts its own line" "grep -q '^prompt [0-9]* tokens in .* generated 6 tokens .*(cpu (1 thread)), finish: length$' '$WORK/run.both'"
rm -f "$WORK/split-00002-of-00003.gguf"
"$BIN" run -m "$WORK/split-00001-of-00003.gguf" -p hi -n 2 >/dev/null 2>"$WORK/shard.err"
check "run names a missing shard" "[ $? -ne 0 ] && grep -q 'split-00002-of-00003.gguf.*missing' '$WORK/shard.err'"

# Bad input: non-zero exit, the reason on stderr, nothing on stdout.
head -c 1000 "$WORK/tiny.gguf" >"$WORK/cut.gguf"
"$BIN" inspect "$WORK/cut.gguf" >"$WORK/cut.out" 2>"$WORK/cut.err"
check "inspect truncated file fails" "[ $? -ne 0 ]"
check "inspect names the field and offset" "grep -q 'at byte' '$WORK/cut.err' && [ ! -s '$WORK/cut.out' ]"
"$BIN" inspect "$WORK/missing.gguf" >/dev/null 2>"$WORK/missing.err"
check "inspect missing file fails" "[ $? -ne 0 ] && grep -q 'cannot open' '$WORK/missing.err'"
"$BIN" synth --preset huge -o "$WORK/x.gguf" >/dev/null 2>"$WORK/preset.err"
check "synth rejects an unknown preset" "[ $? -ne 0 ] && grep -q 'unknown preset' '$WORK/preset.err'"
"$BIN" synth --preset tiny --n-head-kv-swa 3 -o "$WORK/x.gguf" >/dev/null 2>"$WORK/dims.err"
check "synth rejects inconsistent heads" "[ $? -ne 0 ] && grep -q 'n_head_kv_swa' '$WORK/dims.err'"
# The config's own "synth: " prefix is not repeated after the command's (decision 0073).
check "synth names itself once" "grep -q '^gemmaserve synth: n_head' '$WORK/dims.err' && ! grep -q 'synth: synth:' '$WORK/dims.err'"
"$BIN" synth --preset tiny --type iq2_xxs -o "$WORK/x.gguf" >/dev/null 2>"$WORK/type.err"
check "synth rejects an unsupported type" "[ $? -ne 0 ] && grep -q 'iq2_xxs' '$WORK/type.err'"
"$BIN" synth --preset tiny -o /nonexistent-dir/x.gguf >/dev/null 2>"$WORK/io.err"
check "synth reports an unwritable path" "[ $? -ne 0 ] && grep -q 'cannot create' '$WORK/io.err'"

echo "synth/inspect e2e: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
