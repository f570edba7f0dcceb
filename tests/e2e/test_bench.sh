#!/usr/bin/env bash
# gemmaserve bench on the shakes pair (CPU or GPU, whichever the build picks): --mtp adds a
# "tg N mtpD" row per tg N with what was drafted and accepted (it was refused as "not
# benchmarked yet"), and --depth-fill zeros reaches a depth without prefilling it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

run() {
  timeout -k 5 300 "$BIN" bench "$@" > "$WORK/out" 2> "$WORK/err" < /dev/null
  local rc=$?
  [[ $rc -eq 0 ]] || fail "bench $*: exit status $rc: $(head -c 400 "$WORK/err")"
}
# field NAME KEY: the value of KEY in the JSON row named NAME.
field() {
  python3 - "$WORK/out" "$1" "$2" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
hit = [r for r in rows if r.get("test") == sys.argv[2]]
if not hit:
    print("missing: " + ", ".join(r.get("test", "?") for r in rows)); sys.exit(1)
v = hit[0][sys.argv[3]]
print(v)
PY
}

run -m "$TARGET" --mtp "$DRAFTER" --draft-max 3 -p 0 -n 24 -r 1 --json
drafted="$(field "tg24 mtp3" drafted)" || fail "no tg24 mtp3 row: $drafted"
accepted="$(field "tg24 mtp3" accepted)" || fail "no accepted count"
tps="$(field "tg24 mtp3" tokens_per_s)" || fail "no tokens_per_s"
[[ "$drafted" -gt 0 ]] || fail "tg24 mtp3 drafted nothing ($drafted)"
[[ "$accepted" -ge 0 && "$accepted" -le "$drafted" ]] || fail "accepted $accepted of $drafted"
python3 -c "import sys; sys.exit(0 if float('$tps') > 0 else 1)" || fail "tokens_per_s $tps"
field "tg24" tokens_per_s > /dev/null || fail "the plain tg24 row is missing"

# --draft-max 16, the most run and serve take (bench refused it: it planned 16 output rows).
run -m "$TARGET" --mtp "$DRAFTER" --draft-max 16 -p 0 -n 20 -r 1 --json
field "tg20 mtp16" drafted > /dev/null || fail "no tg20 mtp16 row"

# A depth of zero K/V: the depth is reached at once (no "filled depth" prefill pass needed),
# and tg / verify / tg mtp run from it.
run -m "$TARGET" --mtp "$DRAFTER" -p 0 -n 4 -d 3000 --verify 3 --depth-fill zeros -r 1 --json
field "tg4 @ d3000" tokens_per_s > /dev/null || fail "no tg4 @ d3000 row: $(cat "$WORK/out" | head -c 400)"
field "verify3 @ d3000" decode_steps > /dev/null || fail "no verify3 @ d3000 row"
field "tg4 mtp4 @ d3000" drafted > /dev/null || fail "no tg4 mtp4 @ d3000 row"

# pp N at a depth where the sliding window (128) + N fill the ring's pages exactly: rolling
# the pass back failed ("the sliding-window ring only holds positions from 1872").
run -m "$TARGET" -p 128 -b 128 -n 0 -d 2000 --depth-fill zeros -r 1 --json
field "pp128 @ d2000" tokens_per_s > /dev/null || fail "no pp128 @ d2000 row"

# tg N (and tg N mtp, 16 prompt tokens and the drafts more) writing more positions past the
# depth than the sliding ring keeps (-b 8: a ring of 256, 127 past the depth) could not be
# rolled back to the depth: "cannot roll back to position 300: the sliding-window ring only
# holds positions from 180" (tg120 mtp4, where plain tg120 passed; plain tg130 too). The depth
# is filled again instead.
run -m "$TARGET" --mtp "$DRAFTER" --draft-max 4 -b 8 -p 0 -n 120 -d 300 --depth-fill zeros -r 1 --json
field "tg120 mtp4 @ d300" drafted > /dev/null || fail "no tg120 mtp4 @ d300 row"
run -m "$TARGET" -b 8 -p 0 -n 130 -d 300 -r 1 --json
field "tg130 @ d300" tokens_per_s > /dev/null || fail "no tg130 @ d300 row"

# The matvec ramp sweep: a row per size and way, and a fit per way.
run --ops --ops-only ramp --quick --device cpu --json
field "q4_K chain fit" seconds > /dev/null || fail "no q4_K chain fit row"
field "q4_K dependent fit" gb_per_s > /dev/null || fail "no q4_K dependent fit row"

