"""The router installed into SGLang's environment (patches/sglang-route-sm120/_dsparkctl_route.py).

Its pure parts run here on CPU torch: settings, the route decision per shape,
and the argument adaptation. The op is a real ``torch.library`` custom op
with the op's schema and a CPU implementation that records what it receives
(``route_fakeop``); library loading goes through the real manifest
reading and sha256 check, with ``torch.ops.load_library`` replaced (there is
no CUDA build of the kernel on this machine).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import route_fakeop  # noqa: E402
from route_fakeop import CALLS  # noqa: E402

ROUTER_SRC = Path(__file__).resolve().parents[1] / "patches/sglang-route-sm120/_dsparkctl_route.py"
FI_0615_PAIRS = [[h, k] for h in (8, 16, 32, 64, 128) for k in (128, 512, 1024)]

@pytest.fixture
def router(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A fresh copy of the router module reading its settings from ``tmp_path``."""
    spec = importlib.util.spec_from_file_location(f"_dsparkctl_route_{id(tmp_path)}", ROUTER_SRC)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "CONFIG_PATH", tmp_path / "_dsparkctl_route.json")
    monkeypatch.setattr(mod, "OP_NAMESPACE", route_fakeop.NAMESPACE)
    monkeypatch.delenv("DSPARKCTL_ROUTE", raising=False)
    CALLS.clear()
    route_fakeop.IMPL.clear()
    return mod


def _config(tmp_path: Path, mode: str = "missing", manifest: Path | None = None,
            fi: dict[str, Any] | None = None) -> None:
    (tmp_path / "_dsparkctl_route.json").write_text(json.dumps({
        "schema": 1, "mode": mode, "manifest": str(manifest) if manifest else None,
        "max_tokens": 64,
        "flashinfer": fi if fi is not None else {"version": "0.6.15.post1", "kind": "pairs",
                                                 "pairs": FI_0615_PAIRS},
    }))


def _kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, router: ModuleType,
            *, sha: str | None = "auto") -> Path:
    lib = tmp_path / "prefix" / "libdsparkctl_kernels.so"
    lib.parent.mkdir()
    lib.write_bytes(b"\x7fELF not really a kernel")
    digest = hashlib.sha256(lib.read_bytes()).hexdigest() if sha == "auto" else sha
    manifest = lib.parent / "manifest.json"
    entry: dict[str, Any] = {"path": lib.name}
    if digest:
        entry["sha256"] = digest
    manifest.write_text(json.dumps({"files": [{"path": "README"}, entry]}))
    loaded: list[str] = []
    monkeypatch.setattr(torch.ops, "load_library", lambda p: loaded.append(p))
    router._loaded = loaded
    return manifest


def _call(num_tokens: int = 5, heads: int = 64, topk: int = 192, *, extra_topk: int = 512,
          d_qk: int = 512, bytes_per_token: int = 584, indices_3d: bool = True,
          softmax_scale: float | None = 0.0625, sink: bool = True) -> dict[str, Any]:
    """Keyword arguments shaped exactly like deepseek_v4_backend's SM120 call."""
    pages = 3
    page_buf = torch.zeros(pages, 256 * bytes_per_token + 64, dtype=torch.uint8)
    # SGLang's k_cache: a (num_pages, 256, 1, bytes) view of the padded page buffer.
    k_cache = page_buf.as_strided((pages, 256, 1, bytes_per_token),
                                  (page_buf.stride(0), bytes_per_token, bytes_per_token, 1))
    extra_buf = torch.zeros(2, 64 * bytes_per_token, dtype=torch.uint8)
    extra = extra_buf.view(2, 64, 1, bytes_per_token)
    idx = torch.randint(-1, pages * 256, (num_tokens, 1, topk) if indices_3d
                        else (num_tokens, topk), dtype=torch.int32)
    kw: dict[str, Any] = {
        "q": torch.randn(num_tokens, 1, heads, d_qk).to(torch.bfloat16),
        "k_cache": k_cache, "head_dim_v": 512, "softmax_scale": softmax_scale,
        "indices": idx, "topk_length": torch.full((num_tokens,), 133, dtype=torch.int32),
        "attn_sink": torch.zeros(heads) if sink else None,
        "extra_k_cache": extra if extra_topk else None,
        "extra_indices_in_kvcache": torch.randint(-1, 128, (num_tokens, 1, extra_topk),
                                                  dtype=torch.int32) if extra_topk else None,
        "extra_topk_length": torch.full((num_tokens,), extra_topk, dtype=torch.int32)
        if extra_topk else None,
    }
    return kw


