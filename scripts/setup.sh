#!/usr/bin/env bash
# Installs everything gemmaserve needs to build and test, from Debian packages only (Debian 12;
# the names are those of Debian 13 too: libclang-rt-dev is the default clang's runtime, whose
# versioned name, libclang-rt-14-dev on 12, Debian 13 does not have).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates
  clang libclang-rt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libspdlog-dev libfmt-dev libssl-dev
  prometheus python3
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node + npm for the end-to-end test with the official openai client; keep an existing node
# (Debian's nodejs without its npm gets the npm package; another node brings its own npm).
if ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs npm)
elif ! command -v npm >/dev/null 2>&1 && dpkg-query -W -f='${Status}' nodejs 2>/dev/null | grep -q "install ok installed"; then
  missing+=(npm)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ -n "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
    echo "setup: these Debian packages are missing and this is not root, with no sudo to install them:" >&2
    echo "setup: run this script as root once, or install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi
