"""Server-level smoke end to end: prompts, baselines, findings and the `smoke` CLI on loopback."""

from __future__ import annotations

import importlib.machinery
import json
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from toyserver import ToyConfig, ToyServer, closed_port_url, generate_tokens
from typer.testing import CliRunner

from dsparkctl.commands import smoke as smoke_cmd
from dsparkctl.endpoint_smoke import (
    baseline_to_json,
    first_divergence,
    load_baseline,
    write_baseline,
)
from dsparkctl.errors import UsageError
from dsparkctl.findings import Finding, Severity
from dsparkctl.prompts import NEEDLE_ANSWER, builtin_prompts, load_prompt_file, needle_prompt

NO_GPU = (False, "no NVML in this test")


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """test root"""

    smoke_cmd.register(app)
    return app


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[callable]:
    monkeypatch.setattr(smoke_cmd, "gpu_presence", lambda: NO_GPU)
    runner = CliRunner()
    app = make_app()

    def invoke(*args: str) -> tuple[int, dict | None, str]:
        res = runner.invoke(app, ["smoke", *args])
        doc = None
        if "--json" in args and res.stdout.strip():
            doc = json.loads(res.stdout)
        return res.exit_code, doc, res.stdout + res.stderr

    yield invoke


@pytest.fixture
def servers() -> Iterator[callable]:
    started: list[ToyServer] = []

    def start(**cfg: object) -> ToyServer:
        srv = ToyServer(ToyConfig(**cfg)).start()  # type: ignore[arg-type]
        started.append(srv)
        return srv

    yield start
    for s in started:
        s.stop()


def by_id(doc: dict, fid: str) -> list[dict]:
    return [f for f in doc["findings"] if f["id"] == fid]


# ------------------------------------------------------------------ CLI


def test_long_against_healthy_server_exits_0(cli, servers) -> None:
    srv = servers()
    t0 = time.monotonic()
    code, doc, _ = cli("--long", "--endpoint", srv.url, "--json")
    assert code == 0, doc
    assert doc["schema_version"] == 1 and doc["command"] == "smoke"
    assert doc["verdict"] == "healthy"
    ep = doc["endpoint"]
    assert ep["max_new_tokens"] == 1000
    assert len(ep["results"]) == len(builtin_prompts())
    assert all(r["ok"] and r["completion_tokens"] == 1000 and r["issues"] == []
               for r in ep["results"])
    assert ep["accept_length"]["value"] == pytest.approx(4.1, abs=0.01)
    assert {b["sampling_params"]["max_new_tokens"] for b in srv.state.bodies} == {1000}
    assert all(b["sampling_params"]["temperature"] == 0 and b["sampling_params"]["ignore_eos"]
               for b in srv.state.bodies)
    assert by_id(doc, "smoke-kernel-skipped")  # noted, not fatal
    assert time.monotonic() - t0 < 30


def test_the_the_the_after_a_paragraph_exits_1_quoting_where_it_starts(cli, servers) -> None:
    srv = servers(mode="degenerate", after=120)
    code, doc, _ = cli("--long", "--endpoint", srv.url, "--json", "--max-new-tokens", "400")
    assert code == 1 and doc["verdict"] == "problems"
    found = {f["data"]["prompt"]: f for f in by_id(doc, "smoke-degeneration")}
    assert set(found) == {p.id for p in builtin_prompts()}
    for prompt in builtin_prompts():
        f = found[prompt.id]
        assert f["severity"] == "error"
        healthy = "".join(generate_tokens(ToyConfig(), prompt.text, 120)).lstrip()
        # the loop starts right after the healthy paragraph: char and token offsets, a quote
        # (a paragraph ending in "The" joins the loop: "The the, the, ...")
        start = len(healthy) - 3 if healthy.endswith(" The") else len(healthy) + 1
        assert f["data"]["char_offset"] == start, prompt.id
        assert f["data"]["token_offset"] == 120
        assert f["data"]["quote"].lower().startswith(("the, the, the", "the the, the"))
        assert "the, the, the" in f["detail"] and f"char {start}" in f["detail"]
        assert "install-kernels --route all" in f["fix"]


