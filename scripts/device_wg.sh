#!/usr/bin/env bash
# The wgmma prefill attention kernel (decision 0033) on a lent GPU machine, in one call: its
# device tests (the wgmma self-tests and every attention case, which runs it in each form),
# then prefill and decode at depth with it off and on in its copy forms (GS_WG_FORM defer,
# swizzle, tma; scripts/device_ab_depth.sh, zero-filled depth). Binaries as in device_run.sh (.dev/cuda).
#   scripts/device_wg.sh            (GS_AB_DEPTHS, GS_AB_PROMPTS, GS_AB_ROUNDS as device_ab_depth.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
timeout 300 "$DEV/bin/gs_test_cuda" --gtest_filter='CudaWgmma.*:CudaAttention.*' >"$OUT/tests.log" 2>&1
tests_summary $? "wgmma and attention"
grep -E "Failure|GS_CUDA_ATTN=" "$OUT/tests.log" | head -20
GS_AB="${GS_AB:-GS_CUDA_ATTN_WG=0;GS_CUDA_ATTN_WG=1 GS_WG_FORM=defer;GS_CUDA_ATTN_WG=1 GS_WG_FORM=swizzle;GS_CUDA_ATTN_WG=1 GS_WG_FORM=tma}" \
  GS_AB_PROMPTS="${GS_AB_PROMPTS:-512,4096}" GS_AB_DEPTHS="${GS_AB_DEPTHS:-0,131072}" GS_AB_FILL=zeros \
  GS_AB_ROUNDS="${GS_AB_ROUNDS:-1}" scripts/device_ab_depth.sh