# --------------------------------------------------------------------------- settings


def test_config_parsing_and_errors(router: ModuleType, tmp_path: Path) -> None:
    _config(tmp_path)
    cfg = router.load_config(router.CONFIG_PATH)
    assert cfg.mode == "missing" and cfg.fi_kind == "pairs" and (64, 128) in cfg.fi_pairs
    (tmp_path / "_dsparkctl_route.json").write_text(json.dumps({"schema": 1, "mode": "sometimes"}))
    with pytest.raises(router.RouteError, match="mode 'sometimes'"):
        router.load_config(router.CONFIG_PATH)
    (tmp_path / "_dsparkctl_route.json").write_text(json.dumps({"schema": 7, "mode": "all"}))
    with pytest.raises(router.RouteError, match="schema 1"):
        router.load_config(router.CONFIG_PATH)
    (tmp_path / "_dsparkctl_route.json").unlink()
    with pytest.raises(router.RouteError, match="patches apply"):
        router.load_config(router.CONFIG_PATH)


def test_route_decision_per_shape(router: ModuleType, tmp_path: Path) -> None:
    _config(tmp_path)
    cfg = router.load_config(router.CONFIG_PATH)
    assert cfg.routes(64, 192) and cfg.routes(32, 256) and cfg.routes(24, 128)
    assert not cfg.routes(64, 128) and not cfg.routes(128, 1024)
    # SGLang's triton/torch backends serve every shape: nothing is missing there.
    assert not cfg.routes(64, 192, backend="triton")
    assert cfg.routes(64, 128, mode="all") and cfg.routes(64, 128, backend="torch", mode="all")
    assert not cfg.routes(64, 192, mode="off")
    _config(tmp_path, fi={"version": "0.7.2.post1", "kind": "envelope", "max_heads": 128,
                          "min_topk": 1})
    env = router.load_config(router.CONFIG_PATH)
    assert not env.routes(64, 192) and not env.routes(7, 100) and env.routes(256, 192)
    _config(tmp_path, fi={"kind": "none"})
    assert router.load_config(router.CONFIG_PATH).routes(64, 128)


def test_dsv4_shape_detection(router: ModuleType) -> None:
    assert router.dsv4_decode_shape(_call()) == (5, 64, 192)
    assert router.dsv4_decode_shape(_call(indices_3d=False)) == (5, 64, 192)
    assert router.dsv4_decode_shape(_call(extra_topk=0, topk=128)) == (5, 64, 128)
    # GLM/DSV3.2 layout (656-byte tokens, d_qk 576) is not ours.
    assert router.dsv4_decode_shape(_call(d_qk=576, bytes_per_token=656)) is None
    assert router.dsv4_decode_shape(_call(bytes_per_token=656)) is None
    kw = _call()
    kw["q"] = kw["q"].expand(5, 2, 64, 512)
    assert router.dsv4_decode_shape(kw) is None


# --------------------------------------------------------------------------- routing


