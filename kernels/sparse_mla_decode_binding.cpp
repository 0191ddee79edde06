// Torch binding for dsparkctl's sparse-MLA decode kernel: registers
//   torch.ops.dsparkctl.sparse_mla_decode      (the serving op, fixed schema)
//   torch.ops.dsparkctl.sparse_mla_decode_cfg  (same + pinned tile config / split count, for tests)
// with CUDA and Meta (fake-tensor) kernels, so `torch.ops.load_library(so)` is all a serving
// process needs. Checks here mirror dsparkctl/kernel/ops.py so direct op callers also get
// clear errors instead of faults. No host sync, allocations through torch's caching
// allocator only: capturable in CUDA graphs.
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>
#include <ATen/ATen.h>

#include "sparse_mla_decode.cuh"

namespace {

constexpr int64_t kHeadDim = 512;
constexpr int64_t kTokenBytes = 584;

// Error messages format numbers with std::to_string only: streaming an int64 through the
// std::ostream instantiated in this library crashed (seen with torch 2.11 on the H200 image).
std::string num(int64_t v) { return std::to_string(v); }
std::string shape(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}
std::string dtype(const at::Tensor& t) { return std::string(c10::toString(t.scalar_type())); }

void check_cache(const at::Tensor& c, const char* name, const at::Tensor& q) {
  TORCH_CHECK(c.scalar_type() == at::kByte || c.scalar_type() == at::kFloat8_e4m3fn, name,
              " must be uint8 or float8_e4m3fn (raw MODEL1 page bytes), got ", c.scalar_type());
  TORCH_CHECK(c.dim() >= 2 && c.size(0) >= 1 && c.size(1) >= 1, name,
              " must be a (num_pages, page_block_size, ...) page view, got ", shape(c));
  TORCH_CHECK(c.device() == q.device(), name, " must be on q's device");
  const int64_t stride = c.stride(0) * c.element_size();
  TORCH_CHECK(stride >= c.size(1) * kTokenBytes, name, ": page stride ", num(stride),
              " bytes is smaller than ", num(c.size(1)), " tokens x 584 bytes");
  TORCH_CHECK(stride % 8 == 0 && reinterpret_cast<uintptr_t>(c.data_ptr()) % 8 == 0, name,
              ": page stride and base address must be multiples of 8 bytes");
  TORCH_CHECK(c.size(0) * c.size(1) <= int64_t(INT32_MAX) + 1, name, ": too many slots for int32 ids");
}

at::Tensor index_2d(const at::Tensor& idx, const char* name, int64_t T, const at::Tensor& q) {
  TORCH_CHECK(idx.scalar_type() == at::kInt, name, " must be int32, got ", dtype(idx));
  TORCH_CHECK(idx.dim() == 2 || (idx.dim() == 3 && idx.size(1) == 1), name,
              " must be [T, topk] or [T, 1, topk], got ", shape(idx));
  TORCH_CHECK(idx.size(0) == T, name, " has ", num(idx.size(0)), " rows but q has T=", num(T));
  TORCH_CHECK(idx.size(-1) >= 1, name, " must have topk >= 1");
  TORCH_CHECK(idx.device() == q.device(), name, " must be on q's device");
  at::Tensor v = idx.dim() == 3 ? idx.select(1, 0) : idx;
  TORCH_CHECK(v.stride(1) == 1, name, " must have a contiguous last dim");
  return v;
}

void check_length(const c10::optional<at::Tensor>& len, const char* name, int64_t T, const at::Tensor& q) {
  if (!len.has_value()) return;
  TORCH_CHECK(len->scalar_type() == at::kInt, name, " must be int32, got ", dtype(*len));
  TORCH_CHECK(len->dim() == 1 && len->size(0) == T, name, " must be [T]=[", num(T), "], got ", shape(*len));
  TORCH_CHECK(len->device() == q.device(), name, " must be on q's device");
}

void check_common(const at::Tensor& q, const at::Tensor& kv, const at::Tensor& indices,
                  const c10::optional<at::Tensor>& topk_length, const c10::optional<at::Tensor>& sink,
                  const c10::optional<at::Tensor>& ekv, const c10::optional<at::Tensor>& eidx,
                  const c10::optional<at::Tensor>& elen) {
  TORCH_CHECK(q.scalar_type() == at::kBFloat16, "q must be bfloat16, got ", dtype(q));
  TORCH_CHECK(q.dim() == 3 && q.size(2) == kHeadDim, "q must be [T, H, 512], got ", shape(q));
  TORCH_CHECK(q.size(1) >= 1 && q.size(1) <= 128, "q has ", num(q.size(1)), " heads; supported 1..128");
  TORCH_CHECK(q.stride(2) == 1, "q must have a contiguous last dim");
  check_cache(kv, "kv_cache", q);
  index_2d(indices, "indices", q.size(0), q);
  check_length(topk_length, "topk_length", q.size(0), q);
  TORCH_CHECK(ekv.has_value() == eidx.has_value(), "extra_kv_cache and extra_indices must be given together");
  TORCH_CHECK(!elen.has_value() || eidx.has_value(), "extra_topk_length given without extra cache");
  if (ekv.has_value()) {
    check_cache(*ekv, "extra_kv_cache", q);
    index_2d(*eidx, "extra_indices", q.size(0), q);
    check_length(elen, "extra_topk_length", q.size(0), q);
  }
  if (sink.has_value()) {
    TORCH_CHECK(sink->scalar_type() == at::kFloat, "attn_sink must be float32");
    TORCH_CHECK(sink->dim() == 1 && sink->size(0) == q.size(1), "attn_sink must be [H]");
    TORCH_CHECK(sink->device() == q.device(), "attn_sink must be on q's device");
  }
}

dsparkctl::SparseMlaCache make_cache(const at::Tensor& c, const at::Tensor& idx2,
                                     const c10::optional<at::Tensor>& len) {
  dsparkctl::SparseMlaCache m;
  m.base = static_cast<const uint8_t*>(c.data_ptr());
  m.page_stride = c.stride(0) * c.element_size();
  m.pbs = static_cast<int>(c.size(1));
  m.num_slots = c.size(0) * c.size(1);
  m.indices = idx2.data_ptr<int32_t>();
  m.indices_stride = idx2.stride(0);
  m.topk = static_cast<int>(idx2.size(1));
  if (len.has_value()) {
    m.lengths = len->data_ptr<int32_t>();
    m.lengths_stride = len->stride(0);
  }
  return m;
}

// The testing op's and the plan query's layout / split arguments.
void check_plan_args(int64_t config, int64_t num_splits) {
  TORCH_CHECK(config >= 0 && config <= 7, "config must be 0, 1, 2, 3, 4, 5, 6 or 7");
  TORCH_CHECK(num_splits >= 0 && num_splits <= dsparkctl::kMaxSplits, "num_splits must be in 0..64");
}

std::tuple<at::Tensor, at::Tensor> run_cuda(
    const at::Tensor& q_in, const at::Tensor& kv, const at::Tensor& indices,
    const c10::optional<at::Tensor>& topk_length, const c10::optional<at::Tensor>& sink_in,
    const c10::optional<at::Tensor>& ekv, const c10::optional<at::Tensor>& eidx,
    const c10::optional<at::Tensor>& elen, double sm_scale, bool lse_base2_sink, int64_t config,
    int64_t num_splits) {
  check_common(q_in, kv, indices, topk_length, sink_in, ekv, eidx, elen);
  TORCH_CHECK(q_in.is_cuda(), "q must be on a CUDA device");
  check_plan_args(config, num_splits);
  const c10::cuda::CUDAGuard guard(q_in.device());
  const int64_t T = q_in.size(0), H = q_in.size(1);
  // 16-byte loads of q need 16-byte aligned rows.
  at::Tensor q = q_in;
  if (reinterpret_cast<uintptr_t>(q.data_ptr()) % 16 != 0 || q.stride(0) % 8 != 0 || q.stride(1) % 8 != 0)
    q = q.contiguous();
  at::Tensor out = at::empty({T, H, kHeadDim}, q.options());
  at::Tensor lse = at::empty({T, H}, q.options().dtype(at::kFloat));
  if (T == 0) return {out, lse};

  at::Tensor idx2 = index_2d(indices, "indices", T, q);
  dsparkctl::SparseMlaParams p;
  p.q = q.data_ptr();
  p.q_stride_t = q.stride(0);
  p.q_stride_h = q.stride(1);
  p.main = make_cache(kv, idx2, topk_length);
  int extra_topk = 0;
  if (ekv.has_value()) {
    at::Tensor eidx2 = index_2d(*eidx, "extra_indices", T, q);
    p.extra = make_cache(*ekv, eidx2, elen);
    extra_topk = p.extra.topk;
  }
  at::Tensor sink;
  if (sink_in.has_value()) {
    sink = sink_in->contiguous();
    p.sink = sink.data_ptr<float>();
  }
  p.out = out.data_ptr();
  p.lse = lse.data_ptr<float>();
  p.T = static_cast<int>(T);
  p.H = static_cast<int>(H);
  p.sm_scale = static_cast<float>(sm_scale);
  p.lse_base2_sink = lse_base2_sink ? 1 : 0;

  dsparkctl::SparseMlaPlan plan;
  cudaError_t e = dsparkctl::sparse_mla_decode_plan(q.get_device(), p.T, p.H, p.main.topk, extra_topk,
                                                     static_cast<int>(config), static_cast<int>(num_splits), &plan);
  TORCH_CHECK(e == cudaSuccess, "sparse_mla_decode plan failed: ", cudaGetErrorString(e));
  at::Tensor ws_out, ws_lse;
  if (plan.num_splits > 1) {
    ws_out = at::empty({dsparkctl::sparse_mla_ws_out_floats(plan, p.T, p.H)}, q.options().dtype(at::kFloat));
    ws_lse = at::empty({dsparkctl::sparse_mla_ws_lse_floats(plan, p.T, p.H)}, q.options().dtype(at::kFloat));
    p.ws_out = ws_out.data_ptr<float>();
    p.ws_lse = ws_lse.data_ptr<float>();
  }
  e = dsparkctl::sparse_mla_decode_launch(p, plan, c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(e == cudaSuccess, "sparse_mla_decode launch failed: ", cudaGetErrorString(e));
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor> decode_cuda(
    const at::Tensor& q, const at::Tensor& kv, const at::Tensor& indices,
    const c10::optional<at::Tensor>& topk_length, const c10::optional<at::Tensor>& sink,
    const c10::optional<at::Tensor>& ekv, const c10::optional<at::Tensor>& eidx,
    const c10::optional<at::Tensor>& elen, double sm_scale, bool lse_base2_sink) {
  return run_cuda(q, kv, indices, topk_length, sink, ekv, eidx, elen, sm_scale, lse_base2_sink, 0, 0);
}

std::tuple<at::Tensor, at::Tensor> decode_meta(
    const at::Tensor& q, const at::Tensor& kv, const at::Tensor& indices,
    const c10::optional<at::Tensor>& topk_length, const c10::optional<at::Tensor>& sink,
    const c10::optional<at::Tensor>& ekv, const c10::optional<at::Tensor>& eidx,
    const c10::optional<at::Tensor>& elen, double, bool) {
  TORCH_CHECK(q.dim() == 3 && q.size(2) == kHeadDim, "q must be [T, H, 512], got ", shape(q));
  TORCH_CHECK(q.scalar_type() == at::kBFloat16, "q must be bfloat16");
  auto out = at::empty_symint({q.sym_size(0), q.sym_size(1), c10::SymInt(kHeadDim)}, q.options());
  auto lse = at::empty_symint({q.sym_size(0), q.sym_size(1)}, q.options().dtype(at::kFloat));
  return {out, lse};
}

std::tuple<at::Tensor, at::Tensor> decode_cfg_meta(
    const at::Tensor& q, const at::Tensor& kv, const at::Tensor& indices,
    const c10::optional<at::Tensor>& topk_length, const c10::optional<at::Tensor>& sink,
    const c10::optional<at::Tensor>& ekv, const c10::optional<at::Tensor>& eidx,
    const c10::optional<at::Tensor>& elen, double s, bool b, int64_t, int64_t) {
  return decode_meta(q, kv, indices, topk_length, sink, ekv, eidx, elen, s, b);
}

// The plan a call of this shape gets on `device` (what the launch would run): [config,
// heads per CTA, tile, splits, one CTA per SM, CTAs per cluster, warp-specialized]. For tests
// that must know which kernel ran and for the bench's per-row record; no GPU work.
std::vector<int64_t> plan_info(int64_t device, int64_t T, int64_t H, int64_t topk, int64_t extra_topk, int64_t config,
                               int64_t num_splits) {
  check_plan_args(config, num_splits);
  dsparkctl::SparseMlaPlan plan;
  const cudaError_t e = dsparkctl::sparse_mla_decode_plan(static_cast<int>(device), static_cast<int>(T),
                                                          static_cast<int>(H), static_cast<int>(topk),
                                                          static_cast<int>(extra_topk), static_cast<int>(config),
                                                          static_cast<int>(num_splits), &plan);
  TORCH_CHECK(e == cudaSuccess, "sparse_mla_decode plan failed: ", cudaGetErrorString(e));
  return {plan.config, plan.heads_per_cta, plan.tile_n, plan.num_splits, plan.one_cta_per_sm ? 1 : 0, plan.cluster,
          plan.warp_specialized ? 1 : 0, plan.dims_split};
}

}  // namespace

TORCH_LIBRARY(dsparkctl, m) {
  m.def(
      "sparse_mla_decode(Tensor q, Tensor kv_cache, Tensor indices, Tensor? topk_length, "
      "Tensor? attn_sink, Tensor? extra_kv_cache, Tensor? extra_indices, Tensor? extra_topk_length, "
      "float sm_scale, bool lse_base2_sink) -> (Tensor out, Tensor lse)");
  m.def(
      "sparse_mla_decode_cfg(Tensor q, Tensor kv_cache, Tensor indices, Tensor? topk_length, "
      "Tensor? attn_sink, Tensor? extra_kv_cache, Tensor? extra_indices, Tensor? extra_topk_length, "
      "float sm_scale, bool lse_base2_sink, int config, int num_splits) -> (Tensor out, Tensor lse)");
  m.def("sparse_mla_decode_plan(int device, int T, int H, int topk, int extra_topk, int config, int num_splits) -> int[]",
        &plan_info);
}

TORCH_LIBRARY_IMPL(dsparkctl, CUDA, m) {
  m.impl("sparse_mla_decode", &decode_cuda);
  m.impl("sparse_mla_decode_cfg", &run_cuda);
}

TORCH_LIBRARY_IMPL(dsparkctl, Meta, m) {
  m.impl("sparse_mla_decode", &decode_meta);
  m.impl("sparse_mla_decode_cfg", &decode_cfg_meta);
}
