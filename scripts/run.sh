#!/usr/bin/env bash
# Sets everything up and starts the server on the bundled default model (the README's first command).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
exec ./build/src/cli/gemmaserve serve -m models/shakes-target.gguf --mtp models/shakes-assistant.gguf \
  --draft-max 4 --host 127.0.0.1 --port 8080 "$@"
