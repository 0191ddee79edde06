"""Where the smoke's kernel checks exceed FlashMLA's tolerance: out or lse, at what values, and
under which forced layouts; the failing tokens' data saved for analysis on a CPU.

    python bench/smoke_diag.py [--json OUT.json] [--save OUT.pt] [-- SMOKE_ARGS...]  (default: --tp 4)

Runs ``dsparkctl smoke --kernel bundled`` with ``kernel_smoke.check_call`` wrapped. For every
checked call, on its capture inputs and (after the original check ran) on its replay inputs, the
bundled kernel is called eagerly on a copy and compared with the fp64 reference; a call that misses
the tolerance gets a record: for out and lse separately the worst element (err / allowed, the fp64
reference, the kernel's value, the fp32 reference's value), the worst token's valid lengths and
first indices, its error with the token alone (a T = 1 call), the automatic plan, and the call's ratio with every
layout forced at the automatic / 1 / 2 / 4 splits (``cN sM``: config N of ``ops.CONFIGS``).
``--save``: per failing call, the worst token's q, sink, scale, valid slots and dequantized rows
(main and extra cache), the kernel's and the reference's out / lse for it (torch.save).
Session 30 (bench/results/kernel_h200_v51_combine_shfl/smoke/): needs a GPU and a built kernel
(DSPARKCTL_KERNEL_SO or the build cache).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsparkctl import kernel_smoke as ks
from dsparkctl.kernel import layout, ops
from dsparkctl.kernel.reference import sparse_mla_decode_ref

RECORDS: list[dict] = []
SAVED: list[dict] = []
TOL = ks.FLASHMLA_TOLERANCE


def _worst(x: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> tuple[float, tuple[int, ...]]:
    a, b = x.double(), ref.double()
    fin = torch.isfinite(a) & torch.isfinite(b)
    r = torch.where(fin, (a - b).abs() / (atol + rtol * b.abs()), torch.zeros_like(a))
    i = int(r.argmax())
    return float(r.flatten()[i]), tuple(int(v) for v in torch.unravel_index(torch.tensor(i), r.shape))


def _token_slots(kw: dict[str, Any], t: int, extra: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(valid slots of token t in order, their dequantized rows) in the main or the extra cache."""
    cache = kw["extra_kv_cache" if extra else "kv_cache"]
    idx = kw["extra_indices" if extra else "indices"]
    if cache is None or idx is None:
        return torch.empty(0, dtype=torch.long), torch.empty(0, 512)
    idx = idx.reshape(idx.shape[0], -1)[t].long()
    ln = kw.get("extra_topk_length" if extra else "topk_length")
    n = idx.numel() if ln is None else max(0, min(int(ln.flatten()[t]), idx.numel()))
    idx = idx[:n]
    ok = (idx >= 0) & (idx < layout.num_slots(cache))
    slots = idx[ok]
    return slots.cpu(), layout.gather_dequant(cache, slots).float().cpu()


