"""``doctor --import``: ask the target interpreter's FlashInfer what it serves.

The static reader (``flashinfer_dispatch``) is fast and never imports
FlashInfer, but it reads files; the runtime answer is what the serving
process will actually see (a different flashinfer on ``sys.path``, a
monkey-patch in a sitecustomize, an envelope whose bounds moved). So, on
request, a small stdlib-only script runs in the TARGET interpreter (the
serving venv's python, not ours), imports FlashInfer and asks the same
question over a grid of heads 1..128 x the topk widths that matter, through
the public ``supported_sparse_mla_sm120_configs()["dsv4"].supports_decode``
where the version has it (0.7.0+) and ``_DECODE_DSV4_DISPATCH`` membership
(every version: vLLM probes it). Disagreement with the static reading is a
finding. Importing FlashInfer takes seconds, so this is never on doctor's
default path.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsparkctl.findings import Finding, Severity
from dsparkctl.flashinfer_support import Dsv4Support

ID_IMPORT_DISAGREES = "flashinfer-import-disagrees"
ID_IMPORT_FAILED = "flashinfer-import-failed"

HEADS = tuple(range(1, 129))
# Widths that matter for DSV4 on SGLang/vLLM (normal 128, DSpark draft 192/256,
# index 512, table widths 1024/2048) plus off-table ones that tell a pair
# table from an envelope (64, 320).
DEFAULT_TOPKS = (64, 128, 192, 256, 320, 512, 1024, 2048)
DEFAULT_TIMEOUT_S = 180.0
_MARKER = "DSPARKCTL-FLASHINFER-RUNTIME "

# Runs in the target interpreter: stdlib + flashinfer only; prints one marked JSON line.
PROBE_SCRIPT = r'''
import json, sys
args = json.loads(sys.argv[1])
heads, topks = args["heads"], args["topks"]
out = {"ok": False, "version": None, "apis": {}, "error": None}
try:
    import flashinfer
    out["version"] = getattr(flashinfer, "__version__", None)
    out["file"] = getattr(flashinfer, "__file__", None)
    try:
        from flashinfer.mla import supported_sparse_mla_sm120_configs as configs
    except ImportError:
        configs = None
    if configs is not None:
        dsv4 = configs()["dsv4"]
        out["apis"]["supports_decode"] = [
            [h, k] for h in heads for k in topks if dsv4.supports_decode(num_heads=h, topk=k)]
    from flashinfer.mla import _sparse_mla_sm120 as mod
    table = mod._DECODE_DSV4_DISPATCH
    out["apis"]["dispatch"] = [[h, k] for h in heads for k in topks if (h, k) in table]
    out["dispatch_type"] = type(table).__name__
    if isinstance(table, (set, frozenset)):
        out["pairs"] = sorted([list(p) for p in table])
    out["decode_max_tokens"] = getattr(mod, "_DECODE_MAX_TOKENS", None)
    out["ok"] = True
except BaseException as exc:  # report, never a traceback on the caller's screen
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
sys.stdout.write("\n" + ''' + repr(_MARKER) + r''' + json.dumps(out) + "\n")
'''


@dataclass(frozen=True)
class RuntimeProbe:
    """The target interpreter's own answer (``ok`` False: ``error`` says why)."""

    python: str
    ok: bool
    version: str | None = None
    error: str | None = None
    heads: tuple[int, ...] = HEADS
    topks: tuple[int, ...] = DEFAULT_TOPKS
    # api name -> the (heads, topk) of the grid it says decode serves
    apis: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    dispatch_type: str | None = None
    pairs: frozenset[tuple[int, int]] | None = None
    decode_max_tokens: int | None = None
    file: str | None = None

    @property
    def supported(self) -> frozenset[tuple[int, int]] | None:
        """The public API's answer where there is one, else the dispatch table's."""
        for api in ("supports_decode", "dispatch"):
            if api in self.apis:
                return self.apis[api]
        return None


