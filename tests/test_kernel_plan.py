"""The kernel's launch plan (kernels/sparse_mla_plan.h) as a pure function, driven on the CPU
through a host-only harness: which layout, heads per CTA and split count the automatic plan
picks for the bench shapes on an H200 and on an SM120-class GPU. The H200 expectations are
the plans the device runs printed (bench/kernel_timeline.sh) and the rules' A/Bs
(kernels/NOTES.md: v5-v19); a rule change shows up here shape by shape."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dsparkctl.kernel import build

ROOT = Path(__file__).resolve().parent.parent
AUTO, LARGE, SMALL, SMALL16, LARGE16, LARGE32, LARGE_WS = 0, 1, 2, 3, 4, 5, 6

# Device facts. Shared memory of a 64-head LARGE CTA and a 16-head one (Cfg<4, 64>::SMEM,
# Cfg<1, 64>::SMEM when this was written); only which side of the opt-in limit they fall on
# matters to the plan.
SMEM_LARGE, SMEM_LARGE16 = 202_240, 131_200
H200 = dict(sms=132, optin=232_448, occ=(2, 2, 1, 1, 1), wgmma=1, cluster=1, ws=1)  # SMALL 2 per SM, LARGE 1; sm_90a
H200_NO_WGMMA = dict(H200, wgmma=0, ws=0)  # a -DDSPARKCTL_NO_WGMMA build (the WS kernel needs wgmma)
H200_NO_WS = dict(H200, ws=0)  # a -DDSPARKCTL_NO_WS build
SM120 = dict(sms=188, optin=101_376, occ=(1, 1, 0, 0, 0), wgmma=0, cluster=0, ws=0)  # RTX PRO 6000: SMALL only, 1 per SM


def _build_harness(tmp_path_factory: pytest.TempPathFactory, *defines: str) -> Path:
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path_factory.mktemp("plan") / "plan"
    cmd = [cxx, "-std=c++17", "-O1", *defines, f"-I{build.kernels_dir()}", str(ROOT / "tests" / "kernel_plan_harness.cpp"), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return exe


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_harness(tmp_path_factory)


@pytest.fixture(scope="module")
def harness_no_ws_padded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """v60's padded-WS rules off (the plan before session 34), the A/B baseline."""
    return _build_harness(tmp_path_factory, "-DDSPARKCTL_PLAN_WS_PADDED_CHAIN=0", "-DDSPARKCTL_PLAN_WS_PADDED_CHAIN16=0")


def launches(exe: Path, dev: dict, cases: list[tuple[int, int, int, int, int, int]]) -> list[tuple[int, ...] | None]:
    """cases: (T, H, topk, extra_topk, config, requested_splits) -> (config, heads, tile, splits,
    one CTA per SM forced at launch, CTAs per cluster, warp-specialized kernel, CTAs per row block
    along O's dims)."""
    occ = " ".join(map(str, dev["occ"]))
    lines = [
        f"{dev['sms']} {dev['optin']} {SMEM_LARGE} {SMEM_LARGE16} {occ} {dev['wgmma']} {dev['cluster']} {dev['ws']} "
        + " ".join(map(str, c))
        for c in cases
    ]
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    res = [None if r == "invalid" else tuple(int(x) for x in r.split()) for r in out.split("\n") if r]
    assert len(res) == len(cases)
    return res


def plans(exe: Path, dev: dict, cases: list[tuple[int, int, int, int, int, int]]) -> list[tuple[int, ...] | None]:
    """cases: (T, H, topk, extra_topk, config, requested_splits) -> (config, heads, tile, splits)."""
    return [None if r is None else r[:4] for r in launches(exe, dev, cases)]


