"""CPU tests of the kernel-level smoke checks (the reference stands in for the kernel).

What is pinned here: the synthetic inputs follow SGLang's per-phase index/length rules; the
comparison reports the right error ratio; the verify-consistency check and the long simulation
catch a kernel that is exact at T = 1 but reads the wrong valid lengths in multi-row calls,
while a T = 1 check does not; the orchestration turns results into the documented findings.
"""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from broken_kernel import FirstRowLengthKernel  # noqa: E402

from dsparkctl import kernel_smoke as ks  # noqa: E402
from dsparkctl.kernel import layout  # noqa: E402
from dsparkctl.kernel.reference import sparse_mla_decode_ref  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # Tiny tensors: thread hand-offs cost more than they save on a shared 2-core runner.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


GAMMA = 5
VERIFY = ks.CallShape("verify", 4, 128, 128, 64)
DECODE = ks.CallShape("decode", 4, 128, 128, 64)
DRAFT = ks.CallShape("draft", 4, ks.dspark_draft_topk(GAMMA), 0, 0)


def _valid(case: ks.CallCase, i: int) -> list[int]:
    row = case.kwargs["indices"][i].tolist()
    return row[: case.topk_length[i]]


# ------------------------------------------------------------------ input synthesis


def test_draft_width_is_sglang_ceil_align():
    assert [ks.dspark_draft_topk(g) for g in (1, 5, 64, 65)] == [192, 192, 192, 256]


def test_decode_rows_lengths_and_padding():
    case = ks.make_call_case(DECODE, 24, seed=0, pad_style="empty")
    pad = case.padding_rows
    assert len(pad) == 6 and pad == tuple(range(18, 24))  # a quarter of the slots are padding
    idx = case.kwargs["indices"]
    for i in range(24):
        if i in pad:
            assert case.topk_length[i] == 0 and bool((idx[i] == -1).all())
            continue
        p = case.prefix_lens[case.row_request[i]]
        assert case.topk_length[i] == min(p + 1, 128)
        valid = _valid(case, i)
        assert all(s >= 0 for s in valid) and len(set(valid)) == len(valid)
        assert bool((idx[i, case.topk_length[i] :] == -1).all())
    # the template covers short contexts and full windows
    assert min(case.topk_length[:18]) <= 4 and max(case.topk_length[:18]) == 128


def test_verify_rows_are_causal_inside_the_draft_block():
    case = ks.make_call_case(VERIFY, 18, seed=0, prefix_lens=[3, 61, 300])
    assert case.rows_per_request == (6, 6, 6) and case.padding_rows == ()
    for r, p in enumerate(case.prefix_lens):
        rows = range(6 * r, 6 * r + 6)
        for j, i in enumerate(rows):
            assert case.topk_length[i] == min(p + j + 1, 128)
            assert case.row_position[i] == p + j
            if j:
                prev, cur = _valid(case, i - 1), _valid(case, i)
                # newest first: row j's lanes 1.. are row j-1's lanes 0.. (one new token in front)
                n = min(len(prev), len(cur) - 1)
                assert cur[1 : 1 + n] == prev[:n]
                assert cur[0] not in prev
        ext = case.extra_topk_length
        assert ext is not None
        for j, i in enumerate(rows):
            count = (p + j + 1) // 4
            assert ext[i] == min(max(count, 1), 128)
            e = case.kwargs["extra_indices"][i].tolist()
            assert sum(1 for x in e if x >= 0) == min(count, 128)
            assert all(x == -1 for x in e[min(count, 128) :])


def test_draft_rows_share_window_then_block():
    case = ks.make_call_case(DRAFT, 15, seed=0, prefix_lens=[0, 61, 500])
    idx = case.kwargs["indices"]
    assert idx.shape == (15, 192)
    for r, p in enumerate(case.prefix_lens):
        ctx = min(p, 128)
        rows = list(range(5 * r, 5 * r + 5))
        for i in rows:
            assert case.topk_length[i] == ctx + GAMMA
            assert torch.equal(idx[i], idx[rows[0]])
            assert bool((idx[i, ctx + GAMMA :] == -1).all())
        lanes = _valid(case, rows[0])
        assert len(set(lanes)) == ctx + GAMMA  # window and block slots are distinct
    assert "extra_indices" not in case.kwargs