def parse_probe_output(python: str, stdout: str, heads: Sequence[int],
                       topks: Sequence[int]) -> RuntimeProbe:
    """The marked JSON line of PROBE_SCRIPT (anything else on stdout is FlashInfer's noise)."""
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith(_MARKER)), None)
    if line is None:
        return RuntimeProbe(python, False, error="the probe printed no result",
                            heads=tuple(heads), topks=tuple(topks))
    try:
        raw = json.loads(line[len(_MARKER):])
    except json.JSONDecodeError as exc:
        return RuntimeProbe(python, False, error=f"unreadable probe result: {exc}",
                            heads=tuple(heads), topks=tuple(topks))
    apis = {name: frozenset((int(h), int(k)) for h, k in pairs)
            for name, pairs in (raw.get("apis") or {}).items()}
    pairs = raw.get("pairs")
    return RuntimeProbe(
        python=python, ok=bool(raw.get("ok")), version=raw.get("version"),
        error=raw.get("error"), heads=tuple(heads), topks=tuple(topks), apis=apis,
        dispatch_type=raw.get("dispatch_type"),
        pairs=frozenset((int(h), int(k)) for h, k in pairs) if pairs is not None else None,
        decode_max_tokens=raw.get("decode_max_tokens"), file=raw.get("file"),
    )


