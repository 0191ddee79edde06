"""Apply, check and revert versioned patches on an installed serving environment.

The guarantees (issue 4) and where they come from:

- keyed to known versions: a spec lists the upstream sha256 of each file for
  each version it was checked against; anything else is refused unless forced,
  and even forced the anchors must match exactly once;
- verified before (every file hashes to the upstream file of the installed
  version, else nothing is written) and after (byte-compiles from disk, then
  imports in the target interpreter when one is given);
- atomic, backed up, interrupt-safe and locked: see ``patch_txn``; the
  originals are kept under ``<site>/.dsparkctl-patches/backups/`` and every
  change (backups and ``state.json`` included) is one journaled transaction;
- idempotent: a plan is the difference between the disk and the wanted bytes,
  so a second apply has nothing to do and says so;
- revertible byte for byte, and honest about drift: ``status`` compares each
  file with what was written, and revert never overwrites a file that someone
  changed after the apply (e.g. ``pip install --force-reinstall``).

The plan always starts from the *original* bytes (the backup once applied), so
re-applying with other parameters (another ``--route``, other pairs) is an
update of the same patch, not a patch on top of a patch.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import py_compile
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from dsparkctl import __version__
from dsparkctl.patch_spec import (
    AnchorError,
    PatchSpec,
    SetAside,
    load_specs,
    render,
    validate_pairs,
)
from dsparkctl.patch_txn import (
    NotWritable,
    PatchError,
    PatchLocked,
    Transaction,
    is_permission_error,
    locked,
    not_writable_message,
    pending_journal,
    recover,
    remove_empty_dirs,
    sha256_bytes,
    sha256_file,
)
from dsparkctl.resources import patches_dir
from dsparkctl.routing import read_flashinfer_decode, route_config, route_config_bytes

__all__ = [
    "AppliedPatch",
    "ApplyResult",
    "NotWritable",
    "PatchError",
    "PatchLocked",
    "PatchPlan",
    "PatchRefused",
    "RevertResult",
    "Target",
    "WrongTarget",
    "apply",
    "apply_patch",
    "find_site_packages",
    "get_spec",
    "installed_version",
    "plan_patch",
    "recover_target",
    "refresh_needed",
    "revert",
    "specs",
    "status",
]

STATE_DIR = ".dsparkctl-patches"
STATE_FILE = "state.json"
BACKUPS = "backups"
STATE_SCHEMA = 1


class PatchRefused(PatchError):
    """The target is not what the patch was written for; nothing was written."""


class WrongTarget(PatchError):
    """The folder given is not a site-packages holding the patch's package (bad usage)."""


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """A site-packages tree to patch.

    ``python`` is the interpreter that serves from it (used for the import
    check); ``flashinfer_workspace_base`` is where FlashInfer's JIT cache lives
    (``$FLASHINFER_WORKSPACE_BASE`` or the serving user's home).
    """

    site: Path
    python: Path | None = None
    flashinfer_workspace_base: Path | None = None

    @property
    def state_dir(self) -> Path:
        return self.site / STATE_DIR

    def workspace_base(self) -> Path:
        if self.flashinfer_workspace_base is not None:
            return self.flashinfer_workspace_base
        env = os.environ.get("FLASHINFER_WORKSPACE_BASE")
        return Path(env) if env else Path.home()


def _norm(name: str) -> str:
    return "".join("-" if c in "-_." else c for c in name.lower())


def installed_version(site: Path, distribution: str) -> str | None:
    """The installed version of ``distribution`` in ``site``, from its METADATA (static)."""
    want = _norm(distribution)
    found: list[str] = []
    for info in site.glob("*.dist-info"):
        meta = info / "METADATA"
        try:
            head = meta.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0]
        except OSError:
            continue
        fields = {}
        for line in head.splitlines():
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version") and key not in fields:
                fields[key] = value.strip()
        if _norm(fields.get("Name", "")) == want and "Version" in fields:
            found.append(fields["Version"])
    if len(found) > 1:
        raise PatchError(f"{site} holds {len(found)} installs of {distribution} "
                         f"({', '.join(found)}); repair the environment (pip uninstall / "
                         f"reinstall) before patching")
    return found[0] if found else None


_SITE_PROBE = (
    "import json, site, sys, sysconfig\n"
    "paths = []\n"
    "for p in list(site.getsitepackages()) + [site.getusersitepackages(), "
    "sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']] + sys.path:\n"
    "    if p and p not in paths: paths.append(p)\n"
    "print(json.dumps(paths))\n"
)


def find_site_packages(python: Path | None, distribution: str) -> Path:
    """The site-packages dir of ``python`` (default: this interpreter) that holds ``distribution``."""
    if python is None:
        exe = sys.executable
    else:
        exe = str(python)
        if not Path(exe).exists():
            raise PatchError(f"--python {python}: no such interpreter")
    try:
        res = subprocess.run([exe, "-I", "-c", _SITE_PROBE], capture_output=True, text=True,
                             timeout=60)
    except OSError as exc:
        raise PatchError(f"cannot run {exe}: {exc}") from exc
    if res.returncode != 0:
        raise PatchError(f"{exe} could not report its site-packages: {res.stderr.strip()[-300:]}")
    for p in json.loads(res.stdout):
        if p and Path(p).is_dir() and installed_version(Path(p), distribution):
            return Path(p)
    raise PatchError(f"{distribution} is not installed for {exe}; pass --python for the "
                     f"serving interpreter or --site-packages DIR")


