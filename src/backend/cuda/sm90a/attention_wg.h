// The prefill attention kernel on warpgroup MMA (wgmma, sm_90a only), head_dim 512: the same
// job, pools, grid and `partial` layout as launch_attention_fa (cuda_kernels.h), 64 query rows
// of one KV head per CTA, for prefill chunks at depth, where the mma.sync kernel is bound by
// latency (docs/perf-notes.md, twenty-fourth and twenty-sixth sessions). Decode and MTP verify
// stay on the mma.sync kernels: their rows must equal each other bit for bit (decision 0020),
// and prefill rows need not equal anything.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/cuda_kernels.h"

namespace gs::cuda {

// True where launch_attention_wg serves p: f16 KV pools and head_dim 512.
bool attention_wg_supported(const AttnParams& p);
// Raises the kernel's shared-memory limit on the current device; an error where the device
// cannot run sm_90a code (the caller then keeps launch_attention_fa).
cudaError_t attention_wg_prepare();
// Launches the kernel alone over n_splits KV splits (1..4096); with n_splits > 1 it writes
// `partial` ([n_splits][n_tokens][n_head][head_dim + 2] floats, as launch_attention_fa), and
// the caller runs launch_attention_combine after it (also with one split when p.op is set).
// The CTA count per split is attention_fa_cta_count(p); one CTA fills an SM.
void launch_attention_wg(cudaStream_t s, const AttnParams& p, int n_splits, float* partial);

}  // namespace gs::cuda