def test_sglang_style_padding_rows_point_at_reserved_slot():
    case = ks.make_call_case(VERIFY, 30, seed=1, pad_style="mixed")
    pad = case.padding_rows
    assert len(pad) == 6  # 5 request slots -> 4 real + 1 padding request
    kinds = {case.topk_length[i] for i in pad}
    assert kinds == {0, 1}
    for i in pad:
        if case.topk_length[i] == 1:
            assert int(case.kwargs["indices"][i, 0]) == 0
            assert case.extra_topk_length[i] == 1
            assert bool((case.kwargs["extra_indices"][i] == -1).all())


def test_referenced_slots_are_finite_and_the_rest_is_poisoned():
    case = ks.make_call_case(VERIFY, 24, seed=2, pad_style="sglang")
    kw = case.kwargs
    for cache, idx, lens in ((kw["kv_cache"], kw["indices"], kw["topk_length"]),
                             (kw["extra_kv_cache"], kw["extra_indices"], kw["extra_topk_length"])):
        k = torch.arange(idx.shape[1]).view(1, -1)
        valid = (k < lens.view(-1, 1)) & (idx >= 0)
        rows = layout.gather_dequant(cache, idx[valid].long())
        assert bool(torch.isfinite(rows).all())
        every = layout.dequantize_kv(cache)
        assert bool(torch.isnan(every).any())  # unreferenced slots are NaN bait


def test_stale_lanes_fill_past_the_length_with_real_slots():
    case = ks.make_call_case(VERIFY, 12, seed=0, prefix_lens=[10], stale_lanes=True)
    idx = case.kwargs["indices"]
    for i in range(12):
        assert bool((idx[i] >= 0).all())
        assert set(idx[i].tolist()) == set(_valid(case, i))


def test_inputs_are_deterministic_per_seed():
    a = ks.make_call_inputs(VERIFY, 12, seed=3)
    b = ks.make_call_inputs(VERIFY, 12, seed=3)
    c = ks.make_call_inputs(VERIFY, 12, seed=4)
    assert torch.equal(a["indices"], b["indices"]) and torch.equal(a["q"], b["q"])
    assert not torch.equal(a["indices"], c["indices"])


def test_plan_call_fields_drive_the_shape():
    class Planned:  # the planner's PlannedCall fields, c128 flavour
        phase = "verify"
        num_heads = 2
        topk = 128
        extra_topk = 64
        extra_page_size = 2
        layer_kind = "c128"
        num_tokens = (6, 12)

    case = ks.make_call_case(Planned(), 6, seed=0, prefix_lens=[700])
    kw = case.kwargs
    assert kw["q"].shape == (6, 2, 512) and kw["extra_kv_cache"].shape[1] == 2
    for j in range(6):
        count = (700 + j + 1) // 128
        e = kw["extra_indices"][j].tolist()
        assert case.extra_topk_length[j] == max(count, 1)
        # c128: every entry in order, no indexer
        assert [x >= 0 for x in e[:count]] == [True] * count and e[count] == -1


def test_bad_arguments_are_rejected_clearly():
    with pytest.raises(ValueError, match="num_tokens"):
        ks.make_call_case(DECODE, 0)
    with pytest.raises(ValueError, match="pad_style"):
        ks.make_call_case(DECODE, 4, pad_style="zeros")
    with pytest.raises(ValueError, match="gamma"):
        ks.make_call_case(VERIFY, 4, gamma=0)


