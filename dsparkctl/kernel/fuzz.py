"""Randomized differential checks of the bundled kernel: any shape, any layout, bad data.

The GPU tests walk fixed grids (every value of every axis, the DSpark shapes, named corner
cases). A grid only finds the bugs its author thought of; this module draws whole calls at
random instead, from distributions that lean on the places kernels break: odd page sizes and
padded, 8- but not 16-byte aligned page strides, cache views that start mid-buffer, strided
q / index / length tensors, topk 1 and topk not a multiple of any tile, heads that pad,
forced layouts and split counts (more splits than tiles included), lengths < 0 and > topk,
indices -1 / past the cache / INT_MIN / INT_MAX / duplicated, Q rows far outside fp16's range
(the kernel's Q shift path), NaN in every unreferenced KV byte and, now and then, NaN in a
referenced row. Each call is checked against the fp64 reference under FlashMLA's tolerance and
run twice: the two results must be bitwise equal (a race shows up as a difference).

``draw_case`` is pure (no torch): a seed gives the same case on every machine, so a failure in
a campaign's log is reproduced by its seed alone (``bench/kernel_fuzz.py --seed N --cases 1``).
``run_case`` builds the tensors and runs the op; it needs torch, a GPU and the kernel library.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from dsparkctl.kernel import layout

if TYPE_CHECKING:
    import torch

# ops' constants, repeated here so that drawing cases needs no torch import (ops imports torch
# lazily too, but keeping this module free of it makes the CPU tests of the generator trivial);
# tests/test_kernel_fuzz.py pins them against ops.
CONFIGS = (0, 1, 2, 3, 4, 5, 6, 7)
MAX_SPLITS = 64
MAX_HEADS = 128
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

MAIN_PAGE_SIZES = (1, 2, 3, 5, 16, 32, 64, 64, 128, 256, 256, 512)
EXTRA_PAGE_SIZES = (1, 2, 2, 3, 16, 64, 64, 256)
# fp64 reference cost and memory: gathered rows (T x candidates) and score work (x heads)
MAX_ROWS = 300_000
MAX_SCORES = 40_000_000
# the kernel holds a tile's nope values as fp16 relative to the tile's largest scale: exact down
# to 2^-14 of it (kernels/NOTES.md, v12), so group scales spread over at most +-6 octaves (12 in
# all between two groups) stay inside the kernel's exact range, as real caches do
MAX_KV_SPREAD = 6


@dataclass(frozen=True)
class FuzzCase:
    """One randomly drawn call; every field is plain data (JSON-ready)."""

    seed: int
    t: int
    h: int
    topk: int
    pbs: int
    pad: int  # page stride padding, bytes (a multiple of 8; SGLang's own is drawn too)
    n_tok: int  # slots holding data; every slot past them is NaN bytes
    offset_pages: int  # the cache view starts this many pages into its buffer
    extra_topk: int  # 0: no extra cache
    extra_pbs: int
    extra_pad: int
    extra_n_tok: int
    lengths: str  # "none", "random" or "wild" (negative, past topk, INT_MIN / INT_MAX)
    extra_lengths: str
    bad_index_rate: float
    duplicates: bool
    sink: bool
    sm_scale: float | None
    lse_base2: bool
    q_layout: str  # "contiguous", "head_padded" or "token_strided"
    idx_layout: str  # "contiguous", "row_padded" or "3d"
    lengths_strided: bool
    cache_fp8: bool  # pass the cache as float8_e4m3fn instead of uint8
    q_wild_rows: bool  # some rows scaled by 2^-20 or 2^17: the kernel's Q shift path
    kv_spread: int  # per-group scale exponents in [-kv_spread, kv_spread]
    nan_row: bool  # one referenced KV row of one token is NaN
    config: int
    num_splits: int
    # drawn after every field above, so adding them kept each earlier seed's case as it was
    graph: bool  # also capture the call in a CUDA graph: its replay must equal eager bitwise
    alone_rows: tuple[int, ...]  # rows re-run alone where layout and split count are forced: bitwise

    @property
    def name(self) -> str:
        x = f"x{self.extra_topk}@{self.extra_pbs}" if self.extra_topk else "x0"
        return (
            f"seed{self.seed}-T{self.t}-H{self.h}-k{self.topk}-p{self.pbs}+{self.pad}-{x}"
            f"-cfg{self.config}s{self.num_splits}"
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _pad(rng: random.Random, pbs: int) -> int:
    r = rng.random()
    if r < 0.4:  # SGLang's padding: the page rounded up to a multiple of 576 bytes
        return layout.sglang_page_bytes(pbs) - layout.logical_page_bytes(pbs)
    if r < 0.7:
        return 0
    return 8 * rng.randint(1, 40)  # odd multiples of 8 leave the stride 8- but not 16-aligned


def _tokens(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.35:
        return rng.randint(1, 8)
    if r < 0.8:
        return rng.randint(9, 64)
    return rng.randint(65, 400)


def _heads(rng: random.Random) -> int:
    if rng.random() < 0.5:
        return rng.choice((1, 8, 16, 24, 32, 64, 64, 128))
    return rng.randint(1, MAX_HEADS)


def _shrink(t: int, h: int, topk: int, extra: int) -> tuple[int, int]:
    """T and H cut down until the fp64 reference stays within its budget."""
    cands = topk + extra
    while t > 1 and (t * cands > MAX_ROWS or t * h * cands > MAX_SCORES):
        t = max(1, t // 2)
    while h > 1 and t * h * cands > MAX_SCORES:
        h = max(1, h // 2)
    return t, h


def draw_case(seed: int) -> FuzzCase:
    """The case a seed stands for (same on every machine and Python version: random.Random)."""
    rng = random.Random(seed)
    t = _tokens(rng)
    h = _heads(rng)
    topk = 1 if rng.random() < 0.05 else _log_uniform(rng, 1, 2600)
    extra_topk = 0 if rng.random() < 0.45 else (1 if rng.random() < 0.05 else _log_uniform(rng, 1, 1200))
    t, h = _shrink(t, h, topk, extra_topk)
    pbs = rng.choice(MAIN_PAGE_SIZES)
    extra_pbs = rng.choice(EXTRA_PAGE_SIZES)
    r = rng.random()
    config = 0 if r < 0.4 else rng.choice(CONFIGS[1:])
    if rng.random() < 0.6:
        num_splits = 0
    elif rng.random() < 0.2:
        num_splits = MAX_SPLITS
    else:
        num_splits = rng.randint(1, 24)
    return FuzzCase(
        seed=seed,
        t=t,
        h=h,
        topk=topk,
        pbs=pbs,
        pad=_pad(rng, pbs),
        n_tok=rng.randint(max(1, topk // 4), 2 * topk + 64),
        offset_pages=rng.choice((0, 0, 0, 1, 3)),
        extra_topk=extra_topk,
        extra_pbs=extra_pbs,
        extra_pad=_pad(rng, extra_pbs),
        extra_n_tok=rng.randint(max(1, extra_topk // 4), 2 * extra_topk + 64) if extra_topk else 0,
        lengths=rng.choice(("none", "random", "random", "wild")),
        extra_lengths=rng.choice(("none", "random", "wild")) if extra_topk else "none",
        bad_index_rate=rng.choice((0.0, 0.0, 0.02, 0.1, 0.5, 0.95)),
        duplicates=rng.random() < 0.3,
        sink=rng.random() < 0.5,
        sm_scale=None if rng.random() < 0.6 else rng.uniform(0.005, 0.2),
        lse_base2=rng.random() < 0.2,
        q_layout=rng.choice(("contiguous", "contiguous", "head_padded", "token_strided")),
        idx_layout=rng.choice(("contiguous", "contiguous", "row_padded", "3d")),
        lengths_strided=rng.random() < 0.2,
        cache_fp8=rng.random() < 0.15,
        q_wild_rows=rng.random() < 0.15,
        kv_spread=rng.choice((0, 1, 1, 2, 3, MAX_KV_SPREAD)),
        nan_row=rng.random() < 0.05,
        config=config,
        num_splits=num_splits,
        graph=rng.random() < 0.08,
        alone_rows=tuple(sorted(rng.sample(range(t), min(t, 3)))),
    )


# ---------------------------------------------------------------- tensors (torch, GPU)


def _cache(
    n_tok: int, pbs: int, pad: int, offset_pages: int, spread: int, fp8: bool, gen: torch.Generator, dev: str
) -> torch.Tensor:
    """A MODEL1 cache view holding n_tok slots of data, NaN bytes in every other slot, and
    ``offset_pages`` NaN pages before the view's first page (the view starts mid-buffer)."""
    import torch

    kv = torch.randn(n_tok, layout.HEAD_DIM, generator=gen, device=dev)
    if spread:
        e = torch.randint(-spread, spread + 1, (n_tok, layout.NUM_SCALES), generator=gen, device=dev)
        kv[:, : layout.NOPE_DIM] *= torch.exp2(e.float()).repeat_interleave(layout.QUANT_GROUP, 1)
    full = layout.quantize_kv(
        torch.cat([torch.zeros(offset_pages * pbs, layout.HEAD_DIM, device=dev), kv]), pbs, page_stride_pad=pad
    )
    cache = full[offset_pages:]
    if offset_pages:
        before = full[:offset_pages]
        layout.fill_unused_slots(before, 0)
    layout.fill_unused_slots(cache, n_tok)
    if fp8:
        cache = cache.view(torch.float8_e4m3fn)
    return cache


