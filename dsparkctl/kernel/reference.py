"""Torch reference for sparse-MLA decode on the MODEL1 cache (FlashMLA semantics), CPU or GPU.

It is the yardstick the CUDA kernel is tested against, so it favours plain, obviously
right tensor code over speed: gather the dequantized rows, mask invalid candidates, one
fp32 (or fp64) softmax over main + extra candidates together.

Semantics (the same as ``dsparkctl.kernel.ops.sparse_mla_decode``):

* candidate ``j`` of token ``t`` is invalid when ``index < 0``, ``index >= num_slots``, or
  ``j >= clamp(topk_length[t], 0, topk)``; invalid candidates get score ``-inf`` and their
  rows are never used (garbage / NaN there cannot leak);
* ``S = (q . K^T) * sm_scale``; ``lse = logsumexp(S)`` (natural log); ``out = softmax(S) V``
  with ``V = K`` (all 512 dims);
* with ``attn_sink``: ``out *= sigmoid(lse - sink[h])``; lse is left sink-free;
* an empty row (no valid candidate in either cache) gives ``out = 0`` and ``lse = +inf``;
* ``lse_base2_sink=True`` returns FlashInfer's convention instead:
  ``log2(exp(lse) + exp(sink))`` (``lse * log2(e)`` without a sink), ``-inf`` for an empty
  row without a sink and ``sink * log2(e)`` for an empty row with one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dsparkctl.kernel import layout

if TYPE_CHECKING:
    import torch

LOG2E = 1.0 / math.log(2.0)
# Upper bound on the gathered-KV working set per chunk of tokens (elements).
_CHUNK_ELEMS = 1 << 26


def candidates(
    cache: torch.Tensor, indices: torch.Tensor, topk_length: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dequantized rows [T, k, 512] with invalid rows zeroed, validity mask [T, k])."""
    import torch

    idx = indices.reshape(indices.shape[0], -1).to(torch.long)
    k = idx.shape[1]
    valid = (idx >= 0) & (idx < layout.num_slots(cache))
    if topk_length is not None:
        length = topk_length.to(device=idx.device, dtype=torch.long).clamp(0, k)
        pos = torch.arange(k, device=idx.device).unsqueeze(0)
        valid &= pos < length.unsqueeze(1)
    safe = torch.where(valid, idx, torch.zeros_like(idx))
    rows = layout.gather_dequant(cache, safe)
    rows = torch.where(valid.unsqueeze(-1), rows, torch.zeros_like(rows))
    return rows, valid


