"""All-or-nothing file changes in a target tree: lock, journal, atomic renames.

Patching a live site-packages must never leave a mix of old and new files:
a half-patched SGLang (hook present, router module missing) fails at the
first attention call of a production server. Every change is therefore one
transaction of steps that are each a single ``rename`` (atomic on POSIX):

1. a journal in phase ``prepare`` names every temp, saved copy and directory
   the transaction will create (so a crash right now leaves nothing unknown);
2. the new contents are written to temps in the *same directory* as their
   destination (fsync), the current contents of files to be replaced are
   saved under the state dir (they are what a rollback puts back);
3. the journal moves to phase ``apply``; the steps run (``os.replace``);
4. the journal moves to phase ``done`` (the commit point); garbage is removed;
   the journal is deleted.

A journal found in ``prepare`` or ``apply`` on the next run is rolled back:
every step is undone by *content* (a file holding the new bytes gets the old
ones back; one holding the old bytes is left alone), so it does not matter
how many renames had happened. A journal in ``done`` only has garbage left to
remove. A file holding neither is someone else's change: it is left alone and
reported, never overwritten.

An exclusive ``flock`` on ``<state dir>/lock`` keeps two dsparkctl runs from
patching the same tree at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

JOURNAL = "journal.json"
LOCK = "lock"
TXN_DIR = "txn"

StepKind = Literal["put", "remove", "move"]
DIRECTORY = "<directory>"


class PatchError(Exception):
    """A patch operation could not be done; nothing (further) was changed."""


class PatchLocked(PatchError):
    """Another dsparkctl holds the lock on this tree."""


class NotWritable(PatchError):
    """The target tree (or part of it) cannot be written."""


class RecoveryConflict(PatchError):
    """Rolling back found files changed by someone else; they were left alone."""


# Fault-injection point for tests: called with -1 once every temp is written
# (journal still in ``prepare``), with ``k`` after step ``k`` has been carried
# out, and with ``len(steps)`` right after the commit point. Tests replace it
# (in a subprocess, with ``os._exit``) to prove that a run killed at any of
# these points leaves the old tree (or, after the commit point, the new one).
def _after_step(index: int, step: Step | None) -> None:  # pragma: no cover - hook
    return None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str | None:
    """The file's sha256, or None when it does not exist (a directory hashes as None too)."""
    try:
        with open(path, "rb") as fh:
            h = hashlib.sha256()
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
            return h.hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes, mode: int | None = None,
               owner: tuple[int, int] | None = None) -> None:
    """Write a file that must not exist yet, fsynced (temps and saved copies).

    ``owner`` (uid, gid) is given to files that replace or join a target tree: run as root,
    a patch must not hand a service user's 0640 file to root (the server could no longer
    read it). Only root can give a file away; anyone else's files are theirs already.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644 if mode is None else mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if owner is not None and os.geteuid() == 0:
            os.fchown(fd, *owner)
        if mode is not None:
            os.fchmod(fd, mode)  # after fchown, which clears set-id bits
        os.fsync(fd)
    finally:
        os.close(fd)


def _owner_of(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_uid, st.st_gid


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` through a same-directory temp + fsync + rename."""
    tmp = path.with_name(f".{path.name}.dsparkctl-{uuid.uuid4().hex[:12]}.tmp")
    _write_new(tmp, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def not_writable_message(path: Path, exc: OSError) -> str:
    return (f"cannot write to {path} ({exc.strerror or exc}); the target is read-only for this "
            f"user: run dsparkctl as the owner of the environment (or with sudo), or patch a "
            f"writable copy; nothing was changed")


def is_permission_error(exc: BaseException) -> bool:
    return isinstance(exc, PermissionError) or (
        isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM))


