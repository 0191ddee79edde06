"""Static reading of what an installed FlashInfer serves for DSV4 sparse MLA on SM120.

``dsparkctl doctor`` must answer in a fraction of a second and must never
import flashinfer (seconds, torch, a CUDA context): the answer comes from the
few files that decide the dispatch, read as text. Python tables are evaluated
with ``ast`` on the one top-level statement that defines them (parsing the
whole 50 kB module costs 13 ms); C++ is read with regular expressions over the
comment-stripped source. Which files, per layout, is data (``LAYOUTS``); what
each published release should contain is ``flashinfer_tables``. Whatever
cannot be read becomes a finding, never a traceback, and falls back to the
published table of the installed version when there is one.

Besides the dispatch itself, the reader checks the things that make the
sources lie about the kernel that actually runs: a half-patched install (the
Python table and the C++ instantiations disagree), a prebuilt
``sparse_mla_sm120`` module that shadows the sources (flashinfer-jit-cache or
an AOT build inside flashinfer-python), a JIT cache built from older sources,
and flashinfer-cubin / flashinfer-jit-cache versions that do not match
flashinfer-python.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from dsparkctl import flashinfer_tables as tables
from dsparkctl.errors import UsageError
from dsparkctl.findings import Finding, Severity
from dsparkctl.flashinfer_support import Dsv4Support, MissBehavior, PrefillSupport
from dsparkctl.flashinfer_tables import Layout, known_release, known_support, known_versions

__all__ = [
    "FlashInferReading",
    "known_support",
    "known_versions",
    "read_flashinfer",
]

MODULE = "sparse_mla_sm120"

# Files the reader may open, relative to site-packages.
PY_TABLE = "flashinfer/mla/_sparse_mla_sm120.py"
CU_DECODE = "flashinfer/data/csrc/sparse_mla_sm120_decode_dsv4.cu"
CU_PREFILL = "flashinfer/data/csrc/sparse_mla_sm120_prefill.cu"
PY_PLAN = "flashinfer/mla/_sparse_mla_sm120_plan.py"
PY_POLICY = "flashinfer/mla/_sparse_mla_sm120/_policy.py"
H_ATTENTION_PLAN = ("flashinfer/data/include/flashinfer/attention/sparse_mla_sm120/"
                    "execution/attention_plan.h")
PY_JIT_MLA = "flashinfer/jit/mla.py"
PY_BUILD_META = "flashinfer/_build_meta.py"
CSRC_DIR = "flashinfer/data/csrc"
# flashinfer-python's own AOT directory; jit/env.py loads <dir>/<module>/<module>.so first.
AOT_IN_PACKAGE = f"flashinfer/data/aot/{MODULE}/{MODULE}.so"
# Where the flashinfer-jit-cache wheel puts its modules (its build_backend.py:
# flashinfer_jit_cache/jit_cache/<module>/<module>.so); used when RECORD is absent.
AOT_IN_JIT_CACHE = f"flashinfer_jit_cache/jit_cache/{MODULE}/{MODULE}.so"

# Findings (ids are part of the JSON contract).
ID_HALF_PATCHED = "flashinfer-half-patched"
ID_UNREADABLE = "flashinfer-layout-unreadable"
ID_SHADOWING = "flashinfer-jit-cache-shadowing"
ID_STALE = "flashinfer-jit-cache-stale"
ID_VERSION_SKEW = "flashinfer-version-skew"
ID_MODIFIED = "flashinfer-dispatch-modified"
ID_NO_SM120 = "flashinfer-no-sm120-sparse-mla"


@dataclass(frozen=True)
class FlashInferReading:
    """What the static reader found in one site-packages tree.

    ``support`` is None only when flashinfer-python is not there at all.
    ``python_pairs`` / ``cpp_pairs`` are the two halves of a <= 0.6.18 decode
    table, kept apart so a patcher or report can show exactly what differs;
    ``modified`` says whether the tree differs from the published release
    (None when there is no published table to compare with).
    """

    version: str | None
    support: Dsv4Support | None
    findings: tuple[Finding, ...]
    files: dict[str, str]
    cubin_version: str | None
    jit_cache_version: str | None
    layout: str | None = None
    python_pairs: frozenset[tuple[int, int]] | None = None
    cpp_pairs: frozenset[tuple[int, int]] | None = None
    decode_max_tokens: int | None = None
    modified: bool | None = None
    prebuilt_modules: tuple[str, ...] = ()
    jit_cache_modules: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        if self.support is not None:
            body: dict[str, Any] = self.support.to_json()
            body["version"] = self.version
        else:
            body = {"version": self.version, "dsv4_decode": None}
        body.update({
            "layout": self.layout,
            "cubin_version": self.cubin_version,
            "jit_cache_version": self.jit_cache_version,
            "modified": self.modified,
            "files": dict(self.files),
        })
        return body


class _Unreadable(Exception):
    """A file the layout needs is missing or does not have the expected shape."""

    def __init__(self, rel: str, reason: str) -> None:
        super().__init__(f"{rel}: {reason}")
        self.rel = rel
        self.reason = reason


# ---------------------------------------------------------------------------
# Python: evaluate one top-level definition without parsing the whole module.

# The first line of the next top-level statement: column 0, not a closing
# bracket of the current one, not a comment.
_NEXT_TOPLEVEL = re.compile(r"^(?=[^\s)\]}#])", re.M)
_MAX_ITEMS = 100_000


class _PySource:
    """Top-level definitions of one Python file, found by name and parsed alone."""

    def __init__(self, root: Path, rel: str) -> None:
        self.rel = rel
        self.path = root / rel
        try:
            self.text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise _Unreadable(rel, f"cannot read ({exc.strerror or exc})") from None
        self._defs: dict[str, list[tuple[int, ast.stmt]]] = {}
        self._full: ast.Module | None = None

    def _full_tree(self) -> ast.Module:
        if self._full is None:
            try:
                self._full = ast.parse(self.text)
            except SyntaxError as exc:
                raise _Unreadable(self.rel, f"not valid Python (line {exc.lineno})") from None
        return self._full

    def definitions(self, name: str) -> list[tuple[int, ast.stmt]]:
        """Every top-level statement binding ``name``, in file order, with its offset."""
        if name in self._defs:
            return self._defs[name]
        binding = re.compile(rf"(?:(?:class|def)\s+)?{name}(?:\s*[(:]|\s*[|&+\-]?=(?!=))")
        out: list[tuple[int, ast.stmt]] = []
        for start in sorted(set(self._line_starts_with(name))):
            if binding.match(self.text, start) is None:
                continue
            end = _NEXT_TOPLEVEL.search(self.text, self.text.find("\n", start) + 1 or len(self.text))
            snippet = self.text[start:end.start() if end else len(self.text)]
            try:
                body = ast.parse(snippet).body
            except SyntaxError:
                body = []
            if len(body) != 1:
                out = self._definitions_from_full_tree(name)
                break
            out.append((start, body[0]))
        self._defs[name] = out
        return out

    def _line_starts_with(self, name: str) -> Iterable[int]:
        """Offsets of lines that begin with ``name``, ``class name`` or ``def name``
        (str.find is ~10x faster than a multiline regex over a 50 kB module)."""
        text = self.text
        for prefix in ("", "class ", "def "):
            needle = "\n" + prefix + name
            if text.startswith(prefix + name):
                yield 0
            i = text.find(needle)
            while i != -1:
                yield i + 1
                i = text.find(needle, i + 1)

    def _definitions_from_full_tree(self, name: str) -> list[tuple[int, ast.stmt]]:
        lines = self.text.splitlines(keepends=True)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        out = []
        for stmt in self._full_tree().body:
            if name in _bound_names(stmt):
                out.append((offsets[stmt.lineno - 1], stmt))
        return out

    def last(self, name: str, before: int | None = None) -> tuple[int, ast.stmt] | None:
        defs = [d for d in self.definitions(name) if before is None or d[0] < before]
        return defs[-1] if defs else None

    def value(self, name: str, before: int | None = None) -> Any:
        """The value ``name`` holds at module level (at offset ``before``)."""
        found = self.last(name, before)
        if found is None:
            raise _Unreadable(self.rel, f"no top-level definition of {name}")
        pos, stmt = found
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            return self.eval(stmt.value, pos)
        if isinstance(stmt, ast.AugAssign):
            old = self.value(name, pos)
            return _binop(stmt.op, old, self.eval(stmt.value, pos), self.rel)
        raise _Unreadable(self.rel, f"{name} is not a plain assignment")

    def class_def(self, name: str) -> ast.ClassDef:
        found = self.last(name)
        if found is None or not isinstance(found[1], ast.ClassDef):
            raise _Unreadable(self.rel, f"no class {name}")
        return found[1]

    def eval(self, node: ast.AST, before: int, scope: dict[str, Any] | None = None) -> Any:
        """Evaluate a literal-ish expression: literals, module constants, set algebra,
        frozenset()/range() and comprehensions over those. Nothing is executed."""
        scope = scope or {}
        ev = lambda n: self.eval(n, before, scope)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.Set):
            return {ev(e) for e in node.elts}
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            return self.value(node.id, before)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            return _binop(node.op, ev(node.left), ev(node.right), self.rel)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            fn = _SAFE_CALLS.get(node.func.id)
            if fn is not None:
                args = [ev(a) for a in node.args]
                if node.func.id == "range" and len(range(*args)) > _MAX_ITEMS:
                    raise _Unreadable(self.rel, "range too large")
                return fn(*args)
        if isinstance(node, ast.GeneratorExp | ast.SetComp | ast.ListComp):
            items = list(self._comprehension(node, before, scope))
            return set(items) if isinstance(node, ast.SetComp) else items
        where = f"line {getattr(node, 'lineno', '?')}"
        raise _Unreadable(self.rel, f"{type(node).__name__} ({where}) is not a literal")

    def _comprehension(self, node: ast.GeneratorExp | ast.SetComp | ast.ListComp,
                       before: int, scope: dict[str, Any]) -> Iterable[Any]:
        def walk(i: int, env: dict[str, Any]) -> Iterable[Any]:
            if i == len(node.generators):
                yield self.eval(node.elt, before, env)
                return
            gen = node.generators[i]
            if gen.ifs or gen.is_async:
                raise _Unreadable(self.rel, "comprehension with conditions is not a literal")
            for count, item in enumerate(self.eval(gen.iter, before, env)):
                if count > _MAX_ITEMS:
                    raise _Unreadable(self.rel, "comprehension too large")
                yield from walk(i + 1, {**env, **_bind(gen.target, item, self.rel)})
        return walk(0, dict(scope))


_SAFE_CALLS: dict[str, Callable[..., Any]] = {
    "frozenset": frozenset, "set": set, "tuple": tuple, "list": list, "range": range,
    "sorted": sorted,
}


def _bound_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
        return {stmt.name}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _bind(target: ast.expr, value: Any, rel: str) -> dict[str, Any]:
    if isinstance(target, ast.Name):
        return {target.id: value}
    if isinstance(target, ast.Tuple) and isinstance(value, tuple | list) \
            and len(target.elts) == len(value):
        out: dict[str, Any] = {}
        for t, v in zip(target.elts, value, strict=True):
            out.update(_bind(t, v, rel))
        return out
    raise _Unreadable(rel, "comprehension target is not a name or tuple of names")


def _binop(op: ast.operator, a: Any, b: Any, rel: str) -> Any:
    try:
        if isinstance(op, ast.BitOr):
            return a | b
        if isinstance(op, ast.BitAnd):
            return a & b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.FloorDiv):
            return a // b
    except TypeError:
        pass
    raise _Unreadable(rel, f"cannot evaluate {type(op).__name__} on {type(a).__name__}")


def _as_pairs(value: Any, rel: str, name: str) -> frozenset[tuple[int, int]]:
    if not isinstance(value, set | frozenset | list | tuple):
        raise _Unreadable(rel, f"{name} is not a set of (heads, topk) pairs")
    out = set()
    for item in value:
        if not (isinstance(item, tuple) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item)):
            raise _Unreadable(rel, f"{name} holds {item!r}, not a (heads, topk) pair")
        out.add(item)
    return frozenset(out)


def _as_int(value: Any, rel: str, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Unreadable(rel, f"{name} is {value!r}, not an int")


def _as_ints(value: Any, rel: str, name: str) -> frozenset[int]:
    if isinstance(value, set | frozenset | list | tuple) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in value):
        return frozenset(value)
    raise _Unreadable(rel, f"{name} is not a set of ints")


# ---------------------------------------------------------------------------
# C++: regular expressions over comment-stripped source.

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_IF0 = re.compile(r"^\s*#\s*if\s+0\b.*?^\s*#\s*endif\b", re.S | re.M)
_DSV4_DISPATCH_LINE = re.compile(r"\bDSV4_DISPATCH\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_BRACES = re.compile(r"[{}]")
_DSV4_DISPATCH_DEFINE = re.compile(r"#\s*define\s+DSV4_DISPATCH\s*\(")


def _read_cpp(root: Path, rel: str) -> str:
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _Unreadable(rel, f"cannot read ({exc.strerror or exc})") from None
    return _IF0.sub("", _COMMENTS.sub("", text))


def _function_body(code: str, name: str, rel: str) -> str:
    # The name first (a literal the regex engine can scan for), then "bool" before it.
    m = next((c for c in re.finditer(rf"{name}\s*\(", code)
              if re.search(r"\bbool\s+$", code[max(0, c.start() - 40):c.start()])), None)
    if m is None:
        raise _Unreadable(rel, f"no function {name}")
    open_at = code.find("{", m.end())
    depth = 0
    for brace in _BRACES.finditer(code, open_at if open_at >= 0 else len(code)):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return code[open_at:brace.end()]
    raise _Unreadable(rel, f"unbalanced braces in {name}")


def _ints(pattern: str, text: str) -> frozenset[int]:
    return frozenset(int(x) for x in re.findall(pattern, text))


# ---------------------------------------------------------------------------
# Layout readers. Each returns the static Dsv4Support plus facts for findings.


@dataclass
class _Static:
    support: Dsv4Support
    files: dict[str, str]
    python_pairs: frozenset[tuple[int, int]] | None = None
    cpp_pairs: frozenset[tuple[int, int]] | None = None
    decode_max_tokens: int | None = None
    problems: list[_Unreadable] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_MISS_RAISES = re.compile(
    r"if\s+num_tokens\s*<=\s*_DECODE_MAX_TOKENS\s*:\s*(?:#[^\n]*\n\s*)*raise\s+ValueError")


def _prefill_from_cpp_tables(root: Path) -> PrefillSupport:
    """<= 0.6.18: instantiations are enumerated in dispatch_dsv4_single / _dual."""
    code = _read_cpp(root, CU_PREFILL)
    single = _function_body(code, "dispatch_dsv4_single", CU_PREFILL)
    dual = _function_body(code, "dispatch_dsv4_dual", CU_PREFILL)
    heads = _ints(r"\bcase\s+(\d+)\s*:", single)
    topks = _ints(r"\btopk\s*==\s*(\d+)", single)
    if not heads or not topks:
        raise _Unreadable(CU_PREFILL, "dispatch_dsv4_single enumerates no heads/topk")
    dual_heads = _ints(r"\bcase\s+(\d+)\s*:", dual)
    if dual_heads and dual_heads != heads:
        raise _Unreadable(CU_PREFILL, "single- and dual-cache prefill serve different heads")
    return PrefillSupport(
        single_heads=heads,
        single_topks=topks,
        dual_topks=_ints(r"\btopk\s*[!=]=\s*(\d+)", dual),
        dual_extra_page_sizes=_ints(r"\bextra_page_block_size\s*==\s*(\d+)", dual),
    )


def _read_frozenset(root: Path, version: str | None) -> _Static:
    py = _PySource(root, PY_TABLE)
    py_pairs = _as_pairs(py.value("_DECODE_DSV4_DISPATCH"), PY_TABLE, "_DECODE_DSV4_DISPATCH")
    max_tokens = _as_int(py.value("_DECODE_MAX_TOKENS"), PY_TABLE, "_DECODE_MAX_TOKENS")
    miss: MissBehavior = "raise" if _MISS_RAISES.search(py.text) else "fallthrough"
    files = {"python_table": str(py.path)}

    cu = _read_cpp(root, CU_DECODE)
    files["cpp_decode"] = str(root / CU_DECODE)
    if not _DSV4_DISPATCH_DEFINE.search(cu):
        raise _Unreadable(CU_DECODE, "no #define DSV4_DISPATCH(H, K)")
    cpp_pairs = frozenset((int(h), int(k)) for h, k in _DSV4_DISPATCH_LINE.findall(cu))

    problems: list[_Unreadable] = []
    notes = []
    try:
        prefill = _prefill_from_cpp_tables(root)
        files["cpp_prefill"] = str(root / CU_PREFILL)
    except _Unreadable as exc:
        problems.append(exc)
        prefill = _fallback_prefill(version, "frozenset")
        notes.append(f"prefill coverage from the published table ({exc})")
    if py_pairs != cpp_pairs:
        notes.append("decode pairs are the intersection of the Python table and the C++ "
                     "instantiations; a pair only in Python fails in C++ with 'decode-dsv4 "
                     "launch failed', a pair only in C++ is never routed to")
    support = Dsv4Support(
        version=version, kind="pairs", source="static", pairs=py_pairs & cpp_pairs,
        miss_behavior=miss, prefill=prefill,
    )
    return _Static(support, files, py_pairs, cpp_pairs, max_tokens, problems, notes)


def _envelope_args(src: _PySource) -> tuple[str, ast.expr, int]:
    """The envelope class's constructor parameter and the argument DSV4 passes."""
    found = src.last("_DECODE_DSV4_DISPATCH")
    if found is None:
        raise _Unreadable(src.rel, "no top-level definition of _DECODE_DSV4_DISPATCH")
    pos, stmt = found
    call = getattr(stmt, "value", None)
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and len(call.args) == 1 and not call.keywords):
        raise _Unreadable(src.rel, "_DECODE_DSV4_DISPATCH is not Envelope(<one argument>)")
    cls = src.class_def(call.func.id)
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    if "__contains__" not in methods or "__init__" not in methods:
        raise _Unreadable(src.rel, f"{cls.name} has no __contains__/__init__")
    params = [a.arg for a in methods["__init__"].args.args[1:]]
    if len(params) != 1:
        raise _Unreadable(src.rel, f"{cls.name}.__init__ takes {params}, expected one argument")
    return params[0], call.args[0], pos


