"""What one FlashInfer build can serve for DeepSeek-V4 sparse MLA on SM120.

This is the meeting point of the dispatch reader (which fills it, statically
from an installed tree, from the runtime API, or from the known-version
tables) and the planner (which asks it, call by call, which kernel path a
sparse-MLA call takes). Path semantics, from KNOWLEDGE §2 and the wheels:

- ``decode``: ``num_tokens <= 64`` and the decode kernel has ``(heads, topk)``.
- ``assert``: a decode-sized miss that falls through to the prefill
  orchestrator, whose first check is ``num_tokens > 64`` (<= 0.6.17): the
  process aborts in CUDA-graph capture.
- ``error``: a clean ``ValueError`` (0.6.18 on a decode-sized miss) or a
  prefill configuration the prefill dispatcher rejects.
- ``prefill``: ``num_tokens > 64`` and the prefill dispatcher serves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Path_ = Literal["decode", "prefill", "assert", "error"]
Kind = Literal["pairs", "envelope", "unknown"]
Source = Literal["static", "import", "known-version"]
MissBehavior = Literal["fallthrough", "raise"]

DECODE_MAX_TOKENS = 64


@dataclass(frozen=True)
class PrefillSupport:
    """Prefill (``num_tokens > 64`` or decode miss) coverage for DSV4.

    ``any_topk_multiple`` set (0.7.0+): any heads 1..128 and ``topk %
    any_topk_multiple == 0``. Otherwise the single-cache pair table and the
    dual-cache (extra cache present) constraints apply.
    """

    single_heads: frozenset[int] = frozenset()
    single_topks: frozenset[int] = frozenset()
    dual_topks: frozenset[int] = frozenset()
    dual_extra_page_sizes: frozenset[int] = frozenset()
    pad_heads_to: dict[int, int] = field(default_factory=dict)
    any_topk_multiple: int | None = None

    def to_json(self) -> dict[str, object]:
        """The router's ``flashinfer.prefill`` settings (it applies the same rule)."""
        return {"single_heads": sorted(self.single_heads), "single_topks": sorted(self.single_topks),
                "dual_topks": sorted(self.dual_topks),
                "dual_extra_page_sizes": sorted(self.dual_extra_page_sizes),
                "pad_heads_to": {str(a): b for a, b in sorted(self.pad_heads_to.items())},
                "any_topk_multiple": self.any_topk_multiple}

    def serves(self, num_heads: int, topk: int, extra_topk: int, extra_page_size: int = 64) -> bool:
        heads = self.pad_heads_to.get(num_heads, num_heads)
        if self.single_heads and heads not in self.single_heads:
            return False
        if extra_topk > 0 and self.dual_extra_page_sizes and (
                extra_page_size not in self.dual_extra_page_sizes):
            return False
        if self.any_topk_multiple:
            return 1 <= num_heads <= 128 and topk % self.any_topk_multiple == 0
        if not self.single_heads:
            return False
        if extra_topk > 0:
            return topk in self.dual_topks
        return topk in self.single_topks


@dataclass(frozen=True)
class Dsv4Support:
    """DSV4 decode/prefill coverage of one FlashInfer version or install."""

    version: str | None
    kind: Kind
    source: Source
    pairs: frozenset[tuple[int, int]] | None = None
    any_topk: bool = False
    max_heads: int = 128
    min_topk: int = 1
    miss_behavior: MissBehavior = "fallthrough"
    prefill: PrefillSupport = field(default_factory=PrefillSupport)
    notes: tuple[str, ...] = ()

    def supports_decode(self, num_heads: int, topk: int) -> bool:
        if self.kind == "pairs":
            return self.pairs is not None and (num_heads, topk) in self.pairs
        if self.kind == "envelope":
            return 1 <= num_heads <= self.max_heads and topk >= self.min_topk
        return False

    def path_for(self, num_tokens: int, num_heads: int, topk: int, extra_topk: int = 0,
                 extra_page_size: int = 64) -> Path_:
        if num_tokens <= DECODE_MAX_TOKENS:
            if self.supports_decode(num_heads, topk):
                return "decode"
            return "assert" if self.miss_behavior == "fallthrough" else "error"
        if self.prefill.serves(num_heads, topk, extra_topk, extra_page_size):
            return "prefill"
        return "error"

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "dsv4_decode": {
                "kind": self.kind,
                "pairs": sorted([list(p) for p in self.pairs]) if self.pairs is not None else None,
                "any_topk": self.any_topk,
                "source": self.source,
            },
        }
