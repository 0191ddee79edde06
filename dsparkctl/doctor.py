"""``dsparkctl doctor``: gather the facts, plan the calls, judge, and build the report.

This is the I/O side (probing the machine and the target environment); the
judging is delegated to pure modules (plan, plan_findings, pitfalls) so that
``report merge`` and the tests can reuse them. Nothing here imports torch or
flashinfer unless ``--import`` asks for it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsparkctl import __version__, envvars, flashinfer_dispatch, gpus, pitfalls, probe
from dsparkctl.cmdline import parse_launch_line
from dsparkctl.errors import UsageError
from dsparkctl.findings import Finding, Severity, envelope, verdict_of
from dsparkctl.flashinfer_support import Dsv4Support
from dsparkctl.model_config import ModelConfig, load_model_config
from dsparkctl.plan import Plan, ServingConfig, make_plan
from dsparkctl.plan_findings import (
    compat_by_release,
    missing_kernel_findings,
    prefill_error_findings,
    routes_any_size,
)
from dsparkctl.startup_checks import startup_findings


@dataclass
class DoctorOptions:
    """Everything the command line can say; ``None`` means "not given"."""

    python: str | None = None
    site_packages: Path | None = None
    model: str | None = None
    from_cmdline: str | None = None
    tp: int | None = None
    dp: int | None = None
    enable_dp_attention: bool | None = None
    gamma: int | None = None
    speculative_algorithm: str | None = None
    cuda_graph_max_bs: int | None = None
    max_running_requests: int | None = None
    disable_cuda_graph_padding: bool | None = None
    sglang_version: str | None = None
    flashinfer_version: str | None = None
    do_import: bool = False
    probe_gpus: bool = True
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class DoctorReport:
    host: Any
    gpu_report: Any
    target: Any
    env: dict[str, str]
    nvcc: str | None
    flashinfer_version: str | None
    support: Dsv4Support | None
    flashinfer_files: dict[str, str]
    sglang_version: str | None
    sglang_flashinfer_pin: str | None
    model: ModelConfig
    serving: ServingConfig
    plan: Plan
    findings: list[Finding]
    judged: bool
    compat: list[dict[str, Any]] = field(default_factory=list)
    routing: dict[str, Any] | None = None
    routed: Any = None

    def _plan_json(self) -> dict[str, Any]:
        """The plan, each call marked ``routed`` when dsparkctl's router serves it."""
        plan = self.plan.to_json()
        for call, obj in zip(self.plan.calls, plan["calls"], strict=True):
            obj["routed"] = routes_any_size(call, self.routed)
        return plan

    @property
    def verdict(self) -> str:
        return verdict_of(self.findings, judged=self.judged)

    def to_json(self) -> dict[str, Any]:
        fi: dict[str, Any] = {"version": self.flashinfer_version, "dsv4_decode": {
            "kind": "unknown", "pairs": None, "any_topk": False, "source": "static"}}
        if self.support is not None:
            fi = self.support.to_json()
            fi["version"] = self.flashinfer_version
        fi["files"] = self.flashinfer_files
        return envelope(
            "doctor", self.findings, judged=self.judged,
            dsparkctl_version=__version__,
            host=self.host.to_json(),
            gpus=[g.to_json() for g in self.gpu_report.gpus],
            gpu_topology=self.gpu_report.to_json(),
            target=self.target.to_json(),
            packages=dict(self.target.packages),
            env=self.env,
            nvcc=self.nvcc,
            flashinfer=fi,
            sglang={"version": self.sglang_version, "flashinfer_pin": self.sglang_flashinfer_pin},
            model=self.model.to_json(),
            plan=self._plan_json(),
            flashinfer_compat=self.compat,
            routing=self.routing,
        )


_PIN_RE = re.compile(
    r"^Requires-Dist:[ \t]*flashinfer[-_]python(?:\[[^\]\n]*\])?[ \t]*([^;\s][^;\n]*)?$", re.I | re.M)


def sglang_flashinfer_pin(site_dirs: list[str], sglang_version: str | None) -> str | None:
    """The flashinfer-python requirement in the installed SGLang's metadata (e.g. ``==0.6.15.post1``)."""
    if not sglang_version:
        return None
    for d in site_dirs:
        meta = Path(d) / f"sglang-{sglang_version}.dist-info" / "METADATA"
        if meta.is_file():
            m = _PIN_RE.search(meta.read_text(encoding="utf-8", errors="replace"))
            return m.group(1).strip() if m and m.group(1) else None
    return None


