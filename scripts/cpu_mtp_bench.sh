#!/usr/bin/env bash
# The shakes pair's 8 README prompts on the CPU, greedy, 200 tokens, draft_max 4, each run
# without and with the MTP drafter (interleaved, same process settings): drafted, accepted,
# acceptance rate and decode speed, next to llama.cpp's 860 of 2888. Usage:
#   [MTP_ARGS="--draft-p-min 0.3"] scripts/cpu_mtp_bench.sh [BUILD_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build}/src/cli/gemmaserve"
THREADS="${2:-0}"
SHARED="${GS_SHARED_DIR:-../shared}"
T="$SHARED/models/shakes-target.gguf"
A="$SHARED/models/shakes-assistant.gguf"
prompts=($'ROMEO:' $'JULIET:\nO' $'First Citizen:\nWe are' $'KING HENRY:' $'To be, or not' \
         $'MENENIUS:\nWhat' $'Now is the winter' $'DUKE VINCENTIO:\n')
run() { "$BIN" run -m "$T" -p "$1" -n 200 --temperature 0 -t "$THREADS" --json "${@:2}"; }
printf '%-24s %8s %8s %6s %10s %10s %6s\n' prompt drafted accepted rate plain_t/s mtp_t/s same
tot_d=0; tot_a=0; tot_plain_ms=0; tot_mtp_ms=0; tot_plain_n=0; tot_mtp_n=0
for p in "${prompts[@]}"; do
  plain=$(run "$p")
  mtp=$(run "$p" --mtp "$A" --draft-max 4 ${MTP_ARGS:-})
  line=$(python3 - "$plain" "$mtp" "$p" <<'PY'
import json, sys
a, b, p = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
rate = b["accepted"] / b["drafted"] if b["drafted"] else 0
same = "yes" if a["tokens"] == b["tokens"] else "NO"
print("\t".join([p.encode("unicode_escape").decode(), str(b["drafted"]), str(b["accepted"]), f"{rate:.2f}",
                 f'{a["tokens_per_second"]:.1f}', f'{b["tokens_per_second"]:.1f}', same, f'{a["decode_ms"]:.3f}',
                 f'{b["decode_ms"]:.3f}', str(len(a["tokens"]) - 1), str(len(b["tokens"]) - 1)]))
PY
)
  IFS=$'\t' read -r name d acc rate ps ms same pms mms pn mn <<<"$line"
  printf '%-24s %8s %8s %6s %10s %10s %6s\n' "$name" "$d" "$acc" "$rate" "$ps" "$ms" "$same"
  tot_d=$((tot_d + d)); tot_a=$((tot_a + acc))
  tot_plain_ms=$(python3 -c "print($tot_plain_ms + $pms)"); tot_mtp_ms=$(python3 -c "print($tot_mtp_ms + $mms)")
  tot_plain_n=$((tot_plain_n + pn)); tot_mtp_n=$((tot_mtp_n + mn))
done
python3 - <<PY
d, a = $tot_d, $tot_a
plain = 1000 * $tot_plain_n / $tot_plain_ms
mtp = 1000 * $tot_mtp_n / $tot_mtp_ms
print(f"{'all':<24} {d:8d} {a:8d} {a / d:6.3f} {plain:10.1f} {mtp:10.1f}")
print(f"llama.cpp (README):            2888      860  0.298")
print(f"decode speed with the drafter over without: {mtp / plain:.2f}x")
PY
