"""A CPU stand-in for ``dsparkctl::sparse_mla_decode`` for router tests.

Registered as a real ``torch.library`` custom op, under its own namespace so
that it never collides with the real kernel library when both are loaded in
one pytest process (GPU machine); router tests point the router's
``OP_NAMESPACE`` at it. ``IMPL`` decides what the op computes; every call is
recorded in ``CALLS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

NAMESPACE = "dsparkctl_test"
CALLS: list[dict[str, Any]] = []
IMPL: list[Callable[..., tuple[torch.Tensor, torch.Tensor]]] = []


def _record(q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor,
            topk_length: torch.Tensor | None, attn_sink: torch.Tensor | None,
            extra_kv_cache: torch.Tensor | None, extra_indices: torch.Tensor | None,
            extra_topk_length: torch.Tensor | None, sm_scale: float, flag: bool) -> None:
    CALLS.append({
        "q": (tuple(q.shape), q.data_ptr()),
        "kv": (tuple(kv_cache.shape), tuple(kv_cache.stride()), kv_cache.data_ptr(),
               kv_cache.dtype),
        "indices": (tuple(indices.shape), indices.data_ptr()),
        "topk_length": None if topk_length is None else topk_length.data_ptr(),
        "attn_sink": None if attn_sink is None else attn_sink.data_ptr(),
        "extra_kv": None if extra_kv_cache is None else (tuple(extra_kv_cache.shape),
                                                         extra_kv_cache.data_ptr()),
        "extra_indices": None if extra_indices is None else tuple(extra_indices.shape),
        "extra_topk_length": None if extra_topk_length is None else extra_topk_length.data_ptr(),
        "sm_scale": sm_scale, "flag": flag,
    })


def echo_impl(q: torch.Tensor, *args: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A recognisable output: ``2 * q`` and lse = running index."""
    t, h, _ = q.shape
    return (q.float() * 2).to(torch.bfloat16), torch.arange(t * h, dtype=torch.float32).reshape(t, h)


def reference_impl(q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor,
                   topk_length: torch.Tensor | None, attn_sink: torch.Tensor | None,
                   extra_kv_cache: torch.Tensor | None, extra_indices: torch.Tensor | None,
                   extra_topk_length: torch.Tensor | None, sm_scale: float,
                   flag: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The bundled kernel's semantics (dsparkctl's torch reference), on the caches as given."""
    from dsparkctl.kernel import reference

    return reference.sparse_mla_decode_ref(
        q, kv_cache, indices, topk_length=topk_length, attn_sink=attn_sink,
        extra_kv_cache=extra_kv_cache, extra_indices=extra_indices,
        extra_topk_length=extra_topk_length, sm_scale=sm_scale, lse_base2_sink=flag,
        out_dtype=torch.bfloat16)


@torch.library.custom_op(f"{NAMESPACE}::sparse_mla_decode", mutates_args=())
def sparse_mla_decode(q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor,
                      topk_length: torch.Tensor | None, attn_sink: torch.Tensor | None,
                      extra_kv_cache: torch.Tensor | None, extra_indices: torch.Tensor | None,
                      extra_topk_length: torch.Tensor | None, sm_scale: float,
                      lse_base2_sink: bool) -> tuple[torch.Tensor, torch.Tensor]:
    args = (q, kv_cache, indices, topk_length, attn_sink, extra_kv_cache, extra_indices,
            extra_topk_length, sm_scale, lse_base2_sink)
    _record(*args)
    impl = IMPL[-1] if IMPL else echo_impl
    out, lse = impl(*args)
    return out.clone(), lse.clone()


@sparse_mla_decode.register_fake
def _(q: torch.Tensor, *rest: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Shapes only, for torch.compile's tracing of the ops wrapper."""
    t, h, _ = q.shape
    return q.new_empty(t, h, 512), q.new_empty((t, h), dtype=torch.float32)

