"""``--cluster`` for doctor and smoke: every rank runs the command on itself, rank 0 prints.

Ends the process with ``os._exit``: a collective wedged in a worker thread (the
failure being diagnosed) must not keep the tool alive after the report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from dsparkctl.findings import EXIT_CODES
from dsparkctl.output import console, emit_json


def run_cluster_command(local: Callable[[Any], dict[str, Any]], *, command: str,
                        tp: int | None, timeout: float, as_json: bool,
                        collectives: bool = True) -> None:
    from dsparkctl import cluster, distributed

    _, reports, findings = distributed.run_cluster(local, tp=tp, timeout_s=timeout,
                                                   collectives=collectives)
    code = 0
    if reports is not None:
        doc = cluster.merge(reports, command=command, extra_findings=findings)
        if as_json:
            emit_json(doc)
        else:
            from dsparkctl.report import render_cluster

            render_cluster(doc, console)
        code = EXIT_CODES[doc["verdict"]]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
