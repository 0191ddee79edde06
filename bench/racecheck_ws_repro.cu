// Minimal repro of the warp-specialized kernel's synchronisation, for compute-sanitizer racecheck
// (v32 left racecheck reports on that kernel's epilogue open: its staging stores against the
// read-back behind a whole-CTA barrier). This kernel keeps only the skeleton, built from the
// shipped kernel's own PTX helpers (the .cu is included): a producer warpgroup filling a
// two-buffer ring (bulk copies on an mbarrier, then an in-place rewrite), two consumer
// warpgroups reading each buffer (wgmma or plain loads) and handing a P tile from one to the
// other over named barriers, then the epilogue: fp32 rows staged over the Q / ring region with
// the shipped kernel's store pattern, a whole-CTA barrier, and the rows read back to global.
// Every value it writes is known on the host, so the run also checks itself. Switches (0 / 1)
// remove one feature at a time, so a hazard report can be tied to the feature that brings it:
//   RC_BULK    producer fills by cp.async.bulk + mbarrier tx count (else plain stores)
//   RC_WGMMA   consumers read the ring and P by wgmma (else by ld.shared)
//   RC_HANDOFF how P goes from warpgroup 0 to 1 and back: 0 named barriers, the producing side
//              bar.arrive, the waiting side bar.sync (the shipped kernel); 1 named barriers,
//              bar.sync on both sides (a rendezvous: stronger ordering, same result); 2 mbarriers
//   RC_MAXNREG setmaxnreg between the roles
//   RC_EPI_NAMED the epilogue's two barriers as a 256-thread named barrier (producer exits early)
//   RC_PW1     (session 42) a named barrier between the producer and warpgroup 1 only (id 6, 256
//              threads) before the consumers' Q barrier, as the rejected split-issue candidate had
//              (bench/results/kernel_h200_ws_dh_split_issue0/: its racecheck build reported hazards
//              between accesses it did not touch): warpgroup 1 waits, the producer arrives (1) or
//              waits too (2, the racecheck build's form). It orders nothing the kernel checks.
//   RC_Q_LDS   (session 42) warpgroup 0 also reads Q with ld.shared after the consumers' barrier, as
//              v68's halves kernel does (its Q in registers): a hazard reported on those reads is
//              one the split-issue build showed
// Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -I kernels bench/racecheck_ws_repro.cu
// (bench/racecheck_ws_repro.sh builds the variants and runs them under racecheck).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../kernels/sparse_mla_decode.cu"

#ifndef RC_BULK
#define RC_BULK 1
#endif
#ifndef RC_WGMMA
#define RC_WGMMA 1
#endif
#ifndef RC_HANDOFF
#define RC_HANDOFF 0
#endif
#ifndef RC_MAXNREG
#define RC_MAXNREG 1
#endif
#ifndef RC_EPI_NAMED
#define RC_EPI_NAMED 0
#endif
#ifndef RC_PW1
#define RC_PW1 0
#endif
#ifndef RC_Q_LDS
#define RC_Q_LDS 0
#endif

namespace dsparkctl {
namespace {

constexpr int kRcM = 64, kRcBN = 64;
constexpr int kRcTile = kRcBN * kD * 2;                 // one converted KV tile (fp16 / bf16)
constexpr int kRcOffKV = kRcM * kD * 2;                 // after Q
constexpr int kRcOffP = kRcOffKV + 2 * kRcTile;         // P [64][64] fp16
constexpr int kRcOffBar = kRcOffP + kRcM * kRcBN * 2;   // full[2], empty[2], raw[2], pready, pfree
constexpr int kRcSmem = kRcOffBar + 64;
static_assert(kRcM * kORow * 4 <= kRcOffP, "the staged rows lie over Q and the ring, as in the shipped kernel");

__device__ __forceinline__ float rc_expected(int cta, int row, int col) { return float(cta * 7 + row * 3 + col); }

__global__ void __launch_bounds__(384, 1) rc_kernel(const uint8_t* src, float* out, int ntiles, float* sink) {
  extern __shared__ __align__(1024) uint8_t rc_smem[];
  uint8_t* smem = rc_smem;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kRcOffBar);
  uint64_t* empty = full + 2;
  uint64_t* rawbar = full + 4;
  uint64_t* pready = full + 6;
  uint64_t* pfree = full + 7;
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem);
  __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(smem + kRcOffP);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (tid == 0) {
    mbar_init(&full[0], 128);
    mbar_init(&full[1], 128);
    mbar_init(&empty[0], 256);
    mbar_init(&empty[1], 256);
    mbar_init(&rawbar[0], 1);
    mbar_init(&rawbar[1], 1);
    mbar_init(pready, 128);
    mbar_init(pfree, 128);
  }
  __syncthreads();

  if (warp >= 8) {  // ---- producer
#if RC_MAXNREG
    setmaxnreg_dec<128>();
#endif
    const int pt = tid - 256;
#if RC_PW1 == 2
    nbar_sync(6, 256);
#elif RC_PW1 == 1
    nbar_arrive(6, 256);
#endif
    for (int it = 0; it < ntiles; ++it) {
      const int b = it & 1;
      if (it >= 2) mbar_wait(&empty[b], uint32_t((it >> 1) - 1) & 1u);
      uint8_t* buf = smem + kRcOffKV + b * kRcTile;
      const uint8_t* g = src + (int64_t(blockIdx.x) * ntiles + it) * kRcBN * kRowBytes;
#if RC_BULK
      if (pt == 0) mbar_expect_tx(&rawbar[b], kRcBN * kRowBytes);
      if (pt < kRcBN) bulk_copy(buf + pt * kRowBytes, g + pt * kRowBytes, kRowBytes, &rawbar[b]);
      mbar_wait(&rawbar[b], uint32_t(it >> 1) & 1u);
#else
      for (int i = pt; i < kRcBN * kRowBytes / 16; i += 128)
        *reinterpret_cast<uint4*>(buf + i * 16) = *reinterpret_cast<const uint4*>(g + i * 16);
#endif
      nbar_sync(kWsProducer, 128);
      // in place, as the shipped producer: read this thread's raw pieces, barrier, rewrite
      uint4 raw[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) raw[i] = *reinterpret_cast<const uint4*>(buf + (pt + i * 128) * 16);
      nbar_sync(kWsProducer, 128);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int u = pt + i * 128;  // 1,024 16-byte pieces: rows 0-63, 16 pieces each
        *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(buf) + sw128_off<kRcBN>(u >> 4, (u & 15) * 8)) =
            raw[i];
      }
      fence_proxy_async_smem();
      mbar_arrive(&full[b]);
    }
#if RC_EPI_NAMED
    return;
#else
    cta_sync_divergent();
    cta_sync_divergent();
    return;
#endif
  }

  // ---- consumers: Q written by ordinary stores, as the shipped kernel
#if RC_PW1
  if (tid >= 128) nbar_sync(6, 256);
#endif
  for (int i = tid; i < kRcM * kD / 8; i += 256)
    *reinterpret_cast<uint4*>(sQ + sw128_off<kRcM>(i / (kD / 8), (i % (kD / 8)) * 8)) = make_uint4(tid, i, 0, 0);
  fence_proxy_async_smem();
  nbar_sync(kWsConsumers, 256);
  const int wg = warp >> 2, wl = warp & 3;
  float acc = 0.f;
#if RC_Q_LDS
  if (wg == 0) {
    for (int i = tid; i < kRcM * kD / 2; i += 128) acc += float(reinterpret_cast<const uint32_t*>(sQ)[i] & 1u);
  }
#endif
#if RC_MAXNREG
  if (wg == 0) setmaxnreg_inc<216>(); else setmaxnreg_dec<160>();
