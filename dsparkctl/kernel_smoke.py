"""Kernel-level smoke checks: the calls a DSpark server makes, run and judged without a model.

Why this exists: the field failures (KNOWLEDGE §1, seed 000) are a server that dies in
CUDA-graph capture because a planned ``(heads, topk)`` has no kernel, and a server that starts
but corrupts long greedy generations because verify-sized calls compute wrong numbers. Both are
visible at the kernel level, in seconds, if the kernel is fed inputs shaped exactly like the
calls SGLang makes: the same per-row index layout and valid lengths per phase, the same
CUDA-graph padding rows, the same 256-token pages, the sink, the compressed extra cache.

Layers of this module, pure to effectful:

* input synthesis (``make_call_case`` / ``make_call_inputs``): SGLang 0.5.23's metadata rules,
  see ``_row_plan``; deterministic for a seed, generated on the CPU and moved to the device;
* comparison (``compare_outputs``) with the FlashMLA tolerance, reported as a ratio
  ``max |err| / allowed`` so "how far off" is one number;
* checks: one call eager and CUDA-graph captured (``check_call``), batched-vs-one-row
  consistency (``check_verify_consistency``), a context growing past the window with draft and
  verify calls every step (``simulate_long_generation``);
* ``run_kernel_checks(plan, ...)``: the hook ``dsparkctl smoke`` calls; findings + table rows.

torch is imported inside functions so ``dsparkctl doctor`` can import the package cheaply.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dsparkctl.findings import Finding, Severity
from dsparkctl.kernel import layout

if TYPE_CHECKING:
    import torch

SWA_WINDOW = 128  # DeepSeek-V4-Flash sliding window (config.json sliding_window)
SGLANG_PAGE_SIZE = 256  # SGLang's SWA KV page size; FlashInfer wants 64 (the shim splits)
PAGE_INDEX_ALIGN = 64  # SGLang pads index widths to a multiple of 64
DEFAULT_GAMMA = 5  # dspark_block_size of DeepSeek-V4-Flash-0731
DEFAULT_COMPRESS_RATIO = 4  # c4 layers: one compressed entry per 4 tokens
DEFAULT_MAX_PREFIX = 4096
DSV4_SM_SCALE = layout.HEAD_DIM**-0.5

KernelFn = Callable[..., tuple["torch.Tensor", "torch.Tensor"]]
Progress = Callable[[str, int, int], None]
"""``progress(description, completed, total)``; called before each unit of work and at the end."""

SEED_000 = "https://github.com/sgl-project/sglang/issues/33985"
CAPTURE_FIX = (
    "Upgrade flashinfer-python to a release that serves every planned (heads, topk) "
    "(`dsparkctl doctor` names the oldest one), or run `dsparkctl install-kernels` to build "
    "the bundled any-shape kernel and route these shapes to it."
)


def ceil_align(x: int, a: int) -> int:
    return -(-x // a) * a


def dspark_draft_topk(gamma: int, window: int = SWA_WINDOW) -> int:
    """SGLang's DSpark draft index width: ``ceil_align(window + gamma, 64)`` (192 for 1..64)."""
    return ceil_align(window + gamma, PAGE_INDEX_ALIGN)


# --------------------------------------------------------------------------------------------
# Tolerances and the kernel under test
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    """Elementwise ``|err| <= atol + rtol * |ref|``; ``lse_atol=None`` leaves lse uncompared."""

    name: str
    out_atol: float
    out_rtol: float
    lse_atol: float | None = None
    lse_rtol: float | None = None

    @property
    def compares_lse(self) -> bool:
        return self.lse_atol is not None

    def describe(self) -> str:
        s = f"out |err| <= {self.out_atol:g} + {self.out_rtol:g}*|ref|"
        if self.compares_lse:
            s += f", lse |err| <= {self.lse_atol:g} + {self.lse_rtol:g}*|ref|"
        return s + ", same inf/NaN positions"


FLASHMLA_TOLERANCE = Tolerance("flashmla", 1e-3, 2.0 / 128.0, 1e-6, 8.0 / 65536.0)
"""FlashMLA's reference check for this math: what a bf16-output kernel must meet."""
FP8_TOLERANCE = Tolerance("fp8-qp", 5e-2, 5e-2)
"""FlashInfer's own test tolerance: its SM120 decode quantizes Q and P to FP8, so it cannot meet
FlashMLA's; its lse is base 2 and sink-inclusive, so only ``out`` is compared."""


@dataclass(frozen=True)
class KernelUnderTest:
    """A kernel with the ``sparse_mla_decode`` keyword interface and how to judge it."""

    name: str
    fn: KernelFn
    tolerance: Tolerance = FLASHMLA_TOLERANCE
    note: str = ""