def _is_frozenset_literal(src: _PySource) -> frozenset[tuple[int, int]] | None:
    """A 0.7.x tree whose envelope was replaced by a pair table (hand patch)."""
    found = src.last("_DECODE_DSV4_DISPATCH")
    if found is None:
        return None
    call = getattr(found[1], "value", None)
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
            and call.func.id in _SAFE_CALLS:
        return _as_pairs(src.value("_DECODE_DSV4_DISPATCH"), src.rel, "_DECODE_DSV4_DISPATCH")
    return None


def _read_plan(root: Path, version: str | None) -> _Static:
    """0.7.0: _DecodeDispatchEnvelope(min_topk) in _sparse_mla_sm120_plan.py."""
    src = _PySource(root, PY_PLAN)
    files = {"python_table": str(src.path)}
    max_tokens = _as_int(src.value("_DECODE_MAX_TOKENS"), PY_PLAN, "_DECODE_MAX_TOKENS")
    problems: list[_Unreadable] = []
    notes: list[str] = []
    try:
        heads = _as_ints(src.value("_PREFILL_DSV4_HEADS"), PY_PLAN, "_PREFILL_DSV4_HEADS")
        if not re.search(r"topk\s*%\s*_BI\s*==\s*0", src.text):
            raise _Unreadable(PY_PLAN, "_prefill_topk_ok no longer checks topk % _BI == 0")
        multiple = _as_int(src.value("_BI"), PY_PLAN, "_BI")
        dual = _function_body(_read_cpp(root, CU_PREFILL), "dispatch_dsv4_dual", CU_PREFILL)
        files["cpp_prefill"] = str(root / CU_PREFILL)
        prefill = PrefillSupport(
            single_heads=heads, any_topk_multiple=multiple,
            dual_extra_page_sizes=_ints(r"\bextra_page_block_size\s*==\s*(\d+)", dual))
    except _Unreadable as exc:
        problems.append(exc)
        prefill = _fallback_prefill(version, "envelope-plan")
        notes.append(f"prefill coverage from the published table ({exc})")
    pairs = _is_frozenset_literal(src)
    if pairs is not None:
        support = Dsv4Support(version=version, kind="pairs", source="static", pairs=pairs,
                              miss_behavior="raise", prefill=prefill)
        return _Static(support, files, pairs, None, max_tokens, problems, notes)
    param, arg, pos = _envelope_args(src)
    if param != "min_topk":
        raise _Unreadable(PY_PLAN, f"envelope constructor takes {param!r}, expected min_topk")
    min_topk = _as_int(src.eval(arg, pos), PY_PLAN, "min_topk")
    max_heads = _as_int(src.value("_DECODE_MAX_HEADS"), PY_PLAN, "_DECODE_MAX_HEADS")
    support = Dsv4Support(version=version, kind="envelope", source="static", any_topk=True,
                          max_heads=max_heads, min_topk=min_topk, miss_behavior="raise",
                          prefill=prefill)
    return _Static(support, files, None, None, max_tokens, problems, notes)