#endif
  for (int it = 0; it < ntiles; ++it) {
    const int b = it & 1;
    mbar_wait(&full[b], uint32_t(it >> 1) & 1u);
    __nv_bfloat16* kv = reinterpret_cast<__nv_bfloat16*>(smem + kRcOffKV + b * kRcTile);
    if (wg == 0) {
#if RC_WGMMA
      float s[4][4] = {};
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        wgmma_m64n32k16<false>(s, wgmma_desc_sw128(sQ) + ((kk >> 2) * kRcM * 128 + (kk & 3) * 32) / 16,
                               wgmma_desc_sw128(kv) + ((kk >> 2) * kRcBN * 128 + (kk & 3) * 32) / 16);
      wgmma_commit_wait();
      acc += s[0][0];
#else
      for (int i = lane; i < 64; i += 32) acc += __half2float(reinterpret_cast<const __half*>(kv)[wl * 64 + i]);
#endif
      if (it > 0) {  // warpgroup 1 is done with the previous P
#if RC_HANDOFF == 2
        mbar_wait(pfree, uint32_t(it - 1) & 1u);
#else
        nbar_sync(kWsPFree, 256);
#endif
      }
      for (int i = tid; i < kRcM * kRcBN / 2; i += 128) reinterpret_cast<uint32_t*>(sP)[i] = uint32_t(it + i);
      fence_proxy_async_smem();
#if RC_HANDOFF == 0
      nbar_arrive(kWsPReady, 256);
#elif RC_HANDOFF == 1
      nbar_sync(kWsPReady, 256);
#else
      mbar_arrive(pready);
#endif
    } else {
#if RC_HANDOFF == 2
      mbar_wait(pready, uint32_t(it) & 1u);
#else
      nbar_sync(kWsPReady, 256);
#endif
#if RC_WGMMA
      float o[8][4] = {};
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kRcBN / 16; ++ks)
        wgmma_pv_m64n64<false>(o, wgmma_desc_sw128(sP) + (ks * 32) / 16,
                               wgmma_desc_sw128(kv, kRcBN * 128) + ((7 * kRcBN * 128) + ks * 16 * 128) / 16);
      wgmma_commit_wait();
      acc += o[0][0];
#else
      acc += __half2float(reinterpret_cast<const __half*>(sP)[lane]) + __half2float(reinterpret_cast<const __half*>(kv)[lane]);
#endif
      if (it + 1 < ntiles) {
#if RC_HANDOFF == 0
        nbar_arrive(kWsPFree, 256);
#elif RC_HANDOFF == 1
        nbar_sync(kWsPFree, 256);
#else
        mbar_arrive(pfree);
#endif
      }
    }
    mbar_arrive(&empty[b]);
  }
  if (acc == 1.2345e-30f) sink[tid] = acc;  // keeps the reads; never true for these inputs

  // ---- epilogue: the shipped kernel's staging pattern over Q / the ring, then the read-back
#if RC_EPI_NAMED
  nbar_sync(5, 256);
#else
  cta_sync_divergent();
#endif
  float* sOut = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = wl * 16 + (lane >> 2) + 8 * i;
    float* srow = sOut + row * kORow + (lane & 3) * 2;
#pragma unroll
    for (int jj = 0; jj < 32; ++jj) {
      const int col = wg * 256 + jj * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(srow + wg * 256 + jj * 8) =
          make_float2(rc_expected(blockIdx.x, row, col), rc_expected(blockIdx.x, row, col + 1));
    }
  }
#if RC_EPI_NAMED
  nbar_sync(5, 256);
#else
  cta_sync_divergent();
#endif
  const int c4 = tid % 128;
  for (int r = tid / 128; r < kRcM; r += 2)
    *reinterpret_cast<float4*>(out + (int64_t(blockIdx.x) * kRcM + r) * kD + c4 * 4) =
        *reinterpret_cast<const float4*>(sOut + r * kORow + c4 * 4);
}

}  // namespace
}  // namespace dsparkctl

int main(int argc, char** argv) {
  using namespace dsparkctl;
  const int ctas = argc > 1 ? atoi(argv[1]) : 8, ntiles = argc > 2 ? atoi(argv[2]) : 5;
  uint8_t* src;
  float *out, *sink;
  const size_t src_bytes = size_t(ctas) * ntiles * kRcBN * kRowBytes;
  cudaMalloc(&src, src_bytes);
  cudaMemset(src, 0x3c, src_bytes);
  cudaMalloc(&out, size_t(ctas) * kRcM * kD * 4);
  cudaMalloc(&sink, 384 * 4);
  cudaFuncSetAttribute(rc_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRcSmem);
  rc_kernel<<<ctas, 384, kRcSmem>>>(src, out, ntiles, sink);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("RESULT launch_error %s\n", cudaGetErrorString(e));
    return 2;
  }
  std::vector<float> h(size_t(ctas) * kRcM * kD);
  cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost);
  long bad = 0;
  for (int c = 0; c < ctas; ++c)
    for (int r = 0; r < kRcM; ++r)
      for (int k = 0; k < kD; ++k)
        bad += h[(size_t(c) * kRcM + r) * kD + k] != float(c * 7 + r * 3 + k);
  printf("RESULT bulk=%d wgmma=%d handoff=%d maxnreg=%d epi_named=%d pw1=%d q_lds=%d ctas=%d tiles=%d mismatches=%ld\n",
         RC_BULK, RC_WGMMA, RC_HANDOFF, RC_MAXNREG, RC_EPI_NAMED, RC_PW1, RC_Q_LDS, ctas, ntiles, bad);
  return bad ? 1 : 0;
}
