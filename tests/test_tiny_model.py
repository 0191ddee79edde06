"""CPU tests of the tiny deterministic model used by ``smoke --long``.

The reference kernel (bf16 output, like a real kernel) is the kernel under test here; the
yardstick is the fp32 reference. With it, greedy decoding with and without speculative verify
must agree with the reference; with a kernel that applies the first row's valid lengths to every
row of a multi-row call, the non-speculative run (T = 1 calls only) stays clean and the
speculative run leaves the reference, which the report pins down with context.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from broken_kernel import FirstRowLengthKernel, ScaledOutputKernel  # noqa: E402

from dsparkctl import tiny_model as tm  # noqa: E402
from dsparkctl.kernel_smoke import (  # noqa: E402
    FLASHMLA_TOLERANCE,
    FP8_TOLERANCE,
    reference_as_kernel,
    reference_kernel,
)

GAMMA = 5
N_TOKENS = 200
CFG = tm.TinyConfig()


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def healthy() -> tm.TinyModelReport:
    return tm.run_long_model_check(reference_as_kernel, reference_kernel, n_tokens=N_TOKENS,
                                   gamma=GAMMA, config=CFG)


@pytest.fixture(scope="module")
def broken() -> tm.TinyModelReport:
    kernel = FirstRowLengthKernel(reference_as_kernel, GAMMA + 1)
    return tm.run_long_model_check(kernel, reference_kernel, n_tokens=N_TOKENS, gamma=GAMMA,
                                   config=CFG)


def test_healthy_kernel_matches_the_reference_with_and_without_speculation(healthy):
    assert healthy.ok, healthy.to_json()
    modes = {m.mode: m for m in healthy.modes}
    assert set(modes) == {"plain", "spec"}
    for m in modes.values():
        assert m.tokens == N_TOKENS and m.divergence is None
    # the verify rows past the first were really used: most drafts were accepted
    spec = modes["spec"]
    assert spec.mean_accept_length is not None and spec.mean_accept_length > 3
    assert spec.verify_steps < N_TOKENS / 3
    # the generation runs well past the 128-token window
    assert CFG.prompt_len + N_TOKENS > CFG.window + 64
    assert healthy.bound.bound > 0 and healthy.reference_tokens == N_TOKENS
    assert tm.findings_for("reference", healthy) == []


def test_first_row_length_bug_diverges_only_with_speculation(broken):
    assert not broken.ok
    modes = {m.mode: m for m in broken.modes}
    assert modes["plain"].divergence is None  # T = 1 calls only: the bug cannot show
    div = modes["spec"].divergence
    assert div is not None and div.real
    assert div.got != div.expected and div.margin > div.bound
    assert div.position == CFG.prompt_len + div.index
    assert len(div.context) == min(16, div.position)
    # the token came out of a verify row after the first: the rows the bug corrupts
    assert div.verify_step is not None and div.verify_row is not None and div.verify_row >= 1
    assert f"verify step {div.verify_step} row {div.verify_row}" in div.describe()
    # the first difference from the reference run is reported too
    first = modes["spec"].first_difference
    assert first is not None and first.index <= div.index
    (finding,) = tm.findings_for("broken", broken)
    assert finding.id == "smoke-long-divergence" and finding.severity.value == "error"
    assert f"generated token {div.index}" in finding.detail
    assert str(div.got) in finding.detail and str(div.expected) in finding.detail


def test_a_kernel_wrong_everywhere_diverges_without_speculation_too():
    bad = ScaledOutputKernel(reference_as_kernel, rel=0.3)
    rep = tm.run_long_model_check(bad, reference_kernel, n_tokens=60, gamma=0, config=CFG)
    assert [m.mode for m in rep.modes] == ["plain"]
    assert rep.modes[0].divergence is not None


def test_generation_is_deterministic():
    model = tm.TinyModel(CFG)
    a = tm.generate(model, reference_kernel, 40)
    b = tm.generate(tm.TinyModel(CFG), reference_kernel, 40)
    assert a.tokens == b.tokens and len(a.tokens) == 40
    assert len(set(a.tokens)) > 5  # not a single repeated token


def test_self_drafting_speculation_matches_without_an_oracle():
    model = tm.TinyModel(CFG)
    plain = tm.generate(model, reference_kernel, 40)
    spec = tm.generate(model, reference_kernel, 40, gamma=3)
    assert spec.tokens == plain.tokens
    assert spec.verify_steps > 0 and max(spec.emitted_per_step) == 4


def test_judge_tokens_separates_near_ties_from_real_divergences():
    vocab = 8
    prompt = [1, 2]
    gen = [3, 4, 5]
    logits = torch.zeros(len(prompt) + len(gen) - 1, vocab)
    logits[1, 3] = 5.0  # predicts gen[0] = 3: agrees
    logits[2, 6] = 0.01  # reference prefers 6 over gen[1] = 4 by 0.01: a near-tie
    logits[3, 7] = 2.0  # reference prefers 7 over gen[2] = 5 by 2.0: real
    div, near = tm.judge_tokens(prompt, gen, logits, bound=0.1)
    assert near == 1
    assert div is not None and div.index == 2 and div.expected == 7 and div.got == 5
    assert div.margin == pytest.approx(2.0) and div.context == (1, 2, 3, 4)
    div, near = tm.judge_tokens(prompt, gen, logits, bound=3.0)
    assert div is None and near == 2


def test_error_bound_grows_with_the_tolerance():
    model = tm.TinyModel(CFG)
    seq = model.prompt_tokens + tm.generate(model, reference_kernel, 24).tokens
    tight = tm.estimate_error_bound(model, reference_kernel, seq, FLASHMLA_TOLERANCE)
    loose = tm.estimate_error_bound(model, reference_kernel, seq, FP8_TOLERANCE)
    assert 0 < tight.bound < loose.bound
    assert tight.bound == pytest.approx(tight.factor * tight.max_logit_change)


def test_indexer_is_exact_and_causal():
    model = tm.TinyModel(CFG)
    state = model.new_state(64)
    seen = {}

    def spy(q, kv_cache, indices, **kw):
        seen.update(kw)
        return reference_kernel(q, kv_cache, indices, **kw)

    tokens = list(range(40))
    model.forward(state, tokens, 0, spy)
    elen = seen["extra_topk_length"].tolist()
    assert elen == [min(max((p + 1) // 4, 1), CFG.index_topk) for p in range(40)]
    eidx = seen["extra_indices"]
    for p in range(40):
        count = (p + 1) // 4
        assert int((eidx[p] >= 0).sum()) == min(count, CFG.index_topk)
    # compressed keys are the sums of their tokens' integer keys
    for e in range(10):
        want = model.index_k[torch.tensor(tokens[4 * e : 4 * e + 4])].sum(0)
        assert torch.equal(state.ikeys[e], want)
