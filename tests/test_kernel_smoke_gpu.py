"""GPU tests of the kernel-level smoke checks (run on the H200 by the lead).

Pinned: the bundled kernel passes every planned call of DeepSeek-V4-Flash (tp 1, 2, 4) eager
and under CUDA-graph capture + replay; capture failures and kernels that freeze at capture are
reported as such; a kernel that is right at T = 1 but applies the first row's valid lengths to
every row of a multi-row call is caught by the verify-path check and by both ``--long`` checks;
the tiny-model long run takes under two minutes.
"""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from broken_kernel import FirstRowLengthKernel  # noqa: E402

from dsparkctl import flashinfer_dispatch  # noqa: E402
from dsparkctl import kernel_smoke as ks  # noqa: E402
from dsparkctl import tiny_model as tm  # noqa: E402
from dsparkctl.findings import Severity  # noqa: E402
from dsparkctl.model_config import load_model_config  # noqa: E402
from dsparkctl.plan import ServingConfig, make_plan  # noqa: E402

pytestmark = pytest.mark.gpu

SGLANG = "0.5.23"
FLASHINFER = "0.7.2.post1"  # serves native head counts: 64 / 32 / 16 at tp 1 / 2 / 4


def _plan(tp: int):
    support = flashinfer_dispatch.known_support(FLASHINFER)
    return make_plan(load_model_config(None), ServingConfig(tp=tp, sglang_version=SGLANG),
                     support)


@pytest.fixture(scope="module")
def bundled() -> ks.KernelUnderTest:
    return ks.bundled_kernel()


