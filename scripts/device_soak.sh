#!/usr/bin/env bash
# Bug-case 64's host-memory soak (scripts/mem_soak.sh: the shakes pair, GS_SOAK_REQUESTS
# sequential completions of 1-4k-token unique prompts) with the server on the GPU, on a lent
# GPU machine (binaries as in device_run.sh), once per setting of GS_SOAK_RUNS (';'-separated,
# each a binary name in .dev/cuda/bin and environment assignments; default "gemmaserve";
# e.g. "gemmaserve;gemmaserve_old;gemmaserve_old GS_CUDA_GRAPHS=0"). Each run's CSV and
# summary go to $OUT/soak_N.txt; the summaries last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
IFS=';' read -r -a runs <<<"${GS_SOAK_RUNS:-gemmaserve}"
i=0
for run in "${runs[@]}"; do
  i=$((i + 1))
  read -r bin envs <<<"$run"
  # shellcheck disable=SC2086
  (for a in $envs; do export "${a?}"; done
   GS_SOAK_DEVICE=cuda timeout "${GS_SOAK_TIMEOUT:-200}" scripts/mem_soak.sh "$PWD/$DEV/bin/$bin") >"$OUT/soak_$i.txt" 2>&1
  echo "soak $i ($run): exit $? | $(grep -E '^summary|^FAIL' "$OUT/soak_$i.txt" | tr '\n' ' ')"
done
