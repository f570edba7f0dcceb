#!/usr/bin/env bash
# Sets everything up and starts the server on the bundled default model (the README's first command).
# Extra arguments go to `gemmaserve serve` and replace the defaults they name (--port 9000).
# GS_RUN_DRY_RUN=1 prints the serve command line, one argument a line, and does nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

# given FLAG...: whether the user's arguments set one of the FLAGs (as "--flag v" or "--flag=v").
given() {
  local a f
  for a in "${user_args[@]}"; do
    for f in "$@"; do
      [[ "$a" == "$f" || "$a" == "$f="* ]] && return 0
    done
  done
  return 1
}

user_args=("$@")
args=()
given -m --model || args+=(-m models/shakes-target.gguf)
given -m --model --mtp || args+=(--mtp models/shakes-assistant.gguf)
# --draft-max only beside a drafter: serve refuses it without --mtp (-m other.gguf alone).
if { ! given -m --model || given --mtp; } && ! given --draft-max; then args+=(--draft-max 4); fi
given --host || args+=(--host 127.0.0.1)
given --port || args+=(--port 8080)
cmd=(./build/src/cli/gemmaserve serve "${args[@]}" "${user_args[@]}")

if [[ "${GS_RUN_DRY_RUN:-0}" == 1 ]]; then
  printf '%s\n' "${cmd[@]}"
  exit 0
fi
./scripts/setup.sh
./scripts/build.sh
exec "${cmd[@]}"
