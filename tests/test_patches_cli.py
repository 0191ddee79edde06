"""``dsparkctl patches apply|status|revert`` end to end on a real sglang tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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
])
def test_cli_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = _run(*args)
    assert code == 2, (out, err)
    assert message in err and len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_cli_target_without_the_distribution_is_exit_2(tmp_path: Path) -> None:
    code, _, err = _run("apply", "--site-packages", str(tmp_path))
    assert code == 2 and f"sglang is not installed in {tmp_path}" in err