# Bad values are refused before anything loads.
# A misspelt --ops-only group ran every group, and --ops-only without --ops ran the model;
# --draft-max without --mtp was ignored.
for bad in "--depth-fill random" "--draft-max 0" "--draft-max 17" "--ops --ops-only matmull" "--ops-only small" \
           "--draft-max 4"; do
  timeout -k 5 60 "$BIN" bench -m "$TARGET" -p 4 -n 0 $bad > "$WORK/out" 2> "$WORK/err" < /dev/null
  [[ $? -ne 0 ]] || fail "bench $bad was accepted"
done
# Sizes whose positions do not fit a sequence (int32) are refused, naming the flags: a depth
# or a pp / tg near 2^31 overflowed the context's size (-d 2147483647 and -p 2147483647
# aborted with std::bad_alloc building a pass of 2^31 tokens; -d 2147483600 --depth-fill
# zeros said "sequence of 8192 positions + 512 exceeds the context of 8192"; -n 2147483647
# ran on into the model's 8192 positions).
for big in "-d 2147483647 -p 0 -n 4" "-d 2147483600 -p 0 -n 4 --depth-fill zeros" "-p 2147483647 -n 0" \
           "-p 0 -n 2147483647" "-d 2147483000 -p 0 -n 0 --verify 1048576"; do
  ( ulimit -v 4000000; timeout -k 5 60 "$BIN" bench -m "$TARGET" -r 1 $big > "$WORK/out" 2> "$WORK/err" < /dev/null )
  rc=$?
  [[ $rc -eq 1 ]] || fail "bench $big: exit status $rc, not a clear error: $(tail -c 300 "$WORK/err")"
  grep -q "more than a sequence holds" "$WORK/err" || fail "bench $big does not say why: $(tail -c 300 "$WORK/err")"
done
# A target given as the drafter is refused, naming the flag.
timeout -k 5 60 "$BIN" bench -m "$TARGET" --mtp "$TARGET" -p 0 -n 2 -r 1 > "$WORK/out" 2> "$WORK/err" < /dev/null
[[ $? -ne 0 ]] || fail "bench --mtp TARGET was accepted"
grep -q -- "--mtp" "$WORK/err" || fail "bench --mtp TARGET does not name --mtp: $(cat "$WORK/err")"
# Each file is opened once (decision 0055): bench opened the target to check it and again to
# load it, and the drafter likewise; serve and run opened the drafter twice. Counted with strace
# where there is one (a split model's other shards are not given here).
if command -v strace > /dev/null && strace -f -e trace=openat -o /dev/null true 2> /dev/null; then
  opens() {  # opens TRACE FILE: how many times the trace opened FILE
    grep -c "openat(.*\"$2\"" "$1"
  }
  timeout -k 5 120 strace -f -e trace=open,openat -o "$WORK/trace" "$BIN" bench -m "$TARGET" --mtp "$DRAFTER" \
    --device cpu -p 0 -n 2 -r 1 > "$WORK/out" 2> "$WORK/err" < /dev/null || fail "bench under strace: $(tail -c 300 "$WORK/err")"
  [[ "$(opens "$WORK/trace" "$TARGET")" == 1 ]] || fail "bench opened the target $(opens "$WORK/trace" "$TARGET") times"
  [[ "$(opens "$WORK/trace" "$DRAFTER")" == 1 ]] || fail "bench opened the drafter $(opens "$WORK/trace" "$DRAFTER") times"
  timeout -k 5 120 strace -f -e trace=open,openat -o "$WORK/trace" "$BIN" run -m "$TARGET" --mtp "$DRAFTER" \
    --device cpu -p hi -n 2 > "$WORK/out" 2> "$WORK/err" < /dev/null || fail "run under strace: $(tail -c 300 "$WORK/err")"
  [[ "$(opens "$WORK/trace" "$TARGET")" == 1 ]] || fail "run opened the target $(opens "$WORK/trace" "$TARGET") times"
  [[ "$(opens "$WORK/trace" "$DRAFTER")" == 1 ]] || fail "run opened the drafter $(opens "$WORK/trace" "$DRAFTER") times"
else
  echo "bench: strace unusable here; the file-open counts are not checked"
fi
echo "bench: ok"
