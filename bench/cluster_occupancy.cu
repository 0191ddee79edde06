// How many clusters of S warp-specialized CTAs the GPU holds at once (cudaOccupancyMaxActiveClusters
// on the WS kernel itself, at its launch shape: 384 threads, its dynamic shared memory, clusters
// (1, S, 1)). Session 28's cluster-combine A/B (bench/results/kernel_h200_v46_cluster_n/) doubled
// every call whose grid had more clusters of 4-8 CTAs than this; a plan that clusters a call must
// stay under it.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a bench/cluster_occupancy.cu -o /tmp/cluster_occupancy && /tmp/cluster_occupancy
// Prints one JSON object. Torch-free, like kernel_timeline.cu.
#include "../kernels/sparse_mla_decode.cu"

#include <cstdio>

int main() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  void (*kernel)(const dsparkctl::SparseMlaParams, int, int) = nullptr;
  cudaError_t e = dsparkctl::prepared_ws_kernel<16>(&kernel);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cluster_occupancy: the WS kernel is not available here: %s\n", cudaGetErrorString(e));
    return 2;
  }
  std::printf("{\"sms\": %d, \"ws_threads\": %d, \"ws_smem\": %d, \"max_active_clusters\": {", sms, dsparkctl::kWsThreads,
              dsparkctl::WsCfg::SMEM);
  for (int s = 1; s <= 8; ++s) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms, s, 1);
    cfg.blockDim = dim3(dsparkctl::kWsThreads, 1, 1);
    cfg.dynamicSmemBytes = dsparkctl::WsCfg::SMEM;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = unsigned(s);
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int n = -1;
    e = cudaOccupancyMaxActiveClusters(&n, kernel, &cfg);
    std::printf("%s\"%d\": %d", s > 1 ? ", " : "", s, e == cudaSuccess ? n : -1);
  }
  std::printf("}}\n");
  return 0;
}