def _read_package(root: Path, version: str | None) -> _Static:
    """0.7.1+: _DecodeDispatchEnvelope(model) over _STATIC_DECODE_ENVELOPE in _policy.py,
    bounded again by DecodeMaxHeads in the C++ resolver (which is authoritative)."""
    src = _PySource(root, PY_POLICY)
    files = {"python_table": str(src.path)}
    max_tokens = _as_int(src.value("_DECODE_MAX_TOKENS"), PY_POLICY, "_DECODE_MAX_TOKENS")
    problems: list[_Unreadable] = []
    notes: list[str] = []
    prefill = _fallback_prefill(version, "envelope-package")
    notes.append("prefill heads and topk rule from the published table (the C++ resolver "
                 "decides them through templates)")
    header = None
    try:
        header = _read_cpp(root, H_ATTENTION_PLAN)
        files["cpp_plan"] = str(root / H_ATTENTION_PLAN)
        m = re.search(r"#\s*define\s+SPARSE_MLA_EXTRA_PAGES\(F\)((?:\s*F\(\d+\))+)", header)
        if m is None:
            raise _Unreadable(H_ATTENTION_PLAN, "no SPARSE_MLA_EXTRA_PAGES(F) list")
        prefill = dataclasses.replace(prefill,
                                      dual_extra_page_sizes=_ints(r"F\((\d+)\)", m.group(1)))
    except _Unreadable as exc:
        problems.append(exc)
        notes.append(f"extra-cache page sizes from the published table ({exc})")

    pairs = _is_frozenset_literal(src)
    if pairs is not None:
        support = Dsv4Support(version=version, kind="pairs", source="static", pairs=pairs,
                              miss_behavior="raise", prefill=prefill)
        return _Static(support, files, pairs, None, max_tokens, problems, notes)
    param, arg, pos = _envelope_args(src)
    if param == "min_topk":
        min_topk = _as_int(src.eval(arg, pos), PY_POLICY, "min_topk")
        max_heads = _as_int(src.value("_DECODE_MAX_HEADS"), PY_POLICY, "_DECODE_MAX_HEADS")
    elif param == "model":
        min_topk, max_heads = _family_envelope(src, arg, pos)
    else:
        raise _Unreadable(PY_POLICY, f"envelope constructor takes {param!r}")
    if header is not None:
        m = re.search(r"\bDecodeMaxHeads\s*=\s*(\d+)\s*;", header)
        if m is None:
            problems.append(_Unreadable(H_ATTENTION_PLAN, "no DecodeMaxHeads constant"))
        elif int(m.group(1)) != max_heads:
            notes.append(f"Python envelope allows {max_heads} heads, the C++ resolver "
                         f"{m.group(1)}; the smaller bound applies")
            max_heads = min(max_heads, int(m.group(1)))
    support = Dsv4Support(version=version, kind="envelope", source="static", any_topk=True,
                          max_heads=max_heads, min_topk=min_topk, miss_behavior="raise",
                          prefill=prefill)
    return _Static(support, files, None, None, max_tokens, problems, notes)