def test_garbled_output_exits_1(cli, servers) -> None:
    srv = servers(mode="garbled", after=100)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "300")
    assert code == 1
    kinds = {i["kind"] for f in by_id(doc, "smoke-garble") for i in f["data"]["issues"]}
    assert {"replacement-char", "char-spray"} <= kinds


def test_unreachable_exits_2_quickly_with_a_clear_message(cli) -> None:
    url = closed_port_url()
    t0 = time.monotonic()
    code, doc, _ = cli("--long", "--endpoint", url, "--json")
    assert code == 2 and doc["verdict"] == "unknown"
    [f] = by_id(doc, "smoke-endpoint-unreachable")
    assert "connection refused" in f["detail"] and "curl" in f["fix"]
    code, _, out = cli("--long", "--endpoint", url)
    assert code == 2 and "cannot reach the server" in out
    assert time.monotonic() - t0 < 10


def test_slow_server_times_out_and_exits_2(cli, servers) -> None:
    srv = servers(mode="slow", delay_s=2.0)
    t0 = time.monotonic()
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--timeout", "0.3",
                       "--max-new-tokens", "16", "--concurrency", "8")
    assert code == 2
    assert by_id(doc, "smoke-endpoint-timeout")
    assert time.monotonic() - t0 < 10


def test_erroring_server(cli, servers) -> None:
    srv = servers(mode="erroring", fail_first=10**6)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "16",
                       "--retries", "1")
    # it answers HTTP and fails every generation with a 5xx: broken (exit 1), not unreachable
    assert code == 1 and by_id(doc, "smoke-generate-failing")
    assert by_id(doc, "smoke-generate-failing")[0]["severity"] == "error"
    assert srv.state.generate_calls == 2 * len(builtin_prompts())
    # recovers after two failures: retries absorb them
    srv2 = servers(mode="erroring", fail_first=2)
    code, doc, _ = cli("--endpoint", srv2.url, "--json", "--max-new-tokens", "16",
                       "--concurrency", "1", "--retries", "2")
    assert code == 0, doc["findings"]
    # without retries two prompts fail while the rest succeed: a flaky server is a problem
    srv3 = servers(mode="erroring", fail_first=2)
    code, doc, _ = cli("--endpoint", srv3.url, "--json", "--max-new-tokens", "16",
                       "--concurrency", "1", "--retries", "0")
    assert code == 1 and len(by_id(doc, "smoke-request-failed")) == 2


@pytest.mark.parametrize("mode", ["malformed", "wrongshape"])
def test_garbage_answers_exit_2(cli, servers, mode: str) -> None:
    srv = servers(mode=mode)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "16")
    assert code == 2 and by_id(doc, "smoke-endpoint-bad-response")


def test_concurrency_is_bounded(cli, servers) -> None:
    srv = servers(mode="slow", delay_s=0.2)
    code, _, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "16",
                     "--concurrency", "3")
    assert code == 0
    assert srv.state.max_in_flight == 3


def test_low_acceptance_is_an_error(cli, servers) -> None:
    srv = servers(accept_length=1.3)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "64")
    assert code == 1
    [f] = by_id(doc, "smoke-accept-length-low")
    assert f["data"]["accept_length"] < 2.0 and "dspark_block_size" in f["fix"]
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "64",
                       "--min-accept-length", "1.2")
    assert code == 0


def test_spec_off_server_is_noted(cli, servers) -> None:
    srv = servers(accept_length=None)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "32")
    assert code == 0 and by_id(doc, "smoke-no-spec-metrics")


def test_baseline_url_divergence(cli, servers) -> None:
    base = servers(accept_length=None)
    spec = servers(mode="diverge", after=50)
    code, doc, _ = cli("--endpoint", spec.url, "--baseline", base.url, "--json",
                       "--max-new-tokens", "120")
    assert code == 0  # a divergence alone is a warning
    divs = {f["data"]["prompt"]: f for f in by_id(doc, "smoke-divergence")}
    assert len(divs) == len(builtin_prompts())
    d = divs["btree"]
    assert d["severity"] == "warning" and d["data"]["token_index"] == 50
    assert d["data"]["basis"] == "token_ids" and d["data"]["ours"] != d["data"]["theirs"]
    assert doc["endpoint"]["baseline"]["diverged"] == len(builtin_prompts())
    code, doc, _ = cli("--endpoint", spec.url, "--baseline", base.url, "--json",
                       "--max-new-tokens", "120", "--strict-baseline")
    assert code == 1


