// dsparkctl sparse-MLA decode kernel (DeepSeek-V4 MODEL1 FP8 cache). See sparse_mla_decode.cuh
// for the contract and kernels/NOTES.md for the design and the measured numbers.
//
// One source for sm_90a, sm_120a and sm_121a: the shared path is mma.sync m16n8k16 (bf16 /
// fp16 -> fp32), ldmatrix and plain loads (no tcgen05 / TMA); only sm_90a's 64-head x
// 64-candidate tiles add wgmma (v20 / v21, compiled out everywhere else).
//
// Work decomposition: one CTA = (token t, block of M = 16*MT heads, one split of that token's
// candidate tiles). All heads of a token attend to the same KV rows (MQA-style MLA), so a CTA
// gathers each tile of BN candidates once, dequantizes it into shared memory and uses it for
// all M heads. The tile holds the 448 nope dims as fp16 e4m3 values times 2^(scale - the
// tile's largest scale) (exact; the tile's V exponent is applied to P and the accumulators
// instead) and the 64 rope dims as bf16:
//   S[M, BN]   = Q[M, 512] . K[BN, 512]^T   8 warps, each a 16 x (BN/NWN) slice; nope part
//                fp16 x fp16 (Q converted once per CTA), rope part bf16
//   online softmax in base 2 (row max / sum reduced through shared memory)
//   O[M, 512] += P[M, BN] . V[BN, 512]      warp w owns nope dims [56w, 56w+56) (one fp16
//                pass, P with an 11-bit significand) and rope dims [448+8w, +8) (bf16 hi + lo P)
// The next tile's bytes are copied (cp.async) while the current tile is computed.
// Splits write fp32 partials (normalised O and base-2 lse) that a second kernel combines.
#include "sparse_mla_decode.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <type_traits>

namespace dsparkctl {
namespace {

constexpr int kD = 512;         // d_qk == d_v
constexpr int kDN = 448;        // FP8 nope dims
constexpr int kRowBytes = 576;  // data bytes per token
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSRow = kD + 8;  // smem row stride (bf16) of Q and KV (padded rows): 1040 B, ldmatrix conflict-free
constexpr int kORow = kD + 8;  // smem row stride (fp32) of the epilogue's staged output rows
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// ---------------------------------------------------------------- phase timeline (bench only)
// Built with -DDSPARKCTL_TIMELINE (bench/kernel_timeline.cu), thread 0 of every CTA records
// where its time goes: global timestamps at entry / exit and the SM cycles of each phase,
// summed over its tiles. ncu's stall samples say which instructions wait; this says which
// phase of the single-tile latency chain (T = 1, DSpark drafts) the microseconds are in.
// Off by default: the macros compile to nothing and the shared-memory slot is 0 bytes.
#ifdef DSPARKCTL_TIMELINE
constexpr int kTlSlots = 26;
constexpr int kTlSmemBytes = 8 * (kTlSlots - 4);
constexpr int kTlMaxCtas = 1 << 14;
// [cta][slot]: 0 globaltimer at entry, 1 at exit, 2 SM id, 3 tiles; cycles of: 19 entry to the
// Q loads issued, 4 the id loads issued, 5 the first ids published (waits for the lengths and
// ids), 6 the first barrier (Q landed), 7 the first tile's copy issued, 8 Q in shared memory,
// 9..14 per-tile phases summed (tile landed, dequantized, next copy issued + barrier, S, P, P.V),
// 15..18 the epilogue: the barrier after the last P.V, row scaling + staging in shared memory,
// the second barrier, the global stores; 20 the S phase's mma loops (thread 0's warp; slot 12
// then holds the rest of S: scaling, mask, row max, the barrier).
// (21-25: the warp-specialized kernel's points since entry, below.)
__device__ unsigned long long g_tl_main[kTlMaxCtas][kTlSlots];
// [combine block]: 0 globaltimer at entry, 1 after griddepcontrol.wait, 2 at exit.
__device__ unsigned long long g_tl_combine[kTlMaxCtas][4];
__device__ __forceinline__ unsigned long long tl_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define DSPARKCTL_TL_BEGIN(smem_tl)                                            \
  unsigned long long tl_prev = clock64();                                      \
  unsigned long long* tl_acc = reinterpret_cast<unsigned long long*>(smem_tl); \
  const int tl_cta = blockIdx.y * gridDim.x + blockIdx.x;                       \
  if (threadIdx.x == 0) {                                                      \
    for (int i = 0; i < kTlSlots - 4; ++i) tl_acc[i] = 0;                       \
    if (tl_cta < kTlMaxCtas) g_tl_main[tl_cta][0] = tl_globaltimer();         \
  }
// Cycles since the previous mark, added to phase slot `slot` (4..19).
#define DSPARKCTL_TL_MARK(slot)                                   \
  do {                                                            \
    const unsigned long long tl_now = clock64();                  \
    if (threadIdx.x == 0) tl_acc[(slot) - 4] += tl_now - tl_prev; \
    tl_prev = tl_now;                                             \
  } while (0)
#define DSPARKCTL_TL_END(tiles)                                                          \
  if (threadIdx.x == 0 && tl_cta < kTlMaxCtas) {                                         \
    unsigned smid;                                                                       \
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));                                   \
    for (int i = 0; i < kTlSlots - 4; ++i) g_tl_main[tl_cta][4 + i] = tl_acc[i];         \
    g_tl_main[tl_cta][2] = smid;                                                         \
    g_tl_main[tl_cta][3] = (tiles);                                                      \
    g_tl_main[tl_cta][1] = tl_globaltimer();                                             \
  }
#define DSPARKCTL_TL_COMBINE(slot) \
  if (threadIdx.x == 0 && blockIdx.x < kTlMaxCtas) g_tl_combine[blockIdx.x][slot] = tl_globaltimer()
// v31 warp-specialized kernel: each role's lead thread sums its phases' cycles in registers and
// stores them to phase slots base.. at the end (warpgroup 0: 4-10, warpgroup 1: 11-12 and 19
// for its copy issue (v37), producer: 13-18, and 20 for its tile max and raw reads (session 23));
// slots 0-3 as above, by thread 0.
// the CTA's record (grid.z: session 38's dims-split kernel; 0 elsewhere)
#define DSPARKCTL_WS_TL_CTA ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x)
#define DSPARKCTL_WS_TL_DECL                 \
  unsigned long long ws_tl[7] = {};          \
  unsigned long long ws_c = clock64();
#define DSPARKCTL_WS_TL(i)                       \
  do {                                           \
    const unsigned long long n_ = clock64();     \
    ws_tl[i] += n_ - ws_c;                       \
    ws_c = n_;                                   \
  } while (0)
#define DSPARKCTL_WS_TL_STORE(lead, base, n)                                                        \
  if ((lead) && DSPARKCTL_WS_TL_CTA < kTlMaxCtas) {                                \
    for (int i = 0; i < (n); ++i) g_tl_main[DSPARKCTL_WS_TL_CTA][(base) + i] = ws_tl[i]; \
  }
#define DSPARKCTL_WS_TL_STORE_AT(lead, i, slot) \
  if ((lead) && DSPARKCTL_WS_TL_CTA < kTlMaxCtas) g_tl_main[DSPARKCTL_WS_TL_CTA][slot] = ws_tl[i];
// (session 23) thread 0's SM cycles since the WS kernel's entry at five points, slots 21-25: Q in
// shared memory (warpgroup 0's loop starts), the output rows staged, the rows written (exit); the
// split's tile range known (24), Q's rows in registers (25).
#define DSPARKCTL_WS_TL_T0 const unsigned long long ws_t0 = clock64();
#define DSPARKCTL_WS_TL_ABS(slot) \
  if (threadIdx.x == 0 && DSPARKCTL_WS_TL_CTA < kTlMaxCtas) g_tl_main[DSPARKCTL_WS_TL_CTA][slot] = clock64() - ws_t0;
#ifdef DSPARKCTL_TL_EVENTS
// (session 40, timeline builds with -DDSPARKCTL_TL_EVENTS only) each WS role's lead thread records
// the SM cycles since the kernel's entry at which tile j (< kTlEvTiles) passed each point
// (WsEvent), so the roles' chains can be laid side by side tile by tile: the phase sums above
// cannot say which chain binds, since a phase that ends at a named barrier holds the wait in the
// next phase. A point right after a bar.sync reads early (the clock read issues before the barrier
// releases), so the events sit after mbarrier waits, wgmma waits and arrives.
constexpr int kTlEvTiles = 4;
enum WsEvent : int {
  kEvWg0Ready, kEvWg0S, kEvWg0Mask, kEvWg0PFree, kEvWg0P,  // warpgroup 0: tile ready, S, mask, P free, P handed off
  kEvWg1Ready, kEvWg1PV, kEvWg1Copies,                     // warpgroup 1: tile ready, P.V done (and P freed), copies
  kEvProdLanded, kEvProdPublished,                         // producer: rows landed, tile converted and published
  kTlEvKinds
};
__device__ unsigned long long g_tl_ev[kTlMaxCtas][kTlEvTiles * kTlEvKinds];
#define DSPARKCTL_WS_EV(lead, j, ev)                                                   \
  if ((lead) && (j) < kTlEvTiles && DSPARKCTL_WS_TL_CTA < kTlMaxCtas)                  \
    g_tl_ev[DSPARKCTL_WS_TL_CTA][(j) * kTlEvKinds + (ev)] = clock64() - ws_t0;
#else
#define DSPARKCTL_WS_EV(lead, j, ev)
#endif
// (session 41, with -DDSPARKCTL_TL_EVENTS -DDSPARKCTL_TL_PROLOGUE only) points of the WS prologue in
// tile 3's event slots (a diagnostic for calls of at most 3 tiles a CTA: DSpark T = 50), kind k:
// thread 0 0 Q's loads issued, 1 Q landed (every consumer), 2 Q converted and stored, 3 the proxy
// fence, 4 the consumers' barrier, 5 warpgroup 0's register increase; the producer's first thread
// 6 its register decrease, 7 tile 0's copies issued, 8 tile 1's; thread 0 9 past griddepcontrol.wait
#if defined(DSPARKCTL_TL_EVENTS) && defined(DSPARKCTL_TL_PROLOGUE)
#define DSPARKCTL_WS_PRO(lead, k) DSPARKCTL_WS_EV(lead, 3, k)
#else
#define DSPARKCTL_WS_PRO(lead, k)
#endif
#else
constexpr int kTlSmemBytes = 0;
#define DSPARKCTL_TL_BEGIN(smem_tl)
#define DSPARKCTL_TL_MARK(slot) do {} while (0)
#define DSPARKCTL_TL_END(tiles)
#define DSPARKCTL_TL_COMBINE(slot) do {} while (0)
#define DSPARKCTL_WS_TL_DECL
#define DSPARKCTL_WS_TL(i) do {} while (0)
#define DSPARKCTL_WS_TL_STORE(lead, base, n)
#define DSPARKCTL_WS_TL_STORE_AT(lead, i, slot)
#define DSPARKCTL_WS_TL_T0
#define DSPARKCTL_WS_TL_ABS(slot)
#define DSPARKCTL_WS_EV(lead, j, ev)
#define DSPARKCTL_WS_PRO(lead, k)
#endif
#if defined(DSPARKCTL_TL_EVENTS) && !defined(DSPARKCTL_TIMELINE)
#error "DSPARKCTL_TL_EVENTS is a timeline build's option: add -DDSPARKCTL_TIMELINE"
#endif
#if defined(DSPARKCTL_TL_PROLOGUE) && !defined(DSPARKCTL_TL_EVENTS)
#error "DSPARKCTL_TL_PROLOGUE is a tile-events build's option: add -DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_EVENTS"
#endif

// v52, NOPE_P_HILO (on; -DDSPARKCTL_NOPE_P_HILO=0 builds v51's single pass for A/Bs): the main
// kernel's nope P.V in two fp16 passes, P as hi + lo (~22 significant bits) instead of one (11
// bits, v12). The product's smoke found small outputs of large cancelling terms beyond FlashMLA's
// tolerance (1.04-1.58x; bench/results/smoke_h200_v51/), and a CPU emulation of the tile loop on
// its data (bench/p_precision_emulation.py) has one fp16 pass at 0.47-1.42 of the tolerance and hi
// + lo at 0.25, as with exact P. One more P buffer (M x PROW fp16) and the nope MMAs twice. The WS
// kernel has no room for the buffer (227,184 of 232,448 bytes): WS_NOPE_P_HILO gives it the lo
// pass from registers (see kWsLo8Shift).
#ifndef DSPARKCTL_NOPE_P_HILO
#define DSPARKCTL_NOPE_P_HILO 1
#endif
static_assert(DSPARKCTL_NOPE_P_HILO == 0 || DSPARKCTL_NOPE_P_HILO == 1, "on or off");
constexpr bool kNopePHiLo = DSPARKCTL_NOPE_P_HILO == 1;

// v60 (session 34; -DDSPARKCTL_LARGE16_SPLIT_K=0 restores v53): S of the 16-head 64-candidate tiles
// (LARGE16, mma.sync) split over the dims instead of the candidates. v53's S gave each of the 8
// warps 8 candidates x all 512 dims, so every warp read all of Q from shared memory each tile:
// 8 x 16 KB of Q + 64 KB of K = 192 KB a tile, ~1,500 cycles at 128 B a cycle (the v53 timeline:
// DSpark T = 25 s_mma 4,691 cycles over 3 tiles). Here warp w takes dims [128 (w % 4), +128) of
// candidates [32 (w / 4), +32): its Q fragments (32 registers) are loaded once per CTA, and each
// tile reads K once (64 KB) and exchanges the fp32 partial sums (16 KB written, 16 KB read back,
// over Q's region, which S no longer reads): 96 KB a tile. The sum of a score changes order (4
// partials), so outputs move within fp32 rounding of v53's. H200 A/B, same call, 3 alternating
// rounds (bench/results/kernel_h200_v60_large16_split_k/): DSpark T = 25 15.24 -> 14.95 us, every
// other row within +-0.35 us (the timeline's prediction, ~0.9 us at T = 25, was not reached).
// -DDSPARKCTL_SMALL_SPLIT_K (v60, default 1 = on): the same for SMALL's 32-head x 32-candidate
// tiles, where each of the 8 warps read 16 KB of Q and K twice, 192 KB a tile. All 8 warps take
// one m-tile and a 128-dim part of all 32 candidates: 32 more registers, so only where SMALL is
// built for one CTA per SM (SM120's budget: sm_120a / sm_121a, or -DDSPARKCTL_SMALL_MIN_BLOCKS=1 on
// Hopper, which measures it). H200 A/B of two SM120-register builds, SMALL forced: DSpark T = 25
// -0.7 us, T = 50 -1.5, +512 T = 5 / 10 / 25 / 50 -0.5 / -1.1 / -2.4 / -5.3, 128 heads T = 1
// -0.2 / -0.4; T = 5 +0.3 (SMALL16 takes T = 5 on SM120). SMALL16's version (8 warps x 64 dims, =2)
// lost on long chains (DSpark +512 T = 50 +35 us, 16 heads +1024 T = 64 +11) and is off.
#ifndef DSPARKCTL_LARGE16_SPLIT_K
#define DSPARKCTL_LARGE16_SPLIT_K 1
#endif
#ifndef DSPARKCTL_SMALL_SPLIT_K
#define DSPARKCTL_SMALL_SPLIT_K 1
#endif
static_assert(DSPARKCTL_LARGE16_SPLIT_K == 0 || DSPARKCTL_LARGE16_SPLIT_K == 1, "on or off");
static_assert(DSPARKCTL_SMALL_SPLIT_K >= 0 && DSPARKCTL_SMALL_SPLIT_K <= 2, "0 off, 1 SMALL, 2 SMALL and SMALL16");
constexpr bool kLarge16SplitK = DSPARKCTL_LARGE16_SPLIT_K == 1;
constexpr int kSmallSplitK = DSPARKCTL_SMALL_SPLIT_K;

// v61 / v62 (session 35): the dequantization's integer work, cut four ways (each flag =0 rebuilds
// the version before it; outputs bit for bit unchanged: the same conversions and products).
// The v60 Nsight Compute run of LARGE16 had half of its executed instructions integer or select
// work and its issue slots 26% busy.
// v61, DSPARKCTL_POW2_F32: a chunk's fp16 multiplier 2^(b - max) built as an fp32 power of two and
// packed by one convert (rounding to nearest gives fp16's subnormals and 0 below 2^-24 exactly)
// instead of v13's three-way select. DSPARKCTL_DEQ_LANE_HALVES: padded rows, 16-byte chunks: each
// lane loads the half of its raw chunk that it stores first (odd lanes the second half) as its
// own 8-byte load, so the converted halves need no per-value odd / even select (v60 SASS: ~56 SEL
// a thread a LARGE16 tile); the stores are unchanged. LARGE16 on sm_90a: 3,600 -> 3,512 SASS
// instructions, 169 -> 159 registers. H200, same call, 3 rounds against v60
// (bench/results/kernel_h200_v61_dequant/): DSpark T = 25 15.00 -> 14.44 us, T = 10 11.33 -> 10.79,
// the 16-head rows -0.1 to -0.6, every row within +0.07.
// v62, DSPARKCTL_DEQ_SPLIT16: both halves of a raw word converted from one 32-bit register split
// into two 16-bit ones in PTX, so ptxas reads the high half in place (no shift a word: -28 SASS
// instructions in LARGE16, -112 in the 8-byte WS kernel's producer). DSPARKCTL_DEQ_UNSIGNED: the
// chunk -> candidate division and the scale byte's index in unsigned arithmetic (the signed forms
// add sign fix-ups a chunk: -48 in LARGE16, ~-130 in the 8-byte kernels). Two same-call runs
// against v61 (bench/results/kernel_h200_v62_dequant2/): mean -0.16 / -0.08 us over the 34 short rows,
// DSpark +512 T = 10 -0.35 / -0.43, +512 T = 50 -0.29 / -0.35; 128 heads +1024 T = 64 +0.5 / +0.8.
#ifndef DSPARKCTL_POW2_F32
#define DSPARKCTL_POW2_F32 1
#endif
#ifndef DSPARKCTL_DEQ_LANE_HALVES
#define DSPARKCTL_DEQ_LANE_HALVES 1
#endif
#ifndef DSPARKCTL_DEQ_SPLIT16
#define DSPARKCTL_DEQ_SPLIT16 1
#endif
#ifndef DSPARKCTL_DEQ_UNSIGNED
#define DSPARKCTL_DEQ_UNSIGNED 1
#endif
static_assert(DSPARKCTL_POW2_F32 == 0 || DSPARKCTL_POW2_F32 == 1, "on or off");
static_assert(DSPARKCTL_DEQ_LANE_HALVES == 0 || DSPARKCTL_DEQ_LANE_HALVES == 1, "on or off");
static_assert(DSPARKCTL_DEQ_SPLIT16 == 0 || DSPARKCTL_DEQ_SPLIT16 == 1, "on or off");
static_assert(DSPARKCTL_DEQ_UNSIGNED == 0 || DSPARKCTL_DEQ_UNSIGNED == 1, "on or off");
constexpr bool kPow2F32 = DSPARKCTL_POW2_F32 == 1;
constexpr bool kDeqLaneHalves = DSPARKCTL_DEQ_LANE_HALVES == 1;
constexpr bool kDeqSplit16 = DSPARKCTL_DEQ_SPLIT16 == 1;
constexpr bool kDeqUnsigned = DSPARKCTL_DEQ_UNSIGNED == 1;
// v63 (session 35), the tile loader's copies (each flag =0 rebuilds v62; outputs bit for bit):
// DSPARKCTL_CP_IGNORE_SRC issues the zero-filling cp.async with PTX's ignore-src predicate
// instead of a src-size register (ptxas rebuilt the predicate from the size with ~5 integer
// instructions a copy: sign bit, shift, xor, subtract, mask, compare). DSPARKCTL_PREFETCH_ONE_TEST:
// the main kernels' loader tests each candidate's offset once, in the copy's own asm (source
// address and ignore-src predicate from one compare), instead of selecting -1 and testing the
// 64-bit result again for the address and again for the copy's size. LARGE16 on sm_90a: 3,432 ->
// 3,224 SASS instructions; the 8-byte kernels ~-400, the 8-byte WS kernel -304. H200, same call,
// 3 rounds against v62 (bench/results/kernel_h200_v63_prefetch/): DSpark T = 25 14.54 -> 13.88 us,
// T = 10 11.03 -> 10.77, +512 T = 10 18.03 -> 17.57, the 16-head rows -0.1 to -0.5; the WS rows,
// whose 16-byte kernel changes by 16 instructions, within -0.33 / +0.29 (noise-sized).
#ifndef DSPARKCTL_CP_IGNORE_SRC
#define DSPARKCTL_CP_IGNORE_SRC 1
#endif
static_assert(DSPARKCTL_CP_IGNORE_SRC == 0 || DSPARKCTL_CP_IGNORE_SRC == 1, "on or off");
constexpr bool kCpIgnoreSrc = DSPARKCTL_CP_IGNORE_SRC == 1;
#ifndef DSPARKCTL_PREFETCH_ONE_TEST
#define DSPARKCTL_PREFETCH_ONE_TEST 1
#endif
static_assert(DSPARKCTL_PREFETCH_ONE_TEST == 0 || DSPARKCTL_PREFETCH_ONE_TEST == 1, "on or off");
constexpr bool kPrefetchOneTest = DSPARKCTL_PREFETCH_ONE_TEST == 1;
// v64 (session 36; each flag =0 rebuilds v63; outputs bit for bit): DSPARKCTL_DEQ_SW_HALVES does
// for the swizzled 16-byte tiles (the wgmma kernels' LARGE / LARGE32 on sm_90a) what
// DEQ_LANE_HALVES does for padded rows: a chunk whose odd piece is stored first (chunks 4-7 of
// each 8) loads that half first, so the converted halves need no `sw ? b : a` select (56 SEL
// fewer in each; LARGE32 <2, 64, 16> -24 SASS instructions, LARGE <4, 64, 16> -40).
// DSPARKCTL_WS_LO_SPLIT16 converts warpgroup 1's e4m3 lo part of P (WS_NOPE_P_HILO) through
// fp8x4_to_f16x2x2 too (DEQ_SPLIT16's in-place halves: no shift a word, 8 a tile). H200, same
// call, 3 rounds against v63 (bench/results/kernel_h200_v64_candidates/): T = 1 at 128 heads +1024
// (LARGE32) 12.99 -> 12.66 us, 64 heads +512 T = 8 17.17 -> 16.98, every other row within
// -0.11 / +0.20 (noise-sized).
#ifndef DSPARKCTL_DEQ_SW_HALVES
#define DSPARKCTL_DEQ_SW_HALVES 1
#endif
static_assert(DSPARKCTL_DEQ_SW_HALVES == 0 || DSPARKCTL_DEQ_SW_HALVES == 1, "on or off");
constexpr bool kDeqSwHalves = DSPARKCTL_DEQ_SW_HALVES == 1;
#ifndef DSPARKCTL_WS_LO_SPLIT16
#define DSPARKCTL_WS_LO_SPLIT16 1
#endif
static_assert(DSPARKCTL_WS_LO_SPLIT16 == 0 || DSPARKCTL_WS_LO_SPLIT16 == 1, "on or off");
[[maybe_unused]] constexpr bool kWsLoSplit16 = DSPARKCTL_WS_LO_SPLIT16 == 1;
// v65 (session 37; DSPARKCTL_WS_TAIL16=0 rebuilds v64; outputs bit for bit): a WS tile whose live
// rows (its positions below the row's length) all fall in its first 16 candidates, e.g. DSpark's
// third tile at valid length 133 (5 live), is converted by all 128 producer threads (2 of the 14
// units of each of the 16 rows a thread, instead of warp 0 alone converting its 16 rows' full
// share while the other warps idle, which is why v41's tail skip gained nothing), and the
// consumers run P for its first 16 columns and P.V for its first k-step only (a sequence of its
// own, so the full tiles' has no branch between its wgmmas). Rows 16-63 keep stale bytes: S still
// reads them (m64n64: at n16 one chain is as long, v41; two n16 chains cost the full tiles up to
// +2 us, session 37), but their scores are masked by a select and no P.V reads them. 16-byte path
// only (the 8-byte one lands rows elsewhere). Why: the probe bench/results/kernel_h200_v65_tail16/
// probe_valid/ had DSpark T = 50 at 17.98 us with valid length 133 and 14.71 with 128: the 5-live
// tile cost a full tile. H200, same call, 3 rounds against v64 (run3/): DSpark T = 50 17.71 ->
// 16.70, the full-tile WS rows -0.12 / +0.66 (mean +0.2: the code the tiles share grew by 200
// SASS instructions), every other row within +-0.1.
#ifndef DSPARKCTL_WS_TAIL16
#define DSPARKCTL_WS_TAIL16 1
#endif
static_assert(DSPARKCTL_WS_TAIL16 == 0 || DSPARKCTL_WS_TAIL16 == 1, "on or off");
[[maybe_unused]] constexpr bool kWsTail16 = DSPARKCTL_WS_TAIL16 == 1;
// v75 (session 50; DSPARKCTL_WS_DH_UNSPLIT, on; =0 rebuilds v74; outputs bit for bit): the halves
// kernel is launched unsplit only (sparse_mla_ws_dims_split), so its split paths (warpgroup 1's fp32
// staging, the partial rows, v45's cluster combine) are compiled out and the split constants folded:
// 10,408 -> 8,704 SASS instructions, same 168 registers. Nothing it runs changed, yet DSpark T = 50
// ran 15.36 -> 15.14 us in the bench (4 alternating rounds, every candidate round below every v74
// round) and 15.76 -> 15.31 per call in the timeline build (13.84 -> 13.43 at valid length 128):
// bench/results/kernel_h200_s50_dh_unsplit/. Session 49's and 50's tail candidates had shown the
// converse, code added to warpgroup 0's loop slowing tiles that never ran it.
#ifndef DSPARKCTL_WS_DH_UNSPLIT
#define DSPARKCTL_WS_DH_UNSPLIT 1
#endif
static_assert(DSPARKCTL_WS_DH_UNSPLIT == 0 || DSPARKCTL_WS_DH_UNSPLIT == 1, "on or off");
[[maybe_unused]] constexpr bool kWsDhUnsplit = DSPARKCTL_WS_DH_UNSPLIT == 1;
// v76 (session 51; DSPARKCTL_WS_DH_QSHARE, on; =0 rebuilds v75): the two halves of a row block run as
// a 2-CTA cluster that shares Q. Each CTA loads and converts 32 of the 64 rows (and their slow-path
// shifts) and writes them into its own Q region and, by st.async counted on the peer's mbarrier, into
// the peer's; warpgroup 0 waits for the peer's 32,896 bytes before it reads Q. Why: session 50's
// one-body-per-half candidate (bench/results/kernel_h200_s50_dh_half_bodies/) had the halves'
// prologues contending (both CTAs of a row load and convert the same 64 KB of Q; ~4,000 of the
// ~10,400 cycles before tile 0), with half 1's rows staged ~1,700 cycles earlier once half 0's
// prologue ran late. H200, same call, 4 alternating rounds against v75
// (bench/results/kernel_h200_s50_dh_qshare/): DSpark T = 50 15.15 -> 14.33 us (every candidate round
// below every v75 round), Q ready ~8,600 -> ~6,300 cycles after entry, 15.2 -> 14.3 us per call in
// the timeline build and 13.39 -> 12.52 at valid length 128; every other row within +-0.3 (kernels
// unchanged). 46 of 46 bench cases bit for bit v75's. The one way it can differ from v75 in the last
// bits: Q rows whose exponents take the slow path in one half of the heads only (the path is decided
// per 32 rows now, per 64 in v75; tests/test_kernel_gpu.py covers it).
#ifndef DSPARKCTL_WS_DH_QSHARE
#define DSPARKCTL_WS_DH_QSHARE 1
#endif
static_assert(DSPARKCTL_WS_DH_QSHARE == 0 || DSPARKCTL_WS_DH_QSHARE == 1, "on or off");
[[maybe_unused]] constexpr bool kWsDhQShare = DSPARKCTL_WS_DH_QSHARE == 1 && DSPARKCTL_WS_DH_UNSPLIT == 1;
// v67 (session 39; DSPARKCTL_WS_DH_DIRECT, on; =0 rebuilds v66; outputs bit for bit): an unsplit
// call of v66's halves kernel writes its bf16 rows from warpgroup 1's accumulators straight to
// global memory (a 4 x 4 transpose of 32-bit words within each quad makes every lane's store 8
// consecutive dims of one row), instead of staging fp32 rows in shared memory, a second CTA barrier
// and reading them back. Same values, same rounding. Why: v66's timeline of DSpark T = 50 had
// 3,172 cycles from warpgroup 1's last P.V to the rows written (32 KB a CTA; the store ceiling
// alone is ~1,300, bench/store_ceiling.cu), of a ~27,000-cycle CTA. H200, same call, 4 rounds
// against v66 (bench/results/kernel_h200_ws_dh_direct/): DSpark T = 50 15.54 -> 15.41 us (every
// round below v66's best; the timeline's CTA 3,155 -> 2,433 cycles from staged to written, 15.77
// -> 15.34 us), the only bench row that runs the halves kernel.
#ifndef DSPARKCTL_WS_DH_DIRECT
#define DSPARKCTL_WS_DH_DIRECT 1
#endif
static_assert(DSPARKCTL_WS_DH_DIRECT == 0 || DSPARKCTL_WS_DH_DIRECT == 1, "on or off");
[[maybe_unused]] constexpr bool kWsDhDirect = DSPARKCTL_WS_DH_DIRECT == 1;
// v68 (session 40; DSPARKCTL_WS_DH_RING3, on; =0 rebuilds v67, its SASS function for function):
// the halves kernel (v66) with a third KV buffer in Q's 64 KB. Warpgroup 0 (S, the mask and P; no O
// accumulators there) loads Q's 32 k-steps into registers once (128 registers a thread; session
// 39's -DDSPARKCTL_WS_DH_QREG=32 form, bit for bit) and runs S with A from registers; Q's shared
// memory then holds buffer 2 of a 3-buffer ring (tile j in buffer j % 3). Warpgroup 1 issues tile
// 2's copies as soon as warpgroup 0 has read Q, and tile j + 3's after the consumers free tile j;
// the producer prepares tile k's offsets after converting tile k - 2, as before. Why: v67 issued
// tile 2's copies only after tile 0's P.V freed its buffer, so at DSpark T = 50 (3 tiles a CTA) the
// producer waited ~1,600 cycles a tile for rows to land. Outputs bit for bit. H200, same call
// (bench/results/kernel_h200_ws_dh_ring3/): DSpark T = 50 15.33 -> 15.17 us, best of 6 alternating
// rounds (run3), 15.30 -> 15.18 of 4 (run2); the halves forced on 64 heads +1024 T = 8 (18 tiles a
// CTA) 65.6 -> 61.3 us in the timeline build; every other row runs other kernels. (run1 prepared
// tile 2's offsets before converting tile 0 and gained nothing: that delayed tile 0.) The one-CTA
// WS kernels keep 2 buffers; their shared-memory layout moved 48 bytes (3 sets of tile barriers).
#ifndef DSPARKCTL_WS_DH_RING3
#define DSPARKCTL_WS_DH_RING3 1
#endif
static_assert(DSPARKCTL_WS_DH_RING3 == 0 || DSPARKCTL_WS_DH_RING3 == 1, "on or off");
[[maybe_unused]] constexpr bool kWsDhRing3 = DSPARKCTL_WS_DH_RING3 == 1;
// v71 (session 44, DSPARKCTL_WS_DH_COPY1; 1 by default, 0 rebuilds v70): in the halves kernel (ring
// of 3) the producer prepares tile 1's offsets right after issuing tile 0's copies and converts tile 0
// next; warpgroup 1 issues tile 1's copies once Q is in shared memory, from the offsets the producer
// posts on offs[1] (an mbarrier, whose first phase is then tile 1's). v70 prepared and issued tile 1
// before converting tile 0. Why: session 43's flight diagnostic (bench/results/kernel_h200_ws_flight/)
// had tile 0's rows land ~260 cycles after their copies and be read ~2,400 cycles later, after tile 1's
// prep, barrier and copy issue; converting tile 0 before tile 1's prep (session 43's CONV0_FIRST)
// published it ~2,600 cycles earlier but delayed tile 1 by its whole prep and issue. Here only the copy
// issue (~500 cycles) moves out of tile 0's way, to a warpgroup that is idle then. Outputs bit for bit.
// H200, same call (bench/results/kernel_h200_ws_dh_copy1/): DSpark T = 50 15.20 -> 15.14 us (5 rounds,
// run1), 15.21 -> 15.06 (6 rounds, run2, every round below v70's best) and 15.31 -> 15.21 (8 rounds,
// run3, this build against =0); the other rows within noise.
// Tile 0 is looked at ~860 cycles earlier but its conversion, beside the consumers' Q conversion,
// takes ~3,400 cycles instead of ~2,500, so it is published at about the same cycle (run1's points).
#ifndef DSPARKCTL_WS_DH_COPY1
#define DSPARKCTL_WS_DH_COPY1 1
#endif
static_assert(DSPARKCTL_WS_DH_COPY1 == 0 || DSPARKCTL_WS_DH_COPY1 == 1, "on or off");