def _indices(
    t: int, k: int, n_tok: int, n_slots: int, rate: float, dup: bool, gen: torch.Generator, dev: str
) -> torch.Tensor:
    import torch

    idx = torch.randint(0, n_tok, (t, k), generator=gen, device=dev, dtype=torch.int32)
    if rate:
        bad = torch.rand(t, k, generator=gen, device=dev) < rate
        kinds = torch.tensor([-1, -1000, n_slots, n_slots + 5, INT32_MAX, INT32_MIN, n_tok], device=dev, dtype=torch.int32)
        pick = kinds[torch.randint(0, kinds.numel(), (t, k), generator=gen, device=dev)]
        # n_tok is a slot past the data (NaN bytes) but inside the cache when the last page has
        # room: valid by the contract, so such rows only count where n_tok == n_slots
        pick = torch.where(pick == n_tok, torch.full_like(pick, -1) if n_tok < n_slots else pick, pick)
        idx = torch.where(bad, pick, idx)
    if dup and k >= 2:
        src = torch.randint(0, k, (k // 2 + 1,), generator=gen, device=dev)
        dst = torch.randint(0, k, (k // 2 + 1,), generator=gen, device=dev)
        idx[:, dst] = idx[:, src]
    return idx


def _lengths(kind: str, t: int, k: int, strided: bool, gen: torch.Generator, dev: str) -> torch.Tensor | None:
    import torch

    if kind == "none":
        return None
    if kind == "random":
        ln = torch.randint(0, k + 1, (t,), generator=gen, device=dev, dtype=torch.int32)
    else:
        ln = torch.randint(-5, k + 6, (t,), generator=gen, device=dev, dtype=torch.int32)
        special = torch.tensor([INT32_MIN, INT32_MAX, -1, 0, k + 1], device=dev, dtype=torch.int32)
        pos = torch.randint(0, t, (min(t, special.numel()),), generator=gen, device=dev)
        ln[pos] = special[: pos.numel()]
    if strided:
        wide = torch.zeros(2 * t, device=dev, dtype=torch.int32)
        wide[::2] = ln
        ln = wide[::2]
    return ln


def _layout_index(idx: torch.Tensor, how: str) -> torch.Tensor:
    import torch

    t, k = idx.shape
    if how == "row_padded":
        wide = torch.full((t, k + 5), -7, device=idx.device, dtype=idx.dtype)
        wide[:, :k] = idx
        return wide[:, :k]
    if how == "3d":
        return idx.view(t, 1, k)
    return idx


def build_inputs(case: FuzzCase, dev: str = "cuda") -> dict[str, Any]:
    """The call's arguments (keyword names of ``ops.sparse_mla_decode``), deterministic per seed
    and device (the CPU tests build them on the CPU to check that every drawn call is valid)."""
    import torch

    gen = torch.Generator(device=dev).manual_seed(case.seed)
    c = case
    cache = _cache(c.n_tok, c.pbs, c.pad, c.offset_pages, c.kv_spread, c.cache_fp8, gen, dev)
    q = torch.randn(c.t, c.h, layout.HEAD_DIM, generator=gen, device=dev)
    if c.q_wild_rows:
        f = torch.exp2(torch.tensor([0.0, -20.0, 17.0], device=dev))[
            torch.randint(0, 3, (c.t, c.h, 1), generator=gen, device=dev)
        ]
        q = q * f
    q = q.to(torch.bfloat16)
    if c.q_layout == "head_padded":
        wide = torch.zeros(c.t, c.h + 3, layout.HEAD_DIM, device=dev, dtype=torch.bfloat16)
        wide[:, : c.h] = q
        q = wide[:, : c.h]
    elif c.q_layout == "token_strided":
        wide = torch.zeros(2 * c.t, c.h, layout.HEAD_DIM, device=dev, dtype=torch.bfloat16)
        wide[::2] = q
        q = wide[::2]
    idx = _indices(c.t, c.topk, c.n_tok, layout.num_slots(cache), c.bad_index_rate, c.duplicates, gen, dev)
    if c.nan_row:
        # one token references a NaN slot (kept valid: inside the cache, inside its length)
        nan_slot = min(c.n_tok, layout.num_slots(cache) - 1)
        if nan_slot >= c.n_tok:
            idx[0, 0] = nan_slot
    args: dict[str, Any] = {
        "q": q,
        "kv_cache": cache,
        "indices": _layout_index(idx, c.idx_layout),
        "topk_length": _lengths(c.lengths, c.t, c.topk, c.lengths_strided, gen, dev),
        "attn_sink": torch.randn(c.h, generator=gen, device=dev) * 3 if c.sink else None,
    }
    if c.extra_topk:
        ecache = _cache(c.extra_n_tok, c.extra_pbs, c.extra_pad, 0, c.kv_spread, False, gen, dev)
        eidx = _indices(c.t, c.extra_topk, c.extra_n_tok, layout.num_slots(ecache), c.bad_index_rate, c.duplicates, gen, dev)
        args["extra_kv_cache"] = ecache
        args["extra_indices"] = _layout_index(eidx, c.idx_layout)
        args["extra_topk_length"] = _lengths(c.extra_lengths, c.t, c.extra_topk, c.lengths_strided, gen, dev)
    return args


LARGE_CONFIGS = (1, 4, 5, 6, 7)  # large shared-memory layouts: absent on SM120 / SM121 (99 KB)
# plan_info fields that change the arithmetic (a cluster gather or one-CTA-per-SM padding does not)
ARITHMETIC_PLAN_KEYS = ("config", "heads_per_cta", "tile_n", "num_splits", "warp_specialized", "dims_split")

# ---------------------------------------------------------------- the verdict
# FlashMLA's tolerance (out 1e-3 + 2/128 |ref|, lse 1e-6 + 8/65536 |lse|) against an fp64
# reference is a fixed error budget; how much error fp32 arithmetic makes depends on the data.
# A score S_i = scale * sum_d q_d k_id summed in fp32 carries an error that scales with the sum
# of the products' magnitudes, kappa_i = scale * sum_d |q_d| |k_id|, not with |S_i|: where the
# products cancel (S near 0 against large |q|, |k|), or where scores are so large that a 1e-5
# relative error moves the softmax, no fp32 implementation meets the fixed budget (the torch fp32
# reference does not either; kernels/NOTES.md, session 52). So an element that misses the
# tolerance is still "fp32-limited", not a failure, when its error is within the tolerance plus
# what rounding of S and of the P.V sum at SCORE_REL / PV_REL of those magnitudes can do:
#   lse: d lse  = sum_i p_i dS_i                        <= SCORE_REL * sum_i p_i kappa_i
#   out: d out_d = sum_i p_i (dS_i - sum_j p_j dS_j) v_id
#              <= SCORE_REL * (sum_i p_i kappa_i |v_id| + (sum_j p_j kappa_j) sum_i p_i |v_id|)
#                 + PV_REL * sum_i p_i |v_id|           (+ the sink factor's share of d lse)
# Why 2^-18: a 576-term fp32 dot product rounded to nearest errs by ~0.7 u kappa (u = 2^-24);
# tensor cores add each k-step's products to the accumulator with truncation, whose errors add
# up instead of cancelling: ~(2/3) sqrt(k-steps) 2u kappa ~ 2^-21 kappa over S's 36 k16 steps.
# The sm_90a wgmma kernels were measured at ~2^-23 kappa (session 52), the mma.sync ones lower.
# 2^-18 leaves 8x over that estimate; a bug that drops or misweighs a candidate, uses a wrong
# scale or rounds P to bf16 (2^-9) is far outside it on the fuzz's data.
SCORE_REL = 2.0**-18
PV_REL = 2.0**-18


def reference_for(
    args: dict[str, Any], sm_scale: float | None, lse_base2: bool, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch reference of a call's arguments (``build_inputs``), computed and returned in
    ``dtype`` (fp64: the verdict's; fp32: what plain fp32 arithmetic reaches)."""
    from dsparkctl.kernel import reference

    return reference.sparse_mla_decode_ref(
        args["q"], args["kv_cache"], args["indices"],
        topk_length=args.get("topk_length"), attn_sink=args.get("attn_sink"),
        extra_kv_cache=args.get("extra_kv_cache"), extra_indices=args.get("extra_indices"),
        extra_topk_length=args.get("extra_topk_length"), sm_scale=sm_scale, lse_base2_sink=lse_base2,
        compute_dtype=dtype, out_dtype=dtype,
    )  # fmt: skip


def _all_candidates(args: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    from dsparkctl.kernel import reference

    return reference.all_candidates(
        args["kv_cache"], args["indices"], args.get("topk_length"),
        args.get("extra_kv_cache"), args.get("extra_indices"), args.get("extra_topk_length"),
    )  # fmt: skip


def fp32_slack(args: dict[str, Any], sm_scale: float | None, lse_base2: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(lse slack [T, H], out slack [T, H, 512]) in fp64: the error fp32 rounding may add on this
    data beyond FlashMLA's tolerance (the bound above), on the inputs' device."""
    import torch

    q = args["q"].to(torch.float64)
    scale = float(sm_scale) if sm_scale is not None else layout.HEAD_DIM**-0.5
    rows, valid = _all_candidates(args)
    kv = rows.to(torch.float64)
    mask = valid.unsqueeze(1)  # [T, 1, k]
    s = torch.einsum("thd,tkd->thk", q, kv) * scale
    s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    empty = torch.isneginf(lse)
    p = torch.exp(s - torch.where(empty, torch.zeros_like(lse), lse).unsqueeze(-1))
    p = torch.where(torch.isnan(p), torch.zeros_like(p), p)  # NaN rows: the NaN positions decide
    kappa = torch.einsum("thd,tkd->thk", q.abs(), kv.abs()) * scale
    kappa = torch.where(mask & torch.isfinite(kappa), kappa, torch.zeros_like(kappa))
    pk = (p * kappa).sum(-1)  # [T, H]
    av = kv.abs().nan_to_num(0.0)
    p_absv = torch.einsum("thk,tkd->thd", p, av)
    pk_absv = torch.einsum("thk,tkd->thd", p * kappa, av)
    lse_slack = SCORE_REL * pk
    out_slack = SCORE_REL * (pk_absv + pk.unsqueeze(-1) * p_absv) + PV_REL * p_absv
    if args.get("attn_sink") is not None:  # out *= sigmoid(lse - sink): sigmoid' <= 1/4
        out_slack = out_slack + 0.25 * lse_slack.unsqueeze(-1) * p_absv
    if lse_base2:
        lse_slack = lse_slack / math.log(2.0)
    return lse_slack, out_slack


def _excess(x: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor) -> float:
    """max |err| / (tolerance + slack) over the elements both sides have finite (> 1 fails)."""
    from dsparkctl.kernel_smoke import tolerance_ratios

    r = tolerance_ratios(x, ref, atol, rtol, slack)
    return float(r.max()) if r.numel() else 0.0


def verdict(
    out: torch.Tensor, lse: torch.Tensor, ref: tuple[torch.Tensor, torch.Tensor], args: dict[str, Any],
    sm_scale: float | None, lse_base2: bool,
) -> dict[str, Any]:  # fmt: skip
    """``strict``: FlashMLA's tolerance against the fp64 reference, inf / NaN positions equal.
    ``fp32-limited``: not strict, but every element within tolerance + ``fp32_slack`` (and the
    same inf / NaN positions). ``fail``: anything else."""
    from dsparkctl.kernel_smoke import FLASHMLA_TOLERANCE as TOL
    from dsparkctl.kernel_smoke import compare_outputs

    cmp = compare_outputs(out, lse, *ref, TOL)
    rec: dict[str, Any] = {
        "ratio": cmp.ratio if math.isfinite(cmp.ratio) else str(cmp.ratio),
        "out_ratio": cmp.out_ratio,
        "lse_ratio": cmp.lse_ratio,
        "detail": cmp.detail,
    }
    if cmp.ok:
        return dict(rec, verdict="strict")
    if cmp.special_mismatch:
        return dict(rec, verdict="fail", bad_rows=list(cmp.bad_rows[:8]))
    lse_slack, out_slack = fp32_slack(args, sm_scale, lse_base2)
    assert TOL.lse_atol is not None and TOL.lse_rtol is not None
    ex_o = _excess(out, ref[0], TOL.out_atol, TOL.out_rtol, out_slack)
    ex_l = _excess(lse, ref[1], TOL.lse_atol, TOL.lse_rtol, lse_slack)
    rec.update(out_excess=ex_o, lse_excess=ex_l, bad_rows=list(cmp.bad_rows[:8]))
    return dict(rec, verdict="fp32-limited" if max(ex_o, ex_l) <= 1.0 else "fail")


def run_case(case: FuzzCase) -> dict[str, Any]:
    """Run one case twice and against the fp64 reference (``verdict``).

    Returns a JSON-ready record: ``ok`` (verdict strict or fp32-limited, and both runs bitwise
    equal), ``why`` (what failed), the ratios to the tolerance and the plan the library ran. A
    forced large-smem layout on a GPU without the shared memory for it is ``skipped`` (the op
    refuses it; not a failure).
    """
    import torch

    from dsparkctl.kernel import ops
    from dsparkctl.kernel_smoke import row_slice

    t0 = time.perf_counter()
    args = build_inputs(case)
    kw = dict(args, sm_scale=case.sm_scale, lse_base2_sink=case.lse_base2)
    try:
        plan = ops.plan_info(
            case.t, case.h, case.topk, case.extra_topk, config=case.config, num_splits=case.num_splits
        )
        out1, lse1 = ops.sparse_mla_decode_cfg(config=case.config, num_splits=case.num_splits, **kw)
    except RuntimeError as e:
        if case.config in LARGE_CONFIGS and "plan failed" in str(e):
            return {"case": case.name, "seed": case.seed, "ok": True, "skipped": str(e).splitlines()[0]}
        raise
    out2, lse2 = ops.sparse_mla_decode_cfg(config=case.config, num_splits=case.num_splits, **kw)
    torch.cuda.synchronize()
    ref = reference_for(args, case.sm_scale, case.lse_base2, torch.float64)
    v = verdict(out1, lse1, ref, args, case.sm_scale, case.lse_base2)
    same = _bitwise(out1, lse1, out2, lse2)
    why = [w for w, bad in (("beyond the fp32 bound", v["verdict"] == "fail"), ("nondeterministic", not same)) if bad]
    # the verify path's property: a row alone equals it inside the batch, bitwise, where both run
    # the same arithmetic: same forced layout and split count (the automatic plan depends on T),
    # and the same kernel, which T can still change. The halves kernel (dims_split 2: unsplit
    # 64-head WS calls on few SMs, so a lone row gets it where a big call does not) takes P's lo
    # part for dims 0-255 as e4m3 where the one-CTA WS kernel keeps it fp16 (session 52): there
    # the row alone is held to the verdict against the reference instead.
    alone_checked = alone_other_kernel = 0
    if case.config and case.num_splits:
        plan1 = ops.plan_info(1, case.h, case.topk, case.extra_topk, config=case.config, num_splits=case.num_splits)
        same_kernel = all(plan1[k] == plan[k] for k in ARITHMETIC_PLAN_KEYS)
        for r in case.alone_rows:
            o, lo = ops.sparse_mla_decode_cfg(config=case.config, num_splits=case.num_splits, **row_slice(kw, r))
            alone_checked += 1
            if same_kernel:
                if not _bitwise(o[0], lo[0], out1[r], lse1[r]):
                    why.append(f"row {r} alone differs")
                continue
            alone_other_kernel += 1
            rv = verdict(o, lo, (ref[0][r : r + 1], ref[1][r : r + 1]), row_slice(args, r), case.sm_scale, case.lse_base2)
            if rv["verdict"] == "fail":
                why.append(f"row {r} alone (other kernel) beyond the fp32 bound")
    if case.graph:
        g, (g_out, g_lse) = captured(
            lambda: ops.sparse_mla_decode_cfg(config=case.config, num_splits=case.num_splits, **kw)
        )
        g.replay()
        torch.cuda.synchronize()
        if not _bitwise(g_out, g_lse, out1, lse1):
            why.append("graph replay differs from eager")
    ref_lse = ref[1]
    small = torch.isfinite(ref_lse) & (ref_lse.abs() < 0.1)
    err_small = (lse1.to(torch.float64) - ref_lse).abs()[small]
    return dict(
        v,
        case=case.name,
        seed=case.seed,
        ok=not why,
        why=why,
        # the lse error where the tolerance is all but its 1e-6 floor (|lse| < 0.1)
        lse_abs_err_near_zero=float(err_small.max()) if err_small.numel() else 0.0,
        empty_rows=None if case.lse_base2 else int(torch.isposinf(ref_lse).sum()),
        nan_rows=int(torch.isnan(ref_lse).sum()),
        rows_alone_checked=alone_checked,
        rows_alone_other_kernel=alone_other_kernel,
        graph=case.graph,
        plan=plan,
        seconds=round(time.perf_counter() - t0, 4),
    )


def _bitwise(o1: torch.Tensor, l1: torch.Tensor, o2: torch.Tensor, l2: torch.Tensor) -> bool:
    import torch

    return bool(
        torch.equal(o1.reshape(-1).view(torch.int16), o2.reshape(-1).view(torch.int16))
        and torch.equal(l1.reshape(-1).view(torch.int32), l2.reshape(-1).view(torch.int32))
    )


def captured(fn: Any) -> tuple[Any, Any]:
    """(CUDA graph of fn, its outputs in the graph's memory), after a warm-up call on a side
    stream, as CUDA-graph users (SGLang) capture."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def explain_case(
    case: FuzzCase, configs: tuple[int, ...] = CONFIGS, worst: int = 4, dev: str = "cuda"
) -> dict[str, Any]:
    """Where a case's error sits: the ratio at every layout (same data, automatic split count),
    a torch fp32 reference's own ratio against the fp64 one (what plain fp32 arithmetic reaches
    on this data), and the worst elements with their row's context (Q magnitude, valid
    candidates). For diagnosing failures; the op needs a GPU (``dev`` is for the CPU tests,
    which stand a reference in for the op)."""
    import torch

    from dsparkctl.kernel import ops
    from dsparkctl.kernel_smoke import FLASHMLA_TOLERANCE as TOL
    from dsparkctl.kernel_smoke import compare_outputs, tolerance_ratios

    args = build_inputs(case, dev)
    kw = dict(args, sm_scale=case.sm_scale, lse_base2_sink=case.lse_base2)
    r64 = reference_for(args, case.sm_scale, case.lse_base2, torch.float64)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        r32 = reference_for(args, case.sm_scale, case.lse_base2, torch.float32)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    c32 = compare_outputs(r32[0].to(torch.bfloat16), r32[1], *r64)
    per_config: dict[str, Any] = {}
    outs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    for cfg in configs:
        try:
            outs[cfg] = ops.sparse_mla_decode_cfg(config=cfg, num_splits=case.num_splits if cfg == case.config else 0, **kw)
        except RuntimeError as e:
            per_config[str(cfg)] = {"skipped": str(e).splitlines()[0]}
            continue
        c = compare_outputs(*outs[cfg], *r64)
        per_config[str(cfg)] = {"ratio": c.ratio, "out_ratio": c.out_ratio, "lse_ratio": c.lse_ratio}
    out, lse = outs.get(case.config, next(iter(outs.values())))
    ref_out, ref_lse = r64
    q = args["q"].to(torch.float64)
    qmax = q.abs().amax(dim=-1)  # [T, H]
    valid = _all_candidates(args)[1].sum(-1)

    assert TOL.lse_atol is not None and TOL.lse_rtol is not None
    el = tolerance_ratios(lse, ref_lse, TOL.lse_atol, TOL.lse_rtol)
    eo = tolerance_ratios(out, ref_out, TOL.out_atol, TOL.out_rtol)
    worst_lse = []
    for i in el.flatten().argsort(descending=True)[:worst].tolist():
        t, h = divmod(i, case.h)
        worst_lse.append({
            "t": t, "h": h, "ratio": float(el[t, h]), "ref": float(ref_lse[t, h]), "kernel": float(lse[t, h]),
            "fp32_ref": float(r32[1][t, h]), "q_row_max": float(qmax[t, h]), "valid": int(valid[t]),
        })  # fmt: skip
    worst_out = []
    for i in eo.flatten().argsort(descending=True)[:worst].tolist():
        t, rest = divmod(i, case.h * layout.HEAD_DIM)
        h, d = divmod(rest, layout.HEAD_DIM)
        worst_out.append({
            "t": t, "h": h, "d": d, "ratio": float(eo[t, h, d]), "ref": float(ref_out[t, h, d]),
            "kernel": float(out[t, h, d]), "fp32_ref": float(r32[0][t, h, d]), "q_row_max": float(qmax[t, h]),
            "valid": int(valid[t]), "ref_lse": float(ref_lse[t, h]),
        })  # fmt: skip
    return {
        "case": case.name,
        "seed": case.seed,
        "per_config": per_config,
        "fp32_ref": {"out_ratio": c32.out_ratio, "lse_ratio": c32.lse_ratio},
        "worst_lse": worst_lse,
        "worst_out": worst_out,
    }
