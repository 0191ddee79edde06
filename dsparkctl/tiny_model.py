"""A tiny deterministic DeepSeek-V4-style model, to decode long greedy generations through a
sparse-MLA kernel under test.

Why: the field corruption (seed 000) shows only after ~100+ greedy tokens with speculative
decoding on, while spec-off is clean; single kernel calls can each look fine. A model makes the
errors compound the way a server does, and greedy speculative decoding is lossless, so with a
correct kernel spec-on and spec-off must produce the reference's tokens wherever the reference
is not at a near-tie. The weights are random (fixed seed): no checkpoint, no download.

Architecture, kept to what the kernel sees in DeepSeek-V4-Flash: per layer, q projected to
``[H, 512]`` and one shared latent KV row per token (K = V, the last 64 dims rotary), stored
quantized in the MODEL1 paged FP8 layout in 256-token pages; attention over a 128-token sliding
window (newest first) plus a sparse top-k of compressed entries (mean of 4 tokens' latents, page
size 64) chosen by an integer dot-product indexer over token ids, with a per-head sink. The
indexer is integer-valued so that a kernel's rounding can never change which entries are
picked: numeric differences reach the logits only through attention.

Prefill is token by token (T = 1 calls), so the non-speculative run uses only decode-shaped
calls and the speculative run adds exactly the verify-shaped ones: a difference between them
points at the verify path.

torch is imported inside functions.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsparkctl.findings import Finding, Severity
from dsparkctl.kernel import layout
from dsparkctl.kernel_smoke import (
    DSV4_SM_SCALE,
    FLASHMLA_TOLERANCE,
    SEED_000,
    KernelFn,
    Tolerance,
    write_kv,
)

if TYPE_CHECKING:
    import torch

ROPE_START = layout.NOPE_DIM  # rotary dims 448..511, as in DeepSeek-V4
_SCORE_SHIFT = 1 << 20  # integer index score * 2^20 + entry id: ties broken by recency, exactly


@dataclass(frozen=True)
class TinyConfig:
    vocab: int = 256
    d_model: int = 64
    layers: int = 2
    heads: int = 8
    window: int = 128
    index_topk: int = 64  # extra (compressed) candidates per row; a multiple of 64 like SGLang
    compress_ratio: int = 4
    index_dim: int = 16
    page_size: int = 256
    extra_page_size: int = 64
    prompt_len: int = 16
    q_gain: float = 2.0
    logit_gain: float = 4.0
    seed: int = 0


class TinyModel:
    """Weights and the forward pass; decoding state lives in ``DecodeState``."""

    def __init__(self, config: TinyConfig = TinyConfig(), device: Any = None) -> None:
        import torch

        c = config
        self.config = c
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        gen = torch.Generator().manual_seed(1_000_003 * c.seed + 17)
        d, hd, h = c.d_model, layout.HEAD_DIM, c.heads

        def rnd(*shape: int, std: float) -> torch.Tensor:
            return (torch.randn(shape, generator=gen) * std).to(self.device)

        self.embed = rnd(c.vocab, d, std=1.0)
        self.wq = [rnd(d, h * hd, std=c.q_gain / math.sqrt(d)) for _ in range(c.layers)]
        self.wkv = [rnd(d, hd, std=1.0 / math.sqrt(d)) for _ in range(c.layers)]
        self.wo = [rnd(h * hd, d, std=1.0 / math.sqrt(h * hd)) for _ in range(c.layers)]
        self.w1 = [rnd(d, 4 * d, std=1.0 / math.sqrt(d)) for _ in range(c.layers)]
        self.w2 = [rnd(4 * d, d, std=1.0 / math.sqrt(4 * d)) for _ in range(c.layers)]
        self.sink = [(torch.rand((h,), generator=gen) * 3.0 + 1.0).to(self.device)
                     for _ in range(c.layers)]
        self.wout = rnd(d, c.vocab, std=c.logit_gain / math.sqrt(d))
        # Small integers held in float64: every score is exact on any device (CUDA has no
        # integer matmul).
        self.index_q = torch.randint(-2, 3, (c.vocab, c.index_dim), generator=gen).to(
            device=self.device, dtype=torch.float64)
        self.index_k = torch.randint(-2, 3, (c.vocab, c.index_dim), generator=gen).to(
            device=self.device, dtype=torch.float64)
        half = layout.ROPE_DIM // 2
        self.inv_freq = (10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)).to(
            self.device)
        self.prompt_tokens = torch.randint(0, c.vocab, (c.prompt_len,), generator=gen).tolist()

    # -- pieces ---------------------------------------------------------------------------

    def _rope(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        import torch

        half = layout.ROPE_DIM // 2
        ang = pos.to(torch.float32).unsqueeze(-1) * self.inv_freq  # [n, half]
        while ang.dim() < x.dim():
            ang = ang.unsqueeze(-2)
        cos, sin = torch.cos(ang), torch.sin(ang)
        a = x[..., ROPE_START : ROPE_START + half]
        b = x[..., ROPE_START + half :]
        return torch.cat([x[..., :ROPE_START], a * cos - b * sin, a * sin + b * cos], dim=-1)

    @staticmethod
    def _norm(x: torch.Tensor) -> torch.Tensor:
        return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt()

    def new_state(self, capacity: int) -> DecodeState:
        return DecodeState(self, capacity)

    def forward(
        self,
        state: DecodeState,
        tokens: Sequence[int],
        start: int,
        kernel_fn: KernelFn,
        perturb: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Logits ``[n, vocab]`` for ``tokens`` at positions ``start..start+n-1`` (causal).

        Writes their KV (and any compressed entry they complete) first, as SGLang does, so
        rows see each other causally. Positions >= ``start`` left from an earlier call
        (rejected drafts) are simply overwritten.
        """
        import torch

        c = self.config
        dev = self.device
        n = len(tokens)
        if start + n > state.capacity:
            raise ValueError(f"decode state holds {state.capacity} positions; need {start + n}")
        tok = torch.as_tensor(list(tokens), dtype=torch.long, device=dev)
        pos = start + torch.arange(n, device=dev)
        state.tokens[pos] = tok

        # Compressed entries completed by these rows, and their integer index keys.
        done = pos[(pos + 1) % c.compress_ratio == 0]
        ents = (done + 1) // c.compress_ratio - 1
        members = ents.unsqueeze(-1) * c.compress_ratio + torch.arange(c.compress_ratio,
                                                                       device=dev)
        if ents.numel():
            state.ikeys[ents] = self.index_k[state.tokens[members]].sum(dim=1)

        # Window indices, newest first; valid length min(p + 1, window).
        k = torch.arange(c.window, device=dev).view(1, -1)
        p_k = pos.view(-1, 1) - k
        idx = torch.where(p_k >= 0, state.main_slot[p_k.clamp(min=0)], -1).to(torch.int32)
        lens = torch.clamp(pos + 1, max=c.window).to(torch.int32)

        # Indexer: top-k compressed entries by an exact integer score.
        count = (pos + 1) // c.compress_ratio
        width = max(1, int(count.max()))
        score = self.index_q[tok] @ state.ikeys[:width].T  # [n, width], exact integers
        ent = torch.arange(width, device=dev).view(1, -1)
        key = score * _SCORE_SHIFT + ent
        key = key.masked_fill(ent >= count.view(-1, 1), -math.inf)
        nsel = min(c.index_topk, width)
        vals, picks = torch.topk(key, nsel, dim=1)
        eidx = torch.where(torch.isfinite(vals), state.extra_slot[picks], -1)
        if nsel < c.index_topk:
            eidx = torch.cat([eidx, torch.full((n, c.index_topk - nsel), -1, device=dev,
                                               dtype=eidx.dtype)], dim=1)
        eidx = eidx.to(torch.int32).contiguous()
        elens = torch.clamp(count, min=1, max=c.index_topk).to(torch.int32)

        h = self.embed[tok]
        for layer in range(c.layers):
            x = self._norm(h)
            q = self._rope((x @ self.wq[layer]).view(n, c.heads, layout.HEAD_DIM), pos)
            kv = self._rope(self._norm(x @ self.wkv[layer]), pos)
            state.latents[layer][pos] = kv
            write_kv(state.main[layer], state.main_slot[pos], kv)
            if ents.numel():
                comp = state.latents[layer][members].mean(dim=1)
                write_kv(state.extra[layer], state.extra_slot[ents], comp)
            out, _ = kernel_fn(
                q=q.to(torch.bfloat16),
                kv_cache=state.main[layer],
                indices=idx,
                topk_length=lens,
                attn_sink=self.sink[layer],
                extra_kv_cache=state.extra[layer],
                extra_indices=eidx,
                extra_topk_length=elens,
                sm_scale=DSV4_SM_SCALE,
            )
            o = out.to(torch.float32)
            if perturb is not None:
                o = perturb(o)
            h = h + o.reshape(n, c.heads * layout.HEAD_DIM) @ self.wo[layer]
            h = h + torch.nn.functional.gelu(self._norm(h) @ self.w1[layer]) @ self.w2[layer]
        state.forwards += 1
        return self._norm(h) @ self.wout