// v73 (session 46, DSPARKCTL_SPLIT_FRONT; 1 by default, 0 rebuilds v72): where a call's tile count
// does not divide by its split count, a row whose main length is below its tile capacity (its last
// main tiles partial or empty: topk is a capacity, and DSpark's valid length is min(prefix, 128) +
// gamma against topk 192) gives the larger shares to its first splits, not its last: each bound
// ceil(ntf s / S) instead of floor(ntf s / S). The floor form gave the extra tile to the last splits,
// which lie in the extra cache, while the main cache's cheap tail sat in a small split. v72's
// timeline of DSpark +512 T = 25 (11 tiles, 5 splits; bench/results/kernel_h200_v72_timeline/) had
// its slowest CTAs 3.7 us past the median: split 4 with three full extra tiles. Front-loaded, split 0
// takes the two full main tiles and the 5-live tail. The decision is the row's (its lengths, which
// every CTA of the row reads alike), made once the lengths are in; the speculative ids stay the floor
// form's and are used where the range starts on one of their tiles. Rows whose main length fills its
// whole tiles (len = ceil(topk / BN) x BN, which needs topk to be a multiple of BN) keep v72's cut and
// outputs; elsewhere outputs move at the rounding level (partials regroup). The bound test
// (sb S != ntf s, ints) is exact while ntf x num_splits (<= 64) stays below 2^31: ~33 million tiles.
// H200, same call against v72, 5 rounds (bench/results/kernel_h200_split_front/run2/): DSpark +512
// T = 25 23.09 -> 21.94 us, +512 T = 50 31.86 -> 31.41 (every round of each below every v72 round);
// the rows it does not touch bit for bit and within the slot-order spread (run3/). Always
// front-loading (run1/, removed) gained as much on those two rows but cost the decode rows whose main
// tiles are full 0.2-0.6 us: their front splits held the main tiles, which gather slower than the
// extra cache's.
#ifndef DSPARKCTL_SPLIT_FRONT
#define DSPARKCTL_SPLIT_FRONT 1
#endif
static_assert(DSPARKCTL_SPLIT_FRONT == 0 || DSPARKCTL_SPLIT_FRONT == 1, "on or off");
// v74 (session 47, DSPARKCTL_T_EARLY_STORE; 1 by default, 0 rebuilds v73's code: its sm_90a SASS has
// v73's instructions, two LARGE32 kernels' order and registers differing slightly since the rows'
// staging became one lambda for both epilogues): the 32-head
// transposed-wgmma tiles (v30) write their output rows in two halves of each warpgroup's dims, the
// first while the last tile's P.V of the second still runs. v72's timeline of T = 1 at 128 heads
// +1024 (72 one-tile CTAs) had the last P.V at ~3,455 cycles, then ~3,100 of epilogue (staging 871,
// the 64 KB fp32 partial's stores 2,042) in series behind it. The P.V is issued as two commit groups
// (dims blocks 0-1, then 2-3 of each warpgroup; each accumulator still sums its k-steps in the same
// order, so outputs are bit for bit v73's); the first group's rows are staged and written after
// wgmma.wait_group 1. The staging cannot use the KV tile then (the second group reads it): the fp32
// rows' low halves go to the raw staging buffer, free at the last tile (no next copy). The wait is
// in the loop's last-tile branch: leaving the groups in flight past the loop made ptxas serialize
// the wgmmas (C7520). H200, two same-call A/Bs of 5 and 7 rounds, one with each build benched first
// (bench/results/kernel_h200_t_early_store/), median change: DSpark +512 T = 5 -0.14 us, +512 T = 10
// -0.17, 32 heads +512 T = 8 -0.15 (each in both calls); T = 1 at 128 heads +1024 +0.16 / -0.15 (no
// change beyond its spread). In the timeline build the CTAs were not shorter (~+0.1 us at the three
// shapes: the staging and stores issue beside the P.V and share shared memory with it); the bench's
// gain is most likely the stores' drain, which a CTA's clock does not see, starting earlier.
#ifndef DSPARKCTL_T_EARLY_STORE
#define DSPARKCTL_T_EARLY_STORE 1
#endif
static_assert(DSPARKCTL_T_EARLY_STORE == 0 || DSPARKCTL_T_EARLY_STORE == 1, "on or off");
// The first tile (of the full tile range of topk + extra) of split `split` of `num_splits`, in the
// floor form (the cut before the lengths are known; ValidTiles front-loads it where v73 does).
__device__ __forceinline__ int split_first_tile(int ntf, int split, int num_splits) {
  return int((int64_t(ntf) * split) / num_splits);
}

// v72 (session 45, DSPARKCTL_SINK_EARLY; 1 by default, 0 rebuilds v71): the block-per-row combine
// kernels (calls of > 4 splits: every T = 1 call) load their row's attention-sink logit with their
// first loads (the partials). `__ldg(sink + h)` sat behind `!empty`, a condition on the split
// weights, so it could not be issued before them: a dependent L2 round trip after the weights, and a
// second one for the lse, loaded again behind the output's store (aliasing). Same arithmetic on the
// same value: outputs bit for bit. H200, same call, 6 rounds twice against v71
// (bench/results/kernel_h200_sink_early/): every T = 1 row 0.09-0.37 us faster in both calls (128
// heads +512: 9.87 -> 9.73 and 9.86 -> 9.78; 16 heads +1024 -0.26 / -0.37), DSpark +512 T = 25
// -0.19 / -0.35, the 16-head T = 8 rows -0.36 / -0.51. The same early load in the warp-row combines
// (2-4 splits) and the WS 2-split cluster combine gained nowhere and read DSpark T = 10 +0.17 in both
// calls; in the WS kernels' unsplit row finish (warpgroup 0's rows' logits in sFact before its first
// tile) it left DSpark T = 50 where it was. Both were measured and removed (rejected_parts.patch there).
#ifndef DSPARKCTL_SINK_EARLY
#define DSPARKCTL_SINK_EARLY 1
#endif
static_assert(DSPARKCTL_SINK_EARLY == 0 || DSPARKCTL_SINK_EARLY == 1, "on or off");
constexpr bool kSinkEarlyBlock = DSPARKCTL_SINK_EARLY == 1;

// v70 (session 44, DSPARKCTL_FINISH_ROWS_LOOP; 1 by default, 0 rebuilds v69): the v30 transposed
// tiles' row finish (finish_rows_t: the lse and each row's output factor, inlined under the last P.V
// and for a CTA without tiles) as a rolled loop over its 4 rows instead of unrolled. The 32-head
// LARGE kernel falls from 6,184 to 5,120 SASS instructions on sm_90a (-17%; no other function
// changes). Why: session 39's SASS-by-line count put ~1,700 of its instructions in that finish, and
// v63's ncu of its one-tile CTAs (T = 1 at 128 heads +1024) had 22% of stall samples "no
// instruction". Outputs bit for bit. H200, same call, 6 rounds against v69
// (bench/results/kernel_h200_finish_rows_loop/): DSpark +512 T = 10 17.55 -> 17.41 us (every round
// below v69's best); T = 1 at 128 heads +1024 12.86 -> 12.83 and +512 T = 5 +0.03, within noise, so
// the instruction fetch of that finish was not what those one-tile CTAs wait for.
#ifndef DSPARKCTL_FINISH_ROWS_LOOP
#define DSPARKCTL_FINISH_ROWS_LOOP 1
#endif
static_assert(DSPARKCTL_FINISH_ROWS_LOOP == 0 || DSPARKCTL_FINISH_ROWS_LOOP == 1, "on or off");

// v69 (session 42, DSPARKCTL_WS_Q_EARLY; 1 by default): the one-CTA WS kernels' consumers issue Q's
// loads right after griddepcontrol.wait, before the lengths (ValidTiles) are loaded. Why: in v68's
// SASS the consumers' Q loads follow the lengths' load and its uniform-datapath use (R2UR waits for
// it), so Q's 74 KB (64 heads) started a global load's latency late. NOTES v41 and v49 measured
// this on v40 / v46 and saw no consistent change; on v68 (ring of 3, consumer copies) it gains:
// H200, same call, 5 alternating rounds (bench/results/kernel_h200_ws_q_early/, best): 16 heads
// +512 T = 64 26.33 -> 25.77, +1024 T = 32 27.47 -> 27.09, T = 64 39.64 -> 39.05, DSpark +512
// T = 25 23.64 -> 23.38 us; every other --short row within +-0.1. 2 also moves the halves kernel's
// loads: DSpark T = 50 15.19 -> 15.39 there (its tile 0 gates, and Q's loads then compete with the
// producer's), so 1 leaves that kernel as v68. 0 is v68.
#ifndef DSPARKCTL_WS_Q_EARLY
#define DSPARKCTL_WS_Q_EARLY 1
#endif
static_assert(DSPARKCTL_WS_Q_EARLY >= 0 && DSPARKCTL_WS_Q_EARLY <= 2, "0 off, 1 one-CTA WS kernels, 2 also the halves kernel");

template <int MT, int BN>
struct Cfg {
  static constexpr int M = 16 * MT;  // heads per CTA (padded)
  static constexpr int NWN = (8 / MT) < (BN / 8) ? (8 / MT) : (BN / 8);  // S-phase warps along N
  static constexpr int NTW = BN / 8 / NWN;  // 8-wide n-tiles per S-phase warp
  static constexpr int DEQ_GROUP = BN == 64 ? 4 : 2;  // chunks per batch of loads (Tile::store)
  static constexpr int S_WARPS = MT * NWN;  // warps busy in the S phase
  static constexpr int PROW = BN + 8;       // smem P row stride (bf16)
  // v30: the 32-head x 64-candidate tiles also run wgmma on sm_90a (transposed), whose
  // operands need 1 KB boundaries: their Q and P regions are rounded up (the other layouts'
  // regions already are 1 KB multiples or do not need it; their offsets are unchanged).
  static constexpr int ALIGN = (M == 32 && BN == 64) ? 1024 : 1;
  static constexpr int Q_BYTES = (M * kSRow * 2 + ALIGN - 1) / ALIGN * ALIGN;
  static constexpr int KV_BYTES = BN * kSRow * 2;
  static constexpr int P_BYTES = (M * PROW * 2 + ALIGN - 1) / ALIGN * ALIGN;
  static constexpr int RED_BYTES = NWN * M * 4;
  static constexpr int OFF_Q = 0;
  static constexpr int OFF_KV = OFF_Q + Q_BYTES;
  static constexpr int OFF_P = OFF_KV + KV_BYTES;
  static constexpr int OFF_PLO = OFF_P + P_BYTES;
  static constexpr int OFF_P16 = OFF_PLO + P_BYTES;  // fp16 P, scaled to the tile's V exponent
  static constexpr int OFF_P16LO = OFF_P16 + P_BYTES;  // its lo part (NOPE_P_HILO builds only)
  static constexpr int OFF_RMAX = OFF_P16LO + (kNopePHiLo ? P_BYTES : 0);
  static constexpr int OFF_RSUM = OFF_RMAX + RED_BYTES;
  static constexpr int OFF_IDX = OFF_RSUM + RED_BYTES;
  static constexpr int OFF_RAW = OFF_IDX + 2 * BN * 16;         // raw tile bytes [BN][576]
  static constexpr int OFF_SCALE = OFF_RAW + BN * kRowBytes;    // [2][BN][8] scale slots
  static constexpr int OFF_QMAX = OFF_SCALE + 2 * BN * 8;     // [M][2] |q| nope max bits, per half row
  static constexpr int OFF_MBAR = OFF_QMAX + M * 2 * 4;  // the staging buffer's mbarrier (v27 clusters)
  static constexpr int OFF_TL = OFF_MBAR + 8;  // phase cycle sums (timeline builds only)
  static constexpr int SMEM = OFF_TL + kTlSmemBytes;
  static_assert(S_WARPS <= kWarps, "S phase needs at most 8 warps");
  static_assert(M * kORow * 4 <= OFF_P, "the epilogue stages M fp32 rows in the Q and KV regions");
  static_assert(NTW == 1 || NTW % 2 == 0, "n-tiles per warp: 1 or even");
  static_assert(BN % 16 == 0, "BN multiple of 16");
};

// Element (r, k) of a [R][512] Q or KV tile in shared memory, swizzled (v20: the sm_90a wgmma
// tiles only; everywhere else rows are padded to kSRow). K-major with the 128-byte swizzle
// wgmma reads by descriptor: the 512 dims are 8 blocks of 64 (block b at b * R * 128 bytes), a
// row is 128 contiguous bytes of its block, and its 16-byte piece j sits at position j ^ (r % 8).
// Any 8 consecutive rows (from a multiple of 8) at one piece are 8 bank groups, so ldmatrix
// reads of it are conflict-free too. Needs R % 8 == 0 and a 1 KB-aligned tile base (wgmma
// applies the XOR to address bits 4-6 from bits 7-9). The portable path keeps padded rows: with
// this layout its address arithmetic cost 0.1-2.3 us per call on the H200's 32-candidate
// tiles (DSpark T = 50 +2.3 us; bench/results/kernel_h200_v20/), and the padded branches are
// written as v13 wrote them, so every portable kernel's SASS is v13's.
template <int R>
__device__ __forceinline__ int sw128_off(int r, int k) {
  static_assert(R % 8 == 0, "swizzled tiles hold whole 8-row groups");
  return (k >> 6) * (R * 64) + r * 64 + ((((k >> 3) ^ r) & 7) << 3) + (k & 7);
}

// ---------------------------------------------------------------- PTX helpers
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Asynchronous global->shared copy of `bytes` (16 or 8); src_size 0 reads nothing and
// zero-fills, which is how invalid candidates become exact zero rows without a load.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool valid) {
  if constexpr (kCpIgnoreSrc) {
    // zero-fills the BYTES when !valid, reading nothing (as src-size 0 does)
    if constexpr (BYTES == 16) {
      asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\tcp.async.cg.shared.global [%0], [%1], 16, p;\n\t}\n"
                   ::"r"(smem_u32(dst)), "l"(src), "r"(uint32_t(valid)) : "memory");
    } else {
      asm volatile("{\n\t.reg .pred p;\n\tsetp.eq.u32 p, %2, 0;\n\tcp.async.ca.shared.global [%0], [%1], %3, p;\n\t}\n"
                   ::"r"(smem_u32(dst)), "l"(src), "r"(uint32_t(valid)), "n"(BYTES) : "memory");
    }
    return;
  }
  const int src_size = valid ? BYTES : 0;
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_size)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_u32(dst)), "l"(src), "n"(BYTES),
                 "r"(src_size)
                 : "memory");
  }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
[[maybe_unused]] __device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// ---- sm_90a only: wgmma for LARGE's S (v20). The bodies compile to nothing for other targets,
// and the kernel only calls them where kWgmma or kWgmmaT is true (sm_90a builds: the 64 x 64
// tiles, and since v30 the transposed 32 x 64 ones).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(DSPARKCTL_NO_WGMMA)
#define DSPARKCTL_WGMMA 1
#else
#define DSPARKCTL_WGMMA 0
#endif
// Descriptor of an operand in sw128_off's layout: 128-byte swizzle (layout type 1), 8-row
// groups 1 KB apart (stride byte offset), start address in 16-byte units in bits 0-13 (a
// k-step adds its byte offset / 16 there). The leading byte offset is unused for K-major
// operands (1, the default) and, for an MN-major one (V as P.V's B; v30: V^T as A, one 64-wide
// M block per instruction), the distance between consecutive 64-wide MN blocks.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void* p, uint32_t leading_bytes = 16) {
  return uint64_t((smem_u32(p) & 0x3ffffu) >> 4) | (uint64_t(leading_bytes >> 4) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}
__device__ __forceinline__ void wgmma_fence() {
#if DSPARKCTL_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Commit the issued wgmma group and wait for it; the halves apart where work goes between them
// (v30: the lse writers' row finish while the last P.V runs).
__device__ __forceinline__ void wgmma_commit() {
#if DSPARKCTL_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait() {
#if DSPARKCTL_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}
// All but the newest committed group complete (the T_EARLY_STORE epilogue's first half).
[[maybe_unused]] __device__ __forceinline__ void wgmma_wait_one() {
#if DSPARKCTL_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit_wait() {
  wgmma_commit();
  wgmma_wait();
}
// Shared-memory writes by ordinary stores become visible to wgmma (the async proxy) only
// after this fence by the writing threads, before the barrier that orders them.
__device__ __forceinline__ void fence_proxy_async_smem() {
#if DSPARKCTL_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// v27 (sm_90a): the head-block CTAs of one (token, split) run as a thread-block cluster and
// fetch each tile once: every CTA copies 1/cluster of the tile's rows with a multicast bulk
// copy that lands in every CTA's staging buffer and counts its bytes on every CTA's mbarrier.
// Hopper-only like wgmma (-DDSPARKCTL_NO_CLUSTER_GATHER builds Hopper without it); everywhere
// else each CTA gathers the whole tile itself with cp.async.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(DSPARKCTL_NO_CLUSTER_GATHER)
#define DSPARKCTL_CLUSTER_GATHER 1
#else
#define DSPARKCTL_CLUSTER_GATHER 0
#endif
// mbarriers: the v27 clusters' staging buffer and the v31 warp-specialized kernel's tile ring.
#define DSPARKCTL_MBAR (DSPARKCTL_CLUSTER_GATHER || DSPARKCTL_WGMMA)
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
#if DSPARKCTL_MBAR
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n"
               "fence.mbarrier_init.release.cluster;\n" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
#endif
}
// One arrival that also expects `bytes` of asynchronous copies in this phase.
[[maybe_unused]] __device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
#if DSPARKCTL_MBAR
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if DSPARKCTL_MBAR
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory,
// counted on the mbarrier at `bar` (v31d: one candidate row per copy).
[[maybe_unused]] __device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if DSPARKCTL_MBAR
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
#endif
}
// A hint: `bytes` at `src` into L2 (no shared memory, no completion to wait for; a warp issues
// these one lane after another).
[[maybe_unused]] __device__ __forceinline__ void prefetch_l2_bulk(const void* src, uint32_t bytes) {
#if DSPARKCTL_MBAR
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
#endif
}
// One plain arrival (release, CTA scope): the v31 ring's producer and consumers.
[[maybe_unused]] __device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if DSPARKCTL_MBAR
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
// Named barriers (id 1..15) over `n` threads: bar.arrive does not wait, so a producer side
// can signal and run on while the consumer side waits in bar.sync.
[[maybe_unused]] __device__ __forceinline__ void nbar_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
[[maybe_unused]] __device__ __forceinline__ void nbar_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
// Every thread of the CTA, reached from different code (a warp-specialized kernel's roles): the
// non-aligned form, which PTX allows in divergent code (bar.sync / __syncthreads() is .aligned).
[[maybe_unused]] __device__ __forceinline__ void cta_sync_divergent() {
  asm volatile("barrier.sync 0;\n" ::: "memory");
}
// OR of `v` over the n threads of named barrier `id` (every one of them waits).
[[maybe_unused]] __device__ __forceinline__ bool nbar_or(int id, int n, bool v) {
  uint32_t r;
  asm volatile("{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.or.pred p, %2, %3, q;\n selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(r)
               : "r"(uint32_t(v)), "r"(id), "r"(n)
               : "memory");
  return r != 0;
}
// A warpgroup's register allocation (sm_90a): producers give registers back, consumers take them.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#if DSPARKCTL_WGMMA
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#if DSPARKCTL_WGMMA
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
__device__ __forceinline__ void cluster_arrive() {
#if DSPARKCTL_CLUSTER_GATHER
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if DSPARKCTL_CLUSTER_GATHER
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
[[maybe_unused]] __device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r = 0;
#if DSPARKCTL_CLUSTER_GATHER
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory to the same
// shared-memory offset in every CTA of `mask`, counted on each one's mbarrier at `bar`.
[[maybe_unused]] __device__ __forceinline__ void bulk_copy_multicast(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                                    uint16_t mask) {
#if DSPARKCTL_CLUSTER_GATHER
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
          smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar)), "h"(mask)
      : "memory");
#endif
}
// D[64 x 32] += A[64 x 16] . B[32 x 16]^T, both K-major by descriptor, fp32 accumulators in
// the mma.sync m16n8 C layout: warp w % 4 of the warpgroup holds rows 16 (w % 4) + lane / 4
// (+ 8), d[n][.] the columns 8 n + 2 (lane % 4) (+ 1). TRANS_A (v30): A is MN-major instead
// (V^T of the 32-head tiles' P.V: the KV tile's rows are A's k index).
template <bool BF16, bool TRANS_A = false>
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[4][4], uint64_t da, uint64_t db) {
#if DSPARKCTL_WGMMA
#define DSPARKCTL_WGMMA_ARGS(TA)                                                                               \
  " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, " TA ", 0;\n}\n" \
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),             \
        "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),             \
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])                                            \
      : "l"(da), "l"(db), "r"(1)
  if constexpr (BF16 && TRANS_A) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"
                 DSPARKCTL_WGMMA_ARGS("1"));
  } else if constexpr (TRANS_A) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16"
                 DSPARKCTL_WGMMA_ARGS("1"));
  } else if constexpr (BF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16"
                 DSPARKCTL_WGMMA_ARGS("0"));
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16"
                 DSPARKCTL_WGMMA_ARGS("0"));
  }
#undef DSPARKCTL_WGMMA_ARGS
#endif
}
// Four 8 x 8 b16 matrices from registers to shared memory, transposed (sm_90): register i of
// a thread holds row lane / 4, columns 2 (lane % 4) (+ 1) of matrix i, and lane 8 i + r gives
// the address of matrix i's stored row r, i.e. its column r (8 contiguous b16, 16 bytes).
__device__ __forceinline__ void stsm_x4_t(void* p, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if DSPARKCTL_WGMMA
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_u32(p)), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#endif
}

// D[64 x N] += A[64 x 16] . B[16 x N]: A K-major, B MN-major (transposed: V's rows are the k
// index), both by descriptor; the P.V of the 64 x 64 tiles (v21). Inline asm needs every
// accumulator spelled out: N / 2 registers, d[j][c] = register 4 j + c.
#define DSPARKCTL_ACC8(j) \
  "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3]), "+f"(d[j + 1][0]), "+f"(d[j + 1][1]), "+f"(d[j + 1][2]), "+f"(d[j + 1][3])
#define DSPARKCTL_ACC32(j) DSPARKCTL_ACC8(j), DSPARKCTL_ACC8(j + 2), DSPARKCTL_ACC8(j + 4), DSPARKCTL_ACC8(j + 6)
__device__ __forceinline__ void wgmma_pv_m64n192_f16(float (&d)[24][4], uint64_t da, uint64_t db) {
#if DSPARKCTL_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\nwgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 1;\n}\n"
      : DSPARKCTL_ACC32(0), DSPARKCTL_ACC32(8), DSPARKCTL_ACC32(16)
      : "l"(da), "l"(db), "r"(1));
#endif
}
// The same with A (P) from registers (WS_NOPE_P_HILO's lo pass): a[] in the mma.sync m16n8k16 A
// layout of the warp's 16 rows, a[0] / a[1] rows lane / 4 (+ 8), a[2] / a[3] the same 8 columns on.
[[maybe_unused]] __device__ __forceinline__ void wgmma_pv_m64n192_f16_ra(float (&d)[24][4], const uint32_t (&a)[4],
                                                                         uint64_t db) {
#if DSPARKCTL_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\nwgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"
      : DSPARKCTL_ACC32(0), DSPARKCTL_ACC32(8), DSPARKCTL_ACC32(16)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#endif
}
[[maybe_unused]] __device__ __forceinline__ void wgmma_pv_m64n64_f16_ra(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db) {
#if DSPARKCTL_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : DSPARKCTL_ACC32(0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#endif
}
template <bool BF16>
__device__ __forceinline__ void wgmma_pv_m64n64(float (&d)[8][4], uint64_t da, uint64_t db) {
#if DSPARKCTL_WGMMA
#define DSPARKCTL_PV64_ARGS \
  " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1;\n}\n" \
      : DSPARKCTL_ACC32(0) : "l"(da), "l"(db), "r"(1)
  if constexpr (BF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
                 DSPARKCTL_PV64_ARGS);
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"
                 DSPARKCTL_PV64_ARGS);
  }
#undef DSPARKCTL_PV64_ARGS
#endif
}
#undef DSPARKCTL_ACC32
#undef DSPARKCTL_ACC8

// 2^k for any int k: exact wherever fp32 holds the power (denormals included), 0 below, inf
// above. Branch-free (selects): it is inlined at every use.
__device__ __forceinline__ float pow2i(int k) {
  k = k < -150 ? -150 : (k > 128 ? 128 : k);
  const int normal = k >= -126 ? (k + 127) << 23 : 0;
  const int denormal = (k >= -149 && k < -126) ? 1 << (k + 149) : 0;
  return __int_as_float(normal | denormal);
}
// 2^k as two factors, for x * a * b in two exact steps: each half of k is an fp32 normal power
// for |k| <= 252, and both halves share k's sign, so the intermediate never under- or
// overflows before the result does. Computed once per tile / row, applied per element.
struct Pow2Pair {
  float a, b;
  __device__ __forceinline__ explicit Pow2Pair(int k) : a(pow2i(k / 2)), b(pow2i(k - k / 2)) {}
  __device__ __forceinline__ float operator()(float x) const { return x * a * b; }
};
// The nope V tile holds e4m3 values times 2^(scale byte - tile max byte) in fp16, two per
// word: the fp16 multiplier 2^d (d <= 0; subnormal below 2^-14, 0 below 2^-24) for one chunk.
// E8M0 255 is NaN (OCP MX): its values become NaN, as NaN scales should.
// Branch-free (selects): a branch here kept ptxas from overlapping one chunk's work with the next.
__device__ __forceinline__ uint32_t pack_f16(float a, float b);
__device__ __forceinline__ uint32_t f16_pow2x2(uint32_t b, uint32_t maxb) {
  if constexpr (kPow2F32) {
    // 2^max(d, -126) is an fp32 normal; its fp16 rounding is 2^d down to 2^-24 and 0 below
    // (2^-25 ties to even, 0). NaN scales stay NaN.
    const int d = max(int(b) - int(maxb), -126);
    const float f = b == 255u ? __int_as_float(0x7fc00000) : __int_as_float((d + 127) << 23);
    return pack_f16(f, f);
  }
  const int d = int(b) - int(maxb);
  const int sub = d + 24 < 0 ? 0 : d + 24;
  uint32_t h = d >= -14 ? uint32_t(d + 15) << 10 : (d >= -24 ? 1u << sub : 0u);
  h = b == 255u ? 0x7e00u : h;
  return h | (h << 16);
}
// e4m3 x2 -> fp16 x2 (exact, hardware convert) times a power-of-two multiplier (one HMUL2,
// exact unless the product falls into fp16's subnormal range, where it rounds to nearest).
__device__ __forceinline__ uint32_t fp8x2_to_f16x2(uint32_t two, uint32_t mult) {
  __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  const __half2 r = __hmul2(*reinterpret_cast<__half2*>(&hr), *reinterpret_cast<const __half2*>(&mult));
  return *reinterpret_cast<const uint32_t*>(&r);
}
// Both fp16x2 halves of four e4m3 values in one word, each times mult (as fp8x2_to_f16x2).
__device__ __forceinline__ void fp8x4_to_f16x2x2(uint32_t w, uint32_t mult, uint32_t& lo, uint32_t& hi) {
  if constexpr (kDeqSplit16) {
    uint32_t a, b;
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(a), "=r"(b) : "r"(w));
    const __half2 m = *reinterpret_cast<const __half2*>(&mult);
    const __half2 ra = __hmul2(*reinterpret_cast<const __half2*>(&a), m);
    const __half2 rb = __hmul2(*reinterpret_cast<const __half2*>(&b), m);
    lo = *reinterpret_cast<const uint32_t*>(&ra);
    hi = *reinterpret_cast<const uint32_t*>(&rb);
  } else {
    lo = fp8x2_to_f16x2(w & 0xffffu, mult);
    hi = fp8x2_to_f16x2(w >> 16, mult);
  }
}
__device__ __forceinline__ uint32_t pack_f16(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
// Four fp32 values from their staged upper (hi) and lower (lo) 16-bit halves, two values a word
// (the v30 transposed tiles stage fp32 partials so, with stmatrix; exact).
__device__ __forceinline__ float4 join_f32_halves(uint2 hi, uint2 lo) {
  return make_float4(__uint_as_float(__byte_perm(lo.x, hi.x, 0x5410)), __uint_as_float(__byte_perm(lo.x, hi.x, 0x7632)),
                     __uint_as_float(__byte_perm(lo.y, hi.y, 0x5410)), __uint_as_float(__byte_perm(lo.y, hi.y, 0x7632)));
}
// The lo part of (a, b) after their fp16 hi part `hi` (NOPE_P_HILO): what rounding a and b to fp16
// left out, in fp32 (exact: a - hi is exact in fp32), and in fp16 (exact for normal results).
[[maybe_unused]] __device__ __forceinline__ float2 f16_rest_f32(float a, float b, uint32_t hi) {
  const __half2 h = *reinterpret_cast<const __half2*>(&hi);
  const float2 f = __half22float2(h);
  return make_float2(a - f.x, b - f.y);
}
[[maybe_unused]] __device__ __forceinline__ uint32_t f16_rest(float a, float b, uint32_t hi) {
  const float2 r = f16_rest_f32(a, b, hi);
  return pack_f16(r.x, r.y);
}
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }
// e4m3 x2 (low byte r.x) of r x scale (WS_NOPE_P_HILO, warpgroup 1's lo part; saturating, though
// |lo| x 2^kWsLo8Shift <= 256 < 448).
[[maybe_unused]] __device__ __forceinline__ uint32_t e4m3x2_scaled(float2 r, float scale) {
  return __nv_cvt_float2_to_fp8x2(make_float2(r.x * scale, r.y * scale), __NV_SATFINITE, __NV_E4M3);
}

// ---------------------------------------------------------------- tile loader
// A tile = BN consecutive candidate positions of one cache, staged as VEC-byte chunks: first
// the BN x (448 / VEC) nope chunks (chunk k: candidate k / NCPC, bytes VEC * (k % NCPC)), then
// the BN x (128 / VEC) rope chunks. Thread tid owns nope chunks tid + j * 256 and rope chunks
// tid + j * 256 both when copying them in (cp.async, coalesced: consecutive threads take
// consecutive bytes of a row) and when dequantizing them, so the staging buffer needs no
// barrier between one tile's dequantization and the next tile's copy. Threads tid < BN copy
// candidate tid's 8 scale bytes.
// v13: nope and rope chunks in separate ranges, so whether a chunk is nope is known per loop
// iteration at compile time (v12 mixed them per candidate row: a divergent branch per chunk,
// and ptxas dequantized the chunks one at a time, each a dependent LDS -> LDS.U8 -> convert
// -> STS chain; the phase timeline put dequantization at 2280 cycles of a 16-head T = 1 CTA).
// The thread index read anew where it is used: ptxas otherwise hoists every chunk's address
// arithmetic out of the tile loop and, at the register caps of LARGE and 32-head SMALL,
// spills it (v13 first build: 19 registers' worth reloaded per tile).
__device__ __forceinline__ int tid_fresh() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
}

// A chunk index's candidate, k / D for k >= 0 (DEQ_UNSIGNED: in unsigned arithmetic, without the
// signed division's fix-ups).
template <int D>
__device__ __forceinline__ int chunk_cand(int k) {
  return kDeqUnsigned ? int(unsigned(k) / unsigned(D)) : k / D;
}

template <int BN, int VEC>
struct Tile {
  static constexpr int NCPC = kDN / VEC;               // nope chunks per candidate
  static constexpr int RCPC = (kRowBytes - kDN) / VEC;  // rope chunks per candidate
  static constexpr int NOPE = BN * NCPC;
  static constexpr int ROPE = BN * RCPC;
  static constexpr int NPT_N = (NOPE + kThreads - 1) / kThreads;
  static constexpr int NPT_R = (ROPE + kThreads - 1) / kThreads;
  using Vec = typename std::conditional<VEC == 16, uint4, uint2>::type;

  // sOff: this tile's candidates as byte offsets into the cache, [0][BN] of the data row and
  // [1][BN] of its scale bytes; -1 = invalid (zero-filled, never read). The publisher of the
  // ids computed them once per candidate: the page division by the run-time page size was
  // ~48 instructions per chunk here (v11 ncu, big shape: 15.6% of the main kernel's stall samples).
  // All of the thread's source addresses are computed first, then the copies issued: each
  // cp.async is an asm statement with a memory clobber, so an offset load placed after one
  // waits for it (v13 timeline: ~1,000 cycles to issue a 16-head T = 1 CTA's first tile).
  static __device__ __forceinline__ void prefetch(const SparseMlaCache& c, const int64_t* sOff, uint8_t* sRaw,
                                                  uint8_t* sScale) {
    const int tid = tid_fresh();
    if constexpr (kOneTest) {
      prefetch_one_test(c, sOff, sRaw, sScale, tid);
    } else {
      prefetch_select(c, sOff, sRaw, sScale, tid);
    }
  }
  // PREFETCH_ONE_TEST everywhere but the 32-candidate tiles' 8-byte copies: SMALL's, at Hopper's
  // 128-register cap, spills 20 bytes with it (the 8-byte path holds 10 offsets a thread).
  static constexpr bool kOneTest = kPrefetchOneTest && !(BN == 32 && VEC == 8);
  static __device__ __forceinline__ void prefetch_select(const SparseMlaCache& c, const int64_t* sOff, uint8_t* sRaw,
                                                         uint8_t* sScale, int tid) {
    int64_t src[NPT_N + NPT_R + 1];
#pragma unroll
    for (int j = 0; j < NPT_N; ++j) {
      const int k = tid + j * kThreads;
      const int cand = chunk_cand<NCPC>(k < NOPE ? k : 0);
      const int64_t off = sOff[cand];
      src[j] = off >= 0 ? off + (k - cand * NCPC) * VEC : -1;
    }
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      const int cand = chunk_cand<RCPC>(r < ROPE ? r : 0);
      const int64_t off = sOff[cand];
      src[NPT_N + j] = off >= 0 ? off + kDN + (r - cand * RCPC) * VEC : -1;
    }
    src[NPT_N + NPT_R] = sOff[BN + (tid < BN ? tid : 0)];
#pragma unroll
    for (int j = 0; j < NPT_N; ++j) {
      const int k = tid + j * kThreads;
      if (NOPE % kThreads == 0 || k < NOPE) cp_async<VEC>(sRaw + k * VEC, c.base + (src[j] >= 0 ? src[j] : 0), src[j] >= 0);
    }
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      const int64_t a = src[NPT_N + j];
      if (ROPE % kThreads == 0 || r < ROPE) cp_async<VEC>(sRaw + (NOPE + r) * VEC, c.base + (a >= 0 ? a : 0), a >= 0);
    }
    if (tid < BN) {
      const int64_t a = src[NPT_N + NPT_R];
      cp_async<8>(sScale + tid * 8, c.base + (a >= 0 ? a : 0), a >= 0);
    }
    cp_async_commit();
  }

  // PREFETCH_ONE_TEST: as prefetch, but each copy tests its candidate's offset (-1 = invalid)
  // once, inside one asm statement that also forms the source address and issues the copy with
  // the ignore-src predicate. All offsets are loaded first: each copy's asm has a memory clobber,
  // so a load placed after one would wait for it.
  template <int BYTES>
  static __device__ __forceinline__ void cp_async_off(void* dst, const uint8_t* base, int64_t off, int add) {
    if constexpr (BYTES == 16) {
      asm volatile("{\n\t.reg .pred p;\n\t.reg .s64 a;\n\tsetp.lt.s64 p, %2, 0;\n\tcvt.s64.s32 a, %3;\n\t"
                   "add.s64 a, a, %2;\n\tselp.b64 a, 0, a, p;\n\tadd.s64 a, a, %1;\n\t"
                   "cp.async.cg.shared.global [%0], [a], 16, p;\n\t}\n"
                   ::"r"(smem_u32(dst)), "l"(base), "l"(off), "r"(add) : "memory");
    } else {
      asm volatile("{\n\t.reg .pred p;\n\t.reg .s64 a;\n\tsetp.lt.s64 p, %2, 0;\n\tcvt.s64.s32 a, %3;\n\t"
                   "add.s64 a, a, %2;\n\tselp.b64 a, 0, a, p;\n\tadd.s64 a, a, %1;\n\t"
                   "cp.async.ca.shared.global [%0], [a], %4, p;\n\t}\n"
                   ::"r"(smem_u32(dst)), "l"(base), "l"(off), "r"(add), "n"(BYTES) : "memory");
    }
  }
  static __device__ __forceinline__ void prefetch_one_test(const SparseMlaCache& c, const int64_t* sOff, uint8_t* sRaw,
                                                           uint8_t* sScale, int tid) {
    constexpr int N = NPT_N + NPT_R + 1;
    int64_t off[N];
    int add[N];
#pragma unroll
    for (int j = 0; j < NPT_N; ++j) {
      const int k = tid + j * kThreads;
      const int cand = chunk_cand<NCPC>(k < NOPE ? k : 0);
      off[j] = sOff[cand];
      add[j] = (k - cand * NCPC) * VEC;
    }
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      const int cand = chunk_cand<RCPC>(r < ROPE ? r : 0);
      off[NPT_N + j] = sOff[cand];
      add[NPT_N + j] = kDN + (r - cand * RCPC) * VEC;
    }
    off[N - 1] = sOff[BN + (tid < BN ? tid : 0)];