def test_write_kv_round_trips_like_quantize_kv():
    cache = layout.quantize_kv(torch.zeros(512, 512), 256)
    kv = torch.randn(5, 512) * 3
    slots = torch.tensor([3, 300, 255, 256, 17])
    ks.write_kv(cache, slots, kv)
    got = layout.gather_dequant(cache, slots)
    want = layout.dequantize_kv(layout.quantize_kv(kv, 1))
    assert torch.equal(got, want)
    assert bool((layout.gather_dequant(cache, torch.tensor([4, 301])) == 0).all())


def test_split_pages_to_64_keeps_every_slot():
    kv = torch.randn(600, 512)
    pad = layout.sglang_page_bytes(256) - layout.logical_page_bytes(256)
    cache = layout.quantize_kv(kv, 256, pad)
    split = ks.split_pages_to_64(cache)
    assert split.shape[1] == 64 and split.shape[0] == cache.shape[0] * 4
    assert layout.page_stride_bytes(split) == layout.sglang_page_bytes(64)
    assert torch.equal(layout.dequantize_kv(split), layout.dequantize_kv(cache))


# ------------------------------------------------------------------ comparison / check_call


def _fp32_kernel(add: float = 0.0, lse_add: float = 0.0):
    def k(q, kv_cache, indices, **kw):
        out, lse = sparse_mla_decode_ref(q, kv_cache, indices, **kw)
        return out + add, lse + lse_add

    return k


def test_reference_as_kernel_passes():
    case = ks.make_call_case(VERIFY, 24, seed=0, pad_style="mixed")
    res = ks.check_call(ks.reference_as_kernel, ks.reference_kernel, case.kwargs, graph=True,
                        padding_rows=case.padding_rows, timing_iters=1)
    assert res.status == "ok" and 0 < res.max_ratio < 1
    assert res.time_us is not None and res.graph is None  # no CUDA: eager only


@pytest.mark.parametrize("add", [5e-4, 3e-3])
def test_perturbed_kernel_gets_the_exact_ratio(add):
    case = ks.make_call_case(VERIFY, 12, seed=5)
    kw = case.kwargs
    ref_out, _ = ks.reference_kernel(**kw)
    # The kernel's error is exactly `add` (fp32, up to rounding of ref + add).
    out, _ = _fp32_kernel(add)(**kw)
    err = (out.double() - ref_out.double()).abs()
    expected = float((err / (1e-3 + (2 / 128) * ref_out.double().abs())).max())
    res = ks.check_call(_fp32_kernel(add), ks.reference_kernel, kw, graph=False, timing_iters=1)
    assert res.max_ratio == pytest.approx(expected, rel=1e-9)
    assert res.max_ratio == pytest.approx(add / 1e-3, rel=0.05)  # worst at |ref| ~ 0
    assert res.status == ("ok" if add < 1e-3 else "mismatch")
    assert res.eager is not None and res.eager.bad_rows == (() if add < 1e-3 else tuple(range(12)))


def test_lse_error_counts_for_flashmla_but_not_for_the_fp8_tolerance():
    kw = ks.make_call_inputs(DECODE, 4, seed=0)
    bad_lse = _fp32_kernel(lse_add=1e-3)
    assert ks.check_call(bad_lse, ks.reference_kernel, kw, graph=False).status == "mismatch"
    res = ks.check_call(bad_lse, ks.reference_kernel, kw, graph=False,
                        tolerance=ks.FP8_TOLERANCE)
    assert res.status == "ok"


def test_padding_only_mismatch_is_its_own_status():
    case = ks.make_call_case(DECODE, 8, seed=0, pad_style="empty")

    def pad_garbage(q, kv_cache, indices, *, topk_length, **kw):
        out, lse = ks.reference_as_kernel(q, kv_cache, indices, topk_length=topk_length, **kw)
        out[topk_length == 0] = 1.0  # spurious probability on empty rows (flashinfer #4484)
        return out, lse

    res = ks.check_call(pad_garbage, ks.reference_kernel, case.kwargs, graph=False,
                        padding_rows=case.padding_rows)
    assert res.status == "pad-mismatch"
    assert set(res.eager.bad_rows) == set(case.padding_rows) != set()


