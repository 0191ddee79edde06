// How fast one SM can write a staged block of shared memory to global memory: the kernel's
// epilogue writes each split's fp32 partial rows (2 KB per head: 128 KB for a 64-head CTA) from
// shared memory, and the v26 timeline had that store at ~5,300 cycles per 64-head CTA (~25 B per
// cycle per SM), ~30% of a single-tile CTA at DSpark +512 T = 10. This measures the two ways to
// issue it from the same staged rows:
//   - "st": 16-byte st.global per thread over whole rows (what the kernel does);
//   - "bulk_rows": one cp.async.bulk (shared -> global, the copy engine) per 2 KB row, issued by
//     threads 0..rows-1 (two warps for 64 rows), then wait_group 0;
//   - "bulk_warps": the same rows, issued by lane 0 of each of the 8 warps (a bulk copy's operands
//     are warp-uniform, so 32 lanes issuing 32 rows serialize within the warp);
//   - "bulk_16k": 16 KB pieces (contiguous rows), lane 0 of each warp: the copy engine's own rate.
// Each variant runs as a grid of C CTAs (one per SM: 120 KB+ of dynamic shared memory) writing
// BYTES each, timed as CUDA-graph replays of back-to-back launches minus the same grid doing no
// stores ("empty"), so launch and staging costs cancel.
//   nvcc -O3 -std=c++17 -arch=sm_90a bench/store_ceiling.cu -o /tmp/store_ceiling && /tmp/store_ceiling
// Prints one JSON object per (variant, CTAs, bytes).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

constexpr int kThreads = 256;
constexpr int kRow = 2048;  // one head's fp32 partial row

enum Variant : int { kEmpty = 0, kSt = 1, kBulkRows = 2, kBulkWarps = 3, kBulk16k = 4, kVariants = 5 };
const char* const kNames[kVariants] = {"empty", "st", "bulk_rows", "bulk_warps", "bulk_16k"};

__global__ void __launch_bounds__(kThreads, 1) store_kernel(uint8_t* out, int bytes, int variant) {
  extern __shared__ __align__(128) uint8_t smem[];
  // Stage: every thread writes its 16-byte pieces (as the epilogue's staging does).
  for (int i = threadIdx.x * 16; i < bytes; i += kThreads * 16)
    *reinterpret_cast<uint4*>(smem + i) = make_uint4(i, i + 1, blockIdx.x, 7u);
  __syncthreads();
  uint8_t* dst = out + int64_t(blockIdx.x) * bytes;
  if (variant == kSt) {
    for (int i = threadIdx.x * 16; i < bytes; i += kThreads * 16)
      *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(smem + i);
  } else if (variant != kEmpty) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The staged rows were written by the generic proxy; the copy engine reads them through
    // the async proxy, so they must be made visible to it first.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int piece = variant == kBulk16k ? 16384 : kRow;
    const int pieces = bytes / piece;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int first = variant == kBulkRows ? int(threadIdx.x) : (lane == 0 ? warp : pieces);
    const int step = variant == kBulkRows ? kThreads : kThreads / 32;
    for (int r = first; r < pieces; r += step) {
      const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem + r * piece));
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + int64_t(r) * piece),
                   "r"(s), "r"(piece)
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
  }
}

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  const int sms = prop.multiProcessorCount;
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  const int max_bytes = 128 * 1024;
  // one CTA per SM whatever the bytes: ask for more than half the SM's shared memory
  const int smem = static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024) > max_bytes
                       ? static_cast<int>(prop.sharedMemPerMultiprocessor / 2 + 1024)
                       : max_bytes;
  CK(cudaFuncSetAttribute(store_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  uint8_t* out = nullptr;
  CK(cudaMalloc(&out, size_t(sms) * max_bytes));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const int reps = 50;
  const int ctas_list[] = {16, sms / 2, (sms * 5) / 6, sms};
  const int bytes_list[] = {32 * 1024, 64 * 1024, 128 * 1024};
  for (int bytes : bytes_list) {
    for (int ctas : ctas_list) {
      double us[kVariants] = {};
      for (int variant = kEmpty; variant < kVariants; ++variant) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int r = 0; r < reps; ++r) store_kernel<<<ctas, kThreads, smem, st>>>(out, bytes, variant);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphLaunch(ge, st));  // warm-up
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        float best = 1e30f;
        for (int k = 0; k < 5; ++k) {
          CK(cudaEventRecord(a, st));
          CK(cudaGraphLaunch(ge, st));
          CK(cudaEventRecord(b, st));
          CK(cudaEventSynchronize(b));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, a, b));
          if (ms < best) best = ms;
        }
        us[variant] = best * 1000.0 / reps;
        CK(cudaEventDestroy(a));
        CK(cudaEventDestroy(b));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
      }
      CK(cudaGetLastError());
      const double cyc = clock_khz / 1000.0;  // cycles per us
      std::printf("{\"device\": \"%s\", \"clock_mhz\": %.0f, \"ctas\": %d, \"bytes_per_cta\": %d, \"empty_us\": %.3f",
                  prop.name, cyc, ctas, bytes, us[0]);
      for (int v = kSt; v < kVariants; ++v) {
        const double t = us[v] - us[0];
        std::printf(", \"%s_us\": %.3f, \"%s_bytes_per_cycle_per_sm\": %.1f, \"%s_tb_s\": %.2f", kNames[v], us[v],
                    kNames[v], t > 0 ? bytes / (t * cyc) : 0.0, kNames[v], t > 0 ? double(ctas) * bytes / (t * 1e6) : 0.0);
      }
      std::printf("}\n");
    }
  }
  CK(cudaFree(out));
  return 0;
}
