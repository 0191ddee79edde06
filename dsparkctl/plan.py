"""Every sparse-MLA call a DeepSeek-V4 + DSpark SGLang server makes, and which kernel serves it.

Pure logic: a model config, a serving config and (optionally) what one
FlashInfer build serves go in; a Plan comes out. The per-version SGLang
behaviour lives in ``sglang_rules`` and ``ladder`` (data, with wheel
references); this module only composes it.

Which phases are captured (read in sglang 0.5.17/0.5.23
``srt/model_executor/runner/decode_cuda_graph_runner.py``, ``__init__``): with
speculation on, the target runner captures ``TARGET_VERIFY`` instead of
``DECODE`` (``capture_forward_mode``), with ``bs * (gamma + 1)`` tokens; the
DSpark draft runner captures its block forward with ``bs * gamma`` tokens
(``get_num_tokens_per_req_for_target_verify``: ``num_draft_tokens - 1`` on the
draft worker, ``srt/speculative/spec_info.py:238``). Plain decode is captured
only with speculation off. Prefill is eager (never captured) and is listed
with the shape it has when it reaches the prefill kernel (> 64 tokens).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dsparkctl.errors import UsageError
from dsparkctl.flashinfer_support import Dsv4Support
from dsparkctl.ladder import capture_batch_sizes, clamp_to_runner, ladder_rule
from dsparkctl.model_config import ModelConfig
from dsparkctl.sglang_rules import (
    DECODE_MAX_TOKENS,
    DEFAULT_DSPARK_GAMMA,
    DSV4_DEFAULT_MAX_RUNNING_REQUESTS,
    ENVELOPE_DEDICATED_HEADS,
    SPEC_DEFAULT_MAX_RUNNING_REQUESTS,
    SglangRule,
    draft_kernel_heads,
    draft_topk,
    extra_cache,
    parse_version,
    rule_for,
    target_kernel_heads,
    target_topk,
)

Phase = Literal["decode", "verify", "draft", "prefill"]
PlanPath = Literal["decode", "prefill", "assert", "error", "unknown"]

_SEVERITY = {"decode": 0, "prefill": 1, "assert": 2, "error": 3}
_LAYER_KIND = {0: "swa-only", 4: "c4", 128: "c128"}
_KNOWN_SPEC = {"DSPARK", "EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE", "NGRAM"}
# A prefill chunk this long reaches the prefill kernel; shorter chunks take the decode kernel.
PREFILL_PROBE_TOKENS = DECODE_MAX_TOKENS + 1
# The GPU the plan assumes when the caller knows none: RTX PRO 6000 Blackwell (96 GiB).
ASSUMED_GPU_MEMORY_MIB = 97887


MAX_GRAPH_BATCH = 16384


@dataclass(frozen=True)
class ServingConfig:
    """How the server is launched (flags, env). ``dp`` counts attention-DP groups with DP attention."""

    tp: int = 1
    dp: int = 1
    enable_dp_attention: bool = False
    gamma: int | None = None
    speculative_algorithm: str | None = "DSPARK"
    cuda_graph_max_bs: int | None = None
    cuda_graph_bs: tuple[int, ...] | None = None
    max_running_requests: int | None = None
    disable_cuda_graph: bool = False
    disable_cuda_graph_padding: bool = False
    sglang_version: str | None = None
    model_path: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    extra_flags: dict[str, str | bool] = field(default_factory=dict)
    context_length: int | None = None
    gpu_memory_mib: int | None = None

    @property
    def attn_tp(self) -> int:
        return self.tp // self.dp if self.enable_dp_attention else self.tp

    @property
    def attn_dp(self) -> int:
        return self.dp if self.enable_dp_attention else 1

    @property
    def speculative(self) -> bool:
        return bool(self.speculative_algorithm)  # "" (NONE / off) is no speculation too

    @property
    def is_dspark(self) -> bool:
        return (self.speculative_algorithm or "").upper() == "DSPARK"

    def validate(self, model: ModelConfig) -> None:
        """Reject what SGLang would reject at start-up, in one line saying what to change."""
        for name, value in (("tp", self.tp), ("dp", self.dp)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"--{name} {value}: must be a positive integer")
        if self.gamma is not None and (isinstance(self.gamma, bool) or self.gamma <= 0):
            raise UsageError(f"--gamma {self.gamma}: gamma (the DSpark block size) must be >= 1")
        if self.enable_dp_attention:
            if self.dp < 2:
                raise UsageError("--enable-dp-attention needs --dp 2 or more (SGLang asserts "
                                 "dp_size > 1); drop --enable-dp-attention or raise --dp")
            if self.tp % self.dp:
                raise UsageError(f"--dp {self.dp} does not divide --tp {self.tp}: with DP attention "
                                 "each DP group gets tp/dp GPUs; pick a dp that divides tp")
        heads = model.num_attention_heads
        if heads % self.attn_tp:
            what = (f"--tp {self.tp} / --dp {self.dp}" if self.enable_dp_attention
                    else f"--tp {self.tp}")
            raise UsageError(f"{what}: attention TP size {self.attn_tp} does not divide the "
                             f"model's {heads} attention heads; use a tp that divides {heads}")
        for name, value in (("--cuda-graph-max-bs", self.cuda_graph_max_bs),
                            ("--max-running-requests", self.max_running_requests),
                            ("--context-length", self.context_length)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise UsageError(f"{name} {value}: must be a positive integer")
        if self.cuda_graph_bs is not None and (not self.cuda_graph_bs
                                               or any(b < 1 for b in self.cuda_graph_bs)):
            raise UsageError(f"--cuda-graph-bs {list(self.cuda_graph_bs)}: batch sizes must be "
                             "positive integers")
        # The plan lists every captured size; an absurd bound (a typo's extra zeros) would
        # take minutes and gigabytes to list, for a graph no GPU could capture.
        biggest = max([self.cuda_graph_max_bs or 0, *(self.cuda_graph_bs or ())])
        if biggest > MAX_GRAPH_BATCH:
            raise UsageError(f"CUDA-graph batch size {biggest}: above {MAX_GRAPH_BATCH}, more "
                             "than any GPU captures (SGLang's own ladders stop at 512-1024); "
                             "check the value")
        if self.sglang_version is not None:
            parse_version(self.sglang_version)
        ndt = int_flag(self.extra_flags, "speculative_num_draft_tokens")
        if self.is_dspark and ndt is not None:
            if ndt < 2:
                raise UsageError(f"--speculative-num-draft-tokens {ndt}: DSpark needs >= 2 "
                                 "(= gamma + 1)")
            if self.gamma is not None and ndt != self.gamma + 1:
                raise UsageError(f"--speculative-num-draft-tokens {ndt} must equal gamma + 1 = "
                                 f"{self.gamma + 1} (SGLang refuses the mismatch); drop one of them")

    def to_json(self) -> dict[str, Any]:
        return {
            "tp": self.tp, "dp": self.dp, "enable_dp_attention": self.enable_dp_attention,
            "attn_tp": self.attn_tp, "gamma": self.gamma,
            "speculative_algorithm": self.speculative_algorithm,
            "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "cuda_graph_bs": list(self.cuda_graph_bs) if self.cuda_graph_bs is not None else None,
            "max_running_requests": self.max_running_requests,
            "disable_cuda_graph": self.disable_cuda_graph,
            "disable_cuda_graph_padding": self.disable_cuda_graph_padding,
            "sglang_version": self.sglang_version, "model_path": self.model_path,
            "context_length": self.context_length, "gpu_memory_mib": self.gpu_memory_mib,
            "extra_flags": dict(self.extra_flags), "env": sorted(self.env),
        }


@dataclass(frozen=True)
class PlannedCall:
    """One distinct sparse-MLA call shape and the num_tokens it is submitted with."""

    phase: Phase
    num_heads: int
    local_heads: int
    topk: int
    valid_topk: str
    extra_topk: int
    extra_page_size: int
    layer_kind: str
    num_tokens: tuple[int, ...]
    paths: dict[int, str]
    path: str
    supported: bool | None
    layers: int = 0
    regime: Literal["decode-sized", "prefill-sized"] = "decode-sized"

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase, "num_heads": self.num_heads, "local_heads": self.local_heads,
            "topk": self.topk, "valid_topk": self.valid_topk, "extra_topk": self.extra_topk,
            "extra_page_size": self.extra_page_size, "layer_kind": self.layer_kind,
            "layers": self.layers, "regime": self.regime, "num_tokens": list(self.num_tokens),
            "paths": {str(n): p for n, p in sorted(self.paths.items())},
            "path": self.path, "supported": self.supported,
        }


@dataclass(frozen=True)
class Plan:
    sglang_version: str | None
    tp: int
    dp: int
    attn_tp: int
    gamma: int | None
    speculative: str | None
    max_bs: int
    batch_sizes: tuple[int, ...]
    calls: tuple[PlannedCall, ...]
    notes: tuple[str, ...]
    max_running_requests: int = 0
    rules_verified: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "sglang_version": self.sglang_version, "tp": self.tp, "dp": self.dp,
            "attn_tp": self.attn_tp, "gamma": self.gamma, "speculative": self.speculative,
            "max_bs": self.max_bs, "max_running_requests": self.max_running_requests,
            "batch_sizes": list(self.batch_sizes), "rules_verified": self.rules_verified,
            "calls": [c.to_json() for c in self.calls], "notes": list(self.notes),
        }


def worst_path(paths: Mapping[int, str]) -> str:
    if not paths:
        return "unknown"
    return max(paths.values(), key=lambda p: _SEVERITY.get(p, -1))


def resolve_gamma(model: ModelConfig, serving: ServingConfig) -> tuple[int, str]:
    """SGLang's order: --speculative-dspark-block-size, checkpoint, num_draft_tokens - 1, 7.

    (``srt/arg_groups/speculative_hook.py`` DSpark handler.) For EAGLE-family
    algorithms the verify width is ``--speculative-num-draft-tokens`` itself.
    """
    ndt = int_flag(serving.extra_flags, "speculative_num_draft_tokens")
    if not serving.is_dspark and ndt is not None:
        return ndt - 1, "--speculative-num-draft-tokens - 1"
    if serving.gamma is not None:
        return serving.gamma, "flag"
    if model.dspark_block_size is not None:
        return model.dspark_block_size, "checkpoint dspark_block_size"
    if ndt is not None:
        return ndt - 1, "--speculative-num-draft-tokens - 1"
    return DEFAULT_DSPARK_GAMMA, "SGLang default"


def int_flag(flags: Mapping[str, str | bool], key: str) -> int | None:
    v = flags.get(key)
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except ValueError:
        raise UsageError(f"--{key.replace('_', '-')} {v!r}: not an integer") from None


def _flashinfer_heads(support: Dsv4Support | None) -> frozenset[int] | None:
    """The head counts SGLang 0.5.20+ believes FlashInfer decode serves (it ignores topk)."""
    if support is None:
        return None
    if support.pairs is not None:
        return frozenset(h for h, _ in support.pairs)
    if support.kind == "envelope":
        return frozenset(h for h in ENVELOPE_DEDICATED_HEADS if h <= support.max_heads)
    return frozenset()


@dataclass
class _Builder:
    model: ModelConfig
    serving: ServingConfig
    support: Dsv4Support | None
    rule: SglangRule
    use_flashinfer: bool
    fi_heads: frozenset[int] | None
    calls: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)

    def path(self, n: int, heads: int, topk: int, extra: int, page: int) -> str | None:
        if self.support is None or not self.use_flashinfer:
            return None
        return self.support.path_for(n, heads, topk, extra, page)

    def add(self, phase: Phase, *, heads_for: Any, local: int, topk: int, valid: str,
            ratio: int, layers: int, num_tokens: list[int], probe: list[int]) -> None:
        """Group the token counts by the heads the kernel sees, then record each group."""
        extra, page = (extra_cache(ratio, index_topk=self.model.index_topk,
                                   max_seq_len=self._max_seq_len()) if phase != "draft" else (0, 0))
        # Decode-sized and prefill-sized calls reach different kernels (and in 0.5.20+
        # different heads), so they are separate rows even within one phase.
        groups: dict[tuple[int, bool], list[int]] = {}
        for n in num_tokens or probe:
            groups.setdefault((heads_for(n), n > DECODE_MAX_TOKENS), []).append(n)
        for (heads, large), ns in sorted(groups.items()):
            key = (phase, heads, topk, extra, page, large)
            entry = self.calls.setdefault(key, {
                "local": local, "valid": valid, "kinds": [], "layers": 0,
                "tokens": set(), "paths": {}})
            kind = _LAYER_KIND[ratio]
            if kind not in entry["kinds"]:
                entry["kinds"].append(kind)
                entry["layers"] += layers
            if num_tokens:
                entry["tokens"].update(ns)
            for n in ns:
                p = self.path(n, heads, topk, extra, page)
                if p is not None:
                    entry["paths"][n] = p

    def _max_seq_len(self) -> int:
        ctx = self.serving.context_length or self.model.max_position_embeddings
        # req_to_token row headroom: 4 + draft tokens, at least page_size - 1 with speculation
        # (srt/mem_cache/allocation_sizing.py:46); the exact reserve moves the width by <= 64.
        return ctx + 4 + (255 if self.serving.speculative else 0)

    def build(self) -> tuple[PlannedCall, ...]:
        out = []
        for (phase, heads, topk, extra, page, large), e in self.calls.items():
            paths = dict(sorted(e["paths"].items()))
            path = worst_path(paths)
            out.append(PlannedCall(
                phase=phase, num_heads=heads, local_heads=e["local"], topk=topk,
                valid_topk=e["valid"], extra_topk=extra, extra_page_size=page,
                layer_kind="+".join(e["kinds"]), num_tokens=tuple(sorted(e["tokens"])),
                paths=paths, path=path,
                supported=None if path == "unknown" else path in ("decode", "prefill"),
                layers=e["layers"], regime="prefill-sized" if large else "decode-sized",
            ))
        order = {"draft": 0, "verify": 1, "decode": 2, "prefill": 3}
        out.sort(key=lambda c: (order[c.phase], c.regime, c.num_heads, c.topk, c.extra_topk))
        return tuple(out)


def make_plan(model: ModelConfig, serving: ServingConfig, support: Dsv4Support | None) -> Plan:
    """Plan every sparse-MLA call shape (see module docstring)."""
    serving.validate(model)
    match = rule_for(serving.sglang_version)
    rule = match.rule
    notes: list[str] = [match.note] if match.note else []
    algo = (serving.speculative_algorithm or "").upper() or None
    if algo is not None and algo not in _KNOWN_SPEC:
        notes.append(f"speculative algorithm {algo!r} is not one SGLang knows for DeepSeek-V4; "
                     "planned as DSpark-free verify only")
    if algo is not None and algo != "DSPARK":
        notes.append(f"{algo}: only target-verify calls are planned; the draft model's own "
                     "attention calls are not modelled")
    if serving.is_dspark and not rule.dspark:
        notes.append(f"SGLang {serving.sglang_version} has no DSpark (added in 0.5.16)")

    backend = serving.env.get("SGLANG_SM120_FLASHMLA_BACKEND", "flashinfer").lower()
    use_flashinfer = backend == "flashinfer"
    if not use_flashinfer:
        notes.append(f"SGLANG_SM120_FLASHMLA_BACKEND={backend}: sparse MLA does not run through "
                     "FlashInfer, so no call is judged against it")
    fi_heads = _flashinfer_heads(support)
    if (rule.iterates_decode_table and support is not None and support.kind == "envelope"
            and support.version is not None and support.version.startswith("0.7.0")):
        notes.append("SGLang 0.5.20+ iterates FlashInfer's _DECODE_DSV4_DISPATCH; FlashInfer "
                     "0.7.0's envelope is not iterable (TypeError at start-up, sglang PR #39492)")

    gamma: int | None = None
    if serving.speculative:
        gamma, gamma_src = resolve_gamma(model, serving)
        if algo == "DSPARK":
            notes.append(f"gamma {gamma} ({gamma_src})")
    attn_tp, local = serving.attn_tp, model.num_attention_heads // serving.attn_tp

    # max_running_requests: user, else the DSV4 hook's 256 (runs before the spec hook's 48).
    if serving.max_running_requests is not None:
        mrr = serving.max_running_requests
    elif model.architecture == "DeepseekV4ForCausalLM":
        mrr = DSV4_DEFAULT_MAX_RUNNING_REQUESTS
        notes.append(f"max_running_requests unset: SGLang's DeepSeek-V4 default {mrr} applies "
                     "(its DSpark default of 48 comes later and does not)")
    else:
        mrr = SPEC_DEFAULT_MAX_RUNNING_REQUESTS if serving.speculative else \
            DSV4_DEFAULT_MAX_RUNNING_REQUESTS
    per_worker = max(1, mrr // serving.attn_dp)

    if serving.cuda_graph_bs is not None:
        max_bs = max(serving.cuda_graph_bs)
    elif serving.cuda_graph_max_bs is not None:
        max_bs = serving.cuda_graph_max_bs
    else:
        mem = serving.gpu_memory_mib or ASSUMED_GPU_MEMORY_MIB
        max_bs = rule.default_max_bs(mem, serving.tp)
        if rule.clamp_default_max_bs_to_running and serving.max_running_requests is not None:
            max_bs = min(max_bs, serving.max_running_requests)
        if serving.gpu_memory_mib is None:
            notes.append(f"--cuda-graph-max-bs unset: SGLang picks it from GPU memory; assumed a "
                         f"96 GiB RTX PRO 6000 -> {max_bs} (tp {serving.tp})")
    ladder = capture_batch_sizes(serving.sglang_version, speculative=serving.speculative,
                                 max_bs=max_bs, disable_padding=serving.disable_cuda_graph_padding,
                                 explicit=serving.cuda_graph_bs)
    _, ladder_verified = ladder_rule(serving.sglang_version)

    a2a = str(serving.extra_flags.get("moe_a2a_backend", "none")).lower()
    alignment = attn_tp if (serving.enable_dp_attention or a2a not in ("none", "")) else 1

    def captured(width: int) -> list[int]:
        if serving.disable_cuda_graph:
            return list(range(1, per_worker + 1))
        return clamp_to_runner(ladder, max_requests=per_worker, alignment=alignment,
                               tokens_per_request=width)

    if serving.disable_cuda_graph:
        notes.append("CUDA graphs disabled: nothing is captured; num_tokens are the eager "
                     f"batch sizes 1..{per_worker} the server runs instead")
    if serving.env.get("SGLANG_RAGGED_VERIFY_MODE", "").lower() == "compact":
        notes.append("SGLANG_RAGGED_VERIFY_MODE=compact captures verify by token buckets; the "
                     "verify num_tokens below assume the default static mode")

    b = _Builder(model, serving, support, rule, use_flashinfer, fi_heads)
    window = model.sliding_window
    by_ratio = model.layers_by_ratio()

    def target_heads(n: int) -> int:
        return target_kernel_heads(rule, num_heads=model.num_attention_heads, attn_tp=attn_tp,
                                   num_tokens=n, flashinfer_backend=use_flashinfer,
                                   flashinfer_heads=fi_heads)

    extra_valid = {0: "", 4: f", extra min(len//4,{model.index_topk})", 128: ", extra len//128"}
    target_bs = captured(1)
    if serving.speculative:
        assert gamma is not None
        width = gamma + 1
        target_bs = captured(width)
        for ratio, layer_ids in by_ratio.items():
            b.add("verify", heads_for=target_heads, local=local, topk=target_topk(),
                  valid=f"min(prefix+i+1,{window}){extra_valid[ratio]}", ratio=ratio,
                  layers=len(layer_ids), num_tokens=[bs * width for bs in target_bs], probe=[])
        if algo == "DSPARK":
            dheads = draft_kernel_heads(num_heads=model.num_attention_heads, attn_tp=attn_tp)
            draft_bs = captured(gamma)
            b.add("draft", heads_for=lambda n: dheads, local=local, topk=draft_topk(gamma),
                  valid=f"min(prefix,{window})+{gamma}", ratio=0, layers=1,
                  num_tokens=[bs * gamma for bs in draft_bs], probe=[])
            if gamma * (draft_bs[-1] if draft_bs else 1) > DECODE_MAX_TOKENS:
                notes.append(f"draft calls above {DECODE_MAX_TOKENS} tokens take the prefill kernel "
                             f"at topk {draft_topk(gamma)}")
    else:
        for ratio, layer_ids in by_ratio.items():
            b.add("decode", heads_for=target_heads, local=local, topk=target_topk(),
                  valid=f"min(len,{window}){extra_valid[ratio]}", ratio=ratio,
                  layers=len(layer_ids), num_tokens=list(target_bs), probe=[])
    for ratio, layer_ids in by_ratio.items():
        b.add("prefill", heads_for=target_heads, local=local, topk=target_topk(),
              valid=f"min(pos+1,{window}){extra_valid[ratio]}", ratio=ratio,
              layers=len(layer_ids), num_tokens=[], probe=[PREFILL_PROBE_TOKENS])
    notes.append(f"prefill is eager (not captured); its row is a chunk of > {DECODE_MAX_TOKENS} "
                 "tokens. Shorter chunks take the decode kernel with the decode shapes")
    if model.sliding_window != 128:
        notes.append(f"model sliding_window {model.sliding_window}: SGLang hard-codes "
                     "SWA_WINDOW = 128 in the DSV4 backend; widths assume 128")
    if model.index_topk not in (512, 1024):
        notes.append(f"index_topk {model.index_topk}: SGLang asserts 512 or 1024 "
                     "(DSV4AttnMetadata.init_flashmla_related)")

    return Plan(
        sglang_version=serving.sglang_version, tp=serving.tp, dp=serving.dp, attn_tp=attn_tp,
        gamma=gamma, speculative=serving.speculative_algorithm, max_bs=max_bs,
        batch_sizes=tuple(target_bs), calls=b.build(), notes=tuple(notes),
        max_running_requests=mrr, rules_verified=match.exact and ladder_verified,
    )