def test_reading_poisoned_slots_is_caught_as_nan():
    case = ks.make_call_case(VERIFY, 6, seed=0, prefix_lens=[20])

    def off_by_one(q, kv_cache, indices, **kw):
        # slot arithmetic off by one: the newest token's neighbour was never written
        shifted = torch.where(indices >= 0, indices + 1, indices)
        return ks.reference_as_kernel(q, kv_cache, shifted, **kw)

    res = ks.check_call(off_by_one, ks.reference_kernel, case.kwargs, graph=False)
    assert res.status == "mismatch" and math.isinf(res.max_ratio)


def test_kernel_exception_is_an_error_with_its_text():
    def raises(**kw):
        raise ValueError("SM120 sparse-MLA has no decode kernel for this shape: heads=64 topk=192")

    kw = ks.make_call_inputs(DRAFT, 5, seed=0)
    res = ks.check_call(lambda *a, **k: raises(), ks.reference_kernel, kw, graph=True)
    assert res.status == "error" and "no decode kernel for this shape" in res.error
    assert res.error.startswith("ValueError:")


def test_compare_outputs_shape_mismatch():
    a = torch.zeros(2, 4, 512)
    c = ks.compare_outputs(a, None, torch.zeros(2, 8, 512), None)
    assert not c.ok and math.isinf(c.ratio) and "shape" in c.detail


# ------------------------------------------------------------------ verify consistency


def test_consistency_passes_for_the_reference():
    res = ks.check_verify_consistency(ks.reference_as_kernel, 4, GAMMA, heads=4, extra_topk=64,
                                      ref_fn=ks.reference_kernel)
    assert res.ok and res.ratio <= 1.0 and res.t1_vs_ref_ok and res.batched_vs_ref_ok
    assert res.num_requests == 4 and res.rows_per_request == GAMMA + 1


def test_first_row_length_bug_escapes_t1_checks_but_not_verify_consistency():
    broken = FirstRowLengthKernel(ks.reference_as_kernel, GAMMA + 1)
    # A T = 1 check (what a decode-only smoke test does) sees nothing wrong ...
    for seed in range(3):
        kw = ks.make_call_inputs(DECODE, 1, seed=seed)
        assert ks.check_call(broken, ks.reference_kernel, kw, graph=False).status == "ok"
    # ... the verify-path consistency check does, and says where.
    res = ks.check_verify_consistency(broken, 4, GAMMA, heads=4, extra_topk=64,
                                      ref_fn=ks.reference_kernel)
    assert res.status == "inconsistent" and res.ratio > 1
    assert res.t1_vs_ref_ok is True and res.batched_vs_ref_ok is False
    assert res.first_bad is not None and res.first_bad["row_in_request"] >= 1
    # and a verify-shaped numerics check catches it too
    kw = ks.make_call_inputs(VERIFY, 12, seed=0, prefix_lens=[3, 40])
    assert ks.check_call(broken, ks.reference_kernel, kw, graph=False).status == "mismatch"


# ------------------------------------------------------------------ long simulation


LONG = dict(max_context=260, gamma=3, heads=2, draft_heads=2, extra_topk=64, num_requests=2)


def test_long_simulation_sweeps_lengths_and_passes_the_reference():
    res = ks.simulate_long_generation(ks.reference_as_kernel, ks.reference_kernel, **LONG)
    assert res.ok, res.to_json()
    assert min(res.final_contexts) >= 260 and res.steps > 50
    assert res.calls == 2 * res.steps
    assert res.length_range == (1, 128)  # from one token to the full window
    assert res.extra_length_range == (1, 64)


def test_long_simulation_catches_the_first_row_length_bug():
    broken = FirstRowLengthKernel(ks.reference_as_kernel, LONG["gamma"] + 1)
    res = ks.simulate_long_generation(broken, ks.reference_kernel, **LONG)
    assert not res.ok and res.failed_calls > 0
    f = res.failures[0]
    assert f.phase in ("verify", "draft") and f.ratio > 1
    assert any(x.phase == "verify" for x in res.failures)


