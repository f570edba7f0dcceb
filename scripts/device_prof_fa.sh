#!/usr/bin/env bash
# Nsight Compute on the prefill attention kernels at head_dim 512 (the 31B's full layers) on a
# lent GPU machine (binaries as in device_run.sh): the first launch of the 64-row kernel and of
# the wgmma kernel (decision 0033, GS_CUDA_ATTN_WG=1, form GS_WG_FORM) in a prefill of
# GS_PF_TOKENS (default 512) tokens at depth GS_PF_DEPTH (default 131072, zero fill), and with
# GS_PF_DECODE=1 the 64-row kernel's first launch in a decode step at that depth (GS_PF_KV
# below). Duration, throughputs, occupancy, pipe use, the top warp stall reasons, and the SASS
# instructions with the most stall samples (ncu_sass_top). GS_PF_KERNELS: which prefill
# kernels (default "fa wg"; "none" for none: an empty value means the default).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
B="$DEV/bin/gemmaserve"
synth_31b_pair >/dev/null || exit 1
D="${GS_PF_DEPTH:-131072}"
prof() {  # NAME KERNEL_REGEX, then bench args
  local name=$1 kr=$2; shift 2
  timeout 240 ncu --clock-control none --set full --import-source no --kernel-name-base mangled -k "regex:$kr" -s 0 -c 1 \
    -o "$OUT/$name" "$B" bench -m "$MODEL_31B" --device cuda -r 1 --depth-fill zeros -d "$D" "$@" >"$OUT/$name.log" 2>&1
  echo "== $name: ncu exit $?"
  ncu_summary "$name"
  ncu_sass_top "$name" 40
}
K="${GS_PF_KERNELS:-fa wg}"  # which prefill kernels to profile ("none": none)
[[ " $K " == *" fa "* ]] && GS_CUDA_ATTN_WG=0 prof fa_prefill FaCfgILi512 -p "${GS_PF_TOKENS:-512}" -n 0
[[ " $K " == *" wg "* ]] && GS_CUDA_ATTN_WG=1 prof wg_prefill attn_wg_kernel -p "${GS_PF_TOKENS:-512}" -n 0
# GS_PF_KV=q8_0: the decode launch on a q8_0 cache (attn_fa_q8_kernel, decision 0035), once per
# environment setting of GS_PF_Q8_ENVS (';'-separated, default one empty setting)
if [ "${GS_PF_DECODE:-0}" = 1 ]; then
  if [ "${GS_PF_KV:-f16}" = q8_0 ]; then
    split_settings "${GS_PF_Q8_ENVS:-}"
    i=0
    for s in "${settings[@]}"; do
      i=$((i + 1))
      echo "== setting $i: '$s'"
      (for a in $s; do export "${a?}"; done; prof "fa_q8_decode_$i" 'attn_fa_q8_kernel.*FaCfgILi512' -p 0 -n 4 --kv-type q8_0)
    done
  else
    prof fa_decode 'attn_fa_kernel.*FaCfgILi512' -p 0 -n 4
  fi
fi
rm -f "$OUT"/*.ncu-rep
gzip -f "$OUT"/*.sass.csv 2>/dev/null