def _family_envelope(src: _PySource, model_arg: ast.expr, pos: int) -> tuple[int, int]:
    """min_topk and max_num_heads of the DSV4 row of _STATIC_DECODE_ENVELOPE."""
    found = src.last("_STATIC_DECODE_ENVELOPE", pos)
    table = getattr(found[1], "value", None) if found else None
    if not isinstance(table, ast.Dict):
        raise _Unreadable(PY_POLICY, "_STATIC_DECODE_ENVELOPE is not a dict literal")
    want = ast.dump(model_arg)
    row = next((v for k, v in zip(table.keys, table.values, strict=True)
                if k is not None and ast.dump(k) == want), None)
    if not (isinstance(row, ast.Call) and isinstance(row.func, ast.Name)):
        raise _Unreadable(PY_POLICY, "_STATIC_DECODE_ENVELOPE has no DSV4 row")
    cls = src.class_def(row.func.id)
    fields: dict[str, ast.expr] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            fields[stmt.target.id] = stmt.value
    for kw in row.keywords:
        if kw.arg is None:
            raise _Unreadable(PY_POLICY, "DSV4 envelope row uses **kwargs")
        fields[kw.arg] = kw.value
    if "min_topk" not in fields or "max_num_heads" not in fields:
        raise _Unreadable(PY_POLICY, f"{cls.name} has no min_topk/max_num_heads")
    return (_as_int(src.eval(fields["min_topk"], pos), PY_POLICY, "min_topk"),
            _as_int(src.eval(fields["max_num_heads"], pos), PY_POLICY, "max_num_heads"))


