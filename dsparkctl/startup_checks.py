"""What SGLang refuses at start-up, read from the plan's inputs (pure; no I/O).

doctor plans the calls a server will make; a launch line SGLang rejects before it serves
anything makes no calls at all, and saying "healthy" about it would be wrong. Each rule
cites where the release raises (sglang 0.5.17 / 0.5.19 / 0.5.23 wheels, read statically).
"""

from __future__ import annotations

from dsparkctl.findings import Finding, Severity
from dsparkctl.plan import Plan, ServingConfig, int_flag
from dsparkctl.sglang_rules import rule_for


def startup_findings(serving: ServingConfig, plan: Plan, *, from_launch_line: bool
                     ) -> list[Finding]:
    return [*legacy_flag_findings(serving), *dspark_findings(serving, plan,
                                                             from_launch_line=from_launch_line)]


def legacy_flag_findings(serving: ServingConfig) -> list[Finding]:
    """Spellings the planned SGLang no longer parses: since 0.5.20 ``--cuda-graph-max-bs`` is
    an ambiguous prefix of ``--cuda-graph-max-bs-decode`` / ``-prefill`` (argparse), so the
    server exits before it starts; the plan would otherwise take the value at its word."""
    legacy = str(serving.extra_flags.get("legacy_flags") or "").split()
    match = rule_for(serving.sglang_version)
    if not legacy or match.rule.legacy_cuda_graph_flags:
        return []
    return [Finding(
        "launch-legacy-flag", Severity.ERROR,
        f"SGLang {serving.sglang_version or '(newest)'} rejects {', '.join(legacy)}: ambiguous "
        "with its -decode / -prefill forms, the server exits at argument parsing",
        "Write " + " and ".join(f"{n}-decode" for n in legacy) + " (the decode graphs are the "
        "ones these flags set in older releases).")]


def dspark_findings(serving: ServingConfig, plan: Plan, *, from_launch_line: bool
                    ) -> list[Finding]:
    if not serving.is_dspark or not rule_for(serving.sglang_version).rule.dspark:
        return []
    out: list[Finding] = []
    if serving.enable_dp_attention and serving.attn_tp > 1:
        # speculative/dspark_components/dspark_worker_v2.py (0.5.17:99, 0.5.19:122,
        # 0.5.23:212): a DeepSeek-V4 draft is MoE, and attn_tp > 1 under DP attention
        # corrupts the MoE all-reduce, so the worker raises
        out.append(Finding(
            "launch-dspark-dp-attention-attn-tp", Severity.ERROR,
            f"SGLang refuses DSpark with DP attention at attention TP {serving.attn_tp} "
            f"(--tp {serving.tp} / --dp {serving.dp}): a DeepSeek-V4 draft needs attn_tp == 1",
            f"Set --dp equal to --tp (--tp {serving.tp} --dp {serving.tp} "
            "--enable-dp-attention), or serve without --enable-dp-attention."))
    if (serving.enable_dp_attention and from_launch_line
            and not serving.extra_flags.get("enable_dp_lm_head")):
        # arg_groups/speculative_hook.py (0.5.17:284, 0.5.19:349, 0.5.23:676)
        out.append(Finding(
            "launch-dspark-dp-lm-head", Severity.ERROR,
            "SGLang refuses DSpark with DP attention without --enable-dp-lm-head "
            "(the draft borrows the target's LM head)",
            "Add --enable-dp-lm-head to the launch line."))
    ndt = int_flag(serving.extra_flags, "speculative_num_draft_tokens")
    if ndt is not None and plan.gamma is not None and ndt != plan.gamma + 1:
        # arg_groups/speculative_hook.py (0.5.17:379, 0.5.19:486, 0.5.23:831): gamma comes
        # from --speculative-dspark-block-size, else the draft checkpoint, and the verify
        # width must match it
        out.append(Finding(
            "launch-dspark-num-draft-tokens", Severity.ERROR,
            f"SGLang refuses --speculative-num-draft-tokens {ndt}: DSpark's gamma here is "
            f"{plan.gamma} (from the block-size flag or the checkpoint), so it must be "
            f"{plan.gamma + 1}",
            f"Drop --speculative-num-draft-tokens (SGLang derives {plan.gamma + 1}), or set "
            f"--speculative-dspark-block-size {ndt - 1} to change gamma."))
    return out
