// The tensor-core ceiling of the kernel's portable path, measured: mma.sync.m16n8k16 bf16 -> fp32
// throughput on the GPU at hand (no memory traffic, 8 independent accumulator chains per warp, so
// neither latency nor loads limit it). The bundled kernel's main loop can never run its mma work
// faster than this; bench/results/ compares it with the wgmma-based bf16 peak that the issue's
// roofline uses.
//   nvcc -O3 -arch=sm_90a bench/mma_ceiling.cu -o /tmp/mma_ceiling && /tmp/mma_ceiling
// Prints one JSON object.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int CHAINS>
__global__ void __launch_bounds__(256) mma_loop(float* out, int iters, uint32_t seed) {
  uint32_t a[4] = {seed, seed ^ 1u, seed ^ 2u, seed ^ 3u};
  const uint32_t b0 = seed * 3u, b1 = seed * 5u;
  float acc[CHAINS][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) mma(acc[c], a, b0, b1);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (s == 12345.f) out[threadIdx.x] = s;  // keeps the loop alive; never true for these inputs
}

int main() {
  int dev = 0, sms = 0;
  cudaDeviceProp prop{};
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  sms = prop.multiProcessorCount;
  float* out = nullptr;
  cudaMalloc(&out, 1024 * sizeof(float));
  const int iters = 4096;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"results\": [", prop.name, sms);
  bool first = true;
  for (int blocks_per_sm : {1, 2, 4}) {
    const int grid = sms * blocks_per_sm;
    mma_loop<8><<<grid, 256>>>(out, iters, 0x3f803f80u);  // warm-up (clocks up)
    cudaEventRecord(e0);
    for (int rep = 0; rep < 5; ++rep) mma_loop<8><<<grid, 256>>>(out, iters, 0x3f803f80u);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0.f;
    cudaEventElapsedTime(&ms, e0, e1);
    const double flops = 5.0 * grid * 8.0 /*warps*/ * iters * 8 /*chains*/ * (2.0 * 16 * 8 * 16);
    std::printf("%s{\"warps_per_sm\": %d, \"tflops\": %.1f}", first ? "" : ", ", 8 * blocks_per_sm,
                flops / (ms * 1e-3) / 1e12);
    first = false;
  }
  std::printf("], \"error\": \"%s\"}\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