def probe_runtime(python: str | os.PathLike[str], *, topks: Iterable[int] = DEFAULT_TOPKS,
                  heads: Iterable[int] = HEADS, extra_path: Sequence[os.PathLike[str] | str] = (),
                  env: Mapping[str, str] | None = None,
                  timeout: float = DEFAULT_TIMEOUT_S) -> RuntimeProbe:
    """Run PROBE_SCRIPT in ``python``; never raises for the target's failures.

    ``extra_path`` is prepended to PYTHONPATH (e.g. an unpacked site-packages
    read with ``--site-packages``).
    """
    heads_t, topks_t = tuple(sorted(set(heads))), tuple(sorted(set(topks)))
    run_env = dict(os.environ if env is None else env)
    if extra_path:
        parts = [str(p) for p in extra_path]
        if run_env.get("PYTHONPATH"):
            parts.append(run_env["PYTHONPATH"])
        run_env["PYTHONPATH"] = os.pathsep.join(parts)
    args = json.dumps({"heads": list(heads_t), "topks": list(topks_t)})
    py = str(python)
    try:
        res = subprocess.run([py, "-c", PROBE_SCRIPT, args], capture_output=True, text=True,
                             timeout=timeout, env=run_env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return RuntimeProbe(py, False, error=f"{py}: no such interpreter",
                            heads=heads_t, topks=topks_t)
    except PermissionError:
        return RuntimeProbe(py, False, error=f"{py}: not executable", heads=heads_t,
                            topks=topks_t)
    except subprocess.TimeoutExpired:
        return RuntimeProbe(py, False, error=f"importing flashinfer took over {timeout:.0f} s",
                            heads=heads_t, topks=topks_t)
    probe = parse_probe_output(py, res.stdout, heads_t, topks_t)
    if not probe.ok and probe.error == "the probe printed no result":
        tail = (res.stderr or "").strip().splitlines()[-1:] or [f"exit {res.returncode}"]
        probe = RuntimeProbe(py, False, error=f"the probe failed: {tail[0]}",
                             heads=heads_t, topks=topks_t)
    return probe


def _fmt(pairs: Iterable[tuple[int, int]], limit: int = 12) -> str:
    items = sorted(pairs)
    text = ", ".join(f"({h}, {k})" for h, k in items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def compare(static: Dsv4Support | None, probe: RuntimeProbe,
            static_version: str | None = None) -> list[Finding]:
    """Findings where the runtime answer and the static reading disagree.

    Runtime narrower than static (the reading promises a kernel the process
    does not route to) is an ERROR: the plan would be judged healthy wrongly.
    Runtime wider is a WARNING: the static reading is too pessimistic.
    """
    if not probe.ok:
        return [Finding(
            id=ID_IMPORT_FAILED, severity=Severity.WARNING,
            title="`--import`: FlashInfer could not be imported in the target interpreter",
            fix=(f"Check the serving environment: `{probe.python} -c 'import flashinfer'`; "
                 f"the static reading still stands"),
            detail=probe.error or "",
            data={"python": probe.python},
        )]
    out: list[Finding] = []
    version = static_version or (static.version if static else None)
    if version and probe.version and probe.version != version:
        out.append(Finding(
            id=ID_IMPORT_DISAGREES, severity=Severity.ERROR,
            title=(f"The target interpreter imports flashinfer {probe.version}, but "
                   f"{version} is installed where dsparkctl read it"),
            fix=("Point doctor at the interpreter and site-packages the server uses "
                 "(--python / --site-packages), and remove the other copy from sys.path"),
            detail=f"imported from {probe.file}",
            data={"static_version": version, "runtime_version": probe.version},
        ))
    supported = probe.supported
    if static is None or supported is None or static.kind == "unknown":
        return out
    grid = [(h, k) for h in probe.heads for k in probe.topks]
    static_yes = frozenset(p for p in grid if static.supports_decode(*p))
    missing_at_runtime = static_yes - supported
    extra_at_runtime = supported - static_yes
    for pairs, severity, what in (
            (missing_at_runtime, Severity.ERROR, "the static reading says decode serves "
                                                "shapes the running FlashInfer does not"),
            (extra_at_runtime, Severity.WARNING, "the running FlashInfer serves decode "
                                                "shapes the static reading does not")):
        if not pairs:
            continue
        out.append(Finding(
            id=ID_IMPORT_DISAGREES, severity=severity,
            title=f"`--import`: {what}",
            fix=("Trust the runtime answer; report the tree to dsparkctl (the static reader or "
                 "its table is out of date) and check for monkey-patches or a second "
                 "flashinfer on sys.path"),
            detail=(f"{_fmt(pairs)} (grid heads {probe.heads[0]}..{probe.heads[-1]} x topk "
                    f"{list(probe.topks)}; runtime API: "
                    f"{'supports_decode' if 'supports_decode' in probe.apis else 'dispatch'})"),
            data={"pairs": sorted(map(list, pairs)), "static_kind": static.kind},
        ))
    apis = list(probe.apis.values())
    if len(apis) == 2 and apis[0] != apis[1]:
        out.append(Finding(
            id=ID_IMPORT_DISAGREES, severity=Severity.WARNING,
            title="FlashInfer's supports_decode() and _DECODE_DSV4_DISPATCH disagree",
            fix="Trust supports_decode(); report it upstream",
            detail=_fmt(apis[0] ^ apis[1]),
        ))
    return out


def runtime_support(probe: RuntimeProbe, static: Dsv4Support | None) -> Dsv4Support | None:
    """A Dsv4Support from the runtime answer (source ``import``).

    A pair table is taken whole; an envelope keeps the static bounds when the
    grid agrees with them (the grid cannot prove "any topk"). Prefill and miss
    behaviour are not observable without a GPU and come from ``static``.
    """
    if not probe.ok or probe.supported is None:
        return None
    base = static or Dsv4Support(version=probe.version, kind="unknown", source="import")
    if probe.pairs is not None:
        return Dsv4Support(version=probe.version, kind="pairs", source="import",
                           pairs=probe.pairs, miss_behavior=base.miss_behavior,
                           prefill=base.prefill, notes=base.notes)
    if base.kind == "envelope" and not compare(base, probe, probe.version):
        return Dsv4Support(version=probe.version, kind="envelope", source="import",
                           any_topk=True, max_heads=base.max_heads, min_topk=base.min_topk,
                           miss_behavior=base.miss_behavior, prefill=base.prefill,
                           notes=base.notes)
    return Dsv4Support(version=probe.version, kind="pairs", source="import",
                       pairs=probe.supported, miss_behavior=base.miss_behavior,
                       prefill=base.prefill,
                       notes=(*base.notes, "runtime answer on the probed grid only"))


def check_against_static(python: str | os.PathLike[str] | Path, static: Dsv4Support | None, *,
                         topks: Iterable[int] = DEFAULT_TOPKS,
                         extra_path: Sequence[os.PathLike[str] | str] = (),
                         timeout: float = DEFAULT_TIMEOUT_S) -> list[Finding]:
    """The doctor's ``--import`` step: probe, then compare with the static reading."""
    wanted = sorted(set(DEFAULT_TOPKS) | set(topks))
    probe = probe_runtime(python, topks=wanted, extra_path=extra_path, timeout=timeout)
    return compare(static, probe)


def probe_to_json(probe: RuntimeProbe) -> dict[str, Any]:
    return {
        "python": probe.python, "ok": probe.ok, "version": probe.version, "error": probe.error,
        "dispatch_type": probe.dispatch_type, "decode_max_tokens": probe.decode_max_tokens,
        "apis": {k: sorted(map(list, v)) for k, v in probe.apis.items()},
    }