# --------------------------------------------------------------------------- specs


def specs(root: Path | None = None) -> dict[str, PatchSpec]:
    return load_specs(root or patches_dir())


def get_spec(patch_id: str, root: Path | None = None) -> PatchSpec:
    all_specs = specs(root)
    if patch_id not in all_specs:
        raise PatchError(f"unknown patch {patch_id!r}; known: {', '.join(sorted(all_specs))}")
    return all_specs[patch_id]


def resolve_params(spec: PatchSpec, params: Mapping[str, Any] | None,
                   base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Spec defaults, then ``base`` (what an earlier apply used), then ``params``."""
    out = dict(spec.params)
    out.update({k: v for k, v in (base or {}).items() if k in spec.params})
    for key, value in (params or {}).items():
        if key not in spec.params:
            raise PatchError(f"patch {spec.id} has no parameter {key!r} "
                             f"(it takes {', '.join(sorted(spec.params)) or 'none'})")
        if value is not None:
            out[key] = value
    if "pairs" in out:
        try:
            out["pairs"] = validate_pairs(out["pairs"], spec.param_rules.get("pairs", {}))
        except ValueError as exc:
            raise PatchError(f"patch {spec.id}: {exc}") from exc
    if "route" in out and out["route"] not in ("missing", "all"):
        raise PatchError(f"route must be 'missing' or 'all', not {out['route']!r}")
    return out


# --------------------------------------------------------------------------- state


def _state_path(target: Target) -> Path:
    return target.state_dir / STATE_FILE


def read_state(target: Target) -> dict[str, Any]:
    try:
        obj = json.loads(_state_path(target).read_text())
    except FileNotFoundError:
        return {"schema": STATE_SCHEMA, "patches": {}}
    except (OSError, ValueError) as exc:
        raise PatchError(f"{_state_path(target)} is unreadable ({exc}); inspect it (it lists "
                         f"the backups under {target.state_dir / BACKUPS})") from exc
    if obj.get("schema") != STATE_SCHEMA:
        raise PatchError(f"{_state_path(target)} has schema {obj.get('schema')!r}; this "
                         f"dsparkctl understands {STATE_SCHEMA}")
    return obj


def _state_bytes(state: Mapping[str, Any]) -> bytes:
    return (json.dumps(state, indent=2, sort_keys=True) + "\n").encode()


# --------------------------------------------------------------------------- plans


Action = Literal["modify", "create", "update", "delete", "set-aside", "remove"]


@dataclass
class FileChange:
    """One file the apply will write (or a path it sets aside)."""

    rel: str
    path: Path
    action: Action
    old: bytes | None
    new: bytes | None
    dst: Path | None = None

    @property
    def old_sha(self) -> str | None:
        return None if self.old is None else sha256_bytes(self.old)

    @property
    def new_sha(self) -> str | None:
        return None if self.new is None else sha256_bytes(self.new)

    def diff(self) -> str:
        if self.action in ("set-aside", "remove"):
            where = f" -> {self.dst}" if self.dst else ""
            return f"# {self.action}: {self.path}{where}\n"
        try:
            a = (self.old or b"").decode("utf-8").splitlines(keepends=True)
            b = (self.new or b"").decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            return f"Binary files a/{self.rel} and b/{self.rel} differ\n"
        src = "/dev/null" if self.old is None else f"a/{self.rel}"
        dst = "/dev/null" if self.new is None else f"b/{self.rel}"
        text = "".join(difflib.unified_diff(a, b, src, dst))
        return text if text.endswith("\n") or not text else text + "\n"

    def key(self) -> tuple[str, str, str | None, str | None, str | None]:
        return (str(self.path), self.action, self.old_sha, self.new_sha, str(self.dst))


@dataclass
class PatchPlan:
    spec: PatchSpec
    target: Target
    version: str
    params: dict[str, Any]
    changes: list[FileChange]
    blockers: list[str]
    notes: list[str]
    record: dict[str, Any]
    already_applied: bool
    known_version: bool
    imports: list[tuple[str, str | None, str]] = field(default_factory=list)

    @property
    def no_change(self) -> bool:
        return not self.changes

    def diff_text(self) -> str:
        return "".join(c.diff() for c in self.changes)

    def fingerprint(self) -> list[tuple[str, str, str | None, str | None, str | None]]:
        return [c.key() for c in self.changes]

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.spec.id, "distribution": self.spec.distribution,
            "version": self.version, "known_version": self.known_version,
            "already_applied": self.already_applied, "params": self.params,
            "changes": [{"path": str(c.path), "action": c.action, "old_sha256": c.old_sha,
                         "new_sha256": c.new_sha, **({"to": str(c.dst)} if c.dst else {})}
                        for c in self.changes],
            "blockers": self.blockers, "notes": self.notes,
        }


def _generate(spec: PatchSpec, name: str, target: Target, params: Mapping[str, Any]) -> bytes:
    if name == "route_config":
        fi = params.get("flashinfer_decode")
        if fi is None:
            fi = read_flashinfer_decode(target.site)
        return route_config_bytes(route_config(params, fi, spec.id))
    raise PatchError(f"patch {spec.id}: unknown generator {name!r} (dsparkctl bug)")


def _set_aside_patterns(sa: SetAside, target: Target, version: str) -> list[str]:
    root = target.site if sa.root == "site" else target.workspace_base()
    return [str(root / pattern.format(version=version)) for pattern in sa.patterns]


def _matches(patterns: Sequence[str], suffix: str = ".dsparkctl-aside") -> list[Path]:
    out: list[Path] = []
    for pattern in patterns:
        for p in sorted(glob.glob(glob.escape(pattern).replace("[*]", "*"))):
            path = Path(p)
            if not path.name.endswith(suffix) and path not in out:
                out.append(path)
    return out


def _drift_error(spec: PatchSpec, rec: Mapping[str, Any], detail: str) -> PatchError:
    return PatchRefused(
        f"patch {spec.id} was applied to {spec.distribution} {rec.get('version')} but {detail}; "
        f"run `dsparkctl patches revert --patch {spec.id}` (it leaves replaced files alone) and "
        f"apply again; nothing was written")


def plan_patch(spec: PatchSpec, target: Target, params: Mapping[str, Any] | None = None, *,
               force: bool = False) -> PatchPlan:
    """What applying ``spec`` to ``target`` would write, verified, without writing.

    Problems that ``--force`` may override (unknown version, a file that is not
    the upstream one) are collected in ``blockers``; layout mismatches (anchor
    not found exactly once) and drift after an earlier apply raise.
    """
    site = target.site
    if not site.is_dir():
        raise WrongTarget(f"{site} is not a directory")
    version = installed_version(site, spec.distribution)
    if version is None:
        raise WrongTarget(f"{spec.distribution} is not installed in {site}")
    blockers: list[str] = []
    notes: list[str] = []
    known = spec.knows(version)
    if not known:
        span = f"{spec.known_versions[0]} .. {spec.known_versions[-1]}" if spec.known_versions \
            else "none"
        blockers.append(
            f"{spec.distribution} {version} is not a version patch {spec.id} knows (checked "
            f"against {span}: {', '.join(spec.known_versions)}); its files may have changed. "
            f"--force tries anyway (anchors are still checked exactly)")
    if pending_journal(target.state_dir) is not None:
        # Planning on a half-changed tree would report nonsense (drift, modified files).
        raise PatchError(f"an interrupted dsparkctl change is pending in {target.state_dir}; "
                         f"run `dsparkctl patches apply` or `dsparkctl patches revert` (both roll "
                         f"it back first) and try again")
    state = read_state(target)
    rec = state["patches"].get(spec.id)
    # Re-applying keeps the earlier choices (route mode, manifest, pairs)
    # unless new ones are given.
    params = resolve_params(spec, params, rec.get("params") if rec else None)
    if rec is not None and rec.get("version") != version:
        raise _drift_error(spec, rec, f"{version} is installed now")
    rec_files = {f["path"]: f for f in rec["files"]} if rec else {}

    changes: list[FileChange] = []
    files_rec: list[dict[str, Any]] = []
    imports: list[tuple[str, str | None, str]] = []
    for tf in spec.files:
        path = site / tf.path
        fr = rec_files.get(tf.path)
        try:
            current = path.read_bytes()
        except FileNotFoundError:
            raise PatchRefused(f"{path} does not exist: {spec.distribution} {version} does not "
                               f"have the layout patch {spec.id} edits; nothing was written"
                               ) from None
        if fr is not None:
            if sha256_bytes(current) != fr["written_sha256"]:
                raise _drift_error(spec, rec or {}, f"{tf.path} changed since (sha256 "
                                   f"{sha256_bytes(current)})")
            original = (target.state_dir / fr["backup"]).read_bytes()
            if sha256_bytes(original) != fr["original_sha256"]:
                raise PatchError(f"backup {target.state_dir / fr['backup']} is damaged; "
                                 f"reinstall {spec.distribution} and remove {target.state_dir}")
        else:
            original = current
        orig_sha = sha256_bytes(original)
        if known:
            expected = tf.upstream_sha256[version]
            if orig_sha != expected:
                blockers.append(
                    f"{path} is not the upstream {spec.distribution} {version} file (sha256 "
                    f"{orig_sha}, expected {expected}): it was modified (a hand patch?). "
                    f"Reinstall it (pip install --force-reinstall --no-deps "
                    f"{spec.distribution}=={version}) or --force to patch it as it is")
        else:
            same = [v for v, h in tf.upstream_sha256.items() if h == orig_sha]
            if same:
                notes.append(f"{tf.path} is byte-identical to the upstream file of "
                             f"{spec.distribution} {', '.join(same)}")
        try:
            new = render(original, tf, params)
        except AnchorError as exc:
            raise PatchRefused(f"{exc}; nothing was written") from exc
        # With the upstream bytes and the spec's default parameters the result
        # is known in advance: a mismatch means the rendering itself is wrong.
        default_params = not tf.uses_params or params.get("pairs") == spec.params.get("pairs")
        if known and orig_sha == tf.upstream_sha256[version] and default_params:
            want = tf.result_sha256.get(version)
            if want is not None and sha256_bytes(new) != want:
                raise PatchError(f"patch {spec.id}: rendering {tf.path} for {version} gave sha256 "
                                 f"{sha256_bytes(new)}, the spec says {want} (dsparkctl bug)")
        if tf.path.endswith(".py"):
            try:
                compile(new, str(path), "exec", dont_inherit=True)
            except SyntaxError as exc:
                if compile_ok(original):
                    raise PatchError(f"patched {tf.path} would not compile: {exc} (dsparkctl "
                                     f"bug)") from exc
                # The target file itself is broken: that is the finding, not the patch.
                raise PatchRefused(f"{path} does not compile as it is ({exc}): "
                                   + (" | ".join(blockers) if blockers else
                                      f"reinstall {spec.distribution} {version}")
                                   + "; nothing was written") from exc
        if new == original:
            notes.append(f"{tf.path}: nothing to add (already has what the patch adds)")
        if new != current:
            changes.append(FileChange(tf.path, path, "update" if fr else "modify", current, new))
        if new != original:
            files_rec.append({"path": tf.path, "action": "modify", "original_sha256": orig_sha,
                              "written_sha256": sha256_bytes(new),
                              "backup": f"{BACKUPS}/{spec.id}/{tf.path}"})
            if tf.import_name:
                imports.append((tf.import_name, None, str(path)))
        elif fr is not None:
            # An update that brings a file back to its original: no backup needed any more.
            files_rec.append({"path": tf.path, "action": "modify", "original_sha256": orig_sha,
                              "written_sha256": orig_sha, "backup": fr["backup"]})

    for nf in spec.new_files:
        path = site / nf.path
        content = (spec.source_bytes(nf.source) if nf.source
                   else _generate(spec, nf.generator or "", target, params))
        current_sha = sha256_file(path)
        fr = rec_files.get(nf.path)
        if fr is not None and current_sha != fr["written_sha256"]:
            raise _drift_error(spec, rec or {}, f"{nf.path} changed since (sha256 {current_sha})")
        if fr is None and (current_sha is not None or path.exists()):
            raise PatchRefused(f"{path} exists and was not written by dsparkctl; move it away "
                               f"and apply again; nothing was written")
        if nf.path.endswith(".py"):
            try:
                compile(content, str(path), "exec", dont_inherit=True)
            except SyntaxError as exc:
                raise PatchError(f"{nf.path} would not compile: {exc} (dsparkctl bug)") from exc
        if sha256_bytes(content) != current_sha:
            changes.append(FileChange(nf.path, path, "update" if fr else "create",
                                      path.read_bytes() if fr else None, content))
        files_rec.append({"path": nf.path, "action": "create",
                          "written_sha256": sha256_bytes(content)})
        if nf.import_name:
            imports.append((nf.import_name, nf.check, str(path)))

    sources_change = any(c.action in ("modify", "update") for c in changes
                         if any(c.rel == tf.path for tf in spec.files))
    moves_rec: list[dict[str, Any]] = list(rec.get("set_aside", [])) if rec else []
    stale: list[str] = list(rec.get("stale_on_revert", [])) if rec else []
    if rec is None and sources_change:
        for sa in spec.set_aside:
            patterns = _set_aside_patterns(sa, target, version)
            if sa.root == "flashinfer-workspace":
                # Whatever gets built here from the patched sources is stale
                # once they are restored: revert removes it.
                stale.extend(patterns)
            for p in _matches(patterns, sa.suffix):
                dst = p.with_name(p.name + sa.suffix)
                if os.path.lexists(dst):
                    raise PatchRefused(f"cannot set {p} aside: {dst} already exists (left by an "
                                       f"earlier tool?); remove one of them; nothing was written")
                changes.append(FileChange(str(p), p, "set-aside", None, None, dst=dst))
                moves_rec.append({"path": str(p), "aside": str(dst), "root": sa.root,
                                  "why": sa.why})
    elif rec is not None and sources_change:
        # Modules built from the previous patched sources are stale after this update.
        for p in _matches(stale):
            changes.append(FileChange(str(p), p, "remove", None, None))

    record = {
        "id": spec.id, "distribution": spec.distribution, "version": version,
        "params": params, "forced": bool(blockers), "known_version": known,
        "applied_at": (rec or {}).get("applied_at") or _now(),
        "updated_at": _now(), "dsparkctl_version": __version__,
        "files": files_rec, "set_aside": moves_rec, "stale_on_revert": stale,
    }
    return PatchPlan(spec=spec, target=target, version=version, params=params, changes=changes,
                     blockers=blockers, notes=notes, record=record,
                     already_applied=rec is not None, known_version=known, imports=imports)


def compile_ok(source: bytes) -> bool:
    try:
        compile(source, "<target>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------- apply


@dataclass
class ApplyResult:
    patch_id: str
    changed: bool
    message: str
    plan: PatchPlan
    dry_run: bool = False
    forced: bool = False
    recovered: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"patch": self.patch_id, "changed": self.changed, "message": self.message,
                "dry_run": self.dry_run, "forced": self.forced, "recovered": self.recovered,
                "checks": self.checks, "plan": self.plan.to_json()}


def recover_target(target: Target) -> str | None:
    """Roll back (or finish) a change an interrupted run left pending."""
    if pending_journal(target.state_dir) is None and not (target.state_dir / "txn").exists():
        return None
    with locked(target.state_dir):
        return recover(target.state_dir)


def apply_patch(patch_id: str, target: Target, params: Mapping[str, Any] | None = None, *,
                force: bool = False, dry_run: bool = False,
                import_check: bool = True) -> ApplyResult:
    """One call for callers (install-kernels): recover, plan, apply."""
    recovered = None if dry_run else recover_target(target)
    plan = plan_patch(get_spec(patch_id), target, params, force=force)
    result = apply(plan, force=force, dry_run=dry_run, import_check=import_check)
    result.recovered = result.recovered or recovered
    return result


def apply(plan: PatchPlan, *, force: bool = False, dry_run: bool = False,
          import_check: bool = True) -> ApplyResult:
    """Write ``plan`` (re-planned and re-verified under the lock), all or nothing.

    A patch applied earlier with ``--force`` and unchanged since is reported as applied (no
    change): a second run changes nothing, and refusing it would read as a new problem.
    """
    if plan.blockers and not force and not _forced_and_unchanged(plan):
        raise PatchRefused("refused: " + " | ".join(plan.blockers) + "; nothing was written")
    if dry_run:
        msg = "would change nothing (already applied)" if plan.no_change else \
            f"would write {len(plan.changes)} change(s)"
        return ApplyResult(plan.spec.id, False, msg, plan, dry_run=True, forced=bool(plan.blockers))
    if plan.no_change and pending_journal(plan.target.state_dir) is None:
        return ApplyResult(plan.spec.id, False, _no_change_message(plan), plan)
    target = plan.target
    try:
        with locked(target.state_dir):
            recovered = recover(target.state_dir)
            fresh = plan_patch(plan.spec, target, plan.params, force=force)
            if fresh.blockers and not force and not _forced_and_unchanged(fresh):
                raise PatchRefused("refused: " + " | ".join(fresh.blockers)
                                   + "; nothing was written")
            if fresh.fingerprint() != plan.fingerprint() and not recovered:
                raise PatchError(f"{target.site} changed while planning; nothing was written, "
                                 f"run again")
            if fresh.no_change:
                return ApplyResult(plan.spec.id, False, _no_change_message(fresh), fresh,
                                   recovered=recovered)
            checks: list[dict[str, Any]] = []
            txn = _apply_transaction(fresh)
            txn.commit(verify=lambda: checks.extend(_verify_written(fresh, import_check)))
    except OSError as exc:
        if is_permission_error(exc):
            raise NotWritable(not_writable_message(Path(exc.filename or target.site), exc)
                              ) from exc
        raise PatchError(f"apply failed and was rolled back: {exc}") from exc
    verb = "updated" if fresh.already_applied else "applied"
    forced = bool(fresh.blockers)
    msg = f"{verb} {fresh.spec.id} to {fresh.spec.distribution} {fresh.version}" + \
        (" (FORCED)" if forced else "")
    return ApplyResult(fresh.spec.id, True, msg, fresh, forced=forced, recovered=recovered,
                       checks=checks)


def _forced_and_unchanged(plan: PatchPlan) -> bool:
    return plan.no_change and plan.already_applied and bool(
        read_state(plan.target)["patches"].get(plan.spec.id, {}).get("forced"))


def _no_change_message(plan: PatchPlan) -> str:
    if plan.already_applied:
        forced = " (applied with --force earlier)" if _forced_and_unchanged(plan) else ""
        return f"{plan.spec.id} is already applied{forced}: no change"
    return (f"nothing to change: {plan.spec.distribution} {plan.version} already has what "
            f"{plan.spec.id} adds")


def _apply_transaction(plan: PatchPlan) -> Transaction:
    target = plan.target
    sd = target.state_dir
    txn = Transaction(sd)
    rec_files = {f["path"]: f for f in plan.record["files"]}
    # Backups first: once a target file is replaced its original must already be safe.
    for ch in plan.changes:
        if ch.action == "modify" and ch.old is not None:
            fr = rec_files[ch.rel]
            txn.put(sd / fr["backup"], ch.old, expect_sha=None)
    for ch in plan.changes:
        if ch.action in ("modify", "update", "create"):
            txn.put(ch.path, ch.new or b"", expect_sha=ch.old_sha)
        elif ch.action == "set-aside":
            txn.move(ch.path, ch.dst or ch.path)
        elif ch.action == "remove":
            txn.remove(ch.path)
    # Files an update brings back to the original no longer need their backup.
    for fr in plan.record["files"]:
        if fr["action"] == "modify" and fr["written_sha256"] == fr["original_sha256"]:
            txn.remove(sd / fr["backup"])
    state = read_state(target)
    record = dict(plan.record)
    record["files"] = [f for f in record["files"]
                       if f["action"] != "modify" or f["written_sha256"] != f["original_sha256"]]
    state["patches"][plan.spec.id] = record
    state["site"] = str(target.site)
    txn.put(sd / STATE_FILE, _state_bytes(state))
    return txn


def _verify_written(plan: PatchPlan, import_check: bool) -> list[dict[str, Any]]:
    """Post-write checks; raising here rolls the whole apply back."""
    checks: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dsparkctl-pyc-") as tmp:
        for i, ch in enumerate(plan.changes):
            if ch.new is None:
                continue
            if sha256_file(ch.path) != ch.new_sha:
                raise PatchError(f"{ch.path} does not hold what was written")
            if ch.rel.endswith(".py"):
                try:
                    py_compile.compile(str(ch.path), cfile=str(Path(tmp) / f"{i}.pyc"),
                                       doraise=True)
                except py_compile.PyCompileError as exc:
                    raise PatchError(f"{ch.path} does not byte-compile: {exc.msg}") from exc
                checks.append({"check": "byte-compile", "path": str(ch.path), "result": "ok"})
            elif ch.rel.endswith(".json"):
                try:
                    json.loads(ch.path.read_bytes())
                except ValueError as exc:
                    raise PatchError(f"{ch.path} is not valid JSON: {exc}") from exc
    if not import_check:
        checks.append({"check": "import", "result": "skipped",
                       "reason": "import check disabled (--no-import-check)"})
        return checks
    if plan.target.python is None:
        checks.append({"check": "import", "result": "skipped",
                       "reason": "no target interpreter given (--python); byte-compiled only"})
        return checks
    checks.extend(import_check_in(plan.target, plan.imports))
    return checks


_IMPORT_PROBE = r"""
import importlib, json, os, sys, traceback
site, items = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, site)
out = []
for name, check, path in items:
    r = {"module": name, "path": path}
    try:
        mod = importlib.import_module(name)
        if check:
            r["check"] = getattr(mod, check)()
        r["result"] = "ok"
    except BaseException as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        files = [f.filename for f in tb]
        if isinstance(exc, SyntaxError) and exc.filename:
            files.append(exc.filename)
        r["result"] = "error"
        r["error"] = f"{type(exc).__name__}: {exc}"
        mine = os.path.realpath(path)
        if check or isinstance(exc, SyntaxError) and files and os.path.realpath(files[-1]) == mine:
            r["in_patched_file"] = True
        elif isinstance(exc, ImportError):
            # A dependency the environment lacks (torch, triton, orjson on a
            # build host) is not the patch's fault, wherever it is imported.
            r["in_patched_file"] = exc.name in (name, "_dsparkctl_route")
        else:
            r["in_patched_file"] = bool(tb) and os.path.realpath(tb[-1].filename) == mine
    out.append(r)