#pragma unroll
    for (int j = 0; j < NPT_N; ++j) {
      const int k = tid + j * kThreads;
      if (NOPE % kThreads == 0 || k < NOPE) cp_async_off<VEC>(sRaw + k * VEC, c.base, off[j], add[j]);
    }
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      if (ROPE % kThreads == 0 || r < ROPE) cp_async_off<VEC>(sRaw + (NOPE + r) * VEC, c.base, off[NPT_N + j], add[NPT_N + j]);
    }
    if (tid < BN) cp_async_off<8>(sScale + tid * 8, c.base, off[N - 1], 0);
    cp_async_commit();
  }

  // v27: the same tile, fetched once per cluster of `cs` head-block CTAs (16-byte path only):
  // CTA `rank` copies rows rank, rank + cs, ... with one multicast bulk copy per row part (448
  // nope bytes, 128 rope bytes), issued by threads spread over the 8 warps (a bulk copy's
  // operands are warp-uniform, so a warp issues its copies one by one). Every CTA expects the
  // bytes of all valid rows on its own mbarrier, zeroes its invalid rows itself (no copy lands
  // there) and copies all scale slots itself (8 bytes: under the bulk copy's 16-byte granule).
  static __device__ __forceinline__ void prefetch_cluster(const SparseMlaCache& c, const int64_t* sOff, uint8_t* sRaw,
                                                          uint8_t* sScale, uint64_t* bar, int cs) {
    static_assert(VEC == 16 && NCPC * VEC == kDN && RCPC * VEC == kRowBytes - kDN, "16-byte rows only");
    const int tid = tid_fresh();
    const int warp = tid >> 5, lane = tid & 31;
    if (tid < BN) {
      const int64_t a = sOff[BN + tid];
      cp_async<8>(sScale + tid * 8, c.base + (a >= 0 ? a : 0), a >= 0);
    }
    cp_async_commit();
    if (warp == 0) {
      uint32_t n = 0;
#pragma unroll
      for (int i = 0; i < BN; i += 32) n += __popc(__ballot_sync(0xffffffffu, sOff[i + lane] >= 0));
      if (lane == 0) mbar_expect_tx(bar, n * uint32_t(kRowBytes));
    }
    if (tid < BN && sOff[tid] < 0) {
      const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int ch = 0; ch < NCPC; ++ch) *reinterpret_cast<uint4*>(sRaw + (tid * NCPC + ch) * VEC) = z;
#pragma unroll
      for (int ch = 0; ch < RCPC; ++ch) *reinterpret_cast<uint4*>(sRaw + (NOPE + tid * RCPC + ch) * VEC) = z;
    }
    const int j = lane * kWarps + warp;  // this thread's local row slot: consecutive slots in different warps
    if (j * cs < BN) {
      const int i = j * cs + int(cluster_rank());
      const int64_t off = sOff[i];
      if (off >= 0) {
        const uint16_t mask = uint16_t((1u << cs) - 1u);
        bulk_copy_multicast(sRaw + i * NCPC * VEC, c.base + off, kDN, bar, mask);
        bulk_copy_multicast(sRaw + (NOPE + i * RCPC) * VEC, c.base + off + kDN, kRowBytes - kDN, bar, mask);
      }
    }
  }

  // Dequantize this thread's chunks: nope FP8 * 2^(scale - maxb) -> fp16 (the tile's V is
  // this times 2^(maxb - 127), applied to P and the accumulators instead), rope bf16 copied.
  // Chunks go in groups of up to G: the group's staged bytes and scale bytes are all read
  // before any is converted, so the shared-memory latencies overlap; G bounds the registers
  // that holds (LARGE and 32-head SMALL already sit at their register caps).
  template <int G, bool SW>
  static __device__ __forceinline__ void store_nope(const uint8_t* sRaw, const uint8_t* sScale, __nv_bfloat16* sKV,
                                                    int tid, uint32_t maxb, int j0) {
    Vec rn[G];
    uint32_t sb[G];
    // DEQ_LANE_HALVES: this lane's first-stored half (odd lanes: bytes 8-15) in rn's low words;
    // DEQ_SW_HALVES: the same for the swizzled tiles, by chunk (chunks 4-7 of 8: bytes 8-15)
    constexpr bool kHalves = kDeqLaneHalves && VEC == 16 && !SW;
    constexpr bool kSwHalves = kDeqSwHalves && VEC == 16 && SW;
    const int first_lane = kHalves ? (tid & 1) * 8 : 0;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int k = tid + (j0 + g) * kThreads;
      if (j0 + g < NPT_N && (NOPE % kThreads == 0 || k < NOPE)) {
        const int cand = chunk_cand<NCPC>(k);
        const int first = kSwHalves ? (((k - cand * NCPC) >> 2) & 1) * 8 : first_lane;
        if constexpr (kHalves || kSwHalves) {
          const uint2 x = *reinterpret_cast<const uint2*>(sRaw + k * VEC + first);
          const uint2 y = *reinterpret_cast<const uint2*>(sRaw + k * VEC + (8 - first));
          reinterpret_cast<uint4&>(rn[g]) = make_uint4(x.x, x.y, y.x, y.y);
        } else {
          rn[g] = *reinterpret_cast<const Vec*>(sRaw + k * VEC);
        }
        sb[g] = kDeqUnsigned ? sScale[unsigned(cand) * 8u + (unsigned(k - cand * NCPC) * unsigned(VEC)) / 64u]
                             : sScale[cand * 8 + ((k - cand * NCPC) * VEC) / 64];
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int k = tid + (j0 + g) * kThreads;
      if (j0 + g < NPT_N && (NOPE % kThreads == 0 || k < NOPE)) {
        const int cand = chunk_cand<NCPC>(k);
        const int ch = k - cand * NCPC;
        const uint32_t* w = reinterpret_cast<const uint32_t*>(&rn[g]);
        const uint32_t mult = f16_pow2x2(sb[g], maxb);
        uint32_t o[VEC / 2];
#pragma unroll
        for (int i = 0; i < VEC / 4; ++i) fp8x4_to_f16x2x2(w[i], mult, o[2 * i], o[2 * i + 1]);
        if constexpr (VEC == 16) {
          // Padded rows: odd lanes write their second half first, so each store instruction of
          // a warp covers consecutive 16-byte words (no 2-way bank conflict from the 32-byte
          // stride). Swizzled: the chunk's two pieces (2ch, 2ch + 1) repeat their positions
          // every 4 chunks (next 64-dim block), so chunks 4-7 of each 8 write their odd piece
          // first: a quarter-warp's stores then cover 8 bank groups (bank simulation: 4
          // wavefronts per store instruction, the minimum; without the swap 7.4).
          const uint4 a = make_uint4(o[0], o[1], o[2], o[3]);
          const uint4 b = make_uint4(o[4], o[5], o[6], o[7]);
          if constexpr (kSwHalves) {
            // a holds the piece stored first (see the loads)
            const int sw = (ch >> 2) & 1;
            *reinterpret_cast<uint4*>(sKV + sw128_off<BN>(cand, ch * 16 + sw * 8)) = a;
            *reinterpret_cast<uint4*>(sKV + sw128_off<BN>(cand, ch * 16 + (sw ^ 1) * 8)) = b;
          } else if constexpr (SW) {
            const int sw = (ch >> 2) & 1;
            *reinterpret_cast<uint4*>(sKV + sw128_off<BN>(cand, ch * 16 + sw * 8)) = sw ? b : a;
            *reinterpret_cast<uint4*>(sKV + sw128_off<BN>(cand, ch * 16 + (sw ^ 1) * 8)) = sw ? a : b;
          } else if constexpr (kHalves) {
            // a holds the half this lane stores first (see the loads)
            __nv_bfloat16* row = sKV + cand * kSRow + ch * VEC;
            *reinterpret_cast<uint4*>(row + first_lane) = a;
            *reinterpret_cast<uint4*>(row + (8 - first_lane)) = b;
          } else {
            uint4* dst = reinterpret_cast<uint4*>(sKV + cand * kSRow + ch * VEC);
            const bool odd = tid & 1;
            dst[odd ? 1 : 0] = odd ? b : a;
            dst[odd ? 0 : 1] = odd ? a : b;
          }
        } else {
          uint4* dst = reinterpret_cast<uint4*>(SW ? sKV + sw128_off<BN>(cand, ch * 8) : sKV + cand * kSRow + ch * VEC);
          dst[0] = make_uint4(o[0], o[1], o[2], o[3]);
        }
      }
    }
  }

  // TAIL (v29): nope chunk groups that hold only candidates >= `rows` are skipped (those rows
  // keep stale values: see kTailSkip). One uniform branch per group of G chunks, so a group's
  // batched loads are as before (a per-chunk bound cost full tiles ~500 cycles in the v29 A/B).
  template <int G, bool SW, bool TAIL>
  static __device__ __forceinline__ void store(const uint8_t* sRaw, const uint8_t* sScale, __nv_bfloat16* sKV,
                                               uint32_t maxb, int rows) {
    const int tid = tid_fresh();
    Vec rr[NPT_R];
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      if (ROPE % kThreads == 0 || r < ROPE) rr[j] = *reinterpret_cast<const Vec*>(sRaw + (NOPE + r) * VEC);
    }
#pragma unroll
    for (int j = 0; j < NPT_R; ++j) {
      const int r = tid + j * kThreads;
      if (ROPE % kThreads == 0 || r < ROPE) {
        const int cand = chunk_cand<RCPC>(r);
        *reinterpret_cast<Vec*>(SW ? sKV + sw128_off<BN>(cand, kDN + (r - cand * RCPC) * (VEC / 2))
                                   : sKV + cand * kSRow + kDN + (r - cand * RCPC) * (VEC / 2)) = rr[j];
      }
    }
#pragma unroll
    for (int j0 = 0; j0 < NPT_N; j0 += G) {
      if (TAIL && j0 > 0 && j0 * kThreads >= rows * NCPC) break;
      store_nope<G, SW>(sRaw, sScale, sKV, tid, maxb, j0);
    }
  }
};

// The tile's largest nope scale byte (its V exponent + 127), by every warp for itself (no
// barrier): byte 7 of a scale slot is padding, 255 (NaN) is not a magnitude. Invalid
// candidates' slots were zero-filled, so they never raise it.
template <int BN>
__device__ __forceinline__ uint32_t tile_max_scale(const uint8_t* sScaleTile, int lane) {
  // v13: bytes extracted and compared as integers (v12's __vcmpeq4 / __vmaxu4 are emulated
  // on these GPUs: ~70 dependent instructions per candidate before the dequantization).
  uint32_t m = 0;
#pragma unroll
  for (int c = lane; c < BN; c += 32) {
    const uint2 w = *reinterpret_cast<const uint2*>(sScaleTile + c * 8);
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      const uint32_t b = __byte_perm(i < 4 ? w.x : w.y, 0u, 0x4440u + (i & 3));
      m = max(m, b == 255u ? 0u : b);
    }
  }
  return __reduce_max_sync(0xffffffffu, m);
}

// Exponent shift of one Q row's nope part into fp16: from the largest |q| (bf16 magnitude
// bits), so the row's largest value lands in [2^14, 2^15). 0 for zero / inf / NaN rows; at
// least -127, so 2^-shift is one fp32 factor (a row below 2^-113 is ~0 in S either way).
__device__ __forceinline__ int q_row_shift(uint32_t m0, uint32_t m1) {
  const int e = int((m0 > m1 ? m0 : m1) >> 7);
  return (e == 0 || e >= 255) ? 0 : (e - 141 < -127 ? -127 : e - 141);
}

// Largest bf16 magnitude (bits) of an 8-value chunk.
__device__ __forceinline__ uint32_t q_chunk_max(const uint4& v) {
  const uint32_t m = __vmaxu2(__vmaxu2(v.x & 0x7fff7fffu, v.y & 0x7fff7fffu), __vmaxu2(v.z & 0x7fff7fffu, v.w & 0x7fff7fffu));
  return (m & 0xffffu) > (m >> 16) ? (m & 0xffffu) : (m >> 16);
}

__device__ __forceinline__ int clamp_len(const int32_t* lengths, int64_t stride, int t, int topk) {
  if (lengths == nullptr) return topk;
  const int v = __ldg(lengths + int64_t(t) * stride);  // signed: negative means 0
  return v < 0 ? 0 : (v > topk ? topk : v);
}

// Raw slot id of candidate `pos` (or -1 past the valid length); validated later, when the
// loaded value is first needed, so the load's latency hides behind a whole tile of work.
__device__ __forceinline__ int32_t load_id(const SparseMlaCache& c, int t, int pos, int len) {
  return pos < len ? __ldg(c.indices + int64_t(t) * c.indices_stride + pos) : -1;
}
// Speculative raw ids of full tiles sb and sb + 1 at position `row` of each (bounded by topk: always
// inside the tensor; -1 past it or past the split), loaded before the lengths say which tiles are
// valid (v4); used where the split's first valid tiles are those full tiles.
template <int BN>
__device__ __forceinline__ void load_spec_ids(const SparseMlaParams& p, int t, int sb, int se, int ntf_m, int row,
                                              int32_t (&spec)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int f = sb + r;
    if (f < se) {
      const SparseMlaCache& c = f < ntf_m ? p.main : p.extra;
      const int pos = (f < ntf_m ? f : f - ntf_m) * BN + row;
      if (pos < c.topk) spec[r] = __ldg(c.indices + int64_t(t) * c.indices_stride + pos);
    }
  }
}
// Validate a raw slot id (< 0, >= num_slots: invalid) into the byte offsets of its data row and
// of its scale bytes (-1, -1 when invalid).
struct SlotOffsets {
  int64_t off = -1, soff = -1;
};
__device__ __forceinline__ SlotOffsets slot_offsets(const SparseMlaCache& c, int32_t id) {
  SlotOffsets o;
  if (id >= 0 && int64_t(id) < c.num_slots) {
    // v43: pages of 2^k tokens (64, 256, 2: every cache SGLang builds) by shift and mask; the
    // run-time division is ~25 dependent instructions (I2F, MUFU.RCP, F2I, fix-ups), which were in
    // the WS producer's per-tile prep (session 25's ncu source view). Other sizes still divide.
    const uint32_t pbs = uint32_t(c.pbs);
    uint32_t page, row;
    if ((pbs & (pbs - 1u)) == 0u) {
      page = uint32_t(id) >> (__ffs(int(pbs)) - 1);
      row = uint32_t(id) & (pbs - 1u);
    } else {
      page = uint32_t(id) / pbs;
      row = uint32_t(id) - page * pbs;
    }
    const int64_t pbase = int64_t(page) * c.page_stride;
    o.off = pbase + int64_t(row) * kRowBytes;
    o.soff = pbase + int64_t(c.pbs) * kRowBytes + int64_t(row) * 8;
  }
  return o;
}
// ... and publish them for the tile loader.
__device__ __forceinline__ void publish_id(const SparseMlaCache& c, int32_t id, int64_t* sOff, int BN,
                                           int cand) {
  const SlotOffsets o = slot_offsets(c, id);
  sOff[cand] = o.off;
  sOff[BN + cand] = o.soff;
}

// A CTA's valid tiles, from the lengths: the static split [sb, se) of the full tile range (main
// tiles [0, ntf_m), then the extra cache's; since v73 each bound rounded up for a row whose main
// length is below its tile capacity) clipped to the row's valid tiles (main
// [0, nt_m), extra [ntf_m, ntf_m + nt_e)); the count before a full tile index is monotone and a
// bound is the same for the two splits it separates, so the splits still cover every valid tile
// once. Valid tile `it` -> (cache, first position, valid length).
template <int BN>
struct ValidTiles {
  int len_m, len_e, nt_m, nt_e, begin, end;
  // [sb, se) is the floor form of split `split` of `num_splits` over the ntf full tiles. v73
  // (DSPARKCTL_SPLIT_FRONT) front-loads it (each bound rounded up instead of down) where this row's
  // main length is below its tile capacity, i.e. its last main tiles are partial or empty.
  __device__ __forceinline__ ValidTiles(const SparseMlaParams& p, int t, int ntf_m, int sb, int se, int ntf, int split,
                                        int num_splits) {
    len_m = clamp_len(p.main.lengths, p.main.lengths_stride, t, p.main.topk);
    len_e = p.extra.topk > 0 ? clamp_len(p.extra.lengths, p.extra.lengths_stride, t, p.extra.topk) : 0;
    nt_m = (len_m + BN - 1) / BN;
    nt_e = (len_e + BN - 1) / BN;
    if constexpr (DSPARKCTL_SPLIT_FRONT == 1) {
      const bool front = len_m < ntf_m * BN;
      begin = before(ntf_m, sb + (front && sb * num_splits != ntf * split ? 1 : 0));
      end = before(ntf_m, se + (front && se * num_splits != ntf * (split + 1) ? 1 : 0));
    } else {
      begin = before(ntf_m, sb);
      end = before(ntf_m, se);
    }
  }
  __device__ __forceinline__ int before(int ntf_m, int f) const {
    const int fe = f - ntf_m;
    return (f < nt_m ? f : nt_m) + (fe < 0 ? 0 : (fe < nt_e ? fe : nt_e));
  }
  __device__ __forceinline__ void src(const SparseMlaParams& p, int it, const SparseMlaCache*& c, int& pos0, int& len) const {
    if (it < nt_m) {
      c = &p.main; pos0 = it * BN; len = len_m;
    } else {
      c = &p.extra; pos0 = (it - nt_m) * BN; len = len_e;
    }
  }
};

// The final lse from the row's sink logit `sk` (-inf without a sink).
__device__ __forceinline__ float finish_lse_sk(bool empty, float lse_nat, float sk, int base2_sink) {
  if (!base2_sink) return empty ? INFINITY : lse_nat;
  if (empty) return sk * kLog2e;  // -inf without a sink
  if (sk == -INFINITY) return lse_nat * kLog2e;
  const float mx = fmaxf(lse_nat, sk);
  return (mx + log1pf(expf(-fabsf(lse_nat - sk)))) * kLog2e;
}
// The row's sink logit, -inf without a sink.
__device__ __forceinline__ float sink_logit(const float* sink, int h) { return sink != nullptr ? __ldg(sink + h) : -INFINITY; }
// (The natural-lse test repeats finish_lse_sk's first line on purpose: without it here the main
// kernels' SASS changes, the sink load no longer confined to the base-2 path; v72 kept v71's.)
__device__ __forceinline__ float finish_lse(bool empty, float lse_nat, const float* sink, int h,
                                            int base2_sink) {
  if (!base2_sink) return empty ? INFINITY : lse_nat;
  return finish_lse_sk(empty, lse_nat, sink_logit(sink, h), base2_sink);
}

// A row's output factor f times the sink's gate (sink logit sk; the row's natural lse lse_nat).
__device__ __forceinline__ float sink_gate(float f, float sk, float lse_nat) { return f * (1.f / (1.f + expf(sk - lse_nat))); }
// out *= 1/l (and the sink gate); 0 for an empty row.
__device__ __forceinline__ float out_factor(bool empty, float l, float lse_nat, const float* sink,
                                            int h) {
  if (empty) return 0.f;
  float f = 1.f / l;
  if (sink != nullptr) f = sink_gate(f, __ldg(sink + h), lse_nat);
  return f;
}

// Empty row: no finite score (max -inf) and nothing summed (l = 0). A row whose every score is NaN
// (its only valid candidates are NaN rows, or its Q is NaN) also keeps max -inf, since the running
// max skips NaN, but sums NaN: it is not empty, and its lse is NaN, as in the reference (before
// v50, session 30, it was taken for an empty row, lse +inf, and in a split call such a split's NaN
// dropped out of the combine).
__device__ __forceinline__ bool row_empty(float m, float l) { return m == -INFINITY && l == 0.f; }
// The base-2 lse of a row's running max m and sum l (-inf for an empty row, NaN for a NaN row).
__device__ __forceinline__ float row_lse2(float m, float l) { return row_empty(m, l) ? -INFINITY : m + __log2f(l); }
// A finished output row (head h of token t, running max m in base 2 and sum l): its lse is
// written by `writer` (the final lse with one split, the base-2 partial lse otherwise) and the
// factor its O row is scaled by returned (0 for an empty row).
__device__ __forceinline__ float finish_row(const SparseMlaParams& p, int t, int h, int split, int num_splits,
                                            float m, float l, bool writer) {
  const bool empty = row_empty(m, l);
  const float lse2 = row_lse2(m, l);
  const int64_t th = int64_t(t) * p.H + h;
  float f;
  if (num_splits == 1) {
    const float lse_nat = lse2 * kLn2;
    f = out_factor(empty, l, lse_nat, p.sink, h < p.H ? h : 0);
    if (h < p.H && writer) p.lse[th] = finish_lse(empty, lse_nat, p.sink, h, p.lse_base2_sink);
  } else {
    f = empty ? 0.f : 1.f / l;
    if (h < p.H && writer) p.ws_lse[th * num_splits + split] = lse2;
  }
  return f;
}

// Q of one CTA's M head rows through 256 threads: thread tid holds chunk tid % 64 (8 dims) of
// rows tid / 64 + 4 i, i < QN (rows past H are zero). Shared by the main and the v31 kernel;
// the slow path's row maxima and the store to shared memory stay inline in each (as functions
// here they changed ptxas's schedule of the shipped kernels).
template <int M>
struct QRows {
  static constexpr int QN = M * (kD / 8) / 256;
  static constexpr int kRowsPerPass = 256 / (kD / 8);
  // One base pointer, stepped by a precomputed 4-row stride (no 64-bit multiply per chunk);
  // made before griddepcontrol.wait (it reads kernel parameters only), loaded after it.
  struct Src {
    const uint4* qp;
    int64_t step;
    int row0, H;  // this thread's first head, the head count
    __device__ __forceinline__ Src(const SparseMlaParams& p, int t, int h0, int tid) {
      const int q_r0 = tid / (kD / 8);
      qp = reinterpret_cast<const uint4*>(reinterpret_cast<const __nv_bfloat16*>(p.q) + int64_t(t) * p.q_stride_t +
                                          int64_t(h0 + q_r0) * p.q_stride_h) +
           tid % (kD / 8);
      step = int64_t(kRowsPerPass) * p.q_stride_h / 8;  // in uint4 (strides are multiples of 8)
      row0 = h0 + q_r0;
      H = p.H;
    }
    __device__ __forceinline__ void load(uint4 (&qv)[QN]) const {
#pragma unroll
      for (int i = 0; i < QN; ++i) {
        qv[i] = make_uint4(0, 0, 0, 0);
        if (row0 + i * kRowsPerPass < H) qv[i] = __ldg(qp + i * step);
      }
    }
  };
  // Whether some nope chunk of this thread is nonzero with its largest |q| outside [2^-6, 65280].
  static __device__ __forceinline__ int odd(const uint4 (&qv)[QN], bool nope_col) {
    int q_odd = 0;
#pragma unroll
    for (int i = 0; i < QN; ++i) {
      const uint32_t m = q_chunk_max(qv[i]);
      q_odd |= nope_col && m != 0u && (m < 0x3c80u || m > 0x477fu);
    }
    return q_odd;
  }
};

// v30: v[u] (u = 0..3) of the 8 lanes that share lane % 4, reduced with op over those lanes
// (xor 16, 8, 4) as a reduce-scatter: 4 shuffles instead of 12. Returns the total of column
// u = 2 (lane bit 4) + (lane bit 3), complete in both lanes that differ in bit 2.
template <class Op>
__device__ __forceinline__ float reduce_scatter4(const float (&v)[4], int lane, Op op) {
  const bool b2 = lane & 16, b1 = lane & 8;
  float k0 = op(b2 ? v[2] : v[0], __shfl_xor_sync(0xffffffffu, b2 ? v[0] : v[2], 16));
  float k1 = op(b2 ? v[3] : v[1], __shfl_xor_sync(0xffffffffu, b2 ? v[1] : v[3], 16));
  float k = op(b1 ? k1 : k0, __shfl_xor_sync(0xffffffffu, b1 ? k0 : k1, 8));
  return op(k, __shfl_xor_sync(0xffffffffu, k, 4));
}

// ---------------------------------------------------------------- main kernel
// Blocks per SM the SMALL layout is compiled for. Hopper has 228 KB of shared memory per SM,
// room for two SMALL CTAs (~90 KB each) if registers allow it (<= 128 per thread), and two
// CTAs per SM overlap one CTA's barriers and load waits with the other's mma phases.
// SM120/SM121 have ~100 KB per SM: one CTA, so no register cap there.
// -DDSPARKCTL_SMALL_MIN_BLOCKS=1 builds Hopper with SM120's register budget for SMALL (no
// 128-register cap): how the H200 runs the register allocation SM120 runs
// (bench/kernel_device_run.sh tests both builds).
#ifndef DSPARKCTL_SMALL_MIN_BLOCKS
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000
#define DSPARKCTL_SMALL_MIN_BLOCKS 2
#else
#define DSPARKCTL_SMALL_MIN_BLOCKS 1
#endif
#endif

// CLUSTER (v27): the head blocks of one (token, split) form one thread-block cluster of
// head_blocks CTAs that copy each tile once (sparse_mla_cluster_gather); a separate
// instantiation, so the other kernels' code is untouched by it.
template <int MT, int BN, int VEC, bool CLUSTER = false>
__global__ void __launch_bounds__(kThreads, BN == 32 ? DSPARKCTL_SMALL_MIN_BLOCKS : 1)
    sparse_mla_decode_kernel(const SparseMlaParams p, int num_splits, int head_blocks) {
  using C = Cfg<MT, BN>;
  using TileT = Tile<BN, VEC>;
  // sm_90a: S of the 64 x 64 tiles by wgmma (one warpgroup per 32 candidates, v20)
  constexpr bool kWgmma = DSPARKCTL_WGMMA && C::M == 64 && BN == 64;
  // v30, sm_90a: the 32 heads x 64 candidates tiles by wgmma too, transposed (wgmma's M is at
  // least 64, so 32 heads would waste half of every S and P.V instruction as its M): warpgroup
  // 0 computes S^T = K Q^T (M = the 64 candidates, N = the 32 heads) and the softmax per
  // column; both then run O^T = V^T P^T (M = 64 output dims per block, N = 32 heads, V read
  // MN-major by descriptor), warpgroup 0 dims 0-255 and warpgroup 1 dims 256-511.
  constexpr bool kWgmmaT = DSPARKCTL_WGMMA && C::M == 32 && BN == 64 && !CLUSTER;
  constexpr bool kSwizzled = kWgmma || kWgmmaT;  // Q, the KV tile and P in sw128_off's layout
  constexpr bool kTEarlyStore = kWgmmaT && DSPARKCTL_T_EARLY_STORE;  // the rows written in two halves
  // v29: the mma.sync 64-candidate tiles skip a partial tile's dead tail (positions past the
  // row's length, e.g. 59 of DSpark's third tile at valid length 133): nope chunk groups that
  // hold only rows past the next multiple of 16 are not dequantized (the second of two groups
  // when <= 36 rows are live), S-warps whose columns all lie past the length skip their k-loop,
  // and P.V skips those 16-candidate k-steps. The stale rows left in the KV tile are only
  // read by S-warps whose other columns are live, and their S values are replaced by -inf (a
  // select, so NaN garbage cannot leak); P.V never reads them.
  // Not in v27's clustered kernel: its single-tile T = 1 CTAs rarely hold a partial tile, and the
  // skip cost its full tiles ~0.17 us a call (v29 A/B: T = 1 64 heads +1024, 128 heads +512).
  // The v30 transposed 32-head tiles take the dequantization skip and skip P.V's k-steps past
  // the live count (one wgmma sequence per count of k-steps); their S^T has the candidates as
  // its M, which wgmma cannot shorten, and masks the dead rows by the same select.
  constexpr bool kTailSkip = BN == 64 && !kWgmma && !CLUSTER;
  // v60: S split over the dims (kLarge16SplitK, kSmallSplitK). Warp w = mt + MT (kq +
  // SK_KP np) takes m-tile mt, dims part kq (SK_KS k-steps) and candidates part np (SK_NT n-tiles):
  // LARGE16 2 x 4 (np x kq), SMALL16 8 dims parts, SMALL 2 m-tiles x 4 dims parts.
  constexpr bool kSplitK = !kWgmma && !kWgmmaT &&
                           ((kLarge16SplitK && MT == 1 && BN == 64) ||
                            (kSmallSplitK >= (MT == 2 ? 1 : 2) && BN == 32 && DSPARKCTL_SMALL_MIN_BLOCKS == 1 && !CLUSTER));
  constexpr int SK_KP = (MT == 1 && BN == 64) ? 4 : 8 / MT;  // dims parts
  constexpr int SK_NP = kWarps / (MT * SK_KP);               // candidate parts
  constexpr int SK_KS = (kD / 16) / SK_KP;                   // k-steps a warp
  constexpr int SK_NT = BN / 8 / SK_NP;                      // n-tiles a warp
  static_assert(!kSplitK || (MT * SK_KP * SK_NP == kWarps && SK_NT % 2 == 0 && C::NTW == 1 && C::Q_BYTES >= SK_KP * C::M * BN * 4),
                "every warp a part; partials fit Q's region");
  static_assert(!kWgmma || (C::NWN == 2 && C::NTW == 4), "wgmma S: two warpgroups of 64 x 32");
  static_assert(!kSwizzled || (C::OFF_Q % 1024 == 0 && C::OFF_KV % 1024 == 0 && C::OFF_P % 1024 == 0 &&
                             C::OFF_PLO % 1024 == 0 && C::OFF_P16 % 1024 == 0 && C::OFF_P16LO % 1024 == 0),
                "wgmma operands on 1 KB boundaries");
  extern __shared__ __align__(DSPARKCTL_WGMMA ? 1024 : 128) uint8_t smem[];  // 1 KB: wgmma's swizzle
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_Q);
  __nv_bfloat16* sKV = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_KV);
  __nv_bfloat16* sP = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_P);
  __nv_bfloat16* sPlo = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_PLO);
  float* sRmax = reinterpret_cast<float*>(smem + C::OFF_RMAX);
  float* sRsum = reinterpret_cast<float*>(smem + C::OFF_RSUM);
  int64_t* sOff = reinterpret_cast<int64_t*>(smem + C::OFF_IDX);  // [2 parity][2][BN] (Tile::prefetch)
  uint8_t* sRaw = smem + C::OFF_RAW;
  uint8_t* sScale = smem + C::OFF_SCALE;  // [2][BN * 8], by tile parity
  __nv_bfloat16* sP16 = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_P16);  // fp16 bits
  [[maybe_unused]] __nv_bfloat16* sP16lo = reinterpret_cast<__nv_bfloat16*>(smem + C::OFF_P16LO);  // NOPE_P_HILO
  uint32_t* sQmax = reinterpret_cast<uint32_t*>(smem + C::OFF_QMAX);
  uint64_t* sBar = reinterpret_cast<uint64_t*>(smem + C::OFF_MBAR);
  // v27 (sm_90a, 16-byte path): this CTA's head-block peers share its tiles' copies
  constexpr bool clustered = CLUSTER && DSPARKCTL_CLUSTER_GATHER && VEC == 16;
  const int cluster = head_blocks;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Let the split combine (launched with programmatic stream serialization) be scheduled
  // now; it waits in griddepcontrol.wait until this whole grid has finished and flushed.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  DSPARKCTL_TL_BEGIN(smem + C::OFF_TL)
  if constexpr (clustered) {
    // Every peer's mbarrier must exist before the first multicast copy lands in it: initialised
    // here, the cluster barrier completes just before the first tile's copies are issued.
    if (threadIdx.x == 0) mbar_init(sBar, 1);
    cluster_arrive();
  }
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int t = blockIdx.x / head_blocks;
  const int h0 = (blockIdx.x - t * head_blocks) * C::M;
  const int split = blockIdx.y;

  // Static split of the *full* tile range (from topk alone), clipped below to the valid
  // tiles: the first tile's position is then known before the lengths arrive, so its slot
  // ids, the lengths and Q are all in flight at once (one DRAM round trip instead of three
  // before the first KV copy can start).
  const int ntf_m = (p.main.topk + BN - 1) / BN;
  const int ntf = ntf_m + (p.extra.topk + BN - 1) / BN;
  const int sb = split_first_tile(ntf, split, num_splits);
  const int se = split_first_tile(ntf, split + 1, num_splits);

  // Q rows -> registers (stored to smem below, after the id loads are issued).
  static_assert(kThreads == 256, "QRows: 256 threads");
  using QR = QRows<C::M>;
  const typename QR::Src q_src(p, t, h0, tid);
  uint4 qv[QR::QN];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // v23: this grid is launched as a programmatic dependent of the previous kernel in the
  // stream, so its CTAs may start while that kernel still runs: everything above reads only
  // kernel parameters (cold instruction and constant caches: ~1,500 cycles from entry on the
  // v20 timeline at T = 1). Inputs (q, ids, lengths, KV, sink) may be written by that kernel,
  // and the previous call's combine may still read a workspace this grid writes, so no global
  // access comes before this wait (it returns once the previous grid has completed and its
  // memory is visible).
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  q_src.load(qv);
  DSPARKCTL_TL_MARK(19);
  // Speculative raw ids of full tiles sb and sb+1.
  int32_t spec[2] = {-1, -1};
  if (tid < BN) load_spec_ids<BN>(p, t, sb, se, ntf_m, tid, spec);

  DSPARKCTL_TL_MARK(4);
  const ValidTiles<BN> vt(p, t, ntf_m, sb, se, ntf, split, num_splits);
  const int nt_m = vt.nt_m;
  const int tile_begin = vt.begin;
  const int tile_end = vt.end;
  auto tile_src = [&](int it, const SparseMlaCache*& c, int& pos0, int& len) { vt.src(p, it, c, pos0, len); };
  // Slot ids of the first two tiles (later tiles' ids are loaded two tiles ahead); the
  // speculative loads are used when the valid tile is the full tile they were made for.
  if (tid < BN) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int it = tile_begin + r;
      if (it < tile_end) {
        const SparseMlaCache* c; int pos0, len;
        tile_src(it, c, pos0, len);
        const int f = it < nt_m ? it : ntf_m + (it - nt_m);
#if DSPARKCTL_SPLIT_FRONT == 1
        // The row's range may start one tile past the floor form's [sb, se), and end one past it:
        // a speculative id is used for tile sb (sb + 1) only where it was loaded, sb (sb + 1) < se.
        const bool sp0 = f == sb && sb < se, sp1 = f == sb + 1 && sb + 1 < se;
        const int32_t raw = (sp0 || sp1) ? (pos0 + tid < len ? (sp0 ? spec[0] : spec[1]) : -1)
                                         : load_id(*c, t, pos0 + tid, len);
#else
        const int32_t raw = f == sb + r ? (pos0 + tid < len ? spec[r] : -1) : load_id(*c, t, pos0 + tid, len);
#endif
        publish_id(*c, raw, sOff + (it & 1) * 2 * BN, BN, tid);
      }
    }
  }
  DSPARKCTL_TL_MARK(5);

  const float scale_log2 = p.sm_scale * kLog2e;
  float o[MT][8][4];
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) o[mt][n][c] = 0.f;
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.f;
  }
  float mS[2] = {-INFINITY, -INFINITY};  // running max of this S-warp's two rows
  // v30 transposed tiles: a thread's heads are the S^T / O^T columns 8 n + 2 (lane % 4) + j,
  // u = 2 n + j. Its warpgroup's 16 of them (n = 2 wg + n', u' = 2 n' + j) have their running
  // max here (m_h) and, in the lse writers (lanes 0-3 of warps 0 and 4), their running sum
  // (l_h); qsh: the Q shift of all 8 (warpgroup 0 runs S).
  float m_h[4], l_h[4];
  int qsh[8];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    m_h[u] = -INFINITY;
    l_h[u] = 0.f;
  }
