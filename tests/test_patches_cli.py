"""``dsparkctl patches apply|status|revert`` end to end on a real sglang tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import realwheels
import typer
from patchtrees import SGLANG_FILE, diff_snapshots, sglang_tree, snapshot
from typer.testing import CliRunner

from dsparkctl.commands import patches


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """test root"""

    patches.register(app)
    return app


APP = _app()


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(APP, ["patches", *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return sglang_tree(tmp_path / "site", "0.5.19")


@pytest.mark.network
def test_cli_dry_run_apply_status_revert(site: Path) -> None:
    before = snapshot(site)
    code, out, _ = _run("apply", "--site-packages", str(site), "--dry-run")
    assert code == 0
    assert f"+++ b/{SGLANG_FILE}" in out and "+    from _dsparkctl_route import" in out
    assert snapshot(site) == before

    code, out, _ = _run("apply", "--site-packages", str(site), "--route", "all", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["command"] == "patches" and doc["verdict"] == "healthy"
    assert doc["schema_version"] == 1 and doc["action"] == "apply"
    assert doc["patches"][0]["changed"] is True
    assert {f["id"] for f in doc["findings"]} >= {"patch-applied"}

    code, out, _ = _run("apply", "--site-packages", str(site), "--json")
    assert code == 0 and json.loads(out)["patches"][0]["changed"] is False

    code, out, _ = _run("status", "--site-packages", str(site), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["patches"][0]["intact"] and doc["patches"][0]["params"]["route"] == "all"

    code, out, _ = _run("revert", "--site-packages", str(site), "--dry-run")
    assert code == 0 and f"--- a/{SGLANG_FILE}" in out and "+++ /dev/null" in out
    code, out, _ = _run("revert", "--site-packages", str(site), "--json")
    assert code == 0 and json.loads(out)["patches"][0]["patch"] == "sglang-route-sm120"
    assert diff_snapshots(before, snapshot(site)) == []


@pytest.mark.network
def test_cli_refusal_and_drift_exit_1(site: Path) -> None:
    f = site / SGLANG_FILE
    stock = f.read_bytes()
    f.write_bytes(stock + b"\n")
    code, out, _ = _run("apply", "--site-packages", str(site), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "problems"
    [finding] = [x for x in doc["findings"] if x["id"] == "patch-refused"]
    assert "not the upstream sglang 0.5.19 file" in finding["title"]
    assert f.read_bytes() == stock + b"\n"

    f.write_bytes(stock)
    assert _run("apply", "--site-packages", str(site))[0] == 0
    f.write_bytes(stock)  # pip reinstall
    code, out, _ = _run("status", "--site-packages", str(site), "--json")
    doc = json.loads(out)
    assert code == 1 and any(x["id"] == "patch-drift" for x in doc["findings"])
    assert _run("revert", "--site-packages", str(site))[0] == 0


@pytest.mark.parametrize("args, message", [
    (["apply", "--python", "/usr/bin/python3", "--site-packages", "/tmp"], "give one target"),
    (["apply", "--site-packages", "/nonexistent/site"], "no such folder"),
    (["apply", "--site-packages", "/tmp", "--patch", "no-such-patch"], "unknown patch"),
    (["apply", "--site-packages", "/tmp", "--route", "some"], "--route 'some'"),
    (["apply", "--site-packages", "/tmp", "--patch", "flashinfer-dsv4-pairs", "--pair", "64by192"],
     "HEADSxTOPK"),
    (["apply", "--site-packages", "/tmp", "--pair", "64x192"], "--pair does not apply"),
    (["apply", "--site-packages", "/tmp", "--kernel-manifest", "/nonexistent/manifest.json"],
     "no such file"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = _run(*args)
    assert code == 2, (out, err)
    assert message in err and len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_cli_target_without_the_distribution_is_exit_2(tmp_path: Path) -> None:
    code, _, err = _run("apply", "--site-packages", str(tmp_path))
    assert code == 2 and f"sglang is not installed in {tmp_path}" in err


@pytest.mark.network
def test_cli_target_file_that_does_not_compile_is_a_refusal(site: Path) -> None:
    """A broken target file is a problem with the target (exit 1, with what to do), not a
    usage error and not a claim that dsparkctl's edit is broken."""
    f = site / SGLANG_FILE
    f.write_bytes(f.read_bytes() + b"def broken(:\n")
    code, out, _ = _run("apply", "--site-packages", str(site), "--json")
    doc = json.loads(out)
    assert code == 1, out
    [finding] = [x for x in doc["findings"] if x["id"] == "patch-refused"]
    assert "does not compile as it is" in finding["title"]
    assert "not the upstream sglang 0.5.19 file" in finding["title"]


@pytest.mark.network
def test_cli_refused_revert_says_why_and_not_nothing_to_revert(site: Path) -> None:
    assert _run("apply", "--site-packages", str(site))[0] == 0
    f = site / SGLANG_FILE
    f.write_bytes(f.read_bytes() + b"# an edit on top of the hook\n")
    code, out, err = _run("revert", "--site-packages", str(site))
    assert code == 1 and "still uses _dsparkctl_route" in out
    assert "nothing to revert" not in out + err


@pytest.mark.network
def test_cli_status_sees_a_route_config_left_stale_by_a_flashinfer_revert(tmp_path: Path) -> None:
    """The route config records which shapes FlashInfer serves. Reverting the FlashInfer pairs
    patch under it leaves the config claiming (64, 192): the revert warns, status reports it
    (exit 1) until the route is applied again."""
    site = realwheels.site_packages(tmp_path / "site", [("sglang", "0.5.17"),
                                                        ("flashinfer-python", "0.6.15.post1")],
                                    copy=True, only=["sglang", "flashinfer"])
    ws = str(tmp_path / "home")
    assert _run("apply", "--site-packages", str(site), "--patch", "flashinfer-dsv4-pairs",
                "--flashinfer-workspace-base", ws)[0] == 0
    assert _run("apply", "--site-packages", str(site))[0] == 0
    assert "[64, 192]" in (site / "_dsparkctl_route.json").read_text()
    assert _run("status", "--site-packages", str(site))[0] == 0
    code, out, _ = _run("revert", "--site-packages", str(site), "--patch",
                        "flashinfer-dsv4-pairs", "--json")
    doc = json.loads(out)
    assert code == 0 and any(x["id"] == "patch-stale" for x in doc["findings"]), out
    code, out, _ = _run("status", "--site-packages", str(site), "--json")
    doc = json.loads(out)
    assert code == 1 and [x["id"] for x in doc["findings"]].count("patch-stale") == 1, out
    assert _run("apply", "--site-packages", str(site))[0] == 0
    assert "[64, 192]" not in (site / "_dsparkctl_route.json").read_text()
    assert _run("status", "--site-packages", str(site))[0] == 0


@pytest.mark.network
def test_cli_os_error_outside_the_engine_is_one_line_exit_2(site: Path) -> None:
    """An OSError no command turned into a finding reaches cli.main: one line, exit 2."""
    (site / ".dsparkctl-patches").write_text("not a folder")
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "patches", "apply",
                          "--site-packages", str(site), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "Not a directory" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    doc = json.loads(res.stdout)
    assert doc["schema_version"] == 1 and doc["verdict"] == "unknown"
