"""Patch specs: what a patch changes in which versions of a target package.

A spec is data (``patches/<id>/spec.json``), not code, so that supporting a
new SGLang or FlashInfer release is a reviewed table change: its upstream
sha256, checked against the real wheel, and the resulting sha256. This module
only reads specs and renders edits on bytes (pure, no I/O on targets).

Edits are anchor-based insertions: the anchor must occur exactly once in the
file, otherwise the file's layout is not the one the patch was written for and
the patch refuses (even with ``--force``: forcing may skip the version and
hash checks, never the anchor check).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

SPEC_SCHEMA = 1
SPEC_FILE = "spec.json"

Pair = tuple[int, int]


class SpecError(Exception):
    """A spec file is malformed (a bug in dsparkctl's data, not the user's input)."""


class AnchorError(Exception):
    """The target file does not have the layout the patch was written for."""


@dataclass(frozen=True)
class PairsPresent:
    """How to read the ``(heads, topk)`` pairs a file already has."""

    parser: Literal["python-frozenset", "regex"]
    name: str = ""
    pattern: str = ""

    def read(self, text: str) -> frozenset[Pair]:
        if self.parser == "regex":
            return frozenset((int(a), int(b))
                             for a, b in re.findall(self.pattern, text, flags=re.MULTILINE))
        return python_frozenset_pairs(text, self.name)


@dataclass(frozen=True)
class Edit:
    """Insert ``text`` (or one rendered ``each_pair`` line per missing pair)
    right after / before the unique ``anchor``."""

    where: Literal["after", "before"]
    anchor: str
    text: str = ""
    each_pair: str = ""
    present: PairsPresent | None = None

    @property
    def uses_pairs(self) -> bool:
        return bool(self.each_pair)


@dataclass(frozen=True)
class TargetFile:
    """An existing file of the target package that the patch edits."""

    path: str
    edits: tuple[Edit, ...]
    upstream_sha256: Mapping[str, str]
    result_sha256: Mapping[str, str]
    import_name: str | None = None

    @property
    def uses_params(self) -> bool:
        return any(e.uses_pairs for e in self.edits)


@dataclass(frozen=True)
class NewFile:
    """A file the patch adds to the target (copied from the spec dir or generated)."""

    path: str
    source: str | None = None
    generator: str | None = None
    import_name: str | None = None
    check: str | None = None


@dataclass(frozen=True)
class SetAside:
    """Files or directories moved out of the way (renamed next to themselves)
    on apply and put back on revert, e.g. a prebuilt module that would shadow
    the patched sources. ``root`` is ``site`` (the target site-packages) or
    ``flashinfer-workspace`` (``$FLASHINFER_WORKSPACE_BASE`` or the home dir of
    the user who serves). ``{version}`` in a pattern is the installed version."""

    root: Literal["site", "flashinfer-workspace"]
    patterns: tuple[str, ...]
    why: str
    suffix: str = ".dsparkctl-aside"


@dataclass(frozen=True)
class PatchSpec:
    id: str
    title: str
    why: str
    distribution: str
    versions: SpecifierSet
    files: tuple[TargetFile, ...]
    new_files: tuple[NewFile, ...]
    set_aside: tuple[SetAside, ...]
    params: Mapping[str, Any]
    param_rules: Mapping[str, Any]
    directory: Path
    known_versions: tuple[str, ...] = field(default=())

    def knows(self, version: str) -> bool:
        """A version is known when it is in range and every file has its upstream hash."""
        try:
            in_range = Version(version) in self.versions
        except InvalidVersion:
            return False
        return in_range and all(version in f.upstream_sha256 for f in self.files)

    def source_bytes(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()


def _req(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise SpecError(f"{where}: missing '{key}'")
    return obj[key]


def _edit(obj: Mapping[str, Any], spec_dir: Path, where: str) -> Edit:
    text = obj.get("text", "")
    if "text_file" in obj:
        text = (spec_dir / obj["text_file"]).read_text(encoding="utf-8")
    present = None
    if "present" in obj:
        p = obj["present"]
        present = PairsPresent(parser=p["parser"], name=p.get("name", ""),
                               pattern=p.get("pattern", ""))
    e = Edit(where=_req(obj, "insert", where), anchor=_req(obj, "anchor", where), text=text,
             each_pair=obj.get("each_pair", ""), present=present)
    if e.where not in ("after", "before"):
        raise SpecError(f"{where}: insert must be 'after' or 'before'")
    if bool(e.text) == bool(e.each_pair):
        raise SpecError(f"{where}: an edit has exactly one of text/text_file/each_pair")
    if e.each_pair and e.present is None:
        raise SpecError(f"{where}: each_pair edits need 'present' to skip existing pairs")
    return e


def load_spec(spec_dir: Path) -> PatchSpec:
    where = str(spec_dir / SPEC_FILE)
    try:
        obj = json.loads((spec_dir / SPEC_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"{where}: {exc}") from exc
    if obj.get("schema") != SPEC_SCHEMA:
        raise SpecError(f"{where}: schema {obj.get('schema')!r}, expected {SPEC_SCHEMA}")
    try:
        versions = SpecifierSet(_req(obj, "versions", where))
    except InvalidSpecifier as exc:
        raise SpecError(f"{where}: {exc}") from exc
    files = tuple(
        TargetFile(
            path=_req(f, "path", where),
            edits=tuple(_edit(e, spec_dir, f"{where}:{f['path']}") for e in _req(f, "edits", where)),
            upstream_sha256=dict(_req(f, "upstream_sha256", where)),
            result_sha256=dict(f.get("result_sha256", {})),
            import_name=f.get("import"),
        )
        for f in obj.get("files", [])
    )
    new_files = tuple(
        NewFile(path=_req(n, "path", where), source=n.get("source"), generator=n.get("generator"),
                import_name=n.get("import"), check=n.get("check"))
        for n in obj.get("new_files", [])
    )
    for n in new_files:
        if bool(n.source) == bool(n.generator):
            raise SpecError(f"{where}: new file {n.path} needs exactly one of source/generator")
    set_aside = tuple(
        SetAside(root=_req(s, "root", where), patterns=tuple(_req(s, "patterns", where)),
                 why=s.get("why", ""), suffix=s.get("suffix", ".dsparkctl-aside"))
        for s in obj.get("set_aside", [])
    )
    known = sorted({v for f in files for v in f.upstream_sha256}, key=Version)
    spec = PatchSpec(
        id=_req(obj, "id", where), title=obj.get("title", ""), why=obj.get("why", ""),
        distribution=_req(obj, "distribution", where), versions=versions, files=files,
        new_files=new_files, set_aside=set_aside, params=dict(obj.get("params", {})),
        param_rules=dict(obj.get("param_rules", {})), directory=spec_dir,
        known_versions=tuple(known),
    )
    if spec.id != spec_dir.name:
        raise SpecError(f"{where}: id {spec.id!r} must equal its folder name {spec_dir.name!r}")
    return spec


def load_specs(root: Path) -> dict[str, PatchSpec]:
    return {d.name: load_spec(d) for d in sorted(root.iterdir()) if (d / SPEC_FILE).is_file()}


# --------------------------------------------------------------------------- rendering


def python_frozenset_pairs(text: str, name: str) -> frozenset[Pair]:
    """The int pairs of ``NAME = frozenset({(a, b), ...})`` at module level."""
    tree = ast.parse(text)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            value = node.value
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == "frozenset" and len(value.args) == 1):
                value = value.args[0]
            try:
                items = ast.literal_eval(value)
            except ValueError as exc:
                raise AnchorError(f"{name} is not a literal set of pairs") from exc
            return frozenset((int(a), int(b)) for a, b in items)
    raise AnchorError(f"no module-level {name} = frozenset(...)")


def find_anchor(text: str, anchor: str, path: str) -> int:
    n = text.count(anchor)
    if n != 1:
        first = anchor.strip().splitlines()[0] if anchor.strip() else anchor
        raise AnchorError(
            f"{path}: the anchor {first!r} occurs {n} times (expected exactly once); this file "
            f"does not have the layout the patch was written for")
    return text.index(anchor)


def render(data: bytes, tf: TargetFile, params: Mapping[str, Any]) -> bytes:
    """The patched bytes of one file. Raises AnchorError on a layout mismatch."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AnchorError(f"{tf.path}: not UTF-8 text ({exc})") from exc
    for edit in tf.edits:
        insert = edit.text
        if edit.uses_pairs:
            assert edit.present is not None
            have = edit.present.read(text)
            wanted = {tuple(p) for p in params.get("pairs", [])}
            missing = sorted(wanted - have)
            insert = "".join(edit.each_pair.format(heads=h, topk=k) for h, k in missing)
            if not insert:
                continue
        at = find_anchor(text, edit.anchor, tf.path)
        if edit.where == "after":
            at += len(edit.anchor)
        text = text[:at] + insert + text[at:]
    for edit in tf.edits:
        if edit.uses_pairs:
            assert edit.present is not None
            have = edit.present.read(text)
            wanted = {tuple(p) for p in params.get("pairs", [])}
            if not wanted <= have:
                raise AnchorError(f"{tf.path}: after the edit the table still lacks "
                                  f"{sorted(wanted - have)}")
    return text.encode("utf-8")


def validate_pairs(raw: Iterable[Any], rules: Mapping[str, Any]) -> list[list[int]]:
    """Check requested ``(heads, topk)`` pairs against what the kernel template can instantiate."""
    heads_ok = set(rules.get("heads", []))
    mult = int(rules.get("topk_multiple", 1))
    lo, hi = int(rules.get("topk_min", 1)), int(rules.get("topk_max", 1 << 30))
    out: set[tuple[int, int]] = set()
    for p in raw:
        try:
            h, k = (int(x) for x in p)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"pair {p!r} is not (heads, topk)") from exc
        if heads_ok and h not in heads_ok:
            raise ValueError(f"heads {h} in pair ({h}, {k}) is not one the decode template "
                             f"instantiates (one of {sorted(heads_ok)})")
        if k % mult or not lo <= k <= hi:
            raise ValueError(f"topk {k} in pair ({h}, {k}) must be a multiple of {mult} "
                             f"in [{lo}, {hi}]")
        out.add((h, k))
    if not out:
        raise ValueError("no (heads, topk) pairs given")
    return [list(p) for p in sorted(out)]
