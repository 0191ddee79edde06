"""The settings the SGLang router reads: which decode calls go to the bundled kernel.

``_dsparkctl_route.json`` is written at apply time, next to the router module
in the serving environment (see ``patches/sglang-route-sm120/``). It carries
what the installed FlashInfer serves, so that ``--route missing`` can decide
per call without importing FlashInfer's SM120 module (the routed path must
work without it) and without dsparkctl being installed there.

The FlashInfer coverage comes from the doctor's static dispatch reader (or
is passed in by the caller as a ``Dsv4Support``). Anything it cannot classify
is ``unknown``, and the router then routes every DSV4 decode call: the bundled
kernel serves them all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsparkctl import __version__
from dsparkctl.flashinfer_support import Dsv4Support

ROUTE_CONFIG_SCHEMA = 1
ROUTE_MODES = ("missing", "all")
DECODE_MAX_TOKENS = 64


def read_flashinfer_decode(site: Path) -> dict[str, Any]:
    """What the FlashInfer in ``site`` serves for DSV4 decode (the doctor's static reader)."""
    from dsparkctl.flashinfer_dispatch import read_flashinfer

    reading = read_flashinfer(site)
    if reading.support is None:
        # No SM120 module: nothing is served, decode or prefill (the router routes it all).
        return {"version": None, "kind": "none", "prefill": None}
    return from_support(reading.support)


def from_support(support: Dsv4Support) -> dict[str, Any]:
    """The doctor's reading of FlashInfer, in the router's terms: the decode coverage and,
    under ``prefill``, the prefill dispatcher's (calls of more than 64 tokens)."""
    from dsparkctl.flashinfer_tables import prefill_defects

    prefill = {**support.prefill.to_json(), "defects": prefill_defects(support.version)}
    if support.kind == "pairs" and support.pairs is not None:
        return {"version": support.version, "kind": "pairs",
                "pairs": [list(p) for p in sorted(support.pairs)], "source": support.source,
                "prefill": prefill}
    if support.kind == "envelope":
        return {"version": support.version, "kind": "envelope", "max_heads": support.max_heads,
                "min_topk": support.min_topk, "source": support.source, "prefill": prefill}
    return {"version": support.version, "kind": "unknown", "source": support.source,
            "prefill": prefill}


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
    text = json.dumps(config, indent=2, sort_keys=True)
    # One pair per line reads better than three lines per pair.
    text = re.sub(r"\[\s+(-?\d+),\s+(-?\d+)\s+\]", r"[\1, \2]", text)
    return (text + "\n").encode()


# patching.STATE_DIR, repeated so that doctor's common case (an unpatched tree) does not
# import the patch engine; a test keeps the two equal.
PATCH_STATE_DIR = ".dsparkctl-patches"
ROUTER_MODULE = "_dsparkctl_route.py"
ROUTER_SETTINGS = "_dsparkctl_route.json"


def read_route_settings(site: Path) -> dict[str, Any] | None:
    """The routing installed in ``site`` (for doctor's report), or None when there is none.

    Raises ValueError when the settings file exists but is not valid JSON: the
    router would then fail at the first attention call, which doctor must say.
    """
    try:
        text = (site / ROUTER_SETTINGS).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError(f"{site / ROUTER_SETTINGS} is not a JSON object")
    obj["router_present"] = (site / ROUTER_MODULE).is_file()
    return obj



def routing_state(site: Path) -> dict[str, Any] | None:
    """What doctor reports about routing in ``site``: the applied patches, whether the files
    on disk are still what was written, and whether the kernel library is intact.

    None when dsparkctl never patched this tree (the common case costs one ``stat``).
    """
    if not (site / PATCH_STATE_DIR).is_dir() and not (site / ROUTER_SETTINGS).exists():
        return None
    from dsparkctl.patching import Target, status  # heavy: only for patched trees

    applied = [p.to_json() for p in status(Target(site))]
    try:
        settings = read_route_settings(site)
        settings_error = None
    except (ValueError, json.JSONDecodeError) as exc:
        settings, settings_error = None, str(exc)
    kernel: dict[str, Any] = {"manifest": None, "intact": False}
    manifest = (settings or {}).get("manifest")
    if manifest:
        from dsparkctl.install import installed_intact, read_manifest

        m = read_manifest(Path(manifest)) or {}
        kernel = {"manifest": manifest, "intact": installed_intact(Path(manifest)),
                  "arch": m.get("arch"), "key": m.get("key"), "library": m.get("library")}
    route = next((p for p in applied if p["id"] == "sglang-route-sm120"), None)
    active = bool(route and route["intact"] and settings and settings.get("router_present")
                  and kernel["intact"])
    return {"applied": applied, "settings": settings, "settings_error": settings_error,
            "kernel": kernel, "active": active,
            "mode": (settings or {}).get("mode") if active else None,
            "recorded_flashinfer": ((settings or {}).get("flashinfer") or {}).get("version")}


def router_rule(site: Path) -> Any:
    """The installed router's own ``RouteConfig`` (its ``routes_call`` is the rule the
    server will apply), loaded from the file in ``site``: doctor must not guess the rule.
    The module is standard-library only at import, so this stays cheap."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_dsparkctl_route_installed",
                                                  site / ROUTER_MODULE)
    if spec is None or spec.loader is None:
        raise ValueError(f"{site / ROUTER_MODULE} cannot be loaded")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.load_config(site / ROUTER_SETTINGS)


class RouteRule:
    """The installed router's decision for one planned call, as doctor and smoke ask it.

    A router installed by an older dsparkctl has no ``routes_call``: it routed decode-sized
    calls only, and is asked as such (``patches status`` says to refresh it).
    """

    def __init__(self, config: Any, mode: str | None = None) -> None:
        self.config = config
        self.mode = mode  # DSPARKCTL_ROUTE in the server's environment, over the settings' mode

    def __call__(self, heads: int, topk: int, num_tokens: int = 1, extra_topk: int = 0,
                 extra_page_size: int = 64) -> bool:
        if heads > 128:  # beyond the bundled kernel too: no route serves it
            return False
        if hasattr(self.config, "routes_call"):
            return bool(self.config.routes_call(num_tokens, heads, topk, extra_topk,
                                                extra_page_size, mode=self.mode))
        return num_tokens <= DECODE_MAX_TOKENS and bool(
            self.config.routes(heads, topk, mode=self.mode))