print(json.dumps(out))
"""


def import_check_in(target: Target, imports: Sequence[tuple[str, str | None, str]]
                    ) -> list[dict[str, Any]]:
    """Import each patched module in the target interpreter.

    A missing dependency (no torch, no triton on a build host) or an error
    raised outside the patched file only skips the check, with the reason; a
    syntax error in, or an exception raised by, the patched file itself (or any
    failure of dsparkctl's router and its self-check) fails the apply.
    """
    if not imports:
        return []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        res = subprocess.run(
            [str(target.python), "-c", _IMPORT_PROBE, str(target.site),
             json.dumps([list(i) for i in imports])],
            capture_output=True, text=True, timeout=300, env=env, cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [{"check": "import", "result": "skipped", "reason": f"cannot run {target.python}: "
                 f"{exc}"}]
    try:
        rows = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [{"check": "import", "result": "skipped",
                 "reason": f"{target.python} crashed importing: {res.stderr.strip()[-300:]}"}]
    out: list[dict[str, Any]] = []
    for r in rows:
        if r["result"] == "ok":
            out.append({"check": "import", "module": r["module"], "result": "ok",
                        **({"detail": r["check"]} if "check" in r else {})})
        elif r.get("in_patched_file"):
            raise PatchError(f"patched module {r['module']} fails to import in "
                             f"{target.python}: {r['error']}")
        else:
            out.append({"check": "import", "module": r["module"], "result": "skipped",
                        "reason": f"the target environment cannot import {r['module']} for a "
                                  f"reason unrelated to the patch ({r['error']}); byte-compiled "
                                  f"only"})
    return out


# --------------------------------------------------------------------------- status


FileState = Literal["as-written", "original", "changed", "missing"]


BackupState = Literal["ok", "missing", "damaged"]


@dataclass
class FileStatus:
    path: str
    action: str
    state: FileState
    sha256: str | None
    backup: BackupState | None = None  # modified files: can the revert put the original back?

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "state": self.state,
                "sha256": self.sha256, "backup": self.backup}


@dataclass
class AppliedPatch:
    id: str
    distribution: str
    version: str
    installed_version: str | None
    params: dict[str, Any]
    applied_at: str
    forced: bool
    files: list[FileStatus]
    set_aside: list[dict[str, Any]]

    @property
    def intact(self) -> bool:
        # A JIT cache rebuilt (or wiped) since is expected; a prebuilt module
        # back in site-packages (flashinfer-jit-cache reinstalled) shadows again.
        return (self.installed_version == self.version
                and all(f.state == "as-written" and f.backup in (None, "ok") for f in self.files)
                and all(m["state"] == "aside" for m in self.set_aside
                        if m.get("root", "site") == "site"))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "distribution": self.distribution, "version": self.version,
                "installed_version": self.installed_version, "params": self.params,
                "applied_at": self.applied_at, "forced": self.forced, "intact": self.intact,
                "files": [f.to_json() for f in self.files], "set_aside": self.set_aside}


def status(target: Target) -> list[AppliedPatch]:
    """Every applied patch and whether the disk still holds what was written."""
    state = read_state(target)
    out: list[AppliedPatch] = []
    for pid, rec in state["patches"].items():
        files: list[FileStatus] = []
        for fr in rec["files"]:
            cur = sha256_file(target.site / fr["path"])
            st: FileState
            if cur == fr["written_sha256"]:
                st = "as-written"
            elif cur is None:
                st = "missing"
            elif cur == fr.get("original_sha256"):
                st = "original"
            else:
                st = "changed"
            backup: BackupState | None = None
            if fr["action"] == "modify":
                saved = sha256_file(target.state_dir / fr["backup"])
                backup = ("ok" if saved == fr["original_sha256"] else
                          "missing" if saved is None else "damaged")
            files.append(FileStatus(fr["path"], fr["action"], st, cur, backup))
        moves = []
        for mv in rec.get("set_aside", []):
            aside = os.path.lexists(mv["aside"])
            back = os.path.lexists(mv["path"])
            moves.append({**mv, "state": "aside" if aside and not back else
                          ("rebuilt" if aside and back else "missing" if not aside else "back")})
        out.append(AppliedPatch(pid, rec["distribution"], rec["version"],
                                installed_version(target.site, rec["distribution"]),
                                rec.get("params", {}), rec.get("applied_at", ""),
                                bool(rec.get("forced")), files, moves))
    return out


@dataclass
class Refresh:
    """What re-applying an intact patch would change today, split by what it means."""

    patch_id: str
    stale: list[str]  # generated settings whose meaning changed (the FlashInfer reading)
    newer: list[str]  # files a newer dsparkctl writes differently (its router, its hook text)


def refresh_needed(target: Target) -> list[Refresh]:
    """Applied patches whose files, written today, would differ from what is on disk.

    The route config records which shapes FlashInfer serves; reverting (or upgrading)
    FlashInfer afterwards leaves it claiming kernels that are gone, and the draft calls it
    no longer routes abort again: that is ``stale``. A dsparkctl upgrade that changes its
    own router or stamp is only ``newer`` (the installed one still works). Patches that
    cannot be planned (drift, a damaged backup) are reported by ``status`` and skipped here.
    """
    out: list[Refresh] = []
    for pid in read_state(target)["patches"]:
        try:
            spec = get_spec(pid)
            # The FlashInfer reading recorded at apply time is what may be stale: read it anew.
            params = ({"flashinfer_decode": read_flashinfer_decode(target.site)}
                      if "flashinfer_decode" in spec.params else None)
            plan = plan_patch(spec, target, params, force=True)
        except (PatchError, ValueError, OSError):
            continue
        generated = {nf.path for nf in spec.new_files if nf.generator}
        stale = [c.rel for c in plan.changes
                 if c.rel in generated and _settings_differ(c.old, c.new)]
        newer = [c.rel for c in plan.changes if c.rel not in stale
                 and not (c.rel in generated and not _settings_differ(c.old, c.new))]
        if stale or newer:
            out.append(Refresh(pid, stale, newer))
    return out


def _settings_differ(old: bytes | None, new: bytes | None) -> bool:
    """Generated JSON settings compared by meaning: the generator's stamp does not count."""
    try:
        a, b = json.loads(old or b"null"), json.loads(new or b"null")
    except ValueError:
        return old != new
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = ({k: v for k, v in d.items() if k != "generated_by"} for d in (a, b))
        fa, fb = a.get("flashinfer"), b.get("flashinfer")
        if isinstance(fa, dict) and isinstance(fb, dict) and "prefill" not in fa:
            # Written before the router knew FlashInfer's prefill coverage: not stale (the
            # FlashInfer reading still holds), only older; the new router file says "newer".
            b = {**b, "flashinfer": {k: v for k, v in fb.items() if k != "prefill"}}
    return a != b


# --------------------------------------------------------------------------- revert


@dataclass
class RevertResult:
    patch_id: str
    restored: list[str]
    left_alone: list[str]
    dry_run: bool = False
    diff: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"patch": self.patch_id, "restored": self.restored, "left_alone": self.left_alone,
                "dry_run": self.dry_run}