#pragma unroll
  for (int u = 0; u < 8; ++u) qsh[u] = 0;

  const int mw = warp % MT;  // S phase: m-tile of this warp
  const int nw = warp / MT;  // S phase: n-slice of this warp
  const bool s_active = warp < C::S_WARPS;

  // The nope part of Q goes to shared memory as fp16 (it meets the fp16 K tile in S). Plain
  // conversion is exact for bf16 |q| in [2^-17, 65280] (below 2^-14 as fp16 subnormals) and
  // rounds smaller values to fp16's 2^-24 grid, which is negligible while each 8-value chunk is
  // zero or has its largest |q| in [2^-6, 65280]; if any chunk of the CTA is outside that
  // (rare), every row is shifted by a power of two first (slow path below, exact).
  static_assert(kThreads % (kD / 8) == 0, "a thread's Q chunks share one column");
  const bool q_nope_col = (tid % (kD / 8)) < kDN / 8;
  const bool q_slow = __syncthreads_or(QR::odd(qv, q_nope_col));  // also: the first tiles' offsets are visible
  DSPARKCTL_TL_MARK(6);
  if constexpr (clustered) cluster_wait();  // every peer's mbarrier is initialised
  if (tile_begin < tile_end) {
    const SparseMlaCache* c; int pos0, len;
    tile_src(tile_begin, c, pos0, len);
    if constexpr (clustered)
      TileT::prefetch_cluster(*c, sOff + (tile_begin & 1) * 2 * BN, sRaw, sScale + (tile_begin & 1) * BN * 8, sBar,
                              cluster);
    else
      TileT::prefetch(*c, sOff + (tile_begin & 1) * 2 * BN, sRaw, sScale + (tile_begin & 1) * BN * 8);
  }
  DSPARKCTL_TL_MARK(7);
  int q_shift[2] = {0, 0};  // this S-warp thread's two rows: the Q shift S undoes
  if (q_slow) {
    // Per row: the largest |q| of each half row (a warp holds 32 chunks of one row per i).
#pragma unroll
    for (int i = 0; i < QR::QN; ++i) {
      const uint32_t m = __reduce_max_sync(0xffffffffu, q_nope_col ? q_chunk_max(qv[i]) : 0u);
      if (lane == 0) sQmax[((tid + i * kThreads) / (kD / 8)) * 2 + (warp & 1)] = m;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = mw * 16 + (lane >> 2) + 8 * i;
      q_shift[i] = q_row_shift(sQmax[row * 2], sQmax[row * 2 + 1]);
    }
    if constexpr (kWgmmaT) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int h = 8 * (u >> 1) + 2 * (lane & 3) + (u & 1);
        qsh[u] = q_row_shift(sQmax[h * 2], sQmax[h * 2 + 1]);
      }
    }
  }
  // Q -> smem (rows past H are zero): nope dims as fp16 (times 2^-shift(row) on the slow
  // path), rope as bf16.
  // (inline, as the slow path's row maxima above: as QRows functions they change ptxas's
  // schedule of the kernels, whose SASS is what the GPU tests measured)
#pragma unroll
  for (int i = 0; i < QR::QN; ++i) {
    const int k = tid + i * kThreads;
    const int r = k / (kD / 8);
    uint4 v = qv[i];
    if (q_nope_col) {
      const float f = q_slow ? pow2i(-q_row_shift(sQmax[r * 2], sQmax[r * 2 + 1])) : 1.f;
      uint32_t* w = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
      for (int j = 0; j < 4; ++j) w[j] = pack_f16(bf16_lo(w[j]) * f, bf16_hi(w[j]) * f);
    }
    *reinterpret_cast<uint4*>(kSwizzled ? sQ + sw128_off<C::M>(r, (tid % (kD / 8)) * 8)
                                     : sQ + r * kSRow + (tid % (kD / 8)) * 8) = v;
  }
  // Exponent of the nope accumulators (o[.][0..6] hold O / 2^e_run); none yet.
  int e_run = -(1 << 20);
  DSPARKCTL_TL_MARK(8);

  // v30 transposed tiles: the lse writers (lanes 0-3 of warps 0 and 4, their warpgroup's 4
  // heads each) write the lse and publish each row's output factor in sRmax.
  auto finish_rows_t = [&]() {
    if ((warp & 3) == 0 && lane < 4) {
#if DSPARKCTL_FINISH_ROWS_LOOP
      // v70: one rolled row finish, its row's m and l picked by selects (the v69 form, unrolled,
      // was ~1,700 instructions for two call sites)
#pragma unroll 1
      for (int u = 0; u < 4; ++u) {
        const int hl = 8 * (2 * (warp >> 2) + (u >> 1)) + 2 * lane + (u & 1);
        const float m = u == 0 ? m_h[0] : (u == 1 ? m_h[1] : (u == 2 ? m_h[2] : m_h[3]));
        const float l = u == 0 ? l_h[0] : (u == 1 ? l_h[1] : (u == 2 ? l_h[2] : l_h[3]));
        sRmax[hl] = finish_row(p, t, h0 + hl, split, num_splits, m, l, true);
      }
#else
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int hl = 8 * (2 * (warp >> 2) + (u >> 1)) + 2 * lane + (u & 1);
        sRmax[hl] = finish_row(p, t, h0 + hl, split, num_splits, m_h[u], l_h[u], true);
      }
#endif
    }
  };
  // v30 transposed tiles: this thread's scaled O^T values of dims blocks [B0, B1) (of the four 64-dim
  // blocks of each warpgroup's 256; factors in sRmax) staged with stmatrix.trans, which turns the
  // (dims x heads) fragments into rows of 8 dims per head: one split, the bf16 output rows over Q;
  // several, the fp32 partials as their upper (over Q) and lower 16 bits (at sLo) in two arrays (exact).
  // (The first v30 build's 64 scalar fp32 stores per thread cost ~1,750 cycles a CTA more than the
  // row-major staging, float2 pieces paired by shuffles ~1,100, and the row finish behind a
  // barrier here ~700.)
  [[maybe_unused]] auto stage_t = [&](auto b0_c, auto b1_c, uint16_t* sLo) {
    constexpr int B0 = decltype(b0_c)::value, B1 = decltype(b1_c)::value;
    const int wg = warp >> 2, wl = warp & 3;
    const float(&ot)[4][4][4] = *reinterpret_cast<const float(*)[4][4][4]>(&o[0][0][0]);
    uint16_t* sHi = reinterpret_cast<uint16_t*>(smem + C::OFF_Q);  // [M][kSRow]: bf16 rows, or fp32 bits 16-31
    const Pow2Pair v_exp(e_run);
    float2 g[4], gn[4];
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      g[n] = *reinterpret_cast<const float2*>(sRmax + 8 * n + 2 * (lane & 3));
      gn[n] = make_float2(v_exp(g[n].x), v_exp(g[n].y));
    }
    const int srow = (8 * (lane >> 3) + (lane & 7)) * kSRow + 256 * wg + 16 * wl;
#pragma unroll
    for (int b = B0; b < B1; ++b) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        uint32_t hi[4], lo[4];  // matrices n = 0..3: dims 8 i + (0..7) of this warp's 16, heads 8 n + (0..7)
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          const float2 f = (wg == 0 || b < 3) ? gn[n] : g[n];
          const float x0 = ot[b][n][2 * i] * f.x, x1 = ot[b][n][2 * i + 1] * f.y;
          if (num_splits == 1) {
            hi[n] = pack_bf16(x0, x1);
          } else {
            hi[n] = __byte_perm(__float_as_uint(x0), __float_as_uint(x1), 0x7632);
            lo[n] = __byte_perm(__float_as_uint(x0), __float_as_uint(x1), 0x5410);
          }
        }
        stsm_x4_t(sHi + srow + 64 * b + 8 * i, hi[0], hi[1], hi[2], hi[3]);
        if (num_splits > 1) stsm_x4_t(sLo + srow + 64 * b + 8 * i, lo[0], lo[1], lo[2], lo[3]);
      }
    }
  };
  // kTEarlyStore: dims blocks b0 and b0 + 1 of the finished rows staged (the fp32 rows' low halves
  // in the raw staging buffer, since the KV tile is still being read), then written: 128 dims a row
  // for each warpgroup, 16 bytes a thread.
  [[maybe_unused]] auto epi_t = [&](auto b0_c) {
    constexpr int b0 = decltype(b0_c)::value;
    // the staged rows' halves: the high ones inside Q's region, the low ones inside the raw buffer,
    // which lies past the KV tile and every P buffer (what the second group's wgmmas read)
    static_assert(!kTEarlyStore || (C::M * kSRow * 2 <= C::OFF_KV - C::OFF_Q && C::M * kSRow * 2 <= BN * kRowBytes &&
                                    C::OFF_RAW >= C::OFF_RMAX && C::OFF_RAW % 16 == 0),
                  "the staged halves stay clear of the KV tile and the P buffers");
    const int wg = warp >> 2;
    const uint16_t* sHi = reinterpret_cast<const uint16_t*>(smem + C::OFF_Q);
    uint16_t* sLo = reinterpret_cast<uint16_t*>(smem + C::OFF_RAW);
    stage_t(b0_c, std::integral_constant<int, b0 + 2>(), sLo);
    __syncthreads();  // the warpgroup's staged rows, before any thread reads them
    const int lt = tid & 127;
    const int d0 = 256 * wg + 64 * b0;
    if (num_splits == 1) {
#pragma unroll
      for (int r = lt / 16; r < C::M; r += 8) {
        const int h = h0 + r;
        if (h >= p.H) break;
        const int d = d0 + (lt % 16) * 8;
        *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(p.out) + (int64_t(t) * p.H + h) * kD + d) =
            *reinterpret_cast<const uint4*>(sHi + r * kSRow + d);
      }
    } else {
#pragma unroll
      for (int r = lt / 32; r < C::M; r += 4) {
        const int h = h0 + r;
        if (h >= p.H) break;
        const int d = d0 + (lt % 32) * 4;
        *reinterpret_cast<float4*>(p.ws_out + ((int64_t(t) * p.H + h) * num_splits + split) * kD + d) =
            join_f32_halves(*reinterpret_cast<const uint2*>(sHi + r * kSRow + d), *reinterpret_cast<const uint2*>(sLo + r * kSRow + d));
      }
    }
  };
  // kSplitK: this warp's Q fragments (its m-tile's rows, its dims part), loaded from sQ once, at the
  // first tile (the loop's first barrier orders Q's stores before it, the barrier before S orders
  // every warp's loads before the first partial sums overwrite sQ)
  [[maybe_unused]] uint32_t qf[kSplitK ? SK_KS : 1][4];
  [[maybe_unused]] const int sk_mt = warp % MT, sk_kq = (warp / MT) % SK_KP, sk_np = warp / (MT * SK_KP);
  for (int it = tile_begin; it < tile_end; ++it) {
    cp_async_wait_all();
    if constexpr (clustered) mbar_wait(sBar, uint32_t(it - tile_begin) & 1u);  // every row's bytes, from every peer
    __syncthreads();  // tile `it` landed; previous tile's PV is done with sKV / sP
    DSPARKCTL_TL_MARK(9);
    if constexpr (kSplitK) {
      if (it == tile_begin) {
        const __nv_bfloat16* qa = sQ + (sk_mt * 16 + (lane & 15)) * kSRow + (lane >> 4) * 8 + sk_kq * SK_KS * 16;
#pragma unroll
        for (int kk = 0; kk < SK_KS; ++kk) ldsm_x4(qf[kk], qa + kk * 16);
      }
    }
    // V exponent of this tile (its largest scale) and of the accumulators after it.
    const uint32_t maxb = tile_max_scale<BN>(sScale + (it & 1) * BN * 8, lane);
    const int e_tile = int(maxb) - 127;
    const int e_new = e_run > e_tile ? e_run : e_tile;
    // live candidates of this tile (those before the length cut), and rounded up to a k-step
    int live = BN, live16 = BN;
    if constexpr (kTailSkip) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(it, c, pos0, len);
      live = len - pos0 < BN ? len - pos0 : BN;
      live16 = (live + 15) & ~15;
    }
    TileT::template store<C::DEQ_GROUP, kSwizzled, kTailSkip>(sRaw, sScale + (it & 1) * BN * 8, sKV, maxb, live16);
    DSPARKCTL_TL_MARK(10);
    if (it + 1 < tile_end) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(it + 1, c, pos0, len);
      if constexpr (clustered) {
        // Peers write this CTA's staging buffer: the next tile's copies wait until every CTA
        // of the cluster has dequantized this one (unclustered, each thread only reads the
        // chunks it copied itself, so no barrier is needed here).
        cluster_arrive();
        cluster_wait();
        TileT::prefetch_cluster(*c, sOff + ((it + 1) & 1) * 2 * BN, sRaw, sScale + ((it + 1) & 1) * BN * 8, sBar,
                                cluster);
      } else {
        TileT::prefetch(*c, sOff + ((it + 1) & 1) * 2 * BN, sRaw, sScale + ((it + 1) & 1) * BN * 8);
      }
    }
    // ids of tile it+2: loaded now, validated and published after the S phase
    int32_t next_id = -1;
    if (tid < BN && it + 2 < tile_end) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(it + 2, c, pos0, len);
      next_id = load_id(*c, t, pos0 + tid, len);
    }
    const int64_t* sValid = sOff + (it & 1) * 2 * BN;  // this tile's row offsets (-1 = invalid)
    if constexpr (kSwizzled) fence_proxy_async_smem();  // the dequantized tile (and Q) for wgmma
    __syncthreads();
    DSPARKCTL_TL_MARK(11);

    if constexpr (!kWgmmaT) {
    // ---- S = Q K^T for a 16 x (8*NTW) slice
    float sacc[C::NTW][4];
#pragma unroll
    for (int n = 0; n < C::NTW; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) sacc[n][c] = 0.f;
    const int rm = mw * 16;
    const int cn = nw * (C::NTW * 8);
    const Pow2Pair s_nope[2] = {Pow2Pair(q_shift[0] + e_tile), Pow2Pair(q_shift[1] + e_tile)};
    // kSplitK: every warp's partial sums of its part, [SK_KP][M][BN] fp32 over Q's region (columns
    // XOR 8 (row % 4): a quarter-warp's 4 rows land in 4 different 8-bank groups, so a warp's 256
    // bytes of float2 stores or loads take the minimum 2 wavefronts)
    [[maybe_unused]] float* part = reinterpret_cast<float*>(smem + C::OFF_Q);
    if constexpr (kSplitK) {
      const int c0 = sk_np * SK_NT * 8;  // this warp's first candidate
      if (!kTailSkip || c0 < live) {  // a part wholly past the length: its columns are masked
        float sp[SK_NT][4];
#pragma unroll
        for (int n = 0; n < SK_NT; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) sp[n][c] = 0.f;
        const int i8 = lane >> 3;
        const __nv_bfloat16* kb = sKV + (c0 + (i8 >> 1) * 8 + (lane & 7)) * kSRow + (i8 & 1) * 8 + sk_kq * SK_KS * 16;
        const int g0 = sk_kq * SK_KS;  // the first k-step; k-steps < kDN / 16 are nope (fp16), the rest rope (bf16)
        // this warp's nope k-steps (rope = false) or rope k-steps (true); the test is warp-uniform
        auto ksteps = [&](bool rope) {
#pragma unroll
          for (int kk = 0; kk < SK_KS; ++kk) {
            if ((g0 + kk >= kDN / 16) != rope) continue;
#pragma unroll
            for (int pr = 0; pr < SK_NT / 2; ++pr) {
              uint32_t b[4];
              ldsm_x4(b, kb + pr * 16 * kSRow + kk * 16);
              if (rope) {
                mma_bf16(sp[2 * pr], qf[kk], b[0], b[1]);
                mma_bf16(sp[2 * pr + 1], qf[kk], b[2], b[3]);
              } else {
                mma_f16(sp[2 * pr], qf[kk], b[0], b[1]);
                mma_f16(sp[2 * pr + 1], qf[kk], b[2], b[3]);
              }
            }
          }
        };
        ksteps(false);  // the nope sum is scaled before the rope k-steps add to it, as in v53's S
#pragma unroll
        for (int n = 0; n < SK_NT; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) sp[n][c] = s_nope[c >> 1](sp[n][c]);
        ksteps(true);
#pragma unroll
        for (int n = 0; n < SK_NT; ++n)
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int row = sk_mt * 16 + (lane >> 2) + 8 * i, col = c0 + n * 8 + (lane & 3) * 2;
            *reinterpret_cast<float2*>(part + (sk_kq * C::M + row) * BN + (col ^ ((row & 3) << 3))) =
                make_float2(sp[n][2 * i], sp[n][2 * i + 1]);
          }
      }
      __syncthreads();  // every partial sum written
    }
    if (s_active) {
      if constexpr (kSplitK) {
        // the S warps sum their slice's SK_KP partials, in part order, into the usual fragments
        if (!kTailSkip || cn < live) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int row = rm + (lane >> 2) + 8 * i, col = cn + (lane & 3) * 2;
            const int off = row * BN + (col ^ ((row & 3) << 3));
            float2 sum = *reinterpret_cast<const float2*>(part + off);
#pragma unroll
            for (int q = 1; q < SK_KP; ++q) {
              const float2 v = *reinterpret_cast<const float2*>(part + q * C::M * BN + off);
              sum.x += v.x;
              sum.y += v.y;
            }
            sacc[0][2 * i] = sum.x;
            sacc[0][2 * i + 1] = sum.y;
          }
        }
      } else if constexpr (kWgmma) {
        // sm_90a, 64 heads x 64 candidates: warpgroup nw computes S for its 32 candidates with
        // wgmma (Q and K read by descriptor from the same swizzled tiles; S's fragments are
        // laid out as the mma.sync path's, so everything after S is shared). The nope sum is
        // scaled before the rope k-steps add to it, as in the mma.sync path.
        const uint64_t dq = wgmma_desc_sw128(sQ);
        const uint64_t dk = wgmma_desc_sw128(sKV + cn * 64);
        // k-step kk of a [rows][512] swizzled tile: 64-dim block kk / 4, 32 bytes per k-step in it
        auto kstep = [](int kk, int rows) { return uint64_t(((kk >> 2) * rows * 128 + (kk & 3) * 32) >> 4); };
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kDN / 16; ++kk) wgmma_m64n32k16<false>(sacc, dq + kstep(kk, C::M), dk + kstep(kk, BN));
        wgmma_commit_wait();
#pragma unroll
        for (int n = 0; n < C::NTW; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) sacc[n][c] = s_nope[c >> 1](sacc[n][c]);
        wgmma_fence();
#pragma unroll
        for (int kk = kDN / 16; kk < kD / 16; ++kk) wgmma_m64n32k16<true>(sacc, dq + kstep(kk, C::M), dk + kstep(kk, BN));
        wgmma_commit_wait();
      } else if (!kTailSkip || cn < live) {  // v29: a slice wholly past the length keeps S = 0 (masked below)
      const __nv_bfloat16* qa = sQ + (rm + (lane & 15)) * kSRow + (lane >> 4) * 8;
      if constexpr (C::NTW == 1) {
        // One n-tile per warp: two accumulators over even / odd k-steps, so consecutive
        // mma.sync do not wait on each other (a single chain exposes the full mma latency).
        float sodd[4] = {0.f, 0.f, 0.f, 0.f};
        const __nv_bfloat16* kb = sKV + (cn + (lane & 7)) * kSRow + ((lane >> 3) & 1) * 8;
#pragma unroll 7
        for (int k2 = 0; k2 < kDN / 32; ++k2) {  // nope: fp16 Q x fp16 K tile
          uint32_t a0[4], a1[4], b0[2], b1[2];
          ldsm_x4(a0, qa + k2 * 32);
          ldsm_x2(b0, kb + k2 * 32);
          ldsm_x4(a1, qa + k2 * 32 + 16);
          ldsm_x2(b1, kb + k2 * 32 + 16);
          mma_f16(sacc[0], a0, b0[0], b0[1]);
          mma_f16(sodd, a1, b1[0], b1[1]);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          sacc[0][c] = s_nope[c >> 1](sacc[0][c] + sodd[c]);
          sodd[c] = 0.f;
        }
#pragma unroll
        for (int k2 = kDN / 32; k2 < kD / 32; ++k2) {  // rope: bf16
          uint32_t a0[4], a1[4], b0[2], b1[2];
          ldsm_x4(a0, qa + k2 * 32);
          ldsm_x2(b0, kb + k2 * 32);
          ldsm_x4(a1, qa + k2 * 32 + 16);
          ldsm_x2(b1, kb + k2 * 32 + 16);
          mma_bf16(sacc[0], a0, b0[0], b0[1]);
          mma_bf16(sodd, a1, b1[0], b1[1]);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) sacc[0][c] += sodd[c];
      } else {
      const int i8 = lane >> 3;
      const __nv_bfloat16* kb = sKV + (cn + (i8 >> 1) * 8 + (lane & 7)) * kSRow + (i8 & 1) * 8;
#pragma unroll 4
      for (int kk = 0; kk < kDN / 16; ++kk) {  // nope: fp16 Q x fp16 K tile
        uint32_t a[4];
        ldsm_x4(a, qa + kk * 16);
#pragma unroll
        for (int pr = 0; pr < C::NTW / 2; ++pr) {
          uint32_t b[4];
          ldsm_x4(b, kb + pr * 16 * kSRow + kk * 16);
          mma_f16(sacc[2 * pr], a, b[0], b[1]);
          mma_f16(sacc[2 * pr + 1], a, b[2], b[3]);
        }
      }
#pragma unroll
      for (int n = 0; n < C::NTW; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) sacc[n][c] = s_nope[c >> 1](sacc[n][c]);
#pragma unroll
      for (int kk = kDN / 16; kk < kD / 16; ++kk) {  // rope: bf16
        uint32_t a[4];
        ldsm_x4(a, qa + kk * 16);
#pragma unroll
        for (int pr = 0; pr < C::NTW / 2; ++pr) {
          uint32_t b[4];
          ldsm_x4(b, kb + pr * 16 * kSRow + kk * 16);
          mma_bf16(sacc[2 * pr], a, b[0], b[1]);
          mma_bf16(sacc[2 * pr + 1], a, b[2], b[3]);
        }
      }
      }
      }
      DSPARKCTL_TL_MARK(20);
      // scale (base 2), mask, row max
      float rmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < C::NTW; ++n) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int col = cn + n * 8 + (lane & 3) * 2 + (c & 1);
          const float s = sValid[col] >= 0 ? sacc[n][c] * scale_log2 : -INFINITY;
          sacc[n][c] = s;
          rmax[c >> 1] = fmaxf(rmax[c >> 1], s);
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        rmax[i] = fmaxf(rmax[i], __shfl_xor_sync(0xffffffffu, rmax[i], 1));
        rmax[i] = fmaxf(rmax[i], __shfl_xor_sync(0xffffffffu, rmax[i], 2));
      }
      if ((lane & 3) == 0) {
        sRmax[nw * C::M + rm + (lane >> 2)] = rmax[0];
        sRmax[nw * C::M + rm + (lane >> 2) + 8] = rmax[1];
      }
    }
    __syncthreads();
    DSPARKCTL_TL_MARK(12);

    // ---- P = exp2(S - m_new) in bf16 to smem, row sums of the rounded P
    if (s_active) {
      float m_use[2], rsum[2] = {0.f, 0.f};
      const float f16_shift = pow2i(e_tile - e_new);  // P for the nope P.V in the accumulators' units
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = rm + (lane >> 2) + 8 * i;
        float mx = mS[i];
#pragma unroll
        for (int w = 0; w < C::NWN; ++w) mx = fmaxf(mx, sRmax[w * C::M + row]);
        mS[i] = mx;
        m_use[i] = mx == -INFINITY ? 0.f : mx;
      }
#pragma unroll
      for (int n = 0; n < C::NTW; ++n) {
        const int col = cn + n * 8 + (lane & 3) * 2;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          // P three ways: fp16 times 2^(tile V exponent - accumulator exponent) for the nope
          // dims (11 significant bits: 8x less rounding than the bf16 P that missed FlashMLA's
          // tolerance in v1), and hi + lo bf16 (~16 bits) for the bf16 rope dims.
          const float p0 = fast_exp2(sacc[n][2 * i] - m_use[i]);
          const float p1 = fast_exp2(sacc[n][2 * i + 1] - m_use[i]);
          rsum[i] += p0 + p1;
          const uint32_t hi = pack_bf16(p0, p1);
          const uint32_t lo = pack_bf16(p0 - bf16_lo(hi), p1 - bf16_hi(hi));
          const int row = rm + (lane >> 2) + 8 * i;
          // wgmma builds: P [64 heads][64 candidates] in the 128-byte swizzle (one block), the
          // K-major A operand of the P.V.
          const int po = kWgmma ? sw128_off<C::M>(row, col) : row * C::PROW + col;
          *reinterpret_cast<uint32_t*>(sP + po) = hi;
          *reinterpret_cast<uint32_t*>(sPlo + po) = lo;
          const uint32_t h16 = pack_f16(p0 * f16_shift, p1 * f16_shift);
          *reinterpret_cast<uint32_t*>(sP16 + po) = h16;
          if constexpr (kNopePHiLo) *reinterpret_cast<uint32_t*>(sP16lo + po) = f16_rest(p0 * f16_shift, p1 * f16_shift, h16);
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        rsum[i] += __shfl_xor_sync(0xffffffffu, rsum[i], 1);
        rsum[i] += __shfl_xor_sync(0xffffffffu, rsum[i], 2);
      }
      if ((lane & 3) == 0) {
        sRsum[nw * C::M + rm + (lane >> 2)] = rsum[0];
        sRsum[nw * C::M + rm + (lane >> 2) + 8] = rsum[1];
      }
    }
    // publish tile it+2's ids into the buffer this tile's S phase has finished reading
    if (tid < BN && it + 2 < tile_end) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(it + 2, c, pos0, len);
      publish_id(*c, next_id, sOff + (it & 1) * 2 * BN, BN, tid);
    }
    if constexpr (kWgmma) fence_proxy_async_smem();  // P for the wgmma P.V
    __syncthreads();
    DSPARKCTL_TL_MARK(13);

    if constexpr (kWgmma) {
      // ---- v21, sm_90a 64 x 64 tiles: O += P V by wgmma. A thread holds the two S rows it
      // computed (rm + lane / 4 (+ 8)): warpgroup 0 the nope dims 0-255, warpgroup 1 the nope
      // dims 256-447 and the rope dims 448-511 (bf16 V, P as hi + lo: two passes), so both
      // hold 128 accumulators (o's registers, viewed as 32 n8-blocks: dims 256 nw + 8 j).
      float(&oa)[32][4] = *reinterpret_cast<float(*)[32][4]>(&o[0][0][0]);
      const float v_shift = pow2i(e_run - e_new);  // nope accumulators to the new V exponent
      e_run = e_new;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = rm + (lane >> 2) + 8 * i;
        float mx = m_run[0][i];
        float rs = 0.f;
#pragma unroll
        for (int w = 0; w < C::NWN; ++w) {
          mx = fmaxf(mx, sRmax[w * C::M + row]);
          rs += sRsum[w * C::M + row];
        }
        const float alpha = mx == -INFINITY ? 1.f : fast_exp2(m_run[0][i] - mx);
        m_run[0][i] = mx;
        l_run[0][i] = l_run[0][i] * alpha + rs;
        const float alpha_nope = alpha * v_shift;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const float a = (nw == 0 || j < 24) ? alpha_nope : alpha;
          oa[j][2 * i] *= a;
          oa[j][2 * i + 1] *= a;
        }
      }
      const uint64_t dp16 = wgmma_desc_sw128(sP16);
      [[maybe_unused]] const uint64_t dp16l = wgmma_desc_sw128(sP16lo);
      const uint64_t dph = wgmma_desc_sw128(sP);
      const uint64_t dpl = wgmma_desc_sw128(sPlo);
      const uint64_t dv = wgmma_desc_sw128(sKV, BN * 128);  // MN-major: 64-dim blocks BN rows apart
      // One branch per warpgroup, each with its own fence / commit / wait, and the same
      // accumulator views in both (96 + 32 registers): ptxas then pipelines the wgmma (with an
      // m64n256 view in one branch it serialized them for want of registers, C7511).
      float(&on)[24][4] = *reinterpret_cast<float(*)[24][4]>(&oa[0][0]);
      float(&orp)[8][4] = *reinterpret_cast<float(*)[8][4]>(&oa[24][0]);
      if (nw == 0) {
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) {
          const uint64_t ka = (ks * 32) >> 4;        // 16 candidates of P's 128-byte rows
          const uint64_t kb = (ks * 16 * 128) >> 4;  // 16 rows of V
          wgmma_pv_m64n192_f16(on, dp16 + ka, dv + kb);                              // dims 0-191
          wgmma_pv_m64n64<false>(orp, dp16 + ka, dv + ((3 * BN * 128) >> 4) + kb);      // 192-255
          if constexpr (kNopePHiLo) {
            wgmma_pv_m64n192_f16(on, dp16l + ka, dv + kb);
            wgmma_pv_m64n64<false>(orp, dp16l + ka, dv + ((3 * BN * 128) >> 4) + kb);
          }
        }
        wgmma_commit_wait();
      } else {
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < BN / 16; ++ks) {
          const uint64_t ka = (ks * 32) >> 4;
          const uint64_t kb = (ks * 16 * 128) >> 4;
          wgmma_pv_m64n192_f16(on, dp16 + ka, dv + ((4 * BN * 128) >> 4) + kb);      // 256-447
          if constexpr (kNopePHiLo) wgmma_pv_m64n192_f16(on, dp16l + ka, dv + ((4 * BN * 128) >> 4) + kb);
          wgmma_pv_m64n64<true>(orp, dph + ka, dv + ((7 * BN * 128) >> 4) + kb);      // rope, P hi
          wgmma_pv_m64n64<true>(orp, dpl + ka, dv + ((7 * BN * 128) >> 4) + kb);      // rope, P lo
        }
        wgmma_commit_wait();
      }
    } else {
    // ---- rescale O, update l, O += P V over this warp's 56 nope + 8 rope output dims
    const float v_shift = pow2i(e_run - e_new);  // nope accumulators to the new V exponent
    e_run = e_new;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = mt * 16 + (lane >> 2) + 8 * i;
        float mx = m_run[mt][i];
        float rs = 0.f;
#pragma unroll
        for (int w = 0; w < C::NWN; ++w) {
          mx = fmaxf(mx, sRmax[w * C::M + row]);
          rs += sRsum[w * C::M + row];
        }
        const float alpha = mx == -INFINITY ? 1.f : fast_exp2(m_run[mt][i] - mx);
        m_run[mt][i] = mx;
        l_run[mt][i] = l_run[mt][i] * alpha + rs;
        const float alpha_nope = alpha * v_shift;
#pragma unroll
        for (int n = 0; n < 7; ++n) {
          o[mt][n][2 * i] *= alpha_nope;
          o[mt][n][2 * i + 1] *= alpha_nope;
        }
        o[mt][7][2 * i] *= alpha;
        o[mt][7][2 * i + 1] *= alpha;
      }
    }
    // Nope dims: one fp16 pass, P (11-bit significand, scaled to the tile's V exponent) times
    // the fp16 tile (exact e4m3 values times powers of two). Rope dims (bf16 V): P as bf16 hi
    // + lo, two passes, as every dim was before v12. Each warp takes 7 nope n-tiles and one
    // rope n-tile, so every warp runs 9 n-tile passes per k-step (v11: 16).
    const int dn0 = warp * 56;
    const int dr0 = kDN + warp * 8;
#pragma unroll
    for (int ks = 0; ks < BN / 16; ++ks) {
      if (kTailSkip && ks > 0 && ks * 16 >= live16) break;  // v29: k-steps wholly past the length
      const int i8 = lane >> 3;
      const __nv_bfloat16* vrow = sKV + (ks * 16 + (i8 & 1) * 8 + (lane & 7)) * kSRow;
      uint32_t pa[MT][4];
      [[maybe_unused]] uint32_t pal[kNopePHiLo ? MT : 1][4];  // NOPE_P_HILO: P's lo part
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        ldsm_x4(pa[mt], sP16 + (mt * 16 + (lane & 15)) * C::PROW + ks * 16 + (lane >> 4) * 8);
        if constexpr (kNopePHiLo) ldsm_x4(pal[mt], sP16lo + (mt * 16 + (lane & 15)) * C::PROW + ks * 16 + (lane >> 4) * 8);
      }
#pragma unroll
      for (int np = 0; np < 3; ++np) {
        uint32_t b[4];
        ldsm_x4_t(b, vrow + dn0 + (np * 2 + (i8 >> 1)) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_f16(o[mt][2 * np], pa[mt], b[0], b[1]);
          mma_f16(o[mt][2 * np + 1], pa[mt], b[2], b[3]);
          if constexpr (kNopePHiLo) {
            mma_f16(o[mt][2 * np], pal[mt], b[0], b[1]);
            mma_f16(o[mt][2 * np + 1], pal[mt], b[2], b[3]);
          }
        }
      }
      uint32_t b[4];  // nope n-tile 6 and the rope n-tile in one ldmatrix
      ldsm_x4_t(b, vrow + ((i8 >> 1) ? dr0 : dn0 + 48));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_f16(o[mt][6], pa[mt], b[0], b[1]);
        if constexpr (kNopePHiLo) mma_f16(o[mt][6], pal[mt], b[0], b[1]);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        uint32_t ph[4], pl[4];
        ldsm_x4(ph, sP + (mt * 16 + (lane & 15)) * C::PROW + ks * 16 + (lane >> 4) * 8);
        ldsm_x4(pl, sPlo + (mt * 16 + (lane & 15)) * C::PROW + ks * 16 + (lane >> 4) * 8);
        mma_bf16(o[mt][7], ph, b[2], b[3]);
        mma_bf16(o[mt][7], pl, b[2], b[3]);
      }
    }
    }
    } else {
      // ---- v30, sm_90a 32 x 64 tiles, transposed. Warpgroup 0: S^T = K Q^T by wgmma (A = the
      // KV tile, B = Q, both K-major in the layouts the 64-head tiles use), one accumulator
      // chain (split over both warpgroups by k it was slower: 2,363 vs 1,363 cycles on the
      // H200 timeline, the two chains only compete for the same tensor and shared-memory
      // throughput). Accumulators in the m16n8 C layout, rows = candidates, columns = heads.
      // The nope sum is scaled (Q shift and tile V exponent, per head) before the rope k-steps.
      const int wg = warp >> 2, wl = warp & 3;
      const int q4 = lane & 3;
      float4* sX = reinterpret_cast<float4*>(smem + C::OFF_P);  // [2][128]: S^T of heads 16-31 (P is free here)
      float sv[2][4];  // this warpgroup's 16 columns of S^T (n = 0, 1: heads 8 (2 wg + n) + ...)
      if (wg == 0) {
        float st[4][4];
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) st[n][c] = 0.f;
        const uint64_t dq = wgmma_desc_sw128(sQ);
        const uint64_t dk = wgmma_desc_sw128(sKV);
        auto kstep = [](int kk, int rows) { return uint64_t(((kk >> 2) * rows * 128 + (kk & 3) * 32) >> 4); };
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kDN / 16; ++kk) wgmma_m64n32k16<false>(st, dk + kstep(kk, BN), dq + kstep(kk, C::M));
        wgmma_commit_wait();
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const Pow2Pair f(qsh[u] + e_tile);
          st[u >> 1][u & 1] = f(st[u >> 1][u & 1]);
          st[u >> 1][2 + (u & 1)] = f(st[u >> 1][2 + (u & 1)]);
        }
        wgmma_fence();