class DecodeState:
    """KV caches (MODEL1 pages, shuffled page order) and per-position history of one sequence."""

    def __init__(self, model: TinyModel, capacity: int) -> None:
        import torch

        c = model.config
        dev = model.device
        gen = torch.Generator().manual_seed(c.seed * 31 + 7)
        self.capacity = capacity
        self.forwards = 0
        pages = -(-capacity // c.page_size) + 1
        perm = torch.randperm(pages, generator=gen).to(dev)
        p = torch.arange(capacity, device=dev)
        self.main_slot = perm[p // c.page_size] * c.page_size + p % c.page_size
        cap_e = capacity // c.compress_ratio + 1
        epages = -(-cap_e // c.extra_page_size) + 1
        eperm = torch.randperm(epages, generator=gen).to(dev)
        e = torch.arange(cap_e, device=dev)
        self.extra_slot = eperm[e // c.extra_page_size] * c.extra_page_size + e % c.extra_page_size
        zeros = torch.zeros((pages * c.page_size, layout.HEAD_DIM), device=dev)
        ezeros = torch.zeros((epages * c.extra_page_size, layout.HEAD_DIM), device=dev)
        self.main = [layout.quantize_kv(zeros, c.page_size) for _ in range(c.layers)]
        self.extra = [layout.quantize_kv(ezeros, c.extra_page_size) for _ in range(c.layers)]
        self.latents = [torch.zeros((capacity, layout.HEAD_DIM), device=dev)
                        for _ in range(c.layers)]
        self.tokens = torch.zeros(capacity, dtype=torch.long, device=dev)
        self.ikeys = torch.zeros((cap_e, c.index_dim), dtype=torch.float64, device=dev)


# --------------------------------------------------------------------------------------------
# Greedy decoding, with and without speculative verify
# --------------------------------------------------------------------------------------------


@dataclass
class Generation:
    tokens: list[int]
    margins: list[float]  # top-1 minus top-2 logit of the distribution each token came from
    mode: str
    verify_steps: int = 0
    emitted_per_step: list[int] = field(default_factory=list)
    forwards: int = 0
    seconds: float = 0.0
    logits: list[torch.Tensor] = field(default_factory=list, repr=False)  # row i -> token i

    @property
    def mean_accept_length(self) -> float | None:
        e = self.emitted_per_step
        return sum(e) / len(e) if e else None


def _top2(logits: torch.Tensor) -> tuple[int, float]:
    import torch

    v, i = torch.topk(logits.to(torch.float64), 2)
    return int(i[0]), float(v[0] - v[1])


def generate(
    model: TinyModel,
    kernel_fn: KernelFn,
    n_new: int,
    *,
    gamma: int = 0,
    prompt: Sequence[int] | None = None,
    mutate_drafts: bool = True,
    oracle: Sequence[int] | None = None,
) -> Generation:
    """Greedy decoding of ``n_new`` tokens; ``gamma > 0`` uses speculative verify.

    Speculative mode: the target verifies ``gamma + 1`` rows (last token + ``gamma`` drafts) in
    one kernel call and accepts greedily (a draft is kept iff it equals the target's argmax),
    which is lossless. The drafter must be good, or rows past the first are never used: it
    proposes the next tokens of ``oracle`` (e.g. the non-speculative run of the same kernel,
    free) while the output agrees with it, and otherwise decodes ``gamma`` tokens itself, one
    at a time through the same kernel. On a fixed schedule one draft token is replaced, so
    partial acceptance and rejection run too.
    """
    import torch

    prompt = list(prompt if prompt is not None else model.prompt_tokens)
    cap = len(prompt) + n_new + gamma + 2
    state = model.new_state(cap)
    t0 = time.perf_counter()
    logits = None
    for i, t in enumerate(prompt):  # token-by-token prefill: T = 1 calls only
        logits = model.forward(state, [t], i, kernel_fn)
    assert logits is not None
    tok, margin = _top2(logits[-1])
    gen = Generation([tok], [margin], "spec" if gamma else "plain", logits=[logits[-1]])
    length = len(prompt)
    step = 0
    oracle = list(oracle) if oracle is not None else None
    while len(gen.tokens) < n_new:
        if gamma <= 0:
            logits = model.forward(state, [tok], length, kernel_fn)
            length += 1
            tok, margin = _top2(logits[0])
            gen.tokens.append(tok)
            gen.margins.append(margin)
            gen.logits.append(logits[0])
            continue
        done = len(gen.tokens)
        if (oracle is not None and oracle[:done] == gen.tokens
                and len(oracle) >= done + gamma):
            drafts = oracle[done : done + gamma]
        else:
            drafts = []
            t = tok
            for i in range(gamma):
                lg = model.forward(state, [t], length + i, kernel_fn)
                t = int(torch.argmax(lg[0]))
                drafts.append(t)
        if mutate_drafts and step % 3 == 2:
            m = (step // 3) % gamma
            drafts[m] = (drafts[m] + 1 + step) % model.config.vocab
        lg = model.forward(state, [tok, *drafts], length, kernel_fn)
        k = 0
        while k < gamma and drafts[k] == int(torch.argmax(lg[k])):
            k += 1
        for j in range(k + 1):
            tj, mj = _top2(lg[j])
            gen.tokens.append(tj)
            gen.margins.append(mj)
            gen.logits.append(lg[j])
        tok = gen.tokens[-1]
        length += k + 1
        gen.emitted_per_step.append(k + 1)
        step += 1
    gen.verify_steps = step
    del gen.tokens[n_new:]
    del gen.margins[n_new:]
    del gen.logits[n_new:]
    gen.forwards = state.forwards
    gen.seconds = time.perf_counter() - t0
    return gen


def score_sequence(
    model: TinyModel,
    kernel_fn: KernelFn,
    tokens: Sequence[int],
    *,
    chunk: int = 256,
    perturb: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Teacher-forced logits ``[len(tokens) - 1, vocab]``: row i predicts ``tokens[i + 1]``."""
    import torch

    n = len(tokens) - 1
    state = model.new_state(len(tokens) + 1)
    out = []
    for s in range(0, n, chunk):
        out.append(model.forward(state, list(tokens[s : min(n, s + chunk)]), s, kernel_fn,
                                 perturb))
    return torch.cat(out) if out else torch.zeros((0, model.config.vocab), device=model.device)


class TolerancePerturbation:
    """Adds an error of the tolerance's size to every attention output element:
    ``u * (atol + rtol * |o|)``, ``u`` uniform in [-1, 1] from a fixed seed."""

    def __init__(self, tolerance: Tolerance, seed: int, device: Any) -> None:
        import torch

        self.tol = tolerance
        self.gen = torch.Generator(device=device).manual_seed(seed)

    def __call__(self, o: torch.Tensor) -> torch.Tensor:
        import torch

        u = torch.rand(o.shape, generator=self.gen, device=o.device) * 2.0 - 1.0
        return o + u * (self.tol.out_atol + self.tol.out_rtol * o.abs())


@dataclass(frozen=True)
class ErrorBound:
    bound: float  # a gap between two reference logits larger than this cannot flip honestly
    max_logit_change: float  # measured under a tolerance-sized perturbation
    factor: float

    def to_json(self) -> dict[str, float]:
        return {"bound": self.bound, "max_logit_change": self.max_logit_change,
                "factor": self.factor}


def estimate_error_bound(
    model: TinyModel,
    ref_fn: KernelFn,
    tokens: Sequence[int],
    tolerance: Tolerance,
    *,
    factor: float = 4.0,
    seed: int = 1,
    first_row: int = 0,
    exact: torch.Tensor | None = None,
) -> ErrorBound:
    """How far the logits can move when every attention output is off by the tolerance.

    Teacher-forced reference logits are recomputed with tolerance-sized random errors in every
    attention output (all layers, so the errors compound as they would); the largest change of
    any logit is ``d``. A kernel within tolerance moves each logit by about ``d``, so it can
    only swap two tokens whose reference gap is below ``2d``; ``factor`` (default 4 = 2 x 2)
    adds a 2x margin for error patterns less benign than random ones.
    """
    if exact is None:
        exact = score_sequence(model, ref_fn, tokens)
    pert = score_sequence(model, ref_fn, tokens,
                          perturb=TolerancePerturbation(tolerance, seed, model.device))
    d = float((pert[first_row:] - exact[first_row:]).abs().max()) if exact.shape[0] else 0.0
    d = max(d, 1e-6)
    return ErrorBound(factor * d, d, factor)


# --------------------------------------------------------------------------------------------
# Judging a generation against the reference
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    index: int  # generated-token index (0 = first generated token)
    position: int  # absolute position in the sequence
    context: tuple[int, ...]  # up to 16 tokens before it
    got: int
    expected: int  # the reference's argmax on the same prefix
    margin: float  # reference logit gap between expected and got
    bound: float
    verify_step: int | None = None  # speculative mode: which verify call produced the token
    verify_row: int | None = None  # ... and which of its gamma + 1 rows

    @property
    def real(self) -> bool:
        return self.margin > self.bound

    def describe(self) -> str:
        where = ""
        if self.verify_step is not None:
            where = f", verify step {self.verify_step} row {self.verify_row}"
        return (f"generated token {self.index} (position {self.position}{where}): after "
                f"{list(self.context)} the kernel chose {self.got}, the reference {self.expected}"
                f" (reference margin {self.margin:.4g} {'>' if self.real else '<='} bound "
                f"{self.bound:.4g})")

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "position": self.position, "context": list(self.context),
                "got": self.got, "expected": self.expected, "margin": self.margin,
                "bound": self.bound, "real": self.real, "verify_step": self.verify_step,
                "verify_row": self.verify_row}


def _locate(div: Divergence | None, run: Generation) -> Divergence | None:
    """Attach the verify step / row that produced a token of a speculative run."""
    if div is None or not run.emitted_per_step:
        return div
    start = 1  # token 0 comes from the prefill logits
    for step, emitted in enumerate(run.emitted_per_step):
        if div.index < start + emitted:
            return dataclasses.replace(div, verify_step=step, verify_row=div.index - start)
        start += emitted
    return div


def judge_tokens(
    prompt: Sequence[int], generated: Sequence[int], ref_logits: torch.Tensor, bound: float
) -> tuple[Divergence | None, int]:
    """(first real divergence, number of honest near-tie deviations) of ``generated`` against
    the reference's teacher-forced logits on the same sequence (``score_sequence`` of
    prompt + generated)."""
    import torch

    seq = list(prompt) + list(generated)
    base = len(prompt) - 1
    rows = ref_logits[base : base + len(generated)].to(torch.float64)
    if rows.shape[0] == 0:
        return None, 0
    got = torch.as_tensor(list(generated), device=rows.device)
    best = rows.argmax(dim=1)
    gap = rows.gather(1, best.view(-1, 1)).squeeze(1) - rows.gather(1, got.view(-1, 1)).squeeze(1)
    off = (best != got).nonzero().flatten().tolist()
    near = 0
    for i in off:
        m = float(gap[i])
        if m > bound:
            pos = len(prompt) + i
            return Divergence(i, pos, tuple(seq[max(0, pos - 16) : pos]), int(got[i]),
                              int(best[i]), m, bound), near
        near += 1
    return None, near


@dataclass
class ModeReport:
    mode: str
    tokens: int
    first_difference: Divergence | None  # first token differing from the reference run
    divergence: Divergence | None  # first real divergence (teacher-forced judgement)
    near_ties: int
    mean_accept_length: float | None
    verify_steps: int
    forwards: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "tokens": self.tokens,
            "first_difference": None if self.first_difference is None
            else self.first_difference.to_json(),
            "divergence": None if self.divergence is None else self.divergence.to_json(),
            "near_ties": self.near_ties, "mean_accept_length": self.mean_accept_length,
            "verify_steps": self.verify_steps, "forwards": self.forwards,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class TinyModelReport:
    config: TinyConfig
    bound: ErrorBound
    reference_tokens: int
    reference_min_margin: float
    modes: list[ModeReport]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(m.divergence is None for m in self.modes)

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {
            "ok": self.ok,
            "config": {"vocab": c.vocab, "d_model": c.d_model, "layers": c.layers,
                       "heads": c.heads, "index_topk": c.index_topk, "seed": c.seed},
            "bound": self.bound.to_json(), "reference_tokens": self.reference_tokens,
            "reference_min_margin": self.reference_min_margin,
            "modes": [m.to_json() for m in self.modes], "seconds": round(self.seconds, 3),
        }


def _first_difference(prompt: Sequence[int], ref: Generation, run: Generation,
                      bound: float) -> Divergence | None:
    """Where ``run`` first leaves the reference run, judged by the reference's own logits."""
    for i, (a, b) in enumerate(zip(ref.tokens, run.tokens, strict=False)):
        if a != b:
            seq = list(prompt) + ref.tokens
            pos = len(prompt) + i
            row = ref.logits[i]
            return Divergence(i, pos, tuple(seq[max(0, pos - 16) : pos]), b, a,
                              float(row[a]) - float(row[b]), bound)
    return None


def run_long_model_check(
    kernel_fn: KernelFn,
    ref_fn: KernelFn,
    *,
    n_tokens: int = 1000,
    gamma: int = 5,
    config: TinyConfig = TinyConfig(),
    device: Any = None,
    tolerance: Tolerance = FLASHMLA_TOLERANCE,
) -> TinyModelReport:
    """Greedy-decode ``n_tokens`` with the reference, then with the kernel under test without
    and (``gamma > 0``) with speculative verify; judge every kernel token against the
    reference's teacher-forced logits on the kernel's own sequence.

    A token counts as a real divergence when the reference prefers another token by more than
    the error bound (``estimate_error_bound``); smaller gaps are honest near-ties and are
    counted, not reported. The first difference from the reference run is reported as well
    (with the reference's own margin there) for context.
    """
    t0 = time.perf_counter()
    model = TinyModel(config, device)
    prompt = model.prompt_tokens
    import torch

    ref = generate(model, ref_fn, n_tokens)
    ref_seq = prompt + ref.tokens
    # The reference run's own logits are its teacher-forced logits (rows from the last prompt
    # position on); rows before are never judged.
    base = len(prompt) - 1
    ref_tf = torch.cat([torch.zeros((base, model.config.vocab), device=model.device),
                        torch.stack(ref.logits)])
    bound = estimate_error_bound(model, ref_fn, ref_seq, tolerance, first_row=base,
                                 exact=ref_tf)
    runs = [generate(model, kernel_fn, n_tokens)]
    if gamma > 0:
        runs.append(generate(model, kernel_fn, n_tokens, gamma=gamma, oracle=runs[0].tokens))
    modes = []
    for run in runs:
        seq = prompt + run.tokens
        ref_logits = ref_tf if seq == ref_seq else score_sequence(model, ref_fn, seq)
        div, near = judge_tokens(prompt, run.tokens, ref_logits, bound.bound)
        modes.append(ModeReport(
            run.mode, len(run.tokens),
            _locate(_first_difference(prompt, ref, run, bound.bound), run), _locate(div, run),
            near, run.mean_accept_length, run.verify_steps, run.forwards, run.seconds))
    return TinyModelReport(config, bound, len(ref.tokens), min(ref.margins) if ref.margins
                           else math.inf, modes, time.perf_counter() - t0)


def findings_for(kernel_name: str, report: TinyModelReport) -> list[Finding]:
    """``smoke-long-divergence`` for each mode whose greedy output really left the reference."""
    out = []
    for m in report.modes:
        if m.divergence is None:
            continue
        spec = " with speculative verify" if m.mode == "spec" else " without speculation"
        out.append(Finding(
            "smoke-long-divergence", Severity.ERROR,
            f"{kernel_name}: tiny-model greedy decoding{spec} leaves the reference at generated "
            f"token {m.divergence.index}",
            "Do not serve with this kernel (for 'spec', do not serve speculative decoding): "
            "route the shapes to the bundled kernel with `dsparkctl install-kernels`.",
            (SEED_000,), m.divergence.describe(), {"tiny_model": m.to_json()}))
    return out
