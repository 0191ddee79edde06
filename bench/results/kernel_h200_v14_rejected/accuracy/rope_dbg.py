# Run on the H200 (2026-11-29 ~17:50 UTC) against the v14 build, from the repository root
# (ruff-formatted afterwards, same statements):
#   PYTHONPATH=$PWD DSPARKCTL_KERNEL_SO=... python3 rope_dbg.py   -> rope_dbg_output.txt
import torch

from dsparkctl.kernel import layout, ops, reference

ops.load()


def run(heads, config, scale_rope=True, zero_tile=True, nan_row=True, seed_off=0, splits=1):
    gen = torch.Generator(device="cuda").manual_seed(1400 + heads + config + seed_off)
    n_tok, t, topk = 700, 3, 320
    kv = torch.randn(n_tok, 512, generator=gen, device="cuda")
    sc = torch.exp2(torch.randint(-6, 7, (n_tok, 1), generator=gen, device="cuda").float())
    if scale_rope:
        kv[:, 448:] *= sc
    if zero_tile:
        kv[:64, 448:] = 0.0
    if nan_row:
        kv[650, 448 + 5] = float("nan")
    cache = layout.quantize_kv(kv, 64)
    layout.fill_unused_slots(cache, n_tok)
    idx = torch.randint(64, 640, (t, topk), generator=gen, device="cuda", dtype=torch.int32)
    idx[0, :64] = torch.arange(64, device="cuda", dtype=torch.int32)
    idx[2, 100] = 650
    q = torch.randn(t, heads, 512, generator=gen, device="cuda").to(torch.bfloat16)
    ln = torch.tensor([topk, topk - 37, topk], device="cuda", dtype=torch.int32)
    out, lse = ops.sparse_mla_decode_cfg(
        q, cache, idx, config=config, num_splits=splits, topk_length=ln
    )
    ro, rl = reference.sparse_mla_decode_ref(
        q, cache, idx, topk_length=ln, compute_dtype=torch.float64, out_dtype=torch.float64
    )
    ok, _ = reference.within_flashmla_tolerance(out, lse, ro, rl)
    o = out.double().cpu()
    r = ro.cpu()
    fin = torch.isfinite(o) & torch.isfinite(r)
    err = (o - r).abs().where(fin, torch.zeros_like(o))
    bad = err > 1e-3 + (2 / 128) * r.abs().where(fin, torch.zeros_like(r))
    same_nan = torch.equal(torch.isnan(o), torch.isnan(r))
    print(
        f"H={heads} cfg={config} scale={scale_rope} zero={zero_tile} nan={nan_row} seed+{seed_off} splits={splits}: ok={ok} same_nan={same_nan} nbad={int(bad.sum())} max={float(err.max()):.4g}"
    )
    if bad.any():
        pos = bad.nonzero()[:8]
        for p in pos.tolist():
            print("   ", p, "ref", float(r[tuple(p)]), "out", float(o[tuple(p)]))
        print(
            "    bad per row",
            [int(bad[i].sum()) for i in range(3)],
            "dims<448",
            int(bad[..., :448].sum()),
            "dims>=448",
            int(bad[..., 448:].sum()),
        )


for args in [
    (64, 1),
    (64, 1, True, True, False),
    (64, 1, True, False, False),
    (64, 1, False, True, True),
    (32, 1),
    (64, 2),
    (64, 1, True, True, True, 1),
    (64, 1, True, True, True, 2),
    (64, 1, True, True, True, 0, 3),
    (128, 1),
]:
    run(*args)
