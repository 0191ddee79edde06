"""The planner: seed 000, the issue's acceptance cases, per-version head rules, and bad input.

FlashInfer decode tables come from the real wheels (the ``_DECODE_DSV4_DISPATCH``
frozenset read with ``ast``); the SGLang rules are checked against the real
SGLang sources (constants and, for ``_kernel_num_heads``, the method itself).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dsparkctl.errors import UsageError
from dsparkctl.flashinfer_support import Dsv4Support, PrefillSupport
from dsparkctl.model_config import PRESET
from dsparkctl.plan import PlannedCall, ServingConfig, make_plan, worst_path
from dsparkctl.sglang_rules import (
    DRAFT_PAD_HEADS,
    PAGE_INDEX_ALIGNED_SIZE,
    SWA_WINDOW,
    draft_topk,
    rule_for,
    target_kernel_heads,
)

pytestmark = pytest.mark.network

# Prefill coverage per KNOWLEDGE §2 (the dispatch reader owns the real reading; the
# planner tests only need a faithful PrefillSupport to compose with).
PREFILL_0615 = PrefillSupport(frozenset({16, 32, 64, 128}), frozenset({128, 512, 1024, 2048}),
                              frozenset({128}), frozenset({64, 2}))
PREFILL_0618 = PrefillSupport(frozenset({8, 16, 32, 64, 128}),
                              frozenset({128, 192, 256, 512, 1024, 2048}),
                              frozenset({128}), frozenset({64, 2}))


def wheel_pairs(wheels: Any, version: str) -> frozenset[tuple[int, int]]:
    src = Path(wheels.unpacked("flashinfer-python", version)) / "flashinfer/mla/_sparse_mla_sm120.py"
    for node in ast.parse(src.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_DECODE_DSV4_DISPATCH" for t in node.targets):
            call = node.value
            assert isinstance(call, ast.Call) and call.func.id == "frozenset"  # type: ignore[attr-defined]
            return frozenset(ast.literal_eval(call.args[0]))
    raise AssertionError(f"no _DECODE_DSV4_DISPATCH in {src}")


@pytest.fixture(scope="module")
def fi0615(wheels: Any) -> Dsv4Support:
    return Dsv4Support("0.6.15.post1", "pairs", "static", pairs=wheel_pairs(wheels, "0.6.15.post1"),
                       miss_behavior="fallthrough", prefill=PREFILL_0615)


@pytest.fixture(scope="module")
def fi0618(wheels: Any) -> Dsv4Support:
    return Dsv4Support("0.6.18", "pairs", "static", pairs=wheel_pairs(wheels, "0.6.18"),
                       miss_behavior="raise", prefill=PREFILL_0618)


def calls(plan: Any, phase: str, regime: str | None = None) -> list[PlannedCall]:
    return [c for c in plan.calls if c.phase == phase and (regime is None or c.regime == regime)]


def test_seed_000(fi0615: Dsv4Support) -> None:
    serving = ServingConfig(tp=4, gamma=5, cuda_graph_max_bs=10, max_running_requests=10,
                            sglang_version="0.5.17")
    plan = make_plan(PRESET, serving, fi0615)
    (draft,) = calls(plan, "draft")
    assert (draft.num_heads, draft.local_heads, draft.topk) == (64, 16, 192)
    assert 50 in draft.num_tokens and draft.num_tokens == (5, 10, 15, 20, 25, 30, 35, 40, 50)
    assert draft.path == "assert" and draft.supported is False
    assert set(draft.paths.values()) == {"assert"}
    assert draft.extra_topk == 0 and draft.valid_topk == "min(prefix,128)+5"
    verify = calls(plan, "verify")
    assert {c.layer_kind for c in verify} == {"swa-only", "c4", "c128"}
    for c in verify:
        assert (c.num_heads, c.topk, c.path) == (64, 128, "decode")
        assert c.num_tokens == tuple(6 * b for b in (1, 2, 3, 4, 5, 6, 7, 8, 10))
    assert not calls(plan, "decode")  # DSpark captures verify, not plain decode
    assert plan.batch_sizes == (1, 2, 3, 4, 5, 6, 7, 8, 10)
    doc = plan.to_json()
    assert {"sglang_version", "tp", "dp", "gamma", "calls"} <= set(doc)
    row = next(r for r in doc["calls"] if r["phase"] == "draft")
    assert {"phase", "num_heads", "topk", "extra_topk", "num_tokens", "path", "supported"} <= set(row)
    assert row["paths"]["50"] == "assert"


def test_acceptance_tp2_gamma5(fi0615: Dsv4Support, fi0618: Dsv4Support) -> None:
    serving = ServingConfig(tp=2, gamma=5, sglang_version="0.5.17")
    old = make_plan(PRESET, serving, fi0615)
    (small,) = calls(old, "draft", "decode-sized")
    assert (small.num_heads, small.topk, small.path, small.supported) == (64, 192, "assert", False)
    # Default max_bs 256 on a 96 GiB card, max_running_requests 256 (DeepSeek-V4 default):
    (large,) = calls(old, "draft", "prefill-sized")
    assert max(large.num_tokens) == 256 * 5 and large.path == "error"  # no topk-192 prefill
    assert old.max_running_requests == 256

    new = make_plan(PRESET, dataclasses.replace(serving, sglang_version="0.5.19"), fi0618)
    (small,) = calls(new, "draft", "decode-sized")
    assert (small.num_heads, small.topk, small.path, small.supported) == (64, 192, "decode", True)
    assert all(c.supported for c in new.calls), [c for c in new.calls if not c.supported]


def test_0523_native_heads_follow_flashinfer_heads(fi0615: Dsv4Support) -> None:
    plan = make_plan(PRESET, ServingConfig(tp=4, gamma=5, sglang_version="0.5.23",
                                           max_running_requests=16), fi0615)
    assert {c.num_heads for c in calls(plan, "verify")} == {16}
    assert {c.num_heads for c in calls(plan, "prefill")} == {16}
    (draft,) = calls(plan, "draft", "decode-sized")
    assert draft.num_heads == 64  # the draft always pads below 64 local heads
    # A build without a 16-head decode kernel: decode-sized target calls pad, prefill stays native.
    only64 = Dsv4Support("synthetic", "pairs", "static",
                         pairs=frozenset({(64, 128), (64, 192)}), prefill=PREFILL_0618)
    plan = make_plan(PRESET, ServingConfig(tp=4, gamma=5, sglang_version="0.5.23",
                                           max_running_requests=16), only64)
    heads = {(c.regime, c.num_heads) for c in calls(plan, "verify")}
    assert heads == {("decode-sized", 64), ("prefill-sized", 16)}
    assert all(c.path == "decode" for c in calls(plan, "verify", "decode-sized"))


def test_0517_pads_all_target_calls_when_attn_tp_above_1(fi0615: Dsv4Support) -> None:
    plan = make_plan(PRESET, ServingConfig(tp=8, gamma=5, sglang_version="0.5.17"), fi0615)
    assert {c.num_heads for c in plan.calls} == {64}
    assert {c.local_heads for c in plan.calls} == {8}


def test_tp1_is_native_everywhere(fi0618: Dsv4Support) -> None:
    for v in ("0.5.17", "0.5.23"):
        plan = make_plan(PRESET, ServingConfig(tp=1, gamma=5, sglang_version=v), fi0618)
        assert {c.num_heads for c in plan.calls} == {64}


def test_dp_attention_splits_requests_and_aligns(fi0618: Dsv4Support) -> None:
    serving = ServingConfig(tp=4, dp=2, enable_dp_attention=True, gamma=5, cuda_graph_max_bs=12,
                            max_running_requests=24, sglang_version="0.5.19")
    plan = make_plan(PRESET, serving, fi0618)
    assert plan.attn_tp == 2
    assert {c.local_heads for c in plan.calls} == {32}
    assert {c.num_heads for c in plan.calls} == {64}
    verify_tokens = set().union(*(c.num_tokens for c in calls(plan, "verify")))
    draft_tokens = set().union(*(c.num_tokens for c in calls(plan, "draft")))
    # 12 requests per DP worker; token counts must be multiples of attn_tp (2).
    assert verify_tokens == {6 * b for b in (1, 2, 3, 4, 5, 6, 7, 8, 10, 12)}
    assert draft_tokens == {5 * b for b in (2, 4, 6, 8, 10, 12)}


def test_speculation_off_plans_plain_decode(fi0615: Dsv4Support) -> None:
    plan = make_plan(PRESET, ServingConfig(tp=2, speculative_algorithm=None, cuda_graph_max_bs=20,
                                           sglang_version="0.5.17"), fi0615)
    assert plan.gamma is None
    assert {c.phase for c in plan.calls} == {"decode", "prefill"}
    for c in calls(plan, "decode"):
        assert c.num_tokens == (1, 2, 4, 8, 12, 16, 20) and c.path == "decode"


def test_extra_cache_widths() -> None:
    plan = make_plan(PRESET, ServingConfig(tp=1, speculative_algorithm=None, cuda_graph_max_bs=4,
                                           context_length=65536, sglang_version="0.5.19"), None)
    by_kind = {c.layer_kind: c for c in calls(plan, "decode")}
    assert (by_kind["swa-only"].extra_topk, by_kind["swa-only"].extra_page_size) == (0, 0)
    assert (by_kind["c4"].extra_topk, by_kind["c4"].extra_page_size) == (512, 64)
    # c128: (256 // 128) * ceil((65536 + 4) / 256) = 2 * 257 = 514, padded to 576; pages of 2.
    assert (by_kind["c128"].extra_topk, by_kind["c128"].extra_page_size) == (576, 2)
    assert (by_kind["c4"].layers, by_kind["c128"].layers, by_kind["swa-only"].layers) == (21, 20, 2)


def test_no_support_and_non_flashinfer_backend_are_unknown(fi0615: Dsv4Support) -> None:
    plan = make_plan(PRESET, ServingConfig(tp=2, gamma=5, sglang_version="0.5.17"), None)
    assert all(c.path == "unknown" and c.supported is None and not c.paths for c in plan.calls)
    triton = ServingConfig(tp=4, gamma=5, sglang_version="0.5.23",
                           env={"SGLANG_SM120_FLASHMLA_BACKEND": "triton"})
    plan = make_plan(PRESET, triton, fi0615)
    assert all(c.path == "unknown" for c in plan.calls)
    assert {c.num_heads for c in calls(plan, "verify", "decode-sized")} == {64}
    assert any("triton" in n for n in plan.notes)


@pytest.mark.parametrize(("gamma", "topk"), [(1, 192), (5, 192), (64, 192), (65, 256), (128, 256)])
def test_draft_width(gamma: int, topk: int) -> None:
    assert draft_topk(gamma) == topk
    plan = make_plan(PRESET, ServingConfig(tp=2, gamma=gamma, cuda_graph_max_bs=1,
                                           sglang_version="0.5.19"), None)
    assert {c.topk for c in calls(plan, "draft")} == {topk}


def test_gamma_defaults_and_eager_mode() -> None:
    plan = make_plan(PRESET, ServingConfig(tp=2, cuda_graph_max_bs=2), None)
    assert plan.gamma == 5  # the checkpoint's dspark_block_size
    assert any("outside" in n or "unknown" in n for n in plan.notes)
    eager = make_plan(PRESET, ServingConfig(tp=2, gamma=3, disable_cuda_graph=True,
                                            max_running_requests=4, sglang_version="0.5.19"), None)
    (draft,) = calls(eager, "draft")
    assert draft.num_tokens == (3, 6, 9, 12)


@pytest.mark.parametrize(("serving", "needle"), [
    (ServingConfig(gamma=0), "gamma"),
    (ServingConfig(gamma=-2), "gamma"),
    (ServingConfig(tp=3), "tp 3"),
    (ServingConfig(tp=0), "tp"),
    (ServingConfig(tp=4, dp=3, enable_dp_attention=True), "does not divide"),
    (ServingConfig(tp=4, dp=1, enable_dp_attention=True), "dp 2 or more"),
    (ServingConfig(tp=128, dp=1), "divide"),
    (ServingConfig(cuda_graph_max_bs=0), "cuda-graph-max-bs"),
    (ServingConfig(cuda_graph_bs=(0, 4)), "cuda-graph-bs"),
    (ServingConfig(sglang_version="five"), "version"),
    (ServingConfig(gamma=5, extra_flags={"speculative_num_draft_tokens": "4"}), "gamma \\+ 1"),
])
def test_bad_serving_configs(serving: ServingConfig, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        make_plan(PRESET, serving, None)


def test_worst_path_order() -> None:
    assert worst_path({1: "decode", 2: "prefill"}) == "prefill"
    assert worst_path({1: "decode", 2: "assert", 3: "prefill"}) == "assert"
    assert worst_path({1: "assert", 2: "error"}) == "error"
    assert worst_path({}) == "unknown"


# --- the SGLang facts behind the rules, checked in the real sources ----------------------------

def _sg(wheels: Any, version: str, rel: str) -> str:
    return (Path(wheels.unpacked("sglang", version)) / rel).read_text(encoding="utf-8")


READ_VERSIONS = ["0.5.17", "0.5.19", "0.5.21", "0.5.22", "0.5.23"]


@pytest.mark.parametrize("version", READ_VERSIONS)
def test_rule_row_matches_the_wheel(wheels: Any, version: str) -> None:
    """Each row's pinned FlashInfer, shim routing, --attn-dp-size flag and max_bs clamp, read
    from that SGLang release's own files."""
    root = Path(wheels.unpacked("sglang", version))
    match = rule_for(version)
    assert match.exact and match.note is None
    rule = match.rule
    meta = (root / f"sglang-{version}.dist-info" / "METADATA").read_text(encoding="utf-8")
    pin = re.search(r"^Requires-Dist: flashinfer_python(?:\[[^\]]*\])?==(\S+)", meta, re.M)
    assert pin is not None and pin.group(1) == rule.pinned_flashinfer
    shim = _sg(wheels, version, "sglang/kernels/ops/attention/flash_mla_sm120.py")
    assert ("if q.shape[0] > SM120_DECODE_MAX_TOKENS" in shim) == rule.shim_routes_large_to_prefill
    srt = [p.read_text(encoding="utf-8") for p in (root / "sglang/srt").rglob("*.py")]
    assert any("--attn-dp-size" in t for t in srt) == rule.attn_dp_size_flag
    clamp = "decode_cuda_graph_config.max_bs = cfg.max_running_requests"
    assert any(clamp in t for t in srt) == rule.clamp_default_max_bs_to_running


