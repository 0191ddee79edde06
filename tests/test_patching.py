"""The patch machinery against real SGLang / FlashInfer wheels (issue 4 acceptance).

Every test works on a writable copy of a real published wheel's tree and
compares whole-tree snapshots (every file's sha256 and mode, every folder), so
"byte-identical after revert" and "nothing written" are checked literally.
"""

from __future__ import annotations

import ast
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from patchtrees import (
    FI_CU,
    FI_PY,
    SGLANG_FILE,
    diff_snapshots,
    flashinfer_tree,
    sglang_tree,
    snapshot,
)

from dsparkctl import patch_txn
from dsparkctl.patch_spec import python_frozenset_pairs
from dsparkctl.patching import (
    STATE_DIR,
    NotWritable,
    PatchError,
    PatchLocked,
    PatchRefused,
    Target,
    apply,
    apply_patch,
    get_spec,
    plan_patch,
    recover_target,
    revert,
    status,
)
from dsparkctl.routing import read_route_settings

ROUTE = "sglang-route-sm120"
FIPAIRS = "flashinfer-dsv4-pairs"
REPO = Path(__file__).resolve().parents[1]
HOOK_IMPORT = "from _dsparkctl_route import maybe_route as _dsp_route"
DSV4_LINE = re.compile(r"^[ \t]*DSV4_DISPATCH\((\d+),[ \t]*(\d+)\)[ \t]*$", re.M)


def _apply(target: Target, patch_id: str = ROUTE, params: dict | None = None, **kw):
    force = kw.pop("force", False)
    return apply(plan_patch(get_spec(patch_id), target, params, force=force), force=force, **kw)


