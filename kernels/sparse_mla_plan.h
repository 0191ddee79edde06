// dsparkctl sparse-MLA decode: the launch plan as a pure function of the call's shape and a
// few facts about the device (SM count, shared memory, CTAs per SM of each layout), so the
// rules can be tested without a GPU (tests/test_kernel_plan.py compiles a host-only harness).
// sparse_mla_decode_plan (sparse_mla_decode.cu) fills the device facts from CUDA and calls it.
// The rules and the H200 measurements behind each: kernels/NOTES.md.
#pragma once

#include <cstdint>

namespace dsparkctl {

// Tile configurations. LARGE needs ~187 KB of shared memory per block (Hopper, B200);
// SMALL fits the 99 KB of SM120/SM121. SMALL16 is SMALL with 16 heads per CTA at any H
// (more CTAs per token, each with a shorter tile chain: latency-bound calls such as T = 1);
// LARGE16 is LARGE with 16 heads per CTA (64-candidate tiles, half the CTAs of SMALL16);
// LARGE32 is LARGE with 32 heads per CTA at any H (twice the CTAs of a 64-head LARGE grid).
// LARGE_WS is LARGE with 64 heads per CTA run by the warp-specialized kernel where the device
// has it (sm_90a builds on Hopper; elsewhere plain LARGE): tests and sweeps force it with this.
// LARGE_WS_DIMS is LARGE_WS with v66's two CTAs per row block (one per half of O's dims) at any
// grid, unsplit (DSPARKCTL_WS_DIMS_PARTIALS: at any split count; session 38, for plan sweeps and
// tests).
// AUTO picks from the shape and the device (kernels/NOTES.md).
enum SparseMlaConfig : int {
  kConfigAuto = 0, kConfigLarge = 1, kConfigSmall = 2, kConfigSmall16 = 3, kConfigLarge16 = 4, kConfigLarge32 = 5,
  kConfigLargeWs = 6, kConfigLargeWsDims = 7
};

struct SparseMlaPlan {
  int config = 0;      // resolved: kConfigLarge or kConfigSmall (SMALL16 / LARGE16 / LARGE32 resolve to them)
  int heads_per_cta = 0;
  int tile_n = 0;
  int num_splits = 1;  // 1: direct write, no workspace
  bool one_cta_per_sm = false;  // v23: pad the launch to half an SM's shared memory (sparse_mla_one_cta_per_sm)
  int cluster = 1;  // v27: head-block CTAs per cluster sharing each tile's copy (sparse_mla_cluster_gather)
  bool warp_specialized = false;  // v32: the 64 x 64 tiles by the warp-specialized kernel (sparse_mla_warp_specialized)
  int dims_split = 1;  // v66: 2 = each WS (token, head block) as two CTAs, one per half of O's dims (sparse_mla_ws_dims_split)
};

constexpr int kMaxSplits = 64;

// What the plan needs to know about a device. occ_*: CTAs of that layout that fit one SM at
// once (registers, shared memory; the occupancy calculator's answer, 0 where it does not fit).
struct SparseMlaPlanDevice {
  int sms = 0;
  int smem_optin = 0;    // opt-in shared memory per block, bytes
  int smem_large = 0;    // shared memory of a 64-head LARGE CTA
  int smem_large16 = 0;  // shared memory of a 16-head LARGE CTA
  int occ_small16 = 1, occ_small32 = 1, occ_large16 = 1, occ_large32 = 1, occ_large64 = 1;
  bool large_wgmma = false;  // the 64-head x 64-candidate tiles run wgmma (sm_90a builds on Hopper, v20 / v21)
  bool cluster_gather = false;  // multicast tile copies across a cluster (sm_90a builds on Hopper, v27)
  bool warp_specialized = false;  // the warp-specialized 64 x 64 kernel fits and is built (sm_90a builds on Hopper, v32)
  int blocks_per_sm(int config, int heads) const {
    const int n = config == kConfigLarge ? (heads == 16 ? occ_large16 : (heads == 32 ? occ_large32 : occ_large64))
                                         : (heads == 16 ? occ_small16 : occ_small32);
    return n < 1 ? 1 : (n > 2 ? 2 : n);
  }
};

inline int sparse_mla_heads_per_cta(int config, int H) {
  if (config == kConfigLarge) return H <= 16 ? 16 : (H <= 32 ? 32 : 64);
  return H <= 16 ? 16 : 32;
}

inline bool sparse_mla_warp_specialized(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan);

// The automatic split count once the layout is chosen (`tiles` per token at that layout).
inline int auto_splits(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan, int T, int head_blocks, int tiles) {
  const int64_t ctas = int64_t(T) * head_blocks;
  // Fill one wave of co-resident CTAs (1 per SM for LARGE, 2 for SMALL on Hopper), never
  // start a partial second one (a 2-wave grid with a thin second wave measured slower).
  const int64_t target = int64_t(d.sms) * d.blocks_per_sm(plan.config, plan.heads_per_cta);
  int splits = 1;
  // v13: no split when one CTA per SM already covers >= 3/4 of the SMs. Splitting then only
  // doubles CTAs up onto SMs that already hold one (two per SM on Hopper SMALL) and adds the
  // fp32 partials (2 KB per head and split, several times the gathered KV at DSpark verify
  // sizes) plus the combine. H200 sweep (bench/results/plan_sweep_h200.md), DSpark T = 50,
  // 100 SMALL CTAs: 1 split 24.0 us, 2 splits 26.1. Fitted to that one point (the next lower
  // point, 64 CTAs, wants splits: 57 vs 27 us); re-check on SM120, where SMALL is one per SM.
  if (ctas > 0 && ctas < target && 4 * ctas < 3 * int64_t(d.sms)) {
    splits = int(target / ctas);
    if (splits > tiles) splits = tiles;
    if (splits > kMaxSplits) splits = kMaxSplits;
    if (splits < 1) splits = 1;
  }
  // Session 23: the warp-specialized kernel splits a token of <= 3 tiles only into single-tile
  // CTAs. A split that leaves chains of two saves one tile (~2.7 us) and pays the fp32 partials
  // and the combine: H200 plan sweep (bench/results/plan_sweep_s23/), DSpark T = 50 without the
  // extra cache (3 tiles, 50 CTAs) 1 split 17.0 us, 2 splits 19.8; at T = 25 3 splits (one tile
  // each) 15.2, 1 split 16.8, 2 splits 17.3. Measured at one head block a token; at two (128 heads)
  // the same terms apply, twice over (unmeasured).
  if (splits > 1 && tiles <= 3 && (tiles + splits - 1) / splits > 1 && sparse_mla_warp_specialized(d, plan)) splits = 1;
  return splits;
}

// v23: the main kernel is launched as a programmatic dependent of the previous kernel in the
// stream (its CTAs start under that kernel and wait in griddepcontrol.wait before touching
// global memory). An early grid is placed on whatever SMs have room at that moment, so a grid
// of at most one CTA per SM can land two on some SMs where the layout fits two: H200 same-call
// A/B (bench/results/kernel_h200_v23_pdl/), DSpark T = 50 (100 SMALL CTAs) 24.0 -> 31.8 us,
// T = 1 H = 64 +512 (80 SMALL16 CTAs) 8.9 -> 9.7, while every one-per-SM layout gained ~1 us.
// true: launch such a grid with more than half an SM's shared memory per CTA, so no SM takes
// two (the launch pads the dynamic shared memory; the kernel does not use the extra).
inline bool sparse_mla_one_cta_per_sm(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan, int64_t ctas) {
  return d.blocks_per_sm(plan.config, plan.heads_per_cta) > 1 && ctas <= d.sms;
}

// v26: 32-head LARGE CTAs where they fill the GPU in one wave with fewer fp32 partials than the
// 64-head plan pays for. A 32-head tile (mma.sync) costs a CTA about what a 64-head one (wgmma
// on sm_90a) does (H200: 3 tiles per CTA, DSpark T = 50, 20.2 us on 100 CTAs vs 21.4 on 50), so
// halving the heads per CTA doubles the CTAs at the same chain length, where splitting the
// candidates would add 2 KB of partial per head and split, written at ~25 bytes per cycle per SM
// (bench/store_ceiling.cu) and read back by the combine. Taken when the 32-head grid at its
// automatic split count is one wave and
//   - gives every CTA a single tile where no 16-head layout can (one wave of single-tile
//     16-head CTAs is cheaper still: T = 1 H = 64 / 128 +512, DSpark drafts without the extra), or
//   - fills >= 3/4 of the SMs and needs no split (no partials, no combine) with chains of <= 3
//     tiles, or
//   - fills >= 3/4 of the SMs with chains of two where the 64-head plan has single-tile CTAs on
//     >= 3/4 of the SMs (its partials then cost more than the second tile).
// H200 plan sweeps (bench/results/kernel_h200_v26_plan/): DSpark T = 50 20.2 vs 23.0 us (the
// 64-head plan, 2 splits), DSpark +512 T = 5 14.0 vs 14.9 (LARGE16, 6 splits), +512 T = 10 18.1
// vs 19.8 (64-head, 11 splits), v26b T = 1 H = 128 +1024 13.5 vs 14.7 (LARGE16, chains of two);
// and it is not taken where the sweeps had it behind: decode T = 8 at 64 / 128 heads (17.4-32.0
// vs 16.9-25.4), every T >= 25 with an extra cache, T = 1 where 16-head CTAs take one tile each.
// Fitted to those four H200 points; LARGE does not fit SM120 / SM121, whose plans it leaves alone.
// v30 runs these 32-head tiles by wgmma on sm_90a (transposed) and was measured under this rule
// unchanged (kernels/NOTES.md v30: 0.2-0.5 us faster at three of the four points, +0.16 at
// DSpark +512 T = 5); not refitted.
inline bool sparse_mla_large32_fills_wave(const SparseMlaPlanDevice& d, int T, int H, int tiles_s, int tiles_l);

// v27: the head-block CTAs of one (token, split) as a thread-block cluster that copies each tile
// once (each CTA 1/cluster of the rows, multicast to all). It saves the copy issue of a
// 64-candidate tile (~1,400 cycles of 16-byte cp.async per CTA) but a multi-tile chain pays a
// cluster barrier per tile and a large grid waits for whole GPCs: H200 same-call A/B with it on
// for every 2-8 head-block grid (bench/results/kernel_h200_v27_cluster/): T = 1 16-head LARGE
// CTAs 10.2 -> 9.8-9.9 us (128 heads +512, clusters of 8) and 10.0-10.3 -> 9.8-9.9 (64 heads
// +1024, of 4), but DSpark T = 10 (120 CTAs, one tile each) +0.4, T = 25 / 50 (chains of 3) +1.7
// / +2.3, the 32-candidate 16-head CTAs at T = 1 +0.4 and 32-head ones +-0.1. So only there:
// 16-head CTAs over 64-candidate tiles, one tile each, clusters of 4 or 8, at most 3/4 of the
// SMs. The launch also needs the 16-byte copy path (aligned pages).
// v28 (rejected, bench/results/kernel_h200_v28_cluster_chains_rejected/): chains too, with two
// staging buffers and the cluster barrier one tile behind. DSpark T = 25 (100 CTAs, chains of 3)
// +1.0 us, +0.5 with a relaxed arrive, and even with no chain barrier at all (a racy measurement
// build) the forced LARGE16 chains were no faster than unclustered CTAs (+-0.5 us; T = 25 +0.7):
// once a copy overlaps the previous tile, copying it once per cluster saves nothing.
// `tiles_l`: 64-candidate tiles per token.
inline int sparse_mla_cluster_gather(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan, int T, int head_blocks,
                                     int tiles_l) {
  if (!d.cluster_gather || plan.config != kConfigLarge || plan.heads_per_cta != 16 || plan.tile_n != 64) return 1;
  if (head_blocks != 4 && head_blocks != 8) return 1;
  const int chain = (tiles_l + plan.num_splits - 1) / plan.num_splits;
  const int64_t ctas = int64_t(T) * head_blocks * plan.num_splits;
  return chain == 1 && 4 * ctas <= 3 * int64_t(d.sms) ? head_blocks : 1;
}

// v32: the 64-head x 64-candidate tiles by the warp-specialized kernel (a producer warpgroup
// copies and converts each tile into one of two buffers while two consumer warpgroups run the
// MMAs on the other; kernels/NOTES.md v31-v32). v32 took it only for 128-head chains (two head
// blocks sharing each row through L2, >= 2 tiles in every CTA), where the v32 A/B had it ahead.
// v37 (warpgroup 1 issues the copies of tiles 2.., so the producer's loop carries no copy issue)
// made it the faster kernel for every 64-head LARGE plan the H200 bench has: same call, forced vs
// the main kernel (bench/results/kernel_h200_v37_ws_consumer_copies/), 64 heads +1024 T = 64 57.8
// -> 48.5 us, T = 32 -4.9, T = 8 (chains of 1-2) -1.6, +512 T = 64 -4.2, T = 32 -2.1, T = 8
// (chains of 1) -0.4; DSpark +512 T = 25 26.2 -> 23.6, T = 50 41.6 -> 34.4. The one row measured
// behind was v32's 128 heads +512 T = 8 (chains of 1-2, +0.8 us, before v36's faster copy issue).
// So: every 64-head x 64-candidate LARGE plan where the device has the kernel.
inline bool sparse_mla_warp_specialized(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan) {
  return d.warp_specialized && plan.config == kConfigLarge && plan.heads_per_cta == 64 && plan.tile_n == 64;
}

// Session 34: the warp-specialized kernel for the chains of 32-head LARGE plans and of <= 16-head
// plans too, its 64 rows padded past H. The automatic plan runs 17-32 heads as 32-head LARGE CTAs
// (v30's transposed wgmma, no producer warpgroup) and <= 16 heads as 16-head SMALL CTAs; a padded WS
// CTA runs a 64-head CTA's tiles and MMAs (M is 64 rows either way) with fewer Q loads and output
// rows. The session 34 H200 plan sweep with the WS layout forced
// (bench/results/plan_sweep_s33/) and the same-call A/B of the rule:
// - 32 heads: WS ahead from chains of 2 tiles on (+1024 T = 8 at 13 splits 17.3 vs 18.9 us, +512
//   T = 32 at 4 splits (chains of 3) 21.9 vs 24.5, +1024 T = 32 28.7 vs 34.0, +1024 T = 64 40.6 vs
//   53.6, +512 T = 64 27.6 vs 34.7), behind on chains of 1 (+512 T = 8: 15.4 vs 14.7).
// - 16 heads (4x padded): ahead only on long chains (+512 T = 64, chains of 5: 26.0 vs 28.6; +1024
//   T = 64, chains of 9: 38.8 vs 44.6; +1024 T = 32, chains of 5: 27.5 vs 27.7), behind on chains
//   of 3 (+512 T = 32: 20.7 vs 19.8).
// So where the WS grid (its automatic split count, one head block) is one wave, its chain must reach
// DSPARKCTL_PLAN_WS_PADDED_CHAIN (17-32 heads, default 2) or DSPARKCTL_PLAN_WS_PADDED_CHAIN16
// (<= 16 heads, default 5); 0 turns a rule off.
#ifndef DSPARKCTL_PLAN_WS_PADDED_CHAIN
#define DSPARKCTL_PLAN_WS_PADDED_CHAIN 2
#endif
#ifndef DSPARKCTL_PLAN_WS_PADDED_CHAIN16
#define DSPARKCTL_PLAN_WS_PADDED_CHAIN16 5
#endif
constexpr int kPlanWsPaddedChain = DSPARKCTL_PLAN_WS_PADDED_CHAIN;
constexpr int kPlanWsPaddedChain16 = DSPARKCTL_PLAN_WS_PADDED_CHAIN16;
static_assert(kPlanWsPaddedChain >= 0 && kPlanWsPaddedChain16 >= 0, "a chain length, 0 for off");

// The shortest WS chain at which the automatic plan `plan` (for H heads) moves to padded WS CTAs,
// 0 where it never does.
inline int sparse_mla_ws_padded_min_chain(const SparseMlaPlan& plan, int H) {
  if (plan.config == kConfigLarge && plan.heads_per_cta == 32 && H <= 32) return kPlanWsPaddedChain;
  if (plan.config == kConfigSmall && H <= 16) return kPlanWsPaddedChain16;
  return 0;
}

// v66 (session 38; DSPARKCTL_WS_DIMS_SPLIT, on; =0 rebuilds v65): an unsplit WS call whose grid fills
// at most half the SMs runs each (token, head block) as two CTAs, one per half of the output dims.
// Both gather, convert and run S and the softmax of every tile (same bytes, same order: the same P
// bit for bit); warpgroup 1 runs the P.V of the CTA's 256 dims and warpgroup 0 none. No combine:
// the halves are disjoint columns of the output; half 0 alone writes the lse. Why: DSpark T = 50 ran
// 50 WS CTAs of 3 tiles on 132 SMs, warpgroup 0 spending about as long in its P.V as in S, and each
// CTA then stored 64 KB of output rows at one SM's store rate (bench/store_ceiling.cu). H200, same
// call, 3 rounds against v65 (bench/results/kernel_h200_ws_dims_split/): DSpark T = 50 16.62 ->
// 15.46 us; the rule moves no other bench row (all within the run-to-run spread). Not bit for bit
// v65's there: half 0's lo pass reads P's lo part as e4m3 (as dims 256-447 always did), not fp16.
#ifndef DSPARKCTL_WS_DIMS_SPLIT
#define DSPARKCTL_WS_DIMS_SPLIT 1
#endif
constexpr bool kPlanWsDimsSplit = DSPARKCTL_WS_DIMS_SPLIT == 1;
static_assert(DSPARKCTL_WS_DIMS_SPLIT == 0 || DSPARKCTL_WS_DIMS_SPLIT == 1, "on or off");

// Session 38 candidate (DSPARKCTL_WS_DIMS_PARTIALS, off by default; measured in session 39,
// bench/results/plan_sweep_s38_ws_dims/run1/: faster on one bench row only, see kernels/NOTES.md):
// v66's halves for split calls too (each half writes the fp32 partials of its 256 columns; half 0
// the split's lse; the combine kernels merge them, at 2 splits too: no in-kernel cluster combine
// in the halves kernel), which config 7 then forces at any split count. Off, config 7 halves only
// unsplit calls, and the halves kernel is v66's tested code.
#ifndef DSPARKCTL_WS_DIMS_PARTIALS
#define DSPARKCTL_WS_DIMS_PARTIALS 0
#endif
constexpr bool kPlanWsDimsPartials = DSPARKCTL_WS_DIMS_PARTIALS == 1;
static_assert(DSPARKCTL_WS_DIMS_PARTIALS == 0 || DSPARKCTL_WS_DIMS_PARTIALS == 1, "on or off");

inline int sparse_mla_ws_dims_split(const SparseMlaPlanDevice& d, const SparseMlaPlan& plan, int T, int head_blocks) {
  if (!kPlanWsDimsSplit || !plan.warp_specialized || plan.num_splits != 1) return 1;
  return 2 * int64_t(T) * head_blocks <= d.sms ? 2 : 1;
}

// The plan for one call: layout, heads per CTA, tile size, split count. false: bad arguments.
inline bool sparse_mla_plan_for(const SparseMlaPlanDevice& d, int T, int H, int topk, int extra_topk, int config,
                                int requested_splits, SparseMlaPlan* plan) {
  if (plan == nullptr || d.sms < 1 || T < 0 || H < 1 || H > 128 || topk < 1 || extra_topk < 0) return false;
  const bool auto_layout = config == kConfigAuto;
  bool heads16 = config == kConfigSmall16 || config == kConfigLarge16;
  bool heads32 = config == kConfigLarge32;
  const bool force_ws = config == kConfigLargeWs || config == kConfigLargeWsDims;
  const bool force_dims = config == kConfigLargeWsDims;
  if (config == kConfigSmall16) config = kConfigSmall;
  if (config == kConfigLarge16 || config == kConfigLarge32 || force_ws) config = kConfigLarge;
  // Tiles per token at the full topk (+ extra topk): 32-candidate (SMALL) and 64-candidate (LARGE).
  const int tiles_s = (topk + 31) / 32 + (extra_topk + 31) / 32;
  const int tiles_l = (topk + 63) / 64 + (extra_topk + 63) / 64;
  if (config == kConfigAuto && sparse_mla_large32_fills_wave(d, T, H, tiles_s, tiles_l)) {
    config = kConfigLarge;
    heads32 = true;
  }
  if (config == kConfigAuto && H > 16) {
    // Latency-bound calls (T = 1, short drafts): when 16-head SMALL CTAs, one per SM, can
    // each take a single tile, use them. A CTA's time at one tile grows with its heads (v5
    // H200 numbers at T = 1, same grid: 16 heads 11.6 us, 32 heads 13.9 us; LARGE 32 -> 64
    // heads +4 us): the Q load, both mma phases and the fp32 partial it writes all scale
    // with M, while SMs stay idle. v7: bounded by one wave of co-resident 16-head CTAs
    // (SMs x occupancy, 2 per SM on Hopper, 1 on SM120/121), not by the SM count: the v6
    // H200 sweep had 16 heads/CTA ahead at 144-240 CTA-tiles (T = 1 H = 64 +1024 14.2 vs
    // 15.0 us, H = 128 +512 13.4 vs 13.8, DSpark T = 10 13.4 vs 14.2) and behind from 320
    // (T = 8 H = 32 +512 18.1 vs 16.3).
    const int64_t ctas16 = int64_t(T) * ((H + 15) / 16);
    const int64_t wave16 = int64_t(d.sms) * d.blocks_per_sm(kConfigSmall, 16);
    // v10: at >= 64 heads also up to 5/3 of that wave (v9 H200 sweep, automatic split count:
    // T = 1 H = 128 +1024, 288 CTA-tiles, 16.6 vs 17.9 us; DSpark +512 T = 5, 440, 17.7 vs
    // 19.2; while at 32 heads T = 8 +512, 320, it loses, 17.4 vs 15.0, and from 600 CTA-tiles
    // on it loses at every head count). Fitted to two H200 points: re-check on SM120.
    const int64_t work16 = ctas16 * tiles_s;
    // v18: 16-head CTAs over 64-candidate tiles (LARGE16, one per SM) when they give every
    // CTA a single tile in one wave while 16-head SMALL CTAs would not fit one per SM: a
    // 64-candidate tile costs a CTA ~1 us more than a 32-candidate one (H200, T = 1 H = 64
    // +512: 9.9 vs 8.8 us), less than two co-resident CTAs per SM and twice the partials
    // cost (same-call sweep: T = 1 H = 128 +512 10.8 vs 11.5-11.7, H = 64 +1024 11.0 vs
    // 11.2-11.3, DSpark T = 10 11.4 vs 11.7-11.8; and where LARGE16 needs a second tile per
    // CTA it loses: T = 1 H = 128 +1024 15.9 vs 14.6). Only where the layout fits (not SM120).
    const bool fits_large16 = d.smem_optin >= d.smem_large16;
    // v19: and without a split where one 16-head CTA per SM already covers >= 3/4 of the SMs
    // and each holds <= 3 tiles of 64: no fp32 partials and no combine, which at DSpark
    // verify sizes outweigh the chain (H200 sweep, DSpark T = 25: 16.8 vs 18.0 us in two calls).
    const bool large16_whole = 4 * ctas16 >= 3 * int64_t(d.sms) && ctas16 <= d.sms && tiles_l <= 3;
    if (fits_large16 && ctas16 > 0 && ((work16 > d.sms && ctas16 * tiles_l <= d.sms) || large16_whole)) {
      config = kConfigLarge;
      heads16 = true;
    } else if (fits_large16 && ctas16 > 0 && H >= 64 && work16 > wave16 && 3 * work16 <= 5 * wave16) {
      // v25: where 16-head SMALL CTAs would need a second tile in some slots (the v10 region
      // below), 16-head LARGE CTAs (chains of about two 64-candidate tiles, one CTA per SM,
      // about half the splits) are now at least as fast: with v23's early start the
      // like-for-like H200 sweeps had DSpark +512 T = 5 at 14.6-14.9 vs 15.2-15.3 us (three
      // calls) and T = 1 H = 128 +1024 at 14.8-15.0 vs 14.9-15.2 (two calls); before v23 the
      // latter lost (15.7 vs 14.5, v18). (v26 now takes both first: 32-head LARGE, one tile each.)
      config = kConfigLarge;
      heads16 = true;
    } else if (ctas16 > 0 && (work16 <= wave16 || (H >= 64 && 3 * work16 <= 5 * wave16))) {
      config = kConfigSmall;
      heads16 = true;
    }
  }
  if (config == kConfigAuto) {
    // Chosen from the layout sweep on the H200 (kernels/NOTES.md, v4): SMALL (32 candidates,
    // <= 32 heads per CTA, 2 CTAs per SM on Hopper) wins when its grid gives every CTA a
    // single tile (latency-bound calls: T = 1, DSpark drafts) and always at <= 16 heads;
    // LARGE (64 candidates, up to 64 heads sharing each gathered tile) wins as soon as CTAs
    // hold several tiles. SM120/SM121 only fit SMALL.
    const bool fits_large = d.smem_optin >= d.smem_large;
    config = kConfigSmall;
    if (fits_large && H > 16) {
      const int64_t ctas_s = int64_t(T) * ((H + 31) / 32);
      const int64_t target_s = int64_t(d.sms) * d.blocks_per_sm(kConfigSmall, 32);
      const bool one_tile_small = ctas_s > 0 && target_s / ctas_s >= tiles_s;
      // v12: a token with at most 3 LARGE tiles (<= 192 candidates in all) leaves LARGE
      // nothing to amortise its 64-head tile over, and its 64-candidate granularity wastes
      // more of a partial last tile (DSpark: 133 valid of 192). Full v12 sweep on the H200,
      // DSpark T = 25 / 50: SMALL 18.3 / 26.8 us, LARGE 19.4 / 27.8.
      // v24: not where the 64 x 64 tiles run wgmma, which made them ~15-20% faster after this
      // rule was set: the v23 sweeps (three H200 calls) had DSpark T = 50 at LARGE 22.7-23.4 us
      // vs SMALL 23.2-23.9, with the automatic plan timed beside them.
      const bool few_tiles = tiles_l <= 3 && !d.large_wgmma;
      if (!(one_tile_small && (H > 32 || T == 1)) && !few_tiles) config = kConfigLarge;
    }
  }
  if (config != kConfigLarge && config != kConfigSmall) return false;
  plan->config = config;
  plan->heads_per_cta = heads16 ? 16 : (heads32 ? 32 : (force_ws ? 64 : sparse_mla_heads_per_cta(config, H)));
  plan->tile_n = config == kConfigLarge ? 64 : 32;
  int head_blocks = (H + plan->heads_per_cta - 1) / plan->heads_per_cta;
  plan->num_splits = requested_splits > 0 ? (requested_splits < kMaxSplits ? requested_splits : kMaxSplits)
                                          : auto_splits(d, *plan, T, head_blocks, config == kConfigLarge ? tiles_l : tiles_s);
  const int ws_min_chain = auto_layout && requested_splits <= 0 ? sparse_mla_ws_padded_min_chain(*plan, H) : 0;
  if (ws_min_chain > 0) {
    SparseMlaPlan ws = *plan;
    ws.config = kConfigLarge;
    ws.heads_per_cta = 64;
    ws.tile_n = 64;
    if (sparse_mla_warp_specialized(d, ws)) {
      ws.num_splits = auto_splits(d, ws, T, 1, tiles_l);
      // one wave of WS CTAs, as in every measured row (more waves: unmeasured, the plan stays)
      if ((tiles_l + ws.num_splits - 1) / ws.num_splits >= ws_min_chain && int64_t(T) * ws.num_splits <= d.sms) {
        *plan = ws;
        head_blocks = 1;
      }
    }
  }
  plan->one_cta_per_sm = sparse_mla_one_cta_per_sm(d, *plan, int64_t(T) * head_blocks * plan->num_splits);
  plan->cluster = sparse_mla_cluster_gather(d, *plan, T, head_blocks, tiles_l);
  plan->warp_specialized = force_ws ? d.warp_specialized : sparse_mla_warp_specialized(d, *plan);
  // config 7 (plan sweeps, session 38): v66's halves at any grid where the WS kernel runs, unsplit
  // (with DSPARKCTL_WS_DIMS_PARTIALS at any split count; their partials go to the combine kernels,
  // 2 splits included, which then do not combine in the main kernel)
  const bool dims_ok = plan->num_splits == 1 || kPlanWsDimsPartials;
  plan->dims_split = force_dims ? (plan->warp_specialized && kPlanWsDimsSplit && dims_ok ? 2 : 1)
                                : sparse_mla_ws_dims_split(d, *plan, T, head_blocks);
  return true;
}

inline bool sparse_mla_large32_fills_wave(const SparseMlaPlanDevice& d, int T, int H, int tiles_s, int tiles_l) {
  if (H < 64 || T < 1 || d.smem_optin < d.smem_large || d.occ_large32 < 1) return false;
  SparseMlaPlan p32;
  p32.config = kConfigLarge;
  p32.heads_per_cta = 32;
  p32.tile_n = 64;
  SparseMlaPlan p64 = p32;
  p64.heads_per_cta = 64;
  const int hb32 = (H + 31) / 32, hb64 = (H + 63) / 64;
  const int s32 = auto_splits(d, p32, T, hb32, tiles_l), s64 = auto_splits(d, p64, T, hb64, tiles_l);
  const int64_t ctas32 = int64_t(T) * hb32 * s32, ctas64 = int64_t(T) * hb64 * s64;
  const int chain32 = (tiles_l + s32 - 1) / s32, chain64 = (tiles_l + s64 - 1) / s64;
  const int64_t sms = d.sms;
  if (ctas32 > sms) return false;  // more than one wave
  // One tile per CTA where no 16-head layout has one tile per CTA in one wave (the first
  // branch of the 16-head rules below would take that).
  const int64_t ctas16 = int64_t(T) * ((H + 15) / 16);
  const bool single16 = ctas16 * tiles_s <= sms * d.blocks_per_sm(kConfigSmall, 16) ||
                        (d.smem_optin >= d.smem_large16 && ctas16 * tiles_l <= sms);
  if (chain32 == 1) return !single16;
  if (4 * ctas32 < 3 * sms) return false;  // not a full wave
  // Session 23: not where the 64-head plan runs the warp-specialized kernel unsplit over <= 3
  // tiles too (half the CTAs, each tile gathered and converted once for all 64 heads): H200 plan
  // sweep (bench/results/plan_sweep_s23/), DSpark T = 50 without the extra cache 17.0 us vs 18.5
  // on 100 32-head CTAs.
  if (s64 == 1 && chain64 <= 3 && sparse_mla_warp_specialized(d, p64)) return false;
  return (s32 == 1 && chain32 <= 3) || (chain32 == 2 && chain64 == 1 && 4 * ctas64 >= 3 * sms);
}

}  // namespace dsparkctl
