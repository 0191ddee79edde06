"""``dsparkctl install-kernels``: build + install the bundled kernel, route SGLang to it.

Exit codes: 0 done (or nothing to do; a dry run), 1 a step was refused or
failed (a finding says why), 2 bad usage (no GPU and no --arch, no torch in
the target, ...). ``--revert`` undoes every patch byte for byte.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from dsparkctl.commands.patches import (
    _error_finding,
    _finish,
    _target,
    absolute_python,
    revert_findings,
)
from dsparkctl.errors import UsageError
from dsparkctl.findings import Finding, Severity
from dsparkctl.output import console, err_console, fail_usage

ROUTE_PATCH = "sglang-route-sm120"
PAIRS_PATCH = "flashinfer-dsv4-pairs"


def _support_of(site: Path) -> Any:
    from dsparkctl.flashinfer_dispatch import read_flashinfer

    try:
        return read_flashinfer(site).support
    except UsageError:
        return None


def install_kernels(
    arch: str | None = typer.Option(None, "--arch", help="Build for this GPU instead of the one "
                                    "found: 12.0 (sm_120a), 12.1 (sm_121a) or 9.0 (sm_90a)."),
    python: Path | None = typer.Option(None, "--python", help="The serving environment's "
                                       "interpreter: build against its torch, patch its sglang."),
    site_packages: Path | None = typer.Option(None, "--site-packages", help="Patch this "
                                              "site-packages folder (byte-compile checks only)."),
    prefix: Path | None = typer.Option(None, "--prefix", help="Install here (default: "
                                       "~/.cache/dsparkctl/install)."),
    route: str = typer.Option("missing", "--route", help="missing: only shapes the installed "
                              "FlashInfer cannot serve; all: every decode-sized DSV4 call. Both "
                              "also route the prefill-sized calls (> 64 tokens) FlashInfer "
                              "rejects or answers wrongly."),
    backend: str = typer.Option("bundled", "--backend", help="bundled (build + route) or "
                                "flashinfer (add the missing pairs to FlashInfer <= 0.6.17)."),
    no_route: bool = typer.Option(False, "--no-route", help="Build and install only."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be built and show the "
                                 "patch diffs; change nothing."),
    revert: bool = typer.Option(False, "--revert", help="Undo every dsparkctl patch in the target."),
    force: bool = typer.Option(False, "--force", help="Patch an unknown version or a modified "
                               "file anyway (anchors are still checked). Loud."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Build the bundled sparse-MLA kernel for this GPU and route SGLang's DSV4 decode to it."""
    from dsparkctl import install, patching

    if route not in ("missing", "all"):
        fail_usage(f"--route {route!r}: use 'missing' or 'all'")
    if backend not in ("bundled", "flashinfer"):
        fail_usage(f"--backend {backend!r}: use 'bundled' or 'flashinfer'")
    python = absolute_python(python)
    say = (lambda _m: None) if as_json else (lambda m: err_console.print(f"[cyan]•[/cyan] {escape(m)}"))
    findings: list[Finding] = []
    sections: dict[str, Any] = {"dry_run": dry_run}

    if revert:
        targets = [_target(python, site_packages, "sglang", None)] if (python or site_packages) \
            else []
        for dist in () if targets else ("sglang", "flashinfer-python"):
            try:
                targets.append(patching.Target(patching.find_site_packages(None, dist),
                                               Path(sys.executable)))
            except patching.PatchError:
                continue
        reverted: list[dict[str, Any]] = []
        for t in {str(t.site): t for t in targets}.values():
            fs, results = revert_findings(t, None, dry_run=dry_run)
            findings.extend(fs)
            reverted.extend({"site_packages": str(t.site), **r.to_json()} for r in results)
        if not targets:
            findings.append(Finding("patch-none", Severity.INFO,
                                    "neither sglang nor flashinfer-python is installed here"))
        _finish("revert", findings, as_json, command="install-kernels", reverted=reverted)

    if backend == "flashinfer":
        target = _target(python, site_packages, "flashinfer-python", None)
        res = _apply(PAIRS_PATCH, target, None, force=force, dry_run=dry_run, as_json=as_json,
                     findings=findings, sections=sections)
        findings.append(Finding("install-flashinfer-pairs", Severity.INFO,
                                f"{PAIRS_PATCH}: {res.message}",
                                "The next server start rebuilds FlashInfer's sparse_mla_sm120 "
                                "module (a few minutes of JIT)."))
        _finish("install", findings, as_json, command="install-kernels", patches=[res.to_json()], **sections)

    # 1. arch and the target's torch
    serving_python = str(python) if python else sys.executable
    try:
        if arch:
            try:
                arch_n = install.normalize_arch(arch)
            except UsageError as exc:  # a wrong --arch is bad usage, dry run or not
                fail_usage(str(exc))
        else:
            from dsparkctl.gpus import probe_gpus

            rep = probe_gpus()
            arch_n = install.arch_from_gpus([g.compute_capability for g in rep.gpus])
    except UsageError as exc:
        if not dry_run:
            fail_usage(str(exc))
        arch_n = None
        # The dry run says what the real run would do: stop here (so exit 1, not healthy).
        findings.append(Finding("install-no-arch", Severity.ERROR,
                                f"the real run would stop here: {exc}",
                                "pass --arch 12.0 (or 12.1, 9.0) to build for a GPU not here"))
    torch_info = None
    try:
        torch_info = install.query_torch(serving_python)
        if torch_info.cuda is None:
            torch_info = None
            raise UsageError(f"{serving_python}'s torch is a CPU-only build: the kernel must link "
                             "against a CUDA torch; point --python at the serving environment")
    except UsageError as exc:
        if not dry_run:
            fail_usage(str(exc))
        findings.append(Finding("install-no-torch", Severity.ERROR,
                                f"the real run would stop here: {exc}",
                                "install-kernels needs the serving environment's torch (a CUDA "
                                "build) to build: point --python at the serving environment"))
    prefix = (prefix or install.default_prefix()).expanduser().resolve()
    sections["prefix"] = str(prefix)

    # 2. build + install
    manifest: Path | None = None
    if arch_n and torch_info:

        key = install.install_key(arch_n, torch_info)
        manifest = prefix / key / install.MANIFEST
        sections["build"] = {"arch": arch_n, "key": key, "torch": torch_info.version,
                             "cuda": torch_info.cuda, "manifest": str(manifest)}
        if dry_run:
            cached = install.installed_intact(manifest)
            findings.append(Finding(
                "install-would-build", Severity.INFO,
                f"would {'reuse the installed' if cached else 'compile and install the'} bundled "
                f"kernel for {arch_n} (torch {torch_info.version}, CUDA {torch_info.cuda}) "
                f"into {prefix / key}"))
        else:
            with console.status("building the bundled kernel", spinner="dots") if not as_json \
                    else contextlib.nullcontext():
                result = install.build_and_install(arch_n, torch_info, prefix, say)
            sections["build"].update(result.to_json())
            findings.append(Finding(
                "install-kernel", Severity.INFO,
                ("built and installed" if result.built else "installed (cached build)"
                 if result.installed else "already installed")
                + f": {result.library}", detail=f"build log: {result.log}"))
    elif dry_run:
        findings.append(Finding("install-would-build", Severity.INFO,
                                "would compile the bundled kernel once an arch and a torch are known "
                                "(see the warnings above)"))

    # 3. route
    if no_route:
        _finish("install", findings, as_json, command="install-kernels", **sections)
    try:
        target = _target(python, site_packages, "sglang", None) if (python or site_packages) \
            else patching.Target(patching.find_site_packages(None, "sglang"), Path(sys.executable))
    except (SystemExit, typer.Exit):
        raise
    except patching.PatchError as exc:
        findings.append(Finding("install-no-sglang", Severity.WARNING,
                                f"nothing to route: {exc}",
                                "point --python at the serving environment to route SGLang"))
        _finish("install", findings, as_json, command="install-kernels", **sections)
    from dsparkctl import routing

    support = _support_of(target.site)
    params: dict[str, Any] = {"route": route,
                              "manifest": str(manifest) if manifest else None,
                              "flashinfer_decode": routing.from_support(support) if support
                              else None}
    res = _apply(ROUTE_PATCH, target, params, force=force, dry_run=dry_run, as_json=as_json,
                 findings=findings, sections=sections)
    if res.forced:
        findings.append(Finding("patch-forced", Severity.WARNING,
                                f"{ROUTE_PATCH}: FORCED past: " + " | ".join(res.plan.blockers),
                                "`dsparkctl install-kernels --revert` undoes it"))
    findings.append(Finding("install-route", Severity.INFO, f"{ROUTE_PATCH}: {res.message} "
                            f"(route {route})", "`dsparkctl patches status` shows it; "
                            "`dsparkctl install-kernels --revert` undoes it"))
    _finish("install", findings, as_json, command="install-kernels", patches=[res.to_json()],
            target={"site_packages": str(target.site)}, **sections)


def _apply(patch_id: str, target: Any, params: dict[str, Any] | None, *, force: bool,
           dry_run: bool, as_json: bool, findings: list[Finding], sections: dict[str, Any]) -> Any:
    """Apply one patch; a refusal ends the command with its finding (exit 1), a folder without
    the package ends it as bad usage (exit 2). A dry run prints the diff."""
    from dsparkctl import patching

    try:
        res = patching.apply_patch(patch_id, target, params, force=force, dry_run=dry_run)
    except patching.WrongTarget as exc:
        fail_usage(str(exc))
    except patching.PatchError as exc:
        findings.append(_error_finding(exc, patch_id))
        _finish("install", findings, as_json, command="install-kernels", **sections)
    if dry_run and not as_json:
        sys.stdout.write(res.plan.diff_text())
        sys.stdout.flush()
    return res


def register(app: typer.Typer) -> None:
    app.command("install-kernels")(install_kernels)
