// Kernel launches with programmatic dependent launch (PDL, sm_90): each kernel lets the next
// one be scheduled at its start and waits for its predecessor's results before touching
// memory, so a step's launch latencies overlap instead of adding up (in graphs too).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace gs::cuda {

extern bool g_pdl;  // set once by the backend (GS_CUDA_PDL=0 turns it off)

// First statement of every kernel: allow the dependent grid to launch, then wait until the
// grids this one depends on have completed and their writes are visible.
#define GS_PDL_ENTRY() asm volatile("griddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n" ::: "memory")
// The two halves, for kernels that do work before waiting (the bulk-copy matvec streams its
// constant weights first): let dependents launch; wait for the predecessors' results.
#define GS_PDL_TRIGGER() asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory")
#define GS_PDL_WAIT() asm volatile("griddepcontrol.wait;\n" ::: "memory")

template <typename... KArgs, typename... Args>
inline void launch_k(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
  if (!g_pdl) {
    kernel<<<grid, block, smem, s>>>(std::forward<Args>(args)...);
    return;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace gs::cuda