@pytest.fixture(scope="module")
def broken(bundled) -> ks.KernelUnderTest:
    gamma = _plan(1).gamma
    return ks.KernelUnderTest("broken", FirstRowLengthKernel(bundled.fn, gamma + 1))


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_bundled_kernel_passes_the_dsv4_flash_plan(bundled, tp):
    """tp 1 runs what `dsparkctl smoke --long --kernel bundled` runs, long checks included."""
    plan = _plan(tp)
    long = tp == 1
    t0 = time.perf_counter()
    findings, data = ks.run_kernel_checks(plan, kernel=bundled, long=long)
    took = time.perf_counter() - t0
    errors = [(f.id, f.detail) for f in findings if f.severity is Severity.ERROR]
    assert not errors, errors
    rows = data["rows"]
    bad = [r for r in rows if r["status"] != "ok"]
    assert not bad, bad
    heads = {r["heads"] for r in rows if r["phase"] == "verify"}
    assert heads == {64 // tp}
    # every captured size <= 64 of every call was run, graph-captured and timed
    for call in plan.calls:
        want = {n for n in call.num_tokens if n <= 64}
        got = {r["num_tokens"] for r in rows if r["phase"] == call.phase
               and r["extra"] == call.extra_topk and r["heads"] == call.num_heads}
        assert want <= got
    assert all(r["time_us"] and r["time_us"] > 0 for r in rows)
    assert {c["status"] for c in data["consistency"]} == {"ok"}
    print(f"tp {tp}: {len(rows)} calls, {len(data['consistency'])} consistency checks, "
          f"{took:.1f} s; max err/tol {max(float(r['max_err_over_tol']) for r in rows):.3f}")
    if long:
        (sim,) = data["long"]
        assert sim["ok"] and sim["length_range"] == [1, 128]
        assert sim["extra_length_range"] == [1, 512]
        (tiny,) = data["tiny_model"]
        assert tiny["ok"], tiny
        assert tiny["seconds"] < 120, f"tiny-model long run took {tiny['seconds']} s"
        spec = next(m for m in tiny["modes"] if m["mode"] == "spec")
        assert spec["tokens"] == 1000 and spec["mean_accept_length"] > 3
        print(f"long: simulation {sim['steps']} steps in {sim['seconds']} s (max err/tol "
              f"{sim['max_ratio']}); tiny model {tiny['seconds']} s, bound "
              f"{tiny['bound']['bound']:.4g}, accept {spec['mean_accept_length']:.2f}")


def test_graph_replay_uses_the_new_inputs(bundled):
    call = ks.CallShape("verify", 64, 128, 512, 64)
    case = ks.make_call_case(call, 36, seed=0, device="cuda", pad_style="mixed")
    replay = ks.make_call_case(call, 36, seed=1, device="cuda", pad_style="mixed").kwargs
    res = ks.check_call(bundled.fn, ks.reference_kernel, case.kwargs, graph=True,
                        replay_inputs=replay, padding_rows=case.padding_rows)
    assert res.status == "ok", res.to_json()
    assert res.graph is not None and res.graph.ok
    assert res.graph_new_inputs is not None and res.graph_new_inputs.ok
    assert res.graph_bitwise_eager is not None


def test_a_host_sync_during_capture_is_capture_failed(bundled):
    def syncs(q, kv_cache, indices, *, topk_length, **kw):
        int(topk_length.max())  # a host read: illegal while a graph is being captured
        return bundled.fn(q, kv_cache, indices, topk_length=topk_length, **kw)

    kw = ks.make_call_inputs(ks.CallShape("verify", 64, 128, 512, 64), 12, device="cuda")
    res = ks.check_call(syncs, ks.reference_kernel, kw, graph=True)
    assert res.status == "capture-failed" and res.error
    assert res.eager is not None and res.eager.ok  # eager was fine


def test_a_kernel_that_does_no_work_in_the_graph_fails_replay(bundled):
    memo = {}

    def frozen(q, kv_cache, indices, **kw):
        if "r" not in memo:
            memo["r"] = bundled.fn(q, kv_cache, indices, **kw)
        return memo["r"]

    kw = ks.make_call_inputs(ks.CallShape("decode", 64, 128, 0, 0), 8, device="cuda")
    res = ks.check_call(frozen, ks.reference_kernel, kw, graph=True)
    assert res.status == "mismatch"


def test_first_row_length_bug_is_caught_by_verify_consistency_not_by_t1(bundled, broken):
    for seed in range(3):
        kw = ks.make_call_inputs(ks.CallShape("decode", 64, 128, 512, 64), 1, seed=seed,
                                 device="cuda")
        assert ks.check_call(broken.fn, ks.reference_kernel, kw, graph=True).status == "ok"
    gamma = _plan(1).gamma
    good = ks.check_verify_consistency(bundled.fn, 10, gamma, heads=64, device="cuda",
                                       ref_fn=ks.reference_kernel)
    assert good.ok, good.to_json()
    res = ks.check_verify_consistency(broken.fn, 10, gamma, heads=64, device="cuda",
                                      ref_fn=ks.reference_kernel)
    assert res.status == "inconsistent" and res.t1_vs_ref_ok and not res.batched_vs_ref_ok


def test_long_simulation_catches_the_broken_kernel(broken):
    gamma = _plan(1).gamma
    bad = ks.simulate_long_generation(broken.fn, ks.reference_kernel, gamma=gamma, heads=64,
                                      device="cuda", max_context=1024)
    assert not bad.ok and bad.failures[0].ratio > 1


def test_tiny_model_catches_the_broken_kernel(broken):
    cfg = tm.TinyConfig(heads=64, index_topk=512)
    rep = tm.run_long_model_check(broken.fn, ks.reference_kernel, n_tokens=300, gamma=5,
                                  config=cfg, device="cuda")
    modes = {m.mode: m for m in rep.modes}
    assert modes["plain"].divergence is None
    assert modes["spec"].divergence is not None and modes["spec"].divergence.real


def test_run_kernel_checks_long_reports_the_broken_kernel(broken):
    findings, data = ks.run_kernel_checks(_plan(1), kernel=broken, long=True, tiny_tokens=300,
                                          max_context=1024)
    ids = {f.id for f in findings}
    assert {"smoke-verify-inconsistent", "smoke-long-divergence"} <= ids
    assert data["long"] and not data["long"][0]["ok"]


def test_flashinfer_adapter_on_sm120():
    try:
        fi = ks.flashinfer_kernel()
    except RuntimeError as e:
        pytest.skip(str(e))
    kw = ks.make_call_inputs(ks.CallShape("verify", 64, 128, 512, 64), 12, device="cuda")
    res = ks.check_call(fi.fn, ks.reference_kernel, kw, graph=True, tolerance=fi.tolerance)
    assert res.status in ("ok", "mismatch", "pad-mismatch", "capture-failed", "error")
    print("flashinfer verify T=12:", res.to_json())