def test_routed_call_passes_exact_arguments(router: ModuleType, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = _kernel(tmp_path, monkeypatch, router)
    _config(tmp_path, manifest=manifest)
    kw = _call(num_tokens=5, heads=64, topk=192, extra_topk=512)
    res = router.maybe_route(kw, "flashinfer")
    assert router._loaded == [str(manifest.parent / "libdsparkctl_kernels.so")]
    [c] = CALLS
    assert c["q"] == ((5, 64, 512), kw["q"].data_ptr())  # squeezed view, no copy
    # The page buffer goes as it is: 256-token pages, same storage, same strides.
    kc = kw["k_cache"]
    assert c["kv"] == ((3, 256, 1, 584), tuple(kc.stride()), kc.data_ptr(), torch.uint8)
    assert c["indices"] == ((5, 192), kw["indices"].data_ptr())
    assert c["topk_length"] == kw["topk_length"].data_ptr()
    assert c["attn_sink"] == kw["attn_sink"].data_ptr()
    assert c["extra_kv"] == ((2, 64, 1, 584), kw["extra_k_cache"].data_ptr())
    assert c["extra_indices"] == (5, 512)
    assert c["extra_topk_length"] == kw["extra_topk_length"].data_ptr()
    assert c["sm_scale"] == 0.0625 and c["flag"] is False
    out, lse = res
    assert lse is None and out.shape == (5, 1, 64, 512) and out.dtype == torch.bfloat16
    assert torch.equal(out, (kw["q"].float() * 2).to(torch.bfloat16))


def test_default_scale_and_no_sink_no_extra(router: ModuleType, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, mode="all", manifest=_kernel(tmp_path, monkeypatch, router))
    kw = _call(num_tokens=1, heads=16, topk=128, extra_topk=0, softmax_scale=None, sink=False)
    out, lse = router.maybe_route(kw, "flashinfer")
    [c] = CALLS
    assert c["sm_scale"] == pytest.approx(512 ** -0.5)
    assert c["attn_sink"] is None and c["extra_kv"] is None and c["extra_indices"] is None
    assert out.shape == (1, 1, 16, 512) and lse is None


def test_declines_what_it_should_not_take(router: ModuleType, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, manifest=_kernel(tmp_path, monkeypatch, router))
    assert router.maybe_route(_call(heads=64, topk=128), "flashinfer") is None  # FI serves it
    assert router.maybe_route(_call(num_tokens=65), "flashinfer") is None  # prefill-sized
    assert router.maybe_route(_call(d_qk=576, bytes_per_token=656), "flashinfer") is None
    assert router.maybe_route(_call(), "triton") is None
    monkeypatch.setenv("DSPARKCTL_ROUTE", "off")
    assert router.maybe_route(_call(), "flashinfer") is None
    assert CALLS == []
    monkeypatch.setenv("DSPARKCTL_ROUTE", "all")
    assert router.maybe_route(_call(heads=64, topk=128), "flashinfer") is not None
    assert len(CALLS) == 1


def test_missing_kernel_fails_loudly_for_shapes_flashinfer_lacks(router: ModuleType,
                                                                 tmp_path: Path) -> None:
    _config(tmp_path, manifest=tmp_path / "nowhere" / "manifest.json")
    with pytest.raises(router.RouteError, match=r"heads=64, topk=192.*dsparkctl install-kernels"):
        router.maybe_route(_call(heads=64, topk=192), "flashinfer")


def test_missing_kernel_in_all_mode_leaves_servable_shapes_to_sglang(router: ModuleType,
                                                                     tmp_path: Path) -> None:
    _config(tmp_path, mode="all", manifest=None)
    assert router.maybe_route(_call(heads=64, topk=128), "flashinfer") is None
    assert router.maybe_route(_call(heads=64, topk=192), "triton") is None
    with pytest.raises(router.RouteError, match="install-kernels"):
        router.maybe_route(_call(heads=64, topk=192), "flashinfer")


def test_kernel_library_hash_mismatch_is_refused(router: ModuleType, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = _kernel(tmp_path, monkeypatch, router, sha="0" * 64)
    _config(tmp_path, manifest=manifest)
    with pytest.raises(router.RouteError, match="manifest says 0000"):
        router.maybe_route(_call(), "flashinfer")
    assert router._loaded == []


def test_router_imports_without_torch_and_self_checks(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "_dsparkctl_route.py").write_bytes(ROUTER_SRC.read_bytes())
    _config(site)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import _dsparkctl_route as r; "
            "print(r.self_check()['mode'], 'torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-I", "-c", code, str(site)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["missing", "False"]


def test_a_missing_or_broken_config_never_breaks_calls_it_would_not_take(
        router: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without settings (deleted, or garbage) the router fails only where it would route:
    DSPARKCTL_ROUTE=off and non-DSV4 calls still reach SGLang untouched."""
    assert router.maybe_route(_call(d_qk=576, bytes_per_token=656), "flashinfer") is None
    with pytest.raises(router.RouteError, match="is missing"):
        router.maybe_route(_call(), "flashinfer")
    monkeypatch.setenv("DSPARKCTL_ROUTE", "off")
    assert router.maybe_route(_call(), "flashinfer") is None
    monkeypatch.delenv("DSPARKCTL_ROUTE")
    for bad in ({"schema": 1, "mode": "missing", "flashinfer": "0.6.17"},
                {"schema": 1, "mode": "missing", "max_tokens": None},
                {"schema": 1, "mode": "missing", "flashinfer": {"kind": "pairs",
                                                                "pairs": [[64]]}}):
        (tmp_path / "_dsparkctl_route.json").write_text(json.dumps(bad))
        with pytest.raises(router.RouteError, match="malformed value"):
            router.load_config(tmp_path / "_dsparkctl_route.json")


@pytest.mark.parametrize("manifest_text", ["null", "[]", "3"])
def test_a_manifest_that_is_not_an_object_leaves_servable_shapes_to_sglang(
        router: ModuleType, tmp_path: Path, manifest_text: str) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(manifest_text)
    _config(tmp_path, mode="all", manifest=manifest)
    assert router.maybe_route(_call(heads=64, topk=128), "flashinfer") is None  # FI serves it
    with pytest.raises(router.RouteError, match="not a JSON object"):
        router.maybe_route(_call(heads=64, topk=192), "flashinfer")


# --------------------------------------------------------------------------- prefill-sized calls


def _fi(version: str) -> dict[str, Any]:
    """What install-kernels records for a published FlashInfer release (decode + prefill)."""
    from dsparkctl.flashinfer_tables import known_support
    from dsparkctl.routing import from_support

    support = known_support(version)
    assert support is not None
    return json.loads(json.dumps(from_support(support)))  # as read back from the file


def test_prefill_sized_calls_flashinfer_rejects_are_routed_in_every_mode(
        router: ModuleType, tmp_path: Path) -> None:
    """FlashInfer 0.6.15's prefill dispatcher serves topk {128, 512, 1024, 2048} alone and topk
    128 with an extra cache; DSpark's 192 and a c4 layer's 512 + extra are rejected there."""
    _config(tmp_path, fi=_fi("0.6.15.post1"))
    cfg = router.load_config(router.CONFIG_PATH)
    for mode in ("missing", "all"):
        assert cfg.routes_call(70, 64, 192, mode=mode)
        assert cfg.routes_call(300, 64, 512, 512, 64, mode=mode)  # dual needs topk 128
        assert cfg.routes_call(300, 24, 512, mode=mode)  # no 24-head prefill kernel
        assert not cfg.routes_call(70, 64, 512, mode=mode)  # FlashInfer's prefill serves these
        assert not cfg.routes_call(70, 64, 128, 512, 64, mode=mode)
        assert cfg.routes_call(70, 64, 128, 512, 32, mode=mode)  # extra page 32: not before 0.7.2
    assert not cfg.routes_call(70, 64, 192, mode="off")
    assert not cfg.routes_call(70, 64, 192, backend="triton")
    # decode-sized calls keep the decode rule
    assert cfg.routes_call(64, 64, 192) and not cfg.routes_call(64, 64, 128)
    assert cfg.routes_call(64, 64, 128, mode="all") and not cfg.routes_call(70, 64, 128, mode="all")

    _config(tmp_path, fi=_fi("0.7.2.post1"))
    new = router.load_config(router.CONFIG_PATH)
    assert not new.routes_call(70, 64, 192) and new.routes_call(70, 64, 200)  # topk % 64

    # settings from before prefill routing: no prefill-sized call is routed, as then
    _config(tmp_path)
    assert not router.load_config(router.CONFIG_PATH).routes_call(70, 64, 192)
    # FlashInfer's prefill coverage not known (no SM120 module): the bundled kernel takes them
    _config(tmp_path, fi={"kind": "none", "prefill": None})
    assert router.load_config(router.CONFIG_PATH).routes_call(70, 64, 512)


def test_router_prefill_rule_equals_dsparkctls(router: ModuleType, tmp_path: Path) -> None:
    """The router cannot import dsparkctl: its copy of the prefill rule must agree with
    ``PrefillSupport.serves`` on every published release, shape by shape."""
    from dsparkctl.flashinfer_tables import known_support, known_versions

    checked = 0
    for version in known_versions():
        support = known_support(version)
        if support is None:
            continue
        _config(tmp_path, fi=_fi(version))
        cfg = router.load_config(router.CONFIG_PATH)
        for h in (1, 7, 8, 16, 24, 32, 64, 96, 128):
            for k in (64, 100, 128, 192, 256, 320, 512, 1024, 2048):
                for extra in (0, 128, 512):
                    for page in (2, 32, 64, 256):
                        assert cfg.prefill_serves(h, k, extra, page) == \
                            support.prefill.serves(h, k, extra, page), (version, h, k, extra, page)
                        checked += 1
    assert checked > 10_000


def test_prefill_sized_call_reaches_the_op_with_its_extra_cache(
        router: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, manifest=_kernel(tmp_path, monkeypatch, router), fi=_fi("0.6.15.post1"))
    kw = _call(num_tokens=96, heads=64, topk=192, extra_topk=512)
    out, lse = router.maybe_route(kw, "flashinfer")
    [c] = CALLS
    assert c["q"] == ((96, 64, 512), kw["q"].data_ptr()) and c["extra_indices"] == (96, 512)
    assert out.shape == (96, 1, 64, 512) and lse is None
    assert router.extra_shape(kw) == (512, 64) and router.extra_shape(_call(extra_topk=0)) == (0, 64)
    # a shape FlashInfer's prefill serves stays with SGLang
    assert router.maybe_route(_call(num_tokens=96, heads=64, topk=512, extra_topk=0),
                              "flashinfer") is None
    assert len(CALLS) == 1


def test_missing_kernel_fails_loudly_for_prefill_sized_shapes_flashinfer_rejects(
        router: ModuleType, tmp_path: Path) -> None:
    _config(tmp_path, mode="all", manifest=None, fi=_fi("0.6.15.post1"))
    with pytest.raises(router.RouteError,
                       match=r"heads=64, topk=192.*no correct prefill kernel \(num_tokens=80, extra_topk=512"):
        router.maybe_route(_call(num_tokens=80), "flashinfer")
    assert router.maybe_route(_call(num_tokens=80, topk=512, extra_topk=0), "flashinfer") is None


def test_route_rule_asks_the_installed_router_per_call(router: ModuleType, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from dsparkctl.routing import RouteRule

    _config(tmp_path, fi=_fi("0.6.15.post1"))
    rule = RouteRule(router.load_config(router.CONFIG_PATH))
    assert rule(64, 192) and rule(64, 192, 70) and not rule(64, 512, 70)
    assert rule(64, 512, 70, 512, 64) and not rule(256, 192)
    # a router installed by an older dsparkctl knows only decode-sized calls
    old = RouteRule(SimpleNamespace(routes=lambda h, k, mode=None: k == 192))
    assert old(64, 192) and not old(64, 192, 70)


def test_prefill_sized_bench_rows_are_calls_the_router_takes(router: ModuleType,
                                                            tmp_path: Path) -> None:
    """bench_kernel.py --prefill-sized times what the router sends to the bundled kernel on
    FlashInfer 0.6.17: every row must be such a call, or the numbers describe nothing served."""
    import benchscripts

    rows = benchscripts.load("bench_kernel").prefill_sized_shapes()
    assert rows and {r["kind"] for r in rows} == {"dspark-prefill-sized", "prefill-chunk"}
    taken = []
    for version in ("0.6.17", "0.6.18"):
        _config(tmp_path, fi=_fi(version))
        cfg = router.load_config(router.CONFIG_PATH)
        taken.append([cfg.routes_call(r["T"], r["H"], r["topk"], r["extra"], 64) for r in rows])
    assert all(r["T"] > 64 for r in rows)
    assert all(a or b for a, b in zip(*taken, strict=True)), rows
    # 16-head dual chunks: served right on 0.6.17, routed on 0.6.18 for its defect alone
    assert [(r["H"], r["extra"]) for r, a, b in zip(rows, *taken, strict=True)
            if r["kind"] == "prefill-chunk" and not a] == [(16, 512), (16, 512), (16, 8256)]


def test_releases_whose_dual_prefill_reads_past_the_length_route_those_calls(
        router: ModuleType, tmp_path: Path) -> None:
    """FlashInfer 0.6.18 serves dual-cache prefill but reads index lanes past topk_length
    (flashinfer #5095: every prompt > 64 tokens corrupted under SGLang): those calls go to the
    bundled kernel; single-cache ones and 0.7.0's fixed kernel stay with FlashInfer."""
    from dsparkctl import flashinfer_tables as tables

    assert router.DUAL_READS_PAST_LENGTH == tables.DUAL_READS_PAST_LENGTH
    assert tables.prefill_defects("0.6.18.post1") == [tables.DUAL_READS_PAST_LENGTH]
    assert tables.prefill_defects("0.6.17") == tables.prefill_defects("0.7.0") == []
    assert tables.prefill_defects("not-a-version") == tables.prefill_defects(None) == []
    _config(tmp_path, fi=_fi("0.6.18"))
    cfg = router.load_config(router.CONFIG_PATH)
    assert cfg.prefill_serves(16, 128, 512, 64)  # the dispatcher takes it...
    assert cfg.routes_call(4096, 16, 128, 512, 64)  # ...and answers wrongly: routed
    assert cfg.routes_call(70, 64, 128, 512, 2, mode="all")
    assert not cfg.routes_call(4096, 16, 128) and not cfg.routes_call(70, 64, 512)
    assert not cfg.routes_call(70, 64, 128, 512, 64, mode="off")
    assert not cfg.routes_call(70, 64, 128, 512, 64, backend="triton")
    assert not cfg.routes_call(32, 64, 128, 512, 64)  # decode-sized: the decode kernel is fine
    _config(tmp_path, fi=_fi("0.7.0"))
    assert not router.load_config(router.CONFIG_PATH).routes_call(4096, 16, 128, 512, 64)


def test_without_the_kernel_a_defective_prefill_call_is_refused_not_handed_back(
        router: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """0.6.18 answers dual-cache prefill-sized calls wrongly: with the bundled kernel gone the
    router raises for them rather than give FlashInfer a call it corrupts; the decode-sized
    call of the same shape (which FlashInfer serves right) goes back with a warning of its own."""
    _config(tmp_path, mode="all", manifest=tmp_path / "gone" / "manifest.json", fi=_fi("0.6.18"))
    with caplog.at_level("WARNING", logger="dsparkctl.route"):
        assert router.maybe_route(_call(num_tokens=8, heads=16, topk=128), "flashinfer") is None
    assert "num_tokens=8" in caplog.text
    with pytest.raises(router.RouteError, match=r"no correct prefill kernel \(num_tokens=96"):
        router.maybe_route(_call(num_tokens=96, heads=16, topk=128), "flashinfer")
    # single-cache prefill-sized calls are served right there: back to FlashInfer, warned once
    caplog.clear()
    with caplog.at_level("WARNING", logger="dsparkctl.route"):
        assert router.maybe_route(_call(num_tokens=96, heads=16, topk=128, extra_topk=0),
                                  "flashinfer") is None
    assert router.maybe_route(_call(num_tokens=96, heads=16, topk=128, extra_topk=0),
                              "flashinfer") is None  # not routed at all: no kernel needed
    assert CALLS == []


def test_a_defects_value_that_is_not_a_list_is_a_malformed_setting(router: ModuleType,
                                                                   tmp_path: Path) -> None:
    fi = _fi("0.6.18")
    fi["prefill"]["defects"] = "dual-reads-past-length"
    _config(tmp_path, fi=fi)
    with pytest.raises(router.RouteError, match="malformed value"):
        router.load_config(router.CONFIG_PATH)


def test_route_rule_obeys_the_servers_override(router: ModuleType, tmp_path: Path) -> None:
    from dsparkctl.routing import RouteRule

    _config(tmp_path, fi=_fi("0.6.15.post1"))
    cfg = router.load_config(router.CONFIG_PATH)
    assert not RouteRule(cfg)(64, 128) and RouteRule(cfg, mode="all")(64, 128)
    assert not RouteRule(cfg, mode="off")(64, 192) and not RouteRule(cfg, mode="off")(64, 192, 70)