@pytest.mark.parametrize("version", READ_VERSIONS)
def test_constants_and_draft_padding_in_sglang(wheels: Any, version: str) -> None:
    backend = ast.parse(_sg(wheels, version, "sglang/srt/layers/attention/deepseek_v4_backend.py"))
    consts = {t.id: n.value.value for n in backend.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    assert consts["SWA_WINDOW"] == SWA_WINDOW and consts["PAGE_INDEX_ALIGNED_SIZE"] == PAGE_INDEX_ALIGNED_SIZE
    meta = _sg(wheels, version, "sglang/kernels/ops/speculative/dspark/dspark_attn_metadata.py")
    assert "target_width = ceil_align(swa_window + block_size, page_index_aligned_size)" in meta
    draft = _sg(wheels, version, "sglang/srt/models/deepseek_v4_dspark.py")
    assert f"_PAD_NUM_HEADS = {DRAFT_PAD_HEADS}" in draft
    assert "self.n_local_heads < _PAD_NUM_HEADS" in draft and "compress_ratio=0," in draft
    hook = _sg(wheels, version, "sglang/srt/arg_groups/deepseek_v4_hook.py")
    assert "max_running_requests = 256" in hook or "max_running_requests=256" in hook
    model = _sg(wheels, version, "sglang/srt/models/deepseek_v4.py")
    has_kernel_heads = "def _kernel_num_heads" in model
    assert has_kernel_heads == (rule_for(version).rule.head_rule == "native-if-flashinfer-supports")
    if not has_kernel_heads:
        assert "padded_num_heads = 64 if self.n_local_heads <= 64 else self.n_heads" in model


def test_kernel_num_heads_matches_sglang_0523(wheels: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run 0.5.23's own ``_kernel_num_heads`` (and its FlashInfer head check) against ours."""
    model_src = _sg(wheels, "0.5.23", "sglang/srt/models/deepseek_v4.py")
    shim_src = _sg(wheels, "0.5.23", "sglang/kernels/ops/attention/flash_mla_sm120.py")

    def fn(src: str, name: str) -> ast.FunctionDef:
        return next(n for n in ast.walk(ast.parse(src))
                    if isinstance(n, ast.FunctionDef) and n.name == name)

    def build(node: ast.FunctionDef, env: dict[str, Any]) -> Any:
        node = ast.FunctionDef(**{**node.__dict__, "decorator_list": []})
        mod = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
        exec(compile(mod, "<sglang>", "exec"), env)
        return env[node.name]

    heads_table: dict[str, frozenset[int]] = {}
    supports = build(fn(shim_src, "flashinfer_dsv4_decode_supports_num_heads"),
                     {"_flashinfer_dsv4_decode_capabilities": lambda: (64, heads_table["h"])})
    shim = types.ModuleType("sglang.kernels.ops.attention.flash_mla_sm120")
    shim.flashinfer_dsv4_decode_supports_num_heads = supports  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, shim.__name__, shim)
    backend = {"v": "flashinfer"}
    env = {"get_platform": lambda: types.SimpleNamespace(is_sm120=True),
           "SM120_DECODE_MAX_TOKENS": 64,
           "envs": types.SimpleNamespace(SGLANG_SM120_FLASHMLA_BACKEND=types.SimpleNamespace(
               get=lambda: backend["v"]))}
    kernel_num_heads = build(fn(model_src, "_kernel_num_heads"), env)
    rule = rule_for("0.5.23").rule
    for table in (frozenset({8, 16, 32, 64, 128}), frozenset({64}), frozenset()):
        heads_table["h"] = table
        for be in ("flashinfer", "triton"):
            backend["v"] = be
            for attn_tp in (1, 2, 4, 8):
                for n in (1, 6, 50, 64, 65, 600):
                    layer = types.SimpleNamespace(attn_tp_size=attn_tp, n_local_heads=64 // attn_tp,
                                                  n_heads=64)
                    ours = target_kernel_heads(rule, num_heads=64, attn_tp=attn_tp, num_tokens=n,
                                               flashinfer_backend=be == "flashinfer",
                                               flashinfer_heads=table)
                    assert ours == kernel_num_heads(layer, n), (table, be, attn_tp, n)


def test_prefill_fix_text_follows_what_can_help() -> None:
    """The fix names an upgrade only when one exists, asks to cap the running requests (eager
    batches above the captured sizes make the same calls), and says when no batch limit helps."""
    from types import SimpleNamespace

    from dsparkctl.plan_findings import prefill_error_findings

    def call(phase: str) -> SimpleNamespace:
        return SimpleNamespace(phase=phase, num_heads=64, topk=192, extra_topk=0,
                               paths={70: "error", 40: "decode"})

    [f] = prefill_error_findings([call("draft")], upgrade_to="0.6.18")
    assert "flashinfer-python==0.6.18" in f.fix and "--max-running-requests" in f.fix
    [f] = prefill_error_findings([call("draft")], upgrade_to=None)
    assert "no published FlashInfer release" in f.fix and "pip install" not in f.fix
    [f] = prefill_error_findings([call("prefill")], upgrade_to=None)
    assert "no batch limit avoids" in f.fix and "--max-running-requests" not in f.fix


def test_prefill_rows_the_router_serves_are_an_info_and_the_rest_still_an_error() -> None:
    """The router's rule is asked per call with its num_tokens and extra cache; what it takes
    leaves the error, what it leaves stays there, and the fix names install-kernels."""
    from types import SimpleNamespace

    from dsparkctl.findings import Severity
    from dsparkctl.plan_findings import prefill_error_findings, prefill_routed

    draft = SimpleNamespace(phase="draft", num_heads=64, topk=192, extra_topk=0,
                            extra_page_size=64, paths={70: "error", 40: "decode", 96: "error"})
    c4 = SimpleNamespace(phase="verify", num_heads=64, topk=512, extra_topk=512,
                         extra_page_size=64, paths={128: "error"})
    asked: list[tuple[int, ...]] = []

    def routed(h: int, k: int, n: int = 1, e: int = 0, p: int = 64) -> bool:
        asked.append((h, k, n, e, p))
        return k == 192

    found = {f.id: f for f in prefill_error_findings([draft, c4], upgrade_to=None, routed=routed)}
    info, err = found["plan-prefill-routed-to-bundled"], found["plan-prefill-unsupported"]
    assert info.severity is Severity.INFO and "(64, 192)" in info.title
    assert "num_tokens=[70, 96]" in info.detail
    assert err.severity is Severity.ERROR and "topk=512" in err.detail and "192" not in err.detail
    assert "dsparkctl install-kernels" in err.fix
    assert (64, 512, 128, 512, 64) in asked and (64, 192, 70, 0, 64) in asked
    assert prefill_routed(draft, routed) and not prefill_routed(c4, routed)
    assert not prefill_routed(draft, None)
    # without a router every row is the error, as before
    [only] = prefill_error_findings([draft, c4], upgrade_to=None)
    assert only.id == "plan-prefill-unsupported" and "topk=192" in only.detail