def _fallback_prefill(version: str | None, layout: Layout) -> PrefillSupport:
    """The published prefill coverage of this version, else of the newest row of the layout."""
    row = known_release(version) if version else None
    if row is None or row.support is None or row.layout != layout:
        rows = [r for r in tables.RELEASES if r.layout == layout and r.support is not None]
        row = rows[-1] if rows else None
    return row.support.prefill if row and row.support else PrefillSupport()


# (layout, the file whose presence identifies it, reader), newest first.
LAYOUTS: tuple[tuple[Layout, str, Callable[[Path, str | None], _Static]], ...] = (
    ("envelope-package", PY_POLICY, _read_package),
    ("envelope-plan", PY_PLAN, _read_plan),
    ("frozenset", PY_TABLE, _read_frozenset),
)


# ---------------------------------------------------------------------------
# Installed distributions.


@dataclass(frozen=True)
class _Dist:
    name: str  # normalised: flashinfer_python
    version: str
    path: Path


def _flashinfer_dists(root: Path) -> dict[str, list[_Dist]]:
    """flashinfer* .dist-info folders, from one directory listing (no walk)."""
    out: dict[str, list[_Dist]] = {}
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise UsageError(f"cannot list site-packages {root}: {exc.strerror or exc}") from None
    for entry in entries:
        name = entry.name
        if not name.lower().startswith("flashinfer") or not name.endswith(".dist-info"):
            continue
        stem = name[: -len(".dist-info")]
        dist, _, version = stem.partition("-")
        if not version:
            continue
        key = re.sub(r"[-_.]+", "_", dist).lower()
        out.setdefault(key, []).append(_Dist(key, version, Path(entry.path)))
    return out


def _public(version: str | None) -> Version | None:
    if version is None:
        return None
    try:
        return Version(Version(version).public)
    except InvalidVersion:
        return None


def _runtime_version(root: Path) -> str | None:
    """flashinfer.__version__ (names the JIT cache folder); from _build_meta.py."""
    try:
        text = (root / PY_BUILD_META).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else None


# ---------------------------------------------------------------------------
# Findings.


def _fmt_pairs(pairs: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"({h}, {k})" for h, k in sorted(pairs)) or "none"


def _reinstall_fix(version: str | None) -> str:
    pin = f"=={version}" if version else ""
    return (f"Reinstall the published files: `pip install --force-reinstall --no-deps "
            f"flashinfer-python{pin}`, or let `dsparkctl install-kernels --backend flashinfer` "
            f"patch the Python table and the C++ instantiations together")


def _half_patched(version: str | None, py: frozenset[tuple[int, int]],
                  cpp: frozenset[tuple[int, int]], files: dict[str, str]) -> Finding:
    only_py, only_cpp = py - cpp, cpp - py
    parts = []
    if only_py:
        parts.append(f"only in the Python table: {_fmt_pairs(only_py)} (routed to a decode "
                     f"kernel that does not exist: 'decode-dsv4 launch failed')")
    if only_cpp:
        parts.append(f"only in the C++ instantiations: {_fmt_pairs(only_cpp)} (compiled but "
                     f"never routed to; these calls still fall through)")
    return Finding(
        id=ID_HALF_PATCHED, severity=Severity.ERROR,
        title="FlashInfer's DSV4 decode table is half-patched: Python and C++ disagree",
        fix=_reinstall_fix(version),
        refs=(tables.PR_DSV4_192_256, tables.ISSUE_SGLANG_DSPARK),
        detail="; ".join(parts) + f". Files: {files.get('python_table')}, "
                                  f"{files.get('cpp_decode')}",
        data={"only_python": sorted(map(list, only_py)),
              "only_cpp": sorted(map(list, only_cpp))},
    )


