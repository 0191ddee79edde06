"""Turn a plan into findings: shapes without a kernel, and the exact fixes.

Pure logic. The fix for a missing shape is either a FlashInfer release that
serves every planned call (found by re-planning against each known published
table, oldest first, so the operator gets the smallest upgrade) or routing
the shapes to the bundled kernel with ``dsparkctl install-kernels``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from dsparkctl.findings import Finding, Severity
from dsparkctl.flashinfer_support import Dsv4Support

SEED_000 = "https://github.com/sgl-project/sglang/issues/33985"
FI_4380 = "https://github.com/flashinfer-ai/flashinfer/pull/4380"
FI_4802 = "https://github.com/flashinfer-ai/flashinfer/pull/4802"

_PATH_TEXT = {
    "assert": "falls through to the prefill kernel and aborts in CUDA-graph capture with "
    "'Check failed: num_tokens > 64'",
    "error": "raises (no kernel for this shape)",
}


class CallLike(Protocol):
    phase: str
    num_heads: int
    topk: int
    extra_topk: int
    extra_page_size: int
    paths: Mapping[int, str]
    supported: bool | None


# The installed router's decision for one call: (heads, topk, num_tokens, extra_topk,
# extra_page_size) -> routed (``routing.RouteRule``); the last three default to a
# decode-sized call without an extra cache.
Routed = Callable[..., bool]


class PlanLike(Protocol):
    calls: Sequence[CallLike]


def _failing(call: CallLike) -> dict[int, str]:
    """Decode-sized calls with no decode kernel (prefill-sized ones are reported apart)."""
    return {n: p for n, p in call.paths.items() if p in ("assert", "error") and n <= 64}


def missing_kernel_findings(
    calls: Iterable[CallLike], *, flashinfer_version: str | None, upgrade_to: str | None,
    routed: Routed | None = None,
) -> list[Finding]:
    """One error naming every unserved shape and its num_tokens, or an info when routed."""
    missing: list[tuple[CallLike, dict[int, str]]] = []
    served_by_route: list[CallLike] = []
    for call in calls:
        bad = _failing(call)
        if not bad:
            continue
        heads, topk = call.num_heads, call.topk
        if routed is not None and routed(heads, topk):
            served_by_route.append(call)
        else:
            missing.append((call, bad))
    out: list[Finding] = []
    if missing:
        lines = []
        for call, bad in missing:
            kinds = sorted(set(bad.values()))
            lines.append(
                f"{call.phase}: heads={call.num_heads} topk={call.topk} "
                f"extra_topk={call.extra_topk} num_tokens={sorted(bad)} -> "
                + "; ".join(_PATH_TEXT[k] for k in kinds)
            )
        shapes = sorted({(c.num_heads, c.topk) for c, _ in missing})
        fi = f"FlashInfer {flashinfer_version}" if flashinfer_version else "This FlashInfer"
        fixes = []
        if upgrade_to:
            fixes.append(f"pip install 'flashinfer-python=={upgrade_to}' (oldest release that "
                         f"serves every planned call)")
        fixes.append("dsparkctl install-kernels (builds the bundled any-shape kernel and routes "
                     "these shapes to it)")
        out.append(Finding(
            "plan-missing-kernel", Severity.ERROR,
            f"{fi} has no sparse-MLA decode kernel for {', '.join(f'({h}, {k})' for h, k in shapes)}"
            " (heads, topk) that this configuration submits",
            " or ".join(fixes),
            (SEED_000, FI_4380, FI_4802),
            "\n".join(lines),
            {"shapes": [list(s) for s in shapes], "upgrade_to": upgrade_to},
        ))
    if served_by_route:
        shapes = sorted({(c.num_heads, c.topk) for c in served_by_route})
        out.append(Finding(
            "plan-routed-to-bundled", Severity.INFO,
            "Shapes FlashInfer cannot serve are routed to dsparkctl's bundled kernel: "
            + ", ".join(f"({h}, {k})" for h, k in shapes),
            "Nothing to do; `dsparkctl patches status` shows the routing.",
            (), "", {"shapes": [list(s) for s in shapes]},
        ))
    return out


def prefill_failing(call: CallLike) -> list[int]:
    """The prefill-sized num_tokens (> 64) of a call that FlashInfer's prefill dispatcher
    rejects."""
    return sorted(n for n, p in call.paths.items() if p == "error" and n > 64)


def prefill_routed(call: CallLike, routed: Routed | None) -> bool:
    """Whether the installed router sends every rejected prefill-sized size of ``call`` to
    the bundled kernel."""
    ns = prefill_failing(call)
    return bool(ns) and routed is not None and all(
        routed(call.num_heads, call.topk, n, call.extra_topk, call.extra_page_size) for n in ns)


def routes_any_size(call: CallLike, routed: Routed | None) -> bool:
    """Whether the installed router takes any size of ``call`` (the plan's ``routed`` mark:
    decode misses, ``--route all``, rejected or defective prefill-sized calls)."""
    return routed is not None and any(
        routed(call.num_heads, call.topk, n, call.extra_topk, call.extra_page_size)
        for n in call.paths)


def prefill_error_findings(calls: Iterable[CallLike], *, upgrade_to: str | None,
                           routed: Routed | None = None) -> list[Finding]:
    """Prefill-sized calls (> 64 tokens) that FlashInfer's prefill dispatcher rejects: an
    error naming the fixes, or an info for those the installed router serves."""
    calls = list(calls)
    bad = [(c, prefill_failing(c)) for c in calls if not prefill_routed(c, routed)]
    bad = [(c, ns) for c, ns in bad if ns]
    by_route = [c for c in calls if prefill_routed(c, routed)]
    out: list[Finding] = []
    if by_route:
        out.append(Finding(
            "plan-prefill-routed-to-bundled", Severity.INFO,
            "Prefill-sized calls FlashInfer's prefill dispatcher rejects are routed to dsparkctl's "
            "bundled kernel: " + ", ".join(f"({c.num_heads}, {c.topk})" for c in by_route),
            "Nothing to do; `dsparkctl patches status` shows the routing.", (),
            "\n".join(f"{c.phase}: heads={c.num_heads} topk={c.topk} extra_topk={c.extra_topk} "
                      f"num_tokens={compact(prefill_failing(c))}" for c in by_route),
            {"shapes": sorted({(c.num_heads, c.topk) for c in by_route})},
        ))
    if not bad:
        return out
    parts = [f"pip install 'flashinfer-python=={upgrade_to}' (oldest release that serves every "
             "planned call)" if upgrade_to else
             "no published FlashInfer release serves every planned call (see the what-if table)"]
    parts.append("`dsparkctl install-kernels` (its router sends the prefill-sized calls "
                 "FlashInfer rejects to the bundled any-shape kernel, in every route mode)")
    if all(c.phase != "prefill" for c, _ in bad):
        # Batches above the largest captured size run eagerly and make the same calls, so
        # capping the CUDA graphs alone leaves them: the running requests must be capped.
        parts.append("keep every batch at num_tokens <= 64: cap --max-running-requests (not "
                     "only --cuda-graph-max-bs, since larger batches run eagerly with the same "
                     "calls) at 64 / tokens per request")
    else:
        parts.append("the failing rows include real prefill (chunked prompts), which no batch "
                     "limit avoids: choose a --tp whose heads per rank the release's prefill "
                     "serves")
    fix = "; or ".join(parts)
    out.append(Finding(
        "plan-prefill-unsupported", Severity.ERROR,
        "FlashInfer's SM120 prefill dispatcher rejects calls this configuration submits "
        "('Unsupported sparse-MLA prefill configuration')",
        fix, ("https://github.com/sgl-project/sglang/pull/34717",),
        "\n".join(f"{c.phase}: heads={c.num_heads} topk={c.topk} extra_topk={c.extra_topk} "
                  f"num_tokens={compact(ns)}" for c, ns in bad),
        {"shapes": sorted({(c.num_heads, c.topk) for c, _ in bad})},
    ))
    return out


def compact(ns: Sequence[int]) -> str:
    return f"{ns[0]}..{ns[-1]} ({len(ns)} sizes)" if len(ns) > 6 else str(list(ns))


def compat_by_release(
    versions: Sequence[str],
    replan: Callable[[Dsv4Support], PlanLike],
    known: Callable[[str], Dsv4Support | None],
) -> list[dict[str, object]]:
    """Would each known FlashInfer release serve this plan? ("what if I upgrade?" at a glance)."""
    rows: list[dict[str, object]] = []
    for v in versions:
        support = known(v)
        if support is None:
            continue
        plan = replan(support)
        decode_miss = sorted({(c.num_heads, c.topk) for c in plan.calls if _failing(c)})
        prefill_miss = sorted({(c.num_heads, c.topk) for c in plan.calls
                               if any(p == "error" and n > 64 for n, p in c.paths.items())})
        rows.append({"version": v, "served": not decode_miss and not prefill_miss,
                     "decode_missing": [list(x) for x in decode_miss],
                     "prefill_missing": [list(x) for x in prefill_miss]})
    return rows
