"""``dsparkctl report merge``: per-node JSON reports from any scheduler -> one cluster report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer

from dsparkctl.findings import EXIT_CODES, Severity
from dsparkctl.output import console, emit_json, fail_usage

report_app = typer.Typer(help="Work with saved reports.", no_args_is_help=True)


def _read_text(path: Path) -> str:
    """UTF-8, or UTF-16 with its byte-order mark (what PowerShell's ``>`` writes)."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def _load(path: Path, index: int) -> list[dict]:
    try:
        doc = json.loads(_read_text(path))
    except FileNotFoundError:
        fail_usage(f"{path}: no such file")
    except (OSError, ValueError) as exc:  # JSON and Unicode errors are ValueErrors
        fail_usage(f"{path}: not a JSON report ({exc}); save reports with `dsparkctl doctor --json`")
    if not isinstance(doc, dict) or "schema_version" not in doc:
        fail_usage(f"{path}: not a dsparkctl report (no schema_version)")
    if doc.get("cluster"):
        fail_usage(f"{path}: already a cluster report; merge the per-node reports instead")
    problem = _malformed(doc)
    if problem:
        fail_usage(f"{path}: not a dsparkctl doctor report ({problem}); save reports with "
                   f"`dsparkctl doctor --json`")
    doc.setdefault("rank", index)
    doc["_path"] = path
    return [doc]


def _malformed(doc: dict) -> str | None:
    """What in a report the merge cannot use, or None."""
    rank = doc.get("rank")
    if "rank" in doc and (isinstance(rank, bool) or not isinstance(rank, int)):
        return f"rank {rank!r} is not an integer"
    for key, kind in (("host", dict), ("packages", dict), ("env", dict), ("gpus", list),
                      ("gpu_topology", dict), ("allreduce", dict)):
        if doc.get(key) is not None and not isinstance(doc[key], kind):
            return f"{key} is a {type(doc[key]).__name__}, not a{'n object' if kind is dict else ' list'}"
    findings = doc.get("findings")
    if findings is None:
        return None
    if not isinstance(findings, list):
        return "findings is not a list"
    severities = {s.value for s in Severity}
    for f in findings:
        if not isinstance(f, dict) or not isinstance(f.get("id"), str):
            return "a finding has no id"
        if f.get("severity") not in severities:
            return f"finding {f['id']} has severity {f.get('severity')!r}"
    return None


def _name_nodes(reports: list[dict]) -> None:
    """A report's node is its host's name. Two machines can share one (``localhost``, a
    cloned image): reports with the same hostname but different GPUs (by UUID) get their
    file added to it, while reports of ranks on one machine (same GPUs) stay one node.
    Reports without a hostname are named after their file, with the folder added where two
    files share a name (node0/doctor.json, node1/doctor.json)."""
    stems = Counter(r["_path"].stem for r in reports)

    def label(path: Path) -> str:
        return path.stem if stems[path.stem] == 1 else f"{path.parent.name}/{path.stem}"

    # per hostname: each distinct GPU set, named after the first file that has it
    machines: dict[str, dict[frozenset[str], str]] = {}
    for r in reports:
        host = (r.get("host") or {}).get("hostname")
        if host:
            machines.setdefault(host, {}).setdefault(_gpu_ids(r), label(r["_path"]))
    for r in reports:
        path = r.pop("_path")
        host = (r.get("host") or {}).get("hostname")
        if not host:
            name = label(path)
        elif len(machines[host]) > 1:
            name = f"{host} ({machines[host][_gpu_ids(r)]})"
        else:
            name = host
        r.setdefault("node", name)


def _gpu_ids(report: dict) -> frozenset[str]:
    return frozenset(str(g["uuid"]) for g in report.get("gpus") or []
                     if isinstance(g, dict) and g.get("uuid"))


@report_app.command("merge")
def merge(
    files: list[Path] = typer.Argument(..., help="Per-node `dsparkctl doctor --json` reports."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON."),
) -> None:
    """Merge per-node reports into one cluster report with skew findings."""
    from dsparkctl import cluster

    reports = [r for i, f in enumerate(files) for r in _load(f, i)]
    _name_nodes(reports)
    try:
        doc = cluster.merge(reports)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        fail_usage(f"the reports cannot be merged: a field has an unexpected shape ({exc!r}); "
                   f"save reports with `dsparkctl doctor --json` from the same dsparkctl version")
    if as_json:
        emit_json(doc)
    else:
        from dsparkctl.report import render_cluster

        render_cluster(doc, console)
    raise typer.Exit(EXIT_CODES[doc["verdict"]])


def register(app: typer.Typer) -> None:
    app.add_typer(report_app, name="report")