# (T, H, topk, extra) -> (layout, heads per CTA, tile, splits) under AUTO on the H200
H200_AUTO = {
    (1, 16, 128, 512): (SMALL, 16, 32, 20),
    (1, 64, 128, 512): (SMALL, 16, 32, 20),  # 16-head SMALL CTAs, one tile each (v6)
    (1, 64, 128, 1024): (LARGE, 16, 64, 18),  # LARGE16, one tile each in one wave (v18)
    (1, 128, 128, 512): (LARGE, 16, 64, 10),  # v18
    (1, 128, 128, 1024): (LARGE, 32, 64, 18),  # v26b: 32 heads, one tile each (v25: LARGE16, <= 2 tiles)
    (5, 64, 192, 0): (SMALL, 16, 32, 6),  # DSpark draft
    (10, 64, 192, 0): (LARGE, 16, 64, 3),  # v18
    (25, 64, 192, 0): (LARGE, 16, 64, 1),  # DSpark verify: no split, no combine (v19)
    (50, 64, 192, 0): (LARGE, 64, 64, 1),  # session 23: the WS kernel, no split (v26-v39: 32-head LARGE, no split)
    (5, 64, 192, 512): (LARGE, 32, 64, 11),  # v26: 32 heads, one tile each (v25: LARGE16, 6 splits)
    (10, 64, 192, 512): (LARGE, 32, 64, 6),  # v26: 32 heads, two tiles each (v25: 64-head, 11 splits)
    (25, 64, 192, 512): (LARGE, 64, 64, 5),
    (50, 64, 192, 512): (LARGE, 64, 64, 2),
    (64, 64, 128, 1024): (LARGE, 64, 64, 2),
    (64, 128, 128, 1024): (LARGE, 64, 64, 1),
}


def test_h200_automatic_plan_of_the_bench_shapes(harness: Path) -> None:
    cases = [(*k, AUTO, 0) for k in H200_AUTO]
    got = dict(zip(H200_AUTO, plans(harness, H200, cases), strict=True))
    wrong = {k: (got[k], v) for k, v in H200_AUTO.items() if got[k] != v}
    assert not wrong, wrong


def test_sm120_plans_never_take_a_large_layout(harness: Path) -> None:
    """SM120 / SM121 fit only the SMALL layouts (99 KB of shared memory per block): whatever
    the shape or a forced config asks, AUTO never resolves to LARGE there."""
    shapes = [(t, h, k, e) for t in (1, 5, 25, 50, 64) for h in (16, 64, 128) for k, e in ((128, 512), (192, 0), (128, 1024))]
    got = plans(harness, SM120, [(*s, AUTO, 0) for s in shapes])
    assert all(p is not None and p[0] == SMALL and p[2] == 32 for p in got), got
    # latency-bound calls still get 16-head CTAs, one tile each, filling the SMs
    t1 = dict(zip(shapes, got, strict=True))[(1, 64, 128, 512)]
    assert t1 == (SMALL, 16, 32, 20)


