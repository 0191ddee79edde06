"""The ``doctor`` command: options in, report out, exit code = verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dsparkctl.errors import UsageError
from dsparkctl.findings import EXIT_CODES
from dsparkctl.output import console, emit_json, fail_usage

if TYPE_CHECKING:
    from dsparkctl.doctor import DoctorOptions


def doctor(
    python: str | None = typer.Option(None, "--python", help="Probe another interpreter "
                                      "(the serving venv's python), stdlib-only."),
    site_packages: Path | None = typer.Option(None, "--site-packages", help="Read an unpacked "
                                              "site-packages tree offline (e.g. a container image's)."),
    model: str | None = typer.Option(None, "--model", help="config.json or a snapshot folder "
                                     "holding one (default: built-in deepseek-v4-flash preset)."),
    from_cmdline: str | None = typer.Option(None, "--from-cmdline", help="The real launch line, "
                                            "e.g. \"sglang serve --model-path ... --tp-size 4\"."),
    tp: int | None = typer.Option(None, "--tp", help="Tensor parallel size."),
    dp: int | None = typer.Option(None, "--dp", help="Data parallel size."),
    enable_dp_attention: bool | None = typer.Option(None, "--enable-dp-attention/--no-dp-attention"),
    gamma: int | None = typer.Option(None, "--gamma", help="DSpark block size "
                                     "(default: the config's dspark_block_size)."),
    speculative_algorithm: str | None = typer.Option(
        None, "--speculative-algorithm", help="DSPARK (default), EAGLE, ..., or NONE."),
    cuda_graph_max_bs: int | None = typer.Option(None, "--cuda-graph-max-bs"),
    max_running_requests: int | None = typer.Option(None, "--max-running-requests"),
    disable_cuda_graph_padding: bool | None = typer.Option(None, "--disable-cuda-graph-padding"),
    sglang_version: str | None = typer.Option(None, "--sglang-version",
                                              help="Plan for this SGLang (default: installed)."),
    flashinfer_version: str | None = typer.Option(
        None, "--flashinfer-version", help="What if: judge against this published FlashInfer's table."),
    do_import: bool = typer.Option(False, "--import", help="Also import FlashInfer in the target "
                                   "interpreter and compare its runtime answer with the static reading."),
    cluster: bool = typer.Option(False, "--cluster", help="Run on every rank under torchrun/srun; "
                                 "rank 0 prints one cluster report (skew, P2P, all-reduce checks)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Cluster mode: seconds before a "
                                  "collective or a missing rank becomes a finding."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Inspect an installation, plan the kernel shapes a DSpark config needs, report what is
    missing and how to fix it. Exit 0 healthy, 1 problems, 2 no verdict / bad usage."""
    from dsparkctl.doctor import DoctorOptions, run_doctor

    spec = speculative_algorithm
    if spec is not None and spec.upper() in {"NONE", "OFF", ""}:
        spec = ""
    opts = DoctorOptions(
        python=python, site_packages=site_packages, model=model, from_cmdline=from_cmdline,
        tp=tp, dp=dp, enable_dp_attention=enable_dp_attention, gamma=gamma,
        speculative_algorithm=spec, cuda_graph_max_bs=cuda_graph_max_bs,
        max_running_requests=max_running_requests,
        disable_cuda_graph_padding=disable_cuda_graph_padding, sglang_version=sglang_version,
        flashinfer_version=flashinfer_version, do_import=do_import,
    )
    try:
        if cluster:
            _cluster(opts, timeout, as_json)
        report = run_doctor(opts)
    except UsageError as exc:
        fail_usage(str(exc))
    doc = report.to_json()
    if as_json:
        emit_json(doc)
    else:
        from dsparkctl.report import render_doctor

        render_doctor(doc, console)
    raise typer.Exit(EXIT_CODES[doc["verdict"]])


def _cluster(opts: DoctorOptions, timeout: float, as_json: bool) -> None:
    """Every rank runs doctor on itself; rank 0 merges. Exits the process (a wedged
    collective thread must not keep the tool alive)."""
    import os
    import sys

    from dsparkctl import cluster, distributed
    from dsparkctl.doctor import run_doctor

    def local(de: distributed.DistEnv) -> dict:
        return run_doctor(opts).to_json()

    _, reports, findings = distributed.run_cluster(local, tp=opts.tp, timeout_s=timeout)
    code = 0
    if reports is not None:
        doc = cluster.merge(reports, extra_findings=findings)
        if as_json:
            emit_json(doc)
        else:
            from dsparkctl.report import render_cluster

            render_cluster(doc, console)
        code = EXIT_CODES[doc["verdict"]]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
