"""The kernel's randomized differential cases (``dsparkctl.kernel.fuzz``).

CPU: the generator is deterministic, reaches every axis value it claims to, stays inside the
reference's budget, and every call it draws is one the op accepts (built on the CPU, the only
complaint ``ops.validate`` may have is the device). GPU (marked): a fixed sample of seeds runs
against the fp64 reference, twice each (bitwise equal). Long campaigns: ``bench/kernel_fuzz.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dsparkctl.kernel import fuzz, layout

N_DRAWS = 3000
GPU_SEEDS = range(1_000_000, 1_000_200)


@pytest.fixture(scope="module")
def draws() -> list[fuzz.FuzzCase]:
    return [fuzz.draw_case(s) for s in range(N_DRAWS)]


def test_constants_match_the_op() -> None:
    ops = pytest.importorskip("dsparkctl.kernel.ops")
    assert fuzz.CONFIGS == ops.CONFIGS
    assert fuzz.MAX_SPLITS == ops.MAX_SPLITS
    assert fuzz.MAX_HEADS == ops.MAX_HEADS
    assert set(fuzz.LARGE_CONFIGS) == {
        ops.CONFIG_LARGE_SMEM, ops.CONFIG_LARGE_SMEM_16, ops.CONFIG_LARGE_SMEM_32, ops.CONFIG_LARGE_SMEM_WS,
        ops.CONFIG_LARGE_SMEM_WS_DIMS,
    }  # fmt: skip


def test_a_seed_is_one_case() -> None:
    assert fuzz.draw_case(17) == fuzz.draw_case(17)
    assert len({fuzz.draw_case(s) for s in range(50)}) == 50
    assert fuzz.draw_case(17).seed == 17


def test_draws_reach_every_axis_value(draws: list[fuzz.FuzzCase]) -> None:
    def seen(field: str) -> set:
        return {getattr(c, field) for c in draws}

    assert set(fuzz.CONFIGS) <= seen("config")
    assert set(fuzz.MAIN_PAGE_SIZES) <= seen("pbs")
    assert set(fuzz.EXTRA_PAGE_SIZES) <= {c.extra_pbs for c in draws if c.extra_topk}
    assert {0, 1, fuzz.MAX_SPLITS} <= seen("num_splits") and len(seen("num_splits")) > 10
    assert {1, 8, 16, 24, 32, 64, 128} <= seen("h")
    assert len(seen("h")) > 100  # heads that pad inside every layout, not just the usual ones
    topks = seen("topk")
    assert 1 in topks and max(topks) > 2048 and any(k % 64 and k > 64 for k in topks)
    assert {1} <= {c.extra_topk for c in draws} and 0 in seen("extra_topk")
    assert max(seen("t")) > 300 and 1 in seen("t")
    for field, values in (
        ("q_layout", {"contiguous", "head_padded", "token_strided"}),
        ("idx_layout", {"contiguous", "row_padded", "3d"}),
        ("lengths", {"none", "random", "wild"}),
        ("extra_lengths", {"none", "random", "wild"}),
    ):
        assert seen(field) == values, field
    for flag in ("duplicates", "sink", "lse_base2", "lengths_strided", "cache_fp8", "q_wild_rows", "nan_row"):
        assert seen(flag) == {False, True}, flag
    assert seen("kv_spread") == {0, 1, 2, 3, fuzz.MAX_KV_SPREAD}
    assert max(seen("offset_pages")) > 0
    assert 0.0 in seen("bad_index_rate") and max(seen("bad_index_rate")) >= 0.9
    # page strides that are 8- but not 16-byte aligned (the kernel's narrow-load path)
    assert any((layout.logical_page_bytes(c.pbs) + c.pad) % 16 == 8 for c in draws)
    assert any(c.sm_scale is not None for c in draws)


def test_graph_and_row_checks_are_drawn(draws: list[fuzz.FuzzCase]) -> None:
    assert {c.graph for c in draws} == {False, True}
    for c in draws:
        assert len(c.alone_rows) == min(c.t, 3) and len(set(c.alone_rows)) == len(c.alone_rows)
        assert all(0 <= r < c.t for r in c.alone_rows)
    # rows alone are compared where layout and split count are both forced: a good share of cases
    assert sum(1 for c in draws if c.config and c.num_splits) > N_DRAWS // 6


def test_the_new_fields_left_earlier_fields_alone() -> None:
    """graph / alone_rows were added after call 1's campaign; its seeds must still mean the same
    calls: every case that campaign recorded by name is the one its seed draws now."""
    rec = Path(__file__).resolve().parent.parent / "bench/results/kernel_fuzz_h200/run1/fails_first_verdict.txt"
    lines = rec.read_text().splitlines()
    assert len(lines) > 600
    for line in lines[::10]:
        _, seed, name = line.split()[:3]
        assert fuzz.draw_case(int(seed.removeprefix("seed="))).name == name


def test_row_slice_keeps_views_and_shares_the_caches() -> None:
    pytest.importorskip("torch")
    c = next(c for c in (fuzz.draw_case(s) for s in range(2000)) if _small(c) and c.t >= 3 and c.extra_topk
             and c.q_layout == "head_padded" and c.lengths != "none")  # fmt: skip
    kw = dict(fuzz.build_inputs(c, "cpu"), sm_scale=0.1, lse_base2_sink=False)
    from dsparkctl.kernel_smoke import row_slice

    one = row_slice(kw, 2)
    for name in ("q", "indices", "topk_length", "extra_indices"):
        assert one[name].shape[0] == 1 and one[name].data_ptr() == kw[name][2:3].data_ptr(), name
    assert one["q"].stride() == kw["q"].stride()  # a view, not a copy
    for name in ("kv_cache", "extra_kv_cache", "attn_sink", "sm_scale", "lse_base2_sink"):
        assert one[name] is kw[name], name


def test_draws_stay_inside_the_reference_budget(draws: list[fuzz.FuzzCase]) -> None:
    for c in draws:
        cands = c.topk + c.extra_topk
        assert c.t * cands <= fuzz.MAX_ROWS or c.t == 1, c
        assert c.t * c.h * cands <= fuzz.MAX_SCORES or (c.t == 1 and c.h == 1), c
        assert c.pad % 8 == 0 and c.extra_pad % 8 == 0
        assert 1 <= c.h <= fuzz.MAX_HEADS and c.topk >= 1 and c.n_tok >= 1
        assert c.kv_spread <= fuzz.MAX_KV_SPREAD


def _small(c: fuzz.FuzzCase) -> bool:
    return c.t * c.h * (c.topk + c.extra_topk) <= 400_000 and c.t * (c.topk + c.extra_topk) <= 40_000


def test_every_drawn_call_is_one_the_op_accepts(draws: list[fuzz.FuzzCase]) -> None:
    torch = pytest.importorskip("torch")
    from dsparkctl.kernel import ops

    cases = [c for c in draws if _small(c)][:60]
    assert len(cases) == 60
    for c in cases:
        args = fuzz.build_inputs(c, "cpu")
        with pytest.raises(ValueError, match="must be on a CUDA device"):
            ops.validate(**args)
        q, cache, idx = args["q"], args["kv_cache"], args["indices"]
        assert tuple(q.shape) == (c.t, c.h, layout.HEAD_DIM)
        if c.q_layout == "head_padded":
            assert q.stride(0) == (c.h + 3) * layout.HEAD_DIM
        if c.q_layout == "token_strided":
            assert q.stride(0) == 2 * c.h * layout.HEAD_DIM
        assert idx.ndim == (3 if c.idx_layout == "3d" else 2)
        if c.idx_layout == "row_padded":
            assert idx.stride(0) == c.topk + 5
        assert layout.page_stride_bytes(cache) == layout.logical_page_bytes(c.pbs) + c.pad
        assert cache.storage_offset() == c.offset_pages * layout.page_stride_bytes(cache)
        assert cache.dtype == (torch.float8_e4m3fn if c.cache_fp8 else torch.uint8)
        assert layout.num_slots(cache) >= c.n_tok
        if args["topk_length"] is not None:
            assert args["topk_length"].stride(0) == (2 if c.lengths_strided else 1)
        assert ("extra_kv_cache" in args) == bool(c.extra_topk)
        # the slots past the data are NaN bytes, so the contract's "never read" is tested
        raw = layout.raw_pages(cache.view(torch.uint8))
        if layout.num_slots(cache) > c.n_tok:
            last = c.n_tok
            page, row = divmod(last, c.pbs)
            assert int(raw[page, row * layout.DATA_BYTES]) == 0xFF


def test_the_reference_sees_injected_nan_rows(draws: list[fuzz.FuzzCase]) -> None:
    """A case with ``nan_row`` whose slot lies inside the cache references a NaN row at token 0,
    position 0: unless its length hides it, the reference's lse for token 0 is NaN, and no other
    token's is (the NaN bytes elsewhere are never referenced)."""
    torch = pytest.importorskip("torch")
    from dsparkctl.kernel import reference

    hits = 0
    for c in (c for c in draws if c.nan_row and _small(c) and c.lengths == "none" and not c.extra_topk):
        args = fuzz.build_inputs(c, "cpu")
        if not c.n_tok <= int(args["indices"].reshape(c.t, -1)[0, 0]) < layout.num_slots(args["kv_cache"]):
            continue  # the cache had no slot past the data
        _, lse = reference.sparse_mla_decode_ref(args["q"], args["kv_cache"], args["indices"], attn_sink=args["attn_sink"])
        nan_tokens = torch.isnan(lse).any(dim=1).nonzero().flatten().tolist()
        assert nan_tokens == [0], (c.name, nan_tokens)
        hits += 1
    assert hits >= 3