def revert(target: Target, patch_id: str | None = None, *,
           dry_run: bool = False) -> list[RevertResult]:
    """Put back the original bytes of every file a patch wrote (all patches by default).

    A file changed after the apply (neither what was written nor the original)
    is left alone and reported: it belongs to whoever changed it.
    """
    if dry_run:
        return _revert_plan(target, read_state(target), patch_id, dry_run=True)[0]
    if not target.state_dir.is_dir():
        if patch_id is not None:
            raise PatchError(f"patch {patch_id} is not applied in {target.site}")
        return []
    try:
        with locked(target.state_dir):
            recover(target.state_dir)
            state = read_state(target)
            results, txn, cleanup = _revert_plan(target, state, patch_id, dry_run=False)
            txn.commit()
            for d in cleanup:
                remove_empty_dirs(d, target.state_dir)
            if not (target.state_dir / STATE_FILE).exists():
                # A run killed between its commit and this cleanup left empty backup folders;
                # with no patch left they are only in the way of a byte-identical tree.
                _remove_empty_folders(target.state_dir / BACKUPS)
    except OSError as exc:
        if is_permission_error(exc):
            raise NotWritable(not_writable_message(Path(exc.filename or target.site), exc)
                              ) from exc
        raise PatchError(f"revert failed and was rolled back: {exc}") from exc
    return results


