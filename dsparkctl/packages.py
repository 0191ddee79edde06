"""Static reading of installed distributions: versions without importing anything.

``dsparkctl doctor`` must answer in a fraction of a second and must never
import torch or flashinfer (seconds, and a CUDA context). ``importlib.metadata``
walks every ``sys.path`` entry once per lookup and parses each METADATA in
full; serving environments hold hundreds of distributions. This module lists
each site directory once, reads the METADATA header only for the
distributions we track, and reads ``torch/version.py`` with ``ast`` for the
CUDA version torch was built against.

The tracked names are data (``TRACKED_DISTRIBUTIONS``), checked against the
published wheels' METADATA: e.g. ``nvidia-cutlass-dsl`` 4.7/4.8 requires
``nvidia-cutlass-dsl-libs-base`` + ``-libs-cu12`` (``-libs-cu13`` with the
``cu13`` extra), and 4.8's libs-base requires ``-libs-core``.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Distribution names (PEP 503 normalised) whose versions the doctor reports.
TRACKED_DISTRIBUTIONS: tuple[str, ...] = (
    "torch",
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "sglang",
    "sglang-kernel",
    "sgl-kernel",
    "vllm",
    "triton",
    "nvidia-cutlass-dsl",
    "nvidia-cutlass-dsl-libs-base",
    "nvidia-cutlass-dsl-libs-core",
    "nvidia-cutlass-dsl-libs-cu12",
    "nvidia-cutlass-dsl-libs-cu13",
    "apache-tvm-ffi",
)

# Import names whose on-disk location later stages need (the dispatch reader
# reads flashinfer's sources; jit-cache shadowing needs flashinfer_jit_cache).
# sgl-kernel and sglang-kernel both install ``sgl_kernel``; nvidia-cutlass-dsl
# installs ``cutlass``; apache-tvm-ffi installs ``tvm_ffi``.
TRACKED_MODULES: tuple[str, ...] = (
    "torch",
    "flashinfer",
    "flashinfer_cubin",
    "flashinfer_jit_cache",
    "sglang",
    "sgl_kernel",
    "vllm",
    "triton",
    "cutlass",
    "tvm_ffi",
)

_NORMALISE = re.compile(r"[-_.]+")
_META_SUFFIXES = (".dist-info", ".egg-info")
# setuptools' strict editable installs map import names to source folders here.
_PTH_PATH_JOIN = re.compile(r"os\.path\.join\(\s*(\w+)\.__path__\[0\]\s*,\s*['\"]([\w./-]+)['\"]\s*\)")
_EDITABLE_FINDER = re.compile(r"^__editable___.*_finder\.py$")


def canonical_name(name: str) -> str:
    """PEP 503 normalised name: ``Flashinfer_Python`` -> ``flashinfer-python``."""
    return _NORMALISE.sub("-", name).lower()


@dataclass(frozen=True)
class DistRecord:
    """One installed distribution as its metadata folder describes it."""

    name: str
    version: str | None
    path: Path
    site: Path


@dataclass
class SiteScan:
    """What a static scan of an ordered list of site directories found.

    ``dists`` keeps the first record per name in path order, which is the one
    ``importlib.metadata`` (and so the package's own ``__version__`` checks)
    would see. ``duplicates`` keeps every record of a name found more than
    once: two versions in one folder is a broken upgrade, one in user site
    and one in the venv is shadowing; both explain "installed X, runs Y".
    """

    dirs: list[Path] = field(default_factory=list)
    site_dirs: list[Path] = field(default_factory=list)
    dists: dict[str, DistRecord] = field(default_factory=dict)
    duplicates: dict[str, list[DistRecord]] = field(default_factory=dict)
    modules: dict[str, Path] = field(default_factory=dict)
    metadata_dirs_seen: int = 0

    def version(self, name: str) -> str | None:
        rec = self.dists.get(canonical_name(name))
        return rec.version if rec else None

    def versions(self, names: Iterable[str] = TRACKED_DISTRIBUTIONS) -> dict[str, str | None]:
        return {canonical_name(n): self.version(n) for n in names}


def _read_header(path: Path) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from a METADATA / PKG-INFO header, stopping early.

    Both sit in the first lines of every metadata version; the body (a long
    README) is never read.
    """
    name = version = None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if not sep:
                    continue
                key = key.strip().lower()
                if key == "name" and name is None:
                    name = value.strip()
                elif key == "version" and version is None:
                    version = value.strip()
                if name is not None and version is not None:
                    break
    except OSError:
        return None, None
    return name, version


def _stem(name: str) -> str:
    for suffix in _META_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _split_stem(stem: str) -> tuple[str, str | None]:
    """``flashinfer_python-0.6.18`` -> (name, version); egg-info may carry no version."""
    name, sep, rest = stem.partition("-")
    if not sep:
        return name, None
    version = rest.split("-", 1)[0]  # egg-info: name-ver-py3.11
    return name, version or None


def _metadata_file(entry: Path) -> Path | None:
    if entry.name.endswith(".dist-info"):
        return entry / "METADATA"
    if entry.is_dir():  # egg-info folder
        return entry / "PKG-INFO"
    return entry  # egg-info written as a single file (distutils / old setuptools)


def read_dist(entry: Path, site: Path) -> DistRecord:
    """One ``*.dist-info`` / ``*.egg-info`` entry; the folder name is the fallback."""
    stem = _stem(entry.name)
    dir_name, dir_version = _split_stem(stem)
    meta = _metadata_file(entry)
    name, version = _read_header(meta) if meta is not None else (None, None)
    return DistRecord(name=name or dir_name, version=version or dir_version, path=entry, site=site)


def _wanted_match(stem_canon: str, wanted: frozenset[str] | None) -> bool:
    if wanted is None:
        return True
    # The folder name is "<escaped name>-<version>"; a prefix test keeps us
    # from trusting the split (a few tools write unescaped dashes), and the
    # METADATA header then decides.
    return any(stem_canon == w or stem_canon.startswith(w + "-") for w in wanted)


def _editable_mapping(path: Path) -> dict[str, str]:
    """``MAPPING`` of a setuptools editable finder, read with ``ast``.

    Strict/"lenient" editable installs (``pip install -e``, common for SGLang
    checkouts) put no package folder in site-packages, only this finder.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
    return {}


def pth_paths(site: Path) -> list[Path]:
    """Folders a site dir's ``.pth`` files add to ``sys.path``, without running them.

    Plain path lines are taken as they are; ``import`` lines only in the
    ``os.path.join(<package>.__path__[0], '<sub>')`` form that
    nvidia-cutlass-dsl uses. Only needed offline: a live interpreter has
    already applied them.
    """
    out: list[Path] = []
    try:
        names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
    except OSError:
        return out
    for n in names:
        try:
            text = (site / n).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                # nvidia-cutlass-dsl puts ``cutlass`` on the path this way:
                # sys.path.insert(0, os.path.join(nvidia_cutlass_dsl.__path__[0], 'dsl_packages'))
                for pkg, sub in _PTH_PATH_JOIN.findall(line):
                    q = site / pkg / sub
                    if q.is_dir():
                        out.append(q)
                continue
            p = Path(line)
            if not p.is_absolute():
                p = site / p
            if p.is_dir():
                out.append(p)
    return out


def scan(dirs: Sequence[str | os.PathLike[str]],
         wanted: Iterable[str] | None = TRACKED_DISTRIBUTIONS,
         modules: Iterable[str] = TRACKED_MODULES) -> SiteScan:
    """Scan site directories in import order; ``wanted=None`` reads every distribution.

    Each folder is listed once (``os.scandir``); only metadata folders whose
    name can belong to a wanted distribution are opened.
    """
    want = frozenset(canonical_name(w) for w in wanted) if wanted is not None else None
    mods = tuple(modules)
    result = SiteScan()
    seen: set[Path] = set()
    editable: dict[str, str] = {}
    namespace: dict[str, Path] = {}
    for raw in dirs:
        site = Path(raw)
        if site in seen:
            continue
        seen.add(site)
        try:
            with os.scandir(site) as it:
                # Sorted: listing order is arbitrary and duplicates must resolve the same way twice.
                entries = sorted((e.name, e.is_dir()) for e in it)
        except OSError:  # missing, not a folder, a zip on sys.path
            continue
        result.dirs.append(site)
        names = {n: is_dir for n, is_dir in entries}
        has_metadata = False
        for n, _is_dir in entries:
            if n.endswith(_META_SUFFIXES):
                result.metadata_dirs_seen += 1
                if not has_metadata:
                    has_metadata = True
                    result.site_dirs.append(site)
                stem = _stem(n)
                if not _wanted_match(canonical_name(stem), want):
                    continue
                rec = read_dist(site / n, site)
                key = canonical_name(rec.name)
                if want is not None and key not in want:
                    continue
                if key in result.dists:
                    dup = result.duplicates.setdefault(key, [result.dists[key]])
                    dup.append(rec)
                else:
                    result.dists[key] = rec
            elif _EDITABLE_FINDER.match(n):
                for k, v in _editable_mapping(site / n).items():
                    editable.setdefault(k, v)
        for m in mods:
            if m in result.modules:
                continue
            if names.get(m):
                pkg = site / m
                if (pkg / "__init__.py").is_file():
                    result.modules[m] = pkg
                else:
                    namespace.setdefault(m, pkg)  # a regular package later on the path wins
            elif f"{m}.py" in names:
                result.modules[m] = site / f"{m}.py"
    for m in mods:
        if m in result.modules:
            continue
        if m in editable and Path(editable[m]).exists():
            result.modules[m] = Path(editable[m])
        elif m in namespace:
            result.modules[m] = namespace[m]
    return result


def torch_cuda_version(torch_dir: str | os.PathLike[str] | None) -> str | None:
    """``torch.version.cuda`` from ``torch/version.py`` without importing torch.

    A CPU build writes ``cuda: Optional[str] = None``; a CUDA build the
    toolkit version string (``'12.8'``).
    """
    if torch_dir is None:
        return None
    path = Path(torch_dir) / "version.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "cuda" for t in targets):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            return None
    return None


def versions_from(mapping: Mapping[str, str | None],
                  names: Iterable[str] = TRACKED_DISTRIBUTIONS) -> dict[str, str | None]:
    """Project any ``{name: version}`` onto the tracked names, PEP 503 keyed, ``None`` if absent."""
    canon = {canonical_name(k): v for k, v in mapping.items()}
    return {canonical_name(n): canon.get(canonical_name(n)) for n in names}
