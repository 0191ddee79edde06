"""bench/build_kernel.py, the build step every device script calls: its arguments reach
build_extension as given, and flags only when there are some (kernel_ab.sh builds older trees,
whose build_extension may have no extra_nvcc parameter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchscripts import load

from dsparkctl.kernel import build


def _tool():
    return load("build_kernel")


def test_too_few_arguments_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _tool().main(["sm_90a", "/tmp/x"]) == 2
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [[], ["-DDSPARKCTL_SMALL_MIN_BLOCKS=1", "-DDSPARKCTL_WS_RACECHECK_SYNC"]])
def test_arguments_and_flags_reach_build_extension(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path, flags: list[str]) -> None:
    calls = []

    def fake(arch: str, out_dir: Path, log: Path, **kwargs: object) -> Path:
        calls.append((arch, out_dir, log, kwargs))
        return out_dir / "built.so"

    monkeypatch.setattr(build, "build_extension", fake)
    assert _tool().main(["sm_120a", str(tmp_path / "out"), str(tmp_path / "b.log"), *flags]) == 0
    assert calls == [("sm_120a", tmp_path / "out", tmp_path / "b.log", {"extra_nvcc": flags} if flags else {})]
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "built.so")