#pragma unroll
        for (int kk = kDN / 16; kk < kD / 16; ++kk) wgmma_m64n32k16<true>(st, dk + kstep(kk, BN), dq + kstep(kk, C::M));
        wgmma_commit_wait();
        DSPARKCTL_TL_MARK(20);
        // the softmax is split by heads: warpgroup 1 takes columns 16-31 (n = 2, 3)
#pragma unroll
        for (int n = 0; n < 2; ++n) {
          sX[n * 128 + tid] = make_float4(st[2 + n][0], st[2 + n][1], st[2 + n][2], st[2 + n][3]);
#pragma unroll
          for (int c = 0; c < 4; ++c) sv[n][c] = st[n][c];
        }
      }
      __syncthreads();
      if (wg == 1) {
#pragma unroll
        for (int n = 0; n < 2; ++n) {
          const float4 x = sX[n * 128 + (tid - 128)];
          sv[n][0] = x.x;
          sv[n][1] = x.y;
          sv[n][2] = x.z;
          sv[n][3] = x.w;
        }
      }
      // Both warpgroups, each for its 16 heads (columns 8 (2 wg + n) + 2 (lane % 4) + j, u = 2 n
      // + j): scale (base 2), mask (a select: invalid and dead-tail candidates' rows, stale or
      // NaN, become -inf), column max over this warp's 16 candidates, reduced over the 8 lanes
      // that share the columns with a reduce-scatter (lane -> column u = lane bits 4, 3).
      const int c0 = wl * 16 + (lane >> 2);
      const bool ok0 = sValid[c0] >= 0, ok1 = sValid[c0 + 8] >= 0;
      const int u_own = ((lane >> 4) & 1) * 2 + ((lane >> 3) & 1);  // the column this lane ends up with
      const int h_own = 8 * (2 * wg + (u_own >> 1)) + 2 * q4 + (u_own & 1);
      float hm[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < 2; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float v = ((c >> 1) ? ok1 : ok0) ? sv[n][c] * scale_log2 : -INFINITY;
          sv[n][c] = v;
          hm[2 * n + (c & 1)] = fmaxf(hm[2 * n + (c & 1)], v);
        }
      {
        const float r = reduce_scatter4(hm, lane, [](float a, float b) { return fmaxf(a, b); });
        if ((lane & 4) == 0) sRmax[wl * 32 + h_own] = r;
      }
      __syncthreads();
      DSPARKCTL_TL_MARK(12);
      // ---- P^T = exp2(S^T - m_new) per column, stored as P [32 heads][64 candidates] (K-major
      // B of the P.V, 128-byte swizzle) in three forms as the other layouts: fp16 scaled to the
      // accumulators' V exponent (nope dims), bf16 hi + lo (rope dims); by stmatrix.trans, one
      // x4 per warp and form (this warp's 16 candidates x its warpgroup's 16 heads). Warps 0 and
      // 4 publish the per-head factor alpha in sAlpha for every thread's O^T rescale.
      float* sAlpha = reinterpret_cast<float*>(smem + C::OFF_QMAX);  // [32]; sQmax is dead in the tile loop
      {
        const float f16_shift = pow2i(e_tile - e_new);
        float mu[4], hs[4];
#pragma unroll
        for (int n = 0; n < 2; ++n) {
          float2 mx = make_float2(m_h[2 * n], m_h[2 * n + 1]);
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            const float2 r = *reinterpret_cast<const float2*>(sRmax + w * 32 + 8 * (2 * wg + n) + 2 * q4);
            mx.x = fmaxf(mx.x, r.x);
            mx.y = fmaxf(mx.y, r.y);
          }
          if (wl == 0 && lane < 4) {
            *reinterpret_cast<float2*>(sAlpha + 8 * (2 * wg + n) + 2 * lane) =
                make_float2(mx.x == -INFINITY ? 1.f : fast_exp2(m_h[2 * n] - mx.x),
                            mx.y == -INFINITY ? 1.f : fast_exp2(m_h[2 * n + 1] - mx.y));
          }
          m_h[2 * n] = mx.x;
          m_h[2 * n + 1] = mx.y;
          mu[2 * n] = mx.x == -INFINITY ? 0.f : mx.x;
          mu[2 * n + 1] = mx.y == -INFINITY ? 0.f : mx.y;
          hs[2 * n] = hs[2 * n + 1] = 0.f;
        }
        uint32_t hi[4], lo[4], pf[4];  // matrices (n, i) = (0, 0), (0, 1), (1, 0), (1, 1)
        [[maybe_unused]] uint32_t pfl[4];  // NOPE_P_HILO: pf's lo parts
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int n = m >> 1, i = m & 1;
          const float p0 = fast_exp2(sv[n][2 * i] - mu[2 * n]);
          const float p1 = fast_exp2(sv[n][2 * i + 1] - mu[2 * n + 1]);
          hs[2 * n] += p0;
          hs[2 * n + 1] += p1;
          hi[m] = pack_bf16(p0, p1);
          lo[m] = pack_bf16(p0 - bf16_lo(hi[m]), p1 - bf16_hi(hi[m]));
          pf[m] = pack_f16(p0 * f16_shift, p1 * f16_shift);
          if constexpr (kNopePHiLo) pfl[m] = f16_rest(p0 * f16_shift, p1 * f16_shift, pf[m]);
        }
        const int mi = lane >> 3;
        const int po = sw128_off<C::M>(8 * (2 * wg + (mi >> 1)) + (lane & 7), wl * 16 + (mi & 1) * 8);
        stsm_x4_t(sP + po, hi[0], hi[1], hi[2], hi[3]);
        stsm_x4_t(sPlo + po, lo[0], lo[1], lo[2], lo[3]);
        stsm_x4_t(sP16 + po, pf[0], pf[1], pf[2], pf[3]);
        if constexpr (kNopePHiLo) stsm_x4_t(sP16lo + po, pfl[0], pfl[1], pfl[2], pfl[3]);
        const float r = reduce_scatter4(hs, lane, [](float a, float b) { return a + b; });
        if ((lane & 4) == 0) sRsum[wl * 32 + h_own] = r;
      }
      // publish tile it+2's ids into the buffer this tile's S phase has finished reading
      if (tid < BN && it + 2 < tile_end) {
        const SparseMlaCache* c; int pos0, len;
        tile_src(it + 2, c, pos0, len);
        publish_id(*c, next_id, sOff + (it & 1) * 2 * BN, BN, tid);
      }
      fence_proxy_async_smem();  // P for the wgmma P.V
      __syncthreads();
      DSPARKCTL_TL_MARK(13);
      // ---- O^T += V^T P^T: rescale this thread's heads (nope blocks also to the new V
      // exponent), then warpgroup 0 the nope blocks 0-3, warpgroup 1 the nope blocks 4-6 and the
      // rope block (bf16, P hi + lo). o's registers as [4 blocks][4 n8][4]: dims 256 wg + 64 b
      // + 16 wl + lane / 4 (+ 8), heads 8 n + 2 (lane % 4) (+ 1). k-steps past the tile's live
      // count are not run (their V rows may be stale: see kTailSkip).
      float(&ot)[4][4][4] = *reinterpret_cast<float(*)[4][4][4]>(&o[0][0][0]);
      const float v_shift = pow2i(e_run - e_new);
      e_run = e_new;
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const float2 a = *reinterpret_cast<const float2*>(sAlpha + 8 * n + 2 * q4);
        if (wl == 0 && lane < 4 && (n >> 1) == wg) {  // the lse writers: their warpgroup's heads
          float2 rs = make_float2(0.f, 0.f);
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            const float2 r = *reinterpret_cast<const float2*>(sRsum + w * 32 + 8 * n + 2 * lane);
            rs.x += r.x;
            rs.y += r.y;
          }
          l_h[2 * (n & 1)] = l_h[2 * (n & 1)] * a.x + rs.x;
          l_h[2 * (n & 1) + 1] = l_h[2 * (n & 1) + 1] * a.y + rs.y;
        }
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const float s = (wg == 0 || b < 3) ? v_shift : 1.f;
          ot[b][n][0] *= a.x * s;
          ot[b][n][1] *= a.y * s;
          ot[b][n][2] *= a.x * s;
          ot[b][n][3] *= a.y * s;
        }
      }
      const uint64_t dp16 = wgmma_desc_sw128(sP16);
      [[maybe_unused]] const uint64_t dp16l = wgmma_desc_sw128(sP16lo);
      const uint64_t dph = wgmma_desc_sw128(sP);
      const uint64_t dpl = wgmma_desc_sw128(sPlo);
      const uint64_t dv = wgmma_desc_sw128(sKV, BN * 128);
      auto pv = [&](auto nks_c) {
        constexpr int NKS = decltype(nks_c)::value;
        if constexpr (kTEarlyStore) {
          // two commit groups, blocks 0-1 then 2-3 (each accumulator's k-steps in one group's order)
          if (wg == 0) {
            wgmma_fence();
#pragma unroll
            for (int bh = 0; bh < 4; bh += 2) {
#pragma unroll
              for (int ks = 0; ks < NKS; ++ks)
#pragma unroll
                for (int b = bh; b < bh + 2; ++b) {
                  wgmma_m64n32k16<false, true>(ot[b], dv + ((b * BN * 128 + ks * 16 * 128) >> 4), dp16 + ((ks * 32) >> 4));
                  if constexpr (kNopePHiLo)
                    wgmma_m64n32k16<false, true>(ot[b], dv + ((b * BN * 128 + ks * 16 * 128) >> 4), dp16l + ((ks * 32) >> 4));
                }
              wgmma_commit();
            }
          } else {
            wgmma_fence();
#pragma unroll
            for (int bh = 0; bh < 4; bh += 2) {
#pragma unroll
              for (int ks = 0; ks < NKS; ++ks) {
#pragma unroll
                for (int b = bh; b < bh + 2 && b < 3; ++b) {
                  wgmma_m64n32k16<false, true>(ot[b], dv + (((4 + b) * BN * 128 + ks * 16 * 128) >> 4), dp16 + ((ks * 32) >> 4));
                  if constexpr (kNopePHiLo)
                    wgmma_m64n32k16<false, true>(ot[b], dv + (((4 + b) * BN * 128 + ks * 16 * 128) >> 4), dp16l + ((ks * 32) >> 4));
                }
                if (bh == 2) {
                  wgmma_m64n32k16<true, true>(ot[3], dv + ((7 * BN * 128 + ks * 16 * 128) >> 4), dph + ((ks * 32) >> 4));
                  wgmma_m64n32k16<true, true>(ot[3], dv + ((7 * BN * 128 + ks * 16 * 128) >> 4), dpl + ((ks * 32) >> 4));
                }
              }
              wgmma_commit();
            }
          }
        } else if (wg == 0) {
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < NKS; ++ks)
#pragma unroll
            for (int b = 0; b < 4; ++b) {
              wgmma_m64n32k16<false, true>(ot[b], dv + ((b * BN * 128 + ks * 16 * 128) >> 4), dp16 + ((ks * 32) >> 4));
              if constexpr (kNopePHiLo)
                wgmma_m64n32k16<false, true>(ot[b], dv + ((b * BN * 128 + ks * 16 * 128) >> 4), dp16l + ((ks * 32) >> 4));
            }
          wgmma_commit();
        } else {
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < NKS; ++ks) {
#pragma unroll
            for (int b = 0; b < 3; ++b) {
              wgmma_m64n32k16<false, true>(ot[b], dv + (((4 + b) * BN * 128 + ks * 16 * 128) >> 4), dp16 + ((ks * 32) >> 4));
              if constexpr (kNopePHiLo)
                wgmma_m64n32k16<false, true>(ot[b], dv + (((4 + b) * BN * 128 + ks * 16 * 128) >> 4), dp16l + ((ks * 32) >> 4));
            }
            wgmma_m64n32k16<true, true>(ot[3], dv + ((7 * BN * 128 + ks * 16 * 128) >> 4), dph + ((ks * 32) >> 4));
            wgmma_m64n32k16<true, true>(ot[3], dv + ((7 * BN * 128 + ks * 16 * 128) >> 4), dpl + ((ks * 32) >> 4));
          }
          wgmma_commit();
        }
      };
      if (live16 > 48) pv(std::integral_constant<int, 4>());
      else if (live16 > 32) pv(std::integral_constant<int, 3>());
      else if (live16 > 16) pv(std::integral_constant<int, 2>());
      else pv(std::integral_constant<int, 1>());
      // The last tile: the lse writers finish their rows while the P.V runs (their sums are
      // final, and the epilogue would otherwise wait for this, sink loads included).
      if (it + 1 == tile_end) finish_rows_t();
      if constexpr (kTEarlyStore) {
        if (it + 1 == tile_end) {
          // the last tile: its rows are written in two halves, the first under the P.V's second group
          __syncthreads();  // every head's factor in sRmax
          wgmma_wait_one();
          epi_t(std::integral_constant<int, 0>());
          wgmma_wait();
          epi_t(std::integral_constant<int, 2>());
        } else {
          wgmma_wait();
        }
      } else {
        wgmma_wait();
      }
    }
    DSPARKCTL_TL_MARK(14);
  }

  if constexpr (kTEarlyStore) {
    // The last tile's P.V may still run (two commit groups): the first half of the rows is
    // written under its second group.
    if (tile_begin >= tile_end) {  // no tile: empty rows
      finish_rows_t();
      __syncthreads();
      epi_t(std::integral_constant<int, 0>());
      epi_t(std::integral_constant<int, 2>());
    }
    DSPARKCTL_TL_MARK(15);
    DSPARKCTL_TL_MARK(16);
    DSPARKCTL_TL_MARK(17);
  } else {
  // ---- epilogue (nope accumulators hold O / 2^e_run)
  // The scaled rows are staged in shared memory (the Q and KV tile regions, free after the
  // last P.V) and written out as whole rows, 16 bytes per thread: a warp's store covers 512
  // contiguous bytes. v12 stored from the mma fragments directly, 8 rows x 32 bytes per warp
  // store; the v13 timeline put that at ~1,800 cycles of a 16-head T = 1 CTA (of ~10,500).
  const int dn0 = warp * 56;
  const int dr0 = kDN + warp * 8;
  const Pow2Pair v_exp(e_run);
  float* sOut = reinterpret_cast<float*>(smem + C::OFF_Q);  // [M][kORow] fp32
  if constexpr (kWgmmaT) {
    if (tile_begin >= tile_end) finish_rows_t();  // no tile: empty rows (else done under the last P.V)
  }
  __syncthreads();  // every warp's last P.V is done with sQ / sKV
  DSPARKCTL_TL_MARK(15);
  if constexpr (kWgmmaT) {
    // v30 transposed tiles: the row factors are in sRmax (finish_rows_t ran under the last
    // P.V, or before the barrier above in a CTA without tiles); the fp32 rows' low halves past Q.
    stage_t(std::integral_constant<int, 0>(), std::integral_constant<int, 4>(),
            reinterpret_cast<uint16_t*>(smem + C::OFF_Q) + C::M * kSRow);
  } else {
  // Rows of this thread: v13 path every m-tile's rows (each warp holds all M rows for its dims);
  // wgmma path (v21) the two S rows, with the dims of its warpgroup.
  constexpr int kRowBlocks = kWgmma ? 1 : MT;
#pragma unroll
  for (int mt = 0; mt < kRowBlocks; ++mt) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = (kWgmma ? mw : mt) * 16 + (lane >> 2) + 8 * i;  // wgmma: the S rows (m-tile mw)
      const int h = h0 + row;
      const bool writer = kWgmma ? nw == 0 && (lane & 3) == 0 : warp == 0 && (lane & 3) == 0;
      const float f = finish_row(p, t, h, split, num_splits, m_run[mt][i], l_run[mt][i], writer);
      const float fn = v_exp(f);  // < 2^-126 only for V scales near 2^-120: outputs ~0 anyway
      float* srow = sOut + row * kORow + (lane & 3) * 2;
      if constexpr (kWgmma) {
        const float(&oa)[32][4] = *reinterpret_cast<const float(*)[32][4]>(&o[0][0][0]);
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const float g = (nw == 0 || j < 24) ? fn : f;
          *reinterpret_cast<float2*>(srow + nw * 256 + j * 8) = make_float2(oa[j][2 * i] * g, oa[j][2 * i + 1] * g);
        }
      } else {
#pragma unroll
        for (int n = 0; n < 7; ++n)
          *reinterpret_cast<float2*>(srow + dn0 + n * 8) = make_float2(o[mt][n][2 * i] * fn, o[mt][n][2 * i + 1] * fn);
        *reinterpret_cast<float2*>(srow + dr0) = make_float2(o[mt][7][2 * i] * f, o[mt][7][2 * i + 1] * f);
      }
    }
  }
  }
  DSPARKCTL_TL_MARK(16);
  __syncthreads();
  DSPARKCTL_TL_MARK(17);
  // The staged rows to global memory: bf16 output rows of 1 KB (64 threads per row, 8 dims
  // each) or fp32 partial rows of 2 KB (128 threads per row, 4 dims each: a warp's stores cover
  // 512 contiguous bytes; v30 measured 32-byte pieces per thread at ~1,700 cycles a CTA more).
  // bf16x8 / f32x4 (row, first dim) read the staging, whose format depends on the tile.
  auto write_rows = [&](auto bf16x8, auto f32x4) {
    if (num_splits == 1) {
      const int c8 = tid % 64;
#pragma unroll
      for (int r = tid / 64; r < C::M; r += kThreads / 64) {
        const int h = h0 + r;
        if (h >= p.H) break;
        *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(p.out) + (int64_t(t) * p.H + h) * kD + c8 * 8) =
            bf16x8(r, c8 * 8);
      }
    } else {
      const int c4 = tid % 128;
#pragma unroll
      for (int r = tid / 128; r < C::M; r += kThreads / 128) {
        const int h = h0 + r;
        if (h >= p.H) break;
        *reinterpret_cast<float4*>(p.ws_out + ((int64_t(t) * p.H + h) * num_splits + split) * kD + c4 * 4) =
            f32x4(r, c4 * 4);
      }
    }
  };
  if constexpr (kWgmmaT) {
    // bf16 rows (one split) or the 16-bit halves of the fp32 partials (stmatrix staging above)
    const uint16_t* sHi = reinterpret_cast<const uint16_t*>(smem + C::OFF_Q);
    const uint16_t* sLo = sHi + C::M * kSRow;
    write_rows([&](int r, int d) { return *reinterpret_cast<const uint4*>(sHi + r * kSRow + d); },
               [&](int r, int d) {
                 return join_f32_halves(*reinterpret_cast<const uint2*>(sHi + r * kSRow + d),
                                        *reinterpret_cast<const uint2*>(sLo + r * kSRow + d));
               });
  } else {
    // fp32 rows (sOut)
    write_rows([&](int r, int d) {
                 const float4 x = *reinterpret_cast<const float4*>(sOut + r * kORow + d);
                 const float4 y = *reinterpret_cast<const float4*>(sOut + r * kORow + d + 4);
                 return make_uint4(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w), pack_bf16(y.x, y.y), pack_bf16(y.z, y.w));
               },
               [&](int r, int d) { return *reinterpret_cast<const float4*>(sOut + r * kORow + d); });
  }
  }
  DSPARKCTL_TL_MARK(18);
  DSPARKCTL_TL_END(tile_end - tile_begin)
}

// ---------------------------------------------------------------- v31: warp-specialized 64 x 64 tiles (sm_90a)
// Run where the plan says so (sparse_mla_warp_specialized, v37: every 64-head LARGE plan on Hopper) or
// where a caller forces it (kConfigLargeWs); its body is compiled only where wgmma is (sm_90a).
// The 64-head x 64-candidate tiles with the dequantization off the tensor cores' critical path
// (v20-v30 ran it between the MMA phases: ~2,000 of a tile's ~9,000 cycles, plus ~1,000 for
// the copy issue and barrier). Three warpgroups:
//  - warpgroup 2, the producer: each tile's raw rows are copied into the KV buffer the tile
//    will occupy (no separate raw staging buffer: its 37 KB is what lets two dequantized tiles
//    fit; on the 16-byte path one bulk copy per row, v32), and the producer converts them there
//    in place (nope fp16 scaled to the tile's largest scale, rope bf16 as is). It prepares each
//    tile's row offsets two tiles ahead and issues the copies of tiles 0 and 1 itself.
//  - warpgroup 0: S = Q K^T (64 x 64, wgmma), the softmax, P to shared memory, then O's dims
//    0-255 (nope) += P V.
//  - warpgroup 1: O's dims 256-447 (nope) and 448-511 (rope, P hi + lo) += P V, while
//    warpgroup 0 already runs the next tile's S; then (v37, 16-byte path) the bulk copies of
//    tile j + 2 into the buffer tile j leaves, which the producer used to issue in its own loop.
// Shared memory: Q 64 KB + two KV tiles 128 KB + P (fp16, bf16 hi, bf16 lo) 24 KB = 216 KB.
// The numerics are the 64 x 64 wgmma kernel's (same operands, same instruction shapes and
// order per output element), so its tolerances and the verify-path property carry over.
constexpr int kWsThreads = 384;
[[maybe_unused]] constexpr int kWsProducerThreads = 128;
// Bulk copies issued per producer warp (v36; 32 = two warps, v32-v35's mapping).
#ifndef DSPARKCTL_WS_COPY_LANES
#define DSPARKCTL_WS_COPY_LANES 16
#endif
constexpr int kWsCopyLanes = DSPARKCTL_WS_COPY_LANES;
static_assert(kWsCopyLanes * 4 >= 64 && kWsCopyLanes <= 32, "the 4 producer warps cover a 64-candidate tile");
// v37: on the 16-byte path, warpgroup 1 issues the bulk copies of tiles 2.. (it frees their
// buffers); -DDSPARKCTL_WS_PRODUCER_COPIES builds v36's loop (the producer copies every tile).
#ifdef DSPARKCTL_WS_PRODUCER_COPIES
[[maybe_unused]] constexpr bool kWsConsumerCopiesOn = false;
#else
[[maybe_unused]] constexpr bool kWsConsumerCopiesOn = true;
#endif
// v42, the lazy O rescale: how far (base 2) a row's tile max may pass its running max before the
// running max moves and O is rescaled. Session 24's ncu profile had FMUL at 28% of the consumers'
// instructions, most of it O's rescale (128 a thread a tile); with a stale max most tiles skip it.
// -DDSPARKCTL_WS_LAZY_MAX=0: the eager rescale (session 30's probe of the smoke's mismatches).
#ifndef DSPARKCTL_WS_LAZY_MAX
#define DSPARKCTL_WS_LAZY_MAX 8
#endif
[[maybe_unused]] constexpr float kWsLazyMax = float(DSPARKCTL_WS_LAZY_MAX);
// v43, the L2 prefetch: the producer prefetches tile j + 2's rows into L2 as soon as it knows their
// offsets (right after converting tile j), about one consumer tile before warpgroup 1 can issue their
// bulk copies (once tile j leaves its buffer): one cp.async.bulk.prefetch.L2 a row, the rows prepped
// by lanes 0-15 of each of the four producer warps (a warp issues bulk operations one lane after
// another: 32 a warp, session 25's first form, added ~1,600 cycles a tile of prep and was slower).
// In session 26's A/B (bench/results/kernel_h200_v44_prep/), with v43's shorter prep: -0.5 to -2.1
// us on the 64/128-head T = 32 / 64 rows. The by-line (prefetch.global.L2) and by-sector forms
// were slower or gained less (session 25; bench/results/kernel_h200_v43_l2_prefetch/).
// -DDSPARKCTL_WS_L2_PREFETCH=0 builds without it (for A/Bs).
#ifndef DSPARKCTL_WS_L2_PREFETCH
#define DSPARKCTL_WS_L2_PREFETCH 1
#endif
static_assert(DSPARKCTL_WS_L2_PREFETCH == 0 || DSPARKCTL_WS_L2_PREFETCH == 1, "on or off");
[[maybe_unused]] constexpr bool kWsL2Prefetch = DSPARKCTL_WS_L2_PREFETCH == 1;
// The row of each tile producer thread `pt` preps (offsets, valid flag, scale bytes, L2 prefetch):
// with the bulk L2 prefetch lanes 0-15 of each producer warp, so no warp issues more than 16 bulk
// prefetches a tile; without it threads 0-63.
[[maybe_unused]] __device__ __forceinline__ int ws_prep_row(int pt) { return kWsL2Prefetch ? (pt >> 5) * 16 + (pt & 15) : pt; }
[[maybe_unused]] __device__ __forceinline__ bool ws_preps(int pt) { return kWsL2Prefetch ? (pt & 31) < 16 : pt < 64; }
enum WsBarrier : int { kWsPReady = 1, kWsPFree = 2, kWsProducer = 3, kWsConsumers = 4, kWsQFree = 5 };
// v52, WS_NOPE_P_HILO (on; =0 for A/Bs): the WS kernel's nope P.V in two fp16 passes too (see
// DSPARKCTL_NOPE_P_HILO), with no hand-off added. Its shared memory has no room for a second fp16
// P buffer (227,184 of 232,448 bytes). Warpgroup 0 computed P, so its lo pass takes the lo part
// (fp16, exact) from its registers (wgmma's register-A form). Warpgroup 1 reads the lo part from a
// 4 KB buffer written with the hi part, as e4m3 of lo x 2^kWsLo8Shift (4 significant bits of a
// part that is at most 2^-11 of P: P keeps ~15 bits; bench/p_precision_emulation.py's
// hi_e4m3lo variant matches exact P on the smoke's data), converts it to fp16 and runs its lo
// pass from registers too. Session 30's form (one buffer, two more hand-offs a tile) cost 0.2-0.4
// us more on the WS rows (bench/results/kernel_h200_v52_hilo/).
#ifndef DSPARKCTL_WS_NOPE_P_HILO
#define DSPARKCTL_WS_NOPE_P_HILO 1
#endif
static_assert(DSPARKCTL_WS_NOPE_P_HILO == 0 || DSPARKCTL_WS_NOPE_P_HILO == 1, "on or off");
constexpr bool kWsNopePHiLo = DSPARKCTL_WS_NOPE_P_HILO == 1;
// P <= 2^kWsLazyMax (times a V shift <= 1), so its fp16 lo part is at most 2^(kWsLazyMax - 12):
// times 2^kWsLo8Shift it stays <= 256, inside e4m3's 448.
constexpr int kWsLo8Shift = 20 - DSPARKCTL_WS_LAZY_MAX;
static_assert(kWsLo8Shift >= 6 && kWsLo8Shift <= 20, "the lo part's e4m3 scale stays an fp16 power of two");
// 2^-kWsLo8Shift as fp16 x2 (normal down to 2^-14, subnormal below)
[[maybe_unused]] constexpr uint32_t kWsLo8Unscale =
    (kWsLo8Shift <= 14 ? uint32_t(15 - kWsLo8Shift) << 10 : 1u << (24 - kWsLo8Shift)) * 0x10001u;
// v45: a 2-split WS call runs the two splits of a (token, head block) as one 2-CTA cluster and
// combines them in the epilogue, over distributed shared memory: each CTA stages its fp32 partial
// rows and their lse as before, then combines half of the 64 rows (its own staged half and the
// peer's) into the bf16 output and the final lse. No fp32 partials to global memory and back, and
// no combine launch: with v44's warp-row combine, DSpark +512 T = 50's combine still ended ~4.4 us
// after the main kernel, bound by reading 3,200 rows x 2 splits x 2 KB of partials from L2 (ncu:
// 30% L2 throughput, long-scoreboard stalls; bench/results/kernel_h200_v44_ncu/). The weights and
// sums are the combine kernels' (same operations, same order): the outputs are theirs bit for bit
// (46 of 46 bench cases). Session 27's A/B (bench/results/kernel_h200_v45_cluster_combine/): -0.9
// to -2.3 us on the 2-split WS rows (DSpark +512 T = 50, 64 heads T = 64, 128 heads T = 32), the
// epilogue ~3.6 us longer where the combine took ~4.4. -DDSPARKCTL_WS_CLUSTER_COMBINE=0 builds
// without it (for A/Bs).
#ifndef DSPARKCTL_WS_CLUSTER_COMBINE
#define DSPARKCTL_WS_CLUSTER_COMBINE 1
#endif
static_assert(DSPARKCTL_WS_CLUSTER_COMBINE == 0 || DSPARKCTL_WS_CLUSTER_COMBINE == 1, "on or off");
[[maybe_unused]] constexpr bool kWsClusterCombine = DSPARKCTL_WS_CLUSTER_COMBINE == 1;
// v76 (DSPARKCTL_WS_DH_QSHARE): the builds whose halves kernel shares Q across its 2-CTA cluster (the
// 16-byte path's 3-buffer ring, the partial-lse region free for the hand-off's mbarrier, Q after the
// lengths, unsplit only); the host launches the halves as that cluster in these builds only
[[maybe_unused]] constexpr bool kWsDhQShareBuild = kWsDhQShare && kWsDhRing3 && kWsConsumerCopiesOn &&
                                                   kWsClusterCombine && DSPARKCTL_WS_Q_EARLY != 2 && !kPlanWsDimsPartials;
// The WS calls whose splits combine in the kernel (the host launches them as clusters of
// num_splits CTAs and no combine kernel). Only 2: session 28 ran the same combine for clusters of
// 3-8 splits (bench/results/kernel_h200_v46_cluster_n/: bit-equal, +22 to +29 us on the bench's
// 4-, 5- and 8-split WS rows, whose 25-32 clusters of 4-8 CTAs exceed what the H200 holds at once,
// 30 / 22 / 15 by bench/cluster_occupancy.cu: a second wave), and where clusters of 3 fit it was
// still 2.6-3.5 us slower than the combine kernel (bench/results/kernel_h200_v47_ws3_cluster/).
// The H200 holds 66 clusters of 2; the bench's 2-split WS grids are at most 64.
__host__ __device__ __forceinline__ bool ws_cluster_combines(int num_splits) {
  return kWsClusterCombine && num_splits == 2;
}
// A cluster-wide rendezvous of every thread of both CTAs (release / acquire: the staged rows are
// visible to the peer after it), a CTA-local shared address mapped to the peer CTA's, and 16- and
// 4-byte loads from the peer's shared memory.
[[maybe_unused]] __device__ __forceinline__ void ws_cluster_sync() {
#if DSPARKCTL_WGMMA
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}
[[maybe_unused]] __device__ __forceinline__ uint32_t peer_smem(const float* local, uint32_t rank) {
  uint32_t a = 0;
#if DSPARKCTL_WGMMA
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(smem_u32(local)), "r"(rank));
#endif
  return a;
}
// Asynchronous stores into the peer CTA's shared memory (addresses from peer_smem), each counted in
// bytes on the peer's mbarrier `rbar` (also a peer_smem address); no fence (session 50's QSHARE; v35
// found st.shared::cluster with cluster-scope fences compiled to MEMBAR.ALL.GPU).
[[maybe_unused]] __device__ __forceinline__ void st_async_v4(uint32_t remote, const uint4& v, uint32_t rbar) {
#if DSPARKCTL_WGMMA
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(remote),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(rbar)
               : "memory");
#endif
}
[[maybe_unused]] __device__ __forceinline__ void st_async_b32(uint32_t remote, uint32_t v, uint32_t rbar) {
#if DSPARKCTL_WGMMA
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(remote), "r"(v), "r"(rbar)
               : "memory");
