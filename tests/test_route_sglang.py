"""The patched SGLang entry point itself, on CPU: routed calls reach the op, others do not.

The real ``flash_mla_with_kvcache_sm120`` of the sglang wheel, patched by the
routing patch, is called with DSV4 decode tensors. The op is a CPU stand-in
that computes dsparkctl's reference semantics on the caches exactly as it
receives them (SGLang's 256-token pages, padded stride, no page split). The
routed answer must equal SGLang's own torch fallback on the same inputs: that
checks the whole argument adaptation (squeezes, page layout, lengths, sink,
extra cache, scale) numerically, not just by shape.

Importing SGLang's module needs its import-time dependencies (triton, orjson,
pybase64, requests, pillow, starlette, msgspec, pyzmq, tqdm, ipython,
aiohttp for 0.5.23); without them the test skips and names the missing one.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

import route_fakeop  # noqa: E402
from route_fakeop import CALLS  # noqa: E402

from dsparkctl.kernel import layout  # noqa: E402
from dsparkctl.patching import Target, apply_patch, revert  # noqa: E402

pytestmark = pytest.mark.network
MODULE = "sglang.kernels.ops.attention.flash_mla_sm120"
FI_0615_PAIRS = [[h, k] for h in (8, 16, 32, 64, 128) for k in (128, 512, 1024)]


# 0.5.23 only: the older wheels also import torchvision from this module's chain.
@pytest.fixture(params=["0.5.23"])
def patched(request: pytest.FixtureRequest, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType]]:
    import realwheels

    lib = tmp_path / "prefix" / "libkernel.so"
    lib.parent.mkdir()
    lib.write_bytes(b"stand-in")
    manifest = lib.parent / "manifest.json"
    manifest.write_text(json.dumps({"library": lib.name,
                                    "library_sha256": hashlib.sha256(b"stand-in").hexdigest()}))
    site = realwheels.site_packages(tmp_path / "site", [("sglang", request.param)], copy=True,
                                    only=["sglang"])
    target = Target(site)
    apply_patch("sglang-route-sm120", target, {
        "manifest": str(manifest), "route": "all",
        "flashinfer_decode": {"version": "0.6.15.post1", "kind": "pairs",
                              "pairs": FI_0615_PAIRS}})
    # SGLang's torch fallback is the comparison: it runs on CPU.
    monkeypatch.setenv("SGLANG_SM120_FLASHMLA_BACKEND", "torch")
    monkeypatch.delenv("DSPARKCTL_ROUTE", raising=False)
    monkeypatch.setattr(torch.ops, "load_library", lambda path: None)
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("sglang",
                                                                          "_dsparkctl_route")}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(site))
    try:
        try:
            mod = importlib.import_module(MODULE)
        except ImportError as exc:
            pytest.skip(f"sglang {request.param}'s module cannot be imported here ({exc}); "
                        f"it needs SGLang's import-time dependencies")
        assert Path(mod.__file__).resolve().is_relative_to(site.resolve())
        router = importlib.import_module("_dsparkctl_route")
        monkeypatch.setattr(router, "OP_NAMESPACE", route_fakeop.NAMESPACE)
        CALLS.clear()
        route_fakeop.IMPL[:] = [route_fakeop.reference_impl]
        yield mod, router
    finally:
        route_fakeop.IMPL.clear()
        sys.path.remove(str(site))
        for k in [k for k in sys.modules if k.split(".")[0] in ("sglang", "_dsparkctl_route")]:
            del sys.modules[k]
        sys.modules.update(saved)
        revert(target)


def _draft_call(t: int = 5, h: int = 64, topk: int = 192, seed: int = 0) -> dict[str, object]:
    """A DSpark draft call as deepseek_v4_backend makes it (bs 1, gamma 5)."""
    gen = torch.Generator().manual_seed(seed)
    pad = layout.sglang_page_bytes(256) - layout.logical_page_bytes(256)
    cache = layout.quantize_kv(torch.randn(3 * 256, 512, generator=gen), 256, page_stride_pad=pad)
    extra = layout.quantize_kv(torch.randn(4 * 64, 512, generator=gen), 64)
    idx = torch.randint(0, 3 * 256, (t, 1, topk), generator=gen, dtype=torch.int32)
    idx[:, :, 133:] = -1
    return dict(
        q=torch.randn(t, 1, h, 512, generator=gen).to(torch.bfloat16),
        k_cache=cache, head_dim_v=512, softmax_scale=512 ** -0.5, indices=idx,
        # Per-token valid lengths below the -1 padding: topk_length must bound the read.
        topk_length=torch.tensor([133 - (i % 5) for i in range(t)], dtype=torch.int32),
        # Near the rows' lse (~6 here), so the sink visibly scales the output.
        attn_sink=torch.randn(h, generator=gen) + 6.0,
        extra_k_cache=extra,
        extra_indices_in_kvcache=torch.randint(-1, 4 * 64, (t, 1, 128), generator=gen,
                                               dtype=torch.int32),
        extra_topk_length=torch.full((t,), 100, dtype=torch.int32),
    )


def test_routed_call_equals_sglangs_own_torch_path(patched: tuple[ModuleType, ModuleType],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    mod, _ = patched
    call = _draft_call()
    routed_out, routed_lse = mod.flash_mla_with_kvcache_sm120(**call)
    assert len(CALLS) == 1 and routed_lse is None
    assert routed_out.shape == (5, 1, 64, 512) and routed_out.dtype == torch.bfloat16
    kv = call["k_cache"]
    assert CALLS[0]["kv"][:3] == (tuple(kv.shape), tuple(kv.stride()), kv.data_ptr())

    monkeypatch.setenv("DSPARKCTL_ROUTE", "off")
    own_out, own_lse = mod.flash_mla_with_kvcache_sm120(**call)
    assert len(CALLS) == 1, "DSPARKCTL_ROUTE=off must leave the call to SGLang"
    assert own_lse is not None  # SGLang's torch path, not the router
    err = (routed_out.float() - own_out.float()).abs()
    assert bool((err <= 2e-3 + 1e-2 * own_out.float().abs()).all()), float(err.max())
    assert float(own_out.float().abs().max()) > 0.05  # not a trivial all-zero comparison


def test_missing_mode_leaves_sglangs_torch_backend_alone(patched: tuple[ModuleType, ModuleType],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    mod, _ = patched
    monkeypatch.setenv("DSPARKCTL_ROUTE", "missing")
    _, lse = mod.flash_mla_with_kvcache_sm120(**_draft_call())
    assert CALLS == [] and lse is not None


def test_non_dsv4_and_prefill_sized_calls_are_not_routed(patched: tuple[ModuleType, ModuleType]
                                                         ) -> None:
    mod, _ = patched
    big = _draft_call(t=70)
    out, lse = mod.flash_mla_with_kvcache_sm120(**big)
    assert CALLS == [] and lse is not None and out.shape[0] == 70


def test_prefill_sized_call_flashinfer_rejects_is_routed_and_equals_sglangs_torch_path(
        patched: tuple[ModuleType, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    """A 70-token DSpark call with an extra cache (verify at bs >= 12) goes, on the FlashInfer
    backend, to FlashInfer's prefill dispatcher, which rejects topk 192 with an extra cache up
    to 0.6.17: with the prefill coverage recorded, the router serves it instead, and its answer
    equals SGLang's own torch path on the same inputs."""
    from dsparkctl.flashinfer_tables import known_support
    from dsparkctl.routing import from_support, route_config, route_config_bytes

    mod, router = patched
    settings = json.loads(router.CONFIG_PATH.read_text())
    support = known_support("0.6.15.post1")
    assert support is not None
    router.CONFIG_PATH.write_bytes(route_config_bytes(route_config(
        {"route": "missing", "manifest": settings["manifest"]}, from_support(support),
        settings["patch"])))
    monkeypatch.setattr(mod, "_sm120_default_backend", "flashinfer")
    call = _draft_call(t=70)
    routed_out, routed_lse = mod.flash_mla_with_kvcache_sm120(**call)
    assert len(CALLS) == 1 and routed_lse is None and routed_out.shape == (70, 1, 64, 512)

    monkeypatch.setattr(mod, "_sm120_default_backend", "torch")
    own_out, own_lse = mod.flash_mla_with_kvcache_sm120(**call)
    assert len(CALLS) == 1 and own_lse is not None  # prefill-sized on torch: not routed
    err = (routed_out.float() - own_out.float()).abs()
    assert bool((err <= 2e-3 + 1e-2 * own_out.float().abs()).all()), float(err.max())
    assert float(own_out.float().abs().max()) > 0.05