def _ref(args: dict, case: fuzz.FuzzCase, dtype, scale_factor: float = 1.0):
    return fuzz.reference_for(args, (case.sm_scale or layout.HEAD_DIM**-0.5) * scale_factor, case.lse_base2, dtype)


def _oracle_cases(draws: list[fuzz.FuzzCase], n: int, **want: object) -> list[fuzz.FuzzCase]:
    picked = [c for c in draws if _small(c) and all(getattr(c, k) == v for k, v in want.items())]
    return picked[:n]


def test_the_verdict_accepts_an_honest_fp32_computation(draws: list[fuzz.FuzzCase]) -> None:
    """The oracle's slack is what fp32 rounding can do: the torch reference computed in fp32
    (output rounded to bf16, as the kernel's) is never a ``fail``, on plain data and on the
    ill-conditioned kind (Q rows at 2^17, group scales over +-6 octaves) where it misses
    FlashMLA's tolerance itself."""
    torch = pytest.importorskip("torch")
    cases = _oracle_cases(draws, 14, q_wild_rows=True) + _oracle_cases(draws, 14, kv_spread=fuzz.MAX_KV_SPREAD)
    cases += _oracle_cases(draws, 14, q_wild_rows=False, kv_spread=1)
    verdicts = []
    for c in cases:
        args = fuzz.build_inputs(c, "cpu")
        ref = _ref(args, c, torch.float64)
        out32, lse32 = _ref(args, c, torch.float32)
        v = fuzz.verdict(out32.to(torch.bfloat16), lse32, ref, args, c.sm_scale, c.lse_base2)
        assert v["verdict"] != "fail", (c, v)
        verdicts.append(v["verdict"])
    assert "strict" in verdicts


