"""``dsparkctl report merge``: per-node JSON reports from any scheduler -> one cluster report."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from dsparkctl.findings import EXIT_CODES
from dsparkctl.output import console, emit_json, fail_usage

report_app = typer.Typer(help="Work with saved reports.", no_args_is_help=True)


def _load(path: Path, index: int) -> list[dict]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        fail_usage(f"{path}: no such file")
    except (OSError, json.JSONDecodeError) as exc:
        fail_usage(f"{path}: not a JSON report ({exc}); save reports with `dsparkctl doctor --json`")
    if not isinstance(doc, dict) or "schema_version" not in doc:
        fail_usage(f"{path}: not a dsparkctl report (no schema_version)")
    if doc.get("cluster"):
        fail_usage(f"{path}: already a cluster report; merge the per-node reports instead")
    doc.setdefault("rank", index)
    doc.setdefault("node", (doc.get("host") or {}).get("hostname") or path.stem)
    return [doc]


@report_app.command("merge")
def merge(
    files: list[Path] = typer.Argument(..., help="Per-node `dsparkctl doctor --json` reports."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Merge per-node reports into one cluster report with skew findings."""
    from dsparkctl import cluster

    reports = [r for i, f in enumerate(files) for r in _load(f, i)]
    doc = cluster.merge(reports)
    if as_json:
        emit_json(doc)
    else:
        from dsparkctl.report import render_cluster

        render_cluster(doc, console)
    raise typer.Exit(EXIT_CODES[doc["verdict"]])


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