def all_candidates(
    kv_cache: torch.Tensor,
    indices: torch.Tensor,
    topk_length: torch.Tensor | None = None,
    extra_kv_cache: torch.Tensor | None = None,
    extra_indices: torch.Tensor | None = None,
    extra_topk_length: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``candidates`` of the main cache, then of the extra one (one softmax spans both):
    (rows [T, k + extra_k, 512], validity [T, k + extra_k])."""
    import torch

    rows, valid = candidates(kv_cache, indices, topk_length)
    if extra_kv_cache is not None and extra_indices is not None:
        erows, evalid = candidates(extra_kv_cache, extra_indices, extra_topk_length)
        rows, valid = torch.cat([rows, erows], dim=1), torch.cat([valid, evalid], dim=1)
    return rows, valid


def sparse_mla_decode_ref(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    topk_length: torch.Tensor | None = None,
    attn_sink: torch.Tensor | None = None,
    extra_kv_cache: torch.Tensor | None = None,
    extra_indices: torch.Tensor | None = None,
    extra_topk_length: torch.Tensor | None = None,
    sm_scale: float | None = None,
    lse_base2_sink: bool = False,
    out_dtype: torch.dtype | None = None,
    compute_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference ``(out [T, H, 512], lse [T, H])``; out is fp32 unless ``out_dtype`` is given.

    ``compute_dtype`` (fp32 by default, fp64 for tests) is the precision of the whole
    computation; lse is returned in fp32.
    """
    import torch

    cdt = compute_dtype or torch.float32
    odt = out_dtype or torch.float32
    if q.ndim != 3 or q.shape[-1] != layout.HEAD_DIM:
        raise ValueError(f"q must be [T, H, {layout.HEAD_DIM}], got {tuple(q.shape)}")
    if (extra_kv_cache is None) != (extra_indices is None):
        raise ValueError("extra_kv_cache and extra_indices must be given together")
    t_total, heads, _ = q.shape
    scale = float(sm_scale) if sm_scale is not None else layout.HEAD_DIM**-0.5
    k_main = indices.reshape(indices.shape[0], -1).shape[1]
    k_extra = 0 if extra_indices is None else extra_indices.reshape(t_total, -1).shape[1]
    chunk = max(1, _CHUNK_ELEMS // max(1, (k_main + k_extra) * layout.HEAD_DIM))

    outs, lses = [], []
    for t0 in range(0, t_total, chunk):
        sl = slice(t0, min(t_total, t0 + chunk))
        rows, valid = all_candidates(
            kv_cache, indices[sl], None if topk_length is None else topk_length[sl],
            extra_kv_cache, None if extra_indices is None else extra_indices[sl],
            None if extra_topk_length is None else extra_topk_length[sl],
        )  # fmt: skip
        kv = rows.to(device=q.device, dtype=cdt)
        valid = valid.to(q.device)
        qc = q[sl].to(cdt)
        s = torch.einsum("thd,tkd->thk", qc, kv) * scale
        s = s.masked_fill(~valid.unsqueeze(1), float("-inf"))
        lse = torch.logsumexp(s, dim=-1)  # -inf for an empty row
        empty = torch.isneginf(lse)
        p = torch.exp(s - torch.where(empty, torch.zeros_like(lse), lse).unsqueeze(-1))
        out = torch.einsum("thk,tkd->thd", p, kv)
        if attn_sink is not None:
            sink = attn_sink.to(device=q.device, dtype=cdt).view(1, heads)
            out = out * torch.sigmoid(lse - sink).unsqueeze(-1)
        out = torch.where(empty.unsqueeze(-1), torch.zeros_like(out), out)
        if lse_base2_sink:
            if attn_sink is not None:
                lse = torch.logaddexp(lse, attn_sink.to(device=q.device, dtype=cdt).view(1, heads))
            lse = lse * LOG2E
        else:
            lse = torch.where(empty, torch.full_like(lse, float("inf")), lse)
        outs.append(out.to(odt))
        lses.append(lse.to(torch.float32))
    if not outs:
        return (
            q.new_zeros((0, heads, layout.HEAD_DIM), dtype=odt),
            q.new_zeros((0, heads), dtype=torch.float32),
        )
    return torch.cat(outs), torch.cat(lses)


def within_flashmla_tolerance(
    out: torch.Tensor, lse: torch.Tensor, ref_out: torch.Tensor, ref_lse: torch.Tensor
) -> tuple[bool, dict[str, float]]:
    """FlashMLA's reference check: out ``|err| <= 1e-3 + (2/128)|ref|``, lse
    ``|err| <= 1e-6 + (8/65536)|ref|``, identical +-inf/NaN positions. Returns (ok, stats).
    """
    import torch

    o = out.to(torch.float64).cpu()
    ro = ref_out.to(torch.float64).cpu()
    lo = lse.to(torch.float64).cpu()
    rl = ref_lse.to(torch.float64).cpu()
    same_special = bool(
        torch.equal(torch.isnan(o), torch.isnan(ro))
        and torch.equal(torch.isnan(lo), torch.isnan(rl))
        and torch.equal(torch.isposinf(lo), torch.isposinf(rl))
        and torch.equal(torch.isneginf(lo), torch.isneginf(rl))
        and torch.equal(torch.isinf(o), torch.isinf(ro))
    )
    fin_o = torch.isfinite(ro) & torch.isfinite(o)
    fin_l = torch.isfinite(rl) & torch.isfinite(lo)
    err_o = (o - ro).abs().where(fin_o, torch.zeros_like(o))
    err_l = (lo - rl).abs().where(fin_l, torch.zeros_like(lo))
    ok_o = bool((err_o <= 1e-3 + (2.0 / 128.0) * ro.abs().where(fin_o, torch.zeros_like(ro))).all())
    ok_l = bool((err_l <= 1e-6 + (8.0 / 65536.0) * rl.abs().where(fin_l, torch.zeros_like(rl))).all())
    stats = {
        "max_abs_err_out": float(err_o.max()) if err_o.numel() else 0.0,
        "max_abs_err_lse": float(err_l.max()) if err_l.numel() else 0.0,
        "rel_l2_out": float((o - ro).where(fin_o, torch.zeros_like(o)).norm() / ro.where(fin_o, torch.zeros_like(ro)).norm().clamp_min(1e-30)),
    }
    return same_special and ok_o and ok_l, stats
