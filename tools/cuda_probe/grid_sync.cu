// What one device-wide ordering point costs on this GPU, three ways, for the decision between
// kernel launches under PDL (today's decode step) and a persistent per-layer kernel
// (docs/perf-notes.md, thirty-ninth session):
//   launch  N kernels in a CUDA graph, each launched by the backend's own launch_k
//           (backend/cuda/k_launch.cuh: PDL, or a plain launch with g_pdl off) and waiting on
//           its predecessor (GS_PDL_ENTRY) before a global write;
//   flag    one persistent kernel whose CTAs meet N times at a counter-and-generation barrier
//           (acquire/release atomics at device scope);
//   coop    the same with cooperative_groups' grid.sync() under a cooperative launch.
// Each at G CTAs of 256 threads (G = the SM count, and twice it). Prints microseconds per
// ordering point (the median of 7 timed runs of N = 2000). Built apart from the project, from
// the repository root: nvcc -O3 -std=c++17 -I src -gencode=arch=compute_90a,code=sm_90a
// -cudart static -o grid_sync tools/cuda_probe/grid_sync.cu
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cuda/k_launch.cuh"

namespace cg = cooperative_groups;

namespace gs::cuda {
bool g_pdl = true;  // the backend's switch (k_launch.cuh); the probe turns it off for "no PDL"
}  // namespace gs::cuda

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

__global__ void pdl_step(unsigned* out, unsigned i) {
  GS_PDL_ENTRY();
  if (threadIdx.x == 0) out[blockIdx.x] = i;
}

struct Barrier {
  unsigned count;
  unsigned generation;
};

__device__ void flag_barrier(Barrier* b, unsigned n_blocks) {
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> gen(b->generation);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(b->count);
    const unsigned g = gen.load(cuda::memory_order_relaxed);
    if (count.fetch_add(1, cuda::memory_order_acq_rel) == n_blocks - 1) {
      count.store(0, cuda::memory_order_relaxed);
      gen.store(g + 1, cuda::memory_order_release);
    } else {
      while (gen.load(cuda::memory_order_acquire) == g) {
      }
    }
  }
  __syncthreads();
}

__global__ void flag_loop(Barrier* b, unsigned* out, int n) {
  for (int i = 0; i < n; ++i) {
    if (threadIdx.x == 0) out[blockIdx.x] = i;
    flag_barrier(b, gridDim.x);
  }
}

__global__ void coop_loop(unsigned* out, int n) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < n; ++i) {
    if (threadIdx.x == 0) out[blockIdx.x] = i;
    grid.sync();
  }
}

template <class F>
double median_us_per(F run, int n) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  run();  // warm
  CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    CHECK(cudaEventRecord(a));
    run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0 / n);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("%s, %d SMs\n", prop.name, sms);
  const int n = 2000;
  unsigned* out;
  Barrier* bar;
  CHECK(cudaMalloc(&out, 4096 * sizeof(unsigned)));
  CHECK(cudaMalloc(&bar, sizeof(Barrier)));
  CHECK(cudaMemset(bar, 0, sizeof(Barrier)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const int g : {sms, 2 * sms}) {
    // launch: a graph of n launches through launch_k, with PDL and without.
    const auto graph_of_launches = [&](bool pdl) {
      gs::cuda::g_pdl = pdl;
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < n; ++i) gs::cuda::launch_k(pdl_step, dim3(g), dim3(256), 0, s, out, static_cast<unsigned>(i));
      CHECK(cudaStreamEndCapture(s, &graph));
      CHECK(cudaGraphInstantiate(&exec, graph, 0));
      const double us = median_us_per([&] { CHECK(cudaGraphLaunch(exec, 0)); }, n);
      CHECK(cudaGraphExecDestroy(exec));
      CHECK(cudaGraphDestroy(graph));
      return us;
    };
    const double launch = graph_of_launches(true);
    const double plain = graph_of_launches(false);
    const double flag = median_us_per([&] { flag_loop<<<g, 256>>>(bar, out, n); CHECK(cudaGetLastError()); }, n);
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_loop, 256, 0));
    double coop = -1;
    if (per_sm * sms >= g) {
      coop = median_us_per(
          [&] {
            int nn = n;
            void* args[] = {&out, &nn};
            CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(coop_loop), dim3(g), dim3(256), args, 0, 0));
          },
          n);
    }
    std::printf("G %4d CTAs: launch+PDL %.2f us, launch (no PDL) %.2f us, flag barrier %.2f us, grid.sync %.2f us\n", g,
                launch, plain, flag, coop);
  }
  return 0;
}