def test_save_and_compare_baseline_file(cli, servers, tmp_path: Path) -> None:
    base = servers(accept_length=None)
    path = tmp_path / "base.json"
    code, doc, _ = cli("--endpoint", base.url, "--save-baseline", str(path), "--json",
                       "--max-new-tokens", "100")
    assert code == 0 and doc["endpoint"]["saved_baseline"]["outputs"] == len(builtin_prompts())
    saved = load_baseline(path)
    assert set(saved.entries) == {p.id for p in builtin_prompts()}
    code, doc, _ = cli("--endpoint", base.url, "--baseline-file", str(path), "--json",
                       "--max-new-tokens", "100")
    assert code == 0 and doc["endpoint"]["baseline"]["diverged"] == 0
    spec = servers(mode="degenerate", after=60)
    code, doc, _ = cli("--endpoint", spec.url, "--baseline-file", str(path), "--json",
                       "--max-new-tokens", "100")
    assert code == 1
    d = next(f for f in by_id(doc, "smoke-divergence") if f["data"]["prompt"] == "btree")
    assert d["severity"] == "error"  # diverges and degenerates
    assert d["data"]["token_index"] == 60 and d["data"]["ours"].startswith("the, the")


def test_user_prompts_file(cli, servers, tmp_path: Path) -> None:
    srv = servers()
    f = tmp_path / "p.jsonl"
    f.write_text('{"id": "mine", "text": "Tell me about bridges."}\n"Plain string prompt"\n')
    code, doc, _ = cli("--endpoint", srv.url, "--prompts", str(f), "--json",
                       "--max-new-tokens", "32")
    assert code == 0
    assert [r["id"] for r in doc["endpoint"]["results"]] == ["mine", "user-2"]


@pytest.mark.parametrize("args", [
    ["--baseline", "http://x:1"],
    ["--endpoint", "http://127.0.0.1:1", "--kernel", "cutlass"],
    ["--endpoint", "http://127.0.0.1:1", "--baseline", "http://a:1", "--baseline-file", "f"],
    ["--endpoint", "ftp://127.0.0.1:1"],
    ["--endpoint", "http://127.0.0.1:1", "--prompts", "/nonexistent/prompts.txt"],
    ["--endpoint", "http://127.0.0.1:1", "--concurrency", "0"],
])
def test_usage_errors_exit_2_before_any_request(cli, args: list[str]) -> None:
    code, _, out = cli(*args)
    assert code == 2 and "error:" in out


def test_no_endpoint_and_no_gpu_exits_2(cli) -> None:
    code, doc, _ = cli("--json")
    assert code == 2 and doc["verdict"] == "unknown" and by_id(doc, "smoke-no-gpu")
    code, _, out = cli()
    assert code == 2 and "no CUDA GPU" in out and "--endpoint" in out


# ------------------------------------------------------------ kernel hook