def _hook_is_first_statement(source: str) -> bool:
    """The hook is the first code of flash_mla_with_kvcache_sm120, right after its docstring."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name == "flash_mla_with_kvcache_sm120")
    body = fn.body
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    imp = body[1]
    ret = body[3]
    return (isinstance(imp, ast.ImportFrom) and imp.module == "_dsparkctl_route"
            and imp.names[0].name == "maybe_route"
            and isinstance(ret, ast.If) and isinstance(ret.body[0], ast.Return))


@pytest.fixture
def sg17(tmp_path: Path) -> Target:
    return Target(sglang_tree(tmp_path / "site", "0.5.17"),
                  flashinfer_workspace_base=tmp_path / "home")


# --------------------------------------------------------------------------- round trip


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.5.17", "0.5.19", "0.5.23"])
def test_sglang_apply_verify_reapply_revert(tmp_path: Path, version: str) -> None:
    site = sglang_tree(tmp_path / "site", version)
    target = Target(site, python=Path(sys.executable))
    before = snapshot(site)

    res = _apply(target)
    assert res.changed and not res.forced
    patched = (site / SGLANG_FILE).read_text()
    assert HOOK_IMPORT in patched and _hook_is_first_statement(patched)
    py_compile.compile(str(site / SGLANG_FILE), cfile=str(tmp_path / "m.pyc"), doraise=True)
    assert (site / "_dsparkctl_route.py").is_file() and (site / "_dsparkctl_route.json").is_file()
    # The import check ran in this interpreter: the router imported and parsed its
    # settings; sglang itself needs deps this venv lacks, which must be a *skip*.
    imports = {c["module"]: c for c in res.checks if c["check"] == "import"}
    assert imports["_dsparkctl_route"]["result"] == "ok"
    assert imports["_dsparkctl_route"]["detail"]["mode"] == "missing"
    sg_check = imports["sglang.kernels.ops.attention.flash_mla_sm120"]
    assert sg_check["result"] in ("ok", "skipped")
    if sg_check["result"] == "skipped":
        assert "unrelated to the patch" in sg_check["reason"]

    [applied] = status(target)
    assert applied.id == ROUTE and applied.version == version and applied.intact
    assert {f.path: f.state for f in applied.files} == {
        SGLANG_FILE: "as-written", "_dsparkctl_route.py": "as-written",
        "_dsparkctl_route.json": "as-written"}
    spec = get_spec(ROUTE)
    assert applied.files[0].sha256 == spec.files[0].result_sha256[version]

    after = snapshot(site)
    again = _apply(target)
    assert not again.changed and "already applied" in again.message
    assert snapshot(site) == after

    [rr] = revert(target)
    assert rr.left_alone == [] and SGLANG_FILE in rr.restored
    assert diff_snapshots(before, snapshot(site)) == []
    assert not (site / STATE_DIR).exists()


@pytest.mark.network
def test_flashinfer_pairs_apply_revert(tmp_path: Path) -> None:
    site = flashinfer_tree(tmp_path / "site", "0.6.15.post1")
    ws = tmp_path / "home"
    target = Target(site, python=Path(sys.executable), flashinfer_workspace_base=ws)
    before = snapshot(site)
    stock_py = python_frozenset_pairs((site / FI_PY).read_text(), "_DECODE_DSV4_DISPATCH")
    stock_cu = {(int(a), int(b)) for a, b in DSV4_LINE.findall((site / FI_CU).read_text())}
    assert stock_py == stock_cu and len(stock_py) == 15

    res = _apply(target, FIPAIRS)
    assert res.changed
    added = {(h, k) for h in (8, 16, 32, 64, 128) for k in (192, 256)}
    new_py = python_frozenset_pairs((site / FI_PY).read_text(), "_DECODE_DSV4_DISPATCH")
    new_cu = {(int(a), int(b)) for a, b in DSV4_LINE.findall((site / FI_CU).read_text())}
    assert new_py == new_cu == stock_py | added
    # Only the DSV4 table changed: the DSV3.2 table is untouched.
    assert (python_frozenset_pairs((site / FI_PY).read_text(), "_DECODE_DSV3_2_DISPATCH")
            == python_frozenset_pairs(_stock(FI_PY), "_DECODE_DSV3_2_DISPATCH"))
    [applied] = status(target)
    assert applied.intact and applied.params["pairs"] == sorted([list(p) for p in added])

    after = snapshot(site)
    assert not _apply(target, FIPAIRS).changed
    assert snapshot(site) == after

    revert(target)
    assert diff_snapshots(before, snapshot(site)) == []


def _stock(rel: str) -> str:
    import realwheels

    return (realwheels.unpacked("flashinfer-python", "0.6.15.post1") / rel).read_text()


@pytest.mark.network
def test_flashinfer_custom_pairs_skip_present_ones(tmp_path: Path) -> None:
    site = flashinfer_tree(tmp_path / "site", "0.6.15.post1")
    target = Target(site, flashinfer_workspace_base=tmp_path / "home")
    before = snapshot(site)
    # (64, 128) is already there: only (64, 192) and (32, 320) are added, once each.
    _apply(target, FIPAIRS, {"pairs": [[64, 192], [64, 128], [32, 320]]})
    cu = (site / FI_CU).read_text()
    assert cu.count("DSV4_DISPATCH(64, 192)") == 1 and cu.count("DSV4_DISPATCH(64, 128)") == 1
    assert cu.count("DSV4_DISPATCH(32, 320)") == 1
    with pytest.raises(PatchError, match="multiple of 64"):
        plan_patch(get_spec(FIPAIRS), target, {"pairs": [[64, 200]]})
    with pytest.raises(PatchError, match="heads 24"):
        plan_patch(get_spec(FIPAIRS), target, {"pairs": [[24, 192]]})
    revert(target)
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_flashinfer_shadowing_module_and_jit_cache_set_aside_and_restored(tmp_path: Path) -> None:
    """A prebuilt module (flashinfer-jit-cache is not on PyPI: synthetic file in the real
    tree) and a JIT cache built from the stock sources are moved aside; a module rebuilt
    from the patched sources is removed on revert and the originals come back."""
    site = flashinfer_tree(tmp_path / "site", "0.6.15.post1")
    ws = tmp_path / "home"
    prebuilt = site / "flashinfer_jit_cache/jit_cache/sparse_mla_sm120/sparse_mla_sm120.so"
    prebuilt.parent.mkdir(parents=True)
    prebuilt.write_bytes(b"\x7fELF prebuilt stock module")
    cache = ws / ".cache/flashinfer/0.6.15.post1"
    for arch in ("120f", "121a"):
        mod = cache / arch / "cached_ops/sparse_mla_sm120"
        mod.mkdir(parents=True)
        (mod / "sparse_mla_sm120.so").write_bytes(f"stock build {arch}".encode())
        (mod / "build.ninja").write_text("rule nvcc\n")
    other = cache / "120f/cached_ops/batch_decode/batch_decode.so"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"unrelated module")
    before_site, before_ws = snapshot(site), snapshot(ws)
    target = Target(site, flashinfer_workspace_base=ws)

    plan = plan_patch(get_spec(FIPAIRS), target)
    assert {c.action for c in plan.changes} == {"modify", "set-aside"}
    _apply(target, FIPAIRS)
    assert not prebuilt.exists() and prebuilt.with_name(prebuilt.name + ".dsparkctl-aside").exists()
    assert not (cache / "120f/cached_ops/sparse_mla_sm120").exists()
    assert (cache / "120f/cached_ops/sparse_mla_sm120.dsparkctl-aside/build.ninja").exists()
    assert other.read_bytes() == b"unrelated module"
    [applied] = status(target)
    assert applied.intact

    # The server starts and FlashInfer rebuilds the module from the patched sources.
    rebuilt = cache / "120f/cached_ops/sparse_mla_sm120"
    rebuilt.mkdir()
    (rebuilt / "sparse_mla_sm120.so").write_bytes(b"built from patched sources")
    [applied] = status(target)
    assert applied.intact, "a rebuilt JIT cache is expected, not drift"

    revert(target)
    assert diff_snapshots(before_site, snapshot(site)) == []
    assert diff_snapshots(before_ws, snapshot(ws)) == []


# --------------------------------------------------------------------------- refusals


@pytest.mark.network
def test_modified_file_is_refused_and_nothing_written(sg17: Target) -> None:
    with open(sg17.site / SGLANG_FILE, "ab") as fh:
        fh.write(b"#")
    before = snapshot(sg17.site)
    plan = plan_patch(get_spec(ROUTE), sg17)
    assert plan.blockers and "not the upstream sglang 0.5.17 file" in plan.blockers[0]
    with pytest.raises(PatchRefused, match="nothing was written"):
        apply(plan)
    assert diff_snapshots(before, snapshot(sg17.site)) == []
    # --force patches the file as it is, and revert gives back exactly that.
    res = _apply(sg17, force=True)
    assert res.forced and status(sg17)[0].forced
    revert(sg17)
    assert diff_snapshots(before, snapshot(sg17.site)) == []


@pytest.mark.network
def test_unknown_version_refused_then_forced(sg17: Target) -> None:
    meta = next(sg17.site.glob("sglang-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.5.17", "Version: 0.5.99", 1))
    before = snapshot(sg17.site)
    with pytest.raises(PatchRefused, match=r"sglang 0\.5\.99 is not a version patch "
                                           r"sglang-route-sm120 knows .*--force"):
        _apply(sg17)
    assert diff_snapshots(before, snapshot(sg17.site)) == []
    plan = plan_patch(get_spec(ROUTE), sg17, force=True)
    assert any("byte-identical to the upstream file of sglang 0.5.17" in n for n in plan.notes)
    res = apply(plan, force=True)
    assert res.changed and res.forced and "FORCED" in res.message
    assert _hook_is_first_statement((sg17.site / SGLANG_FILE).read_text())
    revert(sg17)
    assert diff_snapshots(before, snapshot(sg17.site)) == []


@pytest.mark.network
def test_force_never_skips_the_anchor_check(sg17: Target) -> None:
    meta = next(sg17.site.glob("sglang-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.5.17", "Version: 0.5.99", 1))
    f = sg17.site / SGLANG_FILE
    f.write_text(f.read_text().replace("SM120 FlashMLA sparse decode entry point.",
                                       "SM120 entry point (reworded upstream)."))
    before = snapshot(sg17.site)
    with pytest.raises(PatchRefused, match="occurs 0 times"):
        plan_patch(get_spec(ROUTE), sg17, force=True)
    assert snapshot(sg17.site) == before


@pytest.mark.network
def test_dry_run_prints_diff_and_changes_nothing(sg17: Target) -> None:
    before = snapshot(sg17.site)
    res = _apply(sg17, dry_run=True)
    assert res.dry_run and not res.changed
    diff = res.plan.diff_text()
    assert f"--- a/{SGLANG_FILE}" in diff and f"+++ b/{SGLANG_FILE}" in diff
    assert f"+    {HOOK_IMPORT}" in diff and "+++ b/_dsparkctl_route.json" in diff
    assert snapshot(sg17.site) == before


# --------------------------------------------------------------------------- read-only


_NOBODY_DRIVER = r"""
import sys
from pathlib import Path
from dsparkctl.patching import NotWritable, Target, apply, get_spec, plan_patch
t = Target(Path(sys.argv[1]))
try:
    apply(plan_patch(get_spec("sglang-route-sm120"), t))
