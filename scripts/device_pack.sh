#!/usr/bin/env bash
# Assembles .dev/cuda for a lent GPU machine (docs/perf-notes.md, "Running on the device
# machine"): the CUDA-enabled binaries of a build here (gzipped; scripts/device_env.sh unpacks
# them there), the Debian libraries they link that the device image (Ubuntu 24.04, CUDA 13.0,
# no -dev packages) lacks, and the shared data the device tests read. Then a device call
# carries `.dev` and runs scripts/device_*.sh.
#   scripts/device_pack.sh [build dir, default build]
# To A/B against an older build, copy that build's packed .dev/cuda/bin/gemmaserve.gz aside
# first and put it back after packing under another name (e.g. gemmaserve_old.gz): every .gz
# in bin/ is unpacked on the device, and device_ab_depth.sh runs it with GS_AB_BIN=gemmaserve_old.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
DEV=.dev/cuda
mkdir -p "$DEV/bin" "$DEV/lib" "$DEV/shared/golden"
grep -qx '/.dev/' .gitignore || echo '/.dev/' >>.gitignore
cp -f "$BUILD/src/cli/gemmaserve" "$DEV/bin/gemmaserve"
cp -f "$BUILD/tests/gs_test_cuda" "$DEV/bin/gs_test_cuda"
strip --strip-debug "$DEV/bin/gemmaserve" "$DEV/bin/gs_test_cuda" 2>/dev/null || true
# Libraries from Debian's packages (not glibc/libstdc++, which Ubuntu 24.04 has newer, and not
# the CUDA toolkit's, which the device has).
for bin in "$DEV/bin/gemmaserve" "$DEV/bin/gs_test_cuda"; do
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|libdl.so*|librt.so*|ld-linux*|libcu*|libnv*) ;;
      *) cp -fL "$lib" "$DEV/lib/" ;;
    esac
  done
done
# The Nsight Systems importer that ships inside the device's Nsight Compute needs libdw, which
# the device image lacks (nsys_sqlite in device_env.sh puts .dev/tools on its library path).
mkdir -p .dev/tools
for lib in libdw.so.1 libelf.so.1 liblzma.so.5 libbz2.so.1.0; do
  if [ -e "/lib/x86_64-linux-gnu/$lib" ]; then cp -fL "/lib/x86_64-linux-gnu/$lib" .dev/tools/; fi
done
for f in tiny1234-target.gguf tiny1234-assistant.gguf tiny1234-goldens.gguf; do
  [ -f "../shared/golden/$f" ] && cp -f "../shared/golden/$f" "$DEV/shared/golden/$f"
done
ln -sfn ../../../models "$DEV/shared/models"
# What was packed (device_env.sh prints it on the device): a call that carries a stale pack
# then says so in its first line.
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo '+changes') built $(date -u -r "$BUILD/src/cli/gemmaserve" +%FT%TZ) packed $(date -u +%FT%TZ)" \
  >"$DEV/BUILD_INFO"
# Gzipped (device_env.sh unpacks them there): the carried tree must stay under 64 MiB.
gzip -f "$DEV/bin/gemmaserve" "$DEV/bin/gs_test_cuda"
du -sh "$DEV" "$DEV"/* | sed 's/^/device_pack: /'
