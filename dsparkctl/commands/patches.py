"""``dsparkctl patches apply|status|revert``: the patch machinery without building kernels.

For a build host, a container image or a test: the same versioned, verified,
revertible patches that ``install-kernels`` applies. Exit codes: 0 done (or
nothing to do), 1 refused / drift / lock held / not writable (a finding says
why and what to do), 2 bad usage.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from dsparkctl.findings import EXIT_CODES, Finding, Severity, envelope
from dsparkctl.output import console, emit_json, err_console, fail_usage

DEFAULT_PATCH = "sglang-route-sm120"

_PYTHON_HELP = "The serving environment's interpreter; its site-packages is patched and the " \
    "patched modules are imported there after writing."
_SITE_HELP = "Patch this site-packages folder (e.g. a container image's); byte-compile checks " \
    "only."


def _target(python: Path | None, site_packages: Path | None, distribution: str,
            workspace: Path | None) -> Any:
    from dsparkctl.patching import PatchError, Target, find_site_packages

    if python is not None and site_packages is not None:
        fail_usage("give one target: --python PATH or --site-packages DIR, not both")
    python = absolute_python(python)
    if site_packages is not None:
        if not site_packages.is_dir():
            fail_usage(f"--site-packages {site_packages}: no such folder; pass the folder that "
                       f"holds sglang/ (or flashinfer/) and its .dist-info")
        return Target(site_packages.resolve(), None, workspace)
    try:
        site = find_site_packages(python, distribution)
    except PatchError as exc:
        fail_usage(str(exc))
    return Target(site, python or Path(sys.executable), workspace)


def absolute_python(python: Path | None) -> Path | None:
    """An absolute path to the interpreter, symlinks kept (a venv's python is a link whose
    target is outside the venv): the import check runs it from another working folder."""
    return None if python is None else Path(os.path.abspath(python.expanduser()))


def _parse_pairs(raw: list[str]) -> list[list[int]] | None:
    if not raw:
        return None
    out = []
    for item in raw:
        h, sep, k = item.lower().partition("x")
        if not sep or not h.strip().isdigit() or not k.strip().isdigit():
            fail_usage(f"--pair {item!r}: write HEADSxTOPK, e.g. --pair 64x192")
        out.append([int(h), int(k)])
    return out


def _finish(action: str, findings: list[Finding], as_json: bool, *, command: str = "patches",
            **sections: Any) -> None:
    doc = envelope(command, findings, action=action, **sections)
    if as_json:
        emit_json(doc)
    else:
        for f in doc["findings"]:
            style = {"error": "bold red", "warning": "yellow", "info": "green"}[f["severity"]]
            console.print(f"[{style}]{f['severity']}[/{style}] {escape(f['title'])}", soft_wrap=True)
            if f.get("detail"):
                console.print(f"  {f['detail']}", soft_wrap=True, markup=False)
            if f.get("fix") and f["severity"] != "info":
                console.print(f"  fix: {f['fix']}", soft_wrap=True, markup=False)
    raise typer.Exit(EXIT_CODES[doc["verdict"]])


def _error_finding(exc: Exception, patch_id: str | None) -> Finding:
    from dsparkctl.patching import NotWritable, PatchLocked

    kind = ("patch-locked" if isinstance(exc, PatchLocked) else
            "patch-not-writable" if isinstance(exc, NotWritable) else "patch-refused")
    fix = {"patch-locked": "wait for the other dsparkctl run to finish, then run again",
           "patch-not-writable": "run as the owner of the environment, or patch a writable copy",
           }.get(kind, "see the message: it names what was found and what to do")
    return Finding(id=kind, severity=Severity.ERROR,
                   title=f"{patch_id or 'patches'}: {exc}", fix=fix,
                   data={"patch": patch_id} if patch_id else {})


def apply_cmd(
    patch: list[str] = typer.Option([], "--patch", help=f"Patch id (repeatable; default "
                                    f"{DEFAULT_PATCH}; also flashinfer-dsv4-pairs)."),
    python: Path | None = typer.Option(None, "--python", help=_PYTHON_HELP),
    site_packages: Path | None = typer.Option(None, "--site-packages", help=_SITE_HELP),
    route: str | None = typer.Option(None, "--route", help="missing (default): route only the "
                                     "shapes FlashInfer cannot serve; all: every decode-sized DSV4 "
                                     "call. Both also route the prefill-sized calls (> 64 tokens) "
                                     "FlashInfer rejects or answers wrongly."),
    kernel_manifest: Path | None = typer.Option(None, "--kernel-manifest", help="Manifest of the "
                                                "installed bundled kernels (install-kernels "
                                                "passes it)."),
    pair: list[str] = typer.Option([], "--pair", help="flashinfer-dsv4-pairs: HEADSxTOPK to add "
                                   "(repeatable; default: the pairs FlashInfer 0.6.18 added)."),
    workspace: Path | None = typer.Option(None, "--flashinfer-workspace-base", help="Where the "
                                          "serving user's FlashInfer JIT cache lives (default "
                                          "$FLASHINFER_WORKSPACE_BASE or ~)."),
    force: bool = typer.Option(False, "--force", help="Patch an unknown version or a modified "
                               "file anyway (anchors are still checked exactly)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the unified diff; change nothing."),
    no_import_check: bool = typer.Option(False, "--no-import-check", help="Skip importing the "
                                         "patched modules in the target interpreter."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Apply patches (verified, atomic, backed up; a second run changes nothing)."""
    from dsparkctl.patching import (
        PatchError,
        WrongTarget,
        apply,
        get_spec,
        plan_patch,
        recover_target,
    )

    ids = patch or [DEFAULT_PATCH]
    if route is not None and route not in ("missing", "all"):
        fail_usage(f"--route {route!r}: use 'missing' or 'all'")
    if kernel_manifest is not None and not kernel_manifest.is_file():
        fail_usage(f"--kernel-manifest {kernel_manifest}: no such file; pass the manifest.json "
                   f"that `dsparkctl install-kernels` wrote (its path is in that command's output)")
    pairs = _parse_pairs(pair)
    findings: list[Finding] = []
    results: list[dict[str, Any]] = []
    diffs: list[str] = []
    target = None
    for pid in ids:
        try:
            spec = get_spec(pid)
        except PatchError as exc:
            fail_usage(str(exc))
        params: dict[str, Any] = {}
        if route is not None or kernel_manifest is not None:
            if "route" not in spec.params:
                fail_usage(f"--route/--kernel-manifest do not apply to patch {pid}")
            params.update(route=route, manifest=str(kernel_manifest) if kernel_manifest else None)
        if pairs is not None:
            if "pairs" not in spec.params:
                fail_usage(f"--pair does not apply to patch {pid}")
            params["pairs"] = pairs
        target = _target(python, site_packages, spec.distribution, workspace)
        try:
            recovered = None if dry_run else recover_target(target)
            plan = plan_patch(spec, target, params, force=force)
            res = apply(plan, force=force, dry_run=dry_run, import_check=not no_import_check)
        except WrongTarget as exc:  # the folder does not hold the package: bad usage
            fail_usage(str(exc))
        except PatchError as exc:  # a finding about the target (exit 1)
            findings.append(_error_finding(exc, pid))
            continue
        if recovered:
            findings.append(Finding(id="patch-recovered", severity=Severity.WARNING,
                                    title=f"{target.site}: {recovered}"))
        if res.forced:
            findings.append(Finding(
                id="patch-forced", severity=Severity.WARNING,
                title=f"{pid}: FORCED past: " + " | ".join(plan.blockers),
                fix=f"check the result; `dsparkctl patches revert --patch {pid}` undoes it"))
        for c in res.checks:
            if c.get("result") == "skipped":
                findings.append(Finding(id="patch-import-check-skipped", severity=Severity.INFO,
                                        title=f"{pid}: import check skipped", detail=c["reason"]))
        findings.append(Finding(id="patch-dry-run" if dry_run else
                                "patch-applied" if res.changed else "patch-unchanged",
                                severity=Severity.INFO, title=f"{pid}: {res.message}",
                                detail="; ".join(plan.notes)))
        results.append(res.to_json())
        if dry_run:
            diffs.append(res.plan.diff_text())
    if dry_run and not as_json:
        sys.stdout.write("".join(diffs))
        sys.stdout.flush()
    _finish("apply", findings, as_json, target=_target_json(target), patches=results,
            **({"diff": "".join(diffs)} if dry_run else {}))