# ------------------------------------------------------------------ orchestration


class _Plan:
    gamma = 1

    def __init__(self) -> None:
        self.calls = (
            ks.CallShape("verify", 2, 128, 64, 64, num_tokens=(2, 4, 8)),
            ks.CallShape("draft", 2, ks.dspark_draft_topk(1), 0, 0, num_tokens=(1, 2, 4)),
        )


def test_run_kernel_checks_without_gpu_says_so():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    findings, data = ks.run_kernel_checks(_Plan(), kernel="bundled")
    assert [f.id for f in findings] == ["smoke-no-gpu"]
    assert data["ran"] is False


def test_run_kernel_checks_table_and_findings_on_cpu():
    good = ks.KernelUnderTest("reference", ks.reference_as_kernel)
    findings, data = ks.run_kernel_checks(_Plan(), kernel=good, device="cpu")
    assert findings == []
    rows = data["rows"]
    assert {(r["phase"], r["num_tokens"]) for r in rows} == {
        ("verify", 2), ("verify", 4), ("verify", 8), ("draft", 1), ("draft", 2), ("draft", 4)}
    assert all(r["status"] == "ok" for r in rows)
    assert {c["status"] for c in data["consistency"]} == {"ok"}

    bad = ks.KernelUnderTest("broken", FirstRowLengthKernel(ks.reference_as_kernel, 2))
    seen = []
    findings, data = ks.run_kernel_checks(_Plan(), kernel=bad, device="cpu",
                                          progress=lambda d, i, n: seen.append((i, n)))
    ids = {f.id for f in findings}
    assert "smoke-verify-inconsistent" in ids and "smoke-kernel-mismatch" in ids
    assert seen and seen[-1][0] == seen[-1][1]  # progress reaches its total


def test_run_kernel_checks_reports_raising_kernels_as_capture_failures():
    def no_kernel(q, *a, **k):
        if q.shape[0] > 2:
            raise RuntimeError("Check failed: num_tokens > 64 (4 vs. 64)")
        return ks.reference_as_kernel(q, *a, **k)

    kut = ks.KernelUnderTest("fi-like", no_kernel)
    findings, data = ks.run_kernel_checks(_Plan(), kernel=kut, device="cpu")
    cap = [f for f in findings if f.id == "smoke-capture-failed"]
    assert len(cap) == 1
    assert "install-kernels" in cap[0].fix and "num_tokens > 64" in cap[0].detail
    statuses = {(r["phase"], r["num_tokens"]): r["status"] for r in data["rows"]}
    assert statuses[("verify", 2)] == "ok" and statuses[("verify", 4)] == "error"


def test_select_num_tokens_caps_large_sizes():
    sizes = [6, 12, 60, 72, 84, 96, 1440, 5000]
    assert ks.select_num_tokens(sizes) == [6, 12, 60, 72, 96, 1440]
    assert ks.select_num_tokens([5000, 6000]) == [5000]


def test_kernel_name_is_validated():
    with pytest.raises(ValueError, match="bundled, flashinfer or both"):
        ks._resolve_kernels("triton")


# ------------------------------------------------------------------ FlashInfer adapter vs real wheels


def _call_keywords(tree: ast.AST, func: str, callee: str) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            for call in ast.walk(node):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == callee):
                    return {k.arg for k in call.keywords if k.arg}
    raise AssertionError(f"no call to {callee} in {func}")


def _adapter_keywords() -> set[str]:
    tree = ast.parse(inspect.getsource(ks))
    return _call_keywords(tree, "flashinfer_sm120_decode", "_sparse_mla_sm120_paged_attention")


