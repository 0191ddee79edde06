"""Static package reading against real wheels and against importlib.metadata."""

from __future__ import annotations

import importlib.metadata as md
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from dsparkctl import packages
from dsparkctl.packages import canonical_name

VENV_SITE = Path(sysconfig.get_paths()["purelib"])


@pytest.mark.network
def test_versions_from_real_wheels(wheels, tmp_path: Path) -> None:
    site = wheels.site_packages(tmp_path / "site", [("flashinfer-python", "0.6.15.post1"),
                                                    ("sglang", "0.5.17")])
    scan = packages.scan([site])
    versions = scan.versions()
    assert versions["flashinfer-python"] == "0.6.15.post1"
    assert versions["sglang"] == "0.5.17"
    assert set(versions) == set(packages.TRACKED_DISTRIBUTIONS)
    assert all(v is None for k, v in versions.items() if k not in ("flashinfer-python", "sglang"))
    assert scan.modules["flashinfer"] == site / "flashinfer"
    assert scan.modules["sglang"] == site / "sglang"
    assert "torch" not in scan.modules
    assert scan.site_dirs == [site]
    assert scan.duplicates == {}


@pytest.mark.network
def test_first_on_path_wins_and_shadowing_is_recorded(wheels, tmp_path: Path) -> None:
    user = wheels.site_packages(tmp_path / "user", [("flashinfer-python", "0.7.2.post1")])
    venv = wheels.site_packages(tmp_path / "venv", [("flashinfer-python", "0.6.15.post1"),
                                                    ("sglang", "0.5.17")])
    scan = packages.scan([user, venv])
    assert scan.version("flashinfer-python") == "0.7.2.post1"
    assert scan.modules["flashinfer"] == user / "flashinfer"
    dup = scan.duplicates["flashinfer-python"]
    assert [(r.version, r.site) for r in dup] == [("0.7.2.post1", user), ("0.6.15.post1", venv)]
    # Same scan, other order: the other copy wins.
    assert packages.scan([venv, user]).version("flashinfer-python") == "0.6.15.post1"


def test_static_scan_agrees_with_importlib_metadata() -> None:
    """Every distribution in this venv, read statically, matches importlib.metadata."""
    scan = packages.scan([VENV_SITE], wanted=None)
    expected = {}
    for dist in md.distributions(path=[str(VENV_SITE)]):
        expected.setdefault(canonical_name(dist.metadata["Name"]), dist.version)
    assert len(expected) > 10
    got = {name: rec.version for name, rec in scan.dists.items()}
    assert got == expected


def test_tracked_names_are_pep503() -> None:
    for name in packages.TRACKED_DISTRIBUTIONS:
        assert canonical_name(name) == name
    assert canonical_name("Flashinfer_Python") == "flashinfer-python"
    assert canonical_name("nvidia.cutlass__dsl") == "nvidia-cutlass-dsl"


@pytest.mark.network
def test_cutlass_dsl_requirements_are_tracked(wheels) -> None:
    """The libs distributions the real nvidia-cutlass-dsl wheel requires are all on our list."""
    root = wheels.unpacked("nvidia-cutlass-dsl", "4.7.0")
    meta = next(root.glob("*.dist-info")) / "METADATA"
    libs = {canonical_name(Requirement(line.split(":", 1)[1]).name)
            for line in meta.read_text().splitlines() if line.startswith("Requires-Dist:")}
    libs = {n for n in libs if n.startswith("nvidia-cutlass-dsl")}
    assert {"nvidia-cutlass-dsl-libs-base", "nvidia-cutlass-dsl-libs-cu12",
            "nvidia-cutlass-dsl-libs-cu13"} <= libs
    assert libs <= set(packages.TRACKED_DISTRIBUTIONS)


@pytest.mark.network
def test_cutlass_dsl_real_wheels(wheels, tmp_path: Path) -> None:
    """The meta wheel's name is a prefix of the libs' names: METADATA decides which is which.

    ``cutlass`` itself sits in libs-base under ``nvidia_cutlass_dsl/dsl_packages``
    and reaches ``sys.path`` through the meta wheel's ``.pth`` import line.
    """
    site = wheels.site_packages(tmp_path / "site", [("nvidia-cutlass-dsl", "4.7.0"),
                                                    ("nvidia-cutlass-dsl-libs-base", "4.7.0")])
    assert packages.scan([site]).modules.get("cutlass") is None
    extra = packages.pth_paths(site)
    assert extra == [site / "nvidia_cutlass_dsl" / "dsl_packages"]
    scan = packages.scan([site, *extra])
    versions = scan.versions()
    assert versions["nvidia-cutlass-dsl"] == "4.7.0"
    assert versions["nvidia-cutlass-dsl-libs-base"] == "4.7.0"
    assert versions["nvidia-cutlass-dsl-libs-cu12"] is None
    assert scan.modules["cutlass"] == site / "nvidia_cutlass_dsl" / "dsl_packages" / "cutlass"


@pytest.mark.network
def test_tvm_ffi_real_wheel(wheels, tmp_path: Path) -> None:
    site = wheels.site_packages(tmp_path / "site", [("apache-tvm-ffi", "0.1.11")])
    scan = packages.scan([site])
    assert scan.version("apache-tvm-ffi") == "0.1.11"
    assert scan.modules["tvm_ffi"] == site / "tvm_ffi"


