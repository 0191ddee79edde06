"""Deliberately broken sparse-MLA kernels, for tests only (never shipped).

``FirstRowLengthKernel`` models the suspected failure of seed 000: a kernel that is exact for
one-token calls but, in a multi-row call, reads the valid lengths once per group of rows (as a
kernel that tiles the rows of one request together might) and so applies the first row's
``topk_length`` / ``extra_topk_length`` to the rows after it. In a verify call every row after
the first of a request sees more tokens than the first, so those rows silently lose candidates.
"""

from __future__ import annotations

from typing import Any

import torch


class FirstRowLengthKernel:
    def __init__(self, base: Any, group: int) -> None:
        self.base = base
        self.group = int(group)

    def _first_rows(self, length: torch.Tensor | None) -> torch.Tensor | None:
        if length is None or length.shape[0] <= 1:
            return length
        rows = torch.arange(length.shape[0], device=length.device)
        return length[rows - rows % self.group].contiguous()

    def __call__(self, q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor, *,
                 topk_length: torch.Tensor | None = None,
                 extra_topk_length: torch.Tensor | None = None,
                 **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return self.base(q, kv_cache, indices, topk_length=self._first_rows(topk_length),
                         extra_topk_length=self._first_rows(extra_topk_length), **kwargs)


class ScaledOutputKernel:
    """Multiplies the output by ``1 + rel`` and adds ``abs``: a kernel off by a known amount."""

    def __init__(self, base: Any, rel: float = 0.0, add: float = 0.0) -> None:
        self.base, self.rel, self.add = base, rel, add

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out, lse = self.base(*args, **kwargs)
        o = out.to(torch.float32) * (1.0 + self.rel) + self.add
        return o.to(out.dtype), lse
