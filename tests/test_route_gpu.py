"""GPU: SGLang's own entry point, patched, serves a DSpark draft call with the bundled kernel.

Issue 4's GPU acceptance: the real sglang 0.5.23 wheel (copied, patched by the
routing patch), a kernel library built for this GPU and named by a manifest,
and a DSpark-draft-shaped call (64 heads, topk 192, SGLang's 256-token pages
with their padded stride, a c4 extra cache) through
``flash_mla_with_kvcache_sm120``. The result must be the bundled kernel's
(bit-identical to calling the op directly on the same inputs) and must match
the fp64 reference to FlashMLA's tolerance, with FlashInfer made unimportable
for the duration of the call. The target module needs SGLang's import-time
dependencies (triton and ``sglang.srt``'s); without them the test skips and
says which one is missing.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dsparkctl.kernel import layout, reference  # noqa: E402
from dsparkctl.patching import Target, apply_patch, revert  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.network]

FI_0617_PAIRS = [[h, k] for h in (8, 16, 32, 64, 128) for k in (128, 512, 1024)]


class _NoFlashInfer:
    """A meta-path finder that makes ``import flashinfer`` fail while installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "flashinfer" or name.startswith("flashinfer."):
            raise ImportError(f"{name} is blocked: the routed path must not need FlashInfer")
        return None


def _kernel_library() -> Path:
    env = os.environ.get("DSPARKCTL_KERNEL_SO")
    if env:
        return Path(env)
    from dsparkctl.kernel import build

    return build.build_cached()


def _fi_0617_with_prefill() -> dict:
    from dsparkctl.flashinfer_tables import known_support
    from dsparkctl.routing import from_support

    support = known_support("0.6.17")
    assert support is not None
    return from_support(support)


@pytest.mark.parametrize("t", [5, 96], ids=["draft-5", "prefill-sized-96"])
def test_patched_sglang_routes_dspark_draft_call_to_bundled_kernel(tmp_path: Path, t: int) -> None:
    """t = 5: a draft call FlashInfer 0.6.17 has no decode kernel for. t = 96: a verify-sized
    call of 16 requests, which SGLang sends to FlashInfer's prefill dispatcher, whose 0.6.17
    table rejects topk 192 with an extra cache: routed with the recorded prefill coverage."""
    import realwheels

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    so = _kernel_library()
    manifest = tmp_path / "prefix" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"library": str(so),
                                    "library_sha256": hashlib.sha256(so.read_bytes()).hexdigest()}))
    site = realwheels.site_packages(tmp_path / "site", [("sglang", "0.5.23")], copy=True,
                                    only=["sglang"])
    target = Target(site)
    res = apply_patch("sglang-route-sm120", target, {
        "manifest": str(manifest), "route": "missing",
        # FlashInfer 0.6.17's table: (64, 192) has no decode kernel, so the call is routed.
        "flashinfer_decode": {"version": "0.6.17", "kind": "pairs", "pairs": FI_0617_PAIRS}
        if t <= 64 else _fi_0617_with_prefill()})
    assert res.changed

    sys.path.insert(0, str(site))
    saved = {k: v for k, v in sys.modules.items() if k == "sglang" or k.startswith("sglang.")}
    for k in saved:
        del sys.modules[k]
    try:
        try:
            mod = importlib.import_module("sglang.kernels.ops.attention.flash_mla_sm120")
        except ImportError as exc:
            pytest.skip(f"the patched sglang module cannot be imported here: {exc}")
        assert Path(mod.__file__).resolve().is_relative_to(site.resolve())

        gen = torch.Generator(device="cuda").manual_seed(4)
        h, topk, gamma, prefix = 64, 192, 5, 700
        pad = layout.sglang_page_bytes(256) - layout.logical_page_bytes(256)
        kv = torch.randn(4 * 256, 512, generator=gen, device="cuda")
        cache = layout.quantize_kv(kv, 256, page_stride_pad=pad)
        ekv = torch.randn(6 * 64, 512, generator=gen, device="cuda")
        extra = layout.quantize_kv(ekv, 64)
        q = torch.randn(t, 1, h, 512, generator=gen, device="cuda").to(torch.bfloat16)
        idx = torch.randint(0, 4 * 256, (t, 1, topk), generator=gen, device="cuda",
                            dtype=torch.int32)
        valid = min(prefix, 128) + gamma
        idx[:, :, valid:] = -1
        topk_length = torch.full((t,), valid, dtype=torch.int32, device="cuda")
        eidx = torch.randint(-1, 6 * 64, (t, 1, 512), generator=gen, device="cuda",
                             dtype=torch.int32)
        elen = torch.full((t,), 400, dtype=torch.int32, device="cuda")
        sink = torch.randn(h, generator=gen, device="cuda")
        scale = 512 ** -0.5
        call = dict(q=q, k_cache=cache, head_dim_v=512, softmax_scale=scale, indices=idx,
                    topk_length=topk_length, attn_sink=sink, extra_k_cache=extra,
                    extra_indices_in_kvcache=eidx, extra_topk_length=elen)

        blocker = _NoFlashInfer()
        sys.meta_path.insert(0, blocker)
        try:
            out, lse = mod.flash_mla_with_kvcache_sm120(**call)
            torch.cuda.synchronize()
        finally:
            sys.meta_path.remove(blocker)
        assert lse is None and out.shape == (t, 1, h, 512) and out.dtype == torch.bfloat16
        assert not any(k.startswith("flashinfer.mla") for k in sys.modules)

        direct, _ = torch.ops.dsparkctl.sparse_mla_decode(
            q.squeeze(1), cache, idx.squeeze(1), topk_length, sink, extra, eidx.squeeze(1), elen,
            scale, False)
        assert torch.equal(out.squeeze(1), direct)

        ref_out, _ = reference.sparse_mla_decode_ref(
            q.squeeze(1), cache, idx.squeeze(1), topk_length=topk_length, attn_sink=sink,
            extra_kv_cache=extra, extra_indices=eidx.squeeze(1), extra_topk_length=elen,
            sm_scale=scale, compute_dtype=torch.float64)
        o = out.squeeze(1).double().cpu()
        r = ref_out.double().cpu()
        err = (o - r).abs()
        assert bool((err <= 1e-3 + (2 / 128) * r.abs()).all()), float(err.max())
    finally:
        sys.path.remove(str(site))
        for k in [k for k in sys.modules if k == "sglang" or k.startswith("sglang.")]:
            del sys.modules[k]
        sys.modules.update(saved)
        sys.modules.pop("_dsparkctl_route", None)
        revert(target)
