"""Command-line options that describe a deployment, shared by doctor and smoke.

Both commands plan the same sparse-MLA calls, so they must accept the same
description of the deployment with the same spelling and help text; the
options are defined once here and used as defaults in both signatures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

PYTHON: Any = typer.Option(None, "--python", help="Probe another interpreter (the serving "
                           "venv's python), stdlib-only.")
SITE_PACKAGES: Any = typer.Option(None, "--site-packages", help="Read an unpacked site-packages "
                                  "tree offline (e.g. a container image's).")
MODEL: Any = typer.Option(None, "--model", help="config.json or a snapshot folder holding one "
                          "(default: built-in deepseek-v4-flash preset).")
FROM_CMDLINE: Any = typer.Option(None, "--from-cmdline", help="The real launch line, e.g. "
                                 "\"sglang serve --model-path ... --tp-size 4\".")
TP: Any = typer.Option(None, "--tp", help="Tensor parallel size.")
DP: Any = typer.Option(None, "--dp", help="Data parallel size.")
DP_ATTENTION: Any = typer.Option(None, "--enable-dp-attention/--no-dp-attention")
GAMMA: Any = typer.Option(None, "--gamma", help="DSpark block size (default: the config's "
                          "dspark_block_size).")
SPECULATIVE: Any = typer.Option(None, "--speculative-algorithm", help="DSPARK (default), "
                                "EAGLE, ..., or NONE.")
CUDA_GRAPH_MAX_BS: Any = typer.Option(None, "--cuda-graph-max-bs")
MAX_RUNNING: Any = typer.Option(None, "--max-running-requests")
NO_PADDING: Any = typer.Option(None, "--disable-cuda-graph-padding")
SGLANG_VERSION: Any = typer.Option(None, "--sglang-version", help="Plan for this SGLang "
                                   "(default: installed).")
FLASHINFER_VERSION: Any = typer.Option(None, "--flashinfer-version", help="What if: judge "
                                       "against this published FlashInfer's table.")


def speculative(value: str | None) -> str | None:
    """``NONE``/``OFF`` turn speculation off (""), ``None`` keeps the plan's default."""
    from dsparkctl.cmdline import NO_SPECULATION

    if value is not None and value.strip().upper() in NO_SPECULATION:
        return ""
    return value


def doctor_options(*, python: str | None, site_packages: Path | None, model: str | None,
                   from_cmdline: str | None, tp: int | None, dp: int | None,
                   enable_dp_attention: bool | None, gamma: int | None,
                   speculative_algorithm: str | None, cuda_graph_max_bs: int | None,
                   max_running_requests: int | None, disable_cuda_graph_padding: bool | None,
                   sglang_version: str | None, flashinfer_version: str | None,
                   do_import: bool = False) -> Any:
    from dsparkctl.doctor import DoctorOptions

    return DoctorOptions(
        python=python, site_packages=site_packages, model=model, from_cmdline=from_cmdline,
        tp=tp, dp=dp, enable_dp_attention=enable_dp_attention, gamma=gamma,
        speculative_algorithm=speculative(speculative_algorithm),
        cuda_graph_max_bs=cuda_graph_max_bs, max_running_requests=max_running_requests,
        disable_cuda_graph_padding=disable_cuda_graph_padding, sglang_version=sglang_version,
        flashinfer_version=flashinfer_version, do_import=do_import,
    )
