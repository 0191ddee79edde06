"""The published-release table is right: it agrees with every wheel it claims to have read.

``known_support`` answers ``--flashinfer-version X`` without anything
installed, so its rows must say exactly what the static reader finds in the
real wheel of each version: decode pairs or envelope, miss behaviour, and the
prefill coverage read from the C++ dispatch.
"""

from __future__ import annotations

import dataclasses

import pytest
from packaging.version import Version

from dsparkctl import flashinfer_dispatch as fd
from dsparkctl import flashinfer_tables as ft
from dsparkctl.flashinfer_support import Dsv4Support

# What the issue asks to cover at least; every verified version is checked below.
_REQUIRED = ["0.6.14", "0.6.15.post1", "0.6.17", "0.6.18", "0.6.18.post1", "0.7.0", "0.7.1",
             "0.7.2.post1", "0.7.4"]


def _core(s: Dsv4Support) -> Dsv4Support:
    return dataclasses.replace(s, version=None, source="known-version", notes=())


def test_known_versions_cover_the_required_releases_in_order():
    versions = ft.known_versions()
    assert set(_REQUIRED) <= set(versions)
    assert versions == sorted(versions, key=Version)
    assert "0.6.13" not in versions  # no SM120 sparse-MLA there
    assert fd.known_versions() == versions


@pytest.mark.network
@pytest.mark.parametrize("version", ft.known_versions())
def test_table_row_equals_the_static_reading_of_the_real_wheel(wheels, tmp_path, version):
    sp = wheels.site_packages(tmp_path / "sp", [("flashinfer-python", version)],
                              only=["flashinfer"])
    reading = fd.read_flashinfer(sp, jit_cache_dir=tmp_path / "no-cache")
    assert reading.version == version
    assert reading.findings == ()
    assert reading.modified is False
    known = ft.known_support(version)
    assert known is not None and known.version == version and known.source == "known-version"
    static = reading.support
    assert static is not None and static.source == "static"
    assert _core(static) == _core(known)
    row = ft.known_release(version)
    assert row is not None and row.layout == reading.layout
    if static.kind == "pairs":
        assert reading.python_pairs == reading.cpp_pairs == known.pairs


@pytest.mark.network
def test_absent_row_matches_the_real_0_6_13(wheels, tmp_path):
    sp = wheels.site_packages(tmp_path / "sp", [("flashinfer-python", "0.6.13")],
                              only=["flashinfer"])
    assert not (sp / fd.PY_TABLE).exists()
    row = ft.known_release("0.6.13")
    assert row is not None and row.layout == "absent" and row.support is None
    assert ft.known_support("0.6.13") is None


def test_versions_between_and_around_published_ones():
    s = ft.known_support("0.6.16.post2")  # published, not read: answered by range, noted
    assert s is not None and s.pairs is not None and len(s.pairs) == 15
    assert any("not read by dsparkctl" in n for n in s.notes)
    local = ft.known_support("0.6.18+cu129")
    assert local is not None and local.pairs is not None and len(local.pairs) == 25
    assert not any("not read" in n for n in local.notes)
    later = ft.known_support("0.7.3")
    assert later is not None and later.kind == "envelope"
    assert later.prefill.dual_extra_page_sizes == frozenset({64, 32, 2})
    assert ft.known_support("0.8.0") is None
    assert ft.known_support("0.5.3") is None
    assert ft.known_support("not-a-version") is None
    assert ft.known_release("not-a-version") is None


@pytest.mark.parametrize(("version", "call", "path"), [
    # DSpark draft at TP2: 64 heads, topk 192, 50 tokens in CUDA-graph capture
    ("0.6.15.post1", (50, 64, 192), "assert"),
    ("0.6.17", (50, 64, 256), "assert"),
    ("0.6.18", (50, 64, 192), "decode"),
    ("0.6.18", (24, 24, 192), "error"),  # decode miss raises ValueError
    ("0.6.15.post1", (100, 64, 192), "error"),  # prefill has no topk 192 yet
    ("0.6.18", (100, 8, 192), "prefill"),
    ("0.6.15.post1", (100, 8, 128), "error"),  # no 8-head prefill before 0.6.18
    ("0.7.0", (50, 24, 192), "decode"),
    ("0.7.0", (100, 64, 200), "error"),  # prefill needs whole 64-wide tiles
    ("0.7.0", (100, 64, 320), "prefill"),
    ("0.7.4", (50, 128, 4096), "decode"),
    ("0.7.4", (50, 129, 128), "error"),
])
def test_paths_per_release(version, call, path):
    s = ft.known_support(version)
    assert s is not None
    assert s.path_for(*call) == path


def test_dual_cache_prefill_rules():
    s = ft.known_support("0.6.15.post1")
    assert s is not None
    assert s.path_for(100, 64, 128, extra_topk=128, extra_page_size=2) == "prefill"
    assert s.path_for(100, 64, 512, extra_topk=128) == "error"
    assert s.path_for(100, 64, 128, extra_topk=128, extra_page_size=32) == "error"
    later = ft.known_support("0.7.2.post1")
    assert later is not None and later.prefill.dual_extra_page_sizes == frozenset({64, 32, 2})


def test_skew_behaviour_changes_at_0_7_2():
    before, after = ft.known_release("0.7.1"), ft.known_release("0.7.2")
    assert before is not None and before.skew_behavior == "raise"
    assert after is not None and after.skew_behavior == "ignore"