@pytest.mark.network
def test_two_versions_in_one_folder(wheels, tmp_path: Path) -> None:
    """A botched upgrade leaves two dist-info folders side by side."""
    site = wheels.site_packages(tmp_path / "site", [("flashinfer-python", "0.6.15.post1")])
    other = next(wheels.unpacked("flashinfer-python", "0.7.2.post1").glob("*.dist-info"))
    (site / other.name).symlink_to(other)
    scan = packages.scan([site])
    assert sorted(r.version for r in scan.duplicates["flashinfer-python"]) == [
        "0.6.15.post1", "0.7.2.post1"]
    assert scan.version("flashinfer-python") == packages.scan([site]).version("flashinfer-python")


@pytest.mark.network
def test_editable_finder_and_pth(wheels, tmp_path: Path) -> None:
    """``pip install -e`` of a checkout: no package folder in site-packages, only a finder.

    The finder file is written the way setuptools writes it (a MAPPING dict);
    the package it points at is the real sglang source.
    """
    src = wheels.unpacked("sglang", "0.5.17")
    site = tmp_path / "site"
    site.mkdir()
    dist = next(src.glob("*.dist-info"))
    shutil.copytree(dist, site / dist.name)
    (site / "__editable___sglang_0_5_17_finder.py").write_text(
        "import sys\n"
        f"MAPPING: dict[str, str] = {{'sglang': {str(src / 'sglang')!r}}}\n"
        "NAMESPACES: dict[str, list[str]] = {}\n")
    (site / "__editable__.sglang-0.5.17.pth").write_text(
        "import __editable___sglang_0_5_17_finder; __editable___sglang_0_5_17_finder.install()\n")
    scan = packages.scan([site])
    assert scan.version("sglang") == "0.5.17"
    assert scan.modules["sglang"] == src / "sglang"
    # A compat-mode editable install (a plain path in a .pth) is followed offline.
    fi = wheels.unpacked("flashinfer-python", "0.6.15.post1")
    (site / "flashinfer-src.pth").write_text(f"# a checkout\n{fi}\n")
    assert packages.pth_paths(site) == [fi]
    scan = packages.scan([site, *packages.pth_paths(site)])
    assert scan.modules["flashinfer"] == fi / "flashinfer"
    assert scan.version("flashinfer-python") == "0.6.15.post1"


def test_egg_info_folder_and_file(tmp_path: Path) -> None:
    """Legacy ``setup.py develop`` / distutils layouts (no wheel can produce them)."""
    (tmp_path / "triton.egg-info").mkdir()
    (tmp_path / "triton.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: triton\nVersion: 3.4.0+git1234\n\nlong text\n")
    (tmp_path / "vllm-0.9.1-py3.11.egg-info").write_text(
        "Metadata-Version: 1.0\nName: vllm\nVersion: 0.9.1\n")
    versions = packages.scan([tmp_path]).versions()
    assert versions["triton"] == "3.4.0+git1234"
    assert versions["vllm"] == "0.9.1"


def test_missing_metadata_falls_back_to_folder_name(tmp_path: Path) -> None:
    (tmp_path / "sgl_kernel-0.3.21.dist-info").mkdir()
    assert packages.scan([tmp_path]).version("sgl-kernel") == "0.3.21"


def test_unreadable_entries_are_skipped(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    a_file = tmp_path / "file.zip"
    a_file.write_bytes(b"PK")
    scan = packages.scan([missing, a_file, VENV_SITE])
    assert scan.dirs == [VENV_SITE]
    assert scan.version("torch") == md.version("torch")


def test_torch_cuda_of_this_venv_is_cpu() -> None:
    torch_dir = packages.scan([VENV_SITE]).modules["torch"]
    assert md.version("torch").endswith("+cpu")
    assert packages.torch_cuda_version(torch_dir) is None


def test_torch_cuda_from_a_cuda_build(tmp_path: Path) -> None:
    """The real version.py, edited the way a CUDA build writes it."""
    real = (packages.scan([VENV_SITE]).modules["torch"] / "version.py").read_text()
    assert "cuda: Optional[str] = None" in real
    torch_dir = tmp_path / "torch"
    torch_dir.mkdir()
    (torch_dir / "version.py").write_text(
        real.replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.8'"))
    assert packages.torch_cuda_version(torch_dir) == "12.8"
    # Older torch wrote a plain assignment.
    (torch_dir / "version.py").write_text("__version__ = '2.1.0'\ncuda = '11.8'\n")
    assert packages.torch_cuda_version(torch_dir) == "11.8"
    (torch_dir / "version.py").write_text("this is not python(")
    assert packages.torch_cuda_version(torch_dir) is None
    assert packages.torch_cuda_version(tmp_path / "absent") is None


def test_versions_from_mapping() -> None:
    got = packages.versions_from({"Flashinfer_Python": "0.7.0", "unrelated": "1"})
    assert got["flashinfer-python"] == "0.7.0"
    assert "unrelated" not in got
    assert got["torch"] is None


def test_scan_is_not_importing(tmp_path: Path) -> None:
    before = set(sys.modules)
    packages.scan([VENV_SITE])
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in ("torch", "flashinfer")}
