"""Benchmark dsparkctl's sparse-MLA decode kernel against SGLang's Triton fallback, the torch
reference and a roofline, all measured in the same run on the same GPU.

    python bench/bench_kernel.py --triton-peer PATH/flash_mla_sm120_triton.py \
        --json bench/results/kernel_h200.json --md bench/results/kernel_h200.md

Times are CUDA-graph replays (median over replays of a graph holding many calls that rotate
over independent index sets, so the gathered rows do not sit in L2 between calls). Bytes =
unique gathered tokens x 584 + Q + O; FLOPs = 2 * H * (valid + extra) * 1024 per token;
roofline = max(bytes / measured copy bandwidth, FLOPs / bf16 matmul peak).
The Triton peer is read from the sglang wheel by path (SGLang itself is not imported).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsparkctl.kernel import layout, ops, reference

GAMMA = 5
BF16_PEAK_NOMINAL = 790e12


def measure_copy_bandwidth() -> float:
    """Device-to-device copy, bytes read + written per second (median of 10)."""
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    a.random_(0, 255)
    for _ in range(3):
        b.copy_(a)
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    del a, b
    return 2 * n / statistics.median(times)


def measure_bf16_peak() -> float:
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return 2 * n**3 / statistics.median(times)


def load_triton_peer(path: str | None):
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("sglang_flash_mla_sm120_triton", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod.flash_mla_sparse_decode_triton


class Caches:
    """One big main cache (page 256, SGLang-padded stride) and one extra cache (page 64)."""

    def __init__(self, main_tokens: int, extra_tokens: int) -> None:
        g = torch.Generator(device="cuda").manual_seed(0)
        self.main = self._cache(main_tokens, 256, g)
        self.extra = self._cache(extra_tokens, 64, g)
        self.main_tokens, self.extra_tokens = main_tokens, extra_tokens

    @staticmethod
    def _cache(n: int, pbs: int, g: torch.Generator) -> torch.Tensor:
        pad = layout.sglang_page_bytes(pbs) - layout.logical_page_bytes(pbs)
        return layout.quantize_kv(torch.randn(n, 512, generator=g, device="cuda"), pbs, page_stride_pad=pad)


def make_sets(shape: dict, caches: Caches, n_sets: int, seed: int) -> list[dict]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    t, h, topk, valid, extra = shape["T"], shape["H"], shape["topk"], shape["valid"], shape["extra"]
    per_req = GAMMA if shape["kind"] == "dspark" else 1
    sets = []
    for _ in range(n_sets):
        reqs = -(-t // per_req)
        base = torch.randint(0, caches.main_tokens - topk, (reqs,), generator=g, device="cuda")
        win = base.repeat_interleave(per_req)[:t, None] + torch.arange(topk, device="cuda")[None]
        idx = win.to(torch.int32)
        idx[:, valid:] = -1
        s = {
            "q": torch.randn(t, h, 512, generator=g, device="cuda").to(torch.bfloat16),
            "kv_cache": caches.main,
            "indices": idx.contiguous(),
            "topk_length": torch.full((t,), valid, device="cuda", dtype=torch.int32),
            "attn_sink": torch.randn(h, generator=g, device="cuda"),
        }
        if extra:
            s["extra_kv_cache"] = caches.extra
            s["extra_indices"] = torch.randint(0, caches.extra_tokens, (t, extra), generator=g, device="cuda", dtype=torch.int32)
            s["extra_topk_length"] = torch.full((t,), extra, device="cuda", dtype=torch.int32)
        sets.append(s)
    return sets


def call_bytes_flops(shape: dict, s: dict) -> tuple[int, float]:
    uniq = torch.unique(s["indices"][s["indices"] >= 0]).numel()
    if "extra_indices" in s:
        uniq += torch.unique(s["extra_indices"]).numel()
    t, h = shape["T"], shape["H"]
    qo = t * h * 512 * 2 * 2 + t * h * 4
    flops = 2.0 * h * (shape["valid"] + shape["extra"]) * 1024 * t
    return uniq * layout.TOKEN_BYTES + qo, flops


def graph_time(fn, sets: list[dict], replays: int = 7) -> float:
    """Median seconds per call over graph replays of one pass over ``sets``."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for s in sets[:2]:
            fn(s)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for s in sets:
            fn(s)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        graph.replay()
        en.record()
        en.synchronize()
        times.append(st.elapsed_time(en) / 1e3 / len(sets))
    del graph
    return statistics.median(times)


def eager_time(fn, sets: list[dict], reps: int = 3) -> float:
    fn(sets[0])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        fn(sets[i % len(sets)])
        en.record()
        en.synchronize()
        times.append(st.elapsed_time(en) / 1e3)
    return statistics.median(times)


