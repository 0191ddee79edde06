"""The knowledge base of field pitfalls, as data, and its evaluation.

Each entry says when it applies with two kinds of condition, both data:
package version specifiers (``packages``) and named facts (``facts`` that
must hold, ``absent`` that must not). Facts are small pure predicates over
``Facts`` (what the probe and the plan established), so a new pitfall is one
table row, and the same evaluation serves doctor, report merge and tests.
Sources for every entry are in KNOWLEDGE.md §2, §3, §5 and the seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from dsparkctl.findings import Finding, Severity

E, W = Severity.ERROR, Severity.WARNING


@dataclass(frozen=True)
class Facts:
    """What doctor knows about a deployment, flattened for rule matching."""

    packages: Mapping[str, str | None] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    gpu_ccs: tuple[str, ...] = ()
    topology: tuple[tuple[str, ...], ...] = ()
    torch_cuda: str | None = None
    cuda_driver_version: str | None = None
    nvcc_version: str | None = None
    speculative: str | None = None
    tp: int = 1
    dp: int = 1
    enable_dp_attention: bool = False
    gamma: int | None = None
    disable_cuda_graph: bool = False
    disable_custom_all_reduce: bool = False
    sglang_flashinfer_pin: str | None = None
    # the installed dsparkctl router sends every planned prefill-sized dual-cache call to the
    # bundled kernel (doctor fills it from the router's own rule)
    dual_prefill_routed: bool = False


def _ver(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _env_true(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _pcie_only(f: Facts) -> bool:
    labels = {lab for row in f.topology for lab in row if lab != "X"}
    return len(f.gpu_ccs) > 1 and bool(labels) and labels <= {"PHB", "SYS", "NODE", "PXB", "PIX"}


def _major(text: str | None) -> int | None:
    v = _ver(text)
    return v.major if v else None


def _cutlass_cu12_on_cu13(f: Facts) -> bool:
    return (_major(f.torch_cuda) == 13
            and bool(f.packages.get("nvidia-cutlass-dsl-libs-cu12"))
            and not f.packages.get("nvidia-cutlass-dsl-libs-cu13"))


def _torch_cuda_newer_than_driver(f: Facts) -> bool:
    t, d = _ver(f.torch_cuda), _ver(f.cuda_driver_version)
    return t is not None and d is not None and (t.major, t.minor) > (d.major, d.minor)


def _flashinfer_off_pin(f: Facts) -> bool:
    inst = f.packages.get("flashinfer-python")
    if not inst or not f.sglang_flashinfer_pin:
        return False
    try:
        return _ver(inst) not in SpecifierSet(f.sglang_flashinfer_pin)
    except InvalidSpecifier:
        return False


# Named predicates: the vocabulary the table below is written in.
FACTS: dict[str, Callable[[Facts], bool]] = {
    "speculative": lambda f: bool(f.speculative),
    "dspark": lambda f: (f.speculative or "").upper() == "DSPARK",
    "eagle_or_mtp": lambda f: (f.speculative or "").upper() in {"EAGLE", "EAGLE3", "MTP", "NEXTN"},
    "dp_attention": lambda f: f.enable_dp_attention,
    # attention TP size > 1 (SGLang's _kernel_num_heads returns early at 1)
    "attn_tp_gt_1": lambda f: (f.tp // f.dp if f.enable_dp_attention and f.dp else f.tp) > 1,
    "tp4_or_more": lambda f: f.tp >= 4,
    "gamma_ge_5": lambda f: (f.gamma or 0) >= 5,
    "multi_gpu": lambda f: len(f.gpu_ccs) > 1 or f.tp > 1,
    "pcie_only": _pcie_only,
    "sm12x": lambda f: any(cc.startswith("12.") for cc in f.gpu_ccs),
    "sm121": lambda f: "12.1" in f.gpu_ccs,
    "cuda_graph": lambda f: not f.disable_cuda_graph,
    "custom_all_reduce_off": lambda f: f.disable_custom_all_reduce,
    "nccl_p2p_disabled": lambda f: _env_true(f.env, "NCCL_P2P_DISABLE"),
    "expandable_segments": lambda f: "expandable_segments:true"
    in f.env.get("PYTORCH_CUDA_ALLOC_CONF", "").replace(" ", "").lower(),
    "arch_list_120f": lambda f: "12.0f" in f.env.get("FLASHINFER_CUDA_ARCH_LIST", ""),
    "flashinfer_version_check_disabled": lambda f: _env_true(f.env, "FLASHINFER_DISABLE_VERSION_CHECK"),
    "triton_backend": lambda f: f.env.get("SGLANG_SM120_FLASHMLA_BACKEND", "").lower() == "triton",
    "torch_backend": lambda f: f.env.get("SGLANG_SM120_FLASHMLA_BACKEND", "").lower() == "torch",
    "nvcc_12_8": lambda f: (f.nvcc_version or "").startswith("12.8"),
    "cutlass_cu12_on_cu13": _cutlass_cu12_on_cu13,
    "torch_cuda_newer_than_driver": _torch_cuda_newer_than_driver,
    "flashinfer_off_sglang_pin": _flashinfer_off_pin,
    "dual_prefill_routed": lambda f: f.dual_prefill_routed,
}


@dataclass(frozen=True)
class Pitfall:
    id: str
    severity: Severity
    title: str
    fix: str
    refs: tuple[str, ...] = ()
    packages: Mapping[str, str] = field(default_factory=dict)
    facts: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    detail: Callable[[Facts], str] | None = None

    def applies(self, f: Facts) -> bool:
        for name, spec in self.packages.items():
            v = _ver(f.packages.get(name))
            if v is None or v not in SpecifierSet(spec, prereleases=True):
                return False
        return (all(FACTS[n](f) for n in self.facts)
                and not any(FACTS[n](f) for n in self.absent))


GH_SG = "https://github.com/sgl-project/sglang"
GH_FI = "https://github.com/flashinfer-ai/flashinfer"

PITFALLS: tuple[Pitfall, ...] = (
    Pitfall(
        "sglang-iterates-envelope", E,
        "SGLang iterates FlashInfer's DSV4 decode table, but FlashInfer 0.7.0's envelope is not iterable",
        "Use flashinfer-python>=0.7.1 (its envelope is iterable) or the version SGLang pins; "
        "the SGLang-side fix is sglang PR #39492.",
        (f"{GH_SG}/pull/39492", f"{GH_FI}/pull/4802"),
        packages={"sglang": ">=0.5.20,<0.5.24", "flashinfer-python": ">=0.7.0,<0.7.1"},
        # the table is walked in _kernel_num_heads only past its attn_tp == 1 return, and
        # only with the flashinfer backend (models/deepseek_v4.py, 0.5.23)
        facts=("attn_tp_gt_1",), absent=("triton_backend",),
    ),
    Pitfall(
        "flashinfer-0618-verify-numerics", W,
        "FlashInfer 0.6.18's SM120 decode kernel (FP8 Q and P, bf16 split partials) is suspected of "
        "corrupting long greedy DSpark generations in verify-sized calls",
        "Prove it on this deployment with `dsparkctl smoke --long`; route DSV4 decode to the "
        "reference-accurate bundled kernel with `dsparkctl install-kernels --route all`.",
        (f"{GH_SG}/issues/33985",),
        packages={"flashinfer-python": ">=0.6.18,<0.7"}, facts=("dspark", "sm12x"),
    ),
    Pitfall(
        "flashinfer-empty-row-probability", W,
        "FlashInfer < 0.7.1 gives spurious probability to empty rows (all -1 / zero length), "
        "which CUDA-graph padding rows of speculative batches produce",
        "Upgrade to flashinfer-python>=0.7.1, or route decode to the bundled kernel "
        "(`dsparkctl install-kernels --route all`), which returns 0 for empty rows.",
        (f"{GH_FI}/issues/4484", f"{GH_FI}/pull/5197"),
        packages={"flashinfer-python": "<0.7.1"}, facts=("speculative", "sm12x"),
    ),
    # An error: SGLang's SM120 shim does not mask those lanes (0.5.23 read), and the report
    # on this exact stack has every prompt over 64 tokens come back as garbage.
    Pitfall(
        "flashinfer-0618-dual-prefill-corruption", E,
        "FlashInfer 0.6.18 DSV4 dual-cache prefill with more than 64 tokens is silently corrupted "
        "unless index lanes at positions >= topk_length are -1, which SGLang's SM120 shim does not "
        "do: every prompt over 64 tokens comes back wrong",
        "Upgrade to flashinfer-python>=0.7.0, or `dsparkctl install-kernels` (its router sends "
        "these calls to the bundled kernel, which never reads past topk_length), or serve with "
        "SGLANG_SM120_FLASHMLA_BACKEND=triton (slow prefill).",
        (f"{GH_FI}/issues/5095",),
        packages={"flashinfer-python": ">=0.6.18,<0.7"}, facts=("sm12x",),
        absent=("dual_prefill_routed", "triton_backend", "torch_backend"),
    ),
    Pitfall(
        "gb10-padded-graph-hang", W,
        "CUDA-graph replay of padded speculative batches hangs on GB10 (SM121)",
        "Watch flashinfer #5015; meanwhile run `dsparkctl smoke` on the box, or serve with "
        "--disable-cuda-graph-padding.",
        (f"{GH_FI}/issues/5015",), facts=("sm121", "speculative", "cuda_graph"),
    ),
    Pitfall(
        "sm121-arch-list", W,
        "On SM121 (GB10) some CuTe-DSL paths accept only sm_120a",
        "export FLASHINFER_CUDA_ARCH_LIST=12.0f", facts=("sm121",), absent=("arch_list_120f",),
    ),
    Pitfall(
        "sglang-negative-draft-lengths", E,
        "SGLang < 0.5.15 lets DP-padded draft-extend rows carry negative lengths, read as uint32 by "
        "the fused top-k kernel: illegal memory access under DP attention with MTP/EAGLE",
        "Upgrade to sglang>=0.5.15 (PR #30378 clamps the producers).",
        (f"{GH_SG}/pull/30378", f"{GH_SG}/pull/31123"),
        packages={"sglang": "<0.5.15"}, facts=("dp_attention", "eagle_or_mtp"),
    ),
    Pitfall(
        "sglang-no-dspark", E,
        "This SGLang has no DSpark speculative decoding (added in 0.5.16)",
        "Upgrade to sglang>=0.5.16 (0.5.19+ serves topk 192 with its pinned FlashInfer).",
        (), packages={"sglang": "<0.5.16"}, facts=("dspark",),
    ),
    Pitfall(
        "dspark-tp4-dp-attention-corruption", W,
        "DSpark depth >= 5 with TP4 + DP attention corrupts about 1% of requests (repetition, "
        "token salad) on affected SGLang builds",
        "Run `dsparkctl smoke --long --endpoint URL --concurrency 8`; if it trips, serve without "
        "--enable-dp-attention or with a smaller --speculative-dspark-block-size until sglang PR "
        "#34021 lands.",
        (f"{GH_SG}/issues/33800", f"{GH_SG}/pull/34021"),
        facts=("dspark", "tp4_or_more", "dp_attention", "gamma_ge_5"),
    ),
    Pitfall(
        "pcie-p2p-hang", E,
        "GPUs are connected only over PCIe host bridges (PHB/SYS) and NCCL_P2P_DISABLE is not set: "
        "NCCL hangs on the first all-reduce on such boxes",
        "export NCCL_P2P_DISABLE=1 before starting the server.",
        (), facts=("pcie_only",), absent=("nccl_p2p_disabled",),
    ),
    Pitfall(
        "pcie-custom-all-reduce", W,
        "Custom all-reduce is enabled on a PCIe-only multi-GPU box",
        "Add --disable-custom-all-reduce to the launch line.",
        (), facts=("pcie_only",), absent=("custom_all_reduce_off",),
    ),
    Pitfall(
        "expandable-segments-breaks-capture", E,
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True breaks CUDA-graph capture",
        "Unset expandable_segments (remove it from PYTORCH_CUDA_ALLOC_CONF) or serve with "
        "--disable-cuda-graph.",
        (), facts=("expandable_segments", "cuda_graph"),
    ),
    Pitfall(
        "cutlass-dsl-cu12-on-cu13", E,
        "nvidia-cutlass-dsl's cu12 libs are installed on a CUDA 13 torch stack: CuTe-DSL kernels "
        "ICE (rmsnorm) at start-up",
        "pip uninstall -y nvidia-cutlass-dsl-libs-cu12 && pip install 'nvidia-cutlass-dsl[cu13]'",
        ("https://github.com/NVIDIA/cutlass/issues/3170", "https://github.com/NVIDIA/cutlass/issues/3259"),
        facts=("cutlass_cu12_on_cu13",),
    ),
    Pitfall(
        "nvcc-12-8-sm12x-jit", E,
        "CUDA 12.8's nvcc fails FlashInfer's SM12x JIT builds",
        "Use a CUDA toolkit >= 12.9 (SM 12.0 then builds as 120f) and point CUDA_HOME at it.",
        (f"{GH_FI}/pull/3633",), facts=("nvcc_12_8", "sm12x"),
    ),
    Pitfall(
        "torch-cuda-newer-than-driver", E,
        "torch was built for a newer CUDA than the installed driver supports",
        "Upgrade the NVIDIA driver, or install a torch build for the driver's CUDA version.",
        (), facts=("torch_cuda_newer_than_driver",),
    ),
    Pitfall(
        "triton-backend-prefill-abort", W,
        "SGLANG_SM120_FLASHMLA_BACKEND=triton clears CUDA-graph capture but was seen aborting on the "
        "first real prefill, and is 10-100x slower than a native decode kernel",
        "Unset SGLANG_SM120_FLASHMLA_BACKEND and serve the missing shapes with "
        "`dsparkctl install-kernels` instead.",
        (f"{GH_SG}/issues/33985",), facts=("triton_backend",),
    ),
    Pitfall(
        "flashinfer-version-check-disabled", W,
        "FLASHINFER_DISABLE_VERSION_CHECK hides flashinfer-cubin / flashinfer-jit-cache version skew",
        "Unset FLASHINFER_DISABLE_VERSION_CHECK and install matching flashinfer-* versions.",
        (), facts=("flashinfer_version_check_disabled",),
    ),
    Pitfall(
        "vllm-flashinfer-pin", W,
        "vLLM is installed beside SGLang: its pins can silently downgrade flashinfer-python",
        "Keep vLLM in its own venv, or reinstall the flashinfer-python version SGLang pins after "
        "installing vLLM.",
        (), packages={"vllm": ">=0", "sglang": ">=0"},
    ),
    Pitfall(
        "flashinfer-off-sglang-pin", W,
        "The installed flashinfer-python is not the version this SGLang release pins",
        "Install the pinned version (see the finding's detail) unless you deliberately upgraded; "
        "then run `dsparkctl smoke` to prove the pair.",
        (), facts=("flashinfer_off_sglang_pin",),
        detail=lambda f: (f"sglang {f.packages.get('sglang')} pins flashinfer-python"
                          f"{f.sglang_flashinfer_pin}; installed {f.packages.get('flashinfer-python')}"),
    ),
)


def release_blockers(facts: Facts, flashinfer_version: str,
                     table: tuple[Pitfall, ...] = PITFALLS) -> list[str]:
    """The error pitfalls that FlashInfer ``flashinfer_version`` would meet in this deployment
    (its SGLang, its settings): the what-if table must not offer a release that crashes."""
    f = dataclasses.replace(facts, packages={**facts.packages,
                                             "flashinfer-python": flashinfer_version})
    return [p.id for p in table if p.severity is Severity.ERROR
            and "flashinfer-python" in p.packages and p.applies(f)]


def evaluate(facts: Facts, table: tuple[Pitfall, ...] = PITFALLS) -> list[Finding]:
    out = []
    for p in table:
        if not p.applies(facts):
            continue
        detail = p.detail(facts) if p.detail else ""
        out.append(Finding(p.id, p.severity, p.title, p.fix, p.refs, detail))
    return out
