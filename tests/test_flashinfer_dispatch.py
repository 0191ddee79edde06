"""The static FlashInfer dispatch reader against the real published wheels.

Trees come from ``wheels.site_packages`` (pip-downloaded flashinfer-python,
unpacked); tests that need a case no wheel ships (a half-patched table, a
garbled file, a stale JIT cache, a jit-cache package) copy the real tree and
make the smallest edit that produces it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsparkctl import flashinfer_dispatch as fd
from dsparkctl import flashinfer_runtime as fr
from dsparkctl.errors import UsageError
from dsparkctl.findings import Severity
from dsparkctl.flashinfer_support import Dsv4Support

pytestmark = pytest.mark.network

PY_TABLE = fd.PY_TABLE
CU_DECODE = fd.CU_DECODE


def _tree(wheels, tmp_path: Path, version: str, *, copy: bool = False,
          name: str = "sp") -> Path:
    return wheels.site_packages(tmp_path / name, [("flashinfer-python", version)],
                                copy=copy, only=["flashinfer"])


def _read(sp: Path, tmp_path: Path) -> fd.FlashInferReading:
    # An empty cache dir: the machine's real ~/.cache/flashinfer must not leak in.
    return fd.read_flashinfer(sp, jit_cache_dir=tmp_path / "no-jit-cache")


def _ids(reading: fd.FlashInferReading) -> list[str]:
    return [f.id for f in reading.findings]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"anchor {old!r} not unique in {path}"
    path.write_text(text.replace(old, new))


_PY_ANCHOR = "_DECODE_DSV4_DISPATCH = frozenset(\n    {\n"
_CU_ANCHOR = "#undef DSV4_DISPATCH"


def _add_python_pair(sp: Path, pair: tuple[int, int]) -> None:
    _edit(sp / PY_TABLE, _PY_ANCHOR, _PY_ANCHOR + f"        {pair},\n")


def _add_cpp_pair(sp: Path, pair: tuple[int, int]) -> None:
    _edit(sp / CU_DECODE, _CU_ANCHOR, f"  DSV4_DISPATCH({pair[0]}, {pair[1]})\n{_CU_ANCHOR}")


# --- the published layouts --------------------------------------------------


def test_0_6_15_post1_has_15_pairs_and_192_falls_through_to_the_assert(wheels, tmp_path):
    r = _read(_tree(wheels, tmp_path, "0.6.15.post1"), tmp_path)
    assert r.version == "0.6.15.post1"
    assert r.layout == "frozenset"
    s = r.support
    assert s is not None and s.kind == "pairs" and s.source == "static"
    assert s.pairs is not None and len(s.pairs) == 15
    assert (64, 192) not in s.pairs and (64, 128) in s.pairs
    assert r.python_pairs == r.cpp_pairs == s.pairs
    assert r.decode_max_tokens == 64
    assert s.miss_behavior == "fallthrough"
    assert s.path_for(50, 64, 192) == "assert"
    assert s.path_for(50, 64, 128) == "decode"
    # prefill read from dispatch_dsv4_single: no 8 heads, no topk 192 before 0.6.18
    assert s.path_for(100, 64, 192) == "error"
    assert s.path_for(100, 8, 128) == "error"
    assert s.path_for(100, 64, 2048) == "prefill"
    assert r.findings == ()
    assert r.modified is False
    assert set(r.files) >= {"python_table", "cpp_decode", "cpp_prefill"}


def test_0_6_18_has_25_pairs_and_a_decode_miss_is_a_clean_error(wheels, tmp_path):
    r = _read(_tree(wheels, tmp_path, "0.6.18"), tmp_path)
    s = r.support
    assert s is not None and s.kind == "pairs" and s.pairs is not None
    assert len(s.pairs) == 25
    assert (64, 192) in s.pairs and (8, 256) in s.pairs
    assert s.miss_behavior == "raise"
    assert s.path_for(50, 64, 192) == "decode"
    assert s.path_for(24, 24, 192) == "error"
    assert s.path_for(100, 8, 192) == "prefill"  # 0.6.18 prefill adds 8 heads and topk 192
    assert r.findings == () and r.modified is False


def test_0_7_0_is_an_envelope_read_without_iterating_it(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.7.0")
    r = _read(sp, tmp_path)
    s = r.support
    assert r.layout == "envelope-plan"
    assert s is not None and s.kind == "envelope" and s.any_topk and s.pairs is None
    assert s.max_heads == 128 and s.min_topk == 1
    assert s.path_for(50, 64, 192) == "decode" and s.path_for(50, 24, 700) == "decode"
    assert s.path_for(50, 129, 128) == "error"
    assert s.to_json()["dsv4_decode"]["kind"] == "envelope"
    # The real 0.7.0 envelope class has no __iter__: anything that enumerated
    # the table (list(_DECODE_DSV4_DISPATCH)) would fail on this release.
    import ast
    tree = ast.parse((sp / fd.PY_PLAN).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef)
               and n.name == "_DecodeDispatchEnvelope")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert "__contains__" in methods and "__iter__" not in methods
    assert r.findings == ()


def test_0_7_2_post1_is_the_package_envelope(wheels, tmp_path):
    r = _read(_tree(wheels, tmp_path, "0.7.2.post1"), tmp_path)
    s = r.support
    assert r.layout == "envelope-package"
    assert s is not None and s.kind == "envelope" and s.any_topk
    assert s.max_heads == 128 and s.min_topk == 1
    assert s.prefill.dual_extra_page_sizes == frozenset({64, 32, 2})
    assert "cpp_plan" in r.files
    assert r.findings == ()


def test_0_6_13_has_no_sm120_sparse_mla(wheels, tmp_path):
    r = _read(_tree(wheels, tmp_path, "0.6.13"), tmp_path)
    assert r.layout == "absent"
    assert r.support is not None and r.support.kind == "unknown"
    assert _ids(r) == [fd.ID_NO_SM120]
    assert r.findings[0].severity is Severity.ERROR


def test_reader_opens_a_handful_of_files_and_never_walks(wheels, tmp_path, monkeypatch):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    opened: list[str] = []
    real_read_text = Path.read_text

    def counting(self, *a, **kw):
        opened.append(str(self))
        return real_read_text(self, *a, **kw)

    def no_walk(*a, **kw):
        raise AssertionError("the reader must not walk the package")

    monkeypatch.setattr(Path, "read_text", counting)
    monkeypatch.setattr(os, "walk", no_walk)
    monkeypatch.setattr(Path, "rglob", no_walk)
    r = _read(sp, tmp_path)
    assert r.support is not None and r.support.kind == "pairs"
    assert len(opened) <= 6, opened


# --- half-patched and modified trees ------------------------------------------


def test_pair_only_in_python_table_is_half_patched(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    _add_python_pair(sp, (64, 192))
    r = _read(sp, tmp_path)
    half = [f for f in r.findings if f.id == fd.ID_HALF_PATCHED]
    assert len(half) == 1 and half[0].severity is Severity.ERROR
    assert half[0].data["only_python"] == [[64, 192]] and half[0].data["only_cpp"] == []
    assert "(64, 192)" in half[0].detail
    assert "flashinfer-python==0.6.15.post1" in half[0].fix
    assert "install-kernels --backend flashinfer" in half[0].fix
    assert all(ref.startswith("https://github.com/") for ref in half[0].refs)
    assert (64, 192) in (r.python_pairs or set()) and (64, 192) not in (r.cpp_pairs or set())
    # decode really needs both halves
    assert r.support is not None and (64, 192) not in (r.support.pairs or set())
    assert r.modified is True


def test_pair_only_in_cpp_is_half_patched(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    _add_cpp_pair(sp, (64, 192))
    r = _read(sp, tmp_path)
    half = [f for f in r.findings if f.id == fd.ID_HALF_PATCHED]
    assert len(half) == 1 and half[0].severity is Severity.ERROR
    assert half[0].data["only_cpp"] == [[64, 192]] and half[0].data["only_python"] == []
    assert r.support is not None and r.support.path_for(50, 64, 192) == "assert"


def test_both_halves_patched_is_consistent_but_noted_as_modified(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    _add_python_pair(sp, (64, 192))
    _add_cpp_pair(sp, (64, 192))
    r = _read(sp, tmp_path)
    assert fd.ID_HALF_PATCHED not in _ids(r)
    assert r.support is not None and r.support.path_for(50, 64, 192) == "decode"
    assert r.modified is True
    mod = [f for f in r.findings if f.id == fd.ID_MODIFIED]
    assert len(mod) == 1 and mod[0].severity is Severity.INFO
    assert "(64, 192)" in mod[0].detail and "added" in mod[0].detail
    assert all(f.severity is not Severity.ERROR for f in r.findings)


def test_table_written_as_a_comprehension_or_extended_later_is_still_read(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    text = (sp / PY_TABLE).read_text()
    start = text.index("_DECODE_DSV4_DISPATCH = frozenset(")
    end = text.index("_DECODE_DSV4_PAGE_BLOCK_SIZE")
    text = (text[:start]
            + "_H = (8, 16, 32, 64, 128)\n"
            + "_DECODE_DSV4_DISPATCH = frozenset((h, k) for h in _H for k in (128, 512, 1024))\n"
            + text[end:]
            + "\n_DECODE_DSV4_DISPATCH = _DECODE_DSV4_DISPATCH | {(64, 192)}\n")
    (sp / PY_TABLE).write_text(text)
    _add_cpp_pair(sp, (64, 192))
    r = _read(sp, tmp_path)
    assert fd.ID_UNREADABLE not in _ids(r) and fd.ID_HALF_PATCHED not in _ids(r)
    assert r.support is not None and r.support.pairs is not None
    assert len(r.support.pairs) == 16 and (64, 192) in r.support.pairs


# --- layouts that cannot be read ----------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "not-a-literal", "bad-pair", "no-table"])
def test_unreadable_python_table_is_a_finding_with_fallback(wheels, tmp_path, damage):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    path = sp / PY_TABLE
    text = path.read_text()
    if damage == "truncate":
        text = text[: text.index("(64, 512)")]
    elif damage == "not-a-literal":
        text = text.replace(_PY_ANCHOR, "_DECODE_DSV4_DISPATCH = _load_table(\n    {\n", 1)
    elif damage == "bad-pair":
        text = text.replace(_PY_ANCHOR, _PY_ANCHOR + "        (64, 'x'),\n", 1)
    else:
        text = text.replace("_DECODE_DSV4_DISPATCH = frozenset(", "_RENAMED = frozenset(", 1)
    path.write_text(text)
    r = _read(sp, tmp_path)
    bad = [f for f in r.findings if f.id == fd.ID_UNREADABLE]
    assert len(bad) == 1
    assert str(path) in bad[0].detail and bad[0].data["file"] == str(path)
    assert "published table" in bad[0].detail
    assert bad[0].refs and all(ref.startswith("https://") for ref in bad[0].refs)
    # falls back to the published table of 0.6.15.post1, and says so
    s = r.support
    assert s is not None and s.source == "known-version" and s.pairs is not None
    assert len(s.pairs) == 15
    assert any("static reading failed" in n for n in s.notes)


def test_missing_cu_file_is_a_finding_naming_it(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    (sp / CU_DECODE).unlink()
    r = _read(sp, tmp_path)
    bad = [f for f in r.findings if f.id == fd.ID_UNREADABLE]
    assert len(bad) == 1 and bad[0].data["file"] == str(sp / CU_DECODE)


def test_missing_prefill_dispatch_falls_back_for_prefill_only(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.18", copy=True)
    _edit(sp / fd.CU_PREFILL, "inline bool dispatch_dsv4_single(", "inline bool renamed_single(")
    r = _read(sp, tmp_path)
    assert _ids(r) == [fd.ID_UNREADABLE]
    s = r.support
    assert s is not None and s.source == "static" and s.pairs is not None and len(s.pairs) == 25
    assert s.path_for(100, 8, 192) == "prefill"  # the published 0.6.18 prefill table


def test_unknown_version_with_unreadable_table_has_unknown_kind(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    dist = next(sp.glob("flashinfer_python-*.dist-info"))
    dist.rename(sp / "flashinfer_python-9.9.9.dist-info")
    (sp / PY_TABLE).write_text("this is not python (\n")
    r = _read(sp, tmp_path)
    assert r.version == "9.9.9"
    assert r.support is not None and r.support.kind == "unknown"
    assert fd.ID_UNREADABLE in _ids(r)


def test_envelope_replaced_by_something_else_is_unreadable(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.7.2.post1", copy=True)
    _edit(sp / fd.PY_POLICY, "_DECODE_DSV4_DISPATCH = _DecodeDispatchEnvelope(_MODEL_TYPE_DSV4)",
          "_DECODE_DSV4_DISPATCH = _make_envelope(_MODEL_TYPE_DSV4, 2)")
    r = _read(sp, tmp_path)
    assert fd.ID_UNREADABLE in _ids(r)
    assert r.support is not None and r.support.kind == "envelope"
    assert r.support.source == "known-version"


def test_envelope_bounds_are_read_not_assumed(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.7.0", copy=True)
    _edit(sp / fd.PY_PLAN, "_DECODE_DSV4_DISPATCH = _DecodeDispatchEnvelope(1)",
          "_DECODE_DSV4_DISPATCH = _DecodeDispatchEnvelope(129)")
    _edit(sp / fd.PY_PLAN, "_DECODE_MAX_HEADS = 128", "_DECODE_MAX_HEADS = 64")
    r = _read(sp, tmp_path)
    s = r.support
    assert s is not None and s.min_topk == 129 and s.max_heads == 64
    assert s.path_for(50, 64, 128) == "error" and s.path_for(50, 96, 256) == "error"
    assert fd.ID_MODIFIED in _ids(r)


def test_nothing_installed_and_bad_path(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = fd.read_flashinfer(empty, jit_cache_dir=tmp_path / "c")
    assert r.version is None and r.support is None and r.findings == ()
    with pytest.raises(UsageError, match="does not exist"):
        fd.read_flashinfer(tmp_path / "missing")


# --- jit cache, shadowing, skew --------------------------------------------------


def _cached_module(cache: Path, version: str, arch: str = "120f") -> Path:
    so = cache / version / arch / "cached_ops" / "sparse_mla_sm120" / "sparse_mla_sm120.so"
    so.parent.mkdir(parents=True)
    so.write_bytes(b"\x7fELF synthetic")
    return so


def test_cached_module_older_than_sources_is_stale(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    cache = tmp_path / "cache"
    old = _cached_module(cache, "0.6.15.post1", "120f")
    fresh = _cached_module(cache, "0.6.15.post1", "121a")
    os.utime(old, (1_000_000, 1_000_000))
    future = time.time() + 3600
    os.utime(fresh, (future, future))
    r = fd.read_flashinfer(sp, jit_cache_dir=cache)
    stale = [f for f in r.findings if f.id == fd.ID_STALE]
    assert len(stale) == 1 and stale[0].severity is Severity.WARNING
    assert stale[0].data["delete"] == str(old.parent)
    assert str(old.parent) in stale[0].fix
    assert set(r.jit_cache_modules) == {str(old), str(fresh)}


def test_cache_of_another_version_is_not_looked_at(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    cache = tmp_path / "cache"
    os.utime(_cached_module(cache, "0.6.14"), (1_000_000, 1_000_000))
    r = fd.read_flashinfer(sp, jit_cache_dir=cache)
    assert fd.ID_STALE not in _ids(r) and r.jit_cache_modules == ()


def test_workspace_base_env_locates_the_default_cache(wheels, tmp_path, monkeypatch):
    sp = _tree(wheels, tmp_path, "0.7.2.post1")
    monkeypatch.setenv("FLASHINFER_WORKSPACE_BASE", str(tmp_path / "ws"))
    so = _cached_module(tmp_path / "ws" / ".cache" / "flashinfer", "0.7.2.post1")
    os.utime(so, (1_000_000, 1_000_000))
    r = fd.read_flashinfer(sp)
    assert [f.data["module"] for f in r.findings if f.id == fd.ID_STALE] == [str(so)]


def _fake_jit_cache(sp: Path, version: str, *, record: bool = True,
                    module: bool = True) -> Path:
    # The real flashinfer-jit-cache wheels are hundreds of MB to GBs of .so files,
    # published on flashinfer.ai (not PyPI) and not reachable from CI. What the
    # reader relies on is the layout its build_backend.py produces:
    # flashinfer_jit_cache/jit_cache/<module>/<module>.so, listed in RECORD.
    so = sp / fd.AOT_IN_JIT_CACHE
    if module:
        so.parent.mkdir(parents=True)
        so.write_bytes(b"\x7fELF synthetic")
    dist = sp / f"flashinfer_jit_cache-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: flashinfer-jit-cache\n"
                                   f"Version: {version}\n")
    if record:
        (dist / "RECORD").write_text(
            "flashinfer_jit_cache/__init__.py,sha256=x,10\n"
            + (f"{fd.AOT_IN_JIT_CACHE},sha256=y,15\n" if module else ""))
    return so


def test_jit_cache_module_shadows_stock_sources_as_warning(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    so = _fake_jit_cache(sp, "0.6.15.post1+cu129")
    r = _read(sp, tmp_path)
    assert r.jit_cache_version == "0.6.15.post1+cu129"
    sh = [f for f in r.findings if f.id == fd.ID_SHADOWING]
    assert len(sh) == 1 and sh[0].severity is Severity.WARNING
    assert sh[0].data["modules"] == [str(so)]
    assert fd.ID_VERSION_SKEW not in _ids(r)  # +cu129 local suffix is a match


def test_jit_cache_module_shadowing_patched_sources_is_an_error(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1", copy=True)
    _add_python_pair(sp, (64, 192))
    _add_cpp_pair(sp, (64, 192))
    _fake_jit_cache(sp, "0.6.15.post1+cu129", record=False)  # found by its known path
    r = _read(sp, tmp_path)
    sh = [f for f in r.findings if f.id == fd.ID_SHADOWING]
    assert len(sh) == 1 and sh[0].severity is Severity.ERROR
    assert "uninstall flashinfer-jit-cache" in sh[0].fix


def test_jit_cache_without_the_module_does_not_shadow(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    _fake_jit_cache(sp, "0.6.15.post1+cu129", module=False)
    assert fd.ID_SHADOWING not in _ids(_read(sp, tmp_path))


def test_version_skew_is_an_error_where_flashinfer_refuses_to_import(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.6.15.post1")
    (sp / "flashinfer_cubin-0.6.13.dist-info").mkdir()
    r = _read(sp, tmp_path)
    assert r.cubin_version == "0.6.13"
    skew = [f for f in r.findings if f.id == fd.ID_VERSION_SKEW]
    assert len(skew) == 1 and skew[0].severity is Severity.ERROR
    assert "flashinfer-cubin==0.6.15.post1" in skew[0].fix
    assert "FLASHINFER_DISABLE_VERSION_CHECK" in skew[0].detail


def test_skewed_jit_cache_is_ignored_from_0_7_2_so_it_does_not_shadow(wheels, tmp_path):
    sp = _tree(wheels, tmp_path, "0.7.2.post1")
    _fake_jit_cache(sp, "0.7.1+cu129")
    r = _read(sp, tmp_path)
    skew = [f for f in r.findings if f.id == fd.ID_VERSION_SKEW]
    assert len(skew) == 1 and skew[0].severity is Severity.WARNING
    assert fd.ID_SHADOWING not in _ids(r)


# --- the reader stays light ---------------------------------------------------------


def test_importing_the_reader_imports_neither_torch_nor_flashinfer():
    code = ("import sys; import dsparkctl.flashinfer_dispatch, dsparkctl.flashinfer_runtime, "
            "dsparkctl.flashinfer_tables; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'flashinfer')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


# --- --import: runtime answer vs static reading --------------------------------------


def _probe(support_pairs, *, version="0.6.15.post1", topks=(128, 192, 512)) -> fr.RuntimeProbe:
    heads = tuple(range(1, 129))
    return fr.RuntimeProbe(python="py", ok=True, version=version, heads=heads, topks=topks,
                           apis={"dispatch": frozenset(support_pairs)})


def test_compare_agreeing_runtime_gives_no_finding(wheels, tmp_path):
    s = _read(_tree(wheels, tmp_path, "0.6.15.post1"), tmp_path).support
    assert s is not None and s.pairs is not None
    grid = [(h, k) for h in range(1, 129) for k in (128, 192, 512)]
    assert fr.compare(s, _probe([p for p in grid if p in s.pairs])) == []


def test_compare_reports_narrower_runtime_as_error_and_wider_as_warning(wheels, tmp_path):
    s = _read(_tree(wheels, tmp_path, "0.6.15.post1"), tmp_path).support
    assert s is not None and s.pairs is not None
    grid = [(h, k) for h in range(1, 129) for k in (128, 192, 512)]
    served = {p for p in grid if p in s.pairs}
    narrower = fr.compare(s, _probe(served - {(64, 128)}))
    assert [(f.id, f.severity) for f in narrower] == [(fr.ID_IMPORT_DISAGREES, Severity.ERROR)]
    assert narrower[0].data["pairs"] == [[64, 128]]
    wider = fr.compare(s, _probe(served | {(64, 192)}))
    assert [(f.id, f.severity) for f in wider] == [(fr.ID_IMPORT_DISAGREES, Severity.WARNING)]


def test_compare_flags_a_different_flashinfer_on_the_path():
    s = Dsv4Support(version="0.6.18", kind="envelope", source="static", any_topk=True)
    grid = [(h, k) for h in range(1, 129) for k in (128, 192, 512)]
    out = fr.compare(s, _probe(grid, version="0.7.2.post1"))
    assert [f.severity for f in out] == [Severity.ERROR]
    assert out[0].data == {"static_version": "0.6.18", "runtime_version": "0.7.2.post1"}


def test_probe_of_a_missing_interpreter_or_module_is_a_clean_failure(tmp_path):
    missing = fr.probe_runtime(tmp_path / "no-python", timeout=30)
    assert not missing.ok and "no such interpreter" in (missing.error or "")
    empty = tmp_path / "empty-site"
    empty.mkdir()
    # the test venv has no flashinfer: the probe reports the ImportError
    no_fi = fr.probe_runtime(sys.executable, extra_path=[empty], timeout=60)
    assert not no_fi.ok and "flashinfer" in (no_fi.error or "")
    out = fr.compare(None, no_fi)
    assert [(f.id, f.severity) for f in out] == [(fr.ID_IMPORT_FAILED, Severity.WARNING)]


# The pure-Python dependencies `import flashinfer.mla` needs on a CPU-only host
# (torch, numpy, filelock and packaging come from the test venv). Real wheels.
_RUNTIME_DEPS = [
    ("apache-tvm-ffi", "0.1.11"), ("tqdm", "4.70.1"), ("requests", "2.34.2"),
    ("urllib3", "2.8.0"), ("idna", "3.20"), ("certifi", "2026.10.19.post1"),
    ("charset-normalizer", "3.5.3"),
]


@pytest.mark.parametrize("version", ["0.6.15.post1", "0.7.2.post1"])
def test_runtime_probe_of_the_real_wheel_agrees_with_the_static_reading(wheels, tmp_path,
                                                                       version):
    sp = wheels.site_packages(tmp_path / "sp", [("flashinfer-python", version), *_RUNTIME_DEPS])
    reading = _read(sp, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FLASHINFER_WORKSPACE_BASE"] = str(tmp_path / "ws")  # flashinfer makedirs its cache
    probe = fr.probe_runtime(sys.executable, extra_path=[sp], env=env, timeout=300)
    assert probe.ok, probe.error
    assert probe.version == version
    assert probe.decode_max_tokens == reading.decode_max_tokens == 64
    assert fr.compare(reading.support, probe) == []
    if version.startswith("0.6"):
        assert probe.pairs == reading.support.pairs and probe.dispatch_type == "frozenset"
        assert "supports_decode" not in probe.apis
    else:
        assert probe.pairs is None and probe.dispatch_type == "_DecodeDispatchEnvelope"
        assert probe.apis["supports_decode"] == probe.apis["dispatch"]
        assert (64, 192) in probe.apis["supports_decode"]
    rt = fr.runtime_support(probe, reading.support)
    assert rt is not None and rt.source == "import" and rt.kind == reading.support.kind