def _support_core(s: Dsv4Support) -> Dsv4Support:
    return dataclasses.replace(s, version=None, source="known-version", notes=())


def _describe_difference(static: Dsv4Support, known: Dsv4Support) -> str:
    parts = []
    if static.kind != known.kind:
        parts.append(f"decode is {static.kind!r}, published {known.kind!r}")
    elif static.kind == "pairs" and static.pairs != known.pairs:
        a, b = static.pairs or frozenset(), known.pairs or frozenset()
        if a - b:
            parts.append(f"decode pairs added: {_fmt_pairs(a - b)}")
        if b - a:
            parts.append(f"decode pairs removed: {_fmt_pairs(b - a)}")
    for name in ("any_topk", "max_heads", "min_topk", "miss_behavior"):
        if static.kind == known.kind and getattr(static, name) != getattr(known, name):
            parts.append(f"{name} {getattr(static, name)!r}, published "
                         f"{getattr(known, name)!r}")
    if static.prefill != known.prefill:
        parts.append("prefill coverage differs from the published release")
    return "; ".join(parts)


def _skew_findings(py_version: str | None, dists: dict[str, list[_Dist]]) -> list[Finding]:
    out: list[Finding] = []
    py = _public(py_version)
    if py is None:
        return out
    row = known_release(str(py))
    ignored = row is not None and row.skew_behavior == "ignore"
    for key, label in (("flashinfer_cubin", "flashinfer-cubin"),
                       ("flashinfer_jit_cache", "flashinfer-jit-cache")):
        for dist in dists.get(key, []):
            if _public(dist.version) == py:
                continue
            consequence = (
                f"flashinfer {py} ignores it with a warning (kernels are JIT-compiled or "
                f"downloaded instead)" if ignored else
                f"`import flashinfer` raises RuntimeError ({label} version does not match)")
            out.append(Finding(
                id=ID_VERSION_SKEW,
                severity=Severity.WARNING if ignored else Severity.ERROR,
                title=f"{label} {dist.version} does not match flashinfer-python {py_version}",
                fix=(f"Install the matching build (`pip install {label}=={py}` from the index "
                     f"matching your CUDA, e.g. https://flashinfer.ai/whl/cu129) or "
                     f"`pip uninstall {label}`"),
                detail=(f"{consequence}; FLASHINFER_DISABLE_VERSION_CHECK=1 hides the mismatch "
                        f"and loads kernels built for {dist.version}. Found {dist.path}"),
                data={"package": label, "version": dist.version, "flashinfer": py_version},
            ))
    return out


def _record_hits(dist: _Dist, root: Path) -> list[Path]:
    """Prebuilt sparse_mla_sm120 modules a distribution installed, from its RECORD."""
    suffix = f"{MODULE}/{MODULE}.so"
    try:
        text = (dist.path / "RECORD").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [p for p in (root / AOT_IN_JIT_CACHE,) if p.is_file()]
    hits = []
    for line in text.splitlines():
        rel = line.split(",", 1)[0]
        if rel.endswith(suffix):
            path = (root / rel).resolve() if ".." in rel else root / rel
            if path.is_file():
                hits.append(path)
    return hits


def _prebuilt_modules(root: Path, dists: dict[str, list[_Dist]]) -> list[Path]:
    found = [root / AOT_IN_PACKAGE] if (root / AOT_IN_PACKAGE).is_file() else []
    for key, group in sorted(dists.items()):
        if key in ("flashinfer_python", "flashinfer_cubin"):
            continue
        for dist in group:
            found.extend(p for p in _record_hits(dist, root) if p not in found)
    return found


def _shadowing(modules: list[Path], modified: bool | None,
               jit_cache_skew_ignored: bool) -> Finding | None:
    if not modules or jit_cache_skew_ignored:
        return None
    patched = bool(modified)
    where = ", ".join(str(p) for p in modules)
    return Finding(
        id=ID_SHADOWING,
        severity=Severity.ERROR if patched else Severity.WARNING,
        title=("A prebuilt sparse_mla_sm120 module shadows the patched FlashInfer sources"
               if patched else
               "A prebuilt sparse_mla_sm120 module is loaded instead of the FlashInfer sources"),
        fix=("`pip uninstall flashinfer-jit-cache` (or move the module aside) so FlashInfer "
             "JIT-compiles the sources on first use; patch tools that edit the sources "
             "(hand edits, `dsparkctl install-kernels --backend flashinfer`) have no effect "
             "while it is there"),
        detail=(f"FlashInfer loads {where} before it looks at its sources"
                + ("; the sources were modified, so the running kernel does not have the "
                   "patched instantiations" if patched else
                   "; fine for a stock install, but any patch to the sources is ignored")),
        data={"modules": [str(p) for p in modules]},
    )


def _jit_sources(root: Path, static_files: dict[str, str]) -> list[Path]:
    """The sources the JIT module is built from (jit/mla.py), plus the headers read."""
    rels: list[str] = []
    try:
        text = (root / PY_JIT_MLA).read_text(encoding="utf-8", errors="replace")
        m = re.search(rf"def\s+gen_{MODULE}_module\s*\(.*?(?=^def\s|\Z)", text, re.S | re.M)
        if m:
            rels = re.findall(r"FLASHINFER_CSRC_DIR\s*/\s*['\"]([^'\"]+)['\"]", m.group(0))
    except OSError:
        pass
    paths = [root / CSRC_DIR / rel for rel in rels]
    if not paths:  # fall back to the files this layout is known to build from
        paths = [Path(p) for k, p in static_files.items() if k.startswith("cpp")]
    paths += [Path(p) for k, p in static_files.items() if k.startswith("cpp")]
    return list(dict.fromkeys(paths))


