"""Kernel build helpers and the CI compile check of the CUDA source for all shipped archs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dsparkctl.kernel import build


def test_gencode_flags() -> None:
    assert build.gencode_flag("sm_120a") == "-gencode=arch=compute_120a,code=sm_120a"
    assert build.gencode_flag("sm_90a") == "-gencode=arch=compute_90a,code=sm_90a"
    assert build.gencode_flag("sm_89") == "-gencode=arch=compute_89,code=sm_89"
    for bad in ("120a", "sm_75", "compute_90a", "sm_90b"):
        with pytest.raises(ValueError):
            build.gencode_flag(bad)


def test_arch_for_capability() -> None:
    assert build.arch_for_capability(9, 0) == "sm_90a"
    assert build.arch_for_capability(12, 0) == "sm_120a"
    assert build.arch_for_capability(12, 1) == "sm_121a"
    assert build.arch_for_capability(8, 9) == "sm_89"


def test_source_hash_covers_every_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h1 = build.source_hash()
    assert h1 == build.source_hash() and len(h1) == 64
    for f in build.source_files():
        assert f.is_file(), f
    # a copy of the sources with one byte changed in each file must hash differently
    for victim in build.source_files():
        copy = tmp_path / victim.name
        for f in build.source_files():
            (tmp_path / f.name).write_bytes(f.read_bytes())
        copy.write_bytes(victim.read_bytes() + b" ")
        monkeypatch.setattr(build, "kernels_dir", lambda: tmp_path)
        assert build.source_hash() != h1, victim.name
        monkeypatch.undo()


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_kernel_compiles_for_every_shipped_arch(tmp_path: Path) -> None:
    procs = {}
    for arch in build.SHIPPED_ARCHS:
        cmd = build.kernel_compile_command(arch, tmp_path / f"{arch}.o")
        procs[arch] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for arch, proc in procs.items():
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{arch}:\n{out}"
        assert f"for '{arch}'" in out, out  # ptxas really produced code for this target
        assert "error" not in out.lower(), out
        obj = tmp_path / f"{arch}.o"
        assert obj.stat().st_size > 10_000
        # the kernels and the combine kernel are all in there
        data = obj.read_bytes()
        assert b"sparse_mla_decode_kernel" in data and b"sparse_mla_combine_kernel" in data
        # the bench-only phase timeline is compiled out of the shipped build
        assert b"g_tl_main" not in data


def _compile_bench_cu(name: str, out: Path, *flags: str) -> bytes:
    """Compile bench/NAME with nvcc for sm_90a (-O1: a compile check, not a build to run) and
    return the output file's bytes; the bench harnesses include the kernel source itself."""
    src = Path(__file__).resolve().parent.parent / "bench" / name
    cmd = [str(build.find_nvcc()), "-O1", "-std=c++17", "-arch=sm_90a", *flags, str(src), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out.read_bytes()


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_phase_timeline_harness_compiles(tmp_path: Path) -> None:
    """bench/kernel_timeline.cu builds the kernel source with -DDSPARKCTL_TIMELINE; compiling it
    here keeps the instrumentation macros and the harness in step with the kernel."""
    data = _compile_bench_cu("kernel_timeline.cu", tmp_path / "timeline", "-DDSPARKCTL_TIMELINE")
    assert b"g_tl_main" in data and b"g_tl_combine" in data  # the instrumented kernel is in there


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_phase_timeline_harness_compiles_with_tile_events(tmp_path: Path) -> None:
    """Session 40's -DDSPARKCTL_TL_EVENTS (bench/results/kernel_h200_ws_events/run1.sh builds it):
    the harness reads the per-tile points back and prints them as "tile_events"."""
    data = _compile_bench_cu("kernel_timeline.cu", tmp_path / "timeline_ev", "-DDSPARKCTL_TIMELINE",
                             "-DDSPARKCTL_TL_EVENTS")
    assert b"g_tl_ev" in data and b"tile_events" in data


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_cluster_occupancy_probe_compiles(tmp_path: Path) -> None:
    """bench/cluster_occupancy.cu asks the runtime how many clusters of the WS kernel fit at once
    (the fact behind session 28's rejected cluster combines); it reaches into the kernel source
    (prepared_ws_kernel, WsCfg::SMEM, kWsThreads), so it is compiled here to stay in step."""
    data = _compile_bench_cu("cluster_occupancy.cu", tmp_path / "cluster_occupancy.o", "-c")
    assert b"cudaOccupancyMaxActiveClusters" in data


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_racecheck_repro_compiles_with_the_producer_warpgroup1_barrier(tmp_path: Path) -> None:
    """bench/racecheck_ws_repro.cu includes the kernel source and uses its barrier helpers; session
    42's switches (RC_PW1: a producer / warpgroup 1 named barrier, RC_Q_LDS: warpgroup 0's Q reads by
    ld.shared) are compiled here in racecheck_ws_repro.sh's pw1_sync form, so the device call that
    runs them does not start with a build error, and the run's result line names them."""
    data = _compile_bench_cu("racecheck_ws_repro.cu", tmp_path / "repro.o", "-c", "-DRC_HANDOFF=1", "-DRC_Q_LDS=1",
                             "-DRC_PW1=2")
    assert b"pw1=%d q_lds=%d" in data


def _ptxas_registers(out: str) -> dict[str, tuple[int, int]]:
    """ptxas -v output -> {decode kernel '<MT,BN,VEC>' or warp-specialized 'ws<VEC>': (registers,
    spill store bytes)}."""
    res: dict[str, tuple[int, int]] = {}
    name, spill = None, 0
    for line in out.splitlines():
        m = re.search(r"Compiling entry function '\S*sparse_mla_decode_kernelILi(\d+)ELi(\d+)ELi(\d+)E", line)
        w = re.search(r"Compiling entry function '\S*sparse_mla_decode_ws_kernelILi(\d+)E", line)
        if m or w:
            name, spill = (f"<{m[1]},{m[2]},{m[3]}>" if m else f"ws<{w[1]}>"), 0
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and name:
            spill = int(m[1])
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            res[name] = (int(m[1]), spill)
            name = None
    return res


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_sm120_register_budget_build_on_hopper(tmp_path: Path) -> None:
    """The H200 runs SM120's SMALL-layout register allocation through -DDSPARKCTL_SMALL_MIN_BLOCKS=1
    (bench/kernel_device_run.sh tests that build too). Guard that the flag really lifts Hopper's
    128-register cap for the 32-head SMALL kernels, as sm_120a compiles them, and that the
    SMALL kernels spill in neither build."""
    flag = "-DDSPARKCTL_SMALL_MIN_BLOCKS=1"
    builds = {
        "hopper": build.kernel_compile_command("sm_90a", tmp_path / "a.o"),
        "hopper_sm120_budget": build.kernel_compile_command("sm_90a", tmp_path / "b.o", extra=[flag]),
        "sm120": build.kernel_compile_command("sm_120a", tmp_path / "c.o"),
    }
    procs = {k: subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for k, c in builds.items()}
    regs = {}
    for k, proc in procs.items():
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{k}:\n{out}"
        regs[k] = _ptxas_registers(out)
    small32 = [f"<2,32,{v}>" for v in (8, 16)]
    for k in small32:
        assert regs["hopper"][k][0] <= 128, regs["hopper"][k]  # two CTAs per SM on Hopper
        assert regs["hopper_sm120_budget"][k][0] > 128, regs["hopper_sm120_budget"][k]
        assert regs["sm120"][k][0] > 128, regs["sm120"][k]
    for b in regs.values():
        for k in [*small32, "<1,32,8>", "<1,32,16>"]:
            assert b[k][1] == 0, (k, b[k])  # no spills in the SMALL layouts (SM120's only ones)
    # v31 / v32: the warp-specialized 64 x 64 kernel (routed on Hopper) compiles for both load
    # widths without a spill: its warpgroups' setmaxnreg budgets are what ptxas allocates each
    # role to (384 threads x 168 registers), and a spill was the first sign of a budget too small
    # (v52's 200 / 176 / 128 split spilled 12 / 4 bytes; v53's 216 / 176 / 112 none)
    for v in (8, 16):
        assert regs["hopper"][f"ws<{v}>"] == (168, 0), regs["hopper"][f"ws<{v}>"]


@pytest.fixture(scope="module")
def kernel_ptx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """PTX of the kernel source for sm_90a, sm_120a, a -DDSPARKCTL_NO_WGMMA Hopper build, the
    racecheck build of the warp-specialized kernel (-DDSPARKCTL_WS_RACECHECK_SYNC), v43's build
    without the L2 prefetch (-DDSPARKCTL_WS_L2_PREFETCH=0, the A/B baseline) and v44's build
    without the warp-row combine (-DDSPARKCTL_COMBINE_WARP_ROWS=0) and v45's build without the
    cluster combine (-DDSPARKCTL_WS_CLUSTER_COMBINE=0) and two timeline builds with the combine's
    marks, one with session 29's probe 3 (-DDSPARKCTL_TL_COMBINE_PROBE=3), and v51's single-pass
    nope P.V (-DDSPARKCTL_NOPE_P_HILO=0 for sm_90a and sm_120a, and the WS kernel's
    -DDSPARKCTL_WS_NOPE_P_HILO=0), and session 32's timeline build with and without warpgroup 1's
    split P.V marks (-DDSPARKCTL_TL_SPLIT_PV), and v60's split-K S turned off (v53's S:
    -DDSPARKCTL_LARGE16_SPLIT_K=0 and -DDSPARKCTL_SMALL_SPLIT_K=0, each for sm_90a and sm_120a) and
    SMALL16's rejected version on (-DDSPARKCTL_SMALL_SPLIT_K=2, sm_120a), and v61's two
    dequantization changes each turned off (-DDSPARKCTL_POW2_F32=0, -DDSPARKCTL_DEQ_LANE_HALVES=0,
    sm_90a and sm_120a) and v62's (-DDSPARKCTL_DEQ_SPLIT16=0, -DDSPARKCTL_DEQ_UNSIGNED=0, sm_90a) and
    v63's (-DDSPARKCTL_CP_IGNORE_SRC=0, -DDSPARKCTL_PREFETCH_ONE_TEST=0, sm_90a) and v64's
    (-DDSPARKCTL_DEQ_SW_HALVES=0, -DDSPARKCTL_WS_LO_SPLIT16=0, sm_90a) and v65's
    (-DDSPARKCTL_WS_TAIL16=0, sm_90a) and v66's (-DDSPARKCTL_WS_DIMS_SPLIT=0, sm_90a) and session 38's
    candidate (-DDSPARKCTL_WS_DIMS_PARTIALS=1, sm_90a) and v67's (-DDSPARKCTL_WS_DH_DIRECT=0, sm_90a)
    and v68's (-DDSPARKCTL_WS_DH_RING3=0, sm_90a) and v70's (-DDSPARKCTL_FINISH_ROWS_LOOP=0, sm_90a) and
    v71's (-DDSPARKCTL_WS_DH_COPY1=0, sm_90a) and v72's (-DDSPARKCTL_SINK_EARLY=0, sm_90a) and v73's
    (-DDSPARKCTL_SPLIT_FRONT=0, sm_90a) and v74's (-DDSPARKCTL_T_EARLY_STORE=0, sm_90a) and v75's
    (-DDSPARKCTL_WS_DH_UNSPLIT=0, sm_90a; v67's variant is built on it, so its pin is v67's change) and
    v76's (-DDSPARKCTL_WS_DH_QSHARE=0, sm_90a; v75's pin compares against it),
    and session 40's per-tile timeline points
    (-DDSPARKCTL_TIMELINE -DDSPARKCTL_TL_EVENTS, sm_90a), as
    {target: {kernel name: its .entry body}}. PTX only (no ptxas): a few seconds per target."""
    if build.find_nvcc() is None:
        pytest.skip("nvcc not installed: cannot compile-check CUDA")
    tmp_path = tmp_path_factory.mktemp("ptx")
    src = build.kernels_dir() / build.KERNEL_SOURCE
    nvcc = str(build.find_nvcc())
    targets = {
        "sm_90a": ["-arch=sm_90a"],
        "sm_120a": ["-arch=sm_120a"],
        "sm_90a_no_wgmma": ["-arch=sm_90a", "-DDSPARKCTL_NO_WGMMA"],
        "sm_90a_ws_racecheck_sync": ["-arch=sm_90a", "-DDSPARKCTL_WS_RACECHECK_SYNC"],
        "sm_90a_ws_no_pf": ["-arch=sm_90a", "-DDSPARKCTL_WS_L2_PREFETCH=0"],
        "sm_90a_combine_block": ["-arch=sm_90a", "-DDSPARKCTL_COMBINE_WARP_ROWS=0"],
        "sm_90a_ws_no_cluster_combine": ["-arch=sm_90a", "-DDSPARKCTL_WS_CLUSTER_COMBINE=0"],
        "sm_90a_tl_marks": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE", "-DDSPARKCTL_TL_CLUSTER_MARKS"],
        "sm_90a_tl_probe3": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE", "-DDSPARKCTL_TL_CLUSTER_MARKS",
                             "-DDSPARKCTL_TL_COMBINE_PROBE=3"],
        "sm_90a_nope_p1": ["-arch=sm_90a", "-DDSPARKCTL_NOPE_P_HILO=0"],
        "sm_120a_nope_p1": ["-arch=sm_120a", "-DDSPARKCTL_NOPE_P_HILO=0"],
        "sm_90a_ws_nope_p1": ["-arch=sm_90a", "-DDSPARKCTL_WS_NOPE_P_HILO=0"],
        "sm_90a_tl": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE"],
        "sm_90a_tl_split_pv": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE", "-DDSPARKCTL_TL_SPLIT_PV"],
        "sm_90a_no_large16_split_k": ["-arch=sm_90a", "-DDSPARKCTL_LARGE16_SPLIT_K=0"],
        "sm_120a_no_large16_split_k": ["-arch=sm_120a", "-DDSPARKCTL_LARGE16_SPLIT_K=0"],
        "sm_120a_no_small_split_k": ["-arch=sm_120a", "-DDSPARKCTL_SMALL_SPLIT_K=0"],
        "sm_120a_small16_split_k": ["-arch=sm_120a", "-DDSPARKCTL_SMALL_SPLIT_K=2"],
        "sm_90a_no_small_split_k": ["-arch=sm_90a", "-DDSPARKCTL_SMALL_SPLIT_K=0"],
        "sm_90a_no_pow2_f32": ["-arch=sm_90a", "-DDSPARKCTL_POW2_F32=0"],
        "sm_120a_no_pow2_f32": ["-arch=sm_120a", "-DDSPARKCTL_POW2_F32=0"],
        "sm_90a_no_lane_halves": ["-arch=sm_90a", "-DDSPARKCTL_DEQ_LANE_HALVES=0"],
        "sm_120a_no_lane_halves": ["-arch=sm_120a", "-DDSPARKCTL_DEQ_LANE_HALVES=0"],
        "sm_90a_no_split16": ["-arch=sm_90a", "-DDSPARKCTL_DEQ_SPLIT16=0"],
        "sm_90a_no_unsigned": ["-arch=sm_90a", "-DDSPARKCTL_DEQ_UNSIGNED=0"],
        "sm_90a_no_cp_ignore_src": ["-arch=sm_90a", "-DDSPARKCTL_CP_IGNORE_SRC=0"],
        "sm_90a_no_prefetch_one_test": ["-arch=sm_90a", "-DDSPARKCTL_PREFETCH_ONE_TEST=0"],
        "sm_90a_no_sw_halves": ["-arch=sm_90a", "-DDSPARKCTL_DEQ_SW_HALVES=0"],
        "sm_90a_no_ws_lo_split16": ["-arch=sm_90a", "-DDSPARKCTL_WS_LO_SPLIT16=0"],
        "sm_90a_no_ws_tail16": ["-arch=sm_90a", "-DDSPARKCTL_WS_TAIL16=0"],
        "sm_90a_no_ws_dims_split": ["-arch=sm_90a", "-DDSPARKCTL_WS_DIMS_SPLIT=0"],
        "sm_90a_ws_dims_partials": ["-arch=sm_90a", "-DDSPARKCTL_WS_DIMS_PARTIALS=1"],
        "sm_90a_no_ws_dh_direct": ["-arch=sm_90a", "-DDSPARKCTL_WS_DH_DIRECT=0", "-DDSPARKCTL_WS_DH_UNSPLIT=0"],
        "sm_90a_no_ws_dh_ring3": ["-arch=sm_90a", "-DDSPARKCTL_WS_DH_RING3=0"],
        "sm_90a_tl_events": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE", "-DDSPARKCTL_TL_EVENTS"],
        "sm_90a_tl_prologue": ["-arch=sm_90a", "-DDSPARKCTL_TIMELINE", "-DDSPARKCTL_TL_EVENTS", "-DDSPARKCTL_TL_PROLOGUE"],
        "sm_90a_no_ws_q_early": ["-arch=sm_90a", "-DDSPARKCTL_WS_Q_EARLY=0"],
        "sm_90a_ws_q_early2": ["-arch=sm_90a", "-DDSPARKCTL_WS_Q_EARLY=2"],
        "sm_90a_no_finish_rows_loop": ["-arch=sm_90a", "-DDSPARKCTL_FINISH_ROWS_LOOP=0"],
        "sm_90a_no_ws_dh_copy1": ["-arch=sm_90a", "-DDSPARKCTL_WS_DH_COPY1=0"],
        "sm_90a_no_sink_early": ["-arch=sm_90a", "-DDSPARKCTL_SINK_EARLY=0"],
        "sm_90a_no_split_front": ["-arch=sm_90a", "-DDSPARKCTL_SPLIT_FRONT=0"],
        "sm_90a_no_t_early_store": ["-arch=sm_90a", "-DDSPARKCTL_T_EARLY_STORE=0"],
        "sm_90a_ws_dh_split_paths": ["-arch=sm_90a", "-DDSPARKCTL_WS_DH_UNSPLIT=0"],
        "sm_90a_no_ws_dh_qshare": ["-arch=sm_90a", "-DDSPARKCTL_WS_DH_QSHARE=0"],
    }
    procs = {
        k: subprocess.Popen([nvcc, "-ptx", "-std=c++17", "-O3", *f, str(src), "-o", str(tmp_path / f"{k}.ptx")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for k, f in targets.items()
    }  # fmt: skip
    res: dict[str, dict[str, str]] = {}
    for k, proc in procs.items():
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{k}:\n{out}"
        text = (tmp_path / f"{k}.ptx").read_text()
        res[k] = {}
        for part in re.split(r"^(?:\.visible )?\.entry ", text, flags=re.M)[1:]:
            m = re.match(r"\S*?(sparse_mla_(?:decode|combine)_kernelILi\d+ELi\d+(?:ELi\d+)?E|sparse_mla_decode_ws_kernel(?:_dims)?ILi\d+E"
                         r"|sparse_mla_combine_warp_kernelILi\d+E)(Lb1E)?", part)
            assert m, part[:200]
            res[k][m[1] + ("+cluster" if m[2] else "")] = part  # v27's clustered instantiation
        assert len(res[k]) >= 10, (k, sorted(res[k]))
    return res


def _shipped_and_no_wgmma(kernel_ptx: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The targets a plan can launch (the racecheck build and the candidates are pinned to sm_90a's
    PTX by their own tests)."""
    return {k: v for k, v in kernel_ptx.items() if k in ("sm_90a", "sm_120a", "sm_90a_no_wgmma")}


def test_wgmma_only_in_the_sm90a_64_candidate_tiles_of_32_and_64_heads(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v20 / v21 compute S and P.V of the 64-head x 64-candidate tiles with wgmma on sm_90a, and
    v30 the 32-head x 64-candidate tiles (transposed: S^T = K Q^T, O^T = V^T P^T). wgmma does not
    exist on SM120 / SM121, and every other layout must stay on the portable mma.sync path, so:
    wgmma and the async-proxy fence appear in exactly the four sm_90a <4,64,VEC> / <2,64,VEC>
    kernels, in no other kernel, and nowhere in sm_120a or in a -DDSPARKCTL_NO_WGMMA Hopper build;
    stmatrix (sm_90+, the transposed tiles' P and output staging) likewise only in <2,64,VEC>.
    v31 / v32's warp-specialized kernel (also 64 x 64 tiles) runs wgmma and setmaxnreg on sm_90a
    only; elsewhere it is a trapping stub that no plan launches."""
    hopper = kernel_ptx["sm_90a"]
    with_wgmma = {name for name, body in hopper.items() if "wgmma.mma_async" in body}
    ws = {f"sparse_mla_decode_ws_kernelILi{v}E" for v in (8, 16)} | {"sparse_mla_decode_ws_kernel_dimsILi16E"}  # v66
    expected = {f"sparse_mla_decode_kernelILi{m}ELi64ELi{v}E" for m in (2, 4) for v in (8, 16)} | ws
    assert with_wgmma == expected, sorted(with_wgmma)
    for name in ws:
        assert hopper[name].count("setmaxnreg") == 3 and "fence.proxy.async.shared::cta" in hopper[name], name
    assert not [n for n, b in hopper.items() if "setmaxnreg" in b and n not in ws]
    for k in ("sm_120a", "sm_90a_no_wgmma"):
        for name in ws:
            assert "trap;" in kernel_ptx[k][name] and "setmaxnreg" not in kernel_ptx[k][name], (k, name)
    for v in (8, 16):
        body = hopper[f"sparse_mla_decode_kernelILi4ELi64ELi{v}E"]
        # S: 28 fp16 nope + 4 bf16 rope k-steps; P.V (4 k-steps of 16 candidates): warpgroup 0
        # m64n192 + m64n64 fp16, warpgroup 1 m64n192 fp16 + 2 x m64n64 bf16 (rope, P hi and lo),
        # the fp16 ones twice since v52 (nope P hi and lo)
        assert body.count("wgmma.mma_async") == 32 + 4 * 4 + 4 * 4, v
        assert body.count(".m64n32k16.") == 32 and body.count(".m64n192k16.") == 16, v
        assert "fence.proxy.async.shared::cta" in body and "wgmma.wait_group" in body, v
        assert "stmatrix" not in body, v
        body = hopper[f"sparse_mla_decode_kernelILi2ELi64ELi{v}E"]
        # S^T: 32 k-steps (warpgroup 0); P.V once per live k-step count n = 1..4 (the tail skip):
        # warpgroup 0 4 fp16 blocks, warpgroup 1 3 fp16 blocks + the rope block twice (P hi, lo),
        # the fp16 blocks twice since v52 (nope P hi and lo), all m64n32k16, V^T transposed
        # (MN-major A): 32 + 16 * (1 + 2 + 3 + 4)
        assert body.count("wgmma.mma_async") == body.count(".m64n32k16.") == 32 + 16 * 10, v
        # imm-trans-a set exactly on the P.V instructions (S^T reads both operands K-major)
        assert body.count("p, 1, 1, 1, 0;") == 16 * 10 and body.count("p, 1, 1, 0, 0;") == 32, v
        assert "fence.proxy.async.shared::cta" in body and "stmatrix.sync.aligned.m8n8.x4.trans" in body, v
    for name, body in hopper.items():
        if name not in with_wgmma or "ILi4E" in name or name in ws:
            assert "stmatrix" not in body, name
    for k in ("sm_120a", "sm_90a_no_wgmma"):
        for name, body in kernel_ptx[k].items():
            assert "wgmma" not in body and "fence.proxy.async" not in body and "stmatrix" not in body, (k, name)


def test_multicast_copies_only_in_the_sm90a_cluster_kernel(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v27: the multicast bulk copies, mbarriers and cluster barriers of the head-block clusters
    live in one sm_90a instantiation (16 heads x 64 candidates, 16-byte path); every other kernel
    keeps the plain per-CTA cp.async gather, and SM120 / SM121 get none of it. (The sm_90a
    warp-specialized kernel has mbarriers of its own, its producer / consumer ring, and bulk copies
    into its own CTA on the 16-byte path: no multicast; since v45 its only cluster barriers are the
    epilogue's 2-split combine rendezvous, sm_90a only, and since v75 not in the halves kernel, which
    runs unsplit only; since v76 that kernel has one rendezvous of its own, before its CTAs' Q hand-off.)"""
    cluster_ops = ("multicast::cluster", "mbarrier.try_wait", "barrier.cluster")
    ws = {"sparse_mla_decode_ws_kernelILi8E", "sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernel_dimsILi16E"}
    for target, kernels in _shipped_and_no_wgmma(kernel_ptx).items():
        with_ops = {name for name, body in kernels.items() if any(op in body for op in cluster_ops) and name not in ws}
        expected = {"sparse_mla_decode_kernelILi1ELi64ELi16E+cluster"} if target.startswith("sm_90a") else set()
        assert with_ops == expected, (target, sorted(with_ops))
        for name in ws:
            body = kernels[name]
            assert "multicast" not in body, (target, name)
            assert ("barrier.cluster.wait.acquire;" in body) == (target == "sm_90a"), (target, name)
            assert ("mbarrier.try_wait" in body) == (target == "sm_90a"), (target, name)
    assert "cp.async.bulk.shared::cluster.global" in kernel_ptx["sm_90a"]["sparse_mla_decode_ws_kernelILi16E"]
    body = kernel_ptx["sm_90a"]["sparse_mla_decode_kernelILi1ELi64ELi16E+cluster"]
    assert all(op in body for op in cluster_ops)
    # the mbarrier is initialised, and published to the peers, before any copy can land in it
    assert body.index("mbarrier.init") < body.index("barrier.cluster.wait") < body.index("multicast::cluster")


def test_no_global_access_before_the_grid_dependency_wait(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v23 launches the main kernel as a programmatic dependent of the previous kernel (and the
    combine of the main kernel since v5): their CTAs may run while that kernel still writes q, ids,
    KV or reads the workspace. So in every kernel of every target, griddepcontrol.wait comes once,
    before any global load, store, atomic or asynchronous copy."""
    global_access = re.compile(r"\b(?:ld|st|atom|red)\.global|\bcp\.async\.|\bld\.global\.nc|\bprefetch\.global")
    for target, kernels in _shipped_and_no_wgmma(kernel_ptx).items():
        for name, body in kernels.items():
            if "ws_kernel" in name and target != "sm_90a":  # the trapping stub: no access at all
                assert "trap;" in body and not global_access.search(body), (target, name)
                continue
            assert body.count("griddepcontrol.wait") == 1, (target, name)
            head = body[: body.index("griddepcontrol.wait")]
            hits = global_access.findall(head)
            assert not hits, (target, name, hits[:5])
            assert global_access.search(body[body.index("griddepcontrol.wait") :]), (target, name)


def _ws_kernels_of(kernel_ptx: dict[str, dict[str, str]], variant: str) -> list[tuple[str, str, str]]:
    """A build variant that may change only the warp-specialized kernels: every other kernel's PTX
    is sm_90a's; returns (name, shipped PTX, variant PTX) of the WS kernels."""
    ship, var = kernel_ptx["sm_90a"], kernel_ptx[variant]
    assert ship.keys() == var.keys()
    for name, body in ship.items():
        if "ws_kernel" not in name:
            assert var[name] == body, (variant, name)
    pairs = [(name, body, var[name]) for name, body in ship.items() if "ws_kernel" in name]
    assert len(pairs) == 3, pairs  # the 8- and 16-byte copy paths, and v66's 16-byte halves of O's dims
    return pairs


def test_racecheck_build_differs_only_in_the_ws_hand_off(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v33: racecheck reports hazards behind later barriers in kernels whose warpgroups hand a
    buffer over with bar.arrive (bench/racecheck_ws_repro.cu: 1,000-10,000 a run in a kernel that
    cannot race, none with a rendezvous or mbarriers), so the WS kernel is racechecked in a build
    where both hand-offs are bar.sync (bench/kernel_device_run.sh). That check covers the shipped
    kernel only if the two builds differ in exactly those instructions: the WS kernels' PTX is the
    shipped PTX with its two bar.arrive (P ready, P free) as bar.sync, and v68's halves kernel's
    third (Q free: warpgroup 0 has read Q into registers, so its region takes tile 2), every other
    kernel equal."""
    for name, body, rc in _ws_kernels_of(kernel_ptx, "sm_90a_ws_racecheck_sync"):
        n = 3 if "_dims" in name else 2
        assert body.count("bar.arrive") == n and "bar.arrive" not in rc, name
        assert rc == body.replace("bar.arrive", "bar.sync"), name


def test_ws_kernels_skip_the_o_rescale_by_a_warp_vote(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v42's lazy O rescale (bench/results/kernel_h200_v42_lazy/): both consumer warpgroups of the
    warp-specialized kernels skip O's rescale when every row of the warp keeps its running max, by
    one vote.all each (v41 had none: the vote is how a refactor that drops the skip shows here);
    the racecheck build keeps them, so its check still covers the shipped loop."""
    ws = {k: v for k, v in kernel_ptx["sm_90a"].items() if "ws_kernel" in k}
    assert len(ws) == 3, sorted(ws)
    for name, body in ws.items():
        n = 1 if "_dims" in name else 2  # v66's halves: warpgroup 0 holds no O
        assert body.count("vote.sync.all") == n, name
        assert kernel_ptx["sm_90a_ws_racecheck_sync"][name].count("vote.sync.all") == n, name


def test_only_the_16_byte_ws_kernel_prefetches_into_l2(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v43 (bench/results/kernel_h200_v44_prep/): the warp-specialized producer prefetches the rows
    of the tile after next into L2 with one cp.async.bulk.prefetch.L2 a row, on the 16-byte path only
    (the 8-byte path's producer issues its own copies right after its prep: no lead to use). No
    other kernel prefetches, and the A/B build without it (-DDSPARKCTL_WS_L2_PREFETCH=0) changes the
    warp-specialized kernels only and has no prefetch."""
    with_insn = sorted(n for n, b in kernel_ptx["sm_90a"].items() if "prefetch" in b)
    assert len(with_insn) == 2 and all("ILi16E" in n and "ws_kernel" in n for n in with_insn), with_insn  # v66: and its halves
    # one prefetch site (the prep of tile j + 2); v71's halves kernel also prepares tile 1 ahead of its copies
    for k, halves_sites in (("sm_90a", 2), ("sm_90a_no_ws_dh_copy1", 1)):
        for n in with_insn:
            assert kernel_ptx[k][n].count("cp.async.bulk.prefetch.L2.global") == (halves_sites if "dims" in n else 1), (k, n)
    for name, _, var in _ws_kernels_of(kernel_ptx, "sm_90a_ws_no_pf"):
        assert "prefetch" not in var, name
    for k in ("sm_120a", "sm_90a_no_wgmma"):
        assert not [n for n, b in kernel_ptx[k].items() if "prefetch" in b], k


def test_warp_row_combines_are_the_only_kernels_the_block_row_build_lacks(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v44 (bench/results/kernel_h200_v44_ldg/run2/): calls of 2-4 splits combine a row per warp.
    Their kernels (one per split count) are the only difference from the A/B build without them
    (-DDSPARKCTL_COMBINE_WARP_ROWS=0), on every shipped target; each waits for the main grid once
    before any global access (it is launched as that grid's programmatic dependent) and releases
    the next call's main kernel."""
    block = kernel_ptx["sm_90a_combine_block"]
    warp_rows = [f"sparse_mla_combine_warp_kernelILi{s}E" for s in (2, 3, 4)]
    for k in ("sm_90a", "sm_120a", "sm_90a_no_wgmma"):
        assert sorted(n for n in kernel_ptx[k] if "combine_warp" in n) == warp_rows, k
    ship = kernel_ptx["sm_90a"]
    assert sorted(set(ship) - set(block)) == warp_rows and not set(block) - set(ship)
    # (PTX numbers basic-block labels per function, so the added functions renumber the others')
    def norm(body: str) -> str:
        return re.sub(r"\$L__BB\d+_", "$L__BB_", body)
    assert not [n for n in block if norm(ship[n]) != norm(block[n])]
    access = re.compile(r"\b(?:ld|st)\.global")
    for name in warp_rows:
        body = ship[name]
        assert body.count("griddepcontrol.wait") == 1 and "griddepcontrol.launch_dependents" in body, name
        assert not access.search(body[: body.index("griddepcontrol.wait")]), name


def test_cluster_combine_is_only_in_the_ws_epilogues(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v45 (bench/results/kernel_h200_v45_cluster_combine/): a 2-split WS call's two CTAs combine
    their rows over distributed shared memory. Against the A/B build without it
    (-DDSPARKCTL_WS_CLUSTER_COMBINE=0) only the WS kernels differ; each has two cluster rendezvous
    in the consumers' epilogue and two in the producer's (every thread of both CTAs takes part),
    and its peer reads are ld.shared::cluster of mapa addresses. The halves kernel has no combine in
    either build (v75: it runs unsplit only); shipped, it has v76's one rendezvous before its Q
    hand-off and no peer reads (the hand-off is the peer's st.async), and the A/B build, whose
    partial-lse region that hand-off's mbarrier needs, shares no Q."""
    for name, ship, var in _ws_kernels_of(kernel_ptx, "sm_90a_ws_no_cluster_combine"):
        assert "barrier.cluster" not in var and "mapa" not in var, name
        if "_dims" in name:
            assert ship.count("barrier.cluster.arrive.release;") == ship.count("barrier.cluster.wait.acquire;") == 1, name
            assert "ld.shared::cluster" not in ship and "st.async" in ship, name
            continue
        assert ship.count("barrier.cluster.arrive.release;") == 4, name
        assert ship.count("barrier.cluster.wait.acquire;") == 4, name
        assert ship.count("mapa.shared::cluster") >= 3 and ship.count("ld.shared::cluster.v4.f32") >= 2, name


def test_combine_probe_drops_only_the_peer_loads_and_row_stores(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """Session 29's timeline-only probe (bench/results/kernel_h200_v50_combine_probe/): probe 3
    must time the 2-split combine loop without its peer loads and row stores and change nothing
    else, or its marks would measure something other than what they claim. Against the marks build
    only the WS kernels differ; the probe has no peer access at all, fewer global 16-byte stores
    between the consumers' two cluster rendezvous, and there exactly the marks build's arithmetic
    (weights, reciprocal, own lse load once; per row body bf16 packs, fused multiply-adds, own
    shared-memory loads), so nothing was folded away. Probes 1 and 2 are the two halves of probe
    3's switch (each branch of it is
    compiled here by probe 3 or the marks build)."""
    marks, probe = kernel_ptx["sm_90a_tl_marks"], kernel_ptx["sm_90a_tl_probe3"]
    assert marks.keys() == probe.keys()
    ws = [name for name in marks if "ws_kernel" in name]
    assert len(ws) == 3, ws
    for name, body in marks.items():
        if name not in ws:
            assert probe[name] == body, name
    arrive = re.compile(r"barrier\.cluster\.arrive\.release;")
    for name in ws:
        if "_dims" in name:  # v75: the halves kernel runs unsplit only, no combine to probe
            assert probe[name] == marks[name] and "ld.shared::cluster" not in marks[name], name
            continue
        assert "ld.shared::cluster" not in probe[name] and "mapa" not in probe[name], name
        spans = []
        for text in (marks[name], probe[name]):
            a = [m.start() for m in arrive.finditer(text)]
            # the producer's two rendezvous come first in the text, then the consumers'
            assert len(a) == 4 and text.count("barrier.cluster.wait.acquire;") == 4, name
            spans.append(text[a[2] : a[3]])
        assert "ld.shared::cluster" in spans[0], name
        assert spans[1].count("st.global.v4.u32") < spans[0].count("st.global.v4.u32"), name
        # v51: the row scalars are made once a thread and the row loop takes them by 3 shuffles a
        # row; the compiler may unroll the probe's loop further (8 row bodies against 4), so the
        # row bodies' operations are compared per body and the rest as totals
        bodies = [sp.count("shfl.sync") / 3 for sp in spans]
        assert bodies[0] >= 1 and all(b == int(b) for b in bodies), (name, bodies)
        per_body = {"ex2.approx": 0, "rcp.rn.f32": 0, "ld.shared.f32": 0,
                    "cvt.rn.bf16x2.f32": 4, "ld.shared.v4.f32": 2, "fma.rn.f32": 16}  # fmt: skip
        for op, k in per_body.items():
            rest = [sp.count(op) - k * b for sp, b in zip(spans, bodies, strict=True)]
            assert spans[0].count(op) > 0 and rest[0] >= 0 and rest[1] == rest[0], (name, op, rest)


def test_every_kernel_source_is_hashed_and_shipped() -> None:
    """A source added under kernels/ but missing from build.source_files() would neither
    invalidate the build cache when it changes nor be copied for install-kernels."""
    listed = {f.name for f in build.source_files()}
    on_disk = {f.name for f in build.kernels_dir().iterdir() if f.suffix in (".cu", ".cuh", ".h", ".cpp", ".hpp")}
    assert on_disk == listed, on_disk ^ listed


def test_nope_p_hilo_adds_a_lo_pass_to_every_main_kernel_and_leaves_the_ws_kernel(
    kernel_ptx: dict[str, dict[str, str]],
) -> None:
    """v52 (bench/results/smoke_h200_v51/): the nope P.V with P as fp16 hi + lo. Against v51's
    single pass (-DDSPARKCTL_NOPE_P_HILO=0), every main kernel (mma.sync on both targets, wgmma on
    sm_90a) has more fp16 MMAs (the lo pass) and one more shared-memory store per P pair; the WS
    kernels and the combine kernels are the same (the WS kernel's lo pass is its own flag,
    -DDSPARKCTL_WS_NOPE_P_HILO: its shared memory has no room for the second buffer)."""
    f16_mma = ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16",
               "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16")
    for hilo_key, single_key in (("sm_90a", "sm_90a_nope_p1"), ("sm_120a", "sm_120a_nope_p1")):
        single, hilo = kernel_ptx[single_key], kernel_ptx[hilo_key]  # v51's one pass, the shipped two
        assert single.keys() == hilo.keys()
        main = [n for n in single if "decode_kernel" in n]
        assert len(main) >= 6, main
        for name, body in single.items():
            if name not in main:
                assert hilo[name] == body, (hilo_key, name)
                continue
            before = sum(body.count(op) for op in f16_mma)
            after = sum(hilo[name].count(op) for op in f16_mma)
            assert before > 0 and after > before, (hilo_key, name, before, after)
            assert hilo[name].count("st.shared") + hilo[name].count("stmatrix") > body.count("st.shared") + body.count(
                "stmatrix"), (hilo_key, name)


def test_ws_nope_p_hilo_adds_a_register_a_lo_pass_to_the_ws_kernel_only(
    kernel_ptx: dict[str, dict[str, str]],
) -> None:
    """v52's WS nope P.V lo pass: against v51's single pass (-DDSPARKCTL_WS_NOPE_P_HILO=0), both
    warpgroups run it with P's lo part in registers (wgmma's register-A form: v51 has none),
    warpgroup 1's from e4m3 that warpgroup 0 converts and warpgroup 1 converts back; no
    named-barrier operation is added, and the bf16 (rope) wgmma stay as they were. Only the WS
    kernels change. (v68's halves kernel runs S with A from registers in both builds: there the
    register-A forms grow by the lo pass's.)"""
    f16 = ("wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16")
    bf16 = "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
    reg_a = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(?:192|64)k16\.f32\.f16\.f16\s+\{[^}]*\},\s*\{%r")
    for name, hilo, single in _ws_kernels_of(kernel_ptx, "sm_90a_ws_nope_p1"):  # the shipped build, v51's pass
        before, after = (sum(t.count(op) for op in f16) for t in (single, hilo))
        assert before > 0 and after > before, (name, before, after)
        s_reg_a = len(reg_a.findall(single))
        assert (s_reg_a == 0) == ("_dims" not in name), (name, s_reg_a)
        assert len(reg_a.findall(hilo)) - s_reg_a == after - before, (name, before, after)
        assert hilo.count(bf16) == single.count(bf16) > 0, name
        assert "cvt.rn.satfinite.e4m3x2.f32" in hilo and "cvt.rn.satfinite.e4m3x2.f32" not in single, name
        assert hilo.count("cvt.rn.f16x2.e4m3x2") > single.count("cvt.rn.f16x2.e4m3x2"), name  # V's, and now lo's
        bars = [t.count("bar.sync") + t.count("bar.arrive") for t in (single, hilo)]
        assert bars[1] == bars[0], (name, bars)


def test_split_pv_timeline_marks_only_add_warpgroup_1s_two_clock_reads(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """Session 32's -DDSPARKCTL_TL_SPLIT_PV (timeline builds only) splits warpgroup 1's P.V phase at
    the commit: two more clock reads for each of its P.V sequences and its commit / wait apart,
    every other kernel's PTX as in the plain timeline build (so its marks measure the same code).
    The 16-byte WS kernels have two such sequences since v65 (full tiles, and the partial tiles'
    one k-step); the 8-byte one has one."""
    plain, split = kernel_ptx["sm_90a_tl"], kernel_ptx["sm_90a_tl_split_pv"]
    assert set(plain) == set(split)
    ws = {k for k in plain if "_ws_kernel" in k}
    assert len(ws) == 3
    for name in plain:
        if name in ws:
            # (v66's halves: half 1's sequences carry the marks, half 0's form has none)
            sequences = 2 if "ILi16E" in name else 1
            clocks = [body.count("%clock64") for body in (plain[name], split[name])]
            assert clocks[1] == clocks[0] + 2 * sequences, (name, clocks)
            waits = [body.count("wgmma.wait_group") for body in (plain[name], split[name])]
            assert waits[1] == waits[0], (name, waits)  # the same waits, one of them moved apart from its commit
        else:
            assert plain[name] == split[name], name


def _split_k_moves(base: dict[str, str], cand: dict[str, str]) -> set[str]:
    """The kernels a split-K S build changes, each checked: the same MMA kinds, one more barrier
    (the partial sums' exchange), and the partials' fp32 pair stores and loads."""
    assert base.keys() == cand.keys()
    moved = {n for n in base if base[n] != cand[n]}
    for name in moved:
        b, c = base[name], cand[name]
        for op in ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"):
            assert (b.count(op) > 0) == (c.count(op) > 0), (name, op)
        assert c.count("bar.sync") == b.count("bar.sync") + 1, name
        assert c.count("st.shared.v2.f32") > b.count("st.shared.v2.f32"), name
        assert c.count("ld.shared.v2.f32") >= b.count("ld.shared.v2.f32") + 8, name
    return moved


def test_large16_split_k_changes_only_the_16_head_64_candidate_kernels(
    kernel_ptx: dict[str, dict[str, str]],
) -> None:
    """v60 (-DDSPARKCTL_LARGE16_SPLIT_K, on by default; =0 is v53's S): S of the 16-head
    64-candidate tiles split over the dims. Only those kernels differ from v53's S (both copy
    widths, and the cluster instantiation), on both targets."""
    for base_key, cand_key in (("sm_90a_no_large16_split_k", "sm_90a"), ("sm_120a_no_large16_split_k", "sm_120a")):
        base, cand = kernel_ptx[base_key], kernel_ptx[cand_key]
        moved = _split_k_moves(base, cand)
        assert moved == {n for n in base if "decode_kernelILi1ELi64ELi" in n}, (base_key, sorted(moved))
        assert len(moved) == 3, (base_key, sorted(moved))  # 16- and 8-byte copies, and the cluster kernel


def test_small_split_k_changes_only_smalls_kernels_under_sm120s_budget(
    kernel_ptx: dict[str, dict[str, str]],
) -> None:
    """v60 (-DDSPARKCTL_SMALL_SPLIT_K=1, the default): the same split for SMALL's 32-head x
    32-candidate tiles, which needs 32 more registers. On sm_120a (one SMALL CTA per SM, no register
    cap) SMALL's two kernels differ from v53's and nothing else; =2 adds SMALL16's two (the version
    the H200 A/B rejected); on sm_90a, built for two SMALL CTAs per SM (128 registers), the flag
    changes nothing."""
    base = kernel_ptx["sm_120a_no_small_split_k"]
    moved = _split_k_moves(base, kernel_ptx["sm_120a"])
    assert moved == {n for n in base if re.search(r"decode_kernelILi2ELi32ELi", n)}, sorted(moved)
    assert len(moved) == 2, sorted(moved)  # 16- and 8-byte copies
    moved16 = _split_k_moves(base, kernel_ptx["sm_120a_small16_split_k"])
    assert moved16 == moved | {n for n in base if re.search(r"decode_kernelILi1ELi32ELi", n)}, sorted(moved16)
    assert len(moved16) == 4, sorted(moved16)
    assert kernel_ptx["sm_90a_no_small_split_k"] == kernel_ptx["sm_90a"]


def test_pow2_f32_multiplier_changes_every_dequantizing_kernel(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v61 (-DDSPARKCTL_POW2_F32, on; =0 is v60's select chain): a chunk's fp16 multiplier comes
    from one fp32 -> fp16x2 convert instead of three selects. Every kernel that dequantizes moves,
    with more of those converts and fewer selects; nothing else does."""
    for base_key, cand_key in (("sm_90a_no_pow2_f32", "sm_90a"), ("sm_120a_no_pow2_f32", "sm_120a")):
        base, cand = kernel_ptx[base_key], kernel_ptx[cand_key]
        moved = {n for n in base if base[n] != cand[n]}
        dequantizing = {n for n in base if "cvt.rn.f16x2.e4m3x2" in base[n]}  # not the combines, nor sm_120a's WS stub
        assert moved == dequantizing and len(moved) >= 11, (base_key, sorted(moved))
        for n in moved:
            assert cand[n].count("cvt.rn.f16x2.f32") > base[n].count("cvt.rn.f16x2.f32"), (base_key, n)
            assert cand[n].count("selp") < base[n].count("selp"), (base_key, n)


def test_lane_halves_change_only_the_16_byte_padded_row_kernels(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v61 (-DDSPARKCTL_DEQ_LANE_HALVES, on; =0 is v60's odd / even select): each lane loads the
    half of its 16-byte chunk it stores first. Only the mma.sync kernels with padded rows and
    16-byte chunks move (the wgmma kernels' tiles are swizzled, the 8-byte kernels' chunks are one
    store): more 8-byte shared loads in place of 16-byte ones, and fewer selects."""
    for base_key, cand_key in (("sm_90a_no_lane_halves", "sm_90a"), ("sm_120a_no_lane_halves", "sm_120a")):
        base, cand = kernel_ptx[base_key], kernel_ptx[cand_key]
        moved = {n for n in base if base[n] != cand[n]}
        padded16 = {n for n in base if n.startswith("sparse_mla_decode_kernel") and "ELi16E" in n
                    and "wgmma" not in base[n]}
        assert moved == padded16 and len(moved) >= 4, (base_key, sorted(moved))
        for n in moved:
            assert cand[n].count("ld.shared.v4.u32") < base[n].count("ld.shared.v4.u32"), (base_key, n)
            assert cand[n].count("selp") < base[n].count("selp"), (base_key, n)


def test_split16_drops_a_shift_a_word_in_every_dequantizing_kernel(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v62 (-DDSPARKCTL_DEQ_SPLIT16, on; =0 is v61): a raw word's two e4m3 pairs converted from
    its 16-bit halves in PTX instead of (w & 0xffff, w >> 16). Every dequantizing kernel, the WS
    producer included, has the same converts and fewer right shifts."""
    base, cand = kernel_ptx["sm_90a_no_split16"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    assert moved == {n for n in base if "cvt.rn.f16x2.e4m3x2" in base[n]} and len(moved) >= 13, sorted(moved)
    for n in moved:
        assert cand[n].count("cvt.rn.f16x2.e4m3x2") == base[n].count("cvt.rn.f16x2.e4m3x2"), n
        assert cand[n].count("shr.u32") < base[n].count("shr.u32"), n


def test_unsigned_chunk_index_math_changes_only_the_main_kernels(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v62 (-DDSPARKCTL_DEQ_UNSIGNED, on; =0 is v61): the tile loader's chunk -> candidate
    divisions in unsigned arithmetic. Only the main kernels use that loader (the WS producer has
    its own); their signed multiply-high divisions are gone."""
    base, cand = kernel_ptx["sm_90a_no_unsigned"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    main = {n for n in base if n.startswith("sparse_mla_decode_kernel")}
    assert moved == main and len(moved) >= 11, sorted(moved)
    for n in moved:
        assert base[n].count("mul.hi.s32") > 0 and cand[n].count("mul.hi.s32") == 0, n


_CP_SIZE_FORM = re.compile(r"cp\.async\.c[ag]\.shared\.global \[[^\]]+\], \[[^\]]+\], \d+, %r\d+;")
_CP_PRED_FORM = re.compile(r"cp\.async\.c[ag]\.shared\.global \[[^\]]+\], \[[^\]]+\], \d+, p;")


def test_every_zero_filling_copy_uses_the_ignore_src_predicate(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v63 (-DDSPARKCTL_CP_IGNORE_SRC, on; =0 is v62): the 8- and 16-byte cp.async that zero-fill
    invalid candidates take PTX's ignore-src predicate, not a src-size register, on both shipped
    targets; with =0, exactly the kernels that still had size-form copies move back."""
    for key in ("sm_90a", "sm_120a"):
        ptx = kernel_ptx[key]
        assert not any(_CP_SIZE_FORM.search(body) for body in ptx.values()), key
        assert sum(len(_CP_PRED_FORM.findall(body)) for body in ptx.values()) >= 100, key
    base, cand = kernel_ptx["sm_90a_no_cp_ignore_src"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    assert moved == {n for n in base if _CP_SIZE_FORM.search(base[n])} and len(moved) >= 4, sorted(moved)
    for n in moved:
        assert len(_CP_PRED_FORM.findall(cand[n])) == len(_CP_SIZE_FORM.findall(base[n])) > 0, n


def test_prefetch_one_test_moves_the_main_loaders_but_smalls_8_byte_ones(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v63 (-DDSPARKCTL_PREFETCH_ONE_TEST, on; =0 is v62): the main kernels' tile loader tests each
    offset once, in the copy's asm. Every main kernel's loader moves except the clustered one (its
    own multicast loader) and the 32-candidate 8-byte ones (SMALL's spilled with it at Hopper's
    128-register cap); each moved kernel gains one 64-bit sign test per copy."""
    base, cand = kernel_ptx["sm_90a_no_prefetch_one_test"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    expect = {n for n in base if re.fullmatch(r"sparse_mla_decode_kernelILi\d+ELi\d+ELi\d+E", n)
              and not re.search(r"ELi32ELi8E$", n)}
    assert moved == expect and len(moved) == 8, sorted(moved)
    for n in moved:
        assert cand[n].count("setp.lt.s64") >= base[n].count("setp.lt.s64") + 10, n


def test_sw_halves_change_only_the_swizzled_16_byte_wgmma_tiles(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v64 (-DDSPARKCTL_DEQ_SW_HALVES, on; =0 is v63): DEQ_LANE_HALVES for the swizzled tiles. Only
    sm_90a's 16-byte wgmma main kernels move (LARGE <4, 64, 16> and LARGE32 <2, 64, 16>): 8-byte
    shared loads in place of 16-byte ones, and fewer selects. sm_120a has no swizzled tiles."""
    base, cand = kernel_ptx["sm_90a_no_sw_halves"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    expect = {n for n in base if n.startswith("sparse_mla_decode_kernel") and n.endswith("ELi64ELi16E")
              and "wgmma" in base[n]}
    assert moved == expect and len(moved) == 2, sorted(moved)
    for n in moved:
        assert cand[n].count("ld.shared.v4.u32") < base[n].count("ld.shared.v4.u32"), n
        assert cand[n].count("selp") < base[n].count("selp"), n


def test_ws_lo_split16_drops_warpgroup_1s_shifts_only_in_the_16_byte_ws_kernel(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v64 (-DDSPARKCTL_WS_LO_SPLIT16, on; =0 is v63): warpgroup 1's e4m3 lo part converted from
    each word's 16-bit halves. Only the WS kernels move, with the same converts and fewer right
    shifts."""
    base, cand = kernel_ptx["sm_90a_no_ws_lo_split16"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    assert moved and all(n.startswith("sparse_mla_decode_ws_kernel") for n in moved), sorted(moved)
    for n in moved:
        assert cand[n].count("cvt.rn.f16x2.e4m3x2") == base[n].count("cvt.rn.f16x2.e4m3x2"), n
        assert cand[n].count("shr.u32") < base[n].count("shr.u32"), n


def test_ws_tail16_adds_a_partial_tile_path_only_to_the_16_byte_ws_kernel(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v65 (-DDSPARKCTL_WS_TAIL16, on; =0 is v64): a WS tile whose live rows are all in its first 16
    candidates gets a conversion over all producer threads and a one-k-step P.V of its own. Only
    the 16-byte WS kernel moves (the 8-byte one lands rows elsewhere): the full tiles' wgmma
    sequences stay and one k-step of each warpgroup's P.V is added (warpgroup 0: the hi pass's n192
    and n64 and the lo pass's two; warpgroup 1: n192, the rope's hi and lo, the lo pass's n192), and
    the tail's own FP8 converts."""
    base, cand = kernel_ptx["sm_90a_no_ws_tail16"], kernel_ptx["sm_90a"]
    moved = {n for n in base if base[n] != cand[n]}
    # (and v66's halves of O's dims, the same body: warpgroup 1's one k-step in either half's form)
    ws16 = {"sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernel_dimsILi16E"}
    assert moved == ws16, sorted(moved)
    for n in moved:
        assert cand[n].count("wgmma.mma_async") == base[n].count("wgmma.mma_async") + 8, n
        assert cand[n].count("cvt.rn.f16x2.e4m3x2") > base[n].count("cvt.rn.f16x2.e4m3x2"), n


def test_ws_dims_split_adds_one_kernel_and_moves_nothing(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v66 (-DDSPARKCTL_WS_DIMS_SPLIT=0 rebuilds v65): one kernel more, the 16-byte WS kernel's body
    with DH on (two CTAs per row block, one per half of O's dims, grid.z); every other kernel's PTX
    is v65's. Its producer is the WS kernel's (same conversions, bulk copies and L2 prefetches; v68
    adds one call site of the bulk copies, warpgroup 1's of tile 2 into Q's region, and v71 another,
    warpgroup 1's of tile 1, with one more prefetch site: tile 1 prepared ahead of its copies);
    warpgroup 0 runs no P.V."""
    cand, base = kernel_ptx["sm_90a"], kernel_ptx["sm_90a_no_ws_dims_split"]

    def norm(ptx: str) -> str:  # basic-block labels carry the function's index, which the new kernel shifts
        return re.sub(r"\$L__BB\d+_", "$L__BB_", ptx)

    assert {n: norm(cand[n]) for n in base} == {n: norm(p) for n, p in base.items()}
    new = set(cand) - set(base)
    assert new == {"sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(new)
    dh, ws = cand["sparse_mla_decode_ws_kernel_dimsILi16E"], base["sparse_mla_decode_ws_kernelILi16E"]
    assert dh.count("cvt.rn.f16x2.e4m3x2") == ws.count("cvt.rn.f16x2.e4m3x2")
    assert dh.count("cp.async.bulk.prefetch.L2") == ws.count("cp.async.bulk.prefetch.L2") + 1  # v71
    bulk = "cp.async.bulk.shared::cluster.global"
    assert dh.count(bulk) == ws.count(bulk) + 2  # v68's tile 2, v71's tile 1
    assert 0 < dh.count("wgmma.mma_async") < 2 * ws.count("wgmma.mma_async")
    assert "%ctaid.z" in dh and "%ctaid.z" not in ws
    # a 16-byte-path kernel only (the 8-byte path lands rows elsewhere and keeps one CTA per row block)
    assert "sparse_mla_decode_ws_kernel_dimsILi8E" not in cand


def test_ws_dims_partials_candidate_moves_only_the_halves_kernels_partial_stores(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """Session 38's prepared candidate (-DDSPARKCTL_WS_DIMS_PARTIALS=1, off): the halves kernel
    writes the fp32 partials of its half rows for split calls and leaves every split count, 2
    included, to the combine kernels. Only that kernel moves: its MMAs, conversions and named
    barriers are the same, and v45's cluster combine (rendezvous, peer and sink loads) is gone.
    (Against v75's -DDSPARKCTL_WS_DH_UNSPLIT=0 build: the partials need the split paths that v75
    compiles out of the shipped halves kernel.)"""
    base, cand = kernel_ptx["sm_90a_ws_dh_split_paths"], kernel_ptx["sm_90a_ws_dims_partials"]
    moved = {n for n in base if base[n] != cand[n]}
    assert moved == {"sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(moved)
    n = moved.pop()
    for op in ("wgmma.mma_async", "cvt.rn.f16x2.e4m3x2", "bar.sync", "bar.arrive", "mbarrier.try_wait"):
        assert cand[n].count(op) == base[n].count(op), (n, op)
    assert 0 < cand[n].count("ld.global") < base[n].count("ld.global"), n  # (the combine's sink loads went with it)
    assert "barrier.cluster" in base[n] and "barrier.cluster" not in cand[n] and "mapa" not in cand[n], n


def test_ws_dh_direct_moves_only_the_halves_kernels_epilogue(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v67 (-DDSPARKCTL_WS_DH_DIRECT=0 rebuilds v66): an unsplit halves CTA's warpgroup 1 stores its
    bf16 rows from registers after a word transpose within each quad (butterfly shuffles), not
    through fp32 staging. Only the halves kernel moves; its MMAs are the same, and it keeps the
    staging for split calls. (Both with v75's split paths: -DDSPARKCTL_WS_DH_UNSPLIT=0.)"""
    base, cand = kernel_ptx["sm_90a_no_ws_dh_direct"], kernel_ptx["sm_90a_ws_dh_split_paths"]
    moved = {n for n in base if base[n] != cand[n]}
    assert moved == {"sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(moved)
    n = moved.pop()
    assert cand[n].count("wgmma.mma_async") == base[n].count("wgmma.mma_async")
    assert cand[n].count("shfl.sync.bfly") >= base[n].count("shfl.sync.bfly") + 64  # 16 pieces x 4 shuffles
    assert cand[n].count("st.global.v4") >= base[n].count("st.global.v4") + 16
    assert cand[n].count("st.shared.v2.f32") == base[n].count("st.shared.v2.f32")  # the staging stays


def _wgmma_m64n64_register_a(ptx: str) -> int:
    """m64n64k16 wgmma whose A operand is a register vector (after the 32 accumulators), not a
    shared-memory descriptor."""
    return len(re.findall(r"m64n64k16\.f32\.(?:f16\.f16|bf16\.bf16)\s*\{[^}]*\},\s*\{", ptx))


def test_ws_dh_ring3_moves_the_halves_kernels_q_and_its_ring(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v68 (-DDSPARKCTL_WS_DH_RING3=0 rebuilds v67): the halves kernel's warpgroup 0 reads Q into
    registers once (32 k-steps x 4 words) and runs S's 32 k-steps with A from registers, and Q's
    region becomes the third buffer of the tile ring: 4 more mbarriers, one Q-free hand-off (an
    arrive and a sync), warpgroup 1's copies of tile 2. The one-CTA WS kernels keep their code; only
    their shared-memory offsets move (the layout's third set of tile barriers), so every counted
    operation stays. (Against v75's build: v76's Q sharing needs the ring and moves Q's phase again.)"""
    base, cand = kernel_ptx["sm_90a_no_ws_dh_ring3"], kernel_ptx["sm_90a_no_ws_dh_qshare"]
    moved = {n for n in base if base[n] != cand[n]}
    one_cta = {"sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernelILi8E"}
    assert moved == one_cta | {"sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(moved)
    ops = ("wgmma.mma_async", "mbarrier.init", "bar.arrive", "bar.sync", "cp.async.bulk.shared", "ld.shared", "st.shared")
    for n in one_cta:
        for op in ops:
            assert cand[n].count(op) == base[n].count(op), (n, op)
        assert _wgmma_m64n64_register_a(cand[n]) == _wgmma_m64n64_register_a(base[n]), n
    n = "sparse_mla_decode_ws_kernel_dimsILi16E"
    assert cand[n].count("wgmma.mma_async") == base[n].count("wgmma.mma_async")  # same MMAs, S's A moved
    assert _wgmma_m64n64_register_a(cand[n]) == _wgmma_m64n64_register_a(base[n]) + 32
    assert cand[n].count("ld.shared.u32") == base[n].count("ld.shared.u32") + 128  # Q, once
    assert cand[n].count("mbarrier.init") == base[n].count("mbarrier.init") + 4
    assert cand[n].count("bar.arrive") == base[n].count("bar.arrive") + 1
    assert cand[n].count("bar.sync") == base[n].count("bar.sync") + 1
    # warpgroup 1's copies of tile 2, and since v71 of tile 1 (v71's own pin: its test below)
    assert cand[n].count("cp.async.bulk.shared") == base[n].count("cp.async.bulk.shared") + 2


def _first(ptx: str, op: str) -> int:
    """Where `op` first occurs in a kernel's PTX (its length if never: after everything)."""
    i = ptx.find(op)
    return len(ptx) if i < 0 else i


def test_ws_q_early_moves_q_loads_before_the_lengths_in_the_one_cta_ws_kernels(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v69's -DDSPARKCTL_WS_Q_EARLY (1 by default): the one-CTA WS kernels' Q loads (16-byte
    non-coherent loads) come right after griddepcontrol.wait, before the row lengths' 4-byte loads;
    with 0 (v68) they come after. The halves kernel keeps v68's order unless 2 asks for it too, and
    no kernel gains or loses a load, an MMA or a barrier: only the order moves. (2 keeps the halves
    kernel's unshared Q phase: its counts compare with v75's build, before v76 shared Q.)"""
    v68, v69, all2 = kernel_ptx["sm_90a_no_ws_q_early"], kernel_ptx["sm_90a"], kernel_ptx["sm_90a_ws_q_early2"]
    v75 = kernel_ptx["sm_90a_no_ws_dh_qshare"]
    one_cta = {"sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernelILi8E"}
    halves = "sparse_mla_decode_ws_kernel_dimsILi16E"
    assert {n for n in v68 if v68[n] != v69[n]} == one_cta
    assert {n for n in v69 if v69[n] != all2[n]} == {halves}
    for variant, early in ((v68, set()), (v69, one_cta), (all2, one_cta | {halves})):
        for n in one_cta | {halves}:
            ptx = variant[n]
            q, lengths = _first(ptx, "ld.global.nc.v4.u32"), _first(ptx, "ld.global.nc.s32")
            assert q < len(ptx) and lengths < len(ptx), n
            assert (q < lengths) == (n in early), (n, q, lengths)
            assert _first(ptx, "griddepcontrol.wait") < min(q, lengths), n
    for n in one_cta | {halves}:
        for op in ("ld.global.nc.v4.u32", "ld.global.nc.s32", "wgmma.mma_async", "bar.sync", "bar.arrive", "mbarrier.try_wait"):
            assert v68[n].count(op) == v69[n].count(op), (n, op)
            assert all2[n].count(op) == (v75 if n == halves else v69)[n].count(op), (n, op)


def test_finish_rows_loop_rolls_only_the_32_head_large_kernels_row_finish(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v70's -DDSPARKCTL_FINISH_ROWS_LOOP (1 by default; 0 rebuilds v69): the v30 transposed tiles'
    row finish (the 32-head LARGE kernels, both copy paths) runs its 4 rows as a rolled loop. Each of
    its two call sites then holds one row's lse store, sink load and log, not four: 4 lse stores a
    kernel instead of 16, and fewer PTX lines. No other kernel changes, and the MMAs and barriers stay."""
    v69, v70 = kernel_ptx["sm_90a_no_finish_rows_loop"], kernel_ptx["sm_90a"]
    large32 = {"sparse_mla_decode_kernelILi2ELi64ELi16E", "sparse_mla_decode_kernelILi2ELi64ELi8E"}
    assert {n for n in v69 if v69[n] != v70[n]} == large32
    for n in large32:
        assert v69[n].count("st.global.f32") == 16 and v70[n].count("st.global.f32") == 4, n
        assert v69[n].count("lg2.approx") == 4 * v70[n].count("lg2.approx") > 0, n
        assert v70[n].count("\n") < v69[n].count("\n") - 800, n
        for op in ("wgmma.mma_async", "bar.sync", "mma.sync"):
            assert v69[n].count(op) == v70[n].count(op), (n, op)


def test_ws_dh_copy1_moves_tile_1s_copies_to_warpgroup_1_in_the_halves_kernel_only(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v71's -DDSPARKCTL_WS_DH_COPY1 (1 by default; 0 rebuilds v70): the halves kernel's warpgroup 1
    issues tile 1's bulk copies from offsets the producer posts on an mbarrier, so that kernel gains
    one bulk-copy site (warpgroup 1's tile 1), one mbarrier wait (its offsets) and one L2 prefetch site
    (tile 1 is now prepared ahead of its copies); its MMAs and named barriers stay, and no other
    kernel changes."""
    v70, v71 = kernel_ptx["sm_90a_no_ws_dh_copy1"], kernel_ptx["sm_90a"]
    halves = "sparse_mla_decode_ws_kernel_dimsILi16E"
    assert {n for n in v70 if v70[n] != v71[n]} == {halves}
    a, b = v70[halves], v71[halves]
    assert b.count("cp.async.bulk.shared::cluster.global") == a.count("cp.async.bulk.shared::cluster.global") + 1
    assert b.count("mbarrier.try_wait") == a.count("mbarrier.try_wait") + 1
    assert b.count("cp.async.bulk.prefetch") == a.count("cp.async.bulk.prefetch") + 1
    for op in ("wgmma.mma_async", "bar.sync", "bar.arrive"):
        assert a.count(op) == b.count(op), op


def test_sink_early_loads_the_block_combines_sink_logit_once_and_ahead(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v72's -DDSPARKCTL_SINK_EARLY (1 by default; 0 rebuilds v71): the block-per-row combine
    kernels (> 4 splits) load their row's sink logit once, before the split weights' shuffles, where
    v71 loaded it twice after them (the output factor's load, then the lse's again behind the output
    store). Only those kernels change: the warp-row combines keep v71's two late loads."""
    v71, v72 = kernel_ptx["sm_90a_no_sink_early"], kernel_ptx["sm_90a"]
    sink = "ld.global.nc.f32"
    block = {n for n in v71 if n.startswith("sparse_mla_combine_kernel")}
    rows = {n for n in v71 if n.startswith("sparse_mla_combine_warp_kernel")}
    assert len(block) == 5 and len(rows) == 3
    assert {n for n in v71 if v71[n] != v72[n]} == block
    for n in block:
        a, b = v71[n], v72[n]
        assert a.count(sink) == 2 and b.count(sink) == 1, n
        assert b.index(sink) < b.index("shfl.sync.bfly") and a.index(sink) > a.rindex("shfl.sync.bfly"), n
    for n in rows:
        assert v72[n].count(sink) == 2 and v72[n].index(sink) > v72[n].rindex("shfl.sync.bfly"), n


def test_split_front_changes_only_the_kernels_that_cut_tile_ranges(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v73's -DDSPARKCTL_SPLIT_FRONT (1 by default; 0 rebuilds v72): a row whose main length is below
    its tile capacity gives an uneven split's larger shares to its first splits. The cut is made in
    every kernel that computes a split's tile range (each main kernel and the WS kernels), from the
    lengths it loads anyway; the combines, which only read the partials, are v72's. The default
    compares the main length with its capacity (topk rounded up to whole tiles, a multiply by the tile
    width), so each changed kernel gains compare-and-select work and loses none of its MMAs or barriers.
    (Since v75 the halves kernel runs unsplit only: one split, no cut to make, the same PTX both ways.)"""
    v72, v73 = kernel_ptx["sm_90a_no_split_front"], kernel_ptx["sm_90a"]
    halves = "sparse_mla_decode_ws_kernel_dimsILi16E"
    mains = {n for n in v72 if n.startswith("sparse_mla_decode") and n != halves}
    combines = {n for n in v72 if n.startswith("sparse_mla_combine")}
    assert len(mains) >= 10 and len(combines) == 8 and mains | combines | {halves} == set(v72)
    assert {n for n in v72 if v72[n] != v73[n]} == mains
    for n in mains:
        for op in ("mma", "bar.sync", "cp.async", "ld.global"):
            assert v73[n].count(op) == v72[n].count(op), (n, op)
        assert v73[n].count("setp.") > v72[n].count("setp."), n


def test_t_early_store_changes_only_the_transposed_32_head_kernels(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v74's -DDSPARKCTL_T_EARLY_STORE (1 by default; 0 rebuilds v73): the 32-head transposed-wgmma
    kernels (LARGE32 on sm_90a, both vector widths) issue the last tile's P.V as two commit groups
    and write the first group's rows after wgmma.wait_group 1, under the second. Every other kernel
    is v73's; those two keep their MMAs (same count: only the grouping moved) and gain the commit,
    the partial wait and the barriers of the two halves."""
    v73, v74 = kernel_ptx["sm_90a_no_t_early_store"], kernel_ptx["sm_90a"]
    moved = {n for n in v73 if v73[n] != v74[n]}
    assert moved == {"sparse_mla_decode_kernelILi2ELi64ELi8E", "sparse_mla_decode_kernelILi2ELi64ELi16E"}, sorted(moved)
    for n in moved:
        assert v74[n].count("wgmma.mma_async") == v73[n].count("wgmma.mma_async"), n
        assert v74[n].count("wgmma.commit_group") > v73[n].count("wgmma.commit_group"), n
        assert "wgmma.wait_group.sync.aligned 1;" in v74[n] and "wgmma.wait_group.sync.aligned 1;" not in v73[n], n
        assert v74[n].count("bar.sync") > v73[n].count("bar.sync"), n


def test_ws_dh_unsplit_compiles_out_only_the_halves_kernels_split_paths(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v75's -DDSPARKCTL_WS_DH_UNSPLIT (1 by default; 0 rebuilds v74): the plan launches the halves
    kernel unsplit only, so v75 folds its split count to 1 and drops what only split calls ran:
    warpgroup 1's fp32 staging (st.shared.v2.f32), the partial rows' stores, v45's cluster combine
    (cluster barriers, mapa) and the split index (%ctaid.y). Everything an unsplit call runs stays:
    the same MMAs, conversions, named barriers and mbarrier waits. No other kernel changes. (v75 is
    the build without v76's Q sharing, which needs the unsplit kernel.)"""
    v74, v75 = kernel_ptx["sm_90a_ws_dh_split_paths"], kernel_ptx["sm_90a_no_ws_dh_qshare"]
    halves = "sparse_mla_decode_ws_kernel_dimsILi16E"
    assert {n for n in v74 if v74[n] != v75[n]} == {halves}
    a, b = v74[halves], v75[halves]
    for op in ("wgmma.mma_async", "cvt.rn.f16x2.e4m3x2", "bar.sync", "bar.arrive", "mbarrier.try_wait"):
        assert a.count(op) == b.count(op) > 0, op
    for op in ("barrier.cluster", "mapa", "st.shared.v2.f32", "%ctaid.y"):
        assert op in a and op not in b, op
    assert 0 < b.count("st.global") < a.count("st.global")
    assert len(b.splitlines()) < len(a.splitlines())


def test_ws_dh_qshare_shares_q_across_the_halves_cluster(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """v76's -DDSPARKCTL_WS_DH_QSHARE (1 by default; 0 rebuilds v75): the halves kernel's two CTAs
    of a row block, launched as a 2-CTA cluster, each load half of Q's rows
    (8 of the 16 global 16-byte loads a thread) and send them, converted, to the peer by st.async
    (8 16-byte stores a thread and one 4-byte shift) counted on the peer's mbarrier, which warpgroup 0
    waits on with cluster-scope acquire; one cluster rendezvous after the barriers' init orders the
    peer's init before any st.async, and a CTA launched without the 2-CTA cluster traps instead of
    waiting forever. Only the halves kernel changes, and its MMAs stay."""
    base, cand = kernel_ptx["sm_90a_no_ws_dh_qshare"], kernel_ptx["sm_90a"]
    halves = "sparse_mla_decode_ws_kernel_dimsILi16E"
    assert {n for n in base if base[n] != cand[n]} == {halves}
    a, b = base[halves], cand[halves]
    assert a.count("wgmma.mma_async") == b.count("wgmma.mma_async") > 0
    assert "st.async" not in a and "barrier.cluster" not in a
    assert b.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32") == 8
    assert b.count("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 ") == 1
    assert b.count("mbarrier.try_wait.parity.acquire.cluster") == 1
    assert b.count("barrier.cluster.arrive") == 1 and b.count("barrier.cluster.wait") == 1
    assert b.index("mbarrier.init") < b.index("barrier.cluster.arrive") < b.index("st.async")
    assert b.count("ld.global.nc.v4") == a.count("ld.global.nc.v4") - 8
    assert "%cluster_nctarank" in b and "%cluster_nctarank" not in a  # a launch without the cluster traps


def test_tl_events_build_adds_points_to_the_ws_kernels_only(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """Session 40's -DDSPARKCTL_TL_EVENTS (a timeline build's option): the three WS kernels' lead
    threads store per-tile points into g_tl_ev; every other kernel is the timeline build's, and the
    WS kernels keep their MMAs and barriers (the points are clock reads and stores only)."""
    base, ev = kernel_ptx["sm_90a_tl"], kernel_ptx["sm_90a_tl_events"]
    moved = {n for n in base if base[n] != ev[n]}
    assert moved == {"sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernelILi8E",
                     "sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(moved)
    for n in moved:
        assert "g_tl_ev" in ev[n] and "g_tl_ev" not in base[n], n
        for op in ("wgmma.mma_async", "bar.sync", "bar.arrive", "mbarrier.try_wait", "cp.async.bulk.shared"):
            assert ev[n].count(op) == base[n].count(op), (n, op)
        assert ev[n].count("clock64") > base[n].count("clock64"), n


def test_tl_prologue_build_adds_prologue_points_to_the_ws_kernels_only(kernel_ptx: dict[str, dict[str, str]]) -> None:
    """Session 41's -DDSPARKCTL_TL_PROLOGUE (a tile-events build's option): ten more points of the WS
    prologue (Q's loads, conversion, fence and barrier, the register moves, the first copies), in
    the WS kernels only, with their MMAs and barriers unchanged."""
    ev, pro = kernel_ptx["sm_90a_tl_events"], kernel_ptx["sm_90a_tl_prologue"]
    moved = {n for n in ev if ev[n] != pro[n]}
    assert moved == {"sparse_mla_decode_ws_kernelILi16E", "sparse_mla_decode_ws_kernelILi8E",
                     "sparse_mla_decode_ws_kernel_dimsILi16E"}, sorted(moved)
    for n in moved:
        for op in ("wgmma.mma_async", "bar.sync", "bar.arrive", "mbarrier.try_wait", "cp.async.bulk.shared"):
            assert pro[n].count(op) == ev[n].count(op), (n, op)
        assert pro[n].count("clock64") > ev[n].count("clock64"), n


@pytest.mark.skipif(build.find_nvcc() is None, reason="nvcc not installed: cannot compile-check CUDA")
def test_tl_prologue_without_tile_events_is_refused(tmp_path: Path) -> None:
    """The prologue points live in the tile-events array: asked for alone, the build stops with a
    message naming what to add, instead of compiling a timeline build without them."""
    src = Path(__file__).resolve().parents[1] / "kernels" / "sparse_mla_decode.cu"
    res = subprocess.run([str(build.find_nvcc()), "-E", "-std=c++17", "-arch=sm_90a", "-DDSPARKCTL_TIMELINE",
                          "-DDSPARKCTL_TL_PROLOGUE", str(src), "-o", str(tmp_path / "pro.ii")],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode != 0
    assert "DSPARKCTL_TL_PROLOGUE is a tile-events build's option" in res.stdout + res.stderr
