"""The CUDA-graph batch-size ladder SGLang captures, per version, as data.

Two steps, both read from the wheels:

1. The ladder (``generate_decode_cuda_graph_batch_sizes``; in 0.5.16-0.5.18 the
   method ``ServerArgs._generate_decode_cuda_graph_batch_sizes``): with
   ``--disable-cuda-graph-padding`` every size ``1..max_bs``; with speculation
   ``1..8, 10..32/2, 40..64/4, 72..256/8, 272..max_bs/16``; without
   ``1,2,4,8,12, 16..256/8, 272..511/16, 512..max_bs/32``; filtered to
   ``<= max_bs`` and ``max_bs`` appended. An explicit ``--cuda-graph-bs-decode``
   list replaces the ladder (and ``max_bs`` becomes its maximum). Identical in
   0.5.16, 0.5.17 (``srt/server_args.py:4937``), 0.5.18, 0.5.19
   (``srt/arg_groups/cuda_graph_hook.py:512``), 0.5.20 (``:577``), 0.5.21, 0.5.22 and
   0.5.23 (``:500``).
2. The runner's clamp (``get_batch_sizes_to_capture``,
   ``srt/model_executor/runner/base_cuda_graph_runner.py:61`` in 0.5.17, ``:65`` in
   0.5.23): ``limit = ceil_align(max requests per worker, alignment)``; if the
   ladder exceeds ``limit`` then ``limit`` is added; sizes whose token count
   ``bs * tokens_per_request`` is not a multiple of ``alignment`` are dropped, as
   are sizes above ``limit``. ``alignment`` is the attention-TP size when a
   gathered buffer is needed (DP attention, or a MoE all-to-all backend), else 1
   (``srt/utils/common.py:3632`` in 0.5.17).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet

from dsparkctl.errors import UsageError
from dsparkctl.sglang_rules import ceil_align, parse_version

# (first, last inclusive or None for "max_bs", step)
Segment = tuple[int, int | None, int]


@dataclass(frozen=True)
class LadderRule:
    versions: str
    speculative: tuple[Segment, ...]
    plain: tuple[Segment, ...]
    verified: bool = True

    def segments(self, speculative: bool) -> tuple[Segment, ...]:
        return self.speculative if speculative else self.plain


_SPEC: tuple[Segment, ...] = ((1, 8, 1), (10, 32, 2), (40, 64, 4), (72, 256, 8), (272, None, 16))
_PLAIN: tuple[Segment, ...] = ((1, 2, 1), (4, 12, 4), (16, 256, 8), (272, 511, 16), (512, None, 32))

LADDERS: tuple[LadderRule, ...] = (
    LadderRule(">=0.5.16,<0.5.24", _SPEC, _PLAIN),
)


def ladder_rule(sglang_version: str | None) -> tuple[LadderRule, bool]:
    """The rule for a version and whether that version was read (False: newest rule assumed)."""
    if sglang_version is not None:
        v = parse_version(sglang_version)
        for rule in LADDERS:
            if SpecifierSet(rule.versions).contains(v, prereleases=True):
                return rule, rule.verified
    return LADDERS[-1], False


def capture_batch_sizes(sglang_version: str | None, *, speculative: bool, max_bs: int,
                        disable_padding: bool, explicit: Sequence[int] | None) -> list[int]:
    """The decode ``cuda_graph_config.bs`` SGLang derives (before the runner's clamp)."""
    if explicit is not None:
        sizes = list(explicit)
        if not sizes or any(int(b) < 1 for b in sizes):
            raise UsageError(f"--cuda-graph-bs-decode {sizes}: batch sizes must be positive integers")
        return [int(b) for b in sizes]
    if max_bs < 1:
        raise UsageError(f"--cuda-graph-max-bs-decode {max_bs}: must be a positive integer")
    if disable_padding:
        return list(range(1, max_bs + 1))
    rule, _ = ladder_rule(sglang_version)
    sizes = []
    for first, last, step in rule.segments(speculative):
        sizes.extend(range(first, (max_bs if last is None else last) + 1, step))
    sizes = [b for b in sizes if b <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


def clamp_to_runner(sizes: Sequence[int], *, max_requests: int, alignment: int = 1,
                    tokens_per_request: int = 1) -> list[int]:
    """What ``get_batch_sizes_to_capture`` keeps for one runner (target or draft)."""
    if max_requests < 1:
        raise UsageError(f"--max-running-requests {max_requests}: must be a positive integer")
    limit = ceil_align(max_requests, alignment)
    out = list(sizes)
    if out and max(out) > limit:
        out.append(limit)
    out = [b for b in out if (b * tokens_per_request) % alignment == 0 and b <= limit]
    return sorted(set(out))
