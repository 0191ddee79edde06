// dsparkctl sparse-MLA decode for DeepSeek-V4 (FlashMLA "MODEL1" FP8 paged KV cache).
//
// Torch-free interface: plain pointers + strides, so `nvcc -c sparse_mla_decode.cu` builds
// without PyTorch and the torch binding (sparse_mla_decode_binding.cpp) stays thin.
//
// Semantics (see dsparkctl/kernel/reference.py for the torch reference):
//   candidates = main indices [T, topk] then extra indices [T, etopk], one joint softmax;
//   a candidate is invalid (score -inf, never read) when index < 0, index >= num_slots or
//   position >= clamp(length, 0, topk); S = (q . K^T) * sm_scale (fp32), V = K (512 dims);
//   out = softmax(S) V, times sigmoid(lse - sink[h]) with a sink; empty row: out 0, lse +inf.
//   lse is natural-log and sink-free, or with lse_base2_sink FlashInfer's base-2 sink-inclusive
//   value (empty row: -inf without a sink, sink*log2(e) with one).
#pragma once

#include <cstdint>
#include <cuda_runtime.h>

#include "sparse_mla_plan.h"

namespace dsparkctl {

struct SparseMlaCache {
  const uint8_t* base = nullptr;  // byte address of page 0
  int64_t page_stride = 0;        // bytes between pages (>= pbs * 584)
  int pbs = 0;                    // tokens per page (page_block_size)
  int64_t num_slots = 0;          // num_pages * pbs: ids >= this are invalid
  const int32_t* indices = nullptr;  // [T, topk] slot ids, last dim contiguous
  int64_t indices_stride = 0;        // elements between tokens
  int topk = 0;
  const int32_t* lengths = nullptr;  // [T] or null (= topk)
  int64_t lengths_stride = 0;
};

struct SparseMlaParams {
  const void* q = nullptr;  // bf16 [T, H, 512], last dim contiguous
  int64_t q_stride_t = 0;   // elements
  int64_t q_stride_h = 0;
  SparseMlaCache main;
  SparseMlaCache extra;     // extra.topk == 0: no extra cache
  const float* sink = nullptr;  // [H] or null
  void* out = nullptr;          // bf16 [T, H, 512] contiguous
  float* lse = nullptr;         // fp32 [T, H] contiguous
  float* ws_out = nullptr;      // fp32 [T, H, splits, 512] (only when splits > 1)
  float* ws_lse = nullptr;      // fp32 [T, H, splits]      (base-2 partial lse)
  int T = 0;
  int H = 0;
  float sm_scale = 0.f;
  int lse_base2_sink = 0;
};

// Shape-only planning (no device synchronisation, safe inside CUDA-graph capture).
// requested_splits == 0: heuristic that fills the GPU; else clamped to [1, kMaxSplits].
cudaError_t sparse_mla_decode_plan(int device, int T, int H, int topk, int extra_topk,
                                   int config, int requested_splits, SparseMlaPlan* plan);

// Workspace floats needed by a plan: ws_out and ws_lse sizes (0 when num_splits == 1).
inline int64_t sparse_mla_ws_out_floats(const SparseMlaPlan& p, int T, int H) {
  return p.num_splits > 1 ? int64_t(T) * H * p.num_splits * 512 : 0;
}
inline int64_t sparse_mla_ws_lse_floats(const SparseMlaPlan& p, int T, int H) {
  return p.num_splits > 1 ? int64_t(T) * H * p.num_splits : 0;
}

// Launch on `stream`. Requires params.ws_* sized per the plan when plan.num_splits > 1.
cudaError_t sparse_mla_decode_launch(const SparseMlaParams& params, const SparseMlaPlan& plan,
                                     cudaStream_t stream);

}  // namespace dsparkctl