#endif
}
// mbar_wait with cluster-scope acquire: the phase's bytes came from the peer CTA (st_async_*).
[[maybe_unused]] __device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
#if DSPARKCTL_WGMMA
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}
[[maybe_unused]] __device__ __forceinline__ float4 ld_peer_v4(const float* local, uint32_t rank) {
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if DSPARKCTL_WGMMA
  const uint32_t a = peer_smem(local, rank);
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
#endif
  return v;
}
[[maybe_unused]] __device__ __forceinline__ float ld_peer_f32(const float* local, uint32_t rank) {
  float v = 0.f;
#if DSPARKCTL_WGMMA
  const uint32_t a = peer_smem(local, rank);
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
#endif
  return v;
}
#ifndef DSPARKCTL_WS_REGS_S
#define DSPARKCTL_WS_REGS_S 216
#endif
#ifndef DSPARKCTL_WS_REGS_PV
#define DSPARKCTL_WS_REGS_PV (DSPARKCTL_WS_NOPE_P_HILO ? 176 : 160)
#endif
#ifndef DSPARKCTL_WS_REGS_PRODUCER
#define DSPARKCTL_WS_REGS_PRODUCER (DSPARKCTL_WS_NOPE_P_HILO ? 112 : 128)
#endif
struct WsCfg {
  static constexpr int M = 64, BN = 64;
  // setmaxnreg budgets per warpgroup. They move registers within the CTA's own pool, which is
  // what the launch allocated: 384 threads x 168 (the cap of __launch_bounds__(384, 1)), so
  // the three may sum to at most 3 x 168 = 504 (the first build asked 512: warpgroup 0's
  // increase never found its registers and the kernel hung).
  enum : int { REGS_LAUNCH = 168 };
  // WS_NOPE_P_HILO gives warpgroup 1 16 more, for its lo pass's 16 A registers (ptxas: at 160 it
  // serialized the wgmma, C7512). v52 took them from warpgroup 0 (200 / 176 / 128: 12 / 4 bytes of
  // spill); v53 from the producer (216 / 176 / 112: no spill, -0.5 to -3.3 us on the WS rows in
  // session 31's A/B, bench/results/kernel_h200_v53_pv_overlap/). -DDSPARKCTL_WS_REGS_S / _PV /
  // _PRODUCER override them (A/Bs of other splits).
  enum : int { REGS_S = DSPARKCTL_WS_REGS_S, REGS_PV = DSPARKCTL_WS_REGS_PV, REGS_PRODUCER = DSPARKCTL_WS_REGS_PRODUCER };
  static_assert(REGS_S + REGS_PV + REGS_PRODUCER <= 3 * REGS_LAUNCH,
                "setmaxnreg stays within the launch's allocation");
  static constexpr int TILE = BN * kD * 2;
  static constexpr int OFF_Q = 0;
  static constexpr int OFF_KV = OFF_Q + M * kD * 2;  // [2][TILE]
  static constexpr int OFF_P16 = OFF_KV + 2 * TILE;
  static constexpr int OFF_PHI = OFF_P16 + M * BN * 2;
  static constexpr int OFF_PLO = OFF_PHI + M * BN * 2;
  // v37: the per-tile slots the producer fills ahead (valid flags, row offsets, scale bytes) are
  // indexed by tile & 3: it prepares tile j + 2 while the consumers may still read tile j's.
  static constexpr int kSlots = 4;
  static constexpr int OFF_VALID = OFF_PLO + M * BN * 2;  // uint8 [kSlots][BN]
  static constexpr int OFF_ETILE = OFF_VALID + kSlots * BN;  // int [2]: the tile's V exponent
  static constexpr int OFF_ALPHA = OFF_ETILE + 16;         // float [2][M]: the rescale of O's rows, by tile parity
  static constexpr int OFF_FACT = OFF_ALPHA + 2 * M * 4;   // float [M]: the rows' output factors
  static constexpr int OFF_QMAX = OFF_FACT + M * 4;        // uint32 [M][2] (Q slow path)
  // (DSPARKCTL_WS_DH_RING3: 3 buffers, so [3][4] max scale bytes and 3 of each tile barrier)
  static constexpr int kBufs = kWsDhRing3 ? 3 : 2;
  static constexpr int OFF_PMAX = OFF_QMAX + M * 8;        // uint32 [kBufs][4]: producer warps' max scale byte
  static constexpr int OFF_POFF = OFF_PMAX + kBufs * 16;        // int64 [kSlots][BN]: row offsets (-1 invalid)
  static constexpr int OFF_PSCL = OFF_POFF + kSlots * BN * 8;   // uint8 [kSlots][BN][8]: scale bytes
  static constexpr int OFF_BAR = OFF_PSCL + kSlots * BN * 8;    // uint64 full[kBufs], empty[kBufs], raw[kBufs], offs[kBufs]
  static constexpr int OFF_LSE2 = OFF_BAR + 32 * kBufs;  // float [M]: the rows' partial lse (cluster combine)
  // WS_NOPE_P_HILO: P's lo part for warpgroup 1, e4m3 in its register-A order: uint32 [8][128 threads]
  static constexpr int OFF_LO8 = (OFF_LSE2 + (kWsClusterCombine ? M * 4 : 0) + 127) / 128 * 128;
  static constexpr int SMEM = kWsNopePHiLo ? OFF_LO8 + M * BN : OFF_LSE2 + (kWsClusterCombine ? M * 4 : 0);
  static_assert(SMEM <= 227 * 1024, "fits the opt-in shared memory of a Hopper CTA");
  static_assert(OFF_KV % 1024 == 0 && OFF_P16 % 1024 == 0 && OFF_PHI % 1024 == 0 && OFF_PLO % 1024 == 0, "wgmma operands");
  static_assert(M * kORow * 4 <= OFF_P16, "the epilogue stages the fp32 rows over Q and the KV tiles");
  static_assert(OFF_BAR % 8 == 0, "mbarrier alignment");
};

// The staged output rows (fp32, [M][kORow]) to global memory by `n` threads: bf16 rows (one
// split) or the fp32 partials.
// C8: 8-dim chunks a row written from column col0 (the DH kernel writes its half: 32 from 256 half).
template <int M, int N, int C8 = kD / 8>
__device__ __forceinline__ void ws_write_rows(const SparseMlaParams& p, const float* sOut, int t, int h0, int split,
                                              int num_splits, int tid, int col0 = 0) {
  if (num_splits == 1) {
    const int c8 = tid % C8;
#pragma unroll
    for (int r = tid / C8; r < M; r += N / C8) {
      const int h = h0 + r;
      if (h >= p.H) break;
      const float4 x = *reinterpret_cast<const float4*>(sOut + r * kORow + col0 + c8 * 8);
      const float4 y = *reinterpret_cast<const float4*>(sOut + r * kORow + col0 + c8 * 8 + 4);
      *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(p.out) + (int64_t(t) * p.H + h) * kD + col0 + c8 * 8) =
          make_uint4(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w), pack_bf16(y.x, y.y), pack_bf16(y.z, y.w));
    }
  } else {
    // (the fp32 partials: whole rows, or with DSPARKCTL_WS_DIMS_PARTIALS the halves kernel's half rows)
    constexpr int C4 = kPlanWsDimsPartials ? 2 * C8 : kD / 4;  // 4-dim chunks a row
    const int p0 = kPlanWsDimsPartials ? col0 : 0;
    const int c4 = tid % C4;
#pragma unroll
    for (int r = tid / C4; r < M; r += N / C4) {
      const int h = h0 + r;
      if (h >= p.H) break;
      *reinterpret_cast<float4*>(p.ws_out + ((int64_t(t) * p.H + h) * num_splits + split) * kD + p0 + c4 * 4) =
          *reinterpret_cast<const float4*>(sOut + r * kORow + p0 + c4 * 4);
    }
  }
}

// A row combined from split partials (by a combine kernel, or by the WS kernel from its cluster's
// staged rows): its factor (1/L and the sink gate; 0 for an empty row) and natural lse from the
// weights' max and sum, and the final lse's store. One definition, so every combine path rounds
// alike.
// Empty means every split was empty (all lse -inf, so every weight and L are 0). A row whose
// splits' lse are NaN, or NaN and -inf (a NaN score next to finite ones in a split), has max -inf
// (the weights' max skips NaN) or NaN, but L is NaN: it is not empty, and its lse is NaN as with
// one split and in the reference (before session 28 the combine kernels took it for an empty row,
// lse +inf, and so did v45's 2-split combine when one split was NaN and the other empty).
// `sk`: the row's sink logit (`sink_logit`), loaded with the combine's first loads (kEarly: v72's
// block combine kernels); without kEarly it is unused and the sink is read here, after the weights
// (the warp-row and cluster combines: v71's).
template <bool kEarly>
struct CombinedRow {
  bool empty;
  float lse_nat, f, sk;
  __device__ __forceinline__ CombinedRow(const SparseMlaParams& p, int h, float mx, float L, float sk_early) {
    empty = mx == -INFINITY && L == 0.f;
    lse_nat = empty ? -INFINITY : (mx + log2f(L)) * kLn2;
    f = empty ? 0.f : 1.f / L;
    sk = sk_early;
    if (!empty && p.sink != nullptr) f = sink_gate(f, kEarly ? sk : __ldg(p.sink + h), lse_nat);
  }
  __device__ __forceinline__ void store_lse(const SparseMlaParams& p, int64_t th, int h) const {
    if constexpr (kEarly) p.lse[th] = finish_lse_sk(empty, lse_nat, sk, p.lse_base2_sink);
    else p.lse[th] = finish_lse(empty, lse_nat, p.sink, h, p.lse_base2_sink);
  }
};

// v45: rows [M/2 split, M/2 (split + 1)) of the (token, head block) from this CTA's and the peer's
// staged rows (ld.shared::cluster), by `N` threads, 8 dims each: the combine kernels' arithmetic
// for 2 splits (weights 2^(lse_s - max), zero weights never multiplied in, ((a0 + a1) + 0) + 0,
// then 1/L and the sink gate; `CombinedRow`), bf16 rows and the final lse out.
// v51 (session 30): a row's scalars (weights, 1/L, sink gate, lse) are made once per row, not by
// each of its 64 threads for each of their 8 rows: lane l of every warp makes row l's (M / 2 = 32
// rows, one a lane), the row loop takes them by warp shuffle (the source lane is warp-uniform)
// and warp 0 stores the 32 lse. Same arithmetic, outputs bit for bit v50's. Without the peer's
// loads that loop takes ~2,850 cycles, ~6,200 before; with them ~9,000 either way: moving the 64 KB
// of fp32 rows from the peer's shared memory bounds it, however the loads are scheduled
// (bench/results/kernel_h200_v51_combine_shfl/).
// `mark(slot)`: the timeline-only marks (-DDSPARKCTL_TL_CLUSTER_MARKS; a no-op otherwise): slot 25
// when the first rendezvous has passed, 21 when the rows are written (in probes 2 and 3 below:
// when their values are made), before the second.
// -DDSPARKCTL_TL_COMBINE_PROBE=1 / 2 / 3 (timeline builds only, wrong outputs by design; session
// 29): the loop without the peer's loads (this CTA's rows, swapped, and its lse - 1 stand in for
// the peer's, so the two weights stay distinct) / without the rows' stores (each row's packed bf16
// values and lse folded into a register, stored once only if it comes to an impossible value, so
// the arithmetic stays) / without both (bench/results/kernel_h200_v50_combine_probe/).
#if defined(DSPARKCTL_TL_COMBINE_PROBE) && !defined(DSPARKCTL_TIMELINE)
#error "-DDSPARKCTL_TL_COMBINE_PROBE is for timeline builds (-DDSPARKCTL_TIMELINE) only"
#endif
#if defined(DSPARKCTL_TIMELINE) && defined(DSPARKCTL_TL_COMBINE_PROBE)
constexpr int kTlCombineProbe = DSPARKCTL_TL_COMBINE_PROBE;
#else
constexpr int kTlCombineProbe = 0;
#endif
static_assert(kTlCombineProbe >= 0 && kTlCombineProbe <= 3, "probe 0-3");
// A row chunk's 8 combined dims times its factor, as bf16.
[[maybe_unused]] __device__ __forceinline__ uint4 pack_bf16x8_scaled(const float (&o)[8], float f) {
  return make_uint4(pack_bf16(o[0] * f, o[1] * f), pack_bf16(o[2] * f, o[3] * f), pack_bf16(o[4] * f, o[5] * f),
                    pack_bf16(o[6] * f, o[7] * f));
}
template <int M, int N, class Mark>
__device__ __forceinline__ void ws_cluster_combine(const SparseMlaParams& p, const float* sOut, const float* sLse2,
                                                   int t, int h0, int split, int tid, Mark&& mark) {
  static_assert(M / 2 == 32 && N % 64 == 0, "one row per lane");
  constexpr bool loads = (kTlCombineProbe & 1) == 0, stores = (kTlCombineProbe & 2) == 0;  // (shipped: both)
  ws_cluster_sync();  // both CTAs' rows and lse staged
  mark(25);
  const uint32_t peer = uint32_t(split) ^ 1u;  // cluster (1, 2, 1): rank = blockIdx.y = split
  const int c8 = tid % 64, r0 = (M / 2) * split;
  [[maybe_unused]] float probe_sum = 0.f;
  float w0 = 0.f, w1 = 0.f, wf = 0.f;  // this lane's row: split 0's and 1's weights, its factor
  {
    const int r = r0 + tid % 32, h = h0 + r;
    if (h < p.H) {
      const float own_l = sLse2[r], peer_l = loads ? ld_peer_f32(sLse2 + r, peer) : own_l - 1.f;
      const float l0 = split == 0 ? own_l : peer_l, l1 = split == 0 ? peer_l : own_l;
      const float mx = fmaxf(l0, l1);
      w0 = l0 == -INFINITY ? 0.f : exp2f(l0 - mx);
      w1 = l1 == -INFINITY ? 0.f : exp2f(l1 - mx);
      const CombinedRow<false> cr(p, h, mx, w0 + w1, -INFINITY);
      wf = cr.f;
      if (tid < 32) {
        if constexpr (stores) {
          cr.store_lse(p, int64_t(t) * p.H + h, h);
        } else {
          probe_sum += finish_lse(cr.empty, cr.lse_nat, p.sink, h, p.lse_base2_sink);
        }
      }
    }
  }
#pragma unroll 4
  for (int r = r0 + tid / 64; r < r0 + M / 2; r += N / 64) {
    const int h = h0 + r;
    if (h >= p.H) break;  // warp-uniform (a warp is 32 of one row's 64 threads)
    const float e0 = __shfl_sync(0xffffffffu, w0, r - r0), e1 = __shfl_sync(0xffffffffu, w1, r - r0);
    const float f = __shfl_sync(0xffffffffu, wf, r - r0);
    const float* row = sOut + r * kORow + c8 * 8;
    const float4 o0 = *reinterpret_cast<const float4*>(row), o1 = *reinterpret_cast<const float4*>(row + 4);
    const float4 q0 = loads ? ld_peer_v4(row, peer) : o1, q1 = loads ? ld_peer_v4(row + 4, peer) : o0;
    float v0[8] = {o0.x, o0.y, o0.z, o0.w, o1.x, o1.y, o1.z, o1.w};
    float v1[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    if (split != 0) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float x = v0[k];
        v0[k] = v1[k];
        v1[k] = x;
      }
    }
    float o[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float a0 = e0 != 0.f ? __fmaf_rn(e0, v0[k], 0.f) : 0.f;
      const float a1 = e1 != 0.f ? __fmaf_rn(e1, v1[k], 0.f) : 0.f;
      o[k] = __fadd_rn(__fadd_rn(__fadd_rn(a0, a1), 0.f), 0.f);
    }
    const uint4 v = pack_bf16x8_scaled(o, f);
    if constexpr (stores) {
      *reinterpret_cast<uint4*>(reinterpret_cast<__nv_bfloat16*>(p.out) + (int64_t(t) * p.H + h) * kD + c8 * 8) = v;
    } else {
      probe_sum += __uint_as_float((v.x ^ v.y) ^ (v.z ^ v.w));
    }
  }
  if constexpr (kTlCombineProbe != 0) {
    if (probe_sum == 1.2345e-30f) p.lse[0] = probe_sum;
  }
  mark(21);
  ws_cluster_sync();  // the peer has read this CTA's rows
}

// One k-step of the WS kernel's S over all 64 candidates: D[64 x 64] += Q[64 x 16] . K[64 x 16]^T,
// both K-major by descriptor, accumulators in the m16n8 C layout (s[n]: candidates 8 n .. 8 n + 7).
// v39: one instruction a k-step reads Q's 2 KB from shared memory once; v31-v38 issued two
// m64n32k16 over the candidate halves and read it twice (64 KB a tile). ptxas (CUDA 13.0) could
// allocate the 32 accumulators only once each consumer warpgroup stages its own output rows
// (ws_stage): with the staging after the role branches, where both warpgroups' O accumulators
// meet, it serialised every wgmma of the kernel and spilled. Same operands and k order per output
// element as the two n32 instructions.
// (S's 32 accumulators as asm operands %0-%31, for ws_s64 and ws_s64_ra; d = &s[0][0])
#define DSPARKCTL_S64_ACC "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define DSPARKCTL_S64_D " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
template <bool BF16>
__device__ __forceinline__ void ws_s64(float (&s)[8][4], uint64_t dq, uint64_t dk) {
#if DSPARKCTL_WGMMA
  float* d = &s[0][0];
#define DSPARKCTL_S64_ARGS DSPARKCTL_S64_D "%32, %33, p, 1, 1, 0, 0;\n}\n" : DSPARKCTL_S64_ACC : "l"(dq), "l"(dk), "r"(1)
  if constexpr (BF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" DSPARKCTL_S64_ARGS);
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" DSPARKCTL_S64_ARGS);
  }
#undef DSPARKCTL_S64_ARGS
#endif
}

// ws_s64 with A (Q's k-step) from registers, in the mma.sync m16n8k16 A layout
// (DSPARKCTL_WS_DH_RING3; session 39's DSPARKCTL_WS_DH_QREG form).
template <bool BF16>
[[maybe_unused]] __device__ __forceinline__ void ws_s64_ra(float (&s)[8][4], const uint32_t (&a)[4], uint64_t dk) {
#if DSPARKCTL_WGMMA
  float* d = &s[0][0];
#define DSPARKCTL_S64_ARGS DSPARKCTL_S64_D "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n" : DSPARKCTL_S64_ACC : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(dk), "r"(1)
  if constexpr (BF16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" DSPARKCTL_S64_ARGS);
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" DSPARKCTL_S64_ARGS);
  }
#undef DSPARKCTL_S64_ARGS
#undef DSPARKCTL_S64_ACC
#undef DSPARKCTL_S64_D
#endif
}

// One WS conversion unit (a candidate's half of a 64-dim nope block: 32 FP8 bytes) to fp16 times
// `mult` (f16_pow2x2), stored as 4 16-byte pieces at dst + (x0 ^ 16 k) (the 128-byte swizzle of
// sw128_off: x0 is piece 0's offset in the row, k < 4 flips bits 4-5 only). By store_tile and
// v65's partial-tile conversion alike.
#if DSPARKCTL_WGMMA
__device__ __forceinline__ void ws_store_unit(uint8_t* dst, int x0, const uint4 (&raw)[2], uint32_t mult) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&raw[0]);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    uint4 v;
    fp8x4_to_f16x2x2(w[2 * k], mult, v.x, v.y);
    fp8x4_to_f16x2x2(w[2 * k + 1], mult, v.z, v.w);
    *reinterpret_cast<uint4*>(dst + (x0 ^ (16 * k))) = v;
  }
}
#endif

// The P hand-off between the consumer warpgroups: the side that produces arrives and runs on.
// -DDSPARKCTL_WS_RACECHECK_SYNC (a racecheck build, never shipped) makes both sides wait (a
// rendezvous): compute-sanitizer's racecheck reports hazards behind later barriers in kernels
// that use bar.arrive this way (bench/racecheck_ws_repro.cu shows it in a small kernel whose
// epilogue cannot race). What the rendezvous build cannot check is the window an arrive opens:
// warpgroup 0 from its P-ready arrive to its next P-free wait, warpgroup 1 from its P-free
// arrive to its next P-ready wait. In those windows the kernel only reads shared memory (P.V
// and S by wgmma, sEtile, sValid) and writes sFact, which nobody reads before the epilogue's
// whole-CTA barrier. WS_NOPE_P_HILO's lo buffer follows P's protocol: warpgroup 0 writes it before
// P-ready (and the next tile's after P-free), warpgroup 1 reads it after P-ready, before P-free.
[[maybe_unused]] __device__ __forceinline__ void ws_handoff(int id, int n) {
#ifdef DSPARKCTL_WS_RACECHECK_SYNC
  nbar_sync(id, n);
#else
  nbar_arrive(id, n);
#endif
}

// O's dims 0-255 += P.V over NKS k-steps of a WS tile (V: the tile's swizzled rows, MN-major from
// dv; P's hi part: fp16 in shared memory at dp16), then WS_NOPE_P_HILO's lo pass with P's lo part
// from registers, lo_a(ks, a) giving k-step ks's 4 A registers: warpgroup 0's sequence, and v66's
// half 0 in warpgroup 1. One fence, one commit and wait: no branch between the wgmmas.
template <int NKS, class LoA>
__device__ __forceinline__ void ws_pv_dims_0_255(float (&on)[24][4], float (&orp)[8][4], uint64_t dp16, uint64_t dv,
                                                 LoA lo_a) {
  constexpr int BN = WsCfg::BN;
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < NKS; ++ks) {
    const uint64_t ka = (ks * 32) >> 4;
    const uint64_t kb = (ks * 16 * 128) >> 4;
    wgmma_pv_m64n192_f16(on, dp16 + ka, dv + kb);
    wgmma_pv_m64n64<false>(orp, dp16 + ka, dv + ((3 * BN * 128) >> 4) + kb);
  }
  if constexpr (kWsNopePHiLo) {
#pragma unroll
    for (int ks = 0; ks < NKS; ++ks) {
      uint32_t a[4];
      lo_a(ks, a);
      const uint64_t kb = (ks * 16 * 128) >> 4;
      wgmma_pv_m64n192_f16_ra(on, a, dv + kb);
      wgmma_pv_m64n64_f16_ra(orp, a, dv + ((3 * BN * 128) >> 4) + kb);
    }
  }
  wgmma_commit_wait();
}

// The WS kernel's body; DH (v66, sparse_mla_ws_dims_split): this CTA computes O's dims
// [256 half, 256 half + 256) only, half = blockIdx.z. A kernel of its own (below), so the one-CTA
// form's code is v65's.
template <int VEC, bool DH>
__device__ __forceinline__ void ws_kernel_body(const SparseMlaParams& p, int num_splits, int head_blocks) {
#if DSPARKCTL_WGMMA
  using W = WsCfg;
  constexpr int M = W::M, BN = W::BN;
  constexpr bool kWsConsumerCopies = kWsConsumerCopiesOn && VEC == 16;
  DSPARKCTL_WS_TL_T0
  extern __shared__ __align__(1024) uint8_t smem[];
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem + W::OFF_Q);
  __nv_bfloat16* sP16 = reinterpret_cast<__nv_bfloat16*>(smem + W::OFF_P16);
  __nv_bfloat16* sPhi = reinterpret_cast<__nv_bfloat16*>(smem + W::OFF_PHI);
  __nv_bfloat16* sPlo = reinterpret_cast<__nv_bfloat16*>(smem + W::OFF_PLO);
  uint8_t* sValid = smem + W::OFF_VALID;
  int* sEtile = reinterpret_cast<int*>(smem + W::OFF_ETILE);
  float* sAlpha = reinterpret_cast<float*>(smem + W::OFF_ALPHA);
  float* sFact = reinterpret_cast<float*>(smem + W::OFF_FACT);
  uint32_t* sQmax = reinterpret_cast<uint32_t*>(smem + W::OFF_QMAX);
  uint32_t* sPmax = reinterpret_cast<uint32_t*>(smem + W::OFF_PMAX);
  // DSPARKCTL_WS_DH_RING3: the halves kernel's 3-buffer ring (buffer 2 is Q's region, once warpgroup 0
  // holds Q in registers); tile j in buffer j % R, its barriers' phase (j / R) % 2
  constexpr int R = DH && kWsDhRing3 && kWsConsumerCopies ? 3 : 2;  // (the 8-byte path keeps 2)
  static_assert(R <= W::kBufs, "the layout's barriers and scale maxima");
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + W::OFF_BAR);
  uint64_t* empty = full + W::kBufs;
  uint64_t* rawbar = full + 2 * W::kBufs;  // v31d: the bulk copies of a buffer's raw rows
  uint64_t* offs = full + 3 * W::kBufs;    // v37: the producer's row offsets of the tile a copying warpgroup copies next
  int64_t* sOffP = reinterpret_cast<int64_t*>(smem + W::OFF_POFF);  // [kSlots][BN] row offsets, -1 invalid
  uint8_t* sScl = smem + W::OFF_PSCL;                               // [kSlots][BN][8] scale bytes
  auto kv_buf = [&](int b) { return R == 3 && b == 2 ? smem + W::OFF_Q : smem + W::OFF_KV + b * W::TILE; };
  auto kv_tile = [&](int b) { return reinterpret_cast<__nv_bfloat16*>(kv_buf(b)); };
  auto buf_of = [&](int j) { return R == 3 ? j % 3 : j & 1; };
  auto phase_of = [&](int j) { return uint32_t(R == 3 ? j / 3 : j >> 1) & 1u; };
  constexpr bool kCopy1 = R == 3 && DSPARKCTL_WS_DH_COPY1 == 1;  // v71 (the halves kernel's ring only)

  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int t = blockIdx.x / head_blocks;
  const int h0 = (blockIdx.x - t * head_blocks) * M;
  // DSPARKCTL_WS_DH_UNSPLIT (session 50): the halves kernel launches only unsplit (sparse_mla_ws_dims_split:
  // num_splits 1 unless DSPARKCTL_WS_DIMS_PARTIALS), so its split paths (fp32 staging, partial rows,
  // the cluster combine) are compiled out and the split constants folded
  constexpr bool kDhUnsplit = DH && kWsDhUnsplit && !kPlanWsDimsPartials;
  if (kDhUnsplit) num_splits = 1;
  const int split = kDhUnsplit ? 0 : int(blockIdx.y);
  const int half = DH ? int(blockIdx.z) : 0;  // DH: this CTA's half of O's dims
  // (kNoClusterCombine, DSPARKCTL_WS_DIMS_PARTIALS: the halves kernel never runs the 2-split
  // in-kernel combine, v45; its split calls leave their partials to the combine kernels)
  constexpr bool kNoClusterCombine = DH && (kPlanWsDimsPartials || kDhUnsplit);
  // DSPARKCTL_WS_DH_QSHARE (v76): the row block's two halves share Q (a 2-CTA
  // cluster along z, rank = half); the hand-off's mbarrier sits in the partial-lse region, which the
  // unsplit halves kernel never uses (kWsDhQShareBuild: which builds)
  constexpr bool kQShare = DH && VEC == 16 && kWsDhQShareBuild;
  static_assert(!kQShare || R == 3, "the shared Q phase is the 3-buffer ring's");
  [[maybe_unused]] uint64_t* qbar = reinterpret_cast<uint64_t*>(smem + W::OFF_LSE2);
  constexpr uint32_t kQShareBytes = 32 * kD * 2 + 32 * 4;  // the peer's 32 rows of Q and their shifts
  if (tid == 0) {
    mbar_init(&full[0], kWsProducerThreads);
    mbar_init(&full[1], kWsProducerThreads);
    mbar_init(&empty[0], 256);
    mbar_init(&empty[1], 256);
    mbar_init(&rawbar[0], 1);
    mbar_init(&rawbar[1], 1);
    mbar_init(&offs[0], kWsProducerThreads);
    mbar_init(&offs[1], kWsProducerThreads);
    if constexpr (R == 3) {
      mbar_init(&full[2], kWsProducerThreads);
      mbar_init(&empty[2], 256);
      mbar_init(&rawbar[2], 1);
      mbar_init(&offs[2], kWsProducerThreads);
    }
    if constexpr (kQShare) mbar_init(qbar, 1);
  }
#ifdef DSPARKCTL_TIMELINE
  if (tid == 0 && DSPARKCTL_WS_TL_CTA < kTlMaxCtas)
    g_tl_main[DSPARKCTL_WS_TL_CTA][0] = tl_globaltimer();
#endif
  __syncthreads();
  if constexpr (kQShare) {
#if DSPARKCTL_WGMMA
    uint32_t nct = 0;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(nct));
    if (nct != 2) __trap();  // launched without the 2-CTA cluster: fail loudly, not hang on qbar
#endif
    ws_cluster_sync();  // the peer's Q barrier is initialised before any of this CTA's st.async reaches it
    if (tid == 0) mbar_expect_tx(qbar, kQShareBytes);
  }

  // The split's tile range, as the main kernel cuts it (the full tile range of topk + extra,
  // clipped to the row's valid tiles), so plans and combines are shared.
  const int ntf_m = (p.main.topk + BN - 1) / BN;
  const int ntf = ntf_m + (p.extra.topk + BN - 1) / BN;
  const int sb = split_first_tile(ntf, split, num_splits);
  const int se = split_first_tile(ntf, split + 1, num_splits);
  asm volatile("griddepcontrol.wait;" ::: "memory");  // v23: no global access before this
  DSPARKCTL_WS_PRO(tid == 0, 9)
  // the consumers' Q rows (DSPARKCTL_WS_Q_EARLY: loaded here, before the lengths)
  using QR = QRows<M>;
  uint4 qv[QR::QN];
  constexpr bool kQEarly = DSPARKCTL_WS_Q_EARLY == 2 || (DSPARKCTL_WS_Q_EARLY == 1 && !DH);
  if constexpr (kQEarly) {
    if (warp < 8) typename QR::Src(p, t, h0, tid).load(qv);
  }
  const ValidTiles<BN> vt(p, t, ntf_m, sb, se, ntf, split, num_splits);
  const int tile_begin = vt.begin;
  const int tile_end = vt.end;
#ifdef DSPARKCTL_TIMELINE
  if (tile_end < 0) __trap();  // never: uses the range, so the mark below follows its loads