def _remove_empty_folders(root: Path) -> None:
    for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            continue


def _backup_bytes(backup: Path, fr: Mapping[str, Any], pid: str) -> bytes:
    try:
        original = backup.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise PatchRefused(f"the backup of {fr['path']} ({backup}) is gone; not reverting {pid}; "
                           f"nothing was changed. Reinstall the package to get its original "
                           f"files back, then remove {backup.parent}") from None
    if sha256_bytes(original) != fr["original_sha256"]:
        raise PatchRefused(f"backup {backup} is damaged; not reverting {pid}; nothing was "
                           f"changed. Reinstall the package to get its original files back")
    return original


def _refuse_dangling_revert(target: Target, pid: str, rec: Mapping[str, Any]) -> None:
    """Refuse a revert that would delete files a changed target file still uses.

    Reverting removes the files the patch created (the router). A modified file that was
    edited again since the apply is left alone, and if it still names one of those files
    (the hook) the server would fail at its first call with nothing left to report it.
    Then nothing is reverted: the person restores the file first, and the revert goes on.
    """
    names = {Path(f["path"]).stem.encode() for f in rec["files"] if f["action"] == "create"}
    if not names:
        return
    for fr in rec["files"]:
        if fr["action"] != "modify":
            continue
        path = target.site / fr["path"]
        cur = sha256_file(path)
        if cur in (None, fr["written_sha256"], fr["original_sha256"]):
            continue
        used = sorted(n.decode() for n in names if n in path.read_bytes())
        if used:
            raise PatchRefused(
                f"{path} changed since {pid} was applied and still uses {', '.join(used)}, which "
                f"the revert would delete; nothing was reverted. Restore that file (reinstall "
                f"{rec.get('distribution')} {rec.get('version')}: pip install --force-reinstall "
                f"--no-deps {rec.get('distribution')}=={rec.get('version')}), or remove the "
                f"edit, then revert again")