def default_jit_cache_dir() -> Path:
    """FlashInfer's JIT cache root: $FLASHINFER_WORKSPACE_BASE (or ~) /.cache/flashinfer."""
    base = os.environ.get("FLASHINFER_WORKSPACE_BASE") or str(Path.home())
    return Path(base) / ".cache" / "flashinfer"


def _cached_modules(cache: Path, version: str) -> list[Path]:
    """<cache>/<version>/<arch>/cached_ops/sparse_mla_sm120/sparse_mla_sm120.so, all archs."""
    try:
        archs = [e for e in os.scandir(cache / version) if e.is_dir()]
    except OSError:
        return []
    out = []
    for arch in sorted(archs, key=lambda e: e.name):
        so = Path(arch.path) / "cached_ops" / MODULE / f"{MODULE}.so"
        if so.is_file():
            out.append(so)
    return out


def _stale(modules: list[Path], sources: list[Path]) -> list[Finding]:
    times = []
    for src in sources:
        try:
            times.append((src.stat().st_mtime, src))
        except OSError:
            continue
    if not times:
        return []
    newest, newest_src = max(times)
    out = []
    for so in modules:
        try:
            built = so.stat().st_mtime
        except OSError:
            continue
        if built >= newest:
            continue
        build_dir = so.parent
        out.append(Finding(
            id=ID_STALE, severity=Severity.WARNING,
            title="FlashInfer's cached sparse_mla_sm120 module is older than its sources",
            fix=(f"Delete `{build_dir}` (rm -rf) and let FlashInfer rebuild it before serving "
                 f"(otherwise the rebuild happens inside the server's first sparse-MLA call, "
                 f"and fails with FLASHINFER_DISABLE_JIT=1 or without nvcc)"),
            detail=(f"{so} was built before {newest_src} was last changed; the module in "
                    f"the cache does not reflect the current sources"),
            data={"module": str(so), "delete": str(build_dir), "newer_source": str(newest_src)},
        ))
    return out


def _unreadable(exc: _Unreadable, root: Path, fallback: Dsv4Support | None,
                version: str | None) -> Finding:
    if fallback is not None:
        consequence = (f"using the published table of flashinfer-python {version} instead; "
                       f"if this tree was patched, the patch is not seen")
    else:
        consequence = "no published table for this version to fall back on; coverage unknown"
    return Finding(
        id=ID_UNREADABLE, severity=Severity.WARNING,
        title=f"Cannot read FlashInfer's SM120 sparse-MLA dispatch ({exc.reason})",
        fix=(f"{_reinstall_fix(version)}; or run `dsparkctl doctor --import` to ask the "
             f"installed FlashInfer at runtime"),
        refs=(tables.PR_ENVELOPE,),
        detail=f"{root / exc.rel}: {exc.reason}; {consequence}",
        data={"file": str(root / exc.rel), "reason": exc.reason},
    )


# ---------------------------------------------------------------------------


def read_flashinfer(site_packages: Path, *, jit_cache_dir: Path | None = None
                    ) -> FlashInferReading:
    """Read the FlashInfer installed in ``site_packages`` without importing it.

    ``jit_cache_dir`` defaults to FlashInfer's own choice,
    ``$FLASHINFER_WORKSPACE_BASE/.cache/flashinfer`` (home when unset).
    """
    root = Path(site_packages)
    if not root.is_dir():
        raise UsageError(f"site-packages directory {root} does not exist or is not a folder; "
                         f"pass the folder that holds flashinfer/ and its .dist-info")
    dists = _flashinfer_dists(root)
    py_dists = sorted(dists.get("flashinfer_python", []),
                      key=lambda d: _public(d.version) or Version("0"))
    cubin_version = next((d.version for d in dists.get("flashinfer_cubin", [])), None)
    jit_cache_version = next((d.version for d in dists.get("flashinfer_jit_cache", [])), None)
    notes: list[str] = []
    version = py_dists[-1].version if py_dists else _runtime_version(root)
    if len(py_dists) > 1:
        notes.append("several flashinfer_python .dist-info folders: "
                     + ", ".join(d.path.name for d in py_dists) + f"; using {version}")
    if version is None and not (root / "flashinfer").is_dir():
        return FlashInferReading(None, None, (), {}, cubin_version, jit_cache_version,
                                 notes=tuple(notes))

    files: dict[str, str] = {"dist_info": str(py_dists[-1].path)} if py_dists else {}
    part = _read_dispatch(root, version)
    files.update(part.files)
    notes.extend(part.notes)
    findings = list(part.findings)
    static = part.static
    if static is not None and static.python_pairs is not None \
            and static.cpp_pairs is not None and static.python_pairs != static.cpp_pairs:
        findings.append(_half_patched(version, static.python_pairs, static.cpp_pairs, files))
    modified, modified_finding = _compare_with_published(static, part.layout, version)
    if modified_finding is not None and not any(f.id == ID_HALF_PATCHED for f in findings):
        findings.append(modified_finding)
    if static is not None and modified is None and version is not None:
        notes.append(f"no published table for flashinfer-python {version}; "
                     f"dsparkctl knows {', '.join(known_versions())}")

    # What actually gets loaded: version skew, prebuilt modules, the JIT cache.
    findings.extend(_skew_findings(version, dists))
    row = known_release(version) if version else None
    jit_cache_ignored = bool(
        row is not None and row.skew_behavior == "ignore" and jit_cache_version is not None
        and _public(jit_cache_version) != _public(version))
    prebuilt = _prebuilt_modules(root, dists)
    shadow = _shadowing(prebuilt, modified, jit_cache_ignored)
    if shadow is not None:
        findings.append(shadow)
    cache_root = jit_cache_dir if jit_cache_dir is not None else default_jit_cache_dir()
    cache_version = _runtime_version(root) or version
    cached = _cached_modules(cache_root, cache_version) if cache_version else []
    if cached:
        findings.extend(_stale(cached, _jit_sources(root, files)))

    support = part.support
    if support is not None and notes:
        support = dataclasses.replace(support, notes=tuple(dict.fromkeys(
            (*support.notes, *notes))))
    return FlashInferReading(
        version=version, support=support, findings=tuple(findings), files=files,
        cubin_version=cubin_version, jit_cache_version=jit_cache_version, layout=part.layout,
        python_pairs=static.python_pairs if static else None,
        cpp_pairs=static.cpp_pairs if static else None,
        decode_max_tokens=static.decode_max_tokens if static else None,
        modified=modified,
        prebuilt_modules=tuple(str(p) for p in prebuilt),
        jit_cache_modules=tuple(str(p) for p in cached),
        notes=tuple(dict.fromkeys(notes)),
    )