#endif
  DSPARKCTL_WS_TL_ABS(24);
  auto tile_src = [&](int it, const SparseMlaCache*& c, int& pos0, int& len) { vt.src(p, it, c, pos0, len); };
  // kWsTail16: tile `it`'s live rows all lie in its first 16 candidates (every role asks, same answer)
  auto tail16 = [&](int it) {
    if constexpr (kWsTail16 && VEC == 16) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(it, c, pos0, len);
      return len - pos0 <= 16;
    } else {
      (void)it;
      return false;
    }
  };
  // The bulk copies of tile `it`'s valid rows (576 contiguous bytes each) into raw slots cand x 576
  // of its KV buffer, counted on rawbar (invalid rows are zeroed at conversion), by the four warps
  // of one warpgroup (`gw` 0-3; warp 0 posts the byte count): kWsCopyLanes copies a warp, since a
  // warp issues its copies one lane after another (v35 / v36).
  auto ws_copies = [&](int it, int gw) {
    const int j = it - tile_begin, b = buf_of(j), q = j & (W::kSlots - 1);
    const SparseMlaCache* c; int pos0, len;
    tile_src(it, c, pos0, len);
    if (gw == 0) {
      const uint32_t n = __popc(__ballot_sync(0xffffffffu, sValid[q * BN + lane] != 0)) +
                         __popc(__ballot_sync(0xffffffffu, sValid[q * BN + 32 + lane] != 0));
      if (lane == 0) mbar_expect_tx(&rawbar[b], n * uint32_t(kRowBytes));
    }
    if (lane < kWsCopyLanes) {
      const int cand = gw * kWsCopyLanes + lane;
      const int64_t off = cand < BN ? sOffP[q * BN + cand] : -1;
      if (off >= 0) bulk_copy(kv_buf(b) + cand * kRowBytes, c->base + off, kRowBytes, &rawbar[b]);
    }
  };

  if (warp >= 8) {
    // ================= producer. Tile k's raw bytes land in its KV buffer itself and are
    // converted there (every raw byte read into registers, a producer barrier, then the fp16 rows
    // written), so the producer holds no tile in registers and tile k's copy is in flight while
    // tile k-1 is converted and consumed. 16-byte path (v32): one bulk copy per valid row into
    // raw slot cand x 576, issued by this warpgroup for tiles 0 and 1 and by warpgroup 1 for the
    // rest (v37), as soon as tile k-2 frees the buffer. 8-byte path: cp.async (coalesced as the
    // main kernel's copy, zero-fill for invalid candidates), rope bytes straight to their place,
    // each 64-dim nope block's FP8 bytes into the second half of that block's 8 KB (candidate
    // c's 64 bytes at 4 KB + 64 c), all issued here. (v31's first forms loaded into registers:
    // one tile in flight, a gather latency per tile; session 26's register loads one tile ahead,
    // bench/results/kernel_h200_v44_ldg/, were slower.)
    setmaxnreg_dec<W::REGS_PRODUCER>();
    DSPARKCTL_WS_PRO(tid == 256, 6)
    DSPARKCTL_WS_TL_DECL
    const int pt = tid - 256;
    constexpr int NCPC = kDN / VEC, RCPC = (kRowBytes - kDN) / VEC;
    constexpr int NPT_N = BN * NCPC / 128, NPT_R = BN * RCPC / 128;
    constexpr int UPT = (kDN / 64) * BN * 2 / 128;  // conversion units (block, candidate, half row) per thread
    static_assert(BN * NCPC % 128 == 0 && BN * RCPC % 128 == 0 && (kDN / 64) * BN * 2 % 128 == 0, "whole work per thread");
    int32_t id_next = -1;
    const int prow = ws_prep_row(pt);  // the row of each tile this thread preps
    const bool prow_on = ws_preps(pt);
    if (prow_on && tile_begin < tile_end) {
      const SparseMlaCache* c; int pos0, len;
      tile_src(tile_begin, c, pos0, len);
      id_next = load_id(*c, t, pos0 + prow, len);
    }
    // the next tile's id load, tile `it`'s row offsets, valid flags and scale-byte copies (one
    // cp.async group a tile)
    auto prep = [&](int it, bool ahead) {
      const int q = (it - tile_begin) & (W::kSlots - 1);
      const SparseMlaCache* c; int pos0, len;
      tile_src(it, c, pos0, len);
      if (prow_on) {
        const int32_t id = id_next;
        const SlotOffsets so = slot_offsets(*c, id);
        const int64_t off = so.off, soff = so.soff;
        sOffP[q * BN + prow] = off;
        sValid[q * BN + prow] = off >= 0 ? 1 : 0;
        cp_async<8>(sScl + (q * BN + prow) * 8, c->base + (off >= 0 ? soff : 0), off >= 0);
        if constexpr (kWsL2Prefetch) {
          if (ahead && off >= 0) prefetch_l2_bulk(c->base + off, kRowBytes);
        }
        // v43: the next tile's id load issued after this tile's id is used, so it can land in the
        // same register. Issued before the offsets (v42), it needed a second one, and ptxas's copy
        // back at the end of prep waited for the load itself (session 25's ncu: long-scoreboard
        // stalls on that move, a global load's latency in every prep).
        if (it + 1 < tile_end) {
          const SparseMlaCache* c1; int q0, l1;
          tile_src(it + 1, c1, q0, l1);
          id_next = load_id(*c1, t, q0 + prow, l1);
        }
      }
      cp_async_commit();
      DSPARKCTL_WS_TL(4);  // prep: the next tile's ids, this tile's offsets and scale copies
    };
    // the producer's own copies (tiles 0 and 1, and on the 8-byte path every tile)
    auto issue = [&](int it) {
      const int b = (it - tile_begin) & 1, q = (it - tile_begin) & (W::kSlots - 1);
      prep(it, false);
      nbar_sync(kWsProducer, kWsProducerThreads);  // the tile's row offsets
      DSPARKCTL_WS_TL(5);                          // the producer barrier
      if constexpr (VEC == 16) {
        ws_copies(it, warp - 8);
        return;
      }
      const SparseMlaCache* c; int pos0, len;
      tile_src(it, c, pos0, len);
      uint8_t* dst = smem + W::OFF_KV + b * W::TILE;
      __nv_bfloat16* sKV = kv_tile(b);
      const int pl = tid_fresh() - 256;  // read anew: keeps ptxas from hoisting per-chunk offsets (spills)
#pragma unroll
      for (int i = 0; i < NPT_N; ++i) {
        const int k = pl + i * 128;
        const int cand = k / NCPC, byte = (k % NCPC) * VEC;
        const int64_t off = sOffP[q * BN + cand];
        cp_async<VEC>(dst + (byte >> 6) * 8192 + 4096 + cand * 64 + (byte & 63), c->base + (off >= 0 ? off + byte : 0),
                      off >= 0);
      }
#pragma unroll
      for (int i = 0; i < NPT_R; ++i) {
        const int r = pl + i * 128;
        const int cand = r / RCPC, byte = (r % RCPC) * VEC;
        const int64_t off = sOffP[q * BN + cand];
        cp_async<VEC>(sKV + sw128_off<BN>(cand, kDN + byte / 2), c->base + (off >= 0 ? off + kDN + byte : 0), off >= 0);
      }
      cp_async_commit();
    };
    // the tile's largest nope scale byte (its V exponent + 127; 255, NaN, is no magnitude), by the
    // warps of threads 0-63, one per candidate
    auto tile_max = [&](int b, int q) {
      if (pt < BN) {
        const uint2 sc = *reinterpret_cast<const uint2*>(sScl + (q * BN + pt) * 8);
        uint32_t m = 0;
#pragma unroll
        for (int i = 0; i < 7; ++i) {
          const uint32_t v = __byte_perm(i < 4 ? sc.x : sc.y, 0u, 0x4440u + (i & 3));
          m = max(m, v == 255u ? 0u : v);
        }
        m = __reduce_max_sync(0xffffffffu, m);
        if (lane == 0) sPmax[b * 4 + (warp - 8)] = m;
      }
    };
    // this thread's raw units (nope block i, candidate pc % 128 / 2, half pc % 2) and rope pieces,
    // converted into buffer b's tile and published (after the tile max is in sPmax)
    auto store_tile = [&](int b, int q, __nv_bfloat16* sKV, const uint4 (&raw)[UPT][2],
                          const uint4 (&rope)[VEC == 16 ? BN * 8 / 128 : 1]) {
      const uint32_t maxb = max(sPmax[b * 4], sPmax[b * 4 + 1]);
      {
        // v41: a thread's units all hold candidate (pc % 128) / 2 and half pc % 2 (unit i is
        // block i), so each store address is a per-thread register plus an immediate. v40's
        // loop (sw128_off per piece) let ptxas recompute the swizzle for each of the 28 pieces:
        // ~9 of a piece's ~20 instructions, and session 24's ncu profile had 18% of the
        // producer's stall samples waiting for instructions. The thread index is read anew, as
        // above (hoisted, the offsets spilled).
        // sw128_off<BN>(cand, 64 i + 32 half + 8 k) in bytes: 8192 i + 128 cand + 16 (((4 half + k) ^ cand) & 7)
        const int pf = tid_fresh() - 256;
        const int ccand = (pf & 127) >> 1, chalf = pf & 1;
        const uint8_t* scl = sScl + (q * BN + ccand) * 8;
        uint8_t* dst = reinterpret_cast<uint8_t*>(sKV) + ccand * 128;
        const int x0 = ((chalf * 4 ^ ccand) & 7) * 16;  // piece k: x0 ^ 16 k (k < 4 flips bits 4-5 only)
#pragma unroll
        for (int i = 0; i < UPT; ++i) ws_store_unit(dst + i * 8192, x0, raw[i], f16_pow2x2(scl[i], maxb));
        if constexpr (VEC == 16) {
          // sw128_off<BN>(rrow + 16 i, kDN + 8 (pf % 8)) in bytes: 7 * 8192 + 128 (rrow + 16 i) + 16 ((pf ^ rrow) & 7)
          const int rrow = (pf & 127) >> 3;
          uint8_t* rdst = reinterpret_cast<uint8_t*>(sKV) + 7 * 8192 + rrow * 128 + (((pf & 7) ^ rrow) & 7) * 16;
#pragma unroll
          for (int i = 0; i < BN * 8 / 128; ++i) *reinterpret_cast<uint4*>(rdst + i * 16 * 128) = rope[i];
        }
      }
      if (pt == 0) sEtile[b] = int(maxb) - 127;
      fence_proxy_async_smem();
      mbar_arrive(&full[b]);
    };
    auto convert = [&](int it) {
      // (R = 2: v67's expressions, spelled as v67 did: its SASS is what the GPU tests measured)
      const int b = R == 3 ? buf_of(it - tile_begin) : (it - tile_begin) & 1, q = (it - tile_begin) & (W::kSlots - 1);
      // this tile's scale bytes (and, on the 8-byte path, its rows); v37's loop has the next
      // tile's prep group in flight here, except at the last tile
      if (kWsConsumerCopies && it + 1 < tile_end)
        cp_async_wait_one();
      else
        cp_async_wait_all();
      if constexpr (VEC == 16) mbar_wait(&rawbar[b], R == 3 ? phase_of(it - tile_begin) : uint32_t((it - tile_begin) >> 1) & 1u);
      nbar_sync(kWsProducer, kWsProducerThreads);  // every thread's copies of the tile have landed
      DSPARKCTL_WS_TL(1);  // tile landed
      DSPARKCTL_WS_EV(pt == 0, it - tile_begin, kEvProdLanded)
      tile_max(b, q);
      const uint8_t* base = R == 3 ? kv_buf(b) : smem + W::OFF_KV + b * W::TILE;
      __nv_bfloat16* sKV = kv_tile(b);
      const int pc = tid_fresh() - 256;
      if (tail16(it)) {
        // kWsTail16: rows 0-15 only, over all 128 threads: thread pc converts row (pc / 2) % 16, half
        // pc % 2, of nope blocks pc / 32 and pc / 32 + 4 (< 7), and rope piece pc % 8 of row pc / 8.
        // Same values to the same addresses as store_tile (sw128_off<BN>, as there).
        const int tc = (pc >> 1) & 15, th = pc & 1, tb = pc >> 5;
        const bool ok = sValid[q * BN + tc] != 0;
        const uint8_t* src = base + tc * kRowBytes + tb * 64 + th * 32;
        uint4 traw[2][2];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const bool on = ok && (k == 0 || tb < 3);
          traw[k][0] = on ? *reinterpret_cast<const uint4*>(src + k * 256) : make_uint4(0, 0, 0, 0);
          traw[k][1] = on ? *reinterpret_cast<const uint4*>(src + k * 256 + 16) : make_uint4(0, 0, 0, 0);
        }
        const int rr = pc >> 3;
        const uint4 trope = sValid[q * BN + rr] != 0 ? *reinterpret_cast<const uint4*>(base + rr * kRowBytes + kDN + (pc & 7) * 16)
                                                     : make_uint4(0, 0, 0, 0);
        nbar_sync(kWsProducer, 128);  // every raw byte read before a converted row overwrites it; the tile max
        DSPARKCTL_WS_TL(6);
        const uint32_t maxb = max(sPmax[b * 4], sPmax[b * 4 + 1]);
        const uint8_t* scl = sScl + (q * BN + tc) * 8;
        uint8_t* dst = reinterpret_cast<uint8_t*>(sKV) + tc * 128 + tb * 8192;
        const int x0 = ((th * 4 ^ tc) & 7) * 16;
        ws_store_unit(dst, x0, traw[0], f16_pow2x2(scl[tb], maxb));
        if (tb < 3) ws_store_unit(dst + 4 * 8192, x0, traw[1], f16_pow2x2(scl[tb + 4], maxb));
        *reinterpret_cast<uint4*>(reinterpret_cast<uint8_t*>(sKV) + 7 * 8192 + rr * 128 + (((pc & 7) ^ rr) & 7) * 16) = trope;
        if (pt == 0) sEtile[b] = int(maxb) - 127;
        fence_proxy_async_smem();
        mbar_arrive(&full[b]);
        DSPARKCTL_WS_TL(3);
        DSPARKCTL_WS_EV(pt == 0, it - tile_begin, kEvProdPublished)
        return;
      }
      uint4 raw[UPT][2];
      uint4 rope[VEC == 16 ? BN * 8 / 128 : 1];
      if constexpr (VEC == 16) {
        // raw slot cand * 576: nope bytes 64 blk + 32 h (+16), rope piece q at 448 + 16 q
#pragma unroll
        for (int i = 0; i < UPT; ++i) {
          const int u = pc + i * 128;
          const int cand = (u & 127) >> 1;
          const uint8_t* src = base + cand * kRowBytes + (u >> 7) * 64 + (u & 1) * 32;
          const bool ok = sValid[q * BN + cand] != 0;
          raw[i][0] = ok ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
          raw[i][1] = ok ? *reinterpret_cast<const uint4*>(src + 16) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int i = 0; i < BN * 8 / 128; ++i) {
          const int r = pc + i * 128;
          const bool ok = sValid[q * BN + (r >> 3)] != 0;
          rope[i] = ok ? *reinterpret_cast<const uint4*>(base + (r >> 3) * kRowBytes + kDN + (r & 7) * 16)
                       : make_uint4(0, 0, 0, 0);
        }
      } else {
#pragma unroll
        for (int i = 0; i < UPT; ++i) {
          const int u = pc + i * 128;
          const uint8_t* src = base + (u >> 7) * 8192 + 4096 + ((u & 127) >> 1) * 64 + (u & 1) * 32;
          raw[i][0] = *reinterpret_cast<const uint4*>(src);
          raw[i][1] = *reinterpret_cast<const uint4*>(src + 16);
        }
      }
      nbar_sync(kWsProducer, 128);  // every raw byte read before a converted row overwrites it; the tile max
      DSPARKCTL_WS_TL(6);  // the tile max and the raw reads (timeline slot 20)
      store_tile(b, q, sKV, raw, rope);
      DSPARKCTL_WS_TL(3);  // converted, stored, published
      DSPARKCTL_WS_EV(pt == 0, it - tile_begin, kEvProdPublished)
    };
    if constexpr (kWsConsumerCopies) {
      // v37: the producer copies tiles 0 and 1 (both buffers start free); tile j >= 2 is copied by
      // warpgroup 1 as soon as the consumers free its buffer (tile j - 2), from the offsets the
      // producer posts on offs[] right after converting tile j - 2. So no copy issue (~2,000
      // cycles a tile, v36) sits in the producer's loop, and the producer never waits for a buffer.
      // (kCopy1, v71: tile 1's offsets only here, posted on offs[1]; warpgroup 1 copies it)
      for (int it = tile_begin; it < tile_end && it < tile_begin + 2; ++it) {
        if (kCopy1 && it > tile_begin) {
          prep(it, true);
          mbar_arrive(&offs[1]);
        } else {
          issue(it);
        }
        DSPARKCTL_WS_PRO(tid == 256, 7 + it - tile_begin)
        DSPARKCTL_WS_TL(0);  // copies issued
      }
      for (int it = tile_begin; it < tile_end; ++it) {
        convert(it);
        if (it + 2 < tile_end) {
          if constexpr (R == 3) {
            // tile it + 2's slot is tile it - 2's (kSlots 4), and with 3 buffers tile it may land
            // before the consumers are done with tile it - 2: wait for its empty barrier (after
            // warpgroup 0's mask, which reads the slot's valid flags)
            const int j = it - tile_begin;
            if (j >= 2) mbar_wait(&empty[buf_of(j - 2)], phase_of(j - 2));
          }
          prep(it + 2, true);
          mbar_arrive(&offs[R == 3 ? buf_of(it + 2 - tile_begin) : (it - tile_begin) & 1]);
        }
      }
    } else {
      if (tile_begin < tile_end) issue(tile_begin);
      DSPARKCTL_WS_TL(0);
      for (int it = tile_begin + 1; it < tile_end; ++it) {
        convert(it - 1);
        const int j = it - tile_begin;
        if (j >= 2) mbar_wait(&empty[j & 1], uint32_t((j >> 1) - 1) & 1u);  // tile j - 2 is done with the buffer
        DSPARKCTL_WS_TL(2);  // buffer free
        issue(it);
        DSPARKCTL_WS_TL(0);  // copies issued
      }
      if (tile_begin < tile_end) convert(tile_end - 1);
    }
#ifdef DSPARKCTL_TL_SPLIT_PV
    // (timeline builds with -DDSPARKCTL_TL_SPLIT_PV only, session 32) slots 13-14 carry warpgroup 1's
    // P.V split into issue and wait (below) instead of the producer's first two phases
    DSPARKCTL_WS_TL_STORE_AT(pt == 0, 2, 15)
    DSPARKCTL_WS_TL_STORE_AT(pt == 0, 3, 16)
    DSPARKCTL_WS_TL_STORE_AT(pt == 0, 4, 17)
    DSPARKCTL_WS_TL_STORE_AT(pt == 0, 5, 18)
#else
    DSPARKCTL_WS_TL_STORE(pt == 0, 13, 6)
#endif
    DSPARKCTL_WS_TL_STORE_AT(pt == 0, 6, 20)
    // the consumers' epilogue barriers are whole-CTA ones: the producer takes part, idle (v32:
    // with 256-thread named barriers there, racecheck reported the staging writes against the
    // read-back behind them, a few hazards a run in different places each run, even on a barrier
    // id of their own; whole-CTA barriers leave nothing to model)
    cta_sync_divergent();
    cta_sync_divergent();
    if (!kNoClusterCombine && ws_cluster_combines(num_splits)) {  // the consumers' two cluster rendezvous (ws_cluster_combine)
      ws_cluster_sync();
      ws_cluster_sync();
    }
    return;
  }

  // ================= consumers (warpgroups 0 and 1, 256 threads)
  const int wg = warp >> 2, wl = warp & 3;
  // Q rows -> registers -> shared memory: nope as fp16 (per-row power-of-two shift on the slow
  // path, as the main kernel), rope as bf16, all in the 128-byte swizzle.
  constexpr int kCT = 256;
  int q_shift[2] = {0, 0};  // warpgroup 0: its two S rows' Q shift
  if constexpr (kQShare) {
    // this CTA's 32 rows (32 half ..) to its own Q region and the peer's, their slow-path shifts to
    // both CTAs' sQsh; warpgroup 0 waits on qbar for the peer's before it reads Q
    static_assert(!kQEarly, "the halves kernel loads Q after the lengths");
    using QH = QRows<32>;
    uint4 qh[QH::QN];
    typename QH::Src(p, t, h0 + 32 * half, tid).load(qh);
    DSPARKCTL_WS_PRO(tid == 0, 0)
    const bool q_nope_col = (tid % (kD / 8)) < kDN / 8;
    // (the slow path is decided per 32 rows here, per 64 in the default build: with odd rows in one
    // half only, the other half's rows convert unshifted, as any block without odd rows does, so the
    // outputs can differ from the default build's in the last bits of such calls)
    const bool q_slow = nbar_or(kWsConsumers, kCT, QH::odd(qh, q_nope_col) != 0);
    DSPARKCTL_WS_TL_ABS(25);
    DSPARKCTL_WS_PRO(tid == 0, 1)
    const int rb = 32 * half;
    if (q_slow) {
#pragma unroll
      for (int i = 0; i < QH::QN; ++i) {
        const uint32_t m = __reduce_max_sync(0xffffffffu, q_nope_col ? q_chunk_max(qh[i]) : 0u);
        if (lane == 0) sQmax[(rb + (tid + i * kCT) / (kD / 8)) * 2 + (warp & 1)] = m;
      }
      nbar_sync(kWsConsumers, kCT);
    }
    const uint32_t peer = uint32_t(half ^ 1);
    const uint32_t rbar = peer_smem(reinterpret_cast<const float*>(qbar), peer);
    int* sQsh = reinterpret_cast<int*>(sFact);  // the rows' Q shifts, until the rows' output factors
    if (tid < 32) {
      const int r = rb + tid;
      const int sh = q_slow ? q_row_shift(sQmax[r * 2], sQmax[r * 2 + 1]) : 0;
      sQsh[r] = sh;
      st_async_b32(peer_smem(reinterpret_cast<const float*>(sQsh + r), peer), uint32_t(sh), rbar);
    }
#pragma unroll
    for (int i = 0; i < QH::QN; ++i) {
      const int r = rb + (tid + i * kCT) / (kD / 8);
      uint4 v = qh[i];
      if (q_nope_col) {
        const float f = q_slow ? pow2i(-q_row_shift(sQmax[r * 2], sQmax[r * 2 + 1])) : 1.f;
        uint32_t* w = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) w[jj] = pack_f16(bf16_lo(w[jj]) * f, bf16_hi(w[jj]) * f);
      }
      __nv_bfloat16* dst = sQ + sw128_off<M>(r, (tid % (kD / 8)) * 8);
      *reinterpret_cast<uint4*>(dst) = v;
      st_async_v4(peer_smem(reinterpret_cast<const float*>(dst), peer), v, rbar);
    }
  } else {
    if constexpr (!kQEarly) typename QR::Src(p, t, h0, tid).load(qv);
    DSPARKCTL_WS_PRO(tid == 0, 0)
    const bool q_nope_col = (tid % (kD / 8)) < kDN / 8;
    const bool q_slow = nbar_or(kWsConsumers, kCT, QR::odd(qv, q_nope_col) != 0);
    DSPARKCTL_WS_TL_ABS(25);
    DSPARKCTL_WS_PRO(tid == 0, 1)
    if (q_slow) {
#pragma unroll
      for (int i = 0; i < QR::QN; ++i) {
        const uint32_t m = __reduce_max_sync(0xffffffffu, q_nope_col ? q_chunk_max(qv[i]) : 0u);
        if (lane == 0) sQmax[((tid + i * kCT) / (kD / 8)) * 2 + (warp & 1)] = m;
      }
      nbar_sync(kWsConsumers, kCT);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = wl * 16 + (lane >> 2) + 8 * i;
        q_shift[i] = q_row_shift(sQmax[row * 2], sQmax[row * 2 + 1]);
      }
    }
    // (the main kernel's loop, inline there and here: as a shared function ptxas schedules both
    // kernels differently, and their SASS is what the GPU tests measured)
#pragma unroll
    for (int i = 0; i < QR::QN; ++i) {
      const int k = tid + i * kCT;
      const int r = k / (kD / 8);
      uint4 v = qv[i];
      if (q_nope_col) {
        const float f = q_slow ? pow2i(-q_row_shift(sQmax[r * 2], sQmax[r * 2 + 1])) : 1.f;
        uint32_t* w = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) w[jj] = pack_f16(bf16_lo(w[jj]) * f, bf16_hi(w[jj]) * f);
      }
      *reinterpret_cast<uint4*>(sQ + sw128_off<M>(r, (tid % (kD / 8)) * 8)) = v;
    }
  }
  DSPARKCTL_WS_PRO(tid == 0, 2)
  fence_proxy_async_smem();
  DSPARKCTL_WS_PRO(tid == 0, 3)
  nbar_sync(kWsConsumers, kCT);  // Q in place for warpgroup 0's S
  DSPARKCTL_WS_PRO(tid == 0, 4)

  const float scale_log2 = p.sm_scale * kLog2e;
  float o[32][4];  // dims 256 wg + 8 j (+ 2 (lane % 4) + c % 2), rows 16 wl + lane / 4 (+ 8 (c / 2))
#pragma unroll
  for (int jj = 0; jj < 32; ++jj)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[jj][c] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};  // warpgroup 0: this thread's share of l
  int e_run = -(1 << 20);
  float(&on)[24][4] = *reinterpret_cast<float(*)[24][4]>(&o[0][0]);
  float(&orp)[8][4] = *reinterpret_cast<float(*)[8][4]>(&o[24][0]);
  const uint64_t dp16 = wgmma_desc_sw128(sP16);
  const uint64_t dph = wgmma_desc_sw128(sPhi);
  const uint64_t dpl = wgmma_desc_sw128(sPlo);
  auto kstep = [](int kk, int rows) { return uint64_t(((kk >> 2) * rows * 128 + (kk & 3) * 32) >> 4); };

  // The epilogue's staging: this warpgroup's O rows, scaled, to shared memory (fp32, over Q and
  // the KV tiles) once both warpgroups' last P.V are done with them (the whole-CTA barrier; the
  // factors are in sFact). Called at the end of each consumer branch (v39: see ws_s64).
  float* sOut = reinterpret_cast<float*>(smem + W::OFF_Q);  // [M][kORow] fp32, over Q and the KV tiles
  // DH: warpgroup 1 holds dims 256 half.. (all nope for half 0); warpgroup 0 holds none
  const int dblk = DH ? half : wg;
  auto ws_stage = [&]() {
    cta_sync_divergent();
    if (DH && wg == 0) return;
    const Pow2Pair v_exp(e_run);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = wl * 16 + (lane >> 2) + 8 * i;
      const float f = sFact[row];
      const float fn = v_exp(f);
      float* srow = sOut + row * kORow + (lane & 3) * 2;
#pragma unroll
      for (int jj = 0; jj < 32; ++jj) {
        const float g = (dblk == 0 || jj < 24) ? fn : f;
        *reinterpret_cast<float2*>(srow + dblk * 256 + jj * 8) = make_float2(o[jj][2 * i] * g, o[jj][2 * i + 1] * g);
      }
    }
  };
  // DSPARKCTL_WS_DH_DIRECT (v67): an unsplit halves CTA's warpgroup 1 stores its bf16 rows from
  // registers (session 40 measured the same for the one-CTA kernel, -DDSPARKCTL_WS_DIRECT, and
  // rejected it: bench/results/kernel_h200_ws_direct/)
  constexpr bool kDirect = DH && kWsDhDirect;
  const bool direct = kDirect && num_splits == 1;
  auto ws_store_direct = [&]() {
    cta_sync_divergent();  // ws_stage's barrier: warpgroup 0's factors are in sFact
    const Pow2Pair v_exp(e_run);
    const int lo = lane & 1, hi = (lane >> 1) & 1;
    const int ra = wl * 16 + (lane >> 2);
    const float fa = sFact[ra], fb = sFact[ra + 8];  // rows a, a + 8: rope factors; nope: v_exp(f), as ws_stage's
    const float fna = v_exp(fa), fnb = v_exp(fb);
    const int h = h0 + ra + 8 * hi;  // this lane stores row a (hi 0) or a + 8, dims 16 m + 8 lo ..
    __nv_bfloat16* dst = reinterpret_cast<__nv_bfloat16*>(p.out) + (int64_t(t) * p.H + (h < p.H ? h : 0)) * kD + dblk * 256 + 8 * lo;
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      const bool rope = dblk == 1 && 2 * m >= 24;  // (2 m and 2 m + 1 both, 24 being even)
      const float ga = rope ? fa : fna, gb = rope ? fb : fnb;
      // word d of this lane goes to quad lane d: d = 0 / 1 row a, dims 16 m (+ 8); 2 / 3 row a + 8
      const uint32_t w0 = pack_bf16(o[2 * m][0] * ga, o[2 * m][1] * ga);
      const uint32_t w1 = pack_bf16(o[2 * m + 1][0] * ga, o[2 * m + 1][1] * ga);
      const uint32_t w2 = pack_bf16(o[2 * m][2] * gb, o[2 * m][3] * gb);
      const uint32_t w3 = pack_bf16(o[2 * m + 1][2] * gb, o[2 * m + 1][3] * gb);
      // across lane bit 1: keep the words for d = 2 hi, 2 hi + 1
      const uint32_t ka = hi ? w2 : w0, kb = hi ? w3 : w1;
      const uint32_t ra0 = __shfl_xor_sync(0xffffffffu, hi ? w0 : w2, 2);
      const uint32_t ra1 = __shfl_xor_sync(0xffffffffu, hi ? w1 : w3, 2);
      // across lane bit 0: keep d = lane % 4
      const uint32_t own = lo ? kb : ka, pa = lo ? ra1 : ra0;
      const uint32_t b0 = __shfl_xor_sync(0xffffffffu, lo ? ka : kb, 1);
      const uint32_t b1 = __shfl_xor_sync(0xffffffffu, lo ? ra0 : ra1, 1);
      // by source lane k (dims 2 k, 2 k + 1): k = q own, q ^ 1 b0, q ^ 2 pa, q ^ 3 b1
      const uint32_t p0 = lo ? b0 : own, p1 = lo ? own : b0, p2 = lo ? b1 : pa, p3 = lo ? pa : b1;
      const uint4 v = hi ? make_uint4(p2, p3, p0, p1) : make_uint4(p0, p1, p2, p3);
      if (h < p.H) *reinterpret_cast<uint4*>(dst + 16 * m) = v;
    }
  };
  // the end of each consumer branch: this warpgroup's rows stored from registers, or staged (the
  // halves kernel's warpgroup 0 holds no rows: ws_stage's barrier alone)
  auto ws_rows_out = [&]() {
    if constexpr (kDirect) {
      if (direct && !(DH && wg == 0)) {
        ws_store_direct();
        return;
      }
    }
    ws_stage();
  };
  if (wg == 0) {
    setmaxnreg_inc<W::REGS_S>();
    if constexpr (kQShare) {
      mbar_wait_cluster(qbar, 0u);  // the peer's rows of Q and their shifts are here
#pragma unroll
      for (int i = 0; i < 2; ++i) q_shift[i] = reinterpret_cast<const int*>(sFact)[wl * 16 + (lane >> 2) + 8 * i];
    }
    DSPARKCTL_WS_TL_ABS(21);
    DSPARKCTL_WS_PRO(tid == 0, 5)
    DSPARKCTL_WS_TL_DECL
    const uint64_t dq = wgmma_desc_sw128(sQ);
    // DSPARKCTL_WS_DH_RING3: Q's 32 k-steps as A fragments (rows 16 wl + lane / 4 (+ 8), dims
    // 16 kk + 2 (lane % 4) (+ 1) (+ 8)), read once from the swizzled Q; then Q's region is buffer 2
    constexpr int kQR = R == 3 ? kD / 16 : 0;
    [[maybe_unused]] uint32_t qa[kQR > 0 ? kQR : 1][4];
    if constexpr (kQR > 0) {
      const int r0 = wl * 16 + (lane >> 2), c0 = (lane & 3) * 2;
#pragma unroll
      for (int kk = 0; kk < kQR; ++kk) {
        qa[kk][0] = *reinterpret_cast<const uint32_t*>(sQ + sw128_off<M>(r0, kk * 16 + c0));
        qa[kk][1] = *reinterpret_cast<const uint32_t*>(sQ + sw128_off<M>(r0 + 8, kk * 16 + c0));
        qa[kk][2] = *reinterpret_cast<const uint32_t*>(sQ + sw128_off<M>(r0, kk * 16 + c0 + 8));
        qa[kk][3] = *reinterpret_cast<const uint32_t*>(sQ + sw128_off<M>(r0 + 8, kk * 16 + c0 + 8));
      }
      // warpgroup 1 copies tile 2 over Q after this (the loads above are the last generic reads of Q)
      fence_proxy_async_smem();
      ws_handoff(kWsQFree, kCT);  // (the racecheck build: a rendezvous, as P's hand-offs)
    }
    for (int it = tile_begin; it < tile_end; ++it) {
      const int j = it - tile_begin, b = buf_of(j), pb = R == 3 ? j & 1 : b;
      mbar_wait(&full[b], phase_of(j));
      DSPARKCTL_WS_TL(0);  // tile ready
      DSPARKCTL_WS_EV(tid == 0, j, kEvWg0Ready)
      const bool t16 = tail16(it);  // kWsTail16: P and P.V over candidates 0-15 only
      const int e_tile = sEtile[b];
      const int e_new = e_run > e_tile ? e_run : e_tile;
      __nv_bfloat16* sKV = kv_tile(b);
      float s[8][4];  // columns (candidates) 8 n + 2 (lane % 4) (+ 1)
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[n][c] = 0.f;
      const uint64_t dk = wgmma_desc_sw128(sKV);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kDN / 16; ++kk) {
        if constexpr (kQR > 0) ws_s64_ra<false>(s, qa[kk], dk + kstep(kk, BN));
        else ws_s64<false>(s, dq + kstep(kk, M), dk + kstep(kk, BN));
      }
      wgmma_commit_wait();
      const Pow2Pair s_nope[2] = {Pow2Pair(q_shift[0] + e_tile), Pow2Pair(q_shift[1] + e_tile)};
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[n][c] = s_nope[c >> 1](s[n][c]);
      wgmma_fence();
#pragma unroll
      for (int kk = kDN / 16; kk < kD / 16; ++kk) {
        if constexpr (kQR > 0) ws_s64_ra<true>(s, qa[kk], dk + kstep(kk, BN));
        else ws_s64<true>(s, dq + kstep(kk, M), dk + kstep(kk, BN));
      }
      wgmma_commit_wait();
      if constexpr (DH) mbar_arrive(&empty[b]);  // DH: no P.V here, so S was this warpgroup's last read of the tile
      DSPARKCTL_WS_TL(1);  // S
      DSPARKCTL_WS_EV(tid == 0, j, kEvWg0S)
      // scale (base 2), mask (a select: invalid candidates' rows are zeros, but stay out), row max
      float rmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < 8; ++n) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int col = n * 8 + (lane & 3) * 2 + (c & 1);
          const float v = sValid[(j & (W::kSlots - 1)) * BN + col] ? s[n][c] * scale_log2 : -INFINITY;
          s[n][c] = v;
          rmax[c >> 1] = fmaxf(rmax[c >> 1], v);
        }
      }
      float alpha[2], m_use[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        rmax[i] = fmaxf(rmax[i], __shfl_xor_sync(0xffffffffu, rmax[i], 1));
        rmax[i] = fmaxf(rmax[i], __shfl_xor_sync(0xffffffffu, rmax[i], 2));
        // v42: the running max moves only when a row's tile max exceeds it by more than
        // kWsLazyMax (base 2), so P stays below 2^kWsLazyMax (fp16 P: <= 256 x a shift <= 1) and
        // most tiles rescale nothing. O, l and the lse all refer to the same (stale) max, so the
        // result is exact up to rounding. -inf (no valid candidate yet) moves to any finite max; a
        // NaN tile max moves nothing, as fmaxf ignored it.
        const float mx = rmax[i] > m_run[i] + kWsLazyMax ? rmax[i] : m_run[i];
        alpha[i] = mx == -INFINITY ? 1.f : fast_exp2(m_run[i] - mx);
        m_run[i] = mx;
        m_use[i] = mx == -INFINITY ? 0.f : mx;
      }
      const float f16_shift = pow2i(e_tile - e_new);
      const float v_shift = pow2i(e_run - e_new);
      e_run = e_new;
      DSPARKCTL_WS_TL(2);  // mask, row max
      DSPARKCTL_WS_EV(tid == 0, j, kEvWg0Mask)
      if (j > 0) nbar_sync(kWsPFree, kCT);  // warpgroup 1's P.V of the previous tile is done with P
      DSPARKCTL_WS_TL(3);  // P free
      DSPARKCTL_WS_EV(tid == 0, j, kEvWg0PFree)
      float rsum[2] = {0.f, 0.f};
      // WS_NOPE_P_HILO: the lo parts, fp16 for this warpgroup's lo pass (register A) and e4m3 for
      // warpgroup 1's: word n of thread x at [n][x] (rows lane / 4 (+ 8) in its low (high) half,
      // warpgroup 1's A order; a warp's stores are 128 contiguous bytes)
      [[maybe_unused]] uint32_t p16lo[kWsNopePHiLo ? 8 : 1][2];
      [[maybe_unused]] uint32_t lo8 = 0;
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        if (n == 2 && t16) break;
        const int col = n * 8 + (lane & 3) * 2;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const float p0 = fast_exp2(s[n][2 * i] - m_use[i]);
          const float p1 = fast_exp2(s[n][2 * i + 1] - m_use[i]);
          rsum[i] += p0 + p1;
          const uint32_t hi = pack_bf16(p0, p1);
          const uint32_t lo = pack_bf16(p0 - bf16_lo(hi), p1 - bf16_hi(hi));
          const int po = sw128_off<M>(wl * 16 + (lane >> 2) + 8 * i, col);
          if (!DH || half == 1) {  // the rope dims' P (DH: only the second half has them)
            *reinterpret_cast<uint32_t*>(sPhi + po) = hi;
            *reinterpret_cast<uint32_t*>(sPlo + po) = lo;
          }
          const uint32_t h16 = pack_f16(p0 * f16_shift, p1 * f16_shift);
          *reinterpret_cast<uint32_t*>(sP16 + po) = h16;
          if constexpr (kWsNopePHiLo) {
            const float2 rest = f16_rest_f32(p0 * f16_shift, p1 * f16_shift, h16);
            p16lo[n][i] = pack_f16(rest.x, rest.y);
            const uint32_t e8 = e4m3x2_scaled(rest, float(1 << kWsLo8Shift));
            lo8 = i == 0 ? e8 : lo8 | (e8 << 16);
            if (i == 1) reinterpret_cast<uint32_t*>(smem + W::OFF_LO8)[n * 128 + (tid & 127)] = lo8;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        l_run[i] = l_run[i] * alpha[i] + rsum[i];
        // by tile parity: with one copy, racecheck reported this write (after bar.sync P-free)
        // against warpgroup 1's read of the previous tile (before its bar.arrive P-free)
        if ((lane & 3) == 0) sAlpha[pb * M + wl * 16 + (lane >> 2) + 8 * i] = alpha[i];
      }
      fence_proxy_async_smem();
      ws_handoff(kWsPReady, kCT);
      DSPARKCTL_WS_TL(4);  // P
      DSPARKCTL_WS_EV(tid == 0, j, kEvWg0P)
      if constexpr (DH) {
        DSPARKCTL_WS_TL(5);
        continue;  // warpgroup 1 runs the P.V of this CTA's dims
      }
      // v42: a warp whose rows all keep their max and exponent skips the rescale
      if (!__all_sync(0xffffffffu, alpha[0] * v_shift == 1.f && alpha[1] * v_shift == 1.f))
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float a = alpha[i] * v_shift;
#pragma unroll
        for (int jj = 0; jj < 32; ++jj) {
          o[jj][2 * i] *= a;
          o[jj][2 * i + 1] *= a;
        }
      }
      const uint64_t dv = wgmma_desc_sw128(sKV, BN * 128);
      // this warpgroup's P.V (dims 0-255); WS_NOPE_P_HILO: then the lo pass, P's lo part from registers
      // NKS k-steps (kWsTail16: 1 on a tile whose live rows are 0-15, a sequence of its own, so the
      // full tiles' sequence has no branch between its wgmmas)
      auto pv = [&](auto nks) {
        ws_pv_dims_0_255<decltype(nks)::value>(on, orp, dp16, dv, [&](int ks, uint32_t(&a)[4]) {
          a[0] = p16lo[2 * ks][0];
          a[1] = p16lo[2 * ks][1];
          a[2] = p16lo[2 * ks + 1][0];
          a[3] = p16lo[2 * ks + 1][1];
        });
      };
      if (t16) pv(std::integral_constant<int, 1>());
      else pv(std::integral_constant<int, BN / 16>());
      mbar_arrive(&empty[b]);
      DSPARKCTL_WS_TL(5);  // P.V (dims 0-255)
    }
    // the rows' sums over the quad, then their lse and output factors
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 1);
      l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], 2);
      const int row = wl * 16 + (lane >> 2) + 8 * i;
      const float f = finish_row(p, t, h0 + row, split, num_splits, m_run[i], l_run[i], (lane & 3) == 0 && half == 0);
      if ((lane & 3) == 0) sFact[row] = f;
      if constexpr (kWsClusterCombine && !kQShare) {  // (QSHARE: the region holds the Q hand-off's mbarrier)
        if ((lane & 3) == 0) reinterpret_cast<float*>(smem + W::OFF_LSE2)[row] = row_lse2(m_run[i], l_run[i]);
      }
    }
    DSPARKCTL_WS_TL(6);  // rows finished
    DSPARKCTL_WS_TL_STORE(tid == 0, 4, 7)
    ws_rows_out();
  } else {
    if constexpr (W::REGS_PV < W::REGS_LAUNCH) setmaxnreg_dec<W::REGS_PV>();
    else setmaxnreg_inc<W::REGS_PV>();
    DSPARKCTL_WS_TL_DECL
    if constexpr (R == 3) {
      // (kCopy1, v71: tile 1 from the producer's offsets, as soon as Q is in shared memory)
      if (kCopy1 && tile_begin + 1 < tile_end) {
        mbar_wait(&offs[1], 0u);
        ws_copies(tile_begin + 1, wl);
      }
      // tile 2 into Q's region once warpgroup 0 holds Q in registers (tile 0: the producer; tile 1 too
      // with -DDSPARKCTL_WS_DH_COPY1=0)
      nbar_sync(kWsQFree, kCT);
      if (tile_begin + 2 < tile_end) {
        mbar_wait(&offs[2], 0u);
        ws_copies(tile_begin + 2, wl);
      }
    }
    for (int it = tile_begin; it < tile_end; ++it) {
      const int j = it - tile_begin, b = buf_of(j), pb = R == 3 ? j & 1 : b;
      mbar_wait(&full[b], phase_of(j));
      DSPARKCTL_WS_EV(tid == 128, j, kEvWg1Ready)
      nbar_sync(kWsPReady, kCT);
      DSPARKCTL_WS_TL(0);  // tile and P ready
      const bool t16 = tail16(it);  // kWsTail16: P.V over candidates 0-15 only
      const int e_tile = sEtile[b];
      const int e_new = e_run > e_tile ? e_run : e_tile;
      const float v_shift = pow2i(e_run - e_new);
      e_run = e_new;
      if (!__all_sync(0xffffffffu, v_shift == 1.f && sAlpha[pb * M + wl * 16 + (lane >> 2)] == 1.f &&
                                       sAlpha[pb * M + wl * 16 + (lane >> 2) + 8] == 1.f))
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float a = sAlpha[pb * M + wl * 16 + (lane >> 2) + 8 * i];
        const float an = a * v_shift;
#pragma unroll
        for (int jj = 0; jj < 32; ++jj) {
          const float g = (dblk == 0 || jj < 24) ? an : a;
          o[jj][2 * i] *= g;
          o[jj][2 * i + 1] *= g;
        }
      }
      const uint64_t dv = wgmma_desc_sw128(kv_tile(b), BN * 128);
      // WS_NOPE_P_HILO: P's lo part (e4m3, warpgroup 0 wrote it before P-ready) to fp16 registers
      [[maybe_unused]] uint32_t lo[kWsNopePHiLo ? 16 : 1];
      if constexpr (kWsNopePHiLo) {
        const uint32_t* src = reinterpret_cast<const uint32_t*>(smem + W::OFF_LO8) + (tid & 127);
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          const uint32_t w = src[n * 128];
          if constexpr (kWsLoSplit16) {
            fp8x4_to_f16x2x2(w, kWsLo8Unscale, lo[2 * n], lo[2 * n + 1]);
          } else {
            lo[2 * n] = fp8x2_to_f16x2(w & 0xffffu, kWsLo8Unscale);
            lo[2 * n + 1] = fp8x2_to_f16x2(w >> 16, kWsLo8Unscale);
          }
        }
      }
      // NKS k-steps (kWsTail16: as warpgroup 0's)
      auto pv = [&](auto nks) {
        if (DH && half == 0) {
          // DH, dims 0-255: warpgroup 0's sequence, its lo part from the e4m3 buffer (as dims 256-447's)
          ws_pv_dims_0_255<decltype(nks)::value>(on, orp, dp16, dv, [&](int ks, uint32_t(&a)[4]) {
            a[0] = lo[4 * ks];
            a[1] = lo[4 * ks + 1];
            a[2] = lo[4 * ks + 2];
            a[3] = lo[4 * ks + 3];
          });
          return;
        }
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < decltype(nks)::value; ++ks) {
          const uint64_t ka = (ks * 32) >> 4;
          const uint64_t kb = (ks * 16 * 128) >> 4;
          wgmma_pv_m64n192_f16(on, dp16 + ka, dv + ((4 * BN * 128) >> 4) + kb);
          wgmma_pv_m64n64<true>(orp, dph + ka, dv + ((7 * BN * 128) >> 4) + kb);
          wgmma_pv_m64n64<true>(orp, dpl + ka, dv + ((7 * BN * 128) >> 4) + kb);
        }
        if constexpr (kWsNopePHiLo) {
#pragma unroll
          for (int ks = 0; ks < decltype(nks)::value; ++ks) {
            const uint32_t a[4] = {lo[4 * ks], lo[4 * ks + 1], lo[4 * ks + 2], lo[4 * ks + 3]};
            wgmma_pv_m64n192_f16_ra(on, a, dv + ((4 * BN * 128) >> 4) + ((ks * 16 * 128) >> 4));
          }
        }