def _target_json(target: Any) -> dict[str, Any] | None:
    if target is None:
        return None
    return {"site_packages": str(target.site),
            "python": str(target.python) if target.python else None}


def _any_target(python: Path | None, site_packages: Path | None, workspace: Path | None) -> Any:
    """status / revert: the site-packages holding sglang, else the one holding flashinfer."""
    from dsparkctl.patching import PatchError, Target, find_site_packages

    if site_packages is not None:
        return _target(python, site_packages, "sglang", workspace)
    python = absolute_python(python)
    for dist in ("sglang", "flashinfer-python"):
        try:
            return Target(find_site_packages(python, dist), python or Path(sys.executable),
                          workspace)
        except PatchError:
            continue
    fail_usage("neither sglang nor flashinfer-python is installed for "
               f"{python or sys.executable}; pass --python or --site-packages")


def status_cmd(
    python: Path | None = typer.Option(None, "--python", help=_PYTHON_HELP),
    site_packages: Path | None = typer.Option(None, "--site-packages", help=_SITE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """List applied patches and whether the files on disk still match what was written."""
    from dsparkctl.patch_txn import pending_journal
    from dsparkctl.patching import PatchError, refresh_needed, status

    target = _any_target(python, site_packages, None)
    try:
        applied = status(target)
    except PatchError as exc:
        _finish("status", [_error_finding(exc, None)], as_json, target=_target_json(target),
                patches=[])
    findings: list[Finding] = []
    if pending_journal(target.state_dir) is not None:
        findings.append(Finding(
            id="patch-interrupted", severity=Severity.ERROR,
            title=f"an interrupted patch run left a pending change in {target.state_dir}",
            fix="run `dsparkctl patches apply` or `dsparkctl patches revert`: either rolls it "
                "back first"))
    if not applied:
        findings.append(Finding(id="patch-none", severity=Severity.INFO,
                                title=f"no dsparkctl patches are applied in {target.site}"))
    refresh = {r.patch_id: r for r in refresh_needed(target)} if applied else {}
    for a in applied:
        r = refresh.get(a.id)
        if a.intact and r is not None and r.stale:
            findings.append(Finding(
                id="patch-stale", severity=Severity.ERROR,
                title=f"{a.id}: {', '.join(r.stale)} no longer fits the target: the FlashInfer "
                      f"installed now serves other shapes than the one it was written for",
                fix=f"`dsparkctl patches apply --patch {a.id}` (refreshes it; "
                    f"--dry-run shows the diff)"))
            continue
        if a.intact and r is not None and r.newer:
            findings.append(Finding(
                id="patch-update-available", severity=Severity.INFO,
                title=f"{a.id}: applied and intact; this dsparkctl writes "
                      f"{', '.join(r.newer)} differently (a newer version)",
                fix=f"`dsparkctl patches apply --patch {a.id}` updates it"))
            continue
        if a.intact:
            findings.append(Finding(id="patch-intact", severity=Severity.INFO,
                                    title=f"{a.id}: applied to {a.distribution} {a.version}, "
                                          f"files match what was written"))
            continue
        broken = [f"{f.path}: backup {f.backup}" for f in a.files if f.backup not in (None, "ok")]
        if broken and all(f.state == "as-written" for f in a.files):
            findings.append(Finding(
                id="patch-backup-lost", severity=Severity.ERROR,
                title=f"{a.id}: applied, but the revert cannot restore the originals: "
                      + "; ".join(broken),
                fix=f"reinstall {a.distribution} {a.version} (pip install --force-reinstall "
                    f"--no-deps {a.distribution}=={a.version}), then `dsparkctl patches "
                    f"revert --patch {a.id}` (it removes the rest) and apply again"))
            continue
        bad = [f"{f.path}: {f.state}" for f in a.files if f.state != "as-written"]
        bad += broken
        bad += [f"{m['path']}: {m['state']}" for m in a.set_aside if m["state"] != "aside"]
        if a.installed_version != a.version:
            bad.insert(0, f"{a.distribution} is now {a.installed_version}")
        findings.append(Finding(
            id="patch-drift", severity=Severity.ERROR,
            title=f"{a.id}: the files changed since it was applied (pip reinstall?)",
            detail="; ".join(bad),
            fix=f"`dsparkctl patches revert --patch {a.id}`, then apply again (a file changed "
                f"since is left alone; one that still uses the patch's router makes the revert "
                f"refuse: reinstall {a.distribution} {a.version} first)"))
    _finish("status", findings, as_json, target=_target_json(target),
            patches=[a.to_json() for a in applied])


def revert_cmd(
    patch: str | None = typer.Option(None, "--patch", help="Revert only this patch "
                                     "(default: all)."),
    python: Path | None = typer.Option(None, "--python", help=_PYTHON_HELP),
    site_packages: Path | None = typer.Option(None, "--site-packages", help=_SITE_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be restored."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Put back the original files byte for byte (a file changed since is left alone; if it
    still imports the patch's router, nothing is reverted until it is restored)."""
    target = _any_target(python, site_packages, None)
    if patch is not None:
        from dsparkctl.patching import read_state

        applied = read_state(target).get("patches", {}) if target.state_dir.is_dir() else {}
        if patch not in applied:
            fail_usage(f"patch {patch} is not applied in {target.site} "
                       f"(applied: {', '.join(applied) or 'none'})")
    findings, results = revert_findings(target, patch, dry_run=dry_run)
    if dry_run and not as_json:
        sys.stdout.write("".join(r.diff for r in results))
    if not as_json and not results and not any(f.severity == Severity.ERROR for f in findings):
        err_console.print(f"nothing to revert in {target.site}", markup=False)
    _finish("revert", findings, as_json, target=_target_json(target),
            patches=[r.to_json() for r in results])


def revert_findings(target: Any, patch: str | None, *, dry_run: bool
                    ) -> tuple[list[Finding], list[Any]]:
    """Revert (or plan to) and say what happened: shared by ``patches revert`` and
    ``install-kernels --revert``."""
    from dsparkctl.patching import PatchError, revert

    try:
        results = revert(target, patch, dry_run=dry_run)
    except PatchError as exc:
        return [_error_finding(exc, patch)], []
    findings: list[Finding] = []
    if not results:
        findings.append(Finding(id="patch-none", severity=Severity.INFO,
                                title=f"no dsparkctl patches are applied in {target.site}"))
    if results and not dry_run:
        from dsparkctl.patching import refresh_needed

        for r in refresh_needed(target):
            if r.stale:
                findings.append(Finding(
                    id="patch-stale", severity=Severity.WARNING,
                    title=f"{r.patch_id} (still applied) no longer fits the target after this "
                          f"revert: {', '.join(r.stale)} describes the FlashInfer it replaced",
                    fix=f"`dsparkctl patches apply --patch {r.patch_id}` refreshes it"))
    for r in results:
        verb = "would restore" if dry_run else "restored"
        findings.append(Finding(id="patch-reverted", severity=Severity.INFO,
                                title=f"{r.patch_id}: {verb} {len(r.restored)} path(s)",
                                detail=", ".join(r.restored)))
        for left in r.left_alone:
            findings.append(Finding(id="patch-left-alone", severity=Severity.WARNING,
                                    title=f"{r.patch_id}: {left}",
                                    fix="reinstall the package if it should be stock"))
    return findings, results


def register(app: typer.Typer) -> None:
    sub = typer.Typer(name="patches", no_args_is_help=True, add_completion=False,
                      help="Apply, check and revert dsparkctl's versioned patches.")
    sub.command("apply")(apply_cmd)
    sub.command("status")(status_cmd)
    sub.command("revert")(revert_cmd)
    app.add_typer(sub, name="patches")
