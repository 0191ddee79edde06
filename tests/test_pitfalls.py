"""The pitfall knowledge base: table integrity and each rule's trigger."""

from __future__ import annotations

import dataclasses

import pytest
from packaging.specifiers import SpecifierSet

from dsparkctl.findings import Severity
from dsparkctl.pitfalls import FACTS, PITFALLS, Facts, evaluate

PCIE4 = tuple(tuple("X" if i == j else ("PHB" if (i // 2) == (j // 2) else "SYS")
                    for j in range(4)) for i in range(4))


def ids(facts: Facts) -> set[str]:
    return {f.id for f in evaluate(facts)}


def test_table_is_well_formed() -> None:
    seen = set()
    for p in PITFALLS:
        assert p.id not in seen, p.id
        seen.add(p.id)
        assert p.title and p.fix
        for name in (*p.facts, *p.absent):
            assert name in FACTS, f"{p.id}: unknown fact {name}"
        for spec in p.packages.values():
            SpecifierSet(spec)


def test_quiet_on_a_clean_single_gpu_box() -> None:
    facts = Facts(packages={"sglang": "0.5.23", "flashinfer-python": "0.7.2.post1"},
                  gpu_ccs=("12.0",), speculative="DSPARK", gamma=5,
                  sglang_flashinfer_pin="==0.7.2.post1")
    assert ids(facts) == set()


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (Facts(packages={"sglang": "0.5.21", "flashinfer-python": "0.7.0"}, tp=4),
         "sglang-iterates-envelope"),
        (Facts(packages={"flashinfer-python": "0.6.18"}, gpu_ccs=("12.0",), speculative="DSPARK"),
         "flashinfer-0618-verify-numerics"),
        (Facts(packages={"flashinfer-python": "0.7.0"}, gpu_ccs=("12.0",), speculative="DSPARK"),
         "flashinfer-empty-row-probability"),
        (Facts(gpu_ccs=("12.1",)), "sm121-arch-list"),
        (Facts(gpu_ccs=("12.1",), speculative="DSPARK"), "gb10-padded-graph-hang"),
        (Facts(packages={"sglang": "0.5.14"}, enable_dp_attention=True, speculative="EAGLE"),
         "sglang-negative-draft-lengths"),
        (Facts(packages={"sglang": "0.5.15"}, speculative="DSPARK"), "sglang-no-dspark"),
        (Facts(speculative="DSPARK", tp=4, enable_dp_attention=True, gamma=5),
         "dspark-tp4-dp-attention-corruption"),
        (Facts(gpu_ccs=("12.0",) * 4, topology=PCIE4), "pcie-p2p-hang"),
        (Facts(gpu_ccs=("12.0",) * 4, topology=PCIE4), "pcie-custom-all-reduce"),
        (Facts(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
         "expandable-segments-breaks-capture"),
        (Facts(torch_cuda="13.0", packages={"nvidia-cutlass-dsl-libs-cu12": "4.7.0"}),
         "cutlass-dsl-cu12-on-cu13"),
        (Facts(nvcc_version="12.8.93", gpu_ccs=("12.0",)), "nvcc-12-8-sm12x-jit"),
        (Facts(torch_cuda="13.0", cuda_driver_version="12.9"), "torch-cuda-newer-than-driver"),
        (Facts(env={"SGLANG_SM120_FLASHMLA_BACKEND": "triton"}), "triton-backend-prefill-abort"),
        (Facts(env={"FLASHINFER_DISABLE_VERSION_CHECK": "1"}), "flashinfer-version-check-disabled"),
        (Facts(packages={"vllm": "0.20.0", "sglang": "0.5.19"}), "vllm-flashinfer-pin"),
        (Facts(packages={"sglang": "0.5.17", "flashinfer-python": "0.6.18"},
               sglang_flashinfer_pin="==0.6.15.post1"), "flashinfer-off-sglang-pin"),
        (Facts(packages={"flashinfer-python": "0.6.18.post1"}, gpu_ccs=("12.0",)),
         "flashinfer-0618-dual-prefill-corruption"),
    ],
)
def test_rule_fires(facts: Facts, expected: str) -> None:
    assert expected in ids(facts)


@pytest.mark.parametrize(
    ("facts", "absent"),
    [
        (Facts(packages={"sglang": "0.5.21", "flashinfer-python": "0.7.1"}), "sglang-iterates-envelope"),
        (Facts(packages={"sglang": "0.5.19", "flashinfer-python": "0.7.0"}), "sglang-iterates-envelope"),
        (Facts(gpu_ccs=("12.1",), env={"FLASHINFER_CUDA_ARCH_LIST": "12.0f"}), "sm121-arch-list"),
        (Facts(packages={"sglang": "0.5.15"}, enable_dp_attention=True, speculative="EAGLE"),
         "sglang-negative-draft-lengths"),
        (Facts(gpu_ccs=("12.0",) * 4, topology=PCIE4, env={"NCCL_P2P_DISABLE": "1"}), "pcie-p2p-hang"),
        (Facts(gpu_ccs=("12.0",) * 4, topology=PCIE4, disable_custom_all_reduce=True),
         "pcie-custom-all-reduce"),
        (Facts(gpu_ccs=("9.0",) * 2, topology=(("X", "NV18"), ("NV18", "X"))), "pcie-p2p-hang"),
        (Facts(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, disable_cuda_graph=True),
         "expandable-segments-breaks-capture"),
        (Facts(torch_cuda="13.0", packages={"nvidia-cutlass-dsl-libs-cu12": "4.7.0",
                                            "nvidia-cutlass-dsl-libs-cu13": "4.7.0"}),
         "cutlass-dsl-cu12-on-cu13"),
        (Facts(torch_cuda="12.9", cuda_driver_version="13.0"), "torch-cuda-newer-than-driver"),
        (Facts(packages={"sglang": "0.5.17", "flashinfer-python": "0.6.15.post1"},
               sglang_flashinfer_pin="==0.6.15.post1"), "flashinfer-off-sglang-pin"),
        # the installed router sends every planned dual-cache prefill-sized call to the bundled
        # kernel (doctor asks the router's own rule)
        (Facts(packages={"flashinfer-python": "0.6.18"}, gpu_ccs=("12.0",),
               dual_prefill_routed=True), "flashinfer-0618-dual-prefill-corruption"),
        (Facts(packages={"flashinfer-python": "0.7.0"}, gpu_ccs=("12.0",)),
         "flashinfer-0618-dual-prefill-corruption"),
        (Facts(packages={"flashinfer-python": "0.6.18"}, gpu_ccs=("12.0",),
               env={"SGLANG_SM120_FLASHMLA_BACKEND": "triton"}),
         "flashinfer-0618-dual-prefill-corruption"),
        (Facts(packages={"flashinfer-python": "0.6.18"}, gpu_ccs=("12.0",),
               env={"SGLANG_SM120_FLASHMLA_BACKEND": "torch"}),
         "flashinfer-0618-dual-prefill-corruption"),
    ],
)
def test_rule_stays_quiet(facts: Facts, absent: str) -> None:
    assert absent not in ids(facts)


def test_severity_and_detail_reach_the_finding() -> None:
    facts = Facts(packages={"sglang": "0.5.17", "flashinfer-python": "0.6.18"},
                  sglang_flashinfer_pin="==0.6.15.post1")
    (f,) = [f for f in evaluate(facts) if f.id == "flashinfer-off-sglang-pin"]
    assert f.severity is Severity.WARNING
    assert "0.6.15.post1" in f.detail and "0.6.18" in f.detail
    assert dataclasses.asdict(f)["fix"]


def test_the_envelope_crash_needs_attention_tp_above_1_and_the_flashinfer_backend() -> None:
    """SGLang's _kernel_num_heads returns before it walks FlashInfer's table at attn_tp 1,
    and the triton backend never walks it."""
    pk = {"sglang": "0.5.23", "flashinfer-python": "0.7.0"}
    fires = {f.id for f in evaluate(Facts(packages=pk, tp=4))}
    assert "sglang-iterates-envelope" in fires
    for facts in (Facts(packages=pk, tp=1),
                  Facts(packages=pk, tp=8, dp=8, enable_dp_attention=True),
                  Facts(packages=pk, tp=4, env={"SGLANG_SM120_FLASHMLA_BACKEND": "triton"})):
        assert "sglang-iterates-envelope" not in {f.id for f in evaluate(facts)}


def test_the_what_if_table_does_not_offer_0618_on_sm12x_unless_routed() -> None:
    """FlashInfer 0.6.18 corrupts every prompt over 64 tokens through SGLang's SM120 shim
    (dual-cache prefill, flashinfer #5095): on an SM12x box it is no upgrade, unless the
    installed router already sends those calls to the bundled kernel."""
    from dsparkctl.pitfalls import release_blockers

    box = Facts(packages={"flashinfer-python": "0.6.15.post1", "sglang": "0.5.17"},
                gpu_ccs=("12.0",), speculative="DSPARK")
    assert "flashinfer-0618-dual-prefill-corruption" in release_blockers(box, "0.6.18.post1")
    assert release_blockers(box, "0.7.1") == []
    routed = Facts(**{**box.__dict__, "dual_prefill_routed": True})
    assert release_blockers(routed, "0.6.18") == []
    assert release_blockers(Facts(packages=box.packages), "0.6.18") == []  # no SM12x GPU seen