def test_kernel_hook_is_called_and_its_findings_count(monkeypatch, servers) -> None:
    calls: list[dict] = []

    def run_kernel_checks(**kw: object) -> object:
        calls.append(kw)
        return types.SimpleNamespace(
            findings=[Finding("smoke-kernel-mismatch", Severity.ERROR, "verify-size mismatch")],
            judged=True, section={"shapes": 3})

    mod = types.ModuleType(smoke_cmd.KERNEL_MODULE)
    mod.__spec__ = importlib.machinery.ModuleSpec(smoke_cmd.KERNEL_MODULE, None)
    mod.run_kernel_checks = run_kernel_checks  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, smoke_cmd.KERNEL_MODULE, mod)
    monkeypatch.setattr(smoke_cmd, "gpu_presence", lambda: (True, "1 GPU(s): H200"))
    res = CliRunner().invoke(make_app(), ["smoke", "--long", "--kernel", "bundled", "--json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and by_id(doc, "smoke-kernel-mismatch")
    assert [{k: v for k, v in c.items() if k != "routed"} for c in calls] == [
        {"kernel": "bundled", "long": True, "show_progress": False}]
    assert callable(calls[0]["routed"])  # the router's rule, for per-call kernel choice
    assert doc["kernel"] == {"ran": True, "shapes": 3}


def test_kernel_checks_missing_is_info_not_failure(monkeypatch, servers) -> None:
    monkeypatch.setattr(smoke_cmd, "load_kernel_hook", lambda: None)
    monkeypatch.setattr(smoke_cmd, "gpu_presence", lambda: (True, "1 GPU(s): H200"))
    srv = servers()
    res = CliRunner().invoke(make_app(), ["smoke", "--endpoint", srv.url, "--json",
                                          "--max-new-tokens", "32"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 0
    [f] = by_id(doc, "smoke-kernel-unavailable")
    assert f["severity"] == "info"
    # with nothing else to check there is no verdict
    res = CliRunner().invoke(make_app(), ["smoke", "--json"])
    assert res.exit_code == 2


# ------------------------------------------------------------ pure pieces


def test_first_divergence() -> None:
    assert first_divergence("abc", "abc", [1, 2, 3], [1, 2, 3]) is None
    assert first_divergence("abc", "abcdef", [1, 2, 3], [1, 2, 3, 4]) is None  # shorter run
    d = first_divergence("The tree splits.", "The tree joins.", [1, 2, 3], [1, 2, 4])
    assert d is not None and d.token_index == 2 and d.char_index == 9
    assert (d.before, d.ours, d.theirs, d.basis) == ("The tree ", "splits.", "joins.",
                                                     "token_ids")
    d = first_divergence("same text", "same toxt")
    assert d is not None and d.token_index is None and d.char_index == 6 and d.basis == "text"
    d = first_divergence("ab", "ab", [1, 2], [1, 3])  # same characters, other tokens
    assert d is not None and d.token_index == 1 and d.char_index is None


def test_baseline_file_errors(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    with pytest.raises(UsageError, match="no such file"):
        load_baseline(p)
    p.write_text("{not json")
    with pytest.raises(UsageError, match="not JSON"):
        load_baseline(p)
    p.write_text(json.dumps({"kind": "something-else"}))
    with pytest.raises(UsageError, match="not a dsparkctl smoke baseline"):
        load_baseline(p)
    doc = baseline_to_json([], endpoint="http://x:1", max_new_tokens=10)
    doc["outputs"] = {"a": {"text": "t", "prompt_sha256": "0" * 64, "output_ids": ["x"]}}
    p.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="list of integers"):
        load_baseline(p)
    with pytest.raises(UsageError, match="does not exist"):
        write_baseline(tmp_path / "missing" / "b.json", doc)


def test_prompt_files(tmp_path: Path) -> None:
    txt = tmp_path / "p.txt"
    txt.write_text("first prompt\n\n  second prompt  \n")
    assert [(p.id, p.text) for p in load_prompt_file(txt)] == [("user-1", "first prompt"),
                                                              ("user-2", "second prompt")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": broken}\n')
    with pytest.raises(UsageError, match=r"bad\.jsonl:2: not valid JSON"):
        load_prompt_file(bad)
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(UsageError, match="duplicate prompt id"):
        load_prompt_file(bad)
    bad.write_text('{"id": "a"}\n')
    with pytest.raises(UsageError, match="missing a non-empty"):
        load_prompt_file(bad)
    empty = tmp_path / "e.txt"
    empty.write_text("\n \n")
    with pytest.raises(UsageError, match="empty"):
        load_prompt_file(empty)
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_prompt_file(binary)
    with pytest.raises(UsageError, match="is a directory"):
        load_prompt_file(tmp_path)


def test_needle_prompt_is_long_deterministic_and_answerable() -> None:
    a, b = needle_prompt(), needle_prompt()
    assert a == b and a.kind == "needle" and a.expect == NEEDLE_ANSWER
    assert a.text.count(NEEDLE_ANSWER) == 1
    # several thousand tokens (~0.75 words per token): far past the 512-token indexer threshold
    assert len(a.text.split()) > 3000
    pos = a.text.index(NEEDLE_ANSWER) / len(a.text)
    assert 0.3 < pos < 0.9  # buried in the middle, not at either end


def test_kernel_hook_that_wants_the_plan(monkeypatch) -> None:
    """The signature kernel_smoke.run_kernel_checks has: a plan, a rich progress, a tuple back."""
    got: list[tuple] = []

    def run_kernel_checks(plan, *, kernel="bundled", long=False, progress=None, seed=0):
        got.append((plan, kernel, long, progress))
        return [Finding("smoke-kernel-ok", Severity.INFO, "all shapes match")], {"ran": True,
                                                                                "rows": []}

    monkeypatch.setattr(smoke_cmd, "load_kernel_hook", lambda: run_kernel_checks)
    kw = dict(long=True, endpoint=None, baseline=None, baseline_file=None, save_baseline=None,
              prompts=None, max_new_tokens=None, concurrency=1, min_accept_length=2.0,
              timeout=5.0, retries=0, strict_baseline=False, api_key=None, kernel=None,
              show_progress=False, gpu=lambda: (True, "H200"))
    doc = smoke_cmd.run_smoke(**kw, plan_factory=lambda: "PLAN")
    assert got == [("PLAN", "bundled", True, None)]  # kernel=None -> the hook's default
    assert doc["verdict"] == "healthy" and doc["kernel"]["ran"] is True
    # no planner wired yet: a clear "no verdict", not a crash
    doc = smoke_cmd.run_smoke(**kw)
    assert doc["verdict"] == "unknown"
    assert "deployment plan" in doc["findings"][0]["title"] or any(
        "deployment plan" in f["title"] for f in doc["findings"])


# ------------------------------------------------------------------ a user's review (session 53)


@pytest.mark.parametrize(("mode", "kind"), [("paraloop", "repetition-loop"),
                                            ("blank", "whitespace-run")])
def test_long_collapse_past_the_short_loop_scan_is_an_error(cli, servers, mode: str,
                                                            kind: str) -> None:
    """A repeated ~100-token paragraph and an answer that turns into line breaks: the classic
    long-generation collapses, invisible to a loop scan that stops at 64 tokens."""
    srv = servers(mode=mode, after=150)
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "600")
    assert code == 1, doc["findings"]
    degen = by_id(doc, "smoke-degeneration")
    assert degen and all(f["severity"] == "error" for f in degen)
    assert {i["kind"] for f in degen for i in f["data"]["issues"]} >= {kind}


@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_answer_that_trickles_is_bounded_by_the_timeout(cli, servers, mode: str) -> None:
    """A body, or the header lines, a few bytes every 0.2 s: each read is quick, the answer
    never ends; --timeout bounds the whole request."""
    srv = servers(mode=mode, delay_s=0.2)
    t0 = time.monotonic()
    code, doc, _ = cli("--endpoint", srv.url, "--json", "--timeout", "1", "--retries", "0",
                       "--max-new-tokens", "64", "--concurrency", "8")
    assert code == 2 and by_id(doc, "smoke-endpoint-timeout"), doc["findings"]
    assert time.monotonic() - t0 < 3 * 1 + 5


def test_non_finite_numbers_in_answers_read_as_missing(cli, servers) -> None:
    srv = servers(mode="nan")
    code, doc, out = cli("--endpoint", srv.url, "--json", "--max-new-tokens", "32")
    assert "Traceback" not in out and doc is not None
    assert code in (0, 1) and not by_id(doc, "smoke-endpoint-bad-response")
    json.dumps(doc, allow_nan=False)  # the report itself stays valid JSON


@pytest.mark.parametrize(("args", "needle"), [
    (("--timeout", "nan"), "--timeout"),
    (("--timeout", "inf"), "--timeout"),
    (("--min-accept-length", "nan"), "--min-accept-length"),
    (("--save-baseline", "/nonexistent/dir/b.json"), "does not exist"),
])
def test_bad_values_refused_before_any_request(cli, servers, args: tuple[str, ...],
                                               needle: str) -> None:
    srv = servers()
    code, _, out = cli("--endpoint", srv.url, *args)
    assert code == 2 and needle in out and "Traceback" not in out, out
    assert srv.state.generate_calls == 0


def test_save_baseline_into_a_folder_is_refused_first(cli, servers, tmp_path: Path) -> None:
    srv = servers()
    code, _, out = cli("--endpoint", srv.url, "--save-baseline", str(tmp_path))
    assert code == 2 and "is a folder" in out and str(tmp_path) in out
    assert srv.state.generate_calls == 0
