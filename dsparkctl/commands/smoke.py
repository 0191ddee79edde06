"""The ``smoke`` command: prove a deployment works, at kernel level and/or against a server.

Two independent halves, each run where it can:

- server level (``--endpoint URL``): long greedy generations against a
  running SGLang server (``dsparkctl.endpoint_smoke``); runs on any machine,
  GPU or not, since the server is elsewhere;
- kernel level (a CUDA GPU here): capture, numerics and verify-path checks of
  the sparse-MLA kernels, provided by ``dsparkctl.kernel_smoke``.

Kernel-level hook contract. ``dsparkctl/kernel_smoke.py`` exposes::

    def run_kernel_checks(*, kernel: str | None, long: bool,
                          show_progress: bool) -> KernelChecks

``kernel`` is ``"flashinfer"``, ``"bundled"``, ``"both"`` or ``None`` (the
kernel the serving stack will actually use). The result needs ``findings``
(a list of ``dsparkctl.findings.Finding``), and may have ``judged`` (bool,
default True: False when the checks could not reach a verdict) and
``section`` (a JSON-able dict, reported under ``"kernel"``). A plain list of
findings, or ``(findings, data)`` with ``data["ran"]``, is accepted too. A
hook whose signature has a ``plan`` parameter gets the deployment plan from
``run_smoke(plan_factory=...)`` (the doctor's planner; wired by the lead).
The hook may raise ``UsageError`` for bad input and ``NoVerdictError`` when
it cannot judge. Until the module exists the command says so in an INFO
finding and does not fail.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from dsparkctl.commands import plan_options as po
from dsparkctl.errors import NoVerdictError, UsageError
from dsparkctl.findings import EXIT_CODES, Finding, Severity, envelope
from dsparkctl.output import console, emit_json, err_console, fail_usage
from dsparkctl.report import render_findings

KERNEL_CHOICES = ("flashinfer", "bundled", "both")
DEFAULT_LONG_TOKENS = 1000
DEFAULT_SHORT_TOKENS = 256
KERNEL_MODULE = "dsparkctl.kernel_smoke"


def gpu_presence() -> tuple[bool, str]:
    """(a CUDA GPU is here, how we know). NVML only: no CUDA context, no torch import."""
    from dsparkctl.gpus import probe_gpus

    report = probe_gpus()
    if report.gpus:
        names = ", ".join(sorted({g.name or "?" for g in report.gpus}))
        return True, f"{len(report.gpus)} GPU(s): {names}"
    return False, report.note or "NVML reports no GPU"


def load_kernel_hook() -> Callable[..., Any] | None:
    """``run_kernel_checks`` from ``dsparkctl.kernel_smoke``, or None until that module exists."""
    if importlib.util.find_spec(KERNEL_MODULE) is None:
        return None
    module = importlib.import_module(KERNEL_MODULE)
    return getattr(module, "run_kernel_checks", None)


def normalize_kernel_result(result: Any) -> tuple[list[Finding], bool, dict[str, Any]]:
    """Accept the hook's answer in the forms the contract allows.

    ``(findings, data)`` is accepted too (``data["ran"] is False`` means no verdict).
    """
    if (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)
            and isinstance(result[0], list)
            and all(isinstance(f, Finding) for f in result[0])):
        data = dict(result[1])
        return list(result[0]), bool(data.get("ran", True)), data
    if isinstance(result, (list, tuple)) and all(isinstance(f, Finding) for f in result):
        return list(result), True, {}
    findings = getattr(result, "findings", None)
    if findings is None and isinstance(result, dict):
        findings = result.get("findings")
    if findings is None or not all(isinstance(f, Finding) for f in findings):
        raise TypeError(f"{KERNEL_MODULE}.run_kernel_checks returned {type(result).__name__}; "
                        f"expected an object with .findings (list of Finding)")
    get = result.get if isinstance(result, dict) else lambda k, d=None: getattr(result, k, d)
    return list(findings), bool(get("judged", True)), dict(get("section", {}) or {})


def call_kernel_hook(hook: Callable[..., Any], *, kernel: str | None, long: bool,
                     show_progress: bool, plan_factory: Callable[[], Any] | None,
                     routed: Callable[..., bool] | None = None) -> Any:
    """Call the hook with the arguments its signature asks for.

    The contract is keyword-only ``kernel``, ``long``, ``show_progress``. A hook
    that also wants the deployment ``plan`` (the doctor's planner output) gets
    it from ``plan_factory``; ``progress`` (a rich Progress) is passed as None
    so the hook draws its own or none.
    """
    params = inspect.signature(hook).parameters
    any_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def takes(name: str) -> bool:
        return any_kw or name in params

    kwargs: dict[str, Any] = {}
    if takes("kernel") and (kernel is not None or any_kw
                            or params["kernel"].default is inspect.Parameter.empty):
        kwargs["kernel"] = kernel  # None: the hook's own default (what the stack uses)
    if takes("long"):
        kwargs["long"] = long
    if routed is not None and takes("routed"):
        kwargs["routed"] = routed
    if takes("show_progress"):
        kwargs["show_progress"] = show_progress
    elif "progress" in params:
        kwargs["progress"] = None
    if "plan" in params:
        if plan_factory is None:
            raise NoVerdictError("the kernel-level checks need the deployment plan, and this "
                                 "command does not build one yet")
        return hook(plan_factory(), **kwargs)
    return hook(**kwargs)


def run_kernel_level(*, kernel: str | None, long: bool, show_progress: bool,
                     gpu: tuple[bool, str], plan_factory: Callable[[], Any] | None = None,
                     routed: Callable[..., bool] | None = None,
                     ) -> tuple[list[Finding], bool | None, dict[str, Any]]:
    """Kernel-level checks when possible. ``judged`` is None when they did not run."""
    has_gpu, why = gpu
    if not has_gpu:
        return [Finding(
            id="smoke-kernel-skipped", severity=Severity.INFO,
            title="kernel-level checks skipped: no CUDA GPU on this machine",
            detail=why,
            fix="Run `dsparkctl smoke` on a GPU host of the deployment for capture, numerics "
                "and verify-path checks of the sparse-MLA kernels.")], None, {"ran": False,
                                                                              "reason": why}
    hook = load_kernel_hook()
    if hook is None:
        return [Finding(
            id="smoke-kernel-unavailable", severity=Severity.INFO,
            title="kernel-level checks are not available in this dsparkctl yet",
            detail=f"{KERNEL_MODULE} is not installed; only server-level checks ran",
        )], None, {"ran": False, "reason": "not available"}
    try:
        result = call_kernel_hook(hook, kernel=kernel, long=long, show_progress=show_progress,
                                  plan_factory=plan_factory, routed=routed)
    except NoVerdictError as exc:
        return [Finding(id="smoke-kernel-no-verdict", severity=Severity.WARNING,
                        title=f"kernel-level checks could not judge: {exc}")], False, {
            "ran": False, "reason": str(exc)}
    findings, judged, section = normalize_kernel_result(result)
    return findings, judged, {"ran": True, **section}


def smoke(
    long: bool = typer.Option(False, "--long", help="Long generations (>= 1000 tokens) that "
                              "catch the corruption short tests miss."),
    endpoint: str | None = typer.Option(None, "--endpoint", help="A running SGLang server, "
                                        "e.g. http://10.0.0.5:30000: run server-level checks."),
    baseline: str | None = typer.Option(None, "--baseline", help="A spec-off server of the "
                                        "same model: compare token for token."),
    baseline_file: Path | None = typer.Option(None, "--baseline-file", help="Compare with "
                                              "outputs saved by --save-baseline."),
    save_baseline: Path | None = typer.Option(None, "--save-baseline", help="Save this run's "
                                              "outputs as a baseline (JSON)."),
    prompts: Path | None = typer.Option(None, "--prompts", help="Your prompts instead of the "
                                        "built-in set: JSONL or plain text, one per line."),
    max_new_tokens: int | None = typer.Option(
        None, "--max-new-tokens", help=f"Tokens per generation (default {DEFAULT_LONG_TOKENS} "
        f"with --long, {DEFAULT_SHORT_TOKENS} without)."),
    concurrency: int = typer.Option(4, "--concurrency", help="Parallel requests."),
    min_accept_length: float = typer.Option(
        2.0, "--min-accept-length", help="Floor for the speculative acceptance length "
        "(tokens per verify); 0 disables."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds a request may wait for "
                                  "an answer."),
    retries: int = typer.Option(2, "--retries", help="Retries on connection errors / 5xx."),
    strict_baseline: bool = typer.Option(False, "--strict-baseline", help="Any divergence "
                                         "from the baseline is an error (batch-invariant "
                                         "servers)."),
    api_key: str | None = typer.Option(None, "--api-key", envvar="DSPARKCTL_SGLANG_API_KEY",
                                       help="Bearer key if the server runs with --api-key.",
                                       show_default=False),
    kernel: str | None = typer.Option(None, "--kernel", help="Kernel-level checks: flashinfer, "
                                      "bundled or both (default: what the stack uses)."),
    python: str | None = po.PYTHON,
    site_packages: Path | None = po.SITE_PACKAGES,
    model: str | None = po.MODEL,
    from_cmdline: str | None = po.FROM_CMDLINE,
    tp: int | None = po.TP,
    dp: int | None = po.DP,
    enable_dp_attention: bool | None = po.DP_ATTENTION,
    gamma: int | None = po.GAMMA,
    speculative_algorithm: str | None = po.SPECULATIVE,
    cuda_graph_max_bs: int | None = po.CUDA_GRAPH_MAX_BS,
    max_running_requests: int | None = po.MAX_RUNNING,
    disable_cuda_graph_padding: bool | None = po.NO_PADDING,
    sglang_version: str | None = po.SGLANG_VERSION,
    cluster: bool = typer.Option(False, "--cluster", help="Run on every rank under "
                                 "torchrun/srun (each on its own GPU); rank 0 aggregates."),
    cluster_timeout: float = typer.Option(600.0, "--cluster-timeout", help="Cluster mode: "
                                          "seconds rank 0 waits for each rank's report."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Prove a deployment works: kernel checks on a GPU host, long greedy generations against
    a server (--endpoint). Exit 0 healthy, 1 problems, 2 no verdict / bad usage."""
    plan_opts = po.doctor_options(
        python=python, site_packages=site_packages, model=model, from_cmdline=from_cmdline,
        tp=tp, dp=dp, enable_dp_attention=enable_dp_attention, gamma=gamma,
        speculative_algorithm=speculative_algorithm, cuda_graph_max_bs=cuda_graph_max_bs,
        max_running_requests=max_running_requests,
        disable_cuda_graph_padding=disable_cuda_graph_padding, sglang_version=sglang_version,
        flashinfer_version=None)

    state: dict[str, Any] = {}

    def plan_factory() -> Any:
        from dsparkctl.doctor import run_doctor

        report = run_doctor(plan_opts)
        state["routed"] = report.routed  # dsparkctl's router's own rule, or None
        return report.plan

    def routed(heads: int, topk: int, num_tokens: int = 1, extra_topk: int = 0,
               extra_page_size: int = 64) -> bool:
        rule = state.get("routed")
        return bool(rule and rule(heads, topk, num_tokens, extra_topk, extra_page_size))

    def run(show_progress: bool) -> dict[str, Any]:
        return run_smoke(long=long, endpoint=endpoint, baseline=baseline,
                         baseline_file=baseline_file, save_baseline=save_baseline,
                         prompts=prompts, max_new_tokens=max_new_tokens,
                         concurrency=concurrency, min_accept_length=min_accept_length,
                         timeout=timeout, retries=retries, strict_baseline=strict_baseline,
                         api_key=api_key, kernel=kernel, show_progress=show_progress,
                         plan_factory=plan_factory, routed=routed)

    try:
        if cluster:
            from dsparkctl.commands.cluster_mode import run_cluster_command

            run_cluster_command(lambda _de: _with_identity(run(False)), command="smoke", tp=tp,
                                timeout=cluster_timeout, as_json=as_json, collectives=False)
        doc = run(not as_json)
    except UsageError as exc:
        fail_usage(str(exc))
    if doc.get("no_target"):
        doc.pop("no_target")
        if not as_json:
            fail_usage(doc["findings"][0]["title"] + ". " + doc["findings"][0]["fix"])
    if as_json:
        emit_json(doc)
    else:
        render_smoke(doc)
    raise typer.Exit(EXIT_CODES[doc["verdict"]])


def _with_identity(doc: dict[str, Any]) -> dict[str, Any]:
    """A rank's smoke report also says which GPU and packages it ran on, so the cluster
    merge can show them and find skew (static reads, milliseconds)."""
    from dsparkctl import gpus, probe

    report = gpus.probe_gpus()
    doc.setdefault("gpus", [g.to_json() for g in report.gpus])
    doc.setdefault("gpu_topology", report.to_json())
    doc.setdefault("packages", dict(probe.probe_current().packages))
    return doc


MAX_TIMEOUT_S = 86400.0  # a day: anything longer is a typo, and inf cannot be a deadline


def check_writable_file(path: Path, flag: str) -> None:
    """Refuse before a run what would fail after it (a long smoke is ~20 minutes of
    generations): a folder, a missing folder, a folder this user cannot write."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; give a file name, e.g. {path / 'baseline.json'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: folder {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {path}: folder {parent} is not writable for this user")


def run_smoke(*, long: bool, endpoint: str | None, baseline: str | None,
              baseline_file: Path | None, save_baseline: Path | None, prompts: Path | None,
              max_new_tokens: int | None, concurrency: int, min_accept_length: float,
              timeout: float, retries: int, strict_baseline: bool, api_key: str | None,
              kernel: str | None, show_progress: bool,
              gpu: Callable[[], tuple[bool, str]] | None = None,
              plan_factory: Callable[[], Any] | None = None,
              routed: Callable[..., bool] | None = None) -> dict[str, Any]:
    """Everything but printing: validate, run what can run here, build the envelope."""
    if kernel is not None and kernel not in KERNEL_CHOICES:
        raise UsageError(f"--kernel {kernel!r}: choose one of {', '.join(KERNEL_CHOICES)}")
    if baseline and baseline_file:
        raise UsageError("--baseline and --baseline-file are alternatives; give one")
    if endpoint is None:
        needs = [n for n, v in (("--baseline", baseline), ("--baseline-file", baseline_file),
                                ("--save-baseline", save_baseline), ("--prompts", prompts))
                 if v is not None]
        if needs:
            raise UsageError(f"{', '.join(needs)} compare(s) server outputs; add --endpoint URL")
    if max_new_tokens is not None and max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    if concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {concurrency}")
    # not (x > 0) also refuses NaN, which every comparison lets through
    if not (0 < timeout <= MAX_TIMEOUT_S):
        raise UsageError(f"--timeout must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, got "
                         f"{timeout:g}")
    if retries < 0 or retries > 10:
        raise UsageError(f"--retries must be between 0 and 10, got {retries}")
    if not (0 <= min_accept_length < math.inf):
        raise UsageError(f"--min-accept-length must be a number >= 0, got {min_accept_length:g}")
    if save_baseline is not None:
        check_writable_file(save_baseline, "--save-baseline")

    findings: list[Finding] = []
    sections: dict[str, Any] = {}
    judged_parts: list[bool] = []

    # Parse everything the user gave before any request goes out.
    ep_opts = None
    if endpoint is not None:
        from dsparkctl.endpoint_smoke import EndpointSmokeOptions, load_baseline
        from dsparkctl.prompts import builtin_prompts, load_prompt_file
        from dsparkctl.sglang_client import parse_endpoint

        parse_endpoint(endpoint)
        if baseline:
            parse_endpoint(baseline)
        if baseline_file is not None:
            load_baseline(baseline_file)
        prompt_set = load_prompt_file(prompts) if prompts else builtin_prompts()
        ep_opts = EndpointSmokeOptions(
            endpoint=endpoint, prompts=prompt_set,
            max_new_tokens=max_new_tokens or (DEFAULT_LONG_TOKENS if long
                                              else DEFAULT_SHORT_TOKENS),
            concurrency=concurrency, timeout_s=timeout, retries=retries,
            min_accept_length=min_accept_length or None, baseline_url=baseline,
            baseline_file=baseline_file, save_baseline=save_baseline,
            strict_baseline=strict_baseline, api_key=api_key, show_progress=show_progress)

    gpu_state = (gpu or gpu_presence)()
    if endpoint is None and not gpu_state[0]:
        f = Finding(
            id="smoke-no-gpu", severity=Severity.WARNING,
            title=f"nothing to check here: no CUDA GPU for kernel-level checks ({gpu_state[1]}) "
                  f"and no --endpoint for server-level checks",
            fix="Run `dsparkctl smoke` on a GPU host of the deployment, or point it at a "
                "running server with `dsparkctl smoke --long --endpoint http://HOST:PORT`.")
        doc = envelope("smoke", [f], judged=False, kernel={"ran": False, "reason": gpu_state[1]})
        doc["no_target"] = True
        return doc

    k_findings, k_judged, k_section = run_kernel_level(kernel=kernel, long=long,
                                                       show_progress=show_progress, gpu=gpu_state,
                                                       plan_factory=plan_factory, routed=routed)
    findings += k_findings
    sections["kernel"] = k_section
    if k_judged is not None:
        judged_parts.append(k_judged)

    if ep_opts is not None:
        from dsparkctl.endpoint_smoke import run_endpoint_smoke

        res = run_endpoint_smoke(ep_opts)
        findings += res.findings
        sections["endpoint"] = res.section
        judged_parts.append(res.judged)

    if not judged_parts and not any(f.severity is Severity.ERROR for f in findings):
        findings.append(Finding(
            id="smoke-nothing-checked", severity=Severity.WARNING,
            title="no check could run here, so there is no verdict",
            fix="Give --endpoint URL for server-level checks."))
    judged = bool(judged_parts) and all(judged_parts)
    return envelope("smoke", findings, judged=judged, **sections)


# ------------------------------------------------------------------ rendering


def render_smoke(doc: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text


    ep = doc.get("endpoint")
    if ep and ep.get("results"):
        t = Table(title=f"Server {ep['url']}: {ep['max_new_tokens']} greedy tokens per prompt, "
                  f"concurrency {ep['concurrency']}")
        for col in ("prompt", "tokens", "time s", "tok/s", "accept", "status"):
            t.add_column(col, justify="right" if col in ("tokens", "time s", "tok/s", "accept")
                         else "left")
        for r in ep["results"]:
            if not r["ok"]:
                t.add_row(r["id"], "-", "-", "-", "-",
                          Text(f"failed: {r['error']['kind']}", style="bold red"))
                continue
            strong = [i for i in r["issues"] if i["strong"]]
            weak = [i for i in r["issues"] if not i["strong"]]
            div = r.get("divergence")
            if strong:
                first = min(strong, key=lambda i: i["char_offset"])
                status = Text(f"{first['kind']} @ char {first['char_offset']}", style="bold red")
            elif weak:
                status = Text(f"{weak[0]['kind']} (weak)", style="yellow")
            elif div:
                at = div["token_index"] if div["token_index"] is not None else div["char_index"]
                status = Text(f"diverges @ {at}", style="yellow")
            else:
                status = Text("ok", style="green")
            acc = r.get("spec_accept_length")
            t.add_row(r["id"], str(r.get("completion_tokens") or "-"), f"{r['elapsed_s']:.1f}",
                      str(r.get("tokens_per_s") or "-"), f"{acc:.2f}" if acc else "-", status)
        console.print(t)
        acc = ep.get("accept_length", {})
        if acc.get("value") is not None:
            console.print(f"acceptance length {acc['value']:.2f} ({acc['source']}); "
                          f"floor {acc.get('floor') or 'off'}")
        if ep.get("baseline"):
            b = ep["baseline"]
            console.print(f"baseline {b['source']}: {b['compared']} compared, "
                          f"{b['diverged']} diverged")
    elif ep and ep.get("error"):
        err_console.print(f"[yellow]server-level checks not run:[/yellow] {escape(ep['error']['message'])}")

    _render_kernel(doc.get("kernel") or {})
    render_findings(doc, console)


def _render_kernel(k: dict[str, Any]) -> None:
    """Per shape: status, max error over the tolerance, graph-replay time; then the
    verify-path and long checks in one line each."""
    from rich.table import Table
    from rich.text import Text

    rows = k.get("rows") or []
    if rows:
        t = Table(title=f"Kernel checks ({', '.join(k.get('kernels') or [])}): eager and "
                  "CUDA-graph replay vs the reference")
        for col in ("kernel", "phase", "heads", "topk", "extra", "num_tokens", "status",
                    "err/tol", "replay us"):
            t.add_column(col, justify="right" if col not in ("kernel", "phase", "status")
                         else "left")
        for r in rows:
            ok = r.get("status") == "ok"
            ratio = r.get("max_err_over_tol")
            t.add_row(str(r.get("kernel")), str(r.get("phase")), str(r.get("heads")),
                      str(r.get("topk")), str(r.get("extra")), str(r.get("num_tokens")),
                      Text(str(r.get("status")), style="green" if ok else "bold red"),
                      f"{ratio:.2f}" if isinstance(ratio, float) else "-",
                      f"{r['time_us']:.1f}" if isinstance(r.get("time_us"), float) else "-")
        console.print(t)
    cons = k.get("consistency") or []
    if cons:
        bad = [c for c in cons if c.get("status") != "ok"]
        console.print(f"verify-path consistency: {len(cons) - len(bad)}/{len(cons)} ok"
                      + (f", {sum(1 for c in cons if c.get('bitwise'))} bitwise" if cons else ""),
                      markup=False)
    for item in k.get("long") or []:
        console.print(f"long simulation ({item.get('kernel')}): {item.get('steps')} steps, "
                      f"{item.get('calls')} calls, max err/tol {item.get('max_ratio', 0):.2f}, "
                      f"{'ok' if item.get('ok') else 'FAILED'}", markup=False)
    for item in k.get("tiny_model") or []:
        modes = ", ".join(f"{m.get('mode')} {m.get('tokens')} tokens"
                          + (" DIVERGED" if m.get("divergence") else "")
                          for m in item.get("modes") or [])
        console.print(f"tiny model ({item.get('kernel')}): {modes}; "
                      f"{'ok' if item.get('ok') else 'FAILED'}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("smoke")(smoke)