def _diag(kernel_fn: Any, inputs: dict[str, Any], label: str) -> None:
    kw = {k: (v.clone() if isinstance(v, torch.Tensor) else copy.copy(v)) for k, v in inputs.items()}
    out, lse = kernel_fn(**kw)
    r64o, r64l = sparse_mla_decode_ref(**kw, compute_dtype=torch.float64)
    ro, io = _worst(out, r64o, TOL.out_atol, TOL.out_rtol)
    rl, il = _worst(lse, r64l, TOL.lse_atol, TOL.lse_rtol)
    if max(ro, rl) <= 1.0:
        return
    r32o, r32l = sparse_mla_decode_ref(**kw, compute_dtype=torch.float32)
    q = kw["q"]
    t = io[0] if ro >= rl else il[0]  # the token of the worst element
    one = {k: (v[t : t + 1] if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == q.shape[0]
               and k not in ("kv_cache", "extra_kv_cache", "attn_sink") else v) for k, v in kw.items()}
    o1, l1 = kernel_fn(**one)
    row_err = (out[t].double() - r64o[t].double()).abs()
    tl, etl = kw.get("topk_length"), kw.get("extra_topk_length")
    rec: dict[str, Any] = {
        "label": label, "T": int(q.shape[0]), "H": int(q.shape[-2]), "topk": int(kw["indices"].shape[-1]),
        "extra_topk": int(kw["extra_indices"].shape[-1]) if kw.get("extra_indices") is not None else 0,
        "out_ratio": ro, "out_at": io, "out_ref": float(r64o[io]), "out_kernel": float(out[io]),
        "out_ref32": float(r32o[io]),
        "ref32_out_ratio": _worst(r32o.float(), r64o, TOL.out_atol, TOL.out_rtol)[0],
        "lse_ratio": rl, "lse_at": il, "lse_ref": float(r64l[il]), "lse_kernel": float(lse[il]),
        "lse_ref32": float(r32l[il]), "ref32_lse_ratio": _worst(r32l, r64l, TOL.lse_atol, TOL.lse_rtol)[0],
        "token": t, "alone_ratio": ks.compare_outputs(o1, l1, r64o[t : t + 1], r64l[t : t + 1], TOL).ratio,
        "token_max_abs_err": float(row_err.max()), "token_elems_over_1e-3": int((row_err > 1e-3).sum()),
        "token_head_max_err": [round(float(x), 5) for x in row_err.amax(dim=-1)],
        "token_topk_length": None if tl is None else int(tl.flatten()[t]),
        "token_extra_topk_length": None if etl is None else int(etl.flatten()[t]),
        "token_indices": [int(x) for x in kw["indices"].reshape(q.shape[0], -1)[t][:8]],
    }
    try:  # the plan the automatic call took (needs the library's plan op; absent on a CPU stand-in)
        rec["plan"] = ops.plan_info(rec["T"], rec["H"], rec["topk"], rec["extra_topk"])
    except Exception as e:  # a diagnostic aid: report why, do not stop
        rec["plan"] = f"{type(e).__name__}: {e}"
    forced = {}
    for cfg in ops.CONFIGS[1:]:
        for ns in (0, 1, 2, 4):
            try:
                fo, fl = ops.sparse_mla_decode_cfg(**kw, config=cfg, num_splits=ns)
            except Exception as e:  # a layout that does not fit is reported, not fatal
                forced[f"c{cfg}s{ns}"] = type(e).__name__
                continue
            forced[f"c{cfg}s{ns}"] = round(ks.compare_outputs(fo, fl, r64o, r64l, TOL).ratio, 3)
    rec["forced"] = forced
    RECORDS.append(rec)
    print(json.dumps(rec), flush=True)
    main_slots, main_rows = _token_slots(kw, t, False)
    extra_slots, extra_rows = _token_slots(kw, t, True)
    sink = kw.get("attn_sink")
    SAVED.append({
        "record": rec, "q": q[t].float().cpu(), "sink": None if sink is None else sink.float().cpu(),
        "sm_scale": kw.get("sm_scale"), "main_slots": main_slots, "main_rows": main_rows,
        "extra_slots": extra_slots, "extra_rows": extra_rows, "out": out[t].float().cpu(),
        "lse": lse[t].float().cpu(), "ref_out": r64o[t].cpu(), "ref_lse": r64l[t].cpu(),
    })


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path, help="the records (one per failing call) as JSON")
    ap.add_argument("--save", type=Path, help="the failing tokens' data (torch.save)")
    ap.add_argument("smoke_args", nargs="*", help="arguments after `--` go to `dsparkctl smoke`")
    a = ap.parse_args()
    orig = ks.check_call

    def wrapped(kernel_fn: Any, ref_fn: Any, inputs: dict[str, Any], **kw: Any) -> Any:
        _diag(kernel_fn, inputs, "capture inputs")
        res = orig(kernel_fn, ref_fn, inputs, **kw)
        if kw.get("replay_inputs") is not None:  # the original copied them into `inputs`
            _diag(kernel_fn, inputs, "replay inputs")
        return res

    ks.check_call = wrapped  # the smoke command imports this module object, so it runs the wrapper
    from dsparkctl.cli import main as cli_main

    sys.argv = ["dsparkctl", "smoke", "--kernel", "bundled", *(a.smoke_args or ["--tp", "4"])]
    try:
        cli_main()
    except SystemExit as e:
        rc = int(e.code or 0)
    else:
        rc = 0
    if a.json:
        a.json.write_text(json.dumps(RECORDS, indent=1))
    if a.save:
        torch.save(SAVED, a.save)
    print(f"{len(RECORDS)} failing calls; smoke exit {rc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
