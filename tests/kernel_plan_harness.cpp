// Host-only driver of the kernel's launch plan (kernels/sparse_mla_plan.h) for
// tests/test_kernel_plan.py: no CUDA needed. One case per stdin line:
//   sms smem_optin smem_large smem_large16 occ_small16 occ_small32 occ_large16 occ_large32
//   occ_large64 large_wgmma cluster_gather warp_specialized T H topk extra_topk config requested_splits
// prints "config heads_per_cta tile_n num_splits one_cta_per_sm cluster warp_specialized dims_split" per case,
// or "invalid".
#include <cstdio>

#include "sparse_mla_plan.h"

int main() {
  dsparkctl::SparseMlaPlanDevice d;
  int T, H, topk, extra, config, splits, wgmma, cluster, ws;
  while (std::scanf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", &d.sms, &d.smem_optin, &d.smem_large,
                    &d.smem_large16, &d.occ_small16, &d.occ_small32, &d.occ_large16, &d.occ_large32,
                    &d.occ_large64, &wgmma, &cluster, &ws, &T, &H, &topk, &extra, &config, &splits) == 18) {
    d.large_wgmma = wgmma != 0;
    d.cluster_gather = cluster != 0;
    d.warp_specialized = ws != 0;
    dsparkctl::SparseMlaPlan p;
    if (dsparkctl::sparse_mla_plan_for(d, T, H, topk, extra, config, splits, &p))
      std::printf("%d %d %d %d %d %d %d %d\n", p.config, p.heads_per_cta, p.tile_n, p.num_splits, p.one_cta_per_sm ? 1 : 0,
                  p.cluster, p.warp_specialized ? 1 : 0, p.dims_split);
    else
      std::printf("invalid\n");
  }
  return 0;
}
