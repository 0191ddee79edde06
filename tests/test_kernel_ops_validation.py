"""Argument validation of dsparkctl.kernel.ops (runs before anything touches CUDA)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dsparkctl.kernel import layout, ops  # noqa: E402


def _args(t: int = 3, h: int = 8, topk: int = 16):
    q = torch.zeros(t, h, 512, dtype=torch.bfloat16)
    cache = layout.quantize_kv(torch.randn(40, 512), 16)
    idx = torch.zeros(t, topk, dtype=torch.int32)
    return q, cache, idx


def _call(**over):
    q, cache, idx = _args()
    kw = {"q": q, "kv_cache": cache, "indices": idx}
    kw.update(over)
    return ops.sparse_mla_decode(kw.pop("q"), kw.pop("kv_cache"), kw.pop("indices"), **kw)


@pytest.mark.parametrize(
    ("over", "exc", "msg"),
    [
        ({"q": torch.zeros(3, 8, 512, dtype=torch.float16)}, TypeError, "q must be bfloat16"),
        ({"q": torch.zeros(3, 8, 576, dtype=torch.bfloat16)}, ValueError, r"q must be \[T, H, 512\]"),
        ({"q": torch.zeros(3, 129, 512, dtype=torch.bfloat16)}, ValueError, "1..128"),
        ({"q": torch.zeros(3, 512, 8, dtype=torch.bfloat16).transpose(1, 2)}, ValueError, "contiguous last dim"),
        ({"kv_cache": torch.zeros(4, 16, 1, 584, dtype=torch.float32)}, TypeError, "uint8 or float8_e4m3fn"),
        ({"kv_cache": torch.zeros(4, 16, 1, 500, dtype=torch.uint8)}, ValueError, "page stride"),
        ({"indices": torch.zeros(3, 16, dtype=torch.int64)}, TypeError, "indices must be int32"),
        ({"indices": torch.zeros(2, 16, dtype=torch.int32)}, ValueError, "T=3"),
        ({"indices": torch.zeros(3, 2, 16, dtype=torch.int32)}, ValueError, r"\[T, 1, topk\]"),
        ({"indices": torch.zeros(3, 0, dtype=torch.int32)}, ValueError, "topk >= 1"),
        ({"indices": torch.zeros(16, 3, dtype=torch.int32).t()}, ValueError, "contiguous last dim"),
        ({"topk_length": torch.zeros(3, dtype=torch.int64)}, TypeError, "topk_length must be int32"),
        ({"topk_length": torch.zeros(4, dtype=torch.int32)}, ValueError, r"topk_length must be \[T\]"),
        ({"attn_sink": torch.zeros(8, dtype=torch.bfloat16)}, TypeError, "attn_sink must be float32"),
        ({"attn_sink": torch.zeros(7)}, ValueError, r"attn_sink must be \[H\]"),
        ({"extra_indices": torch.zeros(3, 4, dtype=torch.int32)}, ValueError, "given together"),
        ({"extra_topk_length": torch.zeros(3, dtype=torch.int32)}, ValueError, "without extra"),
        ({"q": [[0.0]]}, TypeError, "torch.Tensor"),
    ],
)
def test_bad_arguments_raise_clear_errors(over, exc, msg) -> None:
    with pytest.raises(exc, match=msg):
        _call(**over)


def test_extra_cache_is_validated_like_the_main_one() -> None:
    extra = layout.quantize_kv(torch.randn(8, 512), 2)
    with pytest.raises(TypeError, match="extra_indices must be int32"):
        _call(extra_kv_cache=extra, extra_indices=torch.zeros(3, 4, dtype=torch.int16))
    with pytest.raises(ValueError, match="extra_topk_length"):
        _call(
            extra_kv_cache=extra,
            extra_indices=torch.zeros(3, 4, dtype=torch.int32),
            extra_topk_length=torch.zeros(5, dtype=torch.int32),
        )


def test_valid_cpu_arguments_fail_only_on_the_device() -> None:
    # Everything else is right, so the one complaint left is where the tensors live.
    q, cache, idx = _args()
    with pytest.raises(ValueError, match="CUDA device"):
        ops.sparse_mla_decode(
            q, cache, idx.unsqueeze(1), topk_length=torch.zeros(3, dtype=torch.int32), attn_sink=torch.zeros(8)
        )


def test_float8_view_and_padded_stride_are_accepted_up_to_the_device_check() -> None:
    q, _, idx = _args()
    cache = layout.quantize_kv(torch.randn(40, 512), 16, page_stride_pad=layout.sglang_page_bytes(16) - 16 * 584)
    with pytest.raises(ValueError, match="CUDA device"):
        ops.sparse_mla_decode(q, cache.view(torch.float8_e4m3fn), idx)


def test_cfg_rejects_bad_config_and_splits() -> None:
    q, cache, idx = _args()
    with pytest.raises(ValueError, match="config must be"):
        ops.sparse_mla_decode_cfg(q, cache, idx, config=8)
    with pytest.raises(ValueError, match="num_splits"):
        ops.sparse_mla_decode_cfg(q, cache, idx, num_splits=65)


def test_validation_traces_fake_cuda_tensors_without_touching_an_address() -> None:
    """torch.compile traces the wrapper with fake tensors, which have no address: validation
    must pass without reading one (the op checks the real address at run time) and still
    reject what the shapes and strides alone show."""
    import warnings

    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), warnings.catch_warnings():
        warnings.simplefilter("error")  # "Accessing the data pointer of FakeTensor" fails here
        q = torch.empty(2, 8, 512, dtype=torch.bfloat16, device="cuda")
        cache = torch.empty(3, 64, 1, 584, dtype=torch.uint8, device="cuda")
        idx = torch.empty(2, 64, dtype=torch.int32, device="cuda")
        ops.validate(q, cache, idx)
        with pytest.raises(ValueError, match="multiples of 8"):
            buf = torch.empty(3 * (64 * 584 + 4), dtype=torch.uint8, device="cuda")
            odd = buf.as_strided((3, 64, 1, 584), (64 * 584 + 4, 584, 584, 1))
            ops.validate(q, odd, idx)  # page stride 37,380: not a multiple of 8


def test_the_wrapper_compiles_as_one_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile(fullgraph=True) of a caller of ``ops.sparse_mla_decode``: no graph break
    (validation and the loader stay out of the trace), and the compiled call reaches the op
    (here a CPU stand-in under its own namespace) with the caller's tensors and scale."""
    import route_fakeop

    monkeypatch.setattr(ops, "OP_NAMESPACE", route_fakeop.NAMESPACE)
    route_fakeop.CALLS.clear()
    route_fakeop.IMPL.clear()
    q, cache, idx = _args()

    def f(q: torch.Tensor, c: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        o, lse = ops.sparse_mla_decode(q, c, i, sm_scale=0.05)
        return o.float() * 2.0, lse

    torch._dynamo.reset()
    try:
        got = torch.compile(f, fullgraph=True, backend="eager")(q, cache, idx)
    finally:
        torch._dynamo.reset()
    want_out, want_lse = route_fakeop.echo_impl(q)
    assert torch.equal(got[0], want_out.float() * 2.0) and torch.equal(got[1], want_lse)
    [call] = route_fakeop.CALLS
    assert call["sm_scale"] == 0.05 and call["kv"][2] == cache.data_ptr()
    # eagerly the same call is validated, and CPU tensors are refused
    with pytest.raises(ValueError, match="CUDA"):
        f(q, cache, idx)

