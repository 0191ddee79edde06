"""The settings the SGLang router reads: which decode calls go to the bundled kernel.

``_dsparkctl_route.json`` is written at apply time, next to the router module
in the serving environment (see ``patches/sglang-route-sm120/``). It carries
what the installed FlashInfer serves, so that ``--route missing`` can decide
per call without importing FlashInfer's SM120 module (the routed path must
work without it) and without dsparkctl being installed there.

The FlashInfer coverage normally comes from the doctor's dispatch reader
(install-kernels passes it in as a ``Dsv4Support``); ``read_flashinfer_decode``
is a small static fallback for ``dsparkctl patches apply`` that understands
the table shapes of KNOWLEDGE §2 and answers ``unknown`` otherwise (the router
then routes every DSV4 decode call: the bundled kernel serves them all).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsparkctl import __version__
from dsparkctl.flashinfer_support import Dsv4Support
from dsparkctl.patch_spec import AnchorError, python_frozenset_pairs

ROUTE_CONFIG_SCHEMA = 1
ROUTE_MODES = ("missing", "all")
DECODE_MAX_TOKENS = 64
_ENVELOPE_MARK = "_DecodeDispatchEnvelope"


def read_flashinfer_decode(site: Path, version: str | None) -> dict[str, Any]:
    """What the FlashInfer in ``site`` serves for DSV4 decode, read statically."""
    if version is None:
        return {"version": None, "kind": "none"}
    mla = site / "flashinfer" / "mla"
    legacy = mla / "_sparse_mla_sm120.py"
    candidates = [mla / "_sparse_mla_sm120_plan.py", mla / "_sparse_mla_sm120" / "_policy.py",
                  legacy]
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
            continue
        if f"_DECODE_DSV4_DISPATCH = {_ENVELOPE_MARK}" in text:
            return {"version": version, "kind": "envelope", "max_heads": 128, "min_topk": 1,
                    "source": str(path.relative_to(site))}
        if path == legacy:
            try:
                pairs = python_frozenset_pairs(text, "_DECODE_DSV4_DISPATCH")
            except (AnchorError, SyntaxError):
                continue
            return {"version": version, "kind": "pairs",
                    "pairs": [list(p) for p in sorted(pairs)],
                    "source": str(path.relative_to(site))}
    return {"version": version, "kind": "unknown"}


def from_support(support: Dsv4Support) -> dict[str, Any]:
    """The doctor's reading of FlashInfer, in the router's terms."""
    if support.kind == "pairs" and support.pairs is not None:
        return {"version": support.version, "kind": "pairs",
                "pairs": [list(p) for p in sorted(support.pairs)], "source": support.source}
    if support.kind == "envelope":
        return {"version": support.version, "kind": "envelope", "max_heads": support.max_heads,
                "min_topk": support.min_topk, "source": support.source}
    return {"version": support.version, "kind": "unknown", "source": support.source}


def route_config(params: Mapping[str, Any], flashinfer: Mapping[str, Any],
                 patch_id: str) -> dict[str, Any]:
    mode = params.get("route", "missing")
    if mode not in ROUTE_MODES:
        raise ValueError(f"route mode {mode!r} is not one of {ROUTE_MODES}")
    manifest = params.get("manifest")
    return {
        "schema": ROUTE_CONFIG_SCHEMA,
        "generated_by": f"dsparkctl {__version__}",
        "patch": patch_id,
        "mode": mode,
        "manifest": str(Path(manifest).resolve()) if manifest else None,
        "max_tokens": DECODE_MAX_TOKENS,
        "flashinfer": dict(flashinfer),
    }


def route_config_bytes(config: Mapping[str, Any]) -> bytes:
    return (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()
