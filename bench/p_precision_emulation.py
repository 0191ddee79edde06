"""CPU emulation of the nope P.V's precision on the smoke's data: why the bundled kernel's output
misses FlashMLA's tolerance on a few elements of the smoke's large calls (session 30).

    python bench/p_precision_emulation.py [--seeds 0 1] [--shape draft,64,192,0,480 ...]

The smoke's inputs (``kernel_smoke.make_call_inputs``: SGLang's layouts, per-group scale spread,
sinks) go through the kernel's softmax in 64-candidate tiles, in fp64 except for P in the P.V of
the 448 nope dims, which is rounded as the kernel rounds it (after the kernel's shift by the tile's
V exponent minus the running one): one fp16 pass (11 significant bits, v12's design), or fp16 hi +
lo (two passes, ~22 bits), or not at all; with the WS kernel's lazy
running max (``lazy8``: moves only when a tile's max passes it by more than 8, base 2) or the
eager one. The rope dims take P exactly (the kernel's bf16 hi + lo). Output rounded to bf16 like
the kernel's. Prints per variant the largest |err| / (1e-3 + 2/128 |ref|) against the fp64
reference and how many elements exceed 1. No GPU, no kernel build: this models the arithmetic.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsparkctl import kernel_smoke as ks
from dsparkctl.kernel import reference as ref_mod

VARIANTS = {  # name: (lazy threshold (0 = eager), P rounding of the nope P.V)
    "lazy8_fp16": (8.0, "fp16"),
    "eager_fp16": (0.0, "fp16"),
    "lazy8_fp16_hilo": (8.0, "hilo"),
    "lazy8_fp16_hi_e4m3lo": (8.0, "hilo8"),
    "exact": (0.0, "exact"),
}


LO8_SHIFT = 12  # the kernel's kWsLo8Shift at the default lazy max (8)


def _round_p(p: torch.Tensor, mode: str) -> torch.Tensor:
    if mode not in ("fp16", "hilo", "hilo8", "exact"):
        raise ValueError(f"P rounding must be fp16, hilo, hilo8 or exact, got {mode!r}")
    if mode == "exact":
        return p
    hi = p.to(torch.float16).double()
    if mode == "fp16":
        return hi
    if mode == "hilo":
        return hi + (p - hi).to(torch.float16).double()
    # the WS kernel's warpgroup 1: the lo part as e4m3 of lo x 2^LO8_SHIFT (|lo| <= 2^-4 with P <= 2^8)
    return hi + ((p - hi) * 2.0**LO8_SHIFT).to(torch.float8_e4m3fn).double() / 2.0**LO8_SHIFT


def emulate(kw: dict, lazy: float, mode: str) -> torch.Tensor:
    """The output [T, H, 512] (bf16 values as fp64) of the tile loop with the given P rounding."""
    q = kw["q"].double()
    rows, valid = ref_mod.all_candidates(
        kw["kv_cache"], kw["indices"], kw.get("topk_length"),
        kw.get("extra_kv_cache"), kw.get("extra_indices"), kw.get("extra_topk_length"),
    )  # fmt: skip
    kv = rows.double()
    t, h, d = q.shape
    scale = kw.get("sm_scale") or d**-0.5
    s2 = (torch.einsum("thd,tkd->thk", q, kv) * scale / math.log(2)).masked_fill(~valid.unsqueeze(1), -math.inf)
    m = torch.full((t, h), -math.inf, dtype=torch.float64)
    l_sum = torch.zeros((t, h), dtype=torch.float64)
    o = torch.zeros((t, h, d), dtype=torch.float64)
    # the kernel's nope V exponents: per 64-value group the UE8M0 scale's (ceil(log2(amax / 448)),
    # as layout.quantize_kv chose it), per tile the largest over its valid rows (-127 for none), and
    # the running one; the fp16 P is p * 2^(tile - running), so its rounding sees that shift too
    amax = kv[..., :448].reshape(t, kv.shape[1], 7, 64).abs().amax(-1)
    gexp = torch.where(amax > 0, torch.ceil(torch.log2(amax / 448.0)), torch.full_like(amax, -127.0))
    row_exp = torch.where(valid, gexp.amax(-1), torch.full_like(gexp[..., 0], -127.0))  # [t, k]
    e_run = torch.full((t,), -math.inf, dtype=torch.float64)
    for j in range(0, s2.shape[-1], 64):
        st = s2[..., j : j + 64]
        rmax = st.amax(-1)
        mx = torch.where(rmax > m + lazy, rmax, m) if lazy > 0 else torch.maximum(m, rmax)
        alpha = torch.where(torch.isneginf(mx), torch.ones_like(mx), torch.exp2(m - mx))
        p = torch.exp2(st - torch.where(torch.isneginf(mx), torch.zeros_like(mx), mx).unsqueeze(-1))
        o = o * alpha.unsqueeze(-1)
        e_tile = row_exp[:, j : j + 64].amax(-1)
        e_run = torch.maximum(e_run, e_tile)
        shift = torch.exp2(e_tile - e_run).view(t, 1, 1)  # <= 1
        p_nope = _round_p(p * shift, mode) / shift
        o[..., :448] += torch.einsum("thk,tkd->thd", p_nope, kv[:, j : j + 64, :448])
        o[..., 448:] += torch.einsum("thk,tkd->thd", p, kv[:, j : j + 64, 448:])
        l_sum = l_sum * alpha + p.sum(-1)
        m = mx
    out = o / l_sum.unsqueeze(-1)
    if kw.get("attn_sink") is not None:
        lse = (m + torch.log2(l_sum)) * math.log(2)
        out = out * torch.sigmoid(lse - kw["attn_sink"].double().view(1, h)).unsqueeze(-1)
    return out.to(torch.bfloat16).double()


def tolerance_ratio(x: torch.Tensor, ref: torch.Tensor) -> tuple[float, int]:
    r = torch.nan_to_num((x - ref).abs() / (1e-3 + (2 / 128) * ref.abs()), nan=0.0)  # empty rows: 0 / 0
    return float(r.max()), int((r > 1).sum())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--shape", nargs="+", default=["draft,64,192,0,480", "verify,64,128,512,60"],
                    help="phase,heads,topk,extra_topk,num_tokens (the smoke's failing calls)")
    a = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    for spec in a.shape:
        phase, heads, topk, extra, tokens = spec.split(",")
        call = ks.CallShape(phase, int(heads), int(topk), extra_topk=int(extra), num_tokens=(int(tokens),))
        for seed in a.seeds:
            kw = ks.make_call_inputs(call, int(tokens), seed=seed)
            ref, _ = ref_mod.sparse_mla_decode_ref(**kw, compute_dtype=torch.float64)
            res = {name: tolerance_ratio(emulate(kw, lazy, mode), ref.double()) for name, (lazy, mode) in VARIANTS.items()}
            print(json.dumps({"shape": spec, "seed": seed, **{k: [round(v[0], 3), v[1]] for k, v in res.items()}}),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