except NotWritable as exc:
    print("NOTWRITABLE", exc)
    sys.exit(3)
print("APPLIED")
"""


def _as_nobody(args: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HOME="/tmp"))


@pytest.mark.network
@pytest.mark.parametrize("writable_root", [False, True])
def test_read_only_target_as_unprivileged_user(writable_root: bool) -> None:
    """Real permissions: the tree is root's, the patcher runs as ``nobody``.

    ``writable_root`` lets nobody create the state dir (so backups and temps
    start being written) while the sglang package stays read-only.
    """
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the patcher as an unprivileged user")
    probe = _as_nobody(["-c", "import dsparkctl.patching"])
    if probe.returncode != 0:
        pytest.skip(f"user nobody cannot import dsparkctl from here: {probe.stderr[-200:]}")
    top = Path(tempfile.mkdtemp(prefix="dsparkctl-ro-", dir="/tmp"))
    try:
        top.chmod(0o755)
        site = sglang_tree(top / "site", "0.5.17")
        site.chmod(0o777 if writable_root else 0o755)
        before = snapshot(site)
        res = _as_nobody(["-c", _NOBODY_DRIVER, str(site)])
        assert res.returncode == 3, res.stdout + res.stderr
        assert "NOTWRITABLE cannot write to" in res.stdout and "nothing was changed" in res.stdout
        assert diff_snapshots(before, snapshot(site)) == []
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.network
def test_rename_failure_in_package_dir_rolls_back(sg17: Target,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated (root ignores permissions): the rename into the sglang package
    dir fails with EACCES after the backup step succeeded."""
    before = snapshot(sg17.site)
    real_replace = os.replace
    pkg = str(sg17.site / "sglang")

    def deny(src: str, dst: str) -> None:
        if str(dst).startswith(pkg):
            raise PermissionError(13, "Permission denied", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(patch_txn.os, "replace", deny)
    with pytest.raises(NotWritable, match=r"cannot write to .*flash_mla_sm120\.py"):
        _apply(sg17)
    monkeypatch.undo()
    assert diff_snapshots(before, snapshot(sg17.site)) == []


# --------------------------------------------------------------------------- interruption


_CRASH_DRIVER = r"""
import os, sys, time
from pathlib import Path
from dsparkctl import patch_txn
from dsparkctl.patching import Target, apply, get_spec, plan_patch, revert
site, op, k, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def hook(i, step):
    if i == k:
        if how == "crash":
            os._exit(97)
        Path(sys.argv[5]).touch()
        time.sleep(float(sys.argv[6]))
patch_txn._after_step = hook
t = Target(Path(site))
if op == "apply":
    apply(plan_patch(get_spec("sglang-route-sm120"), t))
else:
    revert(t)
print("FINISHED")
"""


def _driver(site: Path, op: str, k: int, how: str = "crash", *extra: str
            ) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _CRASH_DRIVER, str(site), op, str(k), how,
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.network
def test_apply_killed_at_every_step_is_old_or_new(sg17: Target) -> None:
    """kill -9 equivalent (os._exit) at every point of the apply; the next run recovers."""
    site = sg17.site
    before = snapshot(site)
    _apply(sg17)
    after = snapshot(site)
    revert(sg17)
    assert snapshot(site) == before
    n_steps = 5  # backup, hooked module, router module, router settings, state.json
    for k in range(-1, n_steps + 1):
        proc = _driver(site, "apply", k)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 97, (k, out, err)
        msg = recover_target(sg17)
        assert msg is not None
        now = snapshot(site)
        if k < n_steps:
            assert diff_snapshots(before, now) == [], f"killed after step {k}: not the old tree"
        else:
            # state.json differs only by its timestamps.
            assert diff_snapshots(_untimed(after), _untimed(now)) == [], "not the new tree"
            assert status(sg17)[0].intact
            revert(sg17)
    # The next ordinary apply completes to exactly the new tree.
    proc = _driver(site, "apply", 99)
    assert proc.communicate(timeout=120)[0].strip() == "FINISHED"
    assert diff_snapshots(_untimed(after), _untimed(snapshot(site))) == []


def _untimed(snap: dict[str, str]) -> dict[str, str]:
    state = f"{STATE_DIR}/state.json"
    return {k: ("present" if k == state else v) for k, v in snap.items()}


@pytest.mark.network
def test_revert_killed_at_every_step_is_old_or_new(sg17: Target) -> None:
    site = sg17.site
    before = snapshot(site)
    _apply(sg17)
    applied = snapshot(site)
    n_steps = 5  # restore module, drop backup, drop router module + settings, drop state.json
    for k in range(-1, n_steps + 1):
        proc = _driver(site, "revert", k)
        proc.communicate(timeout=120)
        assert proc.returncode == 97
        # Planning on the half-reverted tree is refused with a clear message ...
        with pytest.raises(PatchError, match="interrupted dsparkctl change is pending"):
            plan_patch(get_spec(ROUTE), sg17)
        # ... and the next run (apply_patch: recover, plan, apply) rolls back
        # first, then finds everything applied already.
        res = apply_patch(ROUTE, sg17)
        now = snapshot(site)
        if k < n_steps:
            assert res.recovered and "rolled back" in res.recovered
            assert not res.changed
            assert diff_snapshots(applied, now) == [], f"revert killed after step {k}"
        else:
            # The revert had committed: only its cleanup was left, and this apply re-applied.
            assert res.recovered and "completed the cleanup" in res.recovered
            assert res.changed
    revert(sg17)
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_revert_killed_after_its_commit_then_revert_again_is_the_old_tree(sg17: Target) -> None:
    """Killed after the commit point, the revert has left only its cleanup (empty backup
    folders, the lock): the next revert, with nothing to revert, still ends byte-identical."""
    site = sg17.site
    before = snapshot(site)
    _apply(sg17)
    proc = _driver(site, "revert", 5)
    proc.communicate(timeout=120)
    assert proc.returncode == 97
    assert revert(sg17) == []
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_in_process_failure_at_every_step_rolls_back(sg17: Target,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(sg17.site)
    for k in range(-1, 5):
        def boom(i: int, step: object, k: int = k) -> None:
            if i == k:
                raise RuntimeError(f"injected failure after step {k}")

        monkeypatch.setattr(patch_txn, "_after_step", boom)
        with pytest.raises(RuntimeError, match="injected"):
            _apply(sg17)
        assert diff_snapshots(before, snapshot(sg17.site)) == [], k


# --------------------------------------------------------------------------- lock


@pytest.mark.network
def test_concurrent_apply_gets_the_lock_error(sg17: Target, tmp_path: Path) -> None:
    plan = plan_patch(get_spec(ROUTE), sg17)
    signal = tmp_path / "holding"
    proc = _driver(sg17.site, "apply", 0, "sleep", str(signal), "4")
    deadline = time.monotonic() + 60
    while not signal.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    with pytest.raises(PatchLocked, match=f"another dsparkctl is patching {sg17.site}"):
        apply(plan)
    out, err = proc.communicate(timeout=60)
    assert out.strip() == "FINISHED", err
    [applied] = status(sg17)
    assert applied.intact


@pytest.mark.network
def test_lock_is_exclusive_in_process_too(sg17: Target) -> None:
    before = snapshot(sg17.site)
    with patch_txn.locked(sg17.state_dir), pytest.raises(PatchLocked):
        _apply(sg17)
    assert snapshot(sg17.site) == before


# --------------------------------------------------------------------------- drift and updates


@pytest.mark.network
def test_reinstalled_file_is_drift_and_revert_leaves_it(sg17: Target) -> None:
    site = sg17.site
    before = snapshot(site)
    stock = (site / SGLANG_FILE).read_bytes()
    _apply(sg17)
    (site / SGLANG_FILE).write_bytes(stock)  # what `pip install --force-reinstall` does
    [applied] = status(sg17)
    assert not applied.intact
    assert {f.path: f.state for f in applied.files}[SGLANG_FILE] == "original"
    with pytest.raises(PatchRefused, match="changed since"):
        _apply(sg17)
    [rr] = revert(sg17)
    assert SGLANG_FILE not in rr.restored and "_dsparkctl_route.py" in rr.restored
    assert diff_snapshots(before, snapshot(site)) == []

    _apply(sg17)
    (site / SGLANG_FILE).write_bytes(stock + b"# someone else's edit\n")
    [rr] = revert(sg17)
    assert any("left as it is" in x for x in rr.left_alone)
    assert (site / SGLANG_FILE).read_bytes().endswith(b"# someone else's edit\n")


@pytest.mark.network
def test_revert_refuses_to_delete_the_router_a_changed_file_still_imports(sg17: Target) -> None:
    """A hooked file edited again since the apply is left alone by the revert; deleting the
    router it imports would break the server at its first call with nothing left to report it.
    So nothing is reverted until the file is restored; then the revert goes on."""
    site = sg17.site
    before = snapshot(site)
    stock = (site / SGLANG_FILE).read_bytes()
    _apply(sg17)
    (site / SGLANG_FILE).write_bytes((site / SGLANG_FILE).read_bytes() + b"# an edit\n")
    edited = snapshot(site)
    for dry_run in (True, False):
        with pytest.raises(PatchRefused, match="still uses _dsparkctl_route"):
            revert(sg17, dry_run=dry_run)
        assert snapshot(site) == edited
    [applied] = status(sg17)
    assert {f.path: f.state for f in applied.files}[SGLANG_FILE] == "changed"
    (site / SGLANG_FILE).write_bytes(stock)  # pip install --force-reinstall
    [rr] = revert(sg17)
    assert "_dsparkctl_route.py" in rr.restored
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_revert_restores_a_deleted_patched_file_from_its_backup(sg17: Target) -> None:
    site = sg17.site
    before = snapshot(site)
    _apply(sg17)
    (site / SGLANG_FILE).unlink()
    [rr] = revert(sg17)
    assert any(SGLANG_FILE in x for x in rr.restored)
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
@pytest.mark.parametrize("damage", ["missing", "damaged"])
def test_status_and_revert_see_a_lost_backup(sg17: Target, damage: str) -> None:
    _apply(sg17)
    backup = next((sg17.state_dir / "backups").rglob("flash_mla_sm120.py"))
    if damage == "missing":
        backup.unlink()
    else:
        backup.write_bytes(backup.read_bytes() + b"x")
    [applied] = status(sg17)
    assert not applied.intact
    assert {f.path: f.backup for f in applied.files}[SGLANG_FILE] == damage
    after = snapshot(sg17.site)
    with pytest.raises(PatchRefused, match="backup"):
        revert(sg17)
    assert snapshot(sg17.site) == after


@pytest.mark.network
@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_apply_and_revert_keep_the_owner_of_files(sg17: Target) -> None:
    """Run as root over a service user's tree, the files stay the service user's: a 0640 file
    handed to root would be unreadable to the server."""
    site = sg17.site
    path = site / SGLANG_FILE
    uid, gid = 65534, 65534
    for p in [site, *site.rglob("*")]:
        os.chown(p, uid, gid)
    path.chmod(0o640)
    _apply(sg17)
    for p in (path, site / "_dsparkctl_route.py", site / "_dsparkctl_route.json"):
        st = p.stat()
        assert (st.st_uid, st.st_gid) == (uid, gid), p
    assert path.stat().st_mode & 0o777 == 0o640
    revert(sg17)
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (uid, gid, 0o640)


@pytest.mark.network
def test_a_forced_apply_reapplied_is_no_change(sg17: Target) -> None:
    """An unknown version patched with --force: the second run (without --force) reports the
    patch as applied, it does not refuse it again."""
    dist = next(sg17.site.glob("sglang-*.dist-info"))
    meta = dist / "METADATA"
    meta.write_text(re.sub(r"^Version: .*$", "Version: 0.5.99", meta.read_text(), count=1,
                           flags=re.M))
    with pytest.raises(PatchRefused, match="not a version"):
        _apply(sg17)
    assert _apply(sg17, force=True).forced
    res = _apply(sg17)
    assert not res.changed and "already applied" in res.message


@pytest.mark.network
def test_a_dsparkctl_upgrade_is_not_a_stale_route(sg17: Target,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Applied by an older dsparkctl (another version stamp, another router source): the
    install is intact and its routing right. Only a changed FlashInfer reading is stale; a
    different stamp is nothing, a different router is 'newer' (an update, not a problem)."""
    from dsparkctl import patch_spec, routing
    from dsparkctl.patching import refresh_needed

    real = patch_spec.PatchSpec.source_bytes
    monkeypatch.setattr(routing, "__version__", "0.0.9")
    monkeypatch.setattr(patch_spec.PatchSpec, "source_bytes",
                        lambda self, name: real(self, name) + b"# an older router\n")
    _apply(sg17)
    monkeypatch.undo()
    [r] = refresh_needed(sg17)
    assert r.stale == [] and r.newer == ["_dsparkctl_route.py"]
    assert status(sg17)[0].intact


def test_settings_from_before_prefill_routing_are_older_not_stale() -> None:
    """A route config written before the router learnt FlashInfer's prefill coverage (no
    ``flashinfer.prefill``) still describes the installed FlashInfer: not stale (its router
    file makes it 'newer'). A changed prefill reading is stale like any FlashInfer change."""
    import json

    from dsparkctl.flashinfer_tables import known_support
    from dsparkctl.patching import _settings_differ
    from dsparkctl.routing import from_support, route_config, route_config_bytes

    support = known_support("0.6.15.post1")
    assert support is not None
    new = route_config({"route": "missing"}, from_support(support), "sglang-route-sm120")
    old = {**new, "generated_by": "dsparkctl 0.0.9",
           "flashinfer": {k: v for k, v in new["flashinfer"].items() if k != "prefill"}}
    as_bytes = route_config_bytes
    assert not _settings_differ(as_bytes(old), as_bytes(new))
    moved = {**new, "flashinfer": {**new["flashinfer"], "prefill": None}}
    assert _settings_differ(as_bytes(moved), as_bytes(new))
    other_pairs = {**old, "flashinfer": {**old["flashinfer"], "pairs": [[64, 192]]}}
    assert _settings_differ(as_bytes(other_pairs), as_bytes(new))
    assert json.loads(as_bytes(new))["flashinfer"]["prefill"]["dual_topks"] == [128]


@pytest.mark.network
def test_reapply_with_new_route_mode_updates_only_the_settings(sg17: Target) -> None:
    site = sg17.site
    before = snapshot(site)
    _apply(sg17)
    hooked = (site / SGLANG_FILE).read_bytes()
    res = _apply(sg17, params={"route": "all"})
    assert res.changed and [c.rel for c in res.plan.changes] == ["_dsparkctl_route.json"]
    assert '"mode": "all"' in (site / "_dsparkctl_route.json").read_text()
    assert (site / SGLANG_FILE).read_bytes() == hooked
    # A later apply without --route keeps "all".
    assert not _apply(sg17).changed
    revert(sg17)
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_route_settings_carry_the_flashinfer_table(tmp_path: Path) -> None:
    import json

    import realwheels

    site = realwheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                        ("flashinfer-python", "0.6.15.post1")],
                                    copy=True, only=["sglang", "flashinfer"])
    manifest = tmp_path / "prefix" / "manifest.json"
    target = Target(site)
    _apply(target, params={"manifest": str(manifest)})
    cfg = json.loads((site / "_dsparkctl_route.json").read_text())
    assert cfg["mode"] == "missing" and cfg["manifest"] == str(manifest.resolve())
    assert cfg["flashinfer"]["kind"] == "pairs" and cfg["flashinfer"]["version"] == "0.6.15.post1"
    pairs = {tuple(p) for p in cfg["flashinfer"]["pairs"]}
    assert (64, 128) in pairs and (64, 192) not in pairs and len(pairs) == 15
    settings = read_route_settings(site)
    assert settings is not None and settings["router_present"] and settings["mode"] == "missing"
    revert(target)
    assert read_route_settings(site) is None


# --------------------------------------------------------------------------- import check


def test_import_check_separates_patch_errors_from_environment_gaps(tmp_path: Path) -> None:
    from dsparkctl.patching import import_check_in

    site = tmp_path / "site"
    site.mkdir()
    (site / "needs_missing_dep.py").write_text("import dsparkctl_no_such_dependency\n")
    (site / "broken_patch.py").write_text("x = 1\nraise RuntimeError('bad hook')\n")
    target = Target(site, python=Path(sys.executable))
    [row] = import_check_in(target, [("needs_missing_dep", None, str(site / "needs_missing_dep.py"))])
    assert row["result"] == "skipped" and "dsparkctl_no_such_dependency" in row["reason"]
    with pytest.raises(PatchError, match="bad hook"):
        import_check_in(target, [("broken_patch", None, str(site / "broken_patch.py"))])
    # An error raised by another module the patched one imports is the environment's.
    (site / "other_mod.py").write_text("raise OSError('no GPU here')\n")
    (site / "imports_other.py").write_text("import other_mod\n")
    [row] = import_check_in(target, [("imports_other", None, str(site / "imports_other.py"))])
    assert row["result"] == "skipped" and "no GPU here" in row["reason"]
    # The router's self-check failing is always fatal.
    (site / "router_like.py").write_text("def self_check():\n    raise ValueError('cfg')\n")
    with pytest.raises(PatchError, match="cfg"):
        import_check_in(target, [("router_like", "self_check", str(site / "router_like.py"))])
