"""The spec tables against every published wheel they name.

Each upstream sha256 in ``patches/*/spec.json`` must be the hash of the file
in the real wheel of that version, each anchor must occur exactly once there,
and rendering the edit must give the recorded result sha256. The file is read
straight out of the downloaded wheel (no unpacking), so all versions are cheap.
"""

from __future__ import annotations

import hashlib
import zipfile

import pytest
import realwheels

from dsparkctl.patch_spec import python_frozenset_pairs, render
from dsparkctl.patching import specs

SPECS = specs()
CASES = [(sid, tf.path, v) for sid, spec in SPECS.items() for tf in spec.files
         for v in tf.upstream_sha256]


def test_both_patches_are_there_and_cover_the_documented_ranges() -> None:
    assert set(SPECS) >= {"sglang-route-sm120", "flashinfer-dsv4-pairs"}
    sg = SPECS["sglang-route-sm120"]
    assert sg.known_versions == tuple(f"0.5.{n}" for n in range(16, 24))
    fi = SPECS["flashinfer-dsv4-pairs"]
    assert fi.known_versions == ("0.6.14", "0.6.15", "0.6.15.post1", "0.6.16", "0.6.16.post1",
                                 "0.6.16.post2", "0.6.16.post3", "0.6.16.post4", "0.6.17")
    assert not fi.knows("0.6.18") and not sg.knows("0.5.24") and not sg.knows("0.5.15")


@pytest.mark.network
@pytest.mark.parametrize(("spec_id", "rel", "version"), CASES)
def test_upstream_and_result_hashes_match_the_real_wheel(spec_id: str, rel: str,
                                                         version: str) -> None:
    spec = SPECS[spec_id]
    tf = next(f for f in spec.files if f.path == rel)
    with zipfile.ZipFile(realwheels.wheel_path(spec.distribution, version)) as zf:
        data = zf.read(rel)
    assert hashlib.sha256(data).hexdigest() == tf.upstream_sha256[version]
    text = data.decode()
    for edit in tf.edits:
        assert text.count(edit.anchor) == 1
    new = render(data, tf, spec.params)
    assert hashlib.sha256(new).hexdigest() == tf.result_sha256[version]
    if rel.endswith(".py"):
        compile(new, rel, "exec", dont_inherit=True)


@pytest.mark.network
def test_default_pairs_are_exactly_what_flashinfer_0_6_18_added() -> None:
    spec = SPECS["flashinfer-dsv4-pairs"]
    rel = "flashinfer/mla/_sparse_mla_sm120.py"
    with zipfile.ZipFile(realwheels.wheel_path("flashinfer-python", "0.6.18")) as zf:
        upstream_0618 = python_frozenset_pairs(zf.read(rel).decode(), "_DECODE_DSV4_DISPATCH")
    with zipfile.ZipFile(realwheels.wheel_path("flashinfer-python", "0.6.17")) as zf:
        patched = render(zf.read(rel), spec.files[0], spec.params).decode()
    assert python_frozenset_pairs(patched, "_DECODE_DSV4_DISPATCH") == upstream_0618