# --------------------------------------------------------------------------- lock


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Hold the tree's exclusive lock; create the state dir if needed.

    The state dir is removed again on exit when nothing but the lock is left
    in it, so a tree that was patched and reverted ends byte-identical.
    """
    created = False
    try:
        if not state_dir.is_dir():
            state_dir.mkdir()
            created = True
    except OSError as exc:
        if is_permission_error(exc):
            raise NotWritable(not_writable_message(state_dir.parent, exc)) from exc
        raise PatchError(f"cannot create {state_dir}: {exc}") from exc
    lock_path = state_dir / LOCK
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if created:
                with contextlib.suppress(OSError):
                    state_dir.rmdir()
            if is_permission_error(exc):
                raise NotWritable(not_writable_message(state_dir, exc)) from exc
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise PatchLocked(
                f"another dsparkctl is patching {state_dir.parent} (lock {lock_path} is held); "
                f"wait for it to finish and run again") from None
        # The previous holder may have removed the lock file (empty state dir)
        # between our open and flock: then we hold a lock nobody else sees.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock_path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
        state_dir.mkdir(exist_ok=True)
    try:
        yield
    finally:
        try:
            leftovers = {p.name for p in state_dir.iterdir()} - {LOCK}
            if not leftovers:
                lock_path.unlink()
                state_dir.rmdir()
        except OSError:
            pass
        os.close(fd)


# --------------------------------------------------------------------------- steps


@dataclass
class Step:
    """One rename. ``put``: temp -> path (create or replace); ``remove``:
    path -> trash (deleted after commit); ``move``: path -> dst (a file or a
    directory set aside, e.g. a shadowing prebuilt module)."""

    kind: StepKind
    path: str
    old_sha: str | None = None
    new_sha: str | None = None
    temp: str | None = None
    saved: str | None = None
    dst: str | None = None
    mode: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Step:
        return cls(**obj)


@dataclass
class Transaction:
    """Steps to run all-or-nothing inside ``state_dir`` (which must be locked)."""

    state_dir: Path
    steps: list[Step] = field(default_factory=list)
    _contents: dict[int, bytes] = field(default_factory=dict)
    txid: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    # ---- building

    def put(self, path: Path, data: bytes, *, expect_sha: str | Literal["any"] | None = "any",
            mode: int | None = None) -> None:
        """Create or replace ``path``. ``expect_sha`` is re-checked at commit time
        (None = must not exist), so a file changed after planning is never clobbered."""
        cur = sha256_file(path)
        if expect_sha != "any" and cur != expect_sha:
            raise PatchError(f"{path} changed while planning (sha256 {cur}, expected "
                             f"{expect_sha}); nothing was written, run again")
        step = Step("put", str(path), old_sha=cur, new_sha=sha256_bytes(data),
                    temp=str(path.with_name(f".{path.name}.dsparkctl-{self.txid}.tmp")),
                    mode=mode)
        if cur is not None:
            step.saved = str(self.state_dir / TXN_DIR / self.txid / f"{len(self.steps)}")
        self._contents[len(self.steps)] = data
        self.steps.append(step)

    def remove(self, path: Path) -> None:
        """Delete a file or a whole directory (set aside first, deleted after commit)."""
        cur = sha256_file(path)
        if cur is None:
            if not path.is_dir():
                return
            cur = DIRECTORY
        self.steps.append(Step("remove", str(path), old_sha=cur, new_sha=None,
                               temp=str(path.with_name(f".{path.name}.dsparkctl-{self.txid}.del"))))

    def move(self, src: Path, dst: Path) -> None:
        self.steps.append(Step("move", str(src), dst=str(dst)))

    # ---- running

    def _journal(self, phase: str, mkdirs: list[str]) -> None:
        obj = {"txid": self.txid, "phase": phase, "mkdirs": mkdirs,
               "steps": [s.to_json() for s in self.steps]}
        atomic_write(self.state_dir / JOURNAL, json.dumps(obj, indent=1).encode())

    def commit(self, verify: Callable[[], None] | None = None) -> None:
        """Run every step; on any error (or a failed ``verify``) roll back and re-raise."""
        if not self.steps:
            return
        mkdirs = self._dirs_to_create()
        self._journal("prepare", [str(d) for d in mkdirs])
        try:
            self._prepare(mkdirs)
            _after_step(-1, None)
            self._journal("apply", [str(d) for d in mkdirs])
            for i, step in enumerate(self.steps):
                _run_step(step)
                _after_step(i, step)
            if verify is not None:
                verify()
        except BaseException:
            _rollback_journal(self.state_dir)
            raise
        self._journal("done", [str(d) for d in mkdirs])
        _after_step(len(self.steps), None)
        _finish_journal(self.state_dir)

    def _dirs_to_create(self) -> list[Path]:
        need: list[Path] = []
        parents = [Path(s.path).parent for s in self.steps if s.kind == "put"]
        parents += [Path(s.saved).parent for s in self.steps if s.saved]
        for p in parents:
            chain: list[Path] = []
            while not p.exists():
                chain.append(p)
                p = p.parent
            for d in reversed(chain):
                if d not in need:
                    need.append(d)
        return need

    def _prepare(self, mkdirs: list[Path]) -> None:
        for d in mkdirs:
            with contextlib.suppress(FileExistsError):
                d.mkdir()
        freed: set[str] = set()
        for i, step in enumerate(self.steps):
            if step.kind == "put":
                path = Path(step.path)
                if step.saved is not None:
                    data = path.read_bytes()
                    if sha256_bytes(data) != step.old_sha:
                        raise PatchError(f"{path} changed while patching; nothing was written")
                    _write_new(Path(step.saved), data)
                mode = step.mode
                if mode is None and step.old_sha is not None:
                    mode = path.stat().st_mode & 0o7777
                # A replaced file keeps its owner; a new one takes its folder's.
                owner = _owner_of(path if step.old_sha is not None else path.parent)
                _write_new(Path(step.temp or ""), self._contents[i], mode, owner)
            elif step.kind == "move":
                if os.path.lexists(step.dst or "") and step.dst not in freed:
                    raise PatchError(f"cannot move {step.path} to {step.dst}: it already exists")
                if not os.path.lexists(step.path):
                    raise PatchError(f"{step.path} disappeared while patching; nothing was written")
                freed.add(step.path)
            elif step.kind == "remove":
                freed.add(step.path)


def _run_step(step: Step) -> None:
    if step.kind == "put":
        os.replace(step.temp or "", step.path)
        _fsync_dir(Path(step.path).parent)
    elif step.kind == "remove":
        os.replace(step.path, step.temp or "")
        _fsync_dir(Path(step.path).parent)
    else:
        os.rename(step.path, step.dst or "")
        _fsync_dir(Path(step.path).parent)
        _fsync_dir(Path(step.dst or "").parent)


def pending_journal(state_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((state_dir / JOURNAL).read_text())
    except FileNotFoundError:
        return None


def recover(state_dir: Path) -> str | None:
    """Finish what an interrupted run left: roll back (or clean up after a commit).

    Returns a one-line account of what was done, or None when nothing was pending.
    Must be called with the lock held.
    """
    journal = pending_journal(state_dir)
    if journal is None:
        shutil.rmtree(state_dir / TXN_DIR, ignore_errors=True)
        return None
    if journal.get("phase") == "done":
        _finish_journal(state_dir)
        return f"completed the cleanup of committed change {journal.get('txid')}"
    _rollback_journal(state_dir)
    return (f"rolled back interrupted change {journal.get('txid')} "
            f"(phase {journal.get('phase')}): the tree is as it was before it")


def _rollback_journal(state_dir: Path) -> None:
    journal = pending_journal(state_dir)
    if journal is None:
        return
    steps = [Step.from_json(s) for s in journal["steps"]]
    conflicts: list[str] = []
    if journal.get("phase") == "apply":
        for step in reversed(steps):
            msg = _undo_step(step)
            if msg:
                conflicts.append(msg)
    _remove_garbage(steps, rolled_back=True)
    for d in reversed(journal.get("mkdirs", [])):
        with contextlib.suppress(OSError):
            os.rmdir(d)
    shutil.rmtree(state_dir / TXN_DIR / str(journal.get("txid")), ignore_errors=True)
    with contextlib.suppress(OSError):
        (state_dir / TXN_DIR).rmdir()
    if conflicts:
        # Keep the journal: a person has to look at these files.
        raise RecoveryConflict("rollback left files changed by someone else untouched: "
                               + "; ".join(conflicts))
    (state_dir / JOURNAL).unlink()
    _fsync_dir(state_dir)


def _undo_step(step: Step) -> str | None:
    path = Path(step.path)
    if step.kind == "put":
        cur = sha256_file(path)
        if cur == step.old_sha:
            return None
        if cur != step.new_sha:
            return f"{path} (sha256 {cur})"
        if step.old_sha is None:
            path.unlink()
        else:
            data = Path(step.saved or "").read_bytes()
            if sha256_bytes(data) != step.old_sha:
                return f"{path}: saved copy {step.saved} is damaged"
            mode = path.stat().st_mode & 0o7777
            tmp = path.with_name(path.name + ".dsparkctl-rollback.tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            _write_new(tmp, data, mode, _owner_of(path))
            os.replace(tmp, path)
        _fsync_dir(path.parent)
        return None
    if step.kind == "remove":
        trash = Path(step.temp or "")
        if not os.path.lexists(path) and os.path.lexists(trash):
            os.replace(trash, path)
            _fsync_dir(path.parent)
        return None
    dst = Path(step.dst or "")
    if os.path.lexists(dst) and not os.path.lexists(path):
        os.rename(dst, path)
        _fsync_dir(path.parent)
    return None


def _remove_garbage(steps: list[Step], *, rolled_back: bool) -> None:
    for step in steps:
        if step.kind == "put" and step.temp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(step.temp)
        if step.kind == "remove" and step.temp and not rolled_back:
            trash = Path(step.temp)
            if trash.is_dir() and not trash.is_symlink():
                shutil.rmtree(trash, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    trash.unlink()


def _finish_journal(state_dir: Path) -> None:
    journal = pending_journal(state_dir)
    if journal is None:
        return
    steps = [Step.from_json(s) for s in journal["steps"]]
    _remove_garbage(steps, rolled_back=False)
    shutil.rmtree(state_dir / TXN_DIR / str(journal.get("txid")), ignore_errors=True)
    with contextlib.suppress(OSError):
        (state_dir / TXN_DIR).rmdir()
    (state_dir / JOURNAL).unlink()
    _fsync_dir(state_dir)


def remove_empty_dirs(start: Path, stop: Path) -> None:
    """Remove ``start`` and its parents while empty, never ``stop`` or above."""
    p = start
    stop = stop.resolve()
    while True:
        try:
            rp = p.resolve()
        except OSError:
            return
        if rp == stop or stop not in rp.parents:
            return
        try:
            p.rmdir()
        except OSError:
            return
        p = p.parent
