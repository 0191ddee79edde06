"""Human rendering of the doctor report (rich), section by section.

Rendering works from the report's JSON form only, so that a merged cluster
report or a saved ``--json`` file renders exactly like a live run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from dsparkctl.flashinfer_support import Dsv4Support

SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"healthy": "bold green", "problems": "bold red", "unknown": "bold yellow"}
MATRIX_HEADS = (8, 16, 24, 32, 64, 128)
MATRIX_TOPKS = (128, 192, 256, 512, 1024, 2048)


def compact_ints(values: Iterable[int]) -> str:
    """``[1,2,3,4,10,12,14]`` -> ``1-4, 10-14/2``: ladders stay readable in a table cell."""
    vs = sorted(set(values))
    if not vs:
        return "-"
    parts: list[str] = []
    i = 0
    while i < len(vs):
        j = i
        step = vs[i + 1] - vs[i] if i + 1 < len(vs) else 1
        while j + 1 < len(vs) and vs[j + 1] - vs[j] == step:
            j += 1
        if j - i >= 2:
            parts.append(f"{vs[i]}-{vs[j]}" + (f"/{step}" if step != 1 else ""))
            i = j + 1
        else:
            parts.append(str(vs[i]))
            i += 1
    return ", ".join(parts)


def _kv(table: Table, key: str, value: Any) -> None:
    table.add_row(key, "-" if value in (None, "", [], {}) else str(value))


def _support_from_json(fi: dict[str, Any]) -> Dsv4Support | None:
    d = fi.get("dsv4_decode")
    if not d:
        return None
    pairs = frozenset(tuple(p) for p in d["pairs"]) if d.get("pairs") is not None else None
    return Dsv4Support(version=fi.get("version"), kind=d["kind"], source=d["source"],
                       pairs=pairs, any_topk=d.get("any_topk", False))  # type: ignore[arg-type]


def coverage_matrix(fi: dict[str, Any], planned: Sequence[tuple[int, int]]) -> Table | None:
    """heads x topk: which decode kernels exist, with the planned shapes marked."""
    support = _support_from_json(fi)
    if support is None:
        return None
    heads = sorted(set(MATRIX_HEADS) | {h for h, _ in planned})
    topks = sorted(set(MATRIX_TOPKS) | {k for _, k in planned})
    planned_set = set(planned)
    t = Table(title=f"DSV4 decode kernels, FlashInfer {fi.get('version') or '?'} "
              f"({support.kind}, {support.source}); [b]bold[/b] = planned", show_lines=False)
    t.add_column("heads \\ topk", justify="right")
    for k in topks:
        t.add_column(str(k), justify="center")
    for h in heads:
        row = []
        for k in topks:
            ok = support.supports_decode(h, k)
            mark = "✓" if ok else "✗"
            style = ("green" if ok else "red") + (" bold reverse" if (h, k) in planned_set else "")
            row.append(Text(mark, style=style))
        t.add_row(str(h), *row)
    return t


def render_doctor(doc: dict[str, Any], console: Console) -> None:
    console.rule(f"dsparkctl doctor {doc.get('dsparkctl_version', '')}")

    host = doc.get("host", {})
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    for k, v in host.items():
        _kv(t, k, v)
    tgt = doc.get("target", {})
    _kv(t, "target", f"{tgt.get('source')}: {tgt.get('python') or ''} "
        f"{', '.join(tgt.get('site_packages', [])[:2])}")
    _kv(t, "nvcc", doc.get("nvcc"))
    console.print(Panel(t, title="Host", expand=False))

    gl = doc.get("gpus", [])
    topo = doc.get("gpu_topology", {})
    if gl:
        g = Table(title="GPUs")
        for col in ("#", "name", "cc", "memory", "driver"):
            g.add_column(col)
        for i, gpu in enumerate(gl):
            mem = gpu.get("memory_total_bytes") or 0
            g.add_row(str(i), gpu.get("name", "?"), gpu.get("compute_capability", "?"),
                      f"{mem / 2**30:.0f} GiB", str(gpu.get("driver_version", "?")))
        console.print(g)
        matrix = topo.get("topology") or []
        if len(matrix) > 1:
            m = Table(title="GPU topology")
            m.add_column("")
            for i in range(len(matrix)):
                m.add_column(f"GPU{i}")
            for i, row in enumerate(matrix):
                m.add_row(f"GPU{i}", *row)
            console.print(m)
    else:
        console.print(f"[yellow]GPUs:[/yellow] {escape(topo.get('note') or 'none found')}")

    p = Table(title="Packages (target environment)")
    p.add_column("package")
    p.add_column("version")
    for name, ver in doc.get("packages", {}).items():
        p.add_row(name, ver or Text("-", style="dim"))
    console.print(p)
    env = doc.get("env", {})
    if env:
        e = Table(title="Environment (secrets redacted)")
        e.add_column("name")
        e.add_column("value", overflow="fold")
        for k, v in sorted(env.items()):
            e.add_row(k, v)
        console.print(e)

    plan = doc.get("plan", {})
    calls = plan.get("calls", [])
    fi = doc.get("flashinfer", {})
    matrix_t = coverage_matrix(fi, [(c["num_heads"], c["topk"]) for c in calls])
    if matrix_t is not None:
        console.print(matrix_t)
    pt = Table(title=f"Plan: sglang {plan.get('sglang_version') or '?'}, tp {plan.get('tp')}, "
               f"dp {plan.get('dp')}, attn_tp {plan.get('attn_tp', '?')}, gamma {plan.get('gamma')}")
    for col in ("phase", "heads", "topk", "extra", "num_tokens (captured)", "path", "ok"):
        pt.add_column(col)
    for c in calls:
        ok = c.get("supported")
        pt.add_row(
            c["phase"], str(c["num_heads"]), str(c["topk"]), str(c.get("extra_topk", 0)),
            compact_ints(c.get("num_tokens", [])), c.get("path", "?"),
            Text("routed", style="cyan") if c.get("routed") else Text("yes", style="green")
            if ok else Text("no", style="bold red") if ok is False else Text("?", style="yellow"),
        )
    console.print(pt)
    for note in plan.get("notes", []):
        console.print(f"[dim]note: {escape(note)}[/dim]")
    compat = doc.get("flashinfer_compat") or []
    if compat:
        ct = Table(title="This plan against each published FlashInfer (what if?)")
        for col in ("flashinfer-python", "serves the plan", "decode kernels missing",
                    "prefill rejected"):
            ct.add_column(col)
        for row in compat:
            ok = row["served"]
            verdict = Text("yes", style="green") if ok else Text(
                "no (" + ", ".join(row["blocked_by"]) + ")" if row.get("blocked_by") else "no",
                style="red")
            ct.add_row(row["version"], verdict,
                       ", ".join(f"({h},{k})" for h, k in row["decode_missing"]) or "-",
                       ", ".join(f"({h},{k})" for h, k in row["prefill_missing"]) or "-")
        console.print(ct)

    routing = doc.get("routing")
    if routing:
        render_routing(routing, console)
    render_findings(doc, console)


def render_findings(doc: dict[str, Any], console: Console) -> None:
    """Findings (with fixes and references) and the verdict line: shared by every command."""
    findings = doc.get("findings", [])
    if findings:
        console.rule("Findings")
    for f in findings:
        sev = f["severity"]
        console.print(Text.assemble((f"[{sev.upper()}] ", SEV_STYLE[sev]), (f["id"], "bold"),
                                    f": {f['title']}"))
        if f.get("detail"):
            console.print(Text(f["detail"], style="dim"), soft_wrap=True)
        ranks = (f.get("data") or {}).get("ranks")
        if ranks:
            console.print(Text(f"  on: {', '.join(ranks)}", style="dim"), soft_wrap=True)
        if f.get("fix"):
            console.print(Text.assemble(("  fix: ", "bold green"), f["fix"]), soft_wrap=True)
        for r in f.get("refs", []):
            console.print(f"  [dim]ref: {escape(r)}[/dim]")
    verdict = doc.get("verdict", "unknown")
    console.print(Text(f"verdict: {verdict}", style=VERDICT_STYLE.get(verdict, "bold")))


def render_cluster(doc: dict[str, Any], console: Console) -> None:
    console.rule(f"dsparkctl {doc.get('command', 'doctor')} --cluster: "
                 f"{doc.get('world_size')} ranks")
    t = Table(title="Ranks")
    for col in ("rank", "node", "local", "GPU", "cc", "driver", "flashinfer", "sglang", "verdict"):
        t.add_column(col)
    for r in doc.get("ranks", []):
        pk = r.get("packages") or {}
        t.add_row(str(r.get("rank")), str(r.get("node")), str(r.get("local_rank")),
                  str(r.get("gpu") or "-"), str(r.get("compute_capability") or "-"),
                  str(r.get("driver_version") or "-"), str(pk.get("flashinfer-python") or "-"),
                  str(pk.get("sglang") or "-"),
                  Text(str(r.get("verdict")), style=VERDICT_STYLE.get(str(r.get("verdict")), "")))
    console.print(t)
    for node, info in (doc.get("nodes") or {}).items():
        p2p = info.get("p2p") or []
        topo = info.get("topology") or []
        if len(p2p) > 1:
            m = Table(title=f"P2P access and link, {node}")
            m.add_column("")
            for i in range(len(p2p)):
                m.add_column(f"GPU{i}")
            for i, row in enumerate(p2p):
                m.add_row(f"GPU{i}", *["X" if i == j else _p2p_cell(v, topo, i, j) for j, v in enumerate(row)])
            console.print(m)
    ar = doc.get("allreduce") or []
    if ar:
        a = Table(title="All-reduce per TP group (rank 0 of each group)")
        for col in ("group", "bytes", "correct", "time us", "bus GB/s"):
            a.add_column(col)
        for row in ar:
            bw = row.get("bus_bandwidth_gbps")
            a.add_row(str(row.get("group")), _size(row.get("bytes")), str(row.get("correct")),
                      f"{row.get('time_us', 0):.1f}", f"{bw:.2f}" if bw else "-")
        console.print(a)
    render_findings(doc, console)


def _p2p_cell(ok: object, topo: list, i: int, j: int) -> str:
    """yes / no / ? plus the link NVML reports (NV18, PIX, SYS, ...) where the topology is known."""
    word = "yes" if ok else "no" if ok is False else "?"
    try:
        link = topo[i][j]
    except (IndexError, TypeError):
        link = None
    return f"{word} ({link})" if link and link != "X" else word


def _size(nbytes: object) -> str:
    if not isinstance(nbytes, int):
        return str(nbytes)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def render_routing(routing: dict[str, Any], console: Console) -> None:
    """dsparkctl's routing in this environment: mode, the installed build, each patch's state."""
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    active = routing.get("active")
    t.add_row("routing", Text("active", style="green") if active
              else Text("not active", style="bold red"))
    t.add_row("mode", str(routing.get("mode") or (routing.get("settings") or {}).get("mode")))
    k = routing.get("kernel") or {}
    t.add_row("kernel", f"{k.get('library') or '-'} ({k.get('arch') or '?'}, key {k.get('key') or '?'})"
              + ("" if k.get("intact") else "  [missing or changed]"))
    t.add_row("manifest", str(k.get("manifest") or "-"))
    t.add_row("FlashInfer at install", str(routing.get("recorded_flashinfer") or "-"))
    for p in routing.get("applied") or []:
        state = "intact" if p.get("intact") else "CHANGED since apply"
        t.add_row(f"patch {p['id']}", f"{p['distribution']} {p['version']}: {state}")
    console.print(Panel(t, title="dsparkctl routing", expand=False), markup=False)