@dataclass
class _DispatchPart:
    layout: str | None
    support: Dsv4Support
    static: _Static | None
    findings: list[Finding]
    files: dict[str, str]
    notes: list[str]


def _read_dispatch(root: Path, version: str | None) -> _DispatchPart:
    """The decode/prefill coverage: the layout's reader, else the published table."""
    row = known_release(version) if version else None
    known = known_support(version) if version else None
    layout = next((name for name, marker, _ in LAYOUTS if (root / marker).is_file()), None)
    if layout is None and row is not None and row.layout == "absent":
        support = Dsv4Support(version=version, kind="unknown", source="static",
                              miss_behavior="raise", notes=row.notes)
        return _DispatchPart("absent", support, None, [_no_sm120(root, version)], {}, [])
    if layout is None:
        exc = _Unreadable(PY_TABLE, "none of the known SM120 sparse-MLA layouts is present "
                                    f"({', '.join(m for _, m, _ in LAYOUTS)})")
        return _DispatchPart(None, _fallback(known, version), None,
                             [_unreadable(exc, root, known, version)], {}, [])
    reader, marker = next((r, m) for name, m, r in LAYOUTS if name == layout)
    try:
        static = reader(root, version)
    except _Unreadable as exc:
        return _DispatchPart(layout, _fallback(known, version), None,
                             [_unreadable(exc, root, known, version)],
                             {f"unreadable:{exc.rel}": str(root / exc.rel)}, [])
    except (RecursionError, MemoryError, ValueError, TypeError, OSError) as exc:
        # A layout nobody foresaw (deeply nested or odd literals): still a finding.
        bad = _Unreadable(marker, f"unexpected structure ({type(exc).__name__}: {exc})")
        return _DispatchPart(layout, _fallback(known, version), None,
                             [_unreadable(bad, root, known, version)], {}, [])
    support = dataclasses.replace(static.support, notes=(*static.support.notes, *static.notes))
    findings = [_unreadable(exc, root, known, version) for exc in static.problems]
    return _DispatchPart(layout, support, static, findings, dict(static.files),
                         list(static.notes))


def _fallback(known: Dsv4Support | None, version: str | None) -> Dsv4Support:
    if known is not None:
        return dataclasses.replace(known, notes=(
            *known.notes, "static reading failed; this is the published table of the "
                          "installed version"))
    return Dsv4Support(version=version, kind="unknown", source="static",
                       notes=("static reading failed and no published table is known",))


def _no_sm120(root: Path | None, version: str | None) -> Finding:
    return Finding(
        id=ID_NO_SM120, severity=Severity.ERROR,
        title=f"flashinfer-python {version} has no SM120 sparse-MLA kernels",
        fix=(f"Upgrade: `pip install flashinfer-python=={known_versions()[-1]}` (0.6.18 is "
             f"the first with DSpark's topk 192/256, 0.7.0 the first with any heads/topk), "
             f"or `dsparkctl install-kernels`"),
        refs=(tables.PR_DSV4_192_256, tables.PR_ENVELOPE),
        detail=(f"{root / PY_TABLE} is missing" if root is not None else
                "from the table of published releases: the wheel has no "
                "flashinfer/mla/_sparse_mla_sm120.py"),
    )


def what_if_support(version: str) -> tuple[Dsv4Support | None, list[Finding]]:
    """A published release's coverage for ``doctor --flashinfer-version`` (what if I ran it?).

    A release from before the SM120 kernels is known too: it serves no call, which is the
    answer (not an unknown version). (None, []) when the table has no row for ``version``.
    """
    support = known_support(version)
    if support is not None:
        return support, []
    row = known_release(version)
    if row is None or row.layout != "absent":
        return None, []
    return (Dsv4Support(version=version, kind="unknown", source="known-version",
                        miss_behavior="raise", notes=row.notes), [_no_sm120(None, version)])


def _compare_with_published(static: _Static | None, layout: str | None,
                            version: str | None) -> tuple[bool | None, Finding | None]:
    """Whether the tree differs from its published release, and the INFO note saying how."""
    row = known_release(version) if version else None
    known = known_support(version) if version else None
    if static is None or known is None or row is None:
        return None, None
    halves_differ = (static.python_pairs is not None and static.cpp_pairs is not None
                     and (static.python_pairs != known.pairs or static.cpp_pairs != known.pairs))
    modified = (_support_core(static.support) != _support_core(known) or halves_differ
                or row.layout != layout)
    if not modified:
        return False, None
    what = _describe_difference(static.support, known)
    if row.layout != layout:
        what = f"layout {layout!r}, published {row.layout!r}" + (f"; {what}" if what else "")
    return True, Finding(
        id=ID_MODIFIED, severity=Severity.INFO,
        title=(f"FlashInfer's SM120 sparse-MLA dispatch differs from the published "
               f"flashinfer-python {version}"),
        fix=("Nothing to do if you patched it on purpose (dsparkctl reads what is installed); "
             "to go back: " + _reinstall_fix(version)),
        detail=what or "the tree differs from the published table",
        data={"layout": layout},
    )
