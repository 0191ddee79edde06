"""MODEL1 cache layout: quantize / dequantize round trips, byte placement, padded strides."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from kernel_naive import decode_slot, raw_bytes  # noqa: E402

from dsparkctl.kernel import layout  # noqa: E402


def _kv(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    kv = torch.randn(n, 512, generator=g)
    # spread magnitudes over groups so scales differ per 64-block
    kv[:, :448] *= torch.exp2(torch.randint(-6, 7, (n, 7), generator=g).float()).repeat_interleave(64, dim=1)
    return kv


@pytest.mark.parametrize(("n", "pbs", "pad"), [(7, 4, 0), (130, 64, 0), (300, 256, 0), (9, 2, 48), (5, 1, 0)])
def test_roundtrip_error_is_fp8_rounding(n: int, pbs: int, pad: int) -> None:
    kv = _kv(n, seed=n + pbs)
    cache = layout.quantize_kv(kv, pbs, page_stride_pad=pad)
    assert cache.shape == (-(-n // pbs), pbs, 1, 584)
    assert layout.page_stride_bytes(cache) == pbs * 584 + pad
    deq = layout.dequantize_kv(cache)
    assert deq.shape == (cache.shape[0] * pbs, 512)
    got = deq[:n]
    # rope: stored as bf16, exact after rounding
    assert torch.equal(got[:, 448:], kv[:, 448:].to(torch.bfloat16).float())
    # nope: e4m3 has 3 mantissa bits -> relative error <= 2^-4, plus subnormal spacing
    scale = torch.exp2(torch.ceil(torch.log2(kv[:, :448].reshape(n, 7, 64).abs().amax(-1) / 448.0)))
    scale = scale.repeat_interleave(64, dim=1)
    err = (got[:, :448] - kv[:, :448]).abs()
    assert bool((err <= kv[:, :448].abs() * 2.0**-4 + scale * 2.0**-9).all())
    # unused slots of the last page are zero
    assert torch.count_nonzero(deq[n:]) == 0


def test_requantize_is_lossless() -> None:
    # Values already on the FP8 grid survive another round trip exactly (the scale byte may
    # drop by one where rounding pulled a group's max onto 448 * 2^k; the values may not).
    kv = _kv(64, seed=3)
    d1 = layout.dequantize_kv(layout.quantize_kv(kv, 16))
    d2 = layout.dequantize_kv(layout.quantize_kv(d1, 16))
    assert torch.equal(d1, d2)


def test_scales_are_smallest_power_of_two() -> None:
    kv = _kv(32, seed=5)
    cache = layout.quantize_kv(kv, 8)
    pages = layout.raw_pages(cache)
    for slot in (0, 7, 8, 31):
        p, r = divmod(slot, 8)
        sb = pages[p, 8 * 576 + r * 8 : 8 * 576 + r * 8 + 7].to(torch.int32) - 127
        amax = kv[slot, :448].reshape(7, 64).abs().amax(-1)
        assert bool((amax / torch.exp2(sb.float()) <= 448).all())
        assert bool((amax / torch.exp2(sb.float() - 1) > 448).all())
        assert int(pages[p, 8 * 576 + r * 8 + 7]) == 0  # pad byte


@pytest.mark.parametrize(("pbs", "pad"), [(4, 0), (3, 40), (64, 576 - (64 * 584) % 576)])
def test_byte_placement_matches_independent_decoder(pbs: int, pad: int) -> None:
    n = 3 * pbs + 1
    kv = _kv(n, seed=pbs)
    cache = layout.quantize_kv(kv, pbs, page_stride_pad=pad)
    deq = layout.dequantize_kv(cache)
    raw = raw_bytes(cache)
    for slot in (0, pbs - 1, pbs, n - 1):
        ref = torch.tensor(decode_slot(raw, slot), dtype=torch.float32)
        assert torch.equal(ref, deq[slot]), slot


def test_sglang_page_bytes() -> None:
    assert layout.sglang_page_bytes(256) == 260 * 576  # 256*584 = 149504 -> 149760
    assert layout.sglang_page_bytes(64) == 37440  # FlashInfer's padded 64-token page


def test_fill_unused_slots_poisons_only_the_tail() -> None:
    kv = _kv(10, seed=9)
    cache = layout.quantize_kv(kv, 4)
    before = layout.dequantize_kv(cache)[:10]
    layout.fill_unused_slots(cache, 10)
    after = layout.dequantize_kv(cache)
    assert torch.equal(after[:10], before)
    assert bool(torch.isnan(after[10:, :448]).all())


def test_raw_pages_rejects_overlapping_pages() -> None:
    buf = torch.zeros(4 * 2000, dtype=torch.uint8)
    view = buf.as_strided((4, 2, 1, 584), (100, 584, 584, 1))
    with pytest.raises(ValueError, match="page stride"):
        layout.raw_pages(view)


def test_quantize_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="512"):
        layout.quantize_kv(torch.zeros(3, 448), 4)
    with pytest.raises(ValueError, match="page_block_size"):
        layout.quantize_kv(torch.zeros(3, 512), 0)


def test_e8m0_255_is_nan_and_the_rest_are_powers_of_two() -> None:
    b = torch.arange(256, dtype=torch.uint8)
    f = layout.ue8m0_to_float(b)
    assert torch.isnan(f[255]) and not torch.isnan(f[:255]).any()
    assert torch.equal(f[:255], torch.exp2(torch.arange(255, dtype=torch.float32) - 127.0))
    assert f[0] > 0  # 2^-127: an fp32 denormal, not flushed