def _serving_config(opts: DoctorOptions) -> tuple[ServingConfig, str | None]:
    base, model_path = (parse_launch_line(opts.from_cmdline) if opts.from_cmdline
                        else (ServingConfig(), None))
    overrides = {
        k: getattr(opts, k)
        for k in ("tp", "dp", "enable_dp_attention", "gamma", "speculative_algorithm",
                  "cuda_graph_max_bs", "max_running_requests", "disable_cuda_graph_padding",
                  "sglang_version")
        if getattr(opts, k) is not None
    }
    if overrides.get("speculative_algorithm") == "":  # --speculative-algorithm NONE / off
        overrides["speculative_algorithm"] = None
    # The server's environment: this shell's (the variables dsparkctl knows), then what the
    # launch line sets in front of the command. The planner and the pitfall rules read the
    # same one, so a variable means the same wherever the operator put it.
    env = {k: v for k, v in opts.environ.items() if envvars.is_allowed(k)}
    overrides["env"] = {**env, **base.env}
    return dataclasses.replace(base, **overrides), model_path


def _target(opts: DoctorOptions) -> Any:
    if opts.python and opts.site_packages:
        raise UsageError("--python and --site-packages name two targets; give one of them")
    if opts.site_packages:
        return probe.probe_site_packages(Path(opts.site_packages))
    if opts.python:
        return probe.probe_python(opts.python)
    return probe.probe_current()


