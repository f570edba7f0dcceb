#!/usr/bin/env bash
# Runs every device test (ctest label `device`: each CUDA op against the CPU oracle, the
# tiny goldens and synthetic models on CUDA) on a GPU host with one command. Builds the CUDA
# tests first unless GS_DEVICE_BIN names a folder with a prebuilt gs_test_cuda.
#   scripts/device_test.sh [extra gtest/ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${GS_DEVICE_BIN:-}" ]; then
  # Prebuilt binaries (a lent GPU machine without the -dev packages): run the test binary.
  "$GS_DEVICE_BIN/gs_test_cuda" --gtest_color=no "$@" || exit $?
  # The matmul tests again with the pipelined matvec on every size and with the
  # register-prefetch one (see tests/CMakeLists.txt).
  env GS_CUDA_MV=pipe "$GS_DEVICE_BIN/gs_test_cuda" --gtest_color=no --gtest_filter='CudaMatmul.*' || exit $?
  # The opt-in int8 Q4_K forms (decision 0028), as ctest's cuda_int8_q4k_forms.
  env GS_MVS_Q4K=1 "$GS_DEVICE_BIN/gs_test_cuda" --gtest_color=no \
    --gtest_filter='CudaMatmul.*:CudaSynth.EveryWeightTypeAgainstCpu:CudaSpeculative.*' || exit $?
  exec env GS_CUDA_MV=mma "$GS_DEVICE_BIN/gs_test_cuda" --gtest_color=no --gtest_filter='CudaMatmul.*'
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "device_test: no NVIDIA GPU here; the device tests need one" >&2
  exit 2
fi
BUILD_DIR="${GS_BUILD_DIR:-build}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGS_WITH_CUDA=ON >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target gs_test_cuda gemmaserve
ctest --test-dir "$BUILD_DIR" -L device --output-on-failure "$@"