def prefill_sized_shapes() -> list[dict]:
    """Calls of more than 64 tokens the router sends to the bundled kernel when FlashInfer's
    prefill dispatcher rejects them: DSpark draft / verify batches above 64 tokens (64 heads, and
    16 per rank at TP 4) and prefill chunks at heads per rank FlashInfer <= 0.6.17 has no
    prefill kernel for (8: 64 heads at TP 8), or whose dual-cache form FlashInfer 0.6.18 answers
    wrongly (flashinfer #5095: every dual-cache prefill-sized call there; 16 heads: TP 4)."""
    out = []
    for h in (64, 16):
        for extra in (0, 512):
            for t in (96, 192, 512):
                out.append({"kind": "dspark-prefill-sized", "H": h, "topk": 192, "valid": 133, "extra": extra, "T": t})
    for h in (8, 16):
        for t in (1024, 4096):
            out.append({"kind": "prefill-chunk", "H": h, "topk": 128, "valid": 128, "extra": 512, "T": t})
    # a c128 layer's chunk: its compressed cache's candidates (the preset plans extra_topk 8256)
    out.append({"kind": "prefill-chunk", "H": 16, "topk": 128, "valid": 128, "extra": 8256, "T": 1024})
    return out


def shapes(quick: bool, short: bool = False, heads: list[int] | None = None) -> list[dict]:
    out = []
    for extra in (0, 512):
        for t in (5, 10, 25, 50):
            out.append({"kind": "dspark", "H": 64, "topk": 192, "valid": 133, "extra": extra, "T": t})
    for h in (16, 32, 64, 128):
        for extra in (512, 1024):
            for t in (1, 8, 32, 64):
                out.append({"kind": "decode", "H": h, "topk": 128, "valid": 128, "extra": extra, "T": t})
    if quick:
        out = [s for s in out if s["kind"] == "dspark" or (s["H"] in (64, 128) and s["T"] in (1, 64))]
    if heads:  # every decode row of these head counts (the rows one layout's change moves), nothing else
        return [s for s in out if s["kind"] == "decode" and s["H"] in heads]
    if short:  # the rows a combine / layout-rule / SMALL-layout change moves, for a short device call
        out = [s for s in out if s["kind"] == "dspark" or s["T"] == 1 or s["H"] == 16]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--triton-peer", help="path to sglang's flash_mla_sm120_triton.py (from the wheel)")
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--md", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--short", action="store_true", help="DSpark and T = 1 rows only, fewer replays, no torch reference timing")
    ap.add_argument("--no-ref", action="store_true", help="skip timing the torch reference")
    ap.add_argument("--heads", type=int, nargs="+", help="only the decode rows of these head counts (overrides --quick / --short's rows)")
    ap.add_argument("--sweep", action="store_true", help="also time each shape with the layout forced (large / small smem)")
    ap.add_argument(
        "--prefill-sized",
        action="store_true",
        help="only calls of more than 64 tokens (what the router takes where FlashInfer's prefill dispatcher rejects "
        "the shape); the Triton peer and the torch reference are not timed there (seconds per call), and correctness "
        "is checked on the first 256 rows",
    )
    ap.add_argument(
        "--config",
        choices=sorted(FORCED_CONFIGS),
        default="auto",
        help="time every row (ours) with this layout forced at its automatic split count: one layout on two builds "
        "in one A/B (bench/kernel_ab.sh BENCH_EXTRA), e.g. large_ws on the 64-head rows the plan does not route to it",
    )
    ap.add_argument(
        "--with-predecessor",
        action="store_true",
        help="also time each call right after a foreign kernel (an in-place q *= 1, as a q projection writes q just "
        "before attention in serving): the main kernel's early start (programmatic dependent launch) then overlaps "
        "that kernel, not the previous call's combine",
    )
    args = ap.parse_args()

    so = ops.load()
    dev = torch.cuda.get_device_name()
    copy_bw = measure_copy_bandwidth()
    peak = measure_bf16_peak()
    triton_fn = load_triton_peer(args.triton_peer)
    config = FORCED_CONFIGS[args.config]
    caches = Caches(main_tokens=1 << 19, extra_tokens=1 << 18)
    scale = 512**-0.5
    rows = []
    replays = 3 if args.short else 7
    if args.short or args.prefill_sized:
        args.no_ref = True
    if args.prefill_sized:
        triton_fn = None
    for i, shape in enumerate(prefill_sized_shapes() if args.prefill_sized else shapes(args.quick, args.short, args.heads)):
        probe = make_sets(shape, caches, 1, seed=10_000 + i)[0]
        nbytes, flops = call_bytes_flops(shape, probe)
        n_sets = int(min(64 if args.short else 256, max(4, math.ceil(240e6 / nbytes))))
        sets = make_sets(shape, caches, n_sets, seed=i)
        def call(s):
            return ops.sparse_mla_decode_cfg(sm_scale=scale, config=config, **s) if config else ops.sparse_mla_decode(sm_scale=scale, **s)

        ours = graph_time(call, sets, replays)
        # correctness of what we timed, against the fp32 reference
        o, lse = call(sets[0])
        # rows are independent: a long call is checked on its first rows (the reference
        # dequantizes every gathered row in fp32)
        rows_checked = min(shape["T"], 256)
        head = {k: (v[:rows_checked] if k in ROW_KEYS else v) for k, v in sets[0].items()}
        r_o, r_l = reference.sparse_mla_decode_ref(sm_scale=scale, **head)
        ok, stats = reference.within_flashmla_tolerance(o[:rows_checked], lse[:rows_checked], r_o, r_l)
        row = dict(shape)
        row.update(
            sets=n_sets,
            bytes=nbytes,
            flops=flops,
            ours_us=ours * 1e6,
            ok=ok,
            rows_checked=rows_checked,
            max_abs_err_out=stats["max_abs_err_out"],
            roofline_us=max(nbytes / copy_bw, flops / peak) * 1e6,
        )
        row["plan"] = plan_label(shape, config)
        row["pct_roofline"] = 100 * row["roofline_us"] / row["ours_us"]
        row["eff_bw_gbs"] = nbytes / ours / 1e9
        row["tflops"] = flops / ours / 1e12
        if triton_fn is not None:

            def tri(s):
                q4 = s["q"].unsqueeze(1)
                return triton_fn(q4, s["kv_cache"], s["indices"], s["topk_length"], s["attn_sink"], 512, scale,
                                 s.get("extra_kv_cache"), s.get("extra_indices"), s.get("extra_topk_length"))  # fmt: skip

            tsets = sets[: min(len(sets), 8)]
            try:
                row["triton_us"] = graph_time(tri, tsets, replays=3) * 1e6
                row["triton_timing"] = "graph"
            except Exception as exc:  # capture can fail for peers that sync; time eagerly then
                torch.cuda.synchronize()
                row["triton_us"] = eager_time(tri, tsets) * 1e6
                row["triton_timing"] = f"eager ({type(exc).__name__})"
            t_o, _ = tri(sets[0])
            row["triton_max_abs_diff_vs_ref"] = float((t_o.squeeze(1).float() - r_o).abs().max())
            row["speedup_vs_triton"] = row["triton_us"] / row["ours_us"]
        if args.with_predecessor:

            def pred(s):
                s["q"].mul_(1.0)

            def pred_then_ours(s):
                pred(s)
                return ops.sparse_mla_decode(sm_scale=scale, **s)

            row["pred_alone_us"] = graph_time(pred, sets, replays) * 1e6
            row["pred_then_ours_us"] = graph_time(pred_then_ours, sets, replays) * 1e6
        if not args.no_ref:
            row["ref_us"] = eager_time(lambda s: reference.sparse_mla_decode_ref(sm_scale=scale, **s), sets) * 1e6
        if args.sweep:
            # which tile layout the automatic choice should take: all timed in this run. The
            # automatic plan is timed again here, first and last, because "ours" above runs
            # before the Triton peer and the reference: the v23 sweep had every forced column
            # 1-2% under an identical automatic plan's "ours", so the sweep compares like with like.
            for name, cfg in (
                ("auto_first", ops.CONFIG_AUTO), ("large", ops.CONFIG_LARGE_SMEM), ("small", ops.CONFIG_SMALL_SMEM),
                ("small16", ops.CONFIG_SMALL_SMEM_16), ("large16", ops.CONFIG_LARGE_SMEM_16),
                ("large32", ops.CONFIG_LARGE_SMEM_32), ("large_ws", ops.CONFIG_LARGE_SMEM_WS), ("auto_last", ops.CONFIG_AUTO),
            ):  # fmt: skip
                try:
                    row[f"{name}_us"] = graph_time(lambda s, c=cfg: ops.sparse_mla_decode_cfg(sm_scale=scale, config=c, **s), sets) * 1e6
                except RuntimeError as exc:  # layout does not fit this GPU
                    row[f"{name}_us"] = float("nan")
                    row[f"{name}_error"] = str(exc).splitlines()[0]
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
        # partial results survive a run cut off by its time limit
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"meta": {"partial": True}, "rows": rows}, indent=1) + "\n")

    meta = {
        "device": dev,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "host": platform.node(),
        "library": str(so),
        "copy_bandwidth_gbs": copy_bw / 1e9,
        "bf16_matmul_tflops": peak / 1e12,
        "bf16_peak_nominal_tflops": BF16_PEAK_NOMINAL / 1e12,
        "timing": "CUDA-graph replay of back-to-back calls, median of replays, per call; rotating index sets",
        "time": time.time(),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    args.md.write_text(render_md(meta, rows))
    print(render_md(meta, rows))
    return 0


# per-row inputs of a call (sliced for the reference check of long calls)
ROW_KEYS = ("q", "indices", "topk_length", "extra_indices", "extra_topk_length")

FORCED_CONFIGS = {
    "auto": ops.CONFIG_AUTO,
    "large": ops.CONFIG_LARGE_SMEM,
    "small": ops.CONFIG_SMALL_SMEM,
    "small16": ops.CONFIG_SMALL_SMEM_16,
    "large16": ops.CONFIG_LARGE_SMEM_16,
    "large32": ops.CONFIG_LARGE_SMEM_32,
    "large_ws": ops.CONFIG_LARGE_SMEM_WS,
}


def plan_label(shape: dict, config: int = ops.CONFIG_AUTO) -> str | None:
    """The automatic plan of the shape as the library reports it, e.g. "large 64h x 64 s2 ws"
    (layout, heads per CTA x tile, splits, warp-specialized / clustered); None from a library
    that predates the plan query (an A/B's old side)."""
    try:
        p = ops.plan_info(shape["T"], shape["H"], shape["topk"], shape["extra"], config=config)
    except (AttributeError, RuntimeError):
        return None
    name = {1: "large", 2: "small"}.get(int(p["config"]), str(p["config"]))
    label = f"{name} {p['heads_per_cta']}h x {p['tile_n']} s{p['num_splits']}"
    if p["warp_specialized"]:
        label += " ws"
    if int(p["cluster"]) > 1:
        label += f" c{p['cluster']}"
    if int(p.get("dims_split", 1)) > 1:
        label += f" d{p['dims_split']}"
    return label


def render_md(meta: dict, rows: list[dict]) -> str:
    lines = [
        f"# sparse-MLA decode benchmark: {meta['device']}",
        "",
        f"- date: {meta['date']}; torch {meta['torch']} (CUDA {meta['cuda']})",
        f"- command: `{meta['command']}`",
        f"- measured copy bandwidth {meta['copy_bandwidth_gbs']:.0f} GB/s, bf16 matmul {meta['bf16_matmul_tflops']:.0f} TFLOP/s (roofline uses these)",
        f"- {meta['timing']}",
        "",
        "| kind | H | topk(valid) | extra | T | plan | ours us | Triton us | x Triton | torch ref us | roofline us | % roofline | GB/s | TFLOP/s | ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['H']} | {r['topk']}({r['valid']}) | {r['extra']} | {r['T']} | {r.get('plan') or '-'} | {r['ours_us']:.1f} | "
            f"{r.get('triton_us', float('nan')):.1f} | {r.get('speedup_vs_triton', float('nan')):.1f} | "
            f"{r.get('ref_us', float('nan')):.0f} | {r['roofline_us']:.1f} | {r['pct_roofline']:.0f} | "
            f"{r['eff_bw_gbs']:.0f} | {r['tflops']:.0f} | {'yes' if r['ok'] else 'NO'} |"
        )
    nan = float("nan")
    if any("large_us" in r for r in rows):
        lines += _section(
            "Layout sweep (same graphs, layout forced, automatic split count; auto: the automatic plan timed "
            "in the sweep, the better of before and after the forced ones): us per call",
            ["auto", "large smem", "small smem", "small smem, 16 heads/CTA", "large smem, 16 heads/CTA",
             "large smem, 32 heads/CTA", "large smem, warp-specialized"],
            rows,
            lambda r: [
                min(r.get("auto_first_us", r["ours_us"]), r.get("auto_last_us", r["ours_us"])),
                *(r.get(f"{n}_us", nan) for n in ("large", "small", "small16", "large16", "large32", "large_ws")),
            ],
        )
    if any("pred_then_ours_us" in r for r in rows):
        lines += _section(
            "After a foreign kernel (`--with-predecessor`: an in-place q *= 1 before each call, in the same graph): us per call",
            ["back to back", "q *= 1 alone", "q *= 1 then ours", "difference (ours after a foreign kernel)"],
            rows,
            lambda r: [r["ours_us"], r["pred_alone_us"], r["pred_then_ours_us"], r["pred_then_ours_us"] - r["pred_alone_us"]],
        )
    return "\n".join(lines) + "\n"


def _section(title: str, columns: list[str], rows: list[dict], values) -> list[str]:
    """A per-shape table of times (us) after the main one: kind, H, extra, T, then ``values(row)``."""
    out = ["", title, "", "| kind | H | extra | T | " + " | ".join(columns) + " |", "|---|---|---|---|" + "---|" * len(columns)]
    for r in rows:
        out.append(f"| {r['kind']} | {r['H']} | {r['extra']} | {r['T']} | " + " | ".join(f"{v:.1f}" for v in values(r)) + " |")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