def test_forced_layouts_and_split_requests(harness: Path) -> None:
    got = plans(harness, H200, [
        (1, 64, 128, 512, LARGE16, 0),
        (1, 64, 128, 512, SMALL16, 0),
        (1, 64, 128, 512, LARGE, 0),
        (1, 8, 128, 512, SMALL, 0),
        (7, 40, 1024, 200, SMALL, 5),
        (7, 40, 1024, 200, LARGE16, 500),  # clamped to kMaxSplits
    ])  # fmt: skip
    assert got[0][:3] == (LARGE, 16, 64) and got[1][:3] == (SMALL, 16, 32)
    assert got[2][:3] == (LARGE, 64, 64) and got[3][:3] == (SMALL, 16, 32)
    assert got[4] == (SMALL, 32, 32, 5) and got[5] == (LARGE, 16, 64, 64)
    # every automatic split count stays within [1, kMaxSplits] and the tiles
    shapes = [(t, h, k, e) for t in (1, 2, 3, 8, 33, 300) for h in (1, 24, 128) for k, e in ((1, 0), (2048, 0), (64, 96))]
    for (t, h, k, e), p in zip(shapes, plans(harness, H200, [(*s, AUTO, 0) for s in shapes]), strict=True):
        tiles = -(-k // p[2]) + -(-e // p[2])
        assert 1 <= p[3] <= min(64, max(tiles, 1)), ((t, h, k, e), p)


def test_bad_arguments_are_rejected(harness: Path) -> None:
    got = plans(harness, H200, [
        (1, 0, 128, 0, AUTO, 0), (1, 129, 128, 0, AUTO, 0), (1, 8, 0, 0, AUTO, 0),
        (1, 8, 128, -1, AUTO, 0), (-1, 8, 128, 0, AUTO, 0), (1, 8, 128, 0, 9, 0),
    ])  # fmt: skip
    assert got == [None] * 6
    # T = 0 is a valid (empty) call
    assert plans(harness, H200, [(0, 8, 128, 0, AUTO, 0)])[0] is not None


def test_one_cta_per_sm_forcing(harness: Path) -> None:
    """v23 launches the main kernel early (programmatic dependent launch); where the layout fits
    two CTAs per SM and the grid has at most one per SM, the launch pads shared memory so the
    early placement cannot put two on an SM. The H200 bench shapes: the SMALL grids of <= 132
    CTAs (T = 1 at 16-64 heads, DSpark T = 5), not LARGE (one per SM anyway) and not a
    SMALL grid that fills two per SM (checked below with more CTAs than SMs)."""
    shapes = list(H200_AUTO)
    got = launches(harness, H200, [(*s, AUTO, 0) for s in shapes])
    for (t, h, _k, _e), r in zip(shapes, got, strict=True):
        assert r is not None
        config, heads, _tile, splits, forced, _cluster, _ws, _dims = r
        ctas = t * -(-h // heads) * splits
        assert forced == int(config == SMALL and ctas <= H200["sms"]), ((t, h), r, ctas)
    assert {s for s, r in zip(shapes, got, strict=True) if r[4]} == {
        (1, 16, 128, 512), (1, 64, 128, 512), (5, 64, 192, 0)
    }
    # a 100-CTA SMALL grid (DSpark T = 50 forced to SMALL, no split; before v26 the automatic
    # plan of a build without wgmma) is padded too
    assert launches(harness, H200_NO_WGMMA, [(50, 64, 192, 0, SMALL, 1)]) == [(SMALL, 32, 32, 1, 1, 1, 0, 1)]
    # a forced SMALL16 grid of 8 x 2 x 16 splits = 256 CTAs (T = 8 H = 32 +1024): more than one per SM, not padded
    assert launches(harness, H200, [(8, 32, 128, 1024, SMALL16, 0)])[0][4] == 0
    # SM120: one CTA per SM by shared memory already; never padded
    assert all(r is not None and r[4] == 0 for r in launches(harness, SM120, [(*s, AUTO, 0) for s in shapes]))


def test_few_tile_rule_only_without_wgmma(harness: Path) -> None:
    """v12's rule (<= 3 LARGE tiles per token: SMALL) predates the sm_90a wgmma tiles; a
    build without them (or a GPU without the 64-head layout) keeps it."""
    shape = [(40, 64, 192, 0, AUTO, 0), (100, 64, 192, 0, AUTO, 0)]
    assert plans(harness, H200, shape) == [(LARGE, 64, 64, 3), (LARGE, 64, 64, 1)]
    assert plans(harness, H200_NO_WGMMA, shape) == [(SMALL, 32, 32, 3), (SMALL, 32, 32, 1)]
    # every bench shape is planned the same with and without wgmma (since v26 DSpark T = 50
    # takes 32-head LARGE CTAs, mma.sync in both builds, ahead of the few-tile rule), but for
    # DSpark T = 50, which since session 23 runs the warp-specialized kernel (wgmma) where it is built
    shapes = list(H200_AUTO)
    expect = {**H200_AUTO, (50, 64, 192, 0): (LARGE, 32, 64, 1)}
    assert plans(harness, H200_NO_WGMMA, [(*s, AUTO, 0) for s in shapes]) == [expect[s] for s in shapes]


def test_32_head_large_ctas_only_where_they_fill_one_wave(harness: Path) -> None:
    """v26's conditions, each at a shape that meets it and one just outside it (H200: 132 SMs,
    one LARGE CTA per SM); the sweeps had 32-head CTAs behind at decode T = 8 and wherever
    16-head CTAs take one tile each in one wave."""
    got = dict(zip(
        [
            (50, 64, 192, 0), (64, 64, 128, 0),  # no split, chains <= 3 (100 / 128 CTAs)
            (40, 64, 192, 0),  # 80 CTAs: under 3/4 of the SMs
            (50, 64, 192, 512),  # no split but chains of 11
            (5, 64, 192, 512), (6, 64, 128, 512),  # one tile per CTA (110 / 120 CTAs)
            (10, 64, 192, 512),  # chains of two where the 64-head plan has 110 one-tile CTAs
            (8, 64, 128, 512),  # chains of two, but the 64-head plan has only 80 one-tile CTAs
            (8, 128, 128, 512), (8, 64, 128, 1024),  # chains of three with splits
            (67, 64, 192, 0),  # 134 CTAs: more than one wave
            (1, 128, 128, 1024), (2, 64, 128, 1024),  # one tile each where 16-head CTAs need two (72 CTAs)
            (1, 128, 128, 512), (3, 64, 192, 512), (25, 64, 192, 0),  # 16-head CTAs, one tile each / T = 25
        ],
        plans(harness, H200, [(*s, AUTO, 0) for s in [
            (50, 64, 192, 0), (64, 64, 128, 0), (40, 64, 192, 0), (50, 64, 192, 512), (5, 64, 192, 512),
            (6, 64, 128, 512), (10, 64, 192, 512), (8, 64, 128, 512), (8, 128, 128, 512), (8, 64, 128, 1024),
            (67, 64, 192, 0), (1, 128, 128, 1024), (2, 64, 128, 1024), (1, 128, 128, 512), (3, 64, 192, 512),
            (25, 64, 192, 0),
        ]]),
        strict=True,
    ))  # fmt: skip
    heads32 = {s for s, p in got.items() if p[0] == LARGE and p[1] == 32}
    assert heads32 == {
        (64, 64, 128, 0), (5, 64, 192, 512), (6, 64, 128, 512), (10, 64, 192, 512),
        (1, 128, 128, 1024), (2, 64, 128, 1024),
    }, got  # fmt: skip
    # session 23: DSpark T = 50 (no split, chains of 3) goes to the warp-specialized kernel, unsplit,
    # where the device has it; v26's 32-head CTAs where it does not
    assert got[(50, 64, 192, 0)] == (LARGE, 64, 64, 1)
    assert plans(harness, H200_NO_WS, [(50, 64, 192, 0, AUTO, 0)]) == [(LARGE, 32, 64, 1)]
    assert got[(1, 128, 128, 1024)] == (LARGE, 32, 64, 18) and got[(3, 64, 192, 512)] == (LARGE, 16, 64, 11)
    assert got[(64, 64, 128, 0)] == (LARGE, 32, 64, 1) and got[(6, 64, 128, 512)] == (LARGE, 32, 64, 10)
    # forced: 32 heads per CTA at any head count, the automatic split count of that layout
    forced = plans(harness, H200, [(1, 128, 128, 512, LARGE32, 0), (3, 8, 128, 0, LARGE32, 2)])
    assert forced == [(LARGE, 32, 64, 10), (LARGE, 32, 64, 2)]


def test_cluster_gather_only_for_single_tile_16_head_large_ctas(harness: Path) -> None:
    """v27: clusters of 4 / 8 head-block CTAs share each tile's copy only where the same-call A/B
    had them ahead: 16-head CTAs over 64-candidate tiles, one tile each, on at most 3/4 of the
    SMs. Behind or even elsewhere (chains of tiles: v27 and v28's A/Bs; 120 CTAs, 32-candidate or
    32-head CTAs), not at 2 / 3 / 7 head blocks, and never without the sm_90a build on Hopper."""
    shapes = [
        (1, 128, 128, 512), (1, 64, 128, 1024),  # LARGE16, one tile each, 80 / 72 CTAs: clusters of 8 / 4
        (10, 64, 192, 0),  # LARGE16, one tile each, but 120 CTAs
        (25, 64, 192, 0),  # LARGE16, chains of 3
        (1, 64, 128, 512), (1, 128, 128, 1024), (1, 32, 128, 512),  # SMALL16; 32-head LARGE; 2 head blocks
    ]
    got = launches(harness, H200, [(*s, AUTO, 0) for s in shapes])
    assert [r[5] for r in got] == [8, 4, 1, 1, 1, 1, 1], got
    assert [r[:2] for r in got[:4]] == [(LARGE, 16)] * 4  # the layouts the rule reads
    # forced LARGE16: one tile per CTA clusters (the GPU test
    # test_clustered_ctas_equal_unclustered_ones runs these and their 3 / 7 head-block twins);
    # chains of two, or more than 3/4 of the SMs, do not
    forced = [
        (1, 128, 320, 96, LARGE16, 7), (1, 112, 320, 96, LARGE16, 7), (4, 64, 192, 96, LARGE16, 5),
        (4, 48, 192, 96, LARGE16, 5), (1, 64, 1024, 0, LARGE16, 16), (1, 128, 128, 512, LARGE16, 10),
        (1, 128, 128, 512, LARGE16, 5), (5, 64, 192, 96, LARGE16, 5),
    ]
    assert [r[5] for r in launches(harness, H200, forced)] == [8, 1, 4, 1, 4, 8, 1, 1]
    assert [r[5] for r in launches(harness, SM120, [(*s, AUTO, 0) for s in shapes])] == [1] * len(shapes)
    assert [r[5] for r in launches(harness, dict(H200, cluster=0), [(*s, AUTO, 0) for s in shapes])] == [1] * len(shapes)


def test_warp_specialized_kernel_for_every_64_head_large_plan(harness: Path) -> None:
    """v37: the warp-specialized 64 x 64 kernel for every 64-head x 64-candidate LARGE plan on a
    device that has it (the v37 same-call A/B had it ahead on every such H200 bench row, one head
    block or two, chains of 1 or more); v32-v36 took it only for 128-head chains. Never without
    the kernel (builds without wgmma or with -DDSPARKCTL_NO_WS, SM120), and no other layout moves
    (H200_AUTO): T = 1 rows stay on 16 / 32-head CTAs."""
    shapes = [(t, 128, 128, e) for e in (512, 1024) for t in (1, 8, 32, 64)]
    shapes += [(t, 64, 128, e) for e in (512, 1024) for t in (1, 8, 32, 64)]
    shapes += [(t, 64, 192, e) for e in (0, 512) for t in (5, 10, 25, 50)]
    got = dict(zip(shapes, launches(harness, H200, [(*s, AUTO, 0) for s in shapes]), strict=True))
    ws = {s for s, r in got.items() if r[6]}
    assert ws == {s for s, r in got.items() if r[:3] == (LARGE, 64, 64)}
    assert ws == {(t, h, 128, e) for h in (64, 128) for e in (512, 1024) for t in (8, 32, 64)} | {
        (25, 64, 192, 512), (50, 64, 192, 512), (50, 64, 192, 0)
    }
    # chains of one tile are taken too: 64 heads +512 T = 8 is 10 tiles over 10 splits
    assert got[(8, 64, 128, 512)][:4] == (LARGE, 64, 64, 10)
    for dev in (H200_NO_WS, H200_NO_WGMMA, SM120):
        assert not any(r[6] for r in launches(harness, dev, [(*s, AUTO, 0) for s in shapes])), dev
    # without it the plans are the same otherwise, but for DSpark T = 50 (32-head CTAs there, v26)
    no_ws = dict(zip(shapes, launches(harness, H200_NO_WS, [(*s, AUTO, 0) for s in shapes]), strict=True))
    assert {s for s in shapes if no_ws[s][:6] != got[s][:6]} == {(50, 64, 192, 0)}
    assert no_ws[(50, 64, 192, 0)][:4] == (LARGE, 32, 64, 1)
    # forced (config 6): 64 heads per CTA at any head count, the automatic split count of LARGE,
    # the warp-specialized kernel wherever the device has it, plain 64-head LARGE elsewhere
    forced = [(1, 8, 64, 0, LARGE_WS, 0), (5, 64, 192, 512, LARGE_WS, 3), (64, 128, 128, 512, LARGE_WS, 10)]
    assert launches(harness, H200, forced) == [
        (LARGE, 64, 64, 1, 0, 1, 1, 2), (LARGE, 64, 64, 3, 0, 1, 1, 1), (LARGE, 64, 64, 10, 0, 1, 1, 1)
    ]  # (one token, one tile: one split, so v66's two halves of O's dims)
    assert [r[6] for r in launches(harness, H200_NO_WS, forced)] == [0, 0, 0]
    assert [r[:3] for r in launches(harness, H200_NO_WS, forced)] == [(LARGE, 64, 64)] * 3
    assert [r[6] for r in launches(harness, SM120, forced)] == [0, 0, 0]


def test_warp_specialized_splits_a_short_token_only_into_single_tiles(harness: Path) -> None:
    """Session 23 (plan sweep, bench/results/plan_sweep_s23/): the warp-specialized kernel splits a
    token of <= 3 tiles only where every CTA then holds one tile; a split leaving chains of two
    paid more in partials and combine than the tile it saved (DSpark T = 50: 19.8 vs 17.0 us).
    Longer tokens and the main kernel split as before."""
    cases = [
        (25, 64, 192, 0, LARGE, 0),  # 25 CTAs: 3 splits, one tile each
        (50, 64, 192, 0, LARGE, 0),  # 50 CTAs: 2 splits would leave chains of two -> 1
        (40, 64, 192, 0, LARGE, 0),  # 40 CTAs: 3 splits, one tile each
        (50, 64, 128, 0, LARGE, 0),  # 2 tiles: 2 splits, one tile each
        (50, 64, 192, 512, LARGE, 0),  # 11 tiles: 2 splits as before
        (30, 128, 192, 0, LARGE, 0),  # 2 head blocks, 60 CTAs: 2 splits would leave chains of two -> 1
    ]
    assert [r[3] for r in plans(harness, H200, cases)] == [3, 1, 3, 2, 2, 1]
    # without the warp-specialized kernel the 64-head main kernel keeps the one-wave split count
    assert [r[3] for r in plans(harness, H200_NO_WS, cases)] == [3, 2, 3, 2, 2, 2]
    # an explicit split count is never overridden
    assert plans(harness, H200, [(50, 64, 192, 0, LARGE, 2)])[0][3] == 2


# The 16- and 32-head decode rows of the bench (T, H, topk, extra).
SMALL_HEAD_ROWS = [(t, h, 128, e) for h in (16, 32) for e in (512, 1024) for t in (1, 8, 32, 64)]


def test_ws_padded_rules_move_only_chained_small_head_plans(harness: Path, harness_no_ws_padded: Path) -> None:
    """v60 (session 34): where the automatic plan runs 17-32 heads as 32-head LARGE CTAs or <= 16
    heads as 16-head SMALL CTAs, the warp-specialized kernel (64 rows, padded) takes them when its
    own grid is one wave with chains of >= 2 tiles (17-32 heads) or >= 5 (<= 16 heads). Every other
    plan stays, on every device."""
    shapes = [*H200_AUTO, *SMALL_HEAD_ROWS, (64, 24, 128, 1024), (64, 17, 2048, 0), (3, 32, 128, 1024),
              (300, 32, 128, 1024), (64, 8, 128, 2048), (5, 16, 128, 512)]  # fmt: skip
    cases = [(t, h, k, e, AUTO, 0) for t, h, k, e in shapes]
    for dev in (H200, H200_NO_WS, H200_NO_WGMMA, SM120):
        before = launches(harness_no_ws_padded, dev, cases)
        after = launches(harness, dev, cases)
        moved = {s: (b, a) for s, b, a in zip(shapes, before, after, strict=True) if a != b}
        if dev is not H200:
            assert moved == {}, dev
            continue
        for (t, h, k, e), (b, a) in moved.items():
            assert a[:3] == (LARGE, 64, 64) and a[6] == 1, (t, h, a)
            chain = -(-(-(-k // 64) + -(-e // 64)) // a[3])
            assert t * a[3] <= H200["sms"], (t, h, a)  # one wave
            if h > 16:
                assert h <= 32 and b[:2] == (LARGE, 32) and b[6] == 0 and chain >= 2, (t, h, b, a)
            else:
                assert b[:2] == (SMALL, 16) and chain >= 5, (t, h, b, a)
        # the bench rows the session 34 sweep had ahead on WS move; the short chains (32 heads
        # +512 T = 8, 16 heads +512 T = 32), T = 3's 16-head CTAs, the 64- and 128-head rows and the
        # many-wave grid stay
        assert {(t, h, e) for t, h, _, e in moved} == {
            (64, 16, 512), (32, 16, 1024), (64, 16, 1024),
            (32, 32, 512), (64, 32, 512), (8, 32, 1024), (32, 32, 1024), (64, 32, 1024),
            (64, 24, 1024), (64, 17, 0), (64, 8, 2048),
        }
        assert moved[(64, 32, 128, 1024)][1][:4] == (LARGE, 64, 64, 2)
        assert moved[(8, 32, 128, 1024)][1][:4] == (LARGE, 64, 64, 16)
    # forced layouts and split requests are never rewritten
    forced = [(64, 32, 128, 1024, LARGE32, 0), (64, 32, 128, 1024, AUTO, 3), (64, 32, 128, 1024, LARGE, 0),
              (64, 16, 128, 1024, SMALL16, 0)]  # fmt: skip
    assert launches(harness, H200, forced) == launches(harness_no_ws_padded, H200, forced)


@pytest.fixture(scope="module")
def harness_no_dims_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """v66's rule off (-DDSPARKCTL_WS_DIMS_SPLIT=0: v65's plan)."""
    return _build_harness(tmp_path_factory, "-DDSPARKCTL_WS_DIMS_SPLIT=0")


def test_ws_dims_split_takes_only_unsplit_ws_grids_of_at_most_half_the_sms(harness: Path, harness_no_dims_split: Path) -> None:
    """v66 (session 38): an unsplit warp-specialized call whose grid fills at most half the SMs runs
    two CTAs per (token, head block), one per half of O's dims. Nothing else of any plan moves
    against v65's (the rule off), and nothing at all without the WS kernel."""
    shapes = [*H200_AUTO, *SMALL_HEAD_ROWS, (66, 64, 192, 0), (67, 64, 192, 0), (33, 128, 192, 0), (34, 128, 192, 0)]
    cases = [(t, h, k, e, AUTO, 0) for t, h, k, e in shapes]
    forced = [(1, 8, 64, 0, LARGE_WS, 0), (5, 64, 192, 512, LARGE_WS, 1), (64, 128, 128, 512, LARGE_WS, 1),
              (12, 64, 192, 0, LARGE_WS, 2)]  # fmt: skip
    for dev in (H200, H200_NO_WS, H200_NO_WGMMA, SM120):
        off, on = launches(harness_no_dims_split, dev, cases + forced), launches(harness, dev, cases + forced)
        assert all(r is None or r[7] == 1 for r in off), dev
        assert [None if r is None else r[:7] for r in on] == [None if r is None else r[:7] for r in off], dev
        split = {c for c, r in zip(cases + forced, on, strict=True) if r is not None and r[7] == 2}
        if dev is not H200:
            assert split == set(), dev
            continue
        for c, r in zip(cases + forced, on, strict=True):
            if c in split:
                head_blocks = -(-c[1] // 64)
                assert r[6] == 1 and r[3] == 1 and 2 * c[0] * head_blocks <= H200["sms"], (c, r)
        # DSpark T = 50 (50 unsplit WS CTAs) and the forced single-split calls that fit; T = 67 /
        # 34 x 2 head blocks would not fit twice, 64 heads x 128 T = 64 neither, split calls never
        assert {c[:4] for c in split if c[4] == AUTO} == {(50, 64, 192, 0), (66, 64, 192, 0), (33, 128, 192, 0)}
        assert {c for c in split if c[4] != AUTO} == {(1, 8, 64, 0, LARGE_WS, 0), (5, 64, 192, 512, LARGE_WS, 1)}


LARGE_WS_DIMS = 7


@pytest.fixture(scope="module")
def harness_dims_partials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Session 38's prepared candidate on (-DDSPARKCTL_WS_DIMS_PARTIALS=1: the halves for split calls)."""
    return _build_harness(tmp_path_factory, "-DDSPARKCTL_WS_DIMS_PARTIALS=1")


def test_forced_ws_dims_config_halves_ws_calls(
    harness: Path, harness_no_dims_split: Path, harness_dims_partials: Path
) -> None:
    """Config 7 (session 38, for sweeps and tests): config 6's forced warp-specialized plan (its
    layout and split count) with v66's two CTAs per row block at any grid: unsplit calls only, and
    with -DDSPARKCTL_WS_DIMS_PARTIALS every split count (2 included: the halves' partials go to the
    combine kernels, not v45's in-kernel combine). One CTA per row block where the WS kernel does
    not run or v66's rule is off."""
    shapes = [(1, 8, 64, 0), (5, 64, 192, 512), (64, 128, 128, 1024), (50, 64, 192, 0), (10, 64, 192, 512)]
    for splits in (0, 1, 2, 3, 6, 20):
        ws = [(*s, LARGE_WS, splits) for s in shapes]
        dh = [(*s, LARGE_WS_DIMS, splits) for s in shapes]
        for dev in (H200, H200_NO_WS, H200_NO_WGMMA, SM120):
            base = launches(harness, dev, ws)
            for exe, partials in ((harness, False), (harness_dims_partials, True)):
                got = launches(exe, dev, dh)
                assert [r[:7] for r in got] == [r[:7] for r in base], (dev, splits)
                want = [2 if dev is H200 and (r[3] == 1 or partials) else 1 for r in base]
                assert [r[7] for r in got] == want, (dev, splits, partials, got)
        assert all(r[7] == 1 for r in launches(harness_no_dims_split, H200, dh))
    # the automatic plan does not depend on the candidate
    auto = [(t, h, k, e, AUTO, 0) for t, h, k, e in [*H200_AUTO, *SMALL_HEAD_ROWS]]
    assert launches(harness_dims_partials, H200, auto) == launches(harness, H200, auto)
