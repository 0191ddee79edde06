"""doctor end to end against real wheels: the issue's acceptance cases and the JSON contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FI_OLD, FI_0618, FI_070, FI_072 = "0.6.15.post1", "0.6.18", "0.7.0", "0.7.2.post1"


def doctor(*args: str, timeout: float = 120) -> tuple[int, dict | None, str]:
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", *args],
                         capture_output=True, text=True, timeout=timeout)
    doc = json.loads(res.stdout) if "--json" in args and res.stdout.strip() else None
    return res.returncode, doc, res.stdout + res.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, wheels: object):
    cache: dict[tuple[str, str], Path] = {}

    def make(fi: str, sg: str) -> Path:
        key = (fi, sg)
        if key not in cache:
            root = tmp_path_factory.mktemp(f"site-{fi}-{sg}")
            cache[key] = wheels.site_packages(root, [("flashinfer-python", fi), ("sglang", sg)])
        return cache[key]

    return make


def decode_sized(calls: list[dict]) -> list[dict]:
    return [c for c in calls if c["regime"] == "decode-sized"]


def draft_calls(doc: dict) -> list[dict]:
    return [c for c in doc["plan"]["calls"] if c["phase"] == "draft"]


def test_json_contract_and_missing_shape(site) -> None:
    code, doc, out = doctor("--site-packages", str(site(FI_OLD, "0.5.17")), "--tp", "2",
                            "--gamma", "5", "--json")
    assert code == 1, out
    assert isinstance(doc["schema_version"], int) and doc["verdict"] == "problems"
    assert doc["packages"]["flashinfer-python"] == FI_OLD and doc["packages"]["sglang"] == "0.5.17"
    assert isinstance(doc["gpus"], list)
    fi = doc["flashinfer"]
    assert fi["version"] == FI_OLD
    assert fi["dsv4_decode"]["kind"] == "pairs" and fi["dsv4_decode"]["source"] == "static"
    assert [64, 192] not in fi["dsv4_decode"]["pairs"] and [64, 128] in fi["dsv4_decode"]["pairs"]
    plan = doc["plan"]
    assert plan["sglang_version"] == "0.5.17" and plan["tp"] == 2 and plan["gamma"] == 5
    (draft,) = [c for c in draft_calls(doc) if c["topk"] == 192 and c["regime"] == "decode-sized"]
    assert draft["num_heads"] == 64 and draft["path"] == "assert" and draft["supported"] is False
    assert all(n % 5 == 0 for n in draft["num_tokens"])
    errs = [f for f in doc["findings"] if f["severity"] == "error"]
    missing = [f for f in errs if f["id"] == "plan-missing-kernel"]
    assert missing, doc["findings"]
    assert "install-kernels" in missing[0]["fix"] and "0.6.18" in missing[0]["fix"]
    for f in doc["findings"]:
        assert set(f) >= {"id", "severity", "title", "fix", "refs"}
    compat = {row["version"]: row for row in doc["flashinfer_compat"]}
    assert compat[FI_OLD]["served"] is False and [64, 192] in compat[FI_OLD]["decode_missing"]
    assert compat["0.6.18"]["served"] is True


def test_0618_serves_draft_with_decode(site) -> None:
    code, doc, out = doctor("--site-packages", str(site(FI_0618, "0.5.19")), "--tp", "2",
                            "--gamma", "5", "--json")
    assert all(c["path"] == "decode" for c in decode_sized(draft_calls(doc))), out
    assert not [f for f in doc["findings"] if f["id"] == "plan-missing-kernel"]
    assert code == 0 and doc["verdict"] == "healthy", doc["findings"]


@pytest.mark.parametrize("fi", [FI_070, FI_072])
def test_07x_is_an_envelope(site, fi: str) -> None:
    _, doc, out = doctor("--site-packages", str(site(fi, "0.5.23")), "--tp", "4", "--json")
    d = doc["flashinfer"]["dsv4_decode"]
    assert d["kind"] == "envelope" and d["any_topk"] is True, out
    assert all(c["supported"] for c in doc["plan"]["calls"] if c["phase"] != "prefill")


def test_07_0_with_sglang_0523_flags_the_iteration_crash(site) -> None:
    # attention TP 4: SGLang walks FlashInfer's decode table (at TP 1 it never does)
    _, doc, _ = doctor("--site-packages", str(site(FI_070, "0.5.23")), "--tp", "4", "--json")
    assert "sglang-iterates-envelope" in {f["id"] for f in doc["findings"]}


def test_what_if_upgrade(site) -> None:
    code, doc, out = doctor("--site-packages", str(site(FI_OLD, "0.5.17")), "--tp", "2",
                            "--flashinfer-version", FI_0618, "--json")
    assert doc["flashinfer"]["dsv4_decode"]["source"] == "known-version", out
    assert all(c["path"] == "decode" for c in decode_sized(draft_calls(doc)))
    assert code == 0
    assert "flashinfer-off-sglang-pin" in {f["id"] for f in doc["findings"]}


def test_no_flashinfer_and_no_what_if_is_no_verdict(tmp_path: Path, wheels) -> None:
    sp = wheels.site_packages(tmp_path / "sp", [("sglang", "0.5.19")])
    code, doc, out = doctor("--site-packages", str(sp), "--json")
    assert code == 2 and doc["verdict"] == "unknown", out


def test_from_cmdline_seed_000(site) -> None:
    line = ("sglang serve --model-path /models/DeepSeek-V4-Flash-0731 --tp-size 4 "
            "--kv-cache-dtype fp8_e4m3 --max-running-requests 10 --cuda-graph-max-bs-decode 10 "
            "--speculative-algorithm DSPARK --speculative-dspark-block-size 5")
    code, doc, out = doctor("--site-packages", str(site(FI_OLD, "0.5.17")), "--from-cmdline",
                            line, "--json")
    assert code == 1, out
    (draft,) = [c for c in draft_calls(doc) if c["topk"] == 192 and c["regime"] == "decode-sized"]
    assert 50 in draft["num_tokens"] and draft["path"] == "assert"


def test_human_report_has_sections(site) -> None:
    code, _, out = doctor("--site-packages", str(site(FI_OLD, "0.5.17")), "--tp", "2")
    assert code == 1
    for needle in ("Packages", "DSV4 decode kernels", "Plan", "plan-missing-kernel",
                   "verdict: problems", "fix:"):
        assert needle in out, needle


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--site-packages", "/nonexistent/site"), "/nonexistent/site"),
        (("--model", "/nonexistent/config.json"), "/nonexistent/config.json"),
        (("--gamma", "0"), "gamma"),
        (("--tp", "3"), "tp"),
        (("--from-cmdline", "sglang serve --tp-size 'four"), "launch line"),
        (("--python", "/nonexistent/python"), "/nonexistent/python"),
        (("--flashinfer-version", "9.9.9"), "9.9.9"),
        (("--model", "/tmp/[/a]/config.json"), "[/a]"),  # rich markup in a message
        # click's own usage errors: one line and the JSON document too (not click's box)
        (("--tp", "abc"), "'--tp'"),
        (("--no-such-option",), "--no-such-option"),
        (("--gamma", "1.5"), "'--gamma'"),
        # a typo's extra zeros: refused at once, not minutes of planning
        (("--cuda-graph-max-bs", "100000000", "--max-running-requests", "100000000"),
         "batch size 100000000"),
        (("--from-cmdline", "sglang serve --tp 4 --cuda-graph-config "
                            "'{\"decode\": {\"max_bs\": 1e400}}'"), "cuda-graph-config"),
    ],
)
def test_bad_input_is_one_clear_line(args: tuple[str, ...], needle: str, tmp_path: Path) -> None:
    code, doc, out = doctor(*args, "--json")
    assert code == 2, out
    assert "Traceback" not in out
    assert len([ln for ln in out.splitlines() if ln.startswith("error:")]) == 1, out
    assert needle.lower() in out.lower()
    # --json: the reason also reaches stdout as a document, not an empty stream
    assert doc is not None, out
    assert doc["schema_version"] == 1 and doc["command"] == "doctor"
    assert doc["verdict"] == "unknown" and needle.lower() in doc["error"].lower()


def test_usage_error_json_document_only_under_json() -> None:
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--python", "/nonexistent/python"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stdout == "" and "/nonexistent/python" in res.stderr
    code, doc, out = doctor("--python", "/nonexistent/python", "--json")
    assert code == 2 and doc is not None and doc["verdict"] == "unknown", out
    assert doc["findings"] == [] and "/nonexistent/python" in doc["error"]


def test_malformed_config_json(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text("{ not json")
    code, _, out = doctor("--model", str(cfg))
    assert code == 2 and "Traceback" not in out and "config.json" in out


def test_default_path_imports_neither_torch_nor_flashinfer(site) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['dsparkctl', 'doctor', '--json', '--site-packages', {str(site(FI_OLD, '0.5.17'))!r}]\n"
        "try:\n    runpy.run_module('dsparkctl', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'flashinfer') if m in sys.modules]\n"
        "sys.stderr.write('IMPORTED:' + ','.join(bad))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "IMPORTED:" in res.stderr
    assert res.stderr.rsplit("IMPORTED:", 1)[1].strip() == ""
    # and the default target (this interpreter, which has torch installed) too
    res = subprocess.run([sys.executable, "-c", code.replace(
        f", '--site-packages', {str(site(FI_OLD, '0.5.17'))!r}", "")],
        capture_output=True, text=True, timeout=120)
    assert res.stderr.rsplit("IMPORTED:", 1)[1].strip() == ""


def test_what_if_sglang_version_is_judged_too() -> None:
    code, doc, out = doctor("--sglang-version", "0.5.23", "--flashinfer-version", FI_070, "--tp",
                            "4", "--json")
    assert code == 1, out
    assert "sglang-iterates-envelope" in {f["id"] for f in doc["findings"]}
    code, doc, _ = doctor("--sglang-version", "0.5.15", "--flashinfer-version", FI_0618, "--json")
    assert "sglang-no-dspark" in {f["id"] for f in doc["findings"]} and code == 1


def test_unrecognised_launch_line_error_quotes_no_secret() -> None:
    """The error quotes the line's first words, which get pasted into issues: never an
    assignment's value or a secret flag's value."""
    for line, secret in (("HF_TOKEN=hf_SECRETabc foo bar", "hf_SECRETabc"),
                         ("sglang_router.launch --api-key SECRETKEY123", "SECRETKEY123"),
                         ("sglang_router.launch --api-key=SECRETKEY123", "SECRETKEY123")):
        code, doc, out = doctor("--from-cmdline", line, "--json")
        assert code == 2 and "not an SGLang launch" in doc["error"], out
        assert secret not in out


def test_launch_behind_sudo_and_numactl_is_read_with_its_env() -> None:
    line = ("sudo -E -u svc SGLANG_SM120_FLASHMLA_BACKEND=triton numactl -N 0 python3 -m "
            "sglang.launch_server --model-path /m --tp 4")
    code, doc, out = doctor("--from-cmdline", line, "--flashinfer-version", FI_OLD,
                            "--sglang-version", "0.5.17", "--json")
    assert code == 0 and doc is not None and doc["plan"]["tp"] == 4, out
    ids = {f["id"] for f in doc["findings"]}
    assert "triton-backend-prefill-abort" in ids and "plan-missing-kernel" not in ids, ids


@pytest.mark.parametrize("off", ["NONE", "off"])
def test_speculative_algorithm_none_plans_plain_decode(off: str) -> None:
    code, doc, out = doctor("--speculative-algorithm", off, "--flashinfer-version", FI_0618,
                            "--sglang-version", "0.5.23", "--tp", "4", "--json")
    assert code == 0 and doc is not None, out
    assert doc["plan"]["gamma"] is None and not doc["plan"]["speculative"]
    phases = {c["phase"] for c in doc["plan"]["calls"]}
    assert "decode" in phases and not phases & {"verify", "draft"}, phases


def test_env_means_the_same_in_the_shell_and_on_the_launch_line() -> None:
    """The planner and the pitfall rules read one environment: this shell's, then what the
    launch line sets. Before, a variable counted for one of them only."""
    base = ("--flashinfer-version", FI_0618, "--sglang-version", "0.5.23", "--json")
    var = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    _, on_line, _ = doctor("--from-cmdline", f"{var} sglang serve --model-path /m --tp 4", *base)
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--from-cmdline",
                          "sglang serve --model-path /m --tp 4", *base], capture_output=True,
                         text=True, timeout=120, env={**os.environ, **dict([var.split("=", 1)])})
    in_shell = json.loads(res.stdout)
    for doc in (on_line, in_shell):
        assert "expandable-segments-breaks-capture" in {f["id"] for f in doc["findings"]}
    triton = {**os.environ, "SGLANG_SM120_FLASHMLA_BACKEND": "triton"}
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--flashinfer-version",
                          FI_OLD, "--sglang-version", "0.5.17", "--tp", "4", "--json"],
                         capture_output=True, text=True, timeout=120, env=triton)
    ids = {f["id"] for f in json.loads(res.stdout)["findings"]}
    assert "triton-backend-prefill-abort" in ids and "plan-missing-kernel" not in ids, ids


def test_legacy_cuda_graph_flag_is_an_error_from_sglang_0_5_20() -> None:
    line = "sglang serve --tp 4 --speculative-algorithm DSPARK --cuda-graph-max-bs 10"
    code, doc, out = doctor("--from-cmdline", line, "--flashinfer-version", FI_0618,
                            "--sglang-version", "0.5.23", "--json")
    [f] = [f for f in doc["findings"] if f["id"] == "launch-legacy-flag"]
    assert code == 1 and f["severity"] == "error" and "--cuda-graph-max-bs-decode" in f["fix"]
    code, doc, out = doctor("--from-cmdline", line, "--flashinfer-version", FI_0618,
                            "--sglang-version", "0.5.19", "--json")
    assert "launch-legacy-flag" not in {f["id"] for f in doc["findings"]}, out


def test_what_if_a_release_without_sm120_kernels() -> None:
    """0.6.13 is in the release table (no SM120 sparse MLA): a verdict, not an unknown version."""
    code, doc, out = doctor("--flashinfer-version", "0.6.13", "--tp", "4", "--json")
    assert code == 1, out
    ids = {f["id"] for f in doc["findings"] if f["severity"] == "error"}
    assert "flashinfer-no-sm120-sparse-mla" in ids and "plan-missing-kernel" in ids, ids


def test_sglang_pin_read_where_sglang_is_imported_from(site, tmp_path: Path) -> None:
    """Packages on PYTHONPATH are not in a site dir; the pin is read where sglang imports from."""
    tree = site(FI_0618, "0.5.17")  # SGLang 0.5.17 pins flashinfer 0.6.15.post1
    env = {**os.environ, "PYTHONPATH": str(tree)}
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--python", sys.executable,
                          "--tp", "4", "--json"], capture_output=True, text=True, timeout=120,
                         env=env)
    doc = json.loads(res.stdout)
    assert "flashinfer-off-sglang-pin" in {f["id"] for f in doc["findings"]}, res.stdout[-2000:]


def test_ascii_only_output_is_a_report_not_a_traceback() -> None:
    """PYTHONIOENCODING=ascii (or an ASCII terminal): the report's check marks become '?'."""
    res = subprocess.run([sys.executable, "-m", "dsparkctl", "doctor", "--flashinfer-version",
                          FI_OLD, "--tp", "4"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "plan-missing-kernel" in res.stdout


@pytest.mark.parametrize(("line", "expected"), [
    # attn_tp = 8 / 4 = 2 under DP attention: the DSpark worker raises (attn_tp must be 1)
    ("--tp 8 --dp-size 4 --enable-dp-attention --enable-dp-lm-head", {
        "launch-dspark-dp-attention-attn-tp"}),
    # DP attention without --enable-dp-lm-head: speculative_hook raises
    ("--tp 8 --dp 8 --enable-dp-attention", {"launch-dspark-dp-lm-head"}),
    # the checkpoint's gamma is 5: the verify width must be 6
    ("--tp 4 --speculative-num-draft-tokens 4", {"launch-dspark-num-draft-tokens"}),
    ("--tp 8 --dp 8 --enable-dp-attention --enable-dp-lm-head", set()),
    ("--tp 4 --speculative-num-draft-tokens 6", set()),
])
def test_what_sglang_refuses_at_start_up_is_an_error(line: str, expected: set[str]) -> None:
    code, doc, out = doctor("--from-cmdline", "python -m sglang.launch_server --model-path /m "
                            f"--speculative-algorithm DSPARK {line}", "--sglang-version", "0.5.23",
                            "--flashinfer-version", "0.7.2", "--json")
    ids = {f["id"] for f in doc["findings"] if f["id"].startswith("launch-dspark")}
    assert ids == expected, out[-3000:]
    assert (code == 1) == bool(expected)


def test_what_if_skips_a_release_that_crashes_with_this_sglang() -> None:
    """FlashInfer 0.7.0 serves every shape, but SGLang 0.5.20-0.5.23 iterates its decode table
    (attn_tp > 1) and raises: the table says no, and the upgrade offered is not 0.7.0."""
    _, doc, _ = doctor("--sglang-version", "0.5.23", "--flashinfer-version", FI_OLD, "--tp", "4",
                       "--gamma", "5", "--cuda-graph-max-bs", "8", "--json")
    rows = {r["version"]: r for r in doc["flashinfer_compat"]}
    assert rows["0.7.0"]["served"] is False
    assert rows["0.7.0"]["blocked_by"] == ["sglang-iterates-envelope"]
    assert rows["0.7.1"]["served"] is True and "blocked_by" not in rows["0.7.1"]
    # at attention TP 1 SGLang never walks the table: no crash, no error
    code, doc, _ = doctor("--sglang-version", "0.5.23", "--flashinfer-version", "0.7.0", "--tp",
                          "1", "--gamma", "5", "--cuda-graph-max-bs", "8", "--json")
    assert "sglang-iterates-envelope" not in {f["id"] for f in doc["findings"]}
    assert code == 0


def test_on_sm12x_the_upgrade_offered_skips_0618(site, monkeypatch) -> None:
    """On an SM120 box FlashInfer 0.6.18 serves every DSpark shape yet corrupts every prompt over
    64 tokens (dual-cache prefill, flashinfer #5095): the plan-missing-kernel fix must not offer
    it, and the what-if table says why."""
    from dsparkctl import doctor as doctor_mod
    from dsparkctl import gpus

    sm120 = gpus.GpuReport(gpus=[gpus.GpuInfo(0, "NVIDIA RTX PRO 6000 Blackwell", "12.0",
                                              96 << 30, "580.0")])
    monkeypatch.setattr(gpus, "probe_gpus", lambda: sm120)
    report = doctor_mod.run_doctor(doctor_mod.DoctorOptions(
        site_packages=site("0.6.15.post1", "0.5.17"), tp=2, gamma=5, environ={}))
    rows = {r["version"]: r for r in report.compat}
    assert rows["0.6.18"]["blocked_by"] == ["flashinfer-0618-dual-prefill-corruption"]
    assert rows["0.6.18"]["served"] is False and rows["0.7.0"]["served"] is True
    [missing] = [f for f in report.findings if f.id == "plan-missing-kernel"]
    assert "flashinfer-python==0.7.0" in missing.fix and "0.6.18" not in missing.fix