def run_doctor(opts: DoctorOptions) -> DoctorReport:
    serving, cmd_model = _serving_config(opts)
    findings: list[Finding] = []
    if opts.model is None and cmd_model and not Path(cmd_model).exists():
        findings.append(Finding(
            "model-path-not-here", Severity.INFO,
            f"The launch line's --model-path {cmd_model} is not on this machine; planned with "
            "the built-in deepseek-v4-flash preset",
            "Pass --model PATH to a copy of the checkpoint's config.json to plan with its values."))
        cmd_model = None
    model = load_model_config(opts.model or cmd_model)
    target = _target(opts)
    host = probe.probe_host()
    gpu_report = gpus.probe_gpus() if opts.probe_gpus else gpus.GpuReport.empty("GPU probe skipped")
    if gpu_report.gpus and serving.gpu_memory_mib is None:
        mem = min(g.memory_total_bytes or 0 for g in gpu_report.gpus)
        if mem:
            serving = dataclasses.replace(serving, gpu_memory_mib=mem // 2**20)

    # FlashInfer: what-if table, else the installed tree read statically.
    installed_fi = target.packages.get("flashinfer-python")
    files: dict[str, str] = {}
    support: Dsv4Support | None = None
    site = target.flashinfer_site()
    if installed_fi and site is not None:
        reading = flashinfer_dispatch.read_flashinfer(site)
        findings.extend(reading.findings)
        support, files = reading.support, dict(reading.files)
        if opts.do_import:
            findings.extend(_import_check(opts, target, support))
    fi_version = installed_fi
    if opts.flashinfer_version:
        support, what_if = flashinfer_dispatch.what_if_support(opts.flashinfer_version)
        findings.extend(what_if)
        if support is None:
            raise UsageError(
                f"--flashinfer-version {opts.flashinfer_version}: no known DSV4 table for that "
                f"version; known: {', '.join(flashinfer_dispatch.known_versions())}")
        fi_version = opts.flashinfer_version
    if support is None:
        findings.append(Finding(
            "flashinfer-not-found" if not installed_fi else "flashinfer-unjudged",
            Severity.INFO,
            "No FlashInfer to judge the plan against" if not installed_fi
            else f"FlashInfer {installed_fi} could not be read; the plan is not judged",
            "Run doctor in (or with --python pointing at) the serving environment, or ask "
            "'what if' with --flashinfer-version X.",
        ))

    sglang_version = serving.sglang_version or target.packages.get("sglang")
    serving = dataclasses.replace(serving, sglang_version=sglang_version)
    serving.validate(model)
    plan = make_plan(model, serving, support)

    env = envvars.collect(opts.environ)
    # Where sglang is imported from first (a PYTHONPATH entry is not a site dir), then the rest.
    sglang_dir = [str(Path(target.files["sglang"]).parent)] if target.files.get("sglang") else []
    pin = sglang_flashinfer_pin(sglang_dir + list(target.site_packages),
                                target.packages.get("sglang"))
    packages = dict(target.packages)
    if opts.flashinfer_version:
        packages["flashinfer-python"] = opts.flashinfer_version
    if sglang_version and sglang_version != target.packages.get("sglang"):
        packages["sglang"] = sglang_version  # what-if: judge the SGLang being planned for
        pin = None  # the installed SGLang's pin says nothing about another release
    # The installed router's rule first: what it routes decides pitfalls and the what-if table.
    routing = _routing(target)
    override = serving.env.get("DSPARKCTL_ROUTE")
    findings.extend(_routing_findings(routing, installed_fi, override))
    routed = _routed_rule(target, routing, override)
    facts = pitfalls.Facts(
        packages=packages,
        env=dict(serving.env),
        gpu_ccs=tuple(g.compute_capability for g in gpu_report.gpus),
        topology=tuple(tuple(r) for r in gpu_report.topology),
        torch_cuda=target.torch_cuda,
        cuda_driver_version=gpu_report.cuda_driver_version,
        nvcc_version=probe.nvcc_version(opts.environ),
        speculative=serving.speculative_algorithm,
        tp=serving.tp, dp=serving.dp, enable_dp_attention=serving.enable_dp_attention,
        gamma=plan.gamma,
        disable_cuda_graph=serving.disable_cuda_graph,
        disable_custom_all_reduce=bool(serving.extra_flags.get("disable_custom_all_reduce")),
        sglang_flashinfer_pin=pin,
        dual_prefill_routed=_routes_every_dual_prefill(plan, routed),
    )
    # The plan against every known release: the what-if table, and the smallest upgrade. A
    # release that serves every shape but crashes with this SGLang (a version-pair pitfall
    # of severity error) does not serve the plan.
    compat = compat_by_release(
        flashinfer_dispatch.known_versions(), lambda s: make_plan(model, serving, s),
        flashinfer_dispatch.known_support)
    for row in compat:
        blockers = pitfalls.release_blockers(facts, str(row["version"]))
        if blockers:
            row.update(served=False, blocked_by=blockers)
    upgrade_to = None
    if support is not None and any(c.supported is False for c in plan.calls):
        upgrade_to = next((str(r["version"]) for r in compat if r["served"]), None)
    findings.extend(missing_kernel_findings(plan.calls, flashinfer_version=fi_version,
                                            upgrade_to=upgrade_to, routed=routed))
    findings.extend(prefill_error_findings(plan.calls, upgrade_to=upgrade_to, routed=routed))

    findings.extend(pitfalls.evaluate(facts))
    findings.extend(startup_findings(serving, plan, from_launch_line=bool(opts.from_cmdline)))
    if getattr(target, "duplicates", None):
        findings.append(Finding(
            "target-duplicate-distributions", Severity.WARNING,
            "Some packages are installed more than once on the target's path; the first one wins",
            "Uninstall the stale copies (often a user-site install shadowing the venv: "
            "pip uninstall from ~/.local, or set PYTHONNOUSERSITE=1 for the server).",
            (), "\n".join(f"{k}: {', '.join(v)}" for k, v in sorted(target.duplicates.items())),
        ))
    if gpu_report.note:
        findings.append(Finding("gpu-probe", Severity.INFO, gpu_report.note,
                                "Doctor still judges the plan; GPU-dependent pitfalls were not checked."))

    return DoctorReport(
        host=host, gpu_report=gpu_report, target=target, env=env, nvcc=facts.nvcc_version,
        flashinfer_version=fi_version, support=support, flashinfer_files=files,
        sglang_version=sglang_version, sglang_flashinfer_pin=pin, model=model, serving=serving,
        plan=plan, findings=findings, judged=support is not None and support.kind != "unknown",
        compat=compat, routing=routing, routed=routed,
    )


ROUTE_OVERRIDES = ("off", "missing", "all")  # the router's MODES


def _routing(target: Any) -> dict[str, Any] | None:
    from dsparkctl.routing import routing_state

    where = target.files.get("sglang")
    return routing_state(Path(where).parent) if where else None


def _routes_every_dual_prefill(plan: Plan, routed: Any) -> bool:
    """Whether the router takes every planned prefill-sized dual-cache call (the calls
    FlashInfer 0.6.18 answers wrongly)."""
    duals = [c for c in plan.calls if c.extra_topk > 0 and any(n > 64 for n in c.paths)]
    return bool(duals) and routed is not None and all(
        routed(c.num_heads, c.topk, n, c.extra_topk, c.extra_page_size)
        for c in duals for n in c.paths if n > 64)


def _routed_rule(target: Any, routing: dict[str, Any] | None, override: str | None) -> Any:
    """The router's own decision per call (``RouteRule``), or None when nothing is routed.
    ``override`` is DSPARKCTL_ROUTE in the server's environment, which the router obeys."""
    if not routing or not routing["active"] or override == "off":
        return None
    if override is not None and override not in ROUTE_OVERRIDES:
        return None  # the router raises on every call it would take; _routing_findings says so
    from dsparkctl.routing import RouteRule, router_rule

    try:
        rule = router_rule(Path(target.files["sglang"]).parent)
    except Exception:  # an unloadable router routes nothing; _routing_findings says why
        return None
    return RouteRule(rule, mode=override)


def _routing_findings(routing: dict[str, Any] | None, installed_fi: str | None,
                      override: str | None = None) -> list[Finding]:
    """Routing that was installed but no longer holds is an error: the shapes it served fail."""
    if not routing:
        return []
    out = []
    recorded = routing.get("recorded_flashinfer")
    # In both modes: prefill-sized calls are routed by the recorded FlashInfer's coverage too.
    if routing["active"] and recorded != installed_fi:
        out.append(Finding(
            "routing-flashinfer-drift", Severity.ERROR,
            f"The router decides what to route from FlashInfer {recorded}'s tables, but "
            f"FlashInfer {installed_fi} is installed now: calls it cannot serve (or answers "
            f"wrongly) may not be routed",
            "Re-run `dsparkctl install-kernels` (or `dsparkctl patches apply`) so the router "
            "records the installed FlashInfer."))
    if routing["active"] and override is not None and override not in ROUTE_OVERRIDES:
        out.append(Finding(
            "routing-override-invalid", Severity.ERROR,
            f"DSPARKCTL_ROUTE={override!r} in the server's environment is not one of "
            f"{', '.join(ROUTE_OVERRIDES)}: the router raises on every DSV4 call it would take",
            "Unset DSPARKCTL_ROUTE or set it to off, missing or all."))
    elif routing["active"] and override is not None:
        out.append(Finding(
            "routing-override", Severity.INFO,
            f"DSPARKCTL_ROUTE={override} in the server's environment overrides the router's "
            f"mode {routing['mode']}; the plan is judged with {override}", ""))
    for p in routing["applied"]:
        if not p["intact"]:
            changed = [f["path"] for f in p["files"] if f["state"] != "as-written"]
            out.append(Finding(
                "routing-drift", Severity.ERROR,
                f"dsparkctl patch {p['id']} no longer matches the files on disk "
                f"({p['distribution']} {p['installed_version']} installed, patched "
                f"{p['version']})",
                "Re-run `dsparkctl install-kernels` (a reinstall of the package removed or changed "
                "the patch); `dsparkctl patches status` lists each file.",
                (), ", ".join(changed)))
    settings = routing.get("settings") or {}
    if routing.get("settings_error"):
        out.append(Finding("routing-settings-unreadable", Severity.ERROR,
                           f"the router's settings cannot be read: {routing['settings_error']}",
                           "Re-run `dsparkctl install-kernels`."))
    elif settings and not routing["kernel"]["intact"]:
        out.append(Finding(
            "routing-kernel-missing", Severity.ERROR,
            "SGLang is routed to the bundled kernel, but its library is missing or changed: "
            f"{routing['kernel']['manifest']}",
            "Re-run `dsparkctl install-kernels` to rebuild and reinstall it."))
    return out


def _import_check(opts: DoctorOptions, target: Any, static: Dsv4Support | None) -> list[Finding]:
    from dsparkctl import flashinfer_runtime

    python = opts.python or target.python or sys.executable
    extra = [str(opts.site_packages)] if opts.site_packages else None
    return flashinfer_runtime.check_against_static(python, static, extra_path=extra)
