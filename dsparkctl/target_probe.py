"""Probe run inside *another* Python interpreter (``dsparkctl doctor --python PATH``).

Serving stacks usually live in their own venv or conda env, with a Python
that may not have dsparkctl (or typer, rich...) installed. So this file uses
the standard library only, keeps to syntax Python 3.8 accepts, and is sent
to the target as ``python -c <this source> <json args>``. It asks that
interpreter's own ``importlib.metadata`` and import machinery, so editable
installs, ``.pth`` files and user site resolve exactly as the server will see
them; nothing tracked is imported (``find_spec`` of a top-level name locates
it without running it). ``torch.version.cuda`` is read from
``torch/version.py`` with ``ast``.

Run by hand (``python target_probe.py``) it reports every installed
distribution. Output: one JSON object on stdout.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import platform
import site
import sys

try:
    from importlib import metadata as _metadata
except ImportError:  # Python < 3.8
    _metadata = None  # type: ignore[assignment]


def _site_dirs() -> list:
    """Site folders in import order: the ones on ``sys.path`` first."""
    out = []
    for p in sys.path:
        if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            out.append(p)
    extra = list(getattr(site, "getsitepackages", list)())  # old virtualenv's site.py lacks it
    if site.ENABLE_USER_SITE:
        extra.append(site.getusersitepackages())
    for p in extra:
        if p not in out and os.path.isdir(p) and p in sys.path:
            out.append(p)
    return out


def _lookup(name: str) -> list:
    """Every distribution of that name on the path, in import order (first one wins)."""
    if _metadata is None:
        return []
    # Older importlib.metadata matches the folder name literally; try both spellings.
    for candidate in (name, name.replace("-", "_")):
        try:
            found = list(_metadata.distributions(name=candidate))
        except Exception:  # a corrupt METADATA must not kill the probe
            return []
        if found:
            return found
    return []


def _describe(dist) -> str:
    where = getattr(dist, "_path", None) or dist.locate_file("")
    return f"{dist.version} ({where})"


def _all_versions() -> dict:
    out = {}
    if _metadata is None:
        return out
    for dist in _metadata.distributions():
        try:
            name = dist.metadata["Name"]
        except Exception:
            continue
        if name and name not in out:
            out[name] = dist.version
    return out


def _locate(module: str):
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return locations[0]
    return spec.origin


def _torch_cuda(torch_dir):
    if not torch_dir:
        return None
    try:
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
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
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None


def probe(dists=None, modules=None) -> dict:
    """``dists=None``: every installed distribution; else only those names."""
    duplicates = {}
    if dists is None:
        packages = _all_versions()
    else:
        packages = {}
        for name in dists:
            found = _lookup(name)
            packages[name] = found[0].version if found else None
            if len(found) > 1:
                duplicates[name] = [_describe(d) for d in found]
    wanted_modules = list(modules) if modules is not None else ["torch", "flashinfer"]
    files = {}
    for m in wanted_modules:
        loc = _locate(m)
        if loc:
            files[m] = loc
    return {
        "probe": "dsparkctl.target_probe",
        "executable": sys.executable,
        "version": sys.version,
        "python_version": platform.python_version(),
        "has_metadata": _metadata is not None,
        "implementation": sys.implementation.name,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "machine": platform.machine(),
        "site_packages": _site_dirs(),
        "sys_path": [p for p in sys.path if p],
        "packages": packages,
        "duplicates": duplicates,
        "files": files,
        "torch_cuda": _torch_cuda(files.get("torch")),
    }


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    dists = modules = None
    if args:
        request = json.loads(args[0])
        dists = request.get("dists")
        modules = request.get("modules")
    sys.stdout.write(json.dumps(probe(dists, modules)))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