def test_the_verdict_fails_real_errors(draws: list[fuzz.FuzzCase]) -> None:
    """A 1% wrong softmax scale, or lse off by 4x FlashMLA's tolerance, is a ``fail``: the oracle
    can fail, its slack is small against the tolerance where the data is not extreme. Plain
    data (default scale, group scales within +-2 octaves), enough valid candidates to move."""
    torch = pytest.importorskip("torch")
    cases = _oracle_cases(draws, 400, q_wild_rows=False, nan_row=False, lengths="none", sm_scale=None)
    cases = [c for c in cases if c.topk >= 8 and c.kv_spread <= 2][:8]
    assert len(cases) == 8
    for c in cases:
        args = fuzz.build_inputs(c, "cpu")
        ref = _ref(args, c, torch.float64)
        out_w, lse_w = _ref(args, c, torch.float64, scale_factor=1.01)
        assert fuzz.verdict(out_w.to(torch.bfloat16), lse_w.float(), ref, args, c.sm_scale, c.lse_base2)["verdict"] == "fail", c
        lse_off = (ref[1] + 4 * (1e-6 + 8 / 65536 * ref[1].abs())).float()
        good_out = ref[0].to(torch.bfloat16)
        v = fuzz.verdict(good_out, lse_off, ref, args, c.sm_scale, c.lse_base2)
        assert v["verdict"] == "fail", (c, v)


