#!/usr/bin/env bash
# Sets everything up and runs every test that needs no GPU (the README's test command; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
if [ -f tests/e2e/package.json ]; then
  (cd tests/e2e && npm install --no-audit --no-fund --loglevel=error)
fi
ctest --test-dir "${GS_BUILD_DIR:-build}" -LE device --output-on-failure -j"$(nproc)"
if [ -x scripts/fuzz.sh ]; then ./scripts/fuzz.sh; fi