@pytest.mark.network
def test_flashinfer_adapter_passes_what_sglang_0523_passes(wheels):
    src = Path(wheels.unpacked("sglang", "0.5.23")) / "sglang/kernels/ops/attention/flash_mla_sm120.py"
    theirs = _call_keywords(ast.parse(src.read_text()), "_flash_mla_flashinfer",
                            "_sparse_mla_sm120_paged_attention")
    assert _adapter_keywords() == theirs


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.6.15.post1", "0.6.18", "0.7.0", "0.7.2.post1"])
def test_flashinfer_adapter_matches_the_real_entry_point(wheels, version):
    root = Path(wheels.unpacked("flashinfer-python", version)) / "flashinfer/mla"
    params = None
    for f in sorted(root.rglob("*.py")):
        if "_sparse_mla_sm120" not in str(f):
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "_sparse_mla_sm120_paged_attention":
                a = node.args
                params = {x.arg for x in a.args + a.kwonlyargs}
    assert params is not None, f"no _sparse_mla_sm120_paged_attention in flashinfer {version}"
    assert _adapter_keywords() <= params
    # the adapter imports both names from the module / package SGLang imports them from
    mod = root / "_sparse_mla_sm120.py"
    text = mod.read_text() if mod.exists() else (root / "_sparse_mla_sm120/__init__.py").read_text()
    assert "_DECODE_MAX_TOKENS" in text and "_sparse_mla_sm120_paged_attention" in text


def test_default_choice_tests_each_call_on_the_kernel_the_stack_routes_it_to(monkeypatch):
    """SM12x with FlashInfer and ``--route missing``: routed shapes on the bundled kernel,
    the rest on FlashInfer, so a FlashInfer gap the router covers is not a false alarm."""
    both = [ks.KernelUnderTest("bundled", ks.reference_as_kernel),
            ks.KernelUnderTest("flashinfer", ks.reference_as_kernel)]
    monkeypatch.setattr(ks, "_resolve_kernels", lambda kernel: (list(both), []))
    draft_topk = ks.dspark_draft_topk(1)
    _, data = ks.run_kernel_checks(_Plan(), kernel=None, device="cpu",
                                   routed=lambda h, k, *call: k == draft_topk)
    assert data["split_by_routing"] is True
    by_phase = {(r["phase"], r["kernel"]) for r in data["rows"]}
    assert by_phase == {("draft", "bundled"), ("verify", "flashinfer")}
    assert {(c["phase"], c["kernel"]) for c in data["consistency"]} == by_phase

    # without a routing rule (or with an explicit choice) both kernels see every call
    _, data = ks.run_kernel_checks(_Plan(), kernel=None, device="cpu")
    assert {(r["phase"], r["kernel"]) for r in data["rows"]} == {
        (p, k) for p in ("draft", "verify") for k in ("bundled", "flashinfer")}


def test_default_choice_asks_the_router_per_size_and_extra_cache(monkeypatch):
    """Prefill-sized sizes of a call (> 64 tokens) the router takes run on the bundled
    kernel, its decode-sized ones FlashInfer serves on FlashInfer: the rule is asked with each
    size and the call's extra cache."""
    both = [ks.KernelUnderTest("bundled", ks.reference_as_kernel),
            ks.KernelUnderTest("flashinfer", ks.reference_as_kernel)]
    monkeypatch.setattr(ks, "_resolve_kernels", lambda kernel: (list(both), []))

    class Plan:
        gamma = 1
        calls = (ks.CallShape("verify", 2, 128, 64, 64, num_tokens=(8, 72)),)

    asked: set[tuple[int, ...]] = set()

    def routed(h: int, k: int, n: int = 1, e: int = 0, p: int = 64) -> bool:
        asked.add((h, k, n, e, p))
        return n > 64

    _, data = ks.run_kernel_checks(Plan(), kernel=None, device="cpu", routed=routed)
    assert {(r["num_tokens"], r["kernel"]) for r in data["rows"]} == {(8, "flashinfer"),
                                                                      (72, "bundled")}
    assert {(2, 128, 8, 64, 64), (2, 128, 72, 64, 64)} <= asked