def _revert_plan(target: Target, state: dict[str, Any], patch_id: str | None, *,
                 dry_run: bool) -> tuple[list[RevertResult], Transaction, list[Path]]:
    ids = list(state["patches"]) if patch_id is None else [patch_id]
    if patch_id is not None and patch_id not in state["patches"]:
        raise PatchError(f"patch {patch_id} is not applied in {target.site} "
                         f"(applied: {', '.join(state['patches']) or 'none'})")
    sd = target.state_dir
    txn = Transaction(sd)
    results: list[RevertResult] = []
    cleanup: list[Path] = []
    for pid in reversed(ids):
        rec = state["patches"][pid]
        restored: list[str] = []
        left: list[str] = []
        diffs: list[str] = []
        _refuse_dangling_revert(target, pid, rec)
        for fr in rec["files"]:
            path = target.site / fr["path"]
            cur = sha256_file(path)
            if fr["action"] == "modify":
                backup = sd / fr["backup"]
                # A file deleted from a package that is still there gets its original back
                # (a package removed whole, folder and all, is left removed).
                missing = cur is None and path.parent.is_dir()
                if cur == fr["written_sha256"] or missing:
                    original = _backup_bytes(backup, fr, pid)
                    if dry_run:
                        diffs.append(FileChange(fr["path"], path, "modify",
                                                b"" if missing else path.read_bytes(),
                                                original).diff())
                    else:
                        txn.put(path, original, expect_sha=cur)
                    restored.append(fr["path"] + (" (was missing)" if missing else ""))
                elif cur is None:
                    left.append(f"{fr['path']} (its folder is gone: the package was removed)")
                elif cur != fr["original_sha256"]:
                    left.append(f"{fr['path']} (changed since the apply; left as it is)")
                if not dry_run:
                    txn.remove(backup)
                    cleanup.append(backup.parent)
            else:
                if cur == fr["written_sha256"]:
                    if dry_run:
                        diffs.append(FileChange(fr["path"], path, "delete", path.read_bytes(),
                                                None).diff())
                    else:
                        txn.remove(path)
                    restored.append(fr["path"])
                elif cur is not None:
                    left.append(f"{fr['path']} (changed since the apply; left as it is)")
        # Modules built from the patched sources since the apply are stale
        # once the sources are restored.
        for p in _matches(rec.get("stale_on_revert", [])):
            if not dry_run:
                txn.remove(p)
            diffs.append(f"# remove (built from the patched sources): {p}\n")
        for mv in rec.get("set_aside", []):
            src, aside = Path(mv["path"]), Path(mv["aside"])
            if not os.path.lexists(aside):
                left.append(f"{aside} (gone; cannot put {src} back)")
                continue
            if os.path.lexists(src) and str(src) not in {str(p) for p in
                                                         _matches(rec.get("stale_on_revert", []))}:
                left.append(f"{src} exists again (reinstalled?); {aside} left where it is")
                continue
            if not dry_run:
                txn.move(aside, src)
            diffs.append(f"# restore: {aside} -> {src}\n")
            restored.append(str(src))
        results.append(RevertResult(pid, restored, left, dry_run=dry_run, diff="".join(diffs)))
    if not dry_run:
        remaining = {k: v for k, v in state["patches"].items() if k not in ids}
        if remaining:
            new_state = dict(state, patches=remaining)
            txn.put(sd / STATE_FILE, _state_bytes(new_state))
        else:
            txn.remove(sd / STATE_FILE)
    return results, txn, cleanup

