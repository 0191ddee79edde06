"""bench/p_precision_emulation.py on the CPU: the model behind session 30's diagnosis of the smoke's
mismatches must reproduce the reference when P is exact (or its verdict on fp16 P means nothing),
and its roundings must each cost what they claim."""

from __future__ import annotations

import pytest
from benchscripts import load

torch = pytest.importorskip("torch")

emu = load("p_precision_emulation")


@pytest.fixture(scope="module")
def case() -> tuple[dict, torch.Tensor]:
    from dsparkctl import kernel_smoke as ks
    from dsparkctl.kernel import reference

    call = ks.CallShape("verify", 16, 128, extra_topk=192, num_tokens=(12,))
    kw = ks.make_call_inputs(call, 12, seed=3)
    ref, _ = reference.sparse_mla_decode_ref(**kw, compute_dtype=torch.float64)
    return kw, ref.double()


def test_exact_p_is_the_reference_up_to_the_bf16_output(case: tuple[dict, torch.Tensor]) -> None:
    """With P unrounded, the tile loop (lazy or eager running max, the sink gate, 4 tiles of 64
    with the extra cache's) is the reference rounded to bf16: within half a bf16 ulp (at most 2^-8
    relative), so at most 0.25 of FlashMLA's tolerance (its 2/128 relative part)."""
    kw, ref = case
    for lazy in (0.0, 8.0):
        out = emu.emulate(kw, lazy, "exact")
        assert torch.equal(torch.isnan(out), torch.isnan(ref))
        fin = torch.isfinite(ref)
        assert torch.equal(out[fin], ref[fin].to(torch.bfloat16).double()) or \
            float(((out - ref).abs()[fin] / ref.abs()[fin].clamp_min(1e-30)).max()) <= 2.0**-8
        ratio, over = emu.tolerance_ratio(out, ref)
        assert ratio <= 0.2501 and over == 0, (lazy, ratio)


def test_roundings_order_fp16_worst_then_hilo(case: tuple[dict, torch.Tensor]) -> None:
    """One fp16 pass loses more than hi + lo, and hi + lo is as good as exact P at this scale (the
    bf16 output rounding dominates): the ordering session 30's fix rests on."""
    kw, ref = case
    modes = ("fp16", "hilo", "hilo8", "exact")
    diff = {m: float((emu.emulate(kw, 8.0, m) - ref).nan_to_num().abs().max()) for m in modes}
    assert diff["fp16"] > diff["hilo"], diff
    assert diff["hilo"] <= diff["exact"] * 1.01 + 1e-12, diff
    # v52's WS warpgroup 1: the lo part in e4m3 (4 bits of a part <= 2^-11 of P) loses nothing visible
    assert diff["fp16"] > diff["hilo8"] and diff["hilo8"] <= diff["exact"] * 1.01 + 1e-12, diff


def test_unknown_rounding_mode_is_refused() -> None:
    p = torch.tensor([0.3, 1.0], dtype=torch.float64)
    assert torch.equal(emu._round_p(p, "exact"), p)
    with pytest.raises(ValueError, match="fp16, hilo, hilo8 or exact"):
        emu._round_p(p, "bf16")