#ifdef DSPARKCTL_TL_SPLIT_PV
        wgmma_commit();
        DSPARKCTL_WS_TL(3);  // rescale, lo part, P.V issued
        wgmma_wait();
        DSPARKCTL_WS_TL(4);  // P.V done
#else
        wgmma_commit_wait();
#endif
      };
      if (t16) pv(std::integral_constant<int, 1>());
      else pv(std::integral_constant<int, BN / 16>());
      if (it + 1 < tile_end) ws_handoff(kWsPFree, kCT);
      mbar_arrive(&empty[b]);
      DSPARKCTL_WS_TL(1);  // P.V (dims 256-511)
      DSPARKCTL_WS_EV(tid == 128, j, kEvWg1PV)
      if (kWsConsumerCopies && it + R < tile_end) {
        // v37: tile j + R into this buffer once warpgroup 0 is done with tile j too (R = 3: offs[b]'s
        // first phase is tile b's for b = 2, tile b + 3's for b < 2; kCopy1: offs[1]'s is tile 1's)
        mbar_wait(&empty[b], phase_of(j));
        mbar_wait(&offs[b], R == 3 ? uint32_t(j / 3 + (b == 2 || (kCopy1 && b == 1) ? 1 : 0)) & 1u : phase_of(j));
        ws_copies(it + R, wl);
      }
      DSPARKCTL_WS_TL(2);  // copies of tile j + 2 issued
      DSPARKCTL_WS_EV(tid == 128, j, kEvWg1Copies)
    }
    DSPARKCTL_WS_TL_STORE(tid == 128, 11, 2)
    DSPARKCTL_WS_TL_STORE_AT(tid == 128, 2, 19)
#ifdef DSPARKCTL_TL_SPLIT_PV
    DSPARKCTL_WS_TL_STORE_AT(tid == 128, 3, 13)
    DSPARKCTL_WS_TL_STORE_AT(tid == 128, 4, 14)
#endif
    ws_rows_out();
  }
  // ---- epilogue: the staged rows to global memory
  DSPARKCTL_WS_TL_ABS(22);
  cta_sync_divergent();
  // (timeline builds with -DDSPARKCTL_TL_CLUSTER_MARKS only, session 28) thread 0's cycles since
  // entry in slots 24 (both warpgroups staged; every call), 25 and 21 (the 2-split combine's): they
  // replace the range, Q-in-registers and Q-in-shared-memory marks in those builds
  auto tl_mark = [&](int slot) {
#if defined(DSPARKCTL_TIMELINE) && defined(DSPARKCTL_TL_CLUSTER_MARKS)
    DSPARKCTL_WS_TL_ABS(slot);
#else
    (void)slot;
#endif
  };
  tl_mark(24);
  if (!kNoClusterCombine && ws_cluster_combines(num_splits)) {
    ws_cluster_combine<M, kCT>(p, sOut, reinterpret_cast<const float*>(smem + W::OFF_LSE2), t, h0, split, tid, tl_mark);
  } else if (DH) {
    if (!direct) ws_write_rows<M, kCT, 32>(p, sOut, t, h0, split, num_splits, tid, half * 256);
  } else if (!direct) {
    ws_write_rows<M, kCT>(p, sOut, t, h0, split, num_splits, tid);
  }
  DSPARKCTL_WS_TL_ABS(23);
#ifdef DSPARKCTL_TIMELINE
  if (tid == 0 && DSPARKCTL_WS_TL_CTA < kTlMaxCtas) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    g_tl_main[DSPARKCTL_WS_TL_CTA][2] = smid;
    g_tl_main[DSPARKCTL_WS_TL_CTA][3] = tile_end - tile_begin;
    g_tl_main[DSPARKCTL_WS_TL_CTA][1] = tl_globaltimer();
  }
#endif
#else
  __trap();  // launched only on sm_90 devices, whose build is sm_90a
#endif
}

template <int VEC>
__global__ void __launch_bounds__(kWsThreads, 1)
    sparse_mla_decode_ws_kernel(const SparseMlaParams p, int num_splits, int head_blocks) {
  ws_kernel_body<VEC, false>(p, num_splits, head_blocks);
}

// v66: two CTAs per (token, head block), one per half of O's dims (grid.z).
template <int VEC>
__global__ void __launch_bounds__(kWsThreads, 1)
    sparse_mla_decode_ws_kernel_dims(const SparseMlaParams p, int num_splits, int head_blocks) {
  ws_kernel_body<VEC, true>(p, num_splits, head_blocks);
}

// ---------------------------------------------------------------- split combine
// One block of G x 128 threads per (token, head), G in {1, 2, 4}: a thread owns 4 of the 512
// dims for the splits s = g, g + G, g + 2G, ... of its group g and issues up to B independent
// 16-byte partial loads per batch (predicated: a split past the end issues no load). The
// host (combine_shape) sizes both:
//  - G = ceil(splits / 8) rounded up to 2 / 4 makes up to 32 splits one L2 round trip
//    (latency-bound T = 1 calls), but only while the T x H blocks stay one wave of co-
//    resident blocks; else fewer groups with more batches each (v6 measured +3-10% on mid
//    shapes whose 512-thread, 64-register blocks spilled into a second wave);
//  - B = 4 for <= 4 splits at G = 1 (<= 40 registers, 12 blocks per SM as v5: large grids of
//    few-split rows are throughput-bound), 10 for 33-40 splits at G = 4 (v11: T = 1 calls with
//    a 1024 extra cache have 36), else 8.
// The sum order is fixed whatever G and B are: split s goes to accumulator s % 4 (in
// increasing s) and the result is ((a0 + a1) + a2) + a3. So a call's output does not depend
// on T (the verify path's rows equal one-row calls bitwise at a forced layout and split
// count, although T x H picks G).
constexpr int kCombineAccs = 4;

// Programmatic dependent launch: a combine grid may start before the main kernel ends; it waits
// here until that kernel has completed and its partials are visible (no-op without PDL), then lets
// the next call's main kernel (a programmatic dependent of this grid) be scheduled: its CTAs run
// their parameter-only prologue under this combine and wait for it to finish.
__device__ __forceinline__ void combine_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  DSPARKCTL_TL_COMBINE(0);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  DSPARKCTL_TL_COMBINE(1);
}
// The split weights of a row, reduced by every warp itself, two split lse values per lane (<= 64
// splits), by shuffles: the same butterfly order in every warp and for every T, so the result is
// deterministic. e0 / e1: this lane's splits' weights 2^(lse - max) (0 for an empty split, lse -inf,
// or one that underflows); L their sum over the splits; mx the largest lse (NaN skipped; -inf: the
// row is empty, L = 0, or every split's lse is NaN, L NaN: CombinedRow tells them apart).
struct SplitWeights {
  float mx, e0, e1, L;
};
__device__ __forceinline__ SplitWeights split_weights(const float* lse_s, int num_splits, int lane) {
  static_assert(kMaxSplits <= 64, "two split lse values per lane");
  const float l0 = lane < num_splits ? lse_s[lane] : -INFINITY;
  const float l1 = lane + 32 < num_splits ? lse_s[lane + 32] : -INFINITY;
  SplitWeights w;
  w.mx = fmaxf(l0, l1);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) w.mx = fmaxf(w.mx, __shfl_xor_sync(0xffffffffu, w.mx, o));
  w.e0 = l0 == -INFINITY ? 0.f : exp2f(l0 - w.mx);
  w.e1 = l1 == -INFINITY ? 0.f : exp2f(l1 - w.mx);
  w.L = w.e0 + w.e1;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) w.L += __shfl_xor_sync(0xffffffffu, w.L, o);
  return w;
}

template <int B, int G>
constexpr int combine_min_blocks() {
  return G > 1 ? 8 / G : (B <= 4 ? 12 : 8);
}

template <int B, int G>
__global__ void __launch_bounds__(128 * G, combine_min_blocks<B, G>()) sparse_mla_combine_kernel(const SparseMlaParams p, int num_splits) {
  static_assert(G == 1 || G == 2 || G == 4, "groups must divide the 4 accumulators");
  constexpr int R = kCombineAccs / G;  // accumulators per thread: k = g + m * G
  static_assert(B % R == 0, "a batch must cover whole rounds of this thread's accumulators");
  __shared__ float4 sAcc[G > 1 ? kCombineAccs : 1][128];
  combine_grid_wait();
  const int64_t th = blockIdx.x;
  const int h = int(th % p.H);
  const int g = G == 1 ? 0 : int(threadIdx.x >> 7);
  const int lt = threadIdx.x & 127;
  const int lane = threadIdx.x & 31;
  const float* lse_s = p.ws_lse + th * num_splits;
  const float* src = p.ws_out + th * num_splits * kD + lt * 4;
  // The first batch of partials is requested before the split lse values: those only weight
  // the partials, so the two L2 round trips overlap (v7 waited for the lse, reduced it
  // serially through shared memory, then loaded; ncu at T = 1: 4.3 us of a ~12 us call).
  // The loads carry a predicate, not a branch, so a batch's are all in flight at once.
  float4 v[B];
#pragma unroll
  for (int j = 0; j < B; ++j) {
    const int s = g + j * G;
    v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    if (s < num_splits) v[j] = *reinterpret_cast<const float4*>(src + int64_t(s) * kD);
  }
  const float sk = kSinkEarlyBlock ? sink_logit(p.sink, h) : -INFINITY;
  const SplitWeights sw = split_weights(lse_s, num_splits, lane);
  const float mx = sw.mx, e0 = sw.e0, e1 = sw.e1, L = sw.L;
  float4 acc[R];
#pragma unroll
  for (int m = 0; m < R; ++m) acc[m] = make_float4(0.f, 0.f, 0.f, 0.f);
  // s = g + (batch * B + j) * G, so s % 4 = g + (j % R) * G: accumulator j % R (the sum
  // order depends on neither G nor B). s is the same in every lane of a warp, so the
  // weight is one shuffle from lane s % 32. A zero weight is skipped, never multiplied in
  // (an empty split's partial is zeros, but 0 * inf would be NaN).
  auto accumulate = [&](int s0) {
#pragma unroll
    for (int j = 0; j < B; ++j) {
      const int s = s0 + j * G;
      const float wa = __shfl_sync(0xffffffffu, e0, s & 31);
      const float wb = __shfl_sync(0xffffffffu, e1, s & 31);
      const float w = s < 32 ? wa : (s < num_splits ? wb : 0.f);
      float4& a = acc[j % R];
      if (w != 0.f) {
        a.x += w * v[j].x; a.y += w * v[j].y; a.z += w * v[j].z; a.w += w * v[j].w;
      }
    }
  };
  accumulate(g);
  for (int s0 = g + B * G; s0 < num_splits; s0 += B * G) {
#pragma unroll
    for (int j = 0; j < B; ++j) {
      const int s = s0 + j * G;
      v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (s < num_splits) v[j] = *reinterpret_cast<const float4*>(src + int64_t(s) * kD);
    }
    accumulate(s0);
  }
  float4 o;
  if (G == 1) {
    o = acc[0];
#pragma unroll
    for (int k = 1; k < kCombineAccs; ++k) {
      o.x += acc[k].x; o.y += acc[k].y; o.z += acc[k].z; o.w += acc[k].w;
    }
  } else {
#pragma unroll
    for (int m = 0; m < R; ++m) sAcc[g + m * G][lt] = acc[m];
    __syncthreads();
    if (g != 0) return;
    o = sAcc[0][lt];
#pragma unroll
    for (int k = 1; k < kCombineAccs; ++k) {
      const float4 a = sAcc[k][lt];
      o.x += a.x; o.y += a.y; o.z += a.z; o.w += a.w;
    }
  }
  const CombinedRow<kSinkEarlyBlock> cr(p, h, mx, L, sk);
  const float f = cr.f;
  uint2 packed = make_uint2(pack_bf16(o.x * f, o.y * f), pack_bf16(o.z * f, o.w * f));
  *reinterpret_cast<uint2*>(reinterpret_cast<__nv_bfloat16*>(p.out) + th * kD + lt * 4) = packed;
  if (lt == 0) cr.store_lse(p, th, h);
  DSPARKCTL_TL_COMBINE(2);
}

// v44: calls of 2-4 splits combine a row per warp, 4 rows a block, a lane owning 16 of the 512
// dims (4 float4 a split, one L2 round trip for every split at once). The block-per-row kernel
// above holds 12 rows an SM (128 threads x 40 registers a row), so DSpark +512 T = 50 (3,200 rows,
// 2 splits) ran in ~2 waves behind the main kernel: its combine ended ~5 us after the main kernel
// (v43 timeline). A warp row of S splits (the kernel is instantiated per split count) needs 32
// threads x 48 / 64 / 80 registers at S = 2 / 3 / 4 (ptxas, sm_90a): 40 / 32 / 24 rows an SM.
// Same arithmetic per element, in the same order (split s weighs 2^(lse_s - max) from the same
// butterflies; the accumulators ((a0 + a1) + a2) + a3, each w_s v_s or +0, the absent ones added
// as +0 too), so the outputs are the other kernel's bit for bit (46 of 46 bench cases, session 27).
// Session 27's A/B (bench/results/kernel_h200_v44_ldg/run2/): -1.2 to -2.1 us on the 2-split rows
// (DSpark +512 T = 50, 64 / 128 heads T = 32 / 64), -0.56 us on DSpark T = 10 (3 splits).
// -DDSPARKCTL_COMBINE_WARP_ROWS=0 builds without it (for A/Bs).
#ifndef DSPARKCTL_COMBINE_WARP_ROWS
#define DSPARKCTL_COMBINE_WARP_ROWS 1
#endif
static_assert(DSPARKCTL_COMBINE_WARP_ROWS == 0 || DSPARKCTL_COMBINE_WARP_ROWS == 1, "on or off");
[[maybe_unused]] constexpr int kCombineWarpRowsMaxSplits = 4;
template <int S>
__global__ void __launch_bounds__(128) sparse_mla_combine_warp_kernel(const SparseMlaParams p, int num_splits) {
  static_assert(S >= 2 && S <= kCombineWarpRowsMaxSplits, "2-4 splits (the launch passes S as num_splits)");
  combine_grid_wait();
  const int64_t th = int64_t(blockIdx.x) * 4 + (threadIdx.x >> 5);
  if (th >= int64_t(p.T) * p.H) return;  // a whole warp: the shuffles below stay full-warp
  const int h = int(th % p.H);
  const int lane = threadIdx.x & 31;
  const float* lse_s = p.ws_lse + th * num_splits;
  const float* src = p.ws_out + th * num_splits * kD + lane * 4;  // dims 4 lane + 128 k
  float4 v[S][4];
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int k = 0; k < 4; ++k) v[s][k] = *reinterpret_cast<const float4*>(src + int64_t(s) * kD + k * 128);
  const SplitWeights sw = split_weights(lse_s, num_splits, lane);
  const float mx = sw.mx, e0 = sw.e0, L = sw.L;
  // accumulator s holds w_s v_s (or 0 for a zero weight, never multiplied in)
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const float w = __shfl_sync(0xffffffffu, e0, s);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float4& a = v[s][k];
      float4 r = make_float4(0.f, 0.f, 0.f, 0.f);
      if (w != 0.f) {
        r.x += w * a.x; r.y += w * a.y; r.z += w * a.z; r.w += w * a.w;
      }
      a = r;
    }
  }
  const CombinedRow<false> cr(p, h, mx, L, -INFINITY);
  const float f = cr.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float4 o = v[0][k];
#pragma unroll
    for (int s = 1; s < kCombineWarpRowsMaxSplits; ++s) {
      const float4 a = s < S ? v[s < S ? s : 0][k] : make_float4(0.f, 0.f, 0.f, 0.f);
      o.x += a.x; o.y += a.y; o.z += a.z; o.w += a.w;
    }
    *reinterpret_cast<uint2*>(reinterpret_cast<__nv_bfloat16*>(p.out) + th * kD + lane * 4 + k * 128) =
        make_uint2(pack_bf16(o.x * f, o.y * f), pack_bf16(o.z * f, o.w * f));
  }
  if (lane == 0) cr.store_lse(p, th, h);
  DSPARKCTL_TL_COMBINE(2);
}

// ---------------------------------------------------------------- host side
constexpr int kMaxDevices = 64;

struct DeviceInfo {
  int major = 0;  // compute capability
  int sms = 0;
  int smem_optin = 0;
  int smem_one_per_sm = 0;  // dynamic shared memory per CTA that leaves room for one CTA per SM
};

const DeviceInfo& device_info(int device) {
  static DeviceInfo cache[kMaxDevices];
  DeviceInfo& d = cache[device];
  if (d.sms == 0) {
    int sms = 0, optin = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, device);
    d.smem_optin = optin;
    // Half an SM's shared memory: two such CTAs (each also reserving 1 KB) never fit one SM.
    d.smem_one_per_sm = per_sm / 2 < optin ? per_sm / 2 : optin;
    d.sms = sms > 0 ? sms : 1;
  }
  return d;
}

// The kernel for a layout, with its dynamic shared memory limit raised once per device
// (needed both to launch it and for the occupancy query of the plan): to the layout's need,
// or to the padded size of a one-CTA-per-SM launch where that is larger (v23).
template <int MT, int BN, int VEC, bool CLUSTER = false>
cudaError_t prepared_kernel(void (**out)(const SparseMlaParams, int, int)) {
  using C = Cfg<MT, BN>;
  auto kernel = sparse_mla_decode_kernel<MT, BN, VEC, CLUSTER>;
  static bool attr_set[kMaxDevices] = {};
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  if (!attr_set[device]) {
    const int pad = device_info(device).smem_one_per_sm;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM > pad ? C::SMEM : pad);
    if (e != cudaSuccess) return e;
    attr_set[device] = true;
  }
  *out = kernel;
  return cudaSuccess;
}

// -DDSPARKCTL_NO_CLUSTER_GATHER: no v27 clusters (the device code compiles them out too).
#ifdef DSPARKCTL_NO_CLUSTER_GATHER
constexpr bool kClusterGather = false;
#else
constexpr bool kClusterGather = true;
#endif

// -DDSPARKCTL_NO_MAIN_PDL: launch the main kernel in plain stream order (A/B builds).
#ifdef DSPARKCTL_NO_MAIN_PDL
constexpr int kMainPdl = 0;
#else
constexpr int kMainPdl = 1;
#endif

// -DDSPARKCTL_NO_WS: no warp-specialized kernel in plans (A/B builds; v31 / v32).
#ifdef DSPARKCTL_NO_WS
constexpr bool kWarpSpecialized = false;
#else
constexpr bool kWarpSpecialized = true;
#endif

// v31: the 64 x 64 tiles by the warp-specialized kernel (sm_90 devices, sm_90a code).
template <int VEC, bool DH = false>
cudaError_t prepared_ws_kernel(void (**out)(const SparseMlaParams, int, int)) {
  void (*kernel)(const SparseMlaParams, int, int) = sparse_mla_decode_ws_kernel<VEC>;
  if constexpr (DH) kernel = sparse_mla_decode_ws_kernel_dims<VEC>;
  static bool attr_set[kMaxDevices] = {};
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  if (!attr_set[device]) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, WsCfg::SMEM);
    if (e != cudaSuccess) return e;
    attr_set[device] = true;
  }
  *out = kernel;
  return cudaSuccess;
}

// v66: whether a WS launch runs two CTAs per row block (grid.z, one per half of O's dims): the plan
// says so, on the 16-byte path, unsplit or (DSPARKCTL_WS_DIMS_PARTIALS) split, whose half-row
// partials the combine kernels merge (no 2-split cluster combine then).
bool ws_dims_launched(const SparseMlaPlan& plan, bool vec16) {
  if (!plan.warp_specialized || !kPlanWsDimsSplit || !vec16 || plan.dims_split != 2) return false;
  return plan.num_splits == 1 || kPlanWsDimsPartials;
}

// smem_min: dynamic shared memory to ask for at least (sparse_mla_one_cta_per_sm's padding).
template <int MT, int BN, int VEC>
cudaError_t launch_main(const SparseMlaParams& p, const SparseMlaPlan& plan, int head_blocks, int smem_min,
                        cudaStream_t stream) {
  using C = Cfg<MT, BN>;
  // v27: the head blocks of one (token, split) as one cluster that fetches each tile once
  // where the plan says so (sparse_mla_cluster_gather: 16-head CTAs over 64-candidate tiles)
  // and the 16-byte copy path runs; grid.x (T x head blocks) is a multiple of the cluster size.
  constexpr bool kClusterLayout = kClusterGather && MT == 1 && BN == 64 && VEC == 16;
  const int cluster = kClusterLayout && plan.cluster == head_blocks ? plan.cluster : 1;
  // v66: the WS kernel's two halves of O's dims as grid.z (16-byte path only)
  const int dims_split = ws_dims_launched(plan, VEC == 16) ? 2 : 1;
  void (*kernel)(const SparseMlaParams, int, int) = nullptr;
  cudaError_t e = cudaSuccess;
  int threads = kThreads, smem = C::SMEM > smem_min ? C::SMEM : smem_min;
  if (plan.warp_specialized) {
    // only the 64-head x 64-candidate layout on an sm_90 device has this kernel (the plan
    // sets it nowhere else; a hand-made plan that does is refused, not run on empty code)
    if constexpr (MT == 4 && BN == 64) {
      int device = 0;
      e = cudaGetDevice(&device);
      if (e != cudaSuccess) return e;
      if (!kWarpSpecialized || device_info(device).major != 9) return cudaErrorInvalidValue;
      if constexpr (kPlanWsDimsSplit && VEC == 16) {
        e = dims_split == 2 ? prepared_ws_kernel<VEC, true>(&kernel) : prepared_ws_kernel<VEC>(&kernel);
      } else {
        e = prepared_ws_kernel<VEC>(&kernel);
      }
      threads = kWsThreads;
      smem = WsCfg::SMEM;
    } else {
      return cudaErrorInvalidValue;
    }
  } else if constexpr (kClusterLayout) {
    e = cluster > 1 ? prepared_kernel<MT, BN, VEC, true>(&kernel) : prepared_kernel<MT, BN, VEC>(&kernel);
  } else {
    e = prepared_kernel<MT, BN, VEC>(&kernel);
  }
  if (e != cudaSuccess) return e;
  // Programmatic dependent launch (v23): the CTAs may start under the previous kernel in the
  // stream; the kernel waits (griddepcontrol.wait) before its first global access.
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(int64_t(p.T) * head_blocks), unsigned(plan.num_splits), unsigned(dims_split));
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = kMainPdl;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cluster > 1) {
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = unsigned(cluster);
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    cfg.numAttrs = 2;
  }
  if (plan.warp_specialized && ws_cluster_combines(plan.num_splits) && dims_split == 1) {  // the splits as a cluster
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = 1;
    attr[1].val.clusterDim.y = unsigned(plan.num_splits);
    attr[1].val.clusterDim.z = 1;
    cfg.numAttrs = 2;
  }
  if (kWsDhQShareBuild && VEC == 16 && dims_split == 2) {  // DSPARKCTL_WS_DH_QSHARE: a row block's two halves as a cluster
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = 1;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 2;
    cfg.numAttrs = 2;
  }
  e = cudaLaunchKernelEx(&cfg, kernel, p, plan.num_splits, head_blocks);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

// CTAs of one layout that fit on an SM at once (registers, shared memory), from the
// occupancy calculator; cached per device. Host-only query: safe during graph capture.
template <int MT, int BN>
int blocks_per_sm(int device) {
  static int cache[kMaxDevices] = {};
  if (cache[device] == 0) {
    void (*kernel)(const SparseMlaParams, int, int) = nullptr;
    int n = 0;
    if (prepared_kernel<MT, BN, 16>(&kernel) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, Cfg<MT, BN>::SMEM) != cudaSuccess) {
      cudaGetLastError();  // clear a sticky-free error from the query; fall back to 1
      n = 1;
    }
    cache[device] = n < 1 ? 1 : (n > 2 ? 2 : n);
  }
  return cache[device];
}

int plan_blocks_per_sm(int device, int config, int heads) {
  if (config == kConfigLarge) {
    if (heads == 16) return blocks_per_sm<1, 64>(device);
    if (heads == 32) return blocks_per_sm<2, 64>(device);
    return blocks_per_sm<4, 64>(device);
  }
  return heads == 16 ? blocks_per_sm<1, 32>(device) : blocks_per_sm<2, 32>(device);
}

// Blocks of a combine variant that fit on an SM (registers, smem), from the occupancy
// calculator; cached per device. Host-only query: safe during graph capture.
template <int B, int G>
int combine_blocks_per_sm(int device) {
  static int cache[kMaxDevices] = {};
  if (cache[device] == 0) {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, sparse_mla_combine_kernel<B, G>, 128 * G, 0) != cudaSuccess) {
      cudaGetLastError();  // clear the error from the query; fall back to 1
      n = 1;
    }
    cache[device] = n < 1 ? 1 : n;
  }
  return cache[device];
}

using CombineKernel = void (*)(const SparseMlaParams, int);

struct CombineShape {
  CombineKernel kernel;
  int groups;
  int rows_per_block = 1;
};

// The combine for a call: groups only as many as keep the rows (T x H blocks) one wave,
// the batch from the splits per group. Shapes and cached device attributes only (graph safe).
CombineShape combine_shape(int device, int num_splits, int64_t rows) {
  const int64_t sms = device_info(device).sms;
#if DSPARKCTL_COMBINE_WARP_ROWS  // (-DDSPARKCTL_COMBINE_WARP_ROWS=0: not instantiated)
  if (num_splits == 2) return {sparse_mla_combine_warp_kernel<2>, 1, 4};
  if (num_splits == 3) return {sparse_mla_combine_warp_kernel<3>, 1, 4};
  if (num_splits == 4) return {sparse_mla_combine_warp_kernel<4>, 1, 4};
#endif
  // 33-40 splits (every T = 1 call with a 1024 extra cache: 36 tiles): one batch of 10 loads
  // per thread instead of a second L2 round trip for the last splits.
  if (num_splits > 32 && num_splits <= 40 && rows <= sms * combine_blocks_per_sm<10, 4>(device))
    return {sparse_mla_combine_kernel<10, 4>, 4};
  if (num_splits > 16 && rows <= sms * combine_blocks_per_sm<8, 4>(device))
    return {sparse_mla_combine_kernel<8, 4>, 4};
  if (num_splits > 8 && rows <= sms * combine_blocks_per_sm<8, 2>(device))
    return {sparse_mla_combine_kernel<8, 2>, 2};
  if (num_splits > 4) return {sparse_mla_combine_kernel<8, 1>, 1};
  return {sparse_mla_combine_kernel<4, 1>, 1};
}

template <int VEC>
cudaError_t dispatch(const SparseMlaParams& p, const SparseMlaPlan& plan, int head_blocks, int smem_min,
                     cudaStream_t stream) {
  if (plan.config == kConfigLarge) {
    switch (plan.heads_per_cta) {
      case 16: return launch_main<1, 64, VEC>(p, plan, head_blocks, smem_min, stream);
      case 32: return launch_main<2, 64, VEC>(p, plan, head_blocks, smem_min, stream);
      case 64: return launch_main<4, 64, VEC>(p, plan, head_blocks, smem_min, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (plan.heads_per_cta) {
    case 16: return launch_main<1, 32, VEC>(p, plan, head_blocks, smem_min, stream);
    case 32: return launch_main<2, 32, VEC>(p, plan, head_blocks, smem_min, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool aligned16(const SparseMlaCache& c) {
  return (reinterpret_cast<uintptr_t>(c.base) % 16 == 0) && (c.page_stride % 16 == 0);
}

// What the plan knows about a device: SM count, shared memory, each layout's CTAs per SM.
SparseMlaPlanDevice plan_device(int device) {
  const DeviceInfo& di = device_info(device);
  SparseMlaPlanDevice d;
  d.sms = di.sms;
  d.smem_optin = di.smem_optin;
  d.smem_large = Cfg<4, 64>::SMEM;
  d.smem_large16 = Cfg<1, 64>::SMEM;
  // The occupancy of every layout that fits (each query is cached per device); the LARGE ones
  // are not asked where they do not fit (SM120 / SM121).
  d.occ_small16 = plan_blocks_per_sm(device, kConfigSmall, 16);
  d.occ_small32 = plan_blocks_per_sm(device, kConfigSmall, 32);
  d.occ_large16 = d.smem_optin >= d.smem_large16 ? plan_blocks_per_sm(device, kConfigLarge, 16) : 0;
  const bool large_fits = d.smem_optin >= d.smem_large;
  d.occ_large32 = large_fits ? plan_blocks_per_sm(device, kConfigLarge, 32) : 0;
  d.occ_large64 = large_fits ? plan_blocks_per_sm(device, kConfigLarge, 64) : 0;
  // The library's Hopper code is built for sm_90a, whose 64 x 64 tiles run wgmma unless
  // -DDSPARKCTL_NO_WGMMA (the device pass decides DSPARKCTL_WGMMA; the host knows the arch).
#ifndef DSPARKCTL_NO_WGMMA
  d.large_wgmma = large_fits && di.major == 9;
#endif
  d.cluster_gather = kClusterGather && di.major == 9;
  // v32: the warp-specialized kernel's code exists where the 64 x 64 tiles run wgmma
  d.warp_specialized = kWarpSpecialized && d.large_wgmma && d.smem_optin >= WsCfg::SMEM;
  return d;
}

}  // namespace

cudaError_t sparse_mla_decode_plan(int device, int T, int H, int topk, int extra_topk, int config,
                                   int requested_splits, SparseMlaPlan* plan) {
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidValue;
  return sparse_mla_plan_for(plan_device(device), T, H, topk, extra_topk, config, requested_splits, plan)
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

cudaError_t sparse_mla_decode_launch(const SparseMlaParams& p, const SparseMlaPlan& plan,
                                     cudaStream_t stream) {
  if (p.T == 0) return cudaSuccess;
  if (p.H < 1 || p.H > 128 || plan.num_splits < 1 || plan.num_splits > kMaxSplits)
    return cudaErrorInvalidValue;
  if (plan.num_splits > 1 && (p.ws_out == nullptr || p.ws_lse == nullptr)) return cudaErrorInvalidValue;
  const int head_blocks = (p.H + plan.heads_per_cta - 1) / plan.heads_per_cta;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  // The main kernel starts early (programmatic dependent launch); where the plan says so, it
  // asks for half an SM's shared memory so the early placement keeps one CTA per SM.
  const int smem_min = kMainPdl && plan.one_cta_per_sm ? device_info(device).smem_one_per_sm : 0;
  const bool vec16 = aligned16(p.main) && (p.extra.topk == 0 || aligned16(p.extra));
  e = vec16 ? dispatch<16>(p, plan, head_blocks, smem_min, stream)
            : dispatch<8>(p, plan, head_blocks, smem_min, stream);
  if (e != cudaSuccess || plan.num_splits == 1) return e;
  if (plan.warp_specialized && ws_cluster_combines(plan.num_splits) && !ws_dims_launched(plan, vec16))
    return e;  // combined in the main kernel
  // Programmatic dependent launch (sm_90+, captured into CUDA graphs as a programmatic
  // edge): the combine's launch latency overlaps the main kernel's tail.
  const CombineShape cs = combine_shape(device, plan.num_splits, int64_t(p.T) * p.H);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned((int64_t(p.T) * p.H + cs.rows_per_block - 1) / cs.rows_per_block));
  cfg.blockDim = dim3(unsigned(128 * cs.groups));
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  e = cudaLaunchKernelEx(&cfg, cs.kernel, p, plan.num_splits);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

}  // namespace dsparkctl
