"""The torch reference against an independent float64 loop (tests/kernel_naive.py)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from kernel_naive import naive_decode  # noqa: E402

from dsparkctl.kernel import layout, reference  # noqa: E402


def _case(seed: int, *, t: int, h: int, topk: int, pbs: int, n_tok: int, extra: tuple[int, int, int] | None):
    g = torch.Generator().manual_seed(seed)
    q = (torch.randn(t, h, 512, generator=g) * 0.5).to(torch.bfloat16)
    cache = layout.quantize_kv(torch.randn(n_tok, 512, generator=g), pbs)
    nslots = layout.num_slots(cache)
    idx = torch.randint(0, n_tok, (t, topk), generator=g, dtype=torch.int32)
    # bad data: -1, other negatives, past the end, duplicates
    idx[0, 0] = -1
    if topk > 2:
        idx[0, 1] = -7
        idx[min(1, t - 1), 2] = nslots + 3
        idx[-1, -1] = idx[-1, 0]
    lengths = torch.randint(-3, topk + 3, (t,), generator=g, dtype=torch.int32)
    lengths[0] = topk + 5
    if t > 2:
        lengths[1] = 0
        lengths[2] = -4
    out = {"q": q, "cache": cache, "idx": idx, "len": lengths}
    if extra is not None:
        etopk, epbs, en = extra
        ecache = layout.quantize_kv(torch.randn(en, 512, generator=g), epbs)
        layout.fill_unused_slots(ecache, en)  # NaN past the written slots
        eidx = torch.randint(-1, en, (t, etopk), generator=g, dtype=torch.int32)
        elen = torch.randint(-1, etopk + 2, (t,), generator=g, dtype=torch.int32)
        if t > 2:
            elen[1] = 0  # token 1: both caches empty -> empty row
        out.update(ecache=ecache, eidx=eidx, elen=elen)
    out["sink"] = torch.randn(h, generator=g)
    return out


def _compare(c, *, sink: bool, base2: bool, use_extra: bool) -> None:
    scale = 512**-0.5 * 1.3
    caches = [(c["cache"], c["idx"].tolist(), c["len"].tolist())]
    kwargs = {"topk_length": c["len"]}
    if use_extra:
        caches.append((c["ecache"], c["eidx"].tolist(), c["elen"].tolist()))
        kwargs.update(extra_kv_cache=c["ecache"], extra_indices=c["eidx"], extra_topk_length=c["elen"])
    sink_t = c["sink"] if sink else None
    n_out, n_lse = naive_decode(
        c["q"].float().tolist(), caches, scale, sink=sink_t.tolist() if sink else None, base2_sink=base2
    )
    n_out = torch.tensor(n_out, dtype=torch.float64)
    n_lse = torch.tensor(n_lse, dtype=torch.float64)
    for cdt, tol in ((torch.float64, 1e-10), (torch.float32, 2e-5)):
        r_out, r_lse = reference.sparse_mla_decode_ref(
            c["q"], c["cache"], c["idx"], attn_sink=sink_t, sm_scale=scale,
            lse_base2_sink=base2, compute_dtype=cdt, out_dtype=cdt, **kwargs,
        )  # fmt: skip
        assert r_out.dtype == cdt and r_lse.dtype == torch.float32
        assert not torch.isnan(r_out).any()
        assert torch.equal(torch.isinf(r_lse), torch.isinf(n_lse.float()))
        assert torch.equal(torch.isposinf(r_lse), torch.isposinf(n_lse.float()))
        fin = torch.isfinite(n_lse)
        # lse is returned in fp32 whatever the compute precision
        assert torch.allclose(r_lse.double()[fin], n_lse[fin], atol=max(tol, 1e-6), rtol=max(tol, 1e-6))
        assert torch.allclose(r_out.double(), n_out, atol=tol, rtol=tol)


@pytest.mark.parametrize(("sink", "base2"), [(False, False), (True, False), (True, True), (False, True)])
def test_reference_matches_naive_loop_with_extra_cache(sink: bool, base2: bool) -> None:
    c = _case(1, t=4, h=3, topk=6, pbs=4, n_tok=11, extra=(5, 2, 7))
    _compare(c, sink=sink, base2=base2, use_extra=True)


def test_reference_matches_naive_loop_main_only() -> None:
    c = _case(2, t=3, h=2, topk=9, pbs=3, n_tok=8, extra=None)
    _compare(c, sink=True, base2=False, use_extra=False)


def test_empty_row_conventions() -> None:
    c = _case(3, t=3, h=2, topk=4, pbs=4, n_tok=6, extra=(3, 2, 4))
    kw = dict(extra_kv_cache=c["ecache"], extra_indices=c["eidx"], extra_topk_length=c["elen"])
    lengths = c["len"].clone()
    lengths[1] = 0  # token 1 main empty; extra length is 0 there too (see _case)
    out, lse = reference.sparse_mla_decode_ref(c["q"], c["cache"], c["idx"], topk_length=lengths, **kw)
    assert torch.count_nonzero(out[1]) == 0
    assert bool(torch.isposinf(lse[1]).all())
    out2, lse2 = reference.sparse_mla_decode_ref(
        c["q"], c["cache"], c["idx"], topk_length=lengths, attn_sink=c["sink"], lse_base2_sink=True, **kw
    )
    assert torch.count_nonzero(out2[1]) == 0
    assert torch.allclose(lse2[1], c["sink"] / math.log(2.0))
    _, lse3 = reference.sparse_mla_decode_ref(c["q"], c["cache"], c["idx"], topk_length=lengths, lse_base2_sink=True, **kw)
    assert bool(torch.isneginf(lse3[1]).all())


def test_nan_in_unreferenced_rows_never_leaks() -> None:
    g = torch.Generator().manual_seed(4)
    cache = layout.quantize_kv(torch.randn(8, 512, generator=g), 16)
    layout.fill_unused_slots(cache, 8)
    q = torch.randn(2, 4, 512, generator=g).to(torch.bfloat16)
    idx = torch.tensor([[0, 9, 3, 15], [2, 1, 12, -1]], dtype=torch.int32)
    out, lse = reference.sparse_mla_decode_ref(q, cache, idx, topk_length=torch.tensor([1, 2], dtype=torch.int32))
    assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(lse).all())


def test_reference_chunking_is_invisible(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _case(5, t=6, h=2, topk=8, pbs=4, n_tok=12, extra=None)
    full = reference.sparse_mla_decode_ref(c["q"], c["cache"], c["idx"], topk_length=c["len"])
    monkeypatch.setattr(reference, "_CHUNK_ELEMS", 1)
    chunked = reference.sparse_mla_decode_ref(c["q"], c["cache"], c["idx"], topk_length=c["len"])
    assert torch.equal(full[0], chunked[0]) and torch.equal(full[1], chunked[1])


def test_tolerance_check_detects_errors() -> None:
    ref = torch.randn(2, 3, 512)
    lse = torch.randn(2, 3)
    ok, _ = reference.within_flashmla_tolerance(ref, lse, ref, lse)
    assert ok
    bad = ref.clone()
    bad[0, 0, 0] += 0.01 + 0.02 * abs(float(bad[0, 0, 0]))
    assert not reference.within_flashmla_tolerance(bad, lse, ref, lse)[0]
    lse_inf = lse.clone()
    lse_inf[1, 1] = math.inf
    assert not reference.within_flashmla_tolerance(ref, lse_inf, ref, lse)[0]