def reference_kernel(
    q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """The yardstick: ``sparse_mla_decode_ref`` in fp64 on a GPU (no TF32 doubt), fp32 on CPU."""
    import torch

    from dsparkctl.kernel.reference import sparse_mla_decode_ref

    cdt = torch.float64 if q.device.type == "cuda" else torch.float32
    return sparse_mla_decode_ref(q, kv_cache, indices, **kwargs, compute_dtype=cdt)


def reference_as_kernel(
    q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference shaped like a real kernel (bf16 out): the kernel under test on CPU."""
    import torch

    from dsparkctl.kernel.reference import sparse_mla_decode_ref

    return sparse_mla_decode_ref(q, kv_cache, indices, **kwargs, out_dtype=torch.bfloat16)


def bundled_kernel() -> KernelUnderTest:
    """dsparkctl's bundled kernel (loads or builds the .so; raises when it cannot)."""
    from dsparkctl.kernel import ops

    ops.load()
    return KernelUnderTest("bundled", ops.sparse_mla_decode, FLASHMLA_TOLERANCE)


def split_pages_to_64(kv_cache: torch.Tensor) -> torch.Tensor:
    """SGLang's ``_split_kv_pages_to_64`` in plain torch: MODEL1 pages of N tokens -> 64.

    Each 256-token page is data (256*576 bytes) then footer (256*8); a 64-token page needs its
    own data then footer, so the bytes are copied. Token ids are unchanged. Capturable.
    """
    import torch

    pbs = int(kv_cache.shape[1])
    if pbs == 64:
        return kv_cache
    if pbs % 64:
        raise ValueError(f"page size {pbs} is not a multiple of 64; FlashInfer needs 64")
    ratio = pbs // 64
    src = layout.raw_pages(kv_cache)
    n = int(src.shape[0])
    stride = layout.sglang_page_bytes(64)
    data64, scale64 = 64 * layout.DATA_BYTES, 64 * layout.SCALE_BYTES
    buf = torch.empty((n * ratio, stride), dtype=torch.uint8, device=src.device)
    view = buf.view(n, ratio, stride)
    view[:, :, :data64].copy_(src[:, : pbs * layout.DATA_BYTES].reshape(n, ratio, data64))
    view[:, :, data64 : data64 + scale64].copy_(
        src[:, pbs * layout.DATA_BYTES :].reshape(n, ratio, scale64)
    )
    return buf.as_strided(
        (n * ratio, 64, 1, layout.TOKEN_BYTES), (stride, layout.TOKEN_BYTES, layout.TOKEN_BYTES, 1)
    )


def flashinfer_sm120_decode(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    topk_length: torch.Tensor | None = None,
    attn_sink: torch.Tensor | None = None,
    extra_kv_cache: torch.Tensor | None = None,
    extra_indices: torch.Tensor | None = None,
    extra_topk_length: torch.Tensor | None = None,
    sm_scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """FlashInfer's SM120 entry called the way sglang 0.5.23's ``_flash_mla_flashinfer`` does.

    Page split to 64 in the adapter; split-K scratch for decode-sized calls. The lse returned is
    FlashInfer's (base 2, sink-inclusive): judge it with ``FP8_TOLERANCE`` (out only).
    """
    import torch
    from flashinfer.mla._sparse_mla_sm120 import _sparse_mla_sm120_paged_attention

    try:
        from flashinfer.mla._sparse_mla_sm120 import _DECODE_MAX_TOKENS as max_decode
    except ImportError:
        max_decode = 64
    t, h, _ = q.shape
    d_v = layout.HEAD_DIM
    idx = indices.squeeze(1) if indices.dim() == 3 else indices
    kv_u8 = kv_cache.view(torch.uint8) if kv_cache.dtype != torch.uint8 else kv_cache
    kv_64 = split_pages_to_64(kv_u8)
    extra_u8 = None
    if extra_kv_cache is not None:
        extra_u8 = (
            extra_kv_cache.view(torch.uint8) if extra_kv_cache.dtype != torch.uint8 else extra_kv_cache
        )
    extra_idx = None
    if extra_indices is not None:
        extra_idx = extra_indices.squeeze(1) if extra_indices.dim() == 3 else extra_indices
    output = torch.empty((t, h, d_v), dtype=torch.bfloat16, device=q.device)
    out_lse = torch.empty((t, h), dtype=torch.float32, device=q.device)
    mid_out = mid_lse = None
    if t <= int(max_decode):
        topk = int(idx.shape[-1])
        extra_topk = int(extra_idx.shape[-1]) if extra_idx is not None else 0
        splits = -(-topk // 64) + (-(-extra_topk // 64) if extra_topk else 0)
        mid_out = torch.empty((t, h, splits, d_v), dtype=torch.bfloat16, device=q.device)
        mid_lse = torch.empty((t, h, splits), dtype=torch.float32, device=q.device)
    _sparse_mla_sm120_paged_attention(
        q,
        kv_64,
        idx,
        output,
        out_lse,
        float(sm_scale if sm_scale is not None else DSV4_SM_SCALE),
        d_v=d_v,
        topk_length=topk_length,
        attn_sink=attn_sink,
        extra_kv_cache=extra_u8,
        extra_indices=extra_idx,
        extra_topk_length=extra_topk_length,
        mid_out=mid_out,
        mid_lse=mid_lse,
    )
    return output, out_lse


def flashinfer_kernel() -> KernelUnderTest:
    """FlashInfer's real SM120 kernel; raises RuntimeError naming why it cannot run here."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU")
    major, minor = torch.cuda.get_device_capability()
    if major != 12:
        raise RuntimeError(
            f"FlashInfer's SM120 sparse-MLA kernel runs only on SM120/SM121 GPUs; this GPU is "
            f"sm_{major}{minor}"
        )
    try:
        import flashinfer.mla._sparse_mla_sm120  # noqa: F401
    except Exception as e:  # ImportError, or a broken install raising anything at import
        raise RuntimeError(f"cannot import flashinfer.mla._sparse_mla_sm120: {e}") from e
    return KernelUnderTest(
        "flashinfer", flashinfer_sm120_decode, FP8_TOLERANCE, note="out only; FP8 Q/P tolerance"
    )


# --------------------------------------------------------------------------------------------
# Synthetic inputs shaped like SGLang's calls
# --------------------------------------------------------------------------------------------


class CallLike(Protocol):
    """What input synthesis needs from a planned call (``dsparkctl.plan.PlannedCall``)."""

    phase: str
    num_heads: int
    topk: int
    extra_topk: int


@dataclass(frozen=True)
class CallShape:
    """A call shape without a plan (tests, consistency and long checks); duck-types PlannedCall."""

    phase: str
    num_heads: int
    topk: int
    extra_topk: int = 0
    extra_page_size: int = 64
    num_tokens: tuple[int, ...] = ()
    compress_ratio: int | None = None


@dataclass
class CallCase:
    """Kernel kwargs plus what the rows mean (which request, which are CUDA-graph padding)."""

    kwargs: dict[str, Any]
    phase: str
    num_tokens: int
    gamma: int
    rows_per_request: tuple[int, ...]
    prefix_lens: tuple[int, ...]
    row_request: tuple[int, ...]  # request index per row, -1 for padding rows
    row_position: tuple[int, ...]  # query position per row (-1 for padding)
    topk_length: tuple[int, ...]
    extra_topk_length: tuple[int, ...] | None

    @property
    def padding_rows(self) -> tuple[int, ...]:
        return tuple(i for i, r in enumerate(self.row_request) if r < 0)

    @property
    def num_requests(self) -> int:
        return len(self.prefix_lens)


# Prefix lengths that cover the regimes: tiny, around the 128 window, around c4 boundaries,
# up to the full 512-entry extra width (2048 tokens) and past it.
PREFIX_TEMPLATE = (61, 130, 3, 2040, 126, 700, 0, 255, 127, 128, 4000, 64, 1, 1023, 300, 96)


def _attr(call: object, name: str, default: Any) -> Any:
    v = getattr(call, name, None)
    return default if v is None else v


def _phase_rows(phase: str, gamma: int) -> int | None:
    return {"decode": 1, "verify": gamma + 1, "draft": gamma, "prefill": None}.get(phase, 1)


def _request_layout(
    phase: str, num_tokens: int, gamma: int, padding: bool = True
) -> tuple[list[int], int]:
    """(rows per real request, padding rows) for a call of ``num_tokens`` rows.

    Decode-like phases model a CUDA-graph batch padded up to the captured size: a quarter of
    the request slots (when there are >= 4) are padding, plus any remainder rows.
    """
    rpr = _phase_rows(phase, gamma)
    if rpr is None:  # prefill / extend: a few requests share the rows, no padding
        nreq = max(1, min(4, num_tokens // 32))
        sizes = [num_tokens // nreq] * nreq
        sizes[-1] += num_tokens - sum(sizes)
        return sizes, 0
    slots = num_tokens // rpr
    real = slots - slots // 4 if slots >= 4 and padding else slots
    return [rpr] * real, num_tokens - real * rpr


def _prefix_for(r: int, seed: int, gen: torch.Generator, max_prefix: int) -> int:
    import torch

    if r < len(PREFIX_TEMPLATE):
        p = PREFIX_TEMPLATE[(r + seed) % len(PREFIX_TEMPLATE)]
    else:
        p = int(torch.randint(0, max_prefix, (1,), generator=gen))
    return min(p, max_prefix)


def _random_kv(n: int, gen: torch.Generator, device: Any = None) -> torch.Tensor:
    """KV rows with a spread of magnitudes per 64-value group, so FP8 scales vary."""
    import torch

    kv = torch.randn((n, layout.HEAD_DIM), generator=gen, device=device)
    groups = layout.HEAD_DIM // layout.QUANT_GROUP
    exps = torch.randint(-2, 3, (n, groups), generator=gen, device=device).to(torch.float32)
    return kv * torch.exp2(exps).repeat_interleave(layout.QUANT_GROUP, dim=1)


def write_kv(cache: torch.Tensor, slots: torch.Tensor, kv: torch.Tensor) -> None:
    """Quantize ``kv [n, 512]`` into slot ids ``slots [n]`` of a MODEL1 cache, in place.

    What SGLang's ``store_cache`` does for new tokens. Slots must be distinct.
    (Belongs next to ``layout.quantize_kv``; kept here until layout grows it.)
    """
    import torch

    if kv.shape[0] == 0:
        return
    packed = layout.raw_pages(layout.quantize_kv(kv.to(cache.device), 1))  # (n, 584)
    pages = layout.raw_pages(cache)
    pbs = int(cache.shape[1])
    dev = pages.device
    s = slots.to(device=dev, dtype=torch.long)
    page = (s // pbs).unsqueeze(-1)
    row = (s % pbs).unsqueeze(-1)
    pages[page, row * layout.DATA_BYTES + torch.arange(layout.DATA_BYTES, device=dev)] = packed[
        :, : layout.DATA_BYTES
    ]
    pages[
        page,
        pbs * layout.DATA_BYTES + row * layout.SCALE_BYTES + torch.arange(layout.SCALE_BYTES, device=dev),
    ] = packed[:, layout.DATA_BYTES :]


def poison_slots(cache: torch.Tensor, slots: torch.Tensor, byte: int = 0xFF) -> None:
    """Overwrite slots with 0xFF (an FP8 NaN and an inf scale): a kernel that reads a slot no
    valid index points at turns NaN, which the comparison reports."""
    import torch

    if slots.numel() == 0:
        return
    pages = layout.raw_pages(cache)
    pbs = int(cache.shape[1])
    dev = pages.device
    s = slots.to(device=dev, dtype=torch.long)
    page = (s // pbs).unsqueeze(-1)
    row = (s % pbs).unsqueeze(-1)
    pages[page, row * layout.DATA_BYTES + torch.arange(layout.DATA_BYTES, device=dev)] = byte
    pages[
        page,
        pbs * layout.DATA_BYTES + row * layout.SCALE_BYTES + torch.arange(layout.SCALE_BYTES, device=dev),
    ] = byte


class _PageTable:
    """Per-request position -> slot maps over shuffled pages (SGLang allocates SWA pages per
    request from a shared pool, so a request's window crosses unrelated pages). Vectorized:
    ``slots(req, pos)`` takes tensors."""

    def __init__(self, pages_per_request: int, requests: int, page_size: int,
                 gen: torch.Generator, first_pos: torch.Tensor | None = None,
                 reserve_first_page: bool = True) -> None:
        import torch

        self.page_size = page_size
        first = 1 if reserve_first_page else 0
        n = pages_per_request * requests
        self.num_pages = max(1, first + n)
        perm = torch.randperm(n, generator=gen) + first
        self.pages = perm.view(requests, pages_per_request)
        self.base = (first_pos // page_size if first_pos is not None
                     else torch.zeros(requests, dtype=torch.long))

    @property
    def num_slots(self) -> int:
        return self.num_pages * self.page_size

    def slots(self, req: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        rel = pos // self.page_size - self.base[req]
        return self.pages[req, rel] * self.page_size + pos % self.page_size


def _compress_ratio(call: object) -> int:
    ratio = getattr(call, "compress_ratio", None)
    if ratio:
        return int(ratio)
    kind = str(getattr(call, "layer_kind", "") or "")
    return 128 if kind == "c128" else DEFAULT_COMPRESS_RATIO


def make_call_case(
    call: CallLike,
    num_tokens: int,
    *,
    seed: int = 0,
    device: Any = None,
    prefix_lens: Sequence[int] | None = None,
    gamma: int | None = None,
    pad_style: str = "empty",
    stale_lanes: bool = False,
    max_prefix: int = DEFAULT_MAX_PREFIX,
    window: int = SWA_WINDOW,
    padding: bool = True,
) -> CallCase:
    """Inputs for one call of ``num_tokens`` rows, laid out as SGLang 0.5.23 builds them.

    Per phase, for a request whose cache holds ``P`` tokens (sglang ``deepseek_v4_backend``,
    ``attn_metadata_kernels.build_causal_swa_page_indices``, ``dspark_attn_metadata``):

    * decode: one row at position ``P``; window indices newest-first ``slot(P - k)``, valid
      length ``min(P + 1, 128)``, ``-1`` beyond;
    * verify: ``gamma + 1`` rows at ``P .. P + gamma``; row ``j`` sees ``P + j + 1`` tokens
      (causal inside the draft block);
    * draft (DSpark): ``gamma`` rows sharing one index row: the last ``min(P, 128)`` prefix
      tokens oldest-first, then the ``gamma`` block slots; valid length ``min(P,128) + gamma``
      in a width of ``ceil_align(128 + gamma, 64)`` (192), ``-1`` beyond;
    * prefill: causal rows like verify, a few requests sharing the call.

    Extra (compressed) cache when the call has one: a row that sees ``s`` tokens has
    ``s // ratio`` entries (ratio 4 for c4 layers, 128 for c128); SGLang passes
    ``extra_topk_length = min(max(s // ratio, 1), width)`` and for c4 the indexer's picks (here
    a random subset in random order), for c128 every entry in order; ``-1`` beyond.
    CUDA-graph padding rows (``pad_style``): ``"empty"`` = length 0, all ``-1``; ``"sglang"`` =
    what the decode graph runner's ``seq_len_fill_value = 1`` produces: length 1 pointing at the
    reserved slot 0, extra ``-1`` with length 1; ``"mixed"`` alternates. ``stale_lanes`` fills
    lanes past the valid length with real slot ids (the withdrawn pad-to-width workaround of
    seed 000): a kernel that honours ``topk_length`` must not care. ``padding=False`` gives
    every row to a request (only a remainder that fills no request is padding).

    Unreferenced slots hold 0xFF bytes (FP8 NaN), so a kernel that reads outside the valid
    candidates produces NaN. Structure (prefixes, pages, picks) comes from a CPU generator and
    is identical on every device; bulk values (KV, q) are drawn on ``device``.
    """
    import torch

    if num_tokens < 1:
        raise ValueError(f"num_tokens must be >= 1, got {num_tokens}")
    if pad_style not in ("empty", "sglang", "mixed"):
        raise ValueError(f"pad_style must be empty, sglang or mixed, got {pad_style!r}")
    phase = str(call.phase)
    heads = int(call.num_heads)
    width = int(call.topk)
    ew = int(_attr(call, "extra_topk", 0))
    epbs = int(_attr(call, "extra_page_size", 64)) or 64
    ratio = _compress_ratio(call)
    g = int(gamma if gamma is not None else _attr(call, "gamma", DEFAULT_GAMMA))
    if phase in ("verify", "draft") and g < 1:
        raise ValueError(f"{phase} calls need gamma >= 1, got {g}")
    win = min(window, width)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    seed_val = int(seed) * 1000003 + num_tokens * 7919 + heads
    gen = torch.Generator().manual_seed(seed_val)
    dgen = torch.Generator(device=dev).manual_seed(seed_val + 1)

    sizes, pad_rows = _request_layout(phase, num_tokens, g, padding)
    nreq = len(sizes)
    if prefix_lens is not None and len(prefix_lens) == 0:
        raise ValueError("prefix_lens must not be empty")
    prefixes = []
    for r in range(nreq):
        if prefix_lens is not None:
            p = int(prefix_lens[r % len(prefix_lens)])
            if p < 0:
                raise ValueError(f"prefix lengths must be >= 0, got {p}")
        else:
            p = _prefix_for(r, seed, gen, max_prefix)
        prefixes.append(p)
    win_d = min(window, width - g)
    if phase == "draft" and win_d < 0:
        raise ValueError(f"draft width {width} cannot hold gamma={g} block tokens")

    P = torch.tensor(prefixes, dtype=torch.long)
    n_r = torch.tensor(sizes, dtype=torch.long)
    lo = torch.clamp(P - win - 1, min=0)  # first position any row of the request can see
    ppr = -(-(win + 2 + max(sizes)) // SGLANG_PAGE_SIZE) + 1
    table = _PageTable(ppr, nreq, SGLANG_PAGE_SIZE, gen, lo)

    # Rows of real requests.
    row_req = torch.repeat_interleave(torch.arange(nreq), n_r)
    starts = torch.cumsum(n_r, 0) - n_r
    j = torch.arange(int(n_r.sum())) - starts[row_req]
    pr = P[row_req]
    k = torch.arange(width).view(1, -1)
    if phase == "draft":
        pos = pr + j
        ctx = torch.clamp(pr, max=win_d)
        ln = ctx + g
        lane_pos = torch.where(k < ctx.view(-1, 1), (pr - ctx).view(-1, 1) + k,
                               pr.view(-1, 1) + (k - ctx.view(-1, 1)))
        seen = pr + 1
    else:
        pos = pr + j
        ln = torch.clamp(pos + 1, max=win)
        lane_pos = pos.view(-1, 1) - k
        seen = pos + 1
    valid = k < ln.view(-1, 1)
    lane_pos = torch.where(valid, lane_pos, pos.view(-1, 1))
    idx = torch.where(valid, table.slots(row_req.view(-1, 1).expand_as(lane_pos), lane_pos), -1)
    if stale_lanes:
        src = torch.where(valid, k, (k - ln.view(-1, 1)) % ln.view(-1, 1))
        idx = idx.gather(1, src)

    # CUDA-graph padding rows.
    kinds = [pad_style if pad_style != "mixed" else ("empty" if i % 2 == 0 else "sglang")
             for i in range(pad_rows)]
    pad_len = torch.tensor([0 if kd == "empty" else 1 for kd in kinds], dtype=torch.long)
    pad_idx = torch.full((pad_rows, width), -1, dtype=torch.long)
    if pad_rows:
        pad_idx[:, 0] = torch.where(pad_len > 0, 0, -1)
    all_idx = torch.cat([idx, pad_idx]).to(torch.int32)
    all_len = torch.cat([ln, pad_len]).to(torch.int32)
    row_req_all = torch.cat([row_req, torch.full((pad_rows,), -1, dtype=torch.long)])
    pos_all = torch.cat([pos, torch.full((pad_rows,), -1, dtype=torch.long)])

    # Main cache: finite KV where a request can look (and the reserved slot 0), NaN elsewhere.
    used = torch.zeros(table.num_slots, dtype=torch.bool)
    used[0] = True
    for r in range(nreq):
        ps = torch.arange(int(lo[r]), prefixes[r] + sizes[r])
        used[table.slots(torch.full_like(ps, r), ps)] = True
    pad_bytes = layout.sglang_page_bytes(SGLANG_PAGE_SIZE) - layout.logical_page_bytes(
        SGLANG_PAGE_SIZE)
    cache = layout.quantize_kv(_random_kv(table.num_slots, dgen, dev), SGLANG_PAGE_SIZE, pad_bytes)
    poison_slots(cache, (~used).nonzero().flatten())

    kwargs: dict[str, Any] = {
        "q": torch.randn((num_tokens, heads, layout.HEAD_DIM), generator=dgen, device=dev
                         ).to(torch.bfloat16),
        "kv_cache": cache,
        "indices": all_idx.to(dev).contiguous(),
        "topk_length": all_len.to(dev),
        "attn_sink": (torch.rand((heads,), generator=dgen, device=dev) * 6.0 + 2.0).to(
            torch.float32),
    }

    extra_lens: tuple[int, ...] | None = None
    if ew > 0:
        cap = -(-(max(max_prefix, *prefixes) + max(sizes) + g + 1) // ratio)
        etable = _PageTable(-(-cap // epbs), nreq, epbs, gen, reserve_first_page=False)
        count = torch.clamp(seen // ratio, max=cap)
        mc = max(1, int(count.max()))
        ent = torch.arange(mc).view(1, -1)
        if ratio >= 128:  # c128: every entry, in order (no indexer)
            picks = ent.expand(len(count), mc)
            pvalid = picks < count.view(-1, 1)
        else:  # c4: the indexer's top-k, any order
            score = torch.rand((len(count), mc), generator=gen).masked_fill(
                ent >= count.view(-1, 1), -1.0)
            vals, picks = torch.topk(score, min(ew, mc), dim=1)
            pvalid = vals >= 0
        picks = picks[:, :ew]
        pvalid = pvalid[:, :ew]
        eidx = torch.where(pvalid, etable.slots(row_req.view(-1, 1).expand_as(picks), picks), -1)
        if stale_lanes:
            nv = pvalid.sum(1, keepdim=True)
            kk = torch.arange(eidx.shape[1]).view(1, -1)
            src = torch.where(kk < nv, kk, (kk - nv) % nv.clamp(min=1))
            eidx = torch.where(nv > 0, eidx.gather(1, src), eidx)
        if eidx.shape[1] < ew:
            eidx = torch.cat([eidx, torch.full((eidx.shape[0], ew - eidx.shape[1]), -1,
                                               dtype=eidx.dtype)], dim=1)
        eln = torch.clamp(count, min=1, max=ew)
        pad_eidx = torch.full((pad_rows, ew), -1, dtype=torch.long)
        all_eln = torch.cat([eln, pad_len]).to(torch.int32)
        eused = torch.zeros(etable.num_slots, dtype=torch.bool)
        for r in range(nreq):
            top = int(count[row_req == r].max()) if bool((row_req == r).any()) else 0
            es = torch.arange(top)
            if top:
                eused[etable.slots(torch.full_like(es, r), es)] = True
        epad = layout.sglang_page_bytes(epbs) - layout.logical_page_bytes(epbs)
        ecache = layout.quantize_kv(_random_kv(etable.num_slots, dgen, dev), epbs, epad)
        poison_slots(ecache, (~eused).nonzero().flatten())
        kwargs["extra_kv_cache"] = ecache
        kwargs["extra_indices"] = torch.cat([eidx, pad_eidx]).to(torch.int32).to(dev).contiguous()
        kwargs["extra_topk_length"] = all_eln.to(dev)
        extra_lens = tuple(int(x) for x in all_eln.tolist())
    kwargs["sm_scale"] = DSV4_SM_SCALE

    return CallCase(
        kwargs=kwargs,
        phase=phase,
        num_tokens=num_tokens,
        gamma=g,
        rows_per_request=tuple(sizes),
        prefix_lens=tuple(prefixes),
        row_request=tuple(int(x) for x in row_req_all.tolist()),
        row_position=tuple(int(x) for x in pos_all.tolist()),
        topk_length=tuple(int(x) for x in all_len.tolist()),
        extra_topk_length=extra_lens,
    )


def make_call_inputs(
    call: CallLike,
    num_tokens: int,
    *,
    seed: int = 0,
    device: Any = None,
    prefix_lens: Sequence[int] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Kernel kwargs for one call (see ``make_call_case`` for the layout and ``options``)."""
    return make_call_case(
        call, num_tokens, seed=seed, device=device, prefix_lens=prefix_lens, **options
    ).kwargs


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    ok: bool
    ratio: float  # max |err| / allowed over everything compared; inf when inf/NaN positions differ
    out_ratio: float
    lse_ratio: float | None
    special_mismatch: int
    bad_rows: tuple[int, ...]
    max_abs_err: float
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "ratio": _finite_or_str(self.ratio),
            "out_ratio": _finite_or_str(self.out_ratio),
            "lse_ratio": None if self.lse_ratio is None else _finite_or_str(self.lse_ratio),
            "special_mismatch": self.special_mismatch,
            "bad_rows": list(self.bad_rows[:16]),
            "max_abs_err": _finite_or_str(self.max_abs_err),
            **({"detail": self.detail} if self.detail else {}),
        }


def _finite_or_str(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def tolerance_ratios(
    x: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, slack: torch.Tensor | None = None
) -> torch.Tensor:
    """``|x - ref| / (atol + rtol |ref| [+ slack])`` elementwise in fp64 (> 1 is outside), 0 where
    either side is not finite (inf / NaN positions are compared on their own). ``slack``: extra
    allowance per element (``dsparkctl.kernel.fuzz``'s fp32 rounding bound)."""
    import torch

    a = x.to(torch.float64)
    b = ref.to(device=a.device, dtype=torch.float64)
    fin = torch.isfinite(a) & torch.isfinite(b)
    err = torch.where(fin, (a - b).abs(), torch.zeros_like(a))
    allowed = atol + rtol * torch.where(fin, b.abs(), torch.zeros_like(b))
    if slack is not None:
        allowed = allowed + slack.to(device=a.device, dtype=torch.float64)
    return err / allowed


def _ratio_and_bad(
    x: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float
) -> tuple[float, int, torch.Tensor, float]:
    """(max err/allowed over finite pairs, #special mismatches, bad mask per row, max abs err)."""
    import torch

    a = x.to(torch.float64)
    b = ref.to(device=a.device, dtype=torch.float64)
    special = (torch.isnan(a) != torch.isnan(b)) | (torch.isposinf(a) != torch.isposinf(b)) | (
        torch.isneginf(a) != torch.isneginf(b)
    )
    fin = torch.isfinite(a) & torch.isfinite(b)
    err = torch.where(fin, (a - b).abs(), torch.zeros_like(a))
    r = tolerance_ratios(a, b, atol, rtol)
    bad = (r > 1.0) | special
    per_row = bad.reshape(bad.shape[0], -1).any(dim=1)
    ratio = float(r.max()) if r.numel() else 0.0
    return ratio, int(special.sum()), per_row, float(err.max()) if err.numel() else 0.0


def compare_outputs(
    out: torch.Tensor,
    lse: torch.Tensor | None,
    ref_out: torch.Tensor,
    ref_lse: torch.Tensor | None,
    tolerance: Tolerance = FLASHMLA_TOLERANCE,
) -> Comparison:
    """Elementwise tolerance check; ``ratio > 1`` or differing inf/NaN positions fail."""
    if tuple(out.shape) != tuple(ref_out.shape):
        return Comparison(False, math.inf, math.inf, None, 0, (), math.inf,
                          f"out shape {tuple(out.shape)} != reference {tuple(ref_out.shape)}")
    o_ratio, o_spec, o_bad, o_err = _ratio_and_bad(out, ref_out, tolerance.out_atol,
                                                   tolerance.out_rtol)
    l_ratio = None
    spec = o_spec
    bad = o_bad
    detail = ""
    if tolerance.compares_lse and lse is not None and ref_lse is not None:
        if tuple(lse.shape) != tuple(ref_lse.shape):
            return Comparison(False, math.inf, o_ratio, math.inf, o_spec, (), o_err,
                              f"lse shape {tuple(lse.shape)} != reference {tuple(ref_lse.shape)}")
        assert tolerance.lse_atol is not None and tolerance.lse_rtol is not None
        l_ratio, l_spec, l_bad, _ = _ratio_and_bad(lse, ref_lse, tolerance.lse_atol,
                                                   tolerance.lse_rtol)
        spec += l_spec
        bad = bad | l_bad.to(bad.device)
    ratio = max(o_ratio, l_ratio or 0.0)
    if spec:
        ratio = math.inf
        detail = f"{spec} values are inf/NaN where the reference is not (or the reverse)"
    bad_rows = tuple(int(i) for i in bad.nonzero().flatten().tolist())
    return Comparison(not bad_rows and ratio <= 1.0, ratio, o_ratio, l_ratio, spec, bad_rows,
                      o_err, detail)


# --------------------------------------------------------------------------------------------
# One call: eager and CUDA graph
# --------------------------------------------------------------------------------------------

STATUS_ORDER = ("error", "capture-failed", "mismatch", "pad-mismatch", "ok", "skipped")


@dataclass
class CheckResult:
    status: str  # ok | mismatch | pad-mismatch | capture-failed | error
    max_ratio: float
    time_us: float | None
    error: str = ""
    eager: Comparison | None = None
    graph: Comparison | None = None
    graph_new_inputs: Comparison | None = None
    graph_bitwise_eager: bool | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "max_ratio": _finite_or_str(self.max_ratio),
            "time_us": self.time_us,
        }
        if self.error:
            out["error"] = self.error
        for k in ("eager", "graph", "graph_new_inputs"):
            c = getattr(self, k)
            if c is not None:
                out[k] = c.to_json()
        if self.graph_bitwise_eager is not None:
            out["graph_bitwise_eager"] = self.graph_bitwise_eager
        return out


def _exc_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= 2000 else text[:2000] + " ..."


def _sync(device: Any) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _status_of(comps: Iterable[Comparison | None], padding_rows: Sequence[int]) -> str:
    pad = set(padding_rows)
    status = "ok"
    for c in comps:
        if c is None or c.ok:
            continue
        if c.bad_rows and all(r in pad for r in c.bad_rows):
            status = "pad-mismatch" if status == "ok" else status
        else:
            return "mismatch"
    return status


def _copy_inputs_(dst: Mapping[str, Any], src: Mapping[str, Any]) -> None:
    import torch

    for k, v in src.items():
        d = dst.get(k)
        if isinstance(v, torch.Tensor) and isinstance(d, torch.Tensor):
            if d.shape != v.shape or d.stride() != v.stride():
                raise ValueError(f"replay input {k} differs in shape/stride from the captured one")
            if d.stride(-1) == 1 and k in ("kv_cache", "extra_kv_cache"):
                layout.raw_pages(d).copy_(layout.raw_pages(v))
            else:
                d.copy_(v)


def check_call(
    kernel_fn: KernelFn,
    ref_fn: KernelFn,
    inputs: dict[str, Any],
    *,
    graph: bool,
    tolerance: Tolerance = FLASHMLA_TOLERANCE,
    replay_inputs: Mapping[str, Any] | None = None,
    padding_rows: Sequence[int] = (),
    timing_iters: int = 20,
) -> CheckResult:
    """Run one call eagerly and (``graph=True``, CUDA only) captured in a CUDA graph, each
    compared with the reference.

    The graph is replayed twice: with the capture inputs (outputs poisoned with NaN first, so a
    replay that writes nothing fails; bitwise equality with eager is recorded as a bonus), and
    with ``replay_inputs`` copied into the captured tensors (a kernel that froze lengths or
    pointers at capture time fails here). ``inputs`` is modified by that copy. An exception in
    the eager call gives status ``error``; one while capturing gives ``capture-failed``; the
    text is kept. Mismatches confined to ``padding_rows`` give ``pad-mismatch``.
    """
    import torch

    q = inputs["q"]
    dev = q.device
    ref_out, ref_lse = ref_fn(**inputs)
    try:
        t0 = time.perf_counter()
        out, lse = kernel_fn(**inputs)
        _sync(dev)
        eager_us = (time.perf_counter() - t0) * 1e6
    except Exception as e:
        return CheckResult("error", math.inf, None, _exc_text(e))
    eager = compare_outputs(out, lse, ref_out, ref_lse, tolerance)
    if not graph or dev.type != "cuda":
        times = []
        for _ in range(max(1, min(timing_iters, 5))):
            t0 = time.perf_counter()
            kernel_fn(**inputs)
            _sync(dev)
            times.append((time.perf_counter() - t0) * 1e6)
        status = _status_of([eager], padding_rows)
        return CheckResult(status, eager.ratio, statistics.median(times or [eager_us]), "", eager)

    # Warm up on a side stream (what torch recommends before capture), then capture.
    try:
        s = torch.cuda.Stream(device=dev)
        s.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(s):
            kernel_fn(**inputs)
        torch.cuda.current_stream(dev).wait_stream(s)
        _sync(dev)
    except Exception as e:
        return CheckResult("error", math.inf, None, _exc_text(e), eager)
    # Capture by hand rather than with ``torch.cuda.graph``: its __exit__ skips restoring the
    # stream when capture_end raises, which would leave later checks on the capture stream.
    g = torch.cuda.CUDAGraph()
    first: BaseException | None = None
    result: Any = None
    cap_stream = torch.cuda.Stream(device=dev)
    _sync(dev)
    with torch.cuda.stream(cap_stream):
        try:
            g.capture_begin()
        except Exception as e:
            first = e
        else:
            try:
                result = kernel_fn(**inputs)
            except Exception as e:
                first = e
            finally:
                try:
                    g.capture_end()
                except Exception as e:
                    first = first or e
    if first is not None:
        with contextlib.suppress(Exception):
            _sync(dev)
        return CheckResult("capture-failed", math.inf, None, _exc_text(first), eager)
    gout, glse = result
    try:
        gout.fill_(float("nan"))
        glse.fill_(float("nan"))
        g.replay()
        _sync(dev)
    except Exception as e:
        return CheckResult("error", math.inf, None, "graph replay: " + _exc_text(e), eager)
    graph_cmp = compare_outputs(gout, glse, ref_out, ref_lse, tolerance)
    bitwise = bool(torch.equal(gout, out) and torch.equal(torch.nan_to_num(glse),
                                                          torch.nan_to_num(lse)))
    new_cmp = None
    if replay_inputs is not None:
        _copy_inputs_(inputs, replay_inputs)
        ref2_out, ref2_lse = ref_fn(**inputs)
        gout.fill_(float("nan"))
        glse.fill_(float("nan"))
        g.replay()
        _sync(dev)
        new_cmp = compare_outputs(gout, glse, ref2_out, ref2_lse, tolerance)
    times = []
    for _ in range(timing_iters):
        st = torch.cuda.Event(enable_timing=True)
        en = torch.cuda.Event(enable_timing=True)
        st.record()
        g.replay()
        en.record()
        en.synchronize()
        times.append(st.elapsed_time(en) * 1000.0)
    comps = [eager, graph_cmp, new_cmp]
    status = _status_of(comps, padding_rows)
    ratio = max(c.ratio for c in comps if c is not None)
    del g
    return CheckResult(status, ratio, statistics.median(times), "", eager, graph_cmp, new_cmp,
                       bitwise)


# --------------------------------------------------------------------------------------------
# Verify-path consistency: one batched call vs the same rows one at a time
# --------------------------------------------------------------------------------------------

CONSISTENCY_PREFIXES = (3, 61, 126, 130, 509, 2046, 0, 250)


@dataclass
class ConsistencyResult:
    """Batched (T = R * rows) vs T = 1 per row, same kernel, same inputs.

    Bound: every element of the batched result lies within the kernel's tolerance of the T=1
    result (for the bundled kernel, FlashMLA's: out ``1e-3 + 2/128*|x1|``, lse
    ``1e-6 + 8/65536*|lse1|``; same inf/NaN positions). Rows are independent computations, so a
    correct kernel lands far inside (normally bitwise equal, recorded in ``bitwise``).
    """

    status: str  # ok | inconsistent | error
    ratio: float
    bitwise: bool
    phase: str
    num_requests: int
    rows_per_request: int
    t1_vs_ref_ok: bool | None
    batched_vs_ref_ok: bool | None
    first_bad: dict[str, int] | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "ratio": _finite_or_str(self.ratio), "bitwise": self.bitwise,
            "phase": self.phase, "num_requests": self.num_requests,
            "rows_per_request": self.rows_per_request, "t1_vs_ref_ok": self.t1_vs_ref_ok,
            "batched_vs_ref_ok": self.batched_vs_ref_ok, "first_bad": self.first_bad,
            **({"error": self.error} if self.error else {}),
        }


def row_slice(kwargs: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Token i of a call's keyword arguments as a one-token call: views of the per-token
    tensors (strides kept), everything else (caches, sink, scalars) shared."""
    per_row = ("q", "indices", "topk_length", "extra_indices", "extra_topk_length")
    return {k: (v[i : i + 1] if k in per_row and v is not None else v) for k, v in kwargs.items()}


def check_verify_consistency(
    kernel_fn: KernelFn,
    num_requests: int,
    gamma: int,
    *,
    heads: int = 64,
    topk: int | None = None,
    extra_topk: int | None = None,
    extra_page_size: int = 64,
    compress_ratio: int = DEFAULT_COMPRESS_RATIO,
    phase: str = "verify",
    prefix_lens: Sequence[int] | None = None,
    seed: int = 0,
    device: Any = None,
    tolerance: Tolerance = FLASHMLA_TOLERANCE,
    ref_fn: KernelFn | None = None,
) -> ConsistencyResult:
    """R requests x (gamma+1) verify rows (or gamma draft rows) in one call vs one row per call.

    This is the check that separates "right at T = 1" from "right at verify sizes" -- the
    suspected failure of seed 000. Default prefixes include contexts shorter than the window,
    where the rows of one request have different valid lengths.
    """
    import torch

    if topk is None:
        topk = dspark_draft_topk(gamma) if phase == "draft" else SWA_WINDOW
    if extra_topk is None:
        extra_topk = 0 if phase == "draft" else 512
    shape = CallShape(phase, heads, topk, extra_topk, extra_page_size,
                      compress_ratio=compress_ratio)
    rpr = _phase_rows(phase, gamma) or 1
    case = make_call_case(
        shape, num_requests * rpr, seed=seed, device=device, gamma=gamma,
        prefix_lens=prefix_lens or CONSISTENCY_PREFIXES, padding=False,
    )
    kw = case.kwargs
    try:
        b_out, b_lse = kernel_fn(**kw)
        outs, lses = [], []
        for i in range(case.num_tokens):
            o, s = kernel_fn(**row_slice(kw, i))
            outs.append(o)
            lses.append(s)
        s_out, s_lse = torch.cat(outs), torch.cat(lses)
        _sync(kw["q"].device)
    except Exception as e:
        return ConsistencyResult("error", math.inf, False, phase, case.num_requests, rpr, None,
                                 None, None, _exc_text(e))
    cmp = compare_outputs(b_out, b_lse, s_out, s_lse, tolerance)
    bitwise = bool(torch.equal(b_out, s_out) and torch.equal(b_lse, s_lse))
    t1_ok = batched_ok = None
    if ref_fn is not None:
        r_out, r_lse = ref_fn(**kw)
        t1_ok = compare_outputs(s_out, s_lse, r_out, r_lse, tolerance).ok
        batched_ok = compare_outputs(b_out, b_lse, r_out, r_lse, tolerance).ok
    first_bad = None
    if cmp.bad_rows:
        i = cmp.bad_rows[0]
        r = case.row_request[i]
        first_bad = {
            "row": i, "request": r, "row_in_request": i - sum(case.rows_per_request[:r]),
            "prefix": case.prefix_lens[r], "topk_length": case.topk_length[i],
        }
        if case.extra_topk_length is not None:
            first_bad["extra_topk_length"] = case.extra_topk_length[i]
    status = "ok" if cmp.ok else "inconsistent"
    return ConsistencyResult(status, cmp.ratio, bitwise, phase, case.num_requests, rpr, t1_ok,
                             batched_ok, first_bad)


# --------------------------------------------------------------------------------------------
# --long, kernel level: a context growing past the window, draft + verify every step
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LongFailure:
    step: int
    phase: str
    contexts: tuple[int, ...]
    ratio: float
    bad_rows: tuple[int, ...]
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "phase": self.phase, "contexts": list(self.contexts),
                "ratio": _finite_or_str(self.ratio), "bad_rows": list(self.bad_rows[:16]),
                **({"detail": self.detail} if self.detail else {})}


@dataclass
class LongSimResult:
    steps: int
    calls: int
    final_contexts: tuple[int, ...]
    max_ratio: float
    failures: list[LongFailure] = field(default_factory=list)
    failed_calls: int = 0
    seconds: float = 0.0
    length_range: tuple[int, int] = (0, 0)
    extra_length_range: tuple[int, int] = (0, 0)

    @property
    def ok(self) -> bool:
        return self.failed_calls == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "steps": self.steps, "calls": self.calls,
            "final_contexts": list(self.final_contexts),
            "max_ratio": _finite_or_str(self.max_ratio), "failed_calls": self.failed_calls,
            "failures": [f.to_json() for f in self.failures], "seconds": round(self.seconds, 3),
            "length_range": list(self.length_range),
            "extra_length_range": list(self.extra_length_range),
        }


class _RingCache:
    """A MODEL1 cache where request ``r`` keeps position ``p`` in ring row ``p % ring`` of its
    own shuffled pages (SGLang 0.5.23's per-request SWA ring, ``swa_ring_rows``)."""

    def __init__(self, requests: int, ring: int, page_size: int, gen: torch.Generator,
                 device: Any) -> None:
        import torch

        self.ring = ring
        self.page_size = page_size
        ppr = -(-ring // page_size)
        perm = torch.randperm(requests * ppr, generator=gen)
        self.pages = perm.view(requests, ppr).to(device)
        n = requests * ppr * page_size
        self.cache = layout.quantize_kv(_random_kv(n, gen).to(device), page_size)

    def slots(self, req: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        rr = pos % self.ring
        page = self.pages[req, rr // self.page_size]
        return page * self.page_size + rr % self.page_size


def simulate_long_generation(
    kernel_fn: KernelFn,
    ref_fn: KernelFn = reference_kernel,
    *,
    max_context: int = 2048,
    gamma: int = DEFAULT_GAMMA,
    heads: int = 64,
    draft_heads: int | None = None,
    topk: int = SWA_WINDOW,
    extra_topk: int = 512,
    extra_page_size: int = 64,
    compress_ratio: int = DEFAULT_COMPRESS_RATIO,
    num_requests: int = 2,
    seed: int = 0,
    device: Any = None,
    tolerance: Tolerance = FLASHMLA_TOLERANCE,
    max_failures: int = 8,
    progress: Progress | None = None,
) -> LongSimResult:
    """Grow ``num_requests`` contexts from (near) zero to ``max_context`` tokens the way a DSpark
    server does, checking every kernel call against the reference.

    Each step: a DSpark draft call (``R * gamma`` rows, width ``ceil_align(128+gamma, 64)``,
    length ``min(P,128) + gamma``) on the draft cache, then a verify call (``R * (gamma+1)``
    rows, window width ``topk``, c4 extra cache) on the target cache; new KV is written into the
    block slots first (rejected positions are rewritten next step, as in SGLang). Then each
    request accepts a pseudo-random ``k in 0..gamma`` drafts and advances ``k + 1``. Valid
    lengths therefore sweep 1..128 (window), gamma..128+gamma (draft) and 1..extra_topk (extra)
    while the ring caches wrap. With ``gamma = 0`` only decode-shaped calls are made.
    """
    import torch

    dev = torch.device(device) if device is not None else torch.device("cpu")
    gen = torch.Generator().manual_seed(seed * 7 + 11)
    dgen = torch.Generator(device=dev).manual_seed(seed * 13 + 5)
    g = int(gamma)
    dh = draft_heads or heads
    R = int(num_requests)
    ring = ceil_align(SWA_WINDOW + g + 2, SGLANG_PAGE_SIZE) + SGLANG_PAGE_SIZE // 2
    target = _RingCache(R, ring, SGLANG_PAGE_SIZE, gen, dev)
    draft = _RingCache(R, ring, SGLANG_PAGE_SIZE, gen, dev) if g > 0 else None
    cap = (max_context + 2 * g + 2) // compress_ratio + 1
    e_pages = -(-cap // extra_page_size)
    e_perm = torch.randperm(R * e_pages, generator=gen).view(R, e_pages).to(dev)
    ecache = None
    if extra_topk > 0:
        ecache = layout.quantize_kv(_random_kv(R * e_pages * extra_page_size, gen).to(dev),
                                    extra_page_size)
    sink_t = (torch.rand((heads,), generator=gen) * 6.0 + 2.0).to(dev)
    sink_d = (torch.rand((dh,), generator=gen) * 6.0 + 2.0).to(dev)
    dwidth = dspark_draft_topk(g) if g > 0 else 0
    win = min(SWA_WINDOW, topk)
    P = torch.tensor([(r * 53) % 97 for r in range(R)], dtype=torch.long, device=dev)
    P[0] = 0
    res = LongSimResult(0, 0, (), 0.0)
    lmin, lmax, emin, emax = 1 << 30, 0, 1 << 30, 0
    t_start = time.perf_counter()
    step = 0
    req_ids = torch.arange(R, device=dev)
    total = max_context

    def record(phase: str, cmp: Comparison) -> None:
        res.calls += 1
        res.max_ratio = max(res.max_ratio, cmp.ratio)
        if not cmp.ok:
            res.failed_calls += 1
            if len(res.failures) < max_failures:
                res.failures.append(LongFailure(step, phase, tuple(P.tolist()), cmp.ratio,
                                                cmp.bad_rows, cmp.detail))

    while int(P.min()) < max_context:
        if progress is not None:
            progress("long: kernel-level generation", min(int(P.min()), total), total)
        # ---- DSpark draft call ----
        if draft is not None:
            blk = P.view(R, 1) + torch.arange(g, device=dev).view(1, g)
            rq = req_ids.view(R, 1).expand(R, g)
            write_kv(draft.cache, draft.slots(rq.reshape(-1), blk.reshape(-1)),
                     torch.randn((R * g, layout.HEAD_DIM), device=dev, generator=dgen) * 2.0)
            ctx = torch.clamp(P, max=min(SWA_WINDOW, dwidth - g))
            k = torch.arange(dwidth, device=dev).view(1, dwidth)
            in_win = k < ctx.view(R, 1)
            in_blk = (k >= ctx.view(R, 1)) & (k < ctx.view(R, 1) + g)
            pos = torch.where(in_win, P.view(R, 1) - ctx.view(R, 1) + k,
                              P.view(R, 1) + (k - ctx.view(R, 1)))
            sl = draft.slots(req_ids.view(R, 1).expand(R, dwidth), pos.clamp(min=0))
            row = torch.where(in_win | in_blk, sl, torch.full_like(sl, -1))
            idx = row.repeat_interleave(g, dim=0).to(torch.int32).contiguous()
            ln = (ctx + g).repeat_interleave(g).to(torch.int32)
            q = (torch.randn((R * g, dh, layout.HEAD_DIM), device=dev, generator=dgen)
                 ).to(torch.bfloat16)
            kw = {"q": q, "kv_cache": draft.cache, "indices": idx, "topk_length": ln,
                  "attn_sink": sink_d, "sm_scale": DSV4_SM_SCALE}
            record("draft", _run_and_compare(kernel_fn, ref_fn, kw, tolerance))
        # ---- verify (or decode) call ----
        nrow = g + 1
        pos = P.view(R, 1) + torch.arange(nrow, device=dev).view(1, nrow)  # [R, nrow]
        rq = req_ids.view(R, 1).expand(R, nrow)
        write_kv(target.cache, target.slots(rq.reshape(-1), pos.reshape(-1)),
                 torch.randn((R * nrow, layout.HEAD_DIM), device=dev, generator=dgen) * 2.0)
        k = torch.arange(topk, device=dev).view(1, 1, topk)
        p_k = pos.unsqueeze(-1) - k
        valid = (k < win) & (p_k >= 0)
        sl = target.slots(rq.unsqueeze(-1).expand(R, nrow, topk), p_k.clamp(min=0))
        idx = torch.where(valid, sl, torch.full_like(sl, -1)).reshape(R * nrow, topk)
        ln = torch.clamp(pos + 1, max=win).reshape(-1)
        lmin, lmax = min(lmin, int(ln.min())), max(lmax, int(ln.max()))
        kw = {"q": torch.randn((R * nrow, heads, layout.HEAD_DIM), device=dev,
                               generator=dgen).to(torch.bfloat16),
              "kv_cache": target.cache, "indices": idx.to(torch.int32).contiguous(),
              "topk_length": ln.to(torch.int32), "attn_sink": sink_t, "sm_scale": DSV4_SM_SCALE}
        if ecache is not None:
            count = ((pos + 1) // compress_ratio).reshape(-1)  # entries each row sees
            width_c = int(min(cap, max(1, int(count.max()))))
            scores = torch.rand((R * nrow, width_c), device=dev, generator=dgen)
            ent = torch.arange(width_c, device=dev).view(1, -1)
            scores = scores.masked_fill(ent >= count.view(-1, 1), -1.0)
            nsel = min(extra_topk, width_c)
            vals, picks = torch.topk(scores, nsel, dim=1)
            rr = rq.reshape(-1, 1).expand(-1, nsel)
            eslot = e_perm[rr, picks // extra_page_size] * extra_page_size + picks % extra_page_size
            eidx = torch.where(vals >= 0, eslot, torch.full_like(eslot, -1))
            if nsel < extra_topk:
                eidx = torch.cat([eidx, torch.full((R * nrow, extra_topk - nsel), -1,
                                                   device=dev, dtype=eidx.dtype)], dim=1)
            eln = torch.clamp(count, min=1, max=extra_topk)
            emin, emax = min(emin, int(eln.min())), max(emax, int(eln.max()))
            kw.update(extra_kv_cache=ecache, extra_indices=eidx.to(torch.int32).contiguous(),
                      extra_topk_length=eln.to(torch.int32))
        record("verify" if g > 0 else "decode", _run_and_compare(kernel_fn, ref_fn, kw, tolerance))
        # ---- accept ----
        # Requests that reached max_context stay put (keeps every cache bound exact).
        acc = torch.randint(0, g + 1, (R,), generator=gen).to(dev)
        P = torch.where(max_context > P, P + acc + 1, P)
        step += 1
    res.steps = step
    res.final_contexts = tuple(int(x) for x in P.tolist())
    res.seconds = time.perf_counter() - t_start
    res.length_range = (lmin, lmax)
    res.extra_length_range = (emin, emax) if ecache is not None else (0, 0)
    if progress is not None:
        progress("long: kernel-level generation", total, total)
    return res


def _run_and_compare(kernel_fn: KernelFn, ref_fn: KernelFn, kw: dict[str, Any],
                     tolerance: Tolerance) -> Comparison:
    try:
        out, lse = kernel_fn(**kw)
    except Exception as e:
        return Comparison(False, math.inf, math.inf, None, 0, (), math.inf, _exc_text(e))
    r_out, r_lse = ref_fn(**kw)
    return compare_outputs(out, lse, r_out, r_lse, tolerance)


# --------------------------------------------------------------------------------------------
# The hook `dsparkctl smoke` calls
# --------------------------------------------------------------------------------------------


def select_num_tokens(sizes: Iterable[int], *, small_limit: int = 64, large_count: int = 3,
                      large_max: int = 2048) -> list[int]:
    """Every captured size <= 64 (the decode kernels' range, where the field failures live)
    and a few larger ones (smallest, largest up to ``large_max``, one between)."""
    s = sorted({int(n) for n in sizes if int(n) >= 1})
    small = [n for n in s if n <= small_limit]
    large = [n for n in s if small_limit < n <= large_max]
    if not large and any(n > large_max for n in s):
        large = [min(n for n in s if n > large_max)]
    pick: list[int] = []
    if large:
        pick = [large[0], large[len(large) // 2], large[-1]][:large_count]
    return small + sorted(set(pick))


def _call_sizes(call: object) -> list[int]:
    """Captured sizes; for eager-only calls (prefill) the probe sizes the plan judged."""
    sizes = getattr(call, "num_tokens", None)
    if not sizes:
        paths = getattr(call, "paths", None)
        sizes = list(paths) if isinstance(paths, Mapping) else []
    if isinstance(sizes, int):
        sizes = [sizes]
    return [int(n) for n in sizes]


def default_kernel_choice() -> tuple[str, str]:
    """What the serving stack will use here: FlashInfer's SM120 kernel exists only on SM12x
    GPUs, and routed shapes go to the bundled kernel, so on SM12x with FlashInfer importable
    both are tested; elsewhere only the bundled kernel can run."""
    try:
        fi = flashinfer_kernel()
    except Exception as e:
        return "bundled", f"FlashInfer's SM120 kernel cannot run here ({e})"
    del fi
    return "both", "SM12x GPU with FlashInfer: FlashInfer for the shapes it serves, the " \
                   "bundled kernel for routed ones"


def _resolve_kernels(kernel: str | KernelUnderTest | Sequence[KernelUnderTest] | None
                     ) -> tuple[list[KernelUnderTest], list[Finding]]:
    if isinstance(kernel, KernelUnderTest):
        return [kernel], []
    if kernel is not None and not isinstance(kernel, str):
        return list(kernel), []
    note: list[Finding] = []
    if kernel is None:
        kernel, why = default_kernel_choice()
        note.append(Finding("smoke-kernel-choice", Severity.INFO,
                            f"Kernel-level checks test: {kernel}", "", (), why))
    names = {"bundled": ["bundled"], "flashinfer": ["flashinfer"],
             "both": ["bundled", "flashinfer"]}.get(kernel)
    if names is None:
        raise ValueError(f"kernel must be bundled, flashinfer or both, got {kernel!r}")
    out: list[KernelUnderTest] = []
    findings: list[Finding] = []
    for name in names:
        try:
            out.append(bundled_kernel() if name == "bundled" else flashinfer_kernel())
        except Exception as e:
            if name == "bundled":
                findings.append(Finding(
                    "smoke-bundled-unavailable", Severity.WARNING,
                    "The bundled sparse-MLA kernel could not be loaded or built, so it was not "
                    "tested",
                    "Run `dsparkctl install-kernels` (needs nvcc and a CUDA build of torch), or "
                    "point DSPARKCTL_KERNEL_SO at a built library.",
                    detail=_exc_text(e)))
            else:
                findings.append(Finding(
                    "smoke-flashinfer-unavailable",
                    Severity.WARNING if kernel == "flashinfer" else Severity.INFO,
                    "FlashInfer's SM120 sparse-MLA kernel was not tested here",
                    "Run `dsparkctl smoke --kernel flashinfer` on the SM120/SM121 serving GPU "
                    "with the serving environment's flashinfer-python.",
                    detail=_exc_text(e)))
    return out, note + findings


def _cuda_device() -> Any:
    try:
        import torch
    except Exception:
        return None
    try:
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
    except Exception:
        return None
    return None


def no_gpu_finding(reason: str) -> Finding:
    return Finding(
        "smoke-no-gpu", Severity.WARNING,
        "No CUDA GPU: kernel-level smoke checks did not run",
        "Run `dsparkctl smoke` on the serving machine (a CUDA GPU and a CUDA build of torch); "
        "server-level checks (`--endpoint URL`) run anywhere.",
        detail=reason,
    )


def _shape_key(kut: str, call: object) -> tuple[str, str, int, int, int]:
    return (kut, str(call.phase), int(call.num_heads), int(call.topk),  # type: ignore[attr-defined]
            int(_attr(call, "extra_topk", 0)))


def _fmt_shape(key: tuple[str, str, int, int, int]) -> str:
    kut, phase, h, k, e = key
    return f"{kut} {phase}: heads={h} topk={k}" + (f" extra_topk={e}" if e else "")


def run_kernel_checks(
    plan: Any,
    *,
    kernel: str | KernelUnderTest | Sequence[KernelUnderTest] | None = None,
    long: bool = False,
    progress: Progress | None = None,
    show_progress: bool = False,
    seed: int = 0,
    device: Any = None,
    max_context: int = 2048,
    tiny_tokens: int = 1000,
    routed: Callable[..., bool] | None = None,
) -> tuple[list[Finding], dict[str, Any]]:
    """Every planned call at every captured size (capped: all <= 64, three larger), eager and
    captured, against the reference; verify/draft consistency; with ``long`` the kernel-level
    long generation and the tiny-model greedy runs.

    ``kernel``: ``"bundled"``, ``"flashinfer"``, ``"both"``, ``None`` (what the stack uses here,
    see ``default_kernel_choice``) or ``KernelUnderTest`` object(s). ``progress(desc, done,
    total)`` is called as work proceeds; ``show_progress`` draws a rich bar on stderr instead.

    Returns ``(findings, data)``; ``data["rows"]`` is the per-shape table (kernel, phase, heads,
    topk, extra, num_tokens, status, max_err_over_tol, time_us, error), ``data["consistency"]``,
    ``data["long"]`` and ``data["tiny_model"]`` the other checks. Without CUDA: one
    ``smoke-no-gpu`` finding and ``data["ran"] = False`` (the caller exits 2).
    """
    if show_progress and progress is None and _cuda_device() is not None:
        from rich.progress import Progress as RichProgress

        from dsparkctl.output import err_console

        with RichProgress(console=err_console, transient=True) as bar:
            task = bar.add_task("kernel checks", total=None)

            def draw(desc: str, done: int, total: int) -> None:
                bar.update(task, description=desc, completed=done, total=total)

            return run_kernel_checks(plan, kernel=kernel, long=long, progress=draw, seed=seed,
                                     device=device, max_context=max_context,
                                     tiny_tokens=tiny_tokens, routed=routed)
    dev = device if device is not None else _cuda_device()
    if dev is None:
        return [no_gpu_finding("torch is missing, CPU-only, or sees no CUDA device")], {
            "ran": False, "rows": []}
    kernels, findings = _resolve_kernels(kernel)
    calls = list(getattr(plan, "calls", ()))
    gamma = int(getattr(plan, "gamma", None) or 0)
    data: dict[str, Any] = {"ran": True, "kernels": [k.name for k in kernels], "rows": [],
                            "consistency": [], "gamma": gamma,
                            "split_by_routing": kernel is None and routed is not None
                            and len(kernels) > 1}
    if not kernels:
        data["ran"] = False
        return findings, data

    # With both kernels chosen by default, each call is tested on the kernel the stack will
    # run it on: routed calls (decode-sized ones, and prefill-sized ones FlashInfer's prefill
    # dispatcher rejects) on the bundled one, everything else on FlashInfer.
    split = kernel is None and routed is not None and len(kernels) > 1

    def stack_runs(kut: KernelUnderTest, call: Any, n: int) -> bool:
        if not split:
            return True
        assert routed is not None
        return (kut.name == "bundled") == routed(
            call.num_heads, call.topk, n, int(_attr(call, "extra_topk", 0)),
            int(_attr(call, "extra_page_size", 64)))

    work: list[tuple[KernelUnderTest, Any, int]] = []
    for kut in kernels:
        for call in calls:
            for n in select_num_tokens(_call_sizes(call)):
                if stack_runs(kut, call, n):
                    work.append((kut, call, n))
    cons_work: list[tuple[KernelUnderTest, Any, int]] = []
    if gamma > 0:
        for kut in kernels:
            seen: set[tuple[Any, ...]] = set()
            for call in calls:
                if call.phase not in ("verify", "draft"):
                    continue
                key = _shape_key(kut.name, call)
                if key in seen or not stack_runs(kut, call, 1):
                    continue
                seen.add(key)
                rpr = gamma + 1 if call.phase == "verify" else gamma
                rmax = max(1, 64 // rpr)
                for r in sorted({1, 2, rmax}):
                    cons_work.append((kut, call, r))
    total = len(work) + len(cons_work) + (2 * len(kernels) if long else 0)
    done = 0

    def tick(desc: str) -> None:
        if progress is not None:
            progress(desc, done, total)

    mismatches: dict[tuple[str, str, int, int, int], list[tuple[int, float, str]]] = {}
    pad_mismatches: dict[tuple[str, str, int, int, int], list[int]] = {}
    failures: dict[tuple[str, str, int, int, int], list[tuple[int, str, str]]] = {}
    for i, (kut, call, n) in enumerate(work):
        key = _shape_key(kut.name, call)
        tick(f"{_fmt_shape(key)} T={n}")
        case = make_call_case(call, n, seed=seed, device=dev, gamma=gamma or None,
                              pad_style="mixed", stale_lanes=(i % 2 == 1))
        replay = make_call_case(call, n, seed=seed + 1, device=dev, gamma=gamma or None,
                                pad_style="mixed", stale_lanes=(i % 2 == 1)).kwargs
        res = check_call(kut.fn, reference_kernel, case.kwargs, graph=True,
                         tolerance=kut.tolerance, replay_inputs=replay,
                         padding_rows=case.padding_rows)
        data["rows"].append({
            "kernel": kut.name, "phase": key[1], "heads": key[2], "topk": key[3],
            "extra": key[4], "num_tokens": n, "status": res.status,
            "max_err_over_tol": _finite_or_str(res.max_ratio),
            "time_us": None if res.time_us is None else round(res.time_us, 2),
            "error": res.error, "tolerance": kut.tolerance.name,
            "graph_bitwise_eager": res.graph_bitwise_eager,
        })
        if res.status in ("error", "capture-failed"):
            failures.setdefault(key, []).append((n, res.status, res.error))
        elif res.status == "mismatch":
            mismatches.setdefault(key, []).append((n, res.max_ratio, ""))
        elif res.status == "pad-mismatch":
            pad_mismatches.setdefault(key, []).append(n)
        done += 1
        del case, replay

    inconsistent: list[tuple[KernelUnderTest, Any, ConsistencyResult]] = []
    for kut, call, r in cons_work:
        key = _shape_key(kut.name, call)
        tick(f"consistency {_fmt_shape(key)} R={r}")
        cr = check_verify_consistency(
            kut.fn, r, gamma, heads=int(call.num_heads), topk=int(call.topk),
            extra_topk=int(_attr(call, "extra_topk", 0)),
            extra_page_size=int(_attr(call, "extra_page_size", 64)) or 64,
            compress_ratio=_compress_ratio(call), phase=call.phase,
            seed=seed, device=dev, tolerance=kut.tolerance, ref_fn=reference_kernel)
        data["consistency"].append({"kernel": kut.name, "heads": key[2], "topk": key[3],
                                    "extra": key[4], **cr.to_json()})
        if not cr.ok:
            inconsistent.append((kut, call, cr))
        done += 1

    findings.extend(_call_findings(failures, mismatches, pad_mismatches))
    findings.extend(_consistency_findings(inconsistent))

    if long:
        data["long"] = []
        data["tiny_model"] = []
        verifies = [c for c in calls if c.phase == "verify"
                    and int(_attr(c, "extra_topk", 0)) <= 1024]
        verify = max(verifies, key=lambda c: int(_attr(c, "extra_topk", 0)), default=None)
        dcall = next((c for c in calls if c.phase == "draft"), None)
        base = verify or next((c for c in calls if c.phase == "decode"), None)
        heads = int(base.num_heads) if base is not None else 64
        extra = int(_attr(base, "extra_topk", 512)) if base is not None else 512
        for kut in kernels:
            tick(f"long: {kut.name} kernel-level generation")
            sim = simulate_long_generation(
                kut.fn, reference_kernel, max_context=max_context, gamma=gamma, heads=heads,
                draft_heads=int(dcall.num_heads) if dcall is not None else None,
                extra_topk=extra, seed=seed, device=dev, tolerance=kut.tolerance)
            data["long"].append({"kernel": kut.name, **sim.to_json()})
            if not sim.ok:
                findings.append(_long_sim_finding(kut.name, sim))
            done += 1
            tick(f"long: {kut.name} tiny-model greedy decoding")
            from dsparkctl import tiny_model

            cfg = tiny_model.TinyConfig(heads=heads, index_topk=extra or 64, seed=seed)
            report = tiny_model.run_long_model_check(
                kut.fn, reference_kernel, n_tokens=tiny_tokens, gamma=gamma or 0, config=cfg,
                device=dev, tolerance=kut.tolerance)
            data["tiny_model"].append({"kernel": kut.name, **report.to_json()})
            findings.extend(tiny_model.findings_for(kut.name, report))
            done += 1
    if progress is not None:
        progress("kernel checks done", total, total)
    return findings, data


def _call_findings(
    failures: Mapping[tuple[str, str, int, int, int], list[tuple[int, str, str]]],
    mismatches: Mapping[tuple[str, str, int, int, int], list[tuple[int, float, str]]],
    pad_mismatches: Mapping[tuple[str, str, int, int, int], list[int]],
) -> list[Finding]:
    out: list[Finding] = []
    if failures:
        lines = []
        for key, items in failures.items():
            sizes = sorted(n for n, _, _ in items)
            err = items[0][2]
            lines.append(f"{_fmt_shape(key)} num_tokens={sizes}: {err}")
        out.append(Finding(
            "smoke-capture-failed", Severity.ERROR,
            "Kernel calls that CUDA-graph capture will submit fail "
            f"({sum(len(v) for v in failures.values())} shape/size pairs); the server would die "
            "at start-up",
            CAPTURE_FIX, (SEED_000,), "\n".join(lines),
            {"shapes": [[*k, sorted(n for n, _, _ in v)] for k, v in failures.items()]}))
    if mismatches:
        lines = [f"{_fmt_shape(k)} num_tokens={sorted(n for n, _, _ in v)} max err/tol="
                 f"{max(r for _, r, _ in v):.3g}" for k, v in mismatches.items()]
        out.append(Finding(
            "smoke-kernel-mismatch", Severity.ERROR,
            "Sparse-MLA kernel output differs from the reference beyond tolerance",
            "Do not serve with this kernel: route the shapes to the bundled kernel with "
            "`dsparkctl install-kernels` (or, if the bundled kernel is the one failing, report "
            "it with this output).",
            (SEED_000,), "\n".join(lines)))
    if pad_mismatches:
        lines = [f"{_fmt_shape(k)} num_tokens={sorted(v)}" for k, v in pad_mismatches.items()]
        out.append(Finding(
            "smoke-padding-mismatch", Severity.WARNING,
            "The kernel returns wrong values on CUDA-graph padding rows (empty or length-1 rows)",
            "SGLang discards padding rows, so served text is unaffected unless NaN spreads; "
            "flashinfer-python >= 0.7.1 fixes empty rows (flashinfer #4484, #5197).",
            ("https://github.com/flashinfer-ai/flashinfer/issues/4484",), "\n".join(lines)))
    return out


def _consistency_findings(
    items: Sequence[tuple[KernelUnderTest, Any, ConsistencyResult]],
) -> list[Finding]:
    if not items:
        return []
    lines = []
    for kut, call, cr in items:
        where = ""
        if cr.first_bad:
            fb = cr.first_bad
            where = (f"; first bad row: request {fb['request']} row {fb['row_in_request']} "
                     f"(prefix {fb['prefix']}, topk_length {fb['topk_length']})")
        t1 = "" if cr.t1_vs_ref_ok is None else f"; T=1 vs reference {'ok' if cr.t1_vs_ref_ok else 'FAILS'}"
        err = f": {cr.error}" if cr.error else ""
        lines.append(f"{_fmt_shape(_shape_key(kut.name, call))} R={cr.num_requests} "
                     f"x {cr.rows_per_request} rows: batched vs one-row err/tol="
                     f"{cr.ratio:.3g}{t1}{where}{err}")
    return [Finding(
        "smoke-verify-inconsistent", Severity.ERROR,
        "Verify-sized calls disagree with the same rows evaluated one at a time: greedy "
        "speculative decoding would not match non-speculative output",
        "Do not serve speculative decoding with this kernel: route verify/draft shapes to the "
        "bundled kernel with `dsparkctl install-kernels`, or run without speculation until a "
        "fixed kernel is installed.",
        (SEED_000,), "\n".join(lines))]


def _long_sim_finding(kut: str, sim: LongSimResult) -> Finding:
    f0 = sim.failures[0] if sim.failures else None
    first = ""
    if f0 is not None:
        first = (f"first failure at step {f0.step} ({f0.phase}, contexts {list(f0.contexts)}, "
                 f"err/tol {f0.ratio:.3g}, rows {list(f0.bad_rows[:8])})")
    return Finding(
        "smoke-long-divergence", Severity.ERROR,
        f"{kut}: {sim.failed_calls} of {sim.calls} kernel calls in a simulated long DSpark "
        "generation differ from the reference",
        "Do not serve speculative decoding with this kernel; route the shapes to the bundled "
        "kernel with `dsparkctl install-kernels`.",
        (SEED_000,), first, {"long": sim.to_json()})
