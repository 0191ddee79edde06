"""What each published flashinfer-python release serves for DSV4 sparse MLA on SM120.

Data, not code paths: one row per range of releases whose dispatch files are
byte-identical (or differ only in ways that do not change coverage), each
verified by reading the real wheel (``pip download --no-deps`` + unzip):

- decode table: ``flashinfer/mla/_sparse_mla_sm120.py`` (``_DECODE_DSV4_DISPATCH``)
  and the ``DSV4_DISPATCH(H, K)`` lines of
  ``flashinfer/data/csrc/sparse_mla_sm120_decode_dsv4.cu`` (<= 0.6.18); the
  ``_DecodeDispatchEnvelope`` of ``_sparse_mla_sm120_plan.py`` (0.7.0) or of
  ``_sparse_mla_sm120/_policy.py`` plus ``DecodeMaxHeads`` in
  ``execution/attention_plan.h`` (0.7.1+);
- prefill: ``dispatch_dsv4_single`` / ``dispatch_dsv4_dual`` in
  ``sparse_mla_sm120_prefill.cu`` (<= 0.7.0; 0.7.0 also ``_PREFILL_DSV4_HEADS``
  and ``_prefill_topk_ok``); ``visit_prefill_heads`` /
  ``SPARSE_MLA_EXTRA_PAGES`` in ``attention_plan.h`` and the ``m.topk % 64``
  check of ``attention_resolve.cu`` (0.7.1+);
- miss behaviour: 0.6.18 adds ``raise ValueError("SM120 sparse-MLA has no
  decode kernel for this shape ...")`` before the prefill orchestrator;
  0.6.14-0.6.17 reach the C++ ``num_tokens > 64`` check; 0.7.x plan() returns
  None -> ValueError;
- version skew: ``flashinfer/jit/env.py`` raises on a mismatched
  flashinfer-cubin / flashinfer-jit-cache before 0.7.2 and ignores it (with a
  warning, falling back to JIT) from 0.7.2.

The static reader cross-checks an installed tree against these rows (a tree
that differs from its release's row was patched), and ``--flashinfer-version``
evaluates a plan against them without anything installed.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from dsparkctl.flashinfer_support import Dsv4Support, MissBehavior, PrefillSupport

Layout = Literal["absent", "frozenset", "envelope-plan", "envelope-package"]
SkewBehavior = Literal["raise", "ignore"]

DSV4_HEADS = (8, 16, 32, 64, 128)

# Upstream references (KNOWLEDGE §1, §2).
PR_DSV4_192_256 = "https://github.com/flashinfer-ai/flashinfer/pull/4380"
PR_ENVELOPE = "https://github.com/flashinfer-ai/flashinfer/pull/4802"
ISSUE_SGLANG_DSPARK = "https://github.com/sgl-project/sglang/issues/33985"
PR_SGLANG_PREFILL_UNSUPPORTED = "https://github.com/sgl-project/sglang/pull/34717"


def _grid(heads: tuple[int, ...], topks: tuple[int, ...]) -> frozenset[tuple[int, int]]:
    return frozenset((h, k) for h in heads for k in topks)


@dataclass(frozen=True)
class KnownRelease:
    """One range of releases with identical DSV4 coverage.

    ``verified`` lists the published versions whose wheels were read to fill
    the row; a version inside ``spec`` but not in ``verified`` (a release
    published later) is answered from the row with a note saying so.
    """

    spec: SpecifierSet
    layout: Layout
    verified: tuple[str, ...]
    support: Dsv4Support | None
    skew_behavior: SkewBehavior
    notes: tuple[str, ...] = ()


_PREFILL_0_6_14 = PrefillSupport(
    single_heads=frozenset({16, 32, 64, 128}),
    single_topks=frozenset({128, 512, 1024, 2048}),
    dual_topks=frozenset({128}),
    dual_extra_page_sizes=frozenset({64, 2}),
)
_PREFILL_0_6_18 = PrefillSupport(
    single_heads=frozenset({8, 16, 32, 64, 128}),
    single_topks=frozenset({128, 192, 256, 512, 1024, 2048}),
    dual_topks=frozenset({128}),
    dual_extra_page_sizes=frozenset({64, 2}),
)
# From 0.7.0 topk is a runtime kernel argument: any width made of whole 64-wide
# index tiles. Heads stay {8,16,32,64,128}; PrefillSupport.serves() ignores
# single_heads when any_topk_multiple is set (reported to the lead), the value
# is kept here so the data is true.
_PREFILL_0_7_0 = PrefillSupport(
    single_heads=frozenset(DSV4_HEADS),
    dual_extra_page_sizes=frozenset({64, 2}),
    any_topk_multiple=64,
)
_PREFILL_0_7_2 = dataclasses.replace(_PREFILL_0_7_0,
                                     dual_extra_page_sizes=frozenset({64, 32, 2}))

_DECODE_NEEDS = "decode also needs d_qk == 512 and page_block_size == 64"

RELEASES: tuple[KnownRelease, ...] = (
    KnownRelease(
        spec=SpecifierSet("<0.6.14"),
        layout="absent",
        verified=("0.6.13",),
        support=None,
        skew_behavior="raise",
        notes=("no SM120 sparse-MLA kernels (flashinfer/mla has no _sparse_mla_sm120)",),
    ),
    KnownRelease(
        spec=SpecifierSet(">=0.6.14,<0.6.18"),
        layout="frozenset",
        verified=("0.6.14", "0.6.15", "0.6.15.post1", "0.6.16", "0.6.16.post4", "0.6.17"),
        support=Dsv4Support(
            version=None, kind="pairs", source="known-version",
            pairs=_grid(DSV4_HEADS, (128, 512, 1024)),
            miss_behavior="fallthrough", prefill=_PREFILL_0_6_14,
            notes=(_DECODE_NEEDS,
                   "a decode-sized miss falls through to the prefill orchestrator, "
                   "which aborts on num_tokens > 64"),
        ),
        skew_behavior="raise",
    ),
    KnownRelease(
        spec=SpecifierSet(">=0.6.18,<0.7.0"),
        layout="frozenset",
        verified=("0.6.18", "0.6.18.post1"),
        support=Dsv4Support(
            version=None, kind="pairs", source="known-version",
            pairs=_grid(DSV4_HEADS, (128, 192, 256, 512, 1024)),
            miss_behavior="raise", prefill=_PREFILL_0_6_18,
            notes=(_DECODE_NEEDS,
                   "a decode-sized miss raises ValueError('SM120 sparse-MLA has no decode "
                   "kernel for this shape ...')"),
        ),
        skew_behavior="raise",
    ),
    KnownRelease(
        spec=SpecifierSet(">=0.7.0,<0.7.1"),
        layout="envelope-plan",
        verified=("0.7.0", "0.7.0.post1"),
        support=Dsv4Support(
            version=None, kind="envelope", source="known-version",
            any_topk=True, max_heads=128, min_topk=1,
            miss_behavior="raise", prefill=_PREFILL_0_7_0,
            notes=("decode: any heads 1..128, any topk >= 1 (page_block_size 64); "
                   "heads outside {8,16,32,64,128} use the runtime-H instantiation",
                   "a calibrated crossover may route decode-sized calls to prefill "
                   "(prefill needs topk % 64 == 0)"),
        ),
        skew_behavior="raise",
    ),
    KnownRelease(
        spec=SpecifierSet(">=0.7.1,<0.7.2"),
        layout="envelope-package",
        verified=("0.7.1",),
        support=Dsv4Support(
            version=None, kind="envelope", source="known-version",
            any_topk=True, max_heads=128, min_topk=1,
            miss_behavior="raise", prefill=_PREFILL_0_7_0,
            notes=("decode: any heads 1..128, any topk >= 1, any main page size; "
                   "the C++ resolver is authoritative",),
        ),
        skew_behavior="raise",
    ),
    KnownRelease(
        spec=SpecifierSet(">=0.7.2,<0.8"),
        layout="envelope-package",
        verified=("0.7.2", "0.7.2.post1", "0.7.4"),
        support=Dsv4Support(
            version=None, kind="envelope", source="known-version",
            any_topk=True, max_heads=128, min_topk=1,
            miss_behavior="raise", prefill=_PREFILL_0_7_2,
            notes=("decode: any heads 1..128, any topk >= 1, any main page size; "
                   "the C++ resolver is authoritative",),
        ),
        skew_behavior="ignore",
    ),
)


def _parse(version: str) -> Version | None:
    try:
        return Version(version)
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=64)
def known_release(version: str) -> KnownRelease | None:
    """The row whose range holds ``version`` (local suffixes such as +cu129 ignored)."""
    v = _parse(version)
    if v is None:
        return None
    public = Version(v.public)
    for row in RELEASES:
        if row.spec.contains(public, prereleases=True):
            return row
    return None


def known_support(version: str) -> Dsv4Support | None:
    """DSV4 coverage of a release from the table (source ``known-version``).

    None when the version is unparseable, outside every known range, or has
    no SM120 sparse-MLA at all (see ``known_release(...).layout == "absent"``).
    """
    row = known_release(version)
    if row is None or row.support is None:
        return None
    notes = row.support.notes
    v = Version(Version(version).public)
    if all(Version(p) != v for p in row.verified):
        notes = (*notes, f"{version} was not read by dsparkctl; answered from the table of "
                         f"{', '.join(row.verified)} ({row.spec})")
    return dataclasses.replace(row.support, version=version, notes=notes)


# Prefill-path numerics defects by release range: the prefill dispatcher takes the call and
# returns a wrong answer. The router sends the affected prefill-sized calls to the bundled
# kernel; doctor's pitfalls table carries the text for the operator.
DUAL_READS_PAST_LENGTH = "dual-reads-past-length"
PREFILL_DEFECTS: tuple[tuple[SpecifierSet, str, str], ...] = (
    # DSV4 dual-cache prefill with > 64 tokens reads index lanes at positions >= topk_length
    # unless they are -1 (flashinfer #5095; fixed in 0.7.0's rewrite of the prefill kernel)
    (SpecifierSet(">=0.6.18,<0.7"), DUAL_READS_PAST_LENGTH,
     "https://github.com/flashinfer-ai/flashinfer/issues/5095"),
)


def prefill_defects(version: str | None) -> list[str]:
    """The prefill defects of a release (public version; none for an unparseable one)."""
    try:
        v = Version(Version(version).public) if version else None
    except InvalidVersion:
        return []
    return [name for spec, name, _ in PREFILL_DEFECTS
            if v is not None and spec.contains(v, prereleases=True)]


def known_versions() -> list[str]:
    """Published versions whose wheels were read to build the table, oldest first."""
    out = {p for row in RELEASES if row.support is not None for p in row.verified}
    return sorted(out, key=Version)


def miss_behavior_of(version: str) -> MissBehavior | None:
    row = known_release(version)
    return row.support.miss_behavior if row and row.support else None
