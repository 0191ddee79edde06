// Phase timeline of the sparse-MLA decode kernel: where one call's microseconds go.
//
// Builds the kernel source with -DDSPARKCTL_TIMELINE (thread 0 of every CTA records global
// timestamps at entry / exit and the SM cycles of each phase, see the macros in the kernel),
// runs one shape on synthetic data (random FP8 / bf16 cache, random distinct slot ids), and
// prints one JSON object per shape: the main kernel's span, the gap to the combine and the
// combine's span (global timer, ns), and per phase the median / max cycles over CTAs.
// ncu's stall samples say which instructions wait; this says which phase of the latency
// chain holds the time (T = 1 and DSpark drafts are single-tile chains).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -DDSPARKCTL_TIMELINE bench/kernel_timeline.cu -o /tmp/tl
//   /tmp/tl H TOPK VALID EXTRA T [CONFIG SPLITS]     (CONFIG: 0 auto 1 large 2 small 3 small16)
// Torch-free on purpose: it runs wherever nvcc does.
#include "../kernels/sparse_mla_decode.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                    \
    }                                                                                  \
  } while (0)

namespace {

constexpr int kPbs = 64;
constexpr int kTokenBytes = 584;

// A cache of `pages` pages of kPbs tokens: e4m3 bytes that are never NaN (exponent field
// capped), scales 2^-4..2^3 (bytes 123..130, byte 7 padding 0), rope bf16 in [-2, 2).
std::vector<uint8_t> make_cache(int pages, std::mt19937& rng) {
  std::vector<uint8_t> c(size_t(pages) * kPbs * kTokenBytes);
  std::uniform_int_distribution<int> byte(0, 255), sc(123, 130);
  std::uniform_real_distribution<float> rope(-2.f, 2.f);
  for (int pg = 0; pg < pages; ++pg) {
    uint8_t* page = c.data() + size_t(pg) * kPbs * kTokenBytes;
    for (int r = 0; r < kPbs; ++r) {
      uint8_t* row = page + r * 576;
      for (int i = 0; i < 448; ++i) row[i] = uint8_t(byte(rng) & 0xf7);
      for (int i = 0; i < 64; ++i) {
        const float f = rope(rng);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        row[448 + 2 * i] = uint8_t(u >> 16);
        row[448 + 2 * i + 1] = uint8_t(u >> 24);
      }
      uint8_t* s = page + kPbs * 576 + r * 8;
      for (int i = 0; i < 7; ++i) s[i] = uint8_t(sc(rng));
      s[7] = 0;
    }
  }
  return c;
}

template <typename T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  CK(cudaMalloc(&d, v.size() * sizeof(T)));
  CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// One cache of `pages` pages of kPbs tokens (packed stride) with its [T, topk] slot ids.
dsparkctl::SparseMlaCache device_cache(const std::vector<uint8_t>& bytes, int pages, const std::vector<int32_t>& ids,
                                       int topk) {
  dsparkctl::SparseMlaCache c;
  c.base = to_device(bytes);
  c.page_stride = int64_t(kPbs) * kTokenBytes;
  c.pbs = kPbs;
  c.num_slots = int64_t(pages) * kPbs;
  c.indices = to_device(ids);
  c.indices_stride = topk;
  c.topk = topk;
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s H TOPK VALID EXTRA T [CONFIG SPLITS]\n", argv[0]);
    return 2;
  }
  const int H = std::atoi(argv[1]), topk = std::atoi(argv[2]), valid = std::atoi(argv[3]);
  const int extra = std::atoi(argv[4]), T = std::atoi(argv[5]);
  const int config = argc > 6 ? std::atoi(argv[6]) : 0, splits = argc > 7 ? std::atoi(argv[7]) : 0;
  std::mt19937 rng(1234);
  const int main_pages = 2048, extra_pages = 256;  // 131072 / 16384 slots: gathers miss L2
  std::vector<uint8_t> hmain = make_cache(main_pages, rng), hextra = make_cache(extra > 0 ? extra_pages : 1, rng);
  std::vector<int32_t> hidx(size_t(T) * topk), hlen(T, valid), heidx(size_t(T) * std::max(extra, 1));
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> perm(main_pages * kPbs);
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int32_t(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::copy(perm.begin(), perm.begin() + topk, hidx.begin() + size_t(t) * topk);
    for (int e = 0; e < extra; ++e) heidx[size_t(t) * extra + e] = int32_t((t * 977 + e * 13) % (extra_pages * kPbs));
  }
  std::vector<uint16_t> hq(size_t(T) * H * 512);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& x : hq) {
    const float f = nd(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    x = uint16_t(u >> 16);
  }

  dsparkctl::SparseMlaPlan plan;
  CK(dsparkctl::sparse_mla_decode_plan(0, T, H, topk, extra, config, splits, &plan));
  dsparkctl::SparseMlaParams p;
  p.q = to_device(hq);
  p.q_stride_t = int64_t(H) * 512;
  p.q_stride_h = 512;
  p.main = device_cache(hmain, main_pages, hidx, topk);
  p.main.lengths = to_device(hlen);
  p.main.lengths_stride = 1;
  if (extra > 0) p.extra = device_cache(hextra, extra_pages, heidx, extra);
  void* out = nullptr;
  CK(cudaMalloc(&out, size_t(T) * H * 512 * 2));
  p.out = out;
  CK(cudaMalloc(&p.lse, size_t(T) * H * 4));
  const int64_t wso = dsparkctl::sparse_mla_ws_out_floats(plan, T, H), wsl = dsparkctl::sparse_mla_ws_lse_floats(plan, T, H);
  if (wso > 0) {
    CK(cudaMalloc(&p.ws_out, wso * 4));
    CK(cudaMalloc(&p.ws_lse, wsl * 4));
  }
  p.T = T;
  p.H = H;
  p.sm_scale = 0.0417f;

  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  // Warm: instruction cache, L2 for ids and Q (as in serving, where the indexer just wrote them).
  for (int i = 0; i < 20; ++i) CK(dsparkctl::sparse_mla_decode_launch(p, plan, st));
  CK(cudaStreamSynchronize(st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int reps = 200;
  CK(cudaEventRecord(e0, st));
  for (int i = 0; i < reps; ++i) CK(dsparkctl::sparse_mla_decode_launch(p, plan, st));
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms = 0.f;
  CK(cudaEventElapsedTime(&ms, e0, e1));

  // One recorded call (after the same warm-up; the timeline arrays hold its values only).
  static unsigned long long zeros_main[dsparkctl::kTlMaxCtas][dsparkctl::kTlSlots];
  static unsigned long long zeros_comb[dsparkctl::kTlMaxCtas][4];
  CK(cudaMemcpyToSymbol(dsparkctl::g_tl_main, zeros_main, sizeof(zeros_main)));
  CK(cudaMemcpyToSymbol(dsparkctl::g_tl_combine, zeros_comb, sizeof(zeros_comb)));
#ifdef DSPARKCTL_TL_EVENTS
  static unsigned long long zeros_ev[dsparkctl::kTlMaxCtas][dsparkctl::kTlEvTiles * dsparkctl::kTlEvKinds];
  CK(cudaMemcpyToSymbol(dsparkctl::g_tl_ev, zeros_ev, sizeof(zeros_ev)));
#endif
  CK(dsparkctl::sparse_mla_decode_launch(p, plan, st));
  CK(cudaStreamSynchronize(st));
  static unsigned long long tm[dsparkctl::kTlMaxCtas][dsparkctl::kTlSlots];
  static unsigned long long tc[dsparkctl::kTlMaxCtas][4];
  CK(cudaMemcpyFromSymbol(tm, dsparkctl::g_tl_main, sizeof(tm)));
  CK(cudaMemcpyFromSymbol(tc, dsparkctl::g_tl_combine, sizeof(tc)));

  const int head_blocks = (H + plan.heads_per_cta - 1) / plan.heads_per_cta;
  const int ctas = std::min(T * head_blocks * plan.num_splits * plan.dims_split, dsparkctl::kTlMaxCtas);
  unsigned long long m_first = ~0ull, m_last_entry = 0, m_end = 0;
  constexpr int kPhases = dsparkctl::kTlSlots - 4;  // slots 4..25 (21-25: the WS kernel's cycles since entry at five points), then two sums kept from v13 (loads_issued, epilogue)
  std::vector<double> ph[kPhases + 2], tiles, dur;
  int sm_share_max = 0;
  std::vector<int> per_sm(256, 0);
  for (int c = 0; c < ctas; ++c) {
    m_first = std::min(m_first, tm[c][0]);
    m_last_entry = std::max(m_last_entry, tm[c][0]);
    m_end = std::max(m_end, tm[c][1]);
    dur.push_back(double(tm[c][1] - tm[c][0]));
    tiles.push_back(double(tm[c][3]));
    if (tm[c][2] < 256) sm_share_max = std::max(sm_share_max, ++per_sm[tm[c][2]]);
    for (int i = 0; i < kPhases; ++i) ph[i].push_back(double(tm[c][4 + i]));
    ph[kPhases].push_back(double(tm[c][4] + tm[c][19]));                        // loads_issued (v13 meaning)
    ph[kPhases + 1].push_back(double(tm[c][15] + tm[c][16] + tm[c][17] + tm[c][18]));  // epilogue
  }
  const int cblocks = plan.num_splits > 1 ? std::min(T * H, dsparkctl::kTlMaxCtas) : 0;
  unsigned long long c_first = ~0ull, c_wait = ~0ull, c_wait_last = 0, c_end = 0;
  for (int b = 0; b < cblocks; ++b) {
    if (tc[b][0] == 0) continue;  // no such block (a combine of several rows per block has fewer)
    c_first = std::min(c_first, tc[b][0]);
    c_wait = std::min(c_wait, tc[b][1]);
    c_wait_last = std::max(c_wait_last, tc[b][1]);
    c_end = std::max(c_end, tc[b][2]);
  }
  int clock_khz = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  static const char* names[kPhases + 2] = {"ids_issued", "ids_published", "q_landed", "first_copy_issue", "q_to_smem", "tile_landed", "dequant", "next_copy_issue", "s", "p", "pv", "epi_wait", "epi_stage", "epi_wait2", "epi_store", "q_loads_issued", "s_mma", "ws_q_ready_at", "ws_staged_at", "ws_written_at", "ws_range_at", "ws_q_regs_at", "loads_issued", "epilogue"};
  std::printf("{\"H\": %d, \"topk\": %d, \"valid\": %d, \"extra\": %d, \"T\": %d, \"config\": %d, \"heads_per_cta\": %d, "
              "\"tile_n\": %d, \"splits\": %d, \"ctas\": %d, \"max_ctas_per_sm\": %d, \"stream_us_per_call\": %.2f, "
              "\"clock_mhz\": %.0f, \"main_span_ns\": %llu, \"main_entry_spread_ns\": %llu, \"cta_ns_median\": %.0f, \"cta_ns_max\": %.0f, "
              "\"tiles_max\": %.0f",
              H, topk, valid, extra, T, config, plan.heads_per_cta, plan.tile_n, plan.num_splits, ctas, sm_share_max,
              ms * 1e3 / reps, clock_khz / 1e3, m_end - m_first, m_last_entry - m_first, median(dur),
              *std::max_element(dur.begin(), dur.end()), *std::max_element(tiles.begin(), tiles.end()));
  {
    // session 50: when the CTAs end (ns after the first entry): a call ends with its last CTA, so a
    // change that moves the median CTA's end and not the last ones' does not move the call
    std::vector<double> ends;
    for (int c = 0; c < ctas; ++c) ends.push_back(double(tm[c][1] - m_first));
    std::sort(ends.begin(), ends.end());
    auto pct = [&](double q) { return ends[std::min(ctas - 1, int(q * (ctas - 1) + 0.5))]; };
    std::printf(", \"cta_end_ns\": [%.0f, %.0f, %.0f, %.0f, %.0f]", ends.front(), pct(0.1), pct(0.5), pct(0.9), ends.back());
    if (plan.dims_split == 2 && ctas % 2 == 0) {
      // the halves kernel: its CTAs' records are half 0's first (grid.z), then half 1's; each half's
      // median end (ns) and median Q-in-shared-memory and rows-staged points (cycles since entry)
      std::vector<double> e[2], q[2], sg[2];
      for (int c = 0; c < ctas; ++c) {
        const int z = c < ctas / 2 ? 0 : 1;
        e[z].push_back(double(tm[c][1] - m_first));
        q[z].push_back(double(tm[c][21]));
        sg[z].push_back(double(tm[c][22]));
      }
      std::printf(", \"halves\": {\"end_ns\": [%.0f, %.0f], \"q_ready_at\": [%.0f, %.0f], \"staged_at\": [%.0f, %.0f]}",
                  median(e[0]), median(e[1]), median(q[0]), median(q[1]), median(sg[0]), median(sg[1]));
    }
  }
  if (c_end > 0)  // a combine ran (a 2-split WS call with the cluster combine has none)
    std::printf(", \"combine_entry_after_main_start_ns\": %lld, \"combine_wait_done_after_main_end_ns\": %lld, "
                "\"combine_last_wait_done_after_main_end_ns\": %lld, \"combine_end_after_main_end_ns\": %lld",
                (long long)(c_first - m_first), (long long)(c_wait - m_end), (long long)(c_wait_last - m_end),
                (long long)(c_end - m_end));
  std::printf(", \"phase_cycles\": {");
  for (int i = 0; i < kPhases + 2; ++i)
    std::printf("%s\"%s\": [%.0f, %.0f]", i ? ", " : "", names[i], median(ph[i]), *std::max_element(ph[i].begin(), ph[i].end()));
  std::printf("}");
#ifdef DSPARKCTL_TL_EVENTS
  // -DDSPARKCTL_TL_EVENTS (WS kernels): the median-duration CTA's per-tile points, SM cycles since
  // its entry ("tile_events": {point: [tile 0, 1, ...]}, 0 = not reached), with its Q-ready, staged
  // and written marks for the same CTA
  {
    static unsigned long long ev[dsparkctl::kTlMaxCtas][dsparkctl::kTlEvTiles * dsparkctl::kTlEvKinds];
    CK(cudaMemcpyFromSymbol(ev, dsparkctl::g_tl_ev, sizeof(ev)));
    std::vector<int> by_dur(ctas);  // CTA indices by duration (dur, above)
    for (int i = 0; i < ctas; ++i) by_dur[i] = i;
    std::sort(by_dur.begin(), by_dur.end(), [&](int x, int y) { return dur[x] < dur[y]; });
    const int c = by_dur[by_dur.size() / 2];
    static const char* ev_names[dsparkctl::kTlEvKinds] = {"wg0.ready", "wg0.S", "wg0.mask", "wg0.Pfree", "wg0.P",
                                                          "wg1.ready", "wg1.PV", "wg1.copies", "prod.landed", "prod.published"};
    std::printf(", \"tile_events\": {\"cta\": %d, \"tiles\": %llu, \"q_ready_at\": %llu, \"staged_at\": %llu, \"written_at\": %llu",
                c, tm[c][3], tm[c][21], tm[c][22], tm[c][23]);
    for (int k = 0; k < dsparkctl::kTlEvKinds; ++k) {
      std::printf(", \"%s\": [", ev_names[k]);
      for (int j = 0; j < dsparkctl::kTlEvTiles; ++j) std::printf("%s%llu", j ? ", " : "", ev[c][j * dsparkctl::kTlEvKinds + k]);
      std::printf("]");
    }
    std::printf("}");
  }
#endif
  std::printf("}\n");
  return 0;
}
