"""A non-editable install carries kernels/, patches/ and the prompt data (package data)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.network
def test_wheel_carries_kernels_patches_and_data(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                          str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    (whl,) = tmp_path.glob("dsparkctl-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    for f in (ROOT / "kernels").iterdir():
        if f.is_file():
            assert f"dsparkctl/_data/kernels/{f.name}" in names, f.name
    for spec in (ROOT / "patches").glob("*/spec.json"):
        assert f"dsparkctl/_data/patches/{spec.parent.name}/spec.json" in names
    assert "dsparkctl/data/smoke_prompts.json" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]