def test_the_slack_is_zero_without_candidates_and_grows_with_magnitude() -> None:
    torch = pytest.importorskip("torch")
    c = next(c for c in (fuzz.draw_case(s) for s in range(500)) if _small(c) and c.lengths == "none" and c.topk >= 4
             and c.bad_index_rate == 0.0 and not c.nan_row)  # fmt: skip
    args = fuzz.build_inputs(c, "cpu")
    ls, os_ = fuzz.fp32_slack(args, c.sm_scale, False)
    assert ls.shape == (c.t, c.h) and os_.shape == (c.t, c.h, layout.HEAD_DIM)
    assert bool((ls >= 0).all() and (os_ >= 0).all()) and float(ls.max()) > 0
    big = dict(args, q=(args["q"].float() * 64).to(torch.bfloat16))
    ls_big, _ = fuzz.fp32_slack(big, c.sm_scale, False)
    assert float(ls_big.sum()) > 32 * float(ls.sum())  # kappa is linear in |q|
    empty = dict(args, topk_length=torch.zeros(c.t, dtype=torch.int32))
    if "extra_kv_cache" in empty:
        empty["extra_topk_length"] = torch.zeros(c.t, dtype=torch.int32)
    ls0, os0 = fuzz.fp32_slack(empty, c.sm_scale, False)
    assert float(ls0.abs().max()) == 0.0 and float(os0.abs().max()) == 0.0


@pytest.mark.gpu
@pytest.mark.parametrize("seed", GPU_SEEDS)
def test_random_call_matches_the_reference(seed: int) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from dsparkctl.kernel import ops

    ops.load()
    case = fuzz.draw_case(seed)
    r = fuzz.run_case(case)
    if "skipped" in r:
        pytest.skip(r["skipped"])
    assert r["ok"], (case, r)
    assert r["verdict"] in ("strict", "fp32-limited") and not r["why"]


def test_campaign_script_refuses_bad_arguments_and_a_missing_gpu(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """bench/kernel_fuzz.py: exit 2 with the reason for no cases, and for a machine without a GPU
    (the CI case); its plan keys name the kernel the way the campaign logs count them."""
    torch = pytest.importorskip("torch")
    from benchscripts import load

    mod = load("kernel_fuzz")
    monkeypatch.setattr("sys.argv", ["kernel_fuzz.py", "--cases", "0"])
    assert mod.main() == 2
    assert "--cases must be >= 1" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sys.argv", ["kernel_fuzz.py", "--seeds", "3,4"])
    assert mod.main() == 2
    assert "no CUDA device" in capsys.readouterr().err
    plan = {"config": 1, "heads_per_cta": 64, "tile_n": 64, "num_splits": 1, "warp_specialized": True,
            "dims_split": 2, "cluster": 1}  # fmt: skip
    assert mod._plan_key(plan) == "cfg1 64h x 64 ws d2 unsplit"
    assert mod._plan_key(dict(plan, warp_specialized=False, dims_split=1, cluster=4, num_splits=3,
                              heads_per_cta=16)) == "cfg1 16h x 64 c4 split"  # fmt: skip


def test_explain_names_every_layout_and_the_worst_elements(monkeypatch: pytest.MonkeyPatch) -> None:
    """explain_case end to end on the CPU, with the fp32 reference standing in for the op (the
    layouts then agree): one entry per layout, an fp32 reference ratio, and the worst elements
    in order with their context."""
    torch = pytest.importorskip("torch")
    from dsparkctl.kernel import ops, reference

    c = next(c for c in (fuzz.draw_case(s) for s in range(500)) if _small(c) and c.topk >= 4 and not c.q_wild_rows)

    def stand_in(*, config: int, num_splits: int, sm_scale=None, lse_base2_sink=False, **kw):
        out, lse = reference.sparse_mla_decode_ref(
            kw["q"], kw["kv_cache"], kw["indices"], topk_length=kw.get("topk_length"), attn_sink=kw.get("attn_sink"),
            extra_kv_cache=kw.get("extra_kv_cache"), extra_indices=kw.get("extra_indices"),
            extra_topk_length=kw.get("extra_topk_length"), sm_scale=sm_scale, lse_base2_sink=lse_base2_sink,
        )  # fmt: skip
        if config == 2:
            raise RuntimeError("sparse_mla_decode plan failed: stand-in")
        return out.to(torch.bfloat16), lse

    monkeypatch.setattr(ops, "sparse_mla_decode_cfg", stand_in)
    e = fuzz.explain_case(c, dev="cpu")
    assert e["seed"] == c.seed and set(e["per_config"]) == {str(k) for k in fuzz.CONFIGS}
    assert "skipped" in e["per_config"]["2"]
    assert all(0 <= v["ratio"] < 1 for k, v in e["per_config"].items() if k != "2")
    assert e["fp32_ref"]["out_ratio"] < 1
    ratios = [w["ratio"] for w in e["worst_out"]]
    assert len(ratios) == 4 and ratios == sorted(ratios, reverse=True)
    w = e["worst_lse"][0]
    assert 0 <= w["t"] < c.t and 0 <= w["h"] < c.h and w["valid"] >= 0 and w["q_row_max"] > 0
