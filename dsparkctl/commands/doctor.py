"""The ``doctor`` command: options in, report out, exit code = verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dsparkctl.commands import plan_options as po
from dsparkctl.errors import UsageError
from dsparkctl.findings import EXIT_CODES
from dsparkctl.output import console, emit_json, fail_usage

if TYPE_CHECKING:
    from dsparkctl.doctor import DoctorOptions


def doctor(
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
    flashinfer_version: str | None = po.FLASHINFER_VERSION,
    do_import: bool = typer.Option(False, "--import", help="Also import FlashInfer in the target "
                                   "interpreter and compare its runtime answer with the static reading."),
    cluster: bool = typer.Option(False, "--cluster", help="Run on every rank under torchrun/srun; "
                                 "rank 0 prints one cluster report (skew, P2P, all-reduce checks)."),
    timeout: float = typer.Option(60.0, "--timeout", help="Cluster mode: seconds before a "
                                  "collective or a missing rank becomes a finding."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Inspect an installation and plan the kernel shapes a DSpark config needs.

    Reports what is missing and the exact fix. Exit 0 healthy, 1 problems, 2 no verdict or
    bad usage.
    """
    from dsparkctl.doctor import run_doctor

    opts = po.doctor_options(
        python=python, site_packages=site_packages, model=model, from_cmdline=from_cmdline,
        tp=tp, dp=dp, enable_dp_attention=enable_dp_attention, gamma=gamma,
        speculative_algorithm=speculative_algorithm, cuda_graph_max_bs=cuda_graph_max_bs,
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
    from dsparkctl.commands.cluster_mode import run_cluster_command
    from dsparkctl.doctor import run_doctor

    run_cluster_command(lambda _de: run_doctor(opts).to_json(), command="doctor", tp=opts.tp,
                        timeout=timeout, as_json=as_json)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
