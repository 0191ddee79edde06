"""Python API over the compiled ``torch.ops.dsparkctl.sparse_mla_decode`` op.

The compiled .so registers the op (schema, CUDA kernel and a Meta/fake kernel) by itself, so
a serving environment without dsparkctl can ``torch.ops.load_library(so)`` and call it. This
module adds what a Python caller wants on top: argument checks with clear messages before
anything reaches CUDA, the default ``sm_scale``, and finding or building the .so.

Output contract (documented here once):

* ``out [T, H, 512]`` bf16;
* ``lse [T, H]`` fp32, natural log, sink excluded, ``+inf`` for an empty row (FlashMLA);
* ``lse_base2_sink=True``: FlashInfer's convention instead, ``log2(exp(lse) + exp(sink))``
  (``lse * log2(e)`` without a sink); an empty row gives ``-inf`` without a sink and
  ``sink * log2(e)`` with one. ``out`` is the same in both conventions.
* NaN in rows no valid index references never reaches the output. A NaN in a KV row that a
  token references, or in its Q, makes that token's ``out`` rows NaN and its ``lse`` NaN, as in
  the reference, whatever the split count, including when every valid candidate of the token (or
  of one split of it) scores NaN: such a row is not an empty row (since v50; before it got
  ``lse`` +inf, and a split's NaN could drop out of the combine).
* Accuracy: bf16 tensor-core Q.K and P.V with fp32 accumulation; P enters the nope dims' P.V
  as fp16 hi + lo (two passes, since v52), the rope dims' as bf16 hi + lo. Up to v51 the nope
  P.V took P in one fp16 pass (11 significant bits), and small outputs made of large cancelling
  terms missed FlashMLA's ``out`` tolerance by up to ~1.6x (``bench/results/smoke_h200_v51/``);
  ``dsparkctl smoke`` on the DeepSeek-V4-Flash plan is within it since v52
  (``bench/results/kernel_h200_v52_hilo/``).
* Random calls (``dsparkctl.kernel.fuzz``, ``bench/results/kernel_fuzz_h200/``): 99.8% of plain
  ones meet FlashMLA's tolerance against the fp64 reference. The rest miss its lse floor (1e-6) by
  up to ~7e-6 where |lse| < 0.05, mostly on the sm_90a wgmma kernels: the tensor cores' fp32
  accumulation of the scores. Every call stays within what fp32 rounding of the scores can do on
  its data (``fuzz.verdict``); an fp32 torch reference misses the same way on such data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dsparkctl.kernel import layout

if TYPE_CHECKING:
    import torch

OP_NAMESPACE = "dsparkctl"
OP_NAME = "sparse_mla_decode"
ENV_SO = "DSPARKCTL_KERNEL_SO"
# Layout configurations accepted by the testing op ``sparse_mla_decode_cfg``; SMALL_SMEM_16 is
# the small-smem layout with 16 heads per CTA at any head count (what AUTO takes for
# latency-bound calls such as T = 1); LARGE_SMEM_16 / LARGE_SMEM_32 the large-smem layout
# (64-candidate tiles) with 16 / 32 heads per CTA at any head count; LARGE_SMEM_WS the
# large-smem layout with 64 heads per CTA run by the warp-specialized kernel where the GPU has
# it (Hopper, sm_90a build; elsewhere the plain large-smem kernel); LARGE_SMEM_WS_DIMS that with two
# CTAs per row block, one per half of the output dims (v66's halves), where the call is unsplit
# (a build with -DDSPARKCTL_WS_DIMS_PARTIALS=1: at any split count).
CONFIG_AUTO, CONFIG_LARGE_SMEM, CONFIG_SMALL_SMEM, CONFIG_SMALL_SMEM_16, CONFIG_LARGE_SMEM_16, CONFIG_LARGE_SMEM_32 = (
    0, 1, 2, 3, 4, 5
)
CONFIG_LARGE_SMEM_WS = 6
CONFIG_LARGE_SMEM_WS_DIMS = 7
CONFIGS = (
    CONFIG_AUTO,
    CONFIG_LARGE_SMEM,
    CONFIG_SMALL_SMEM,
    CONFIG_SMALL_SMEM_16,
    CONFIG_LARGE_SMEM_16,
    CONFIG_LARGE_SMEM_32,
    CONFIG_LARGE_SMEM_WS,
    CONFIG_LARGE_SMEM_WS_DIMS,
)
_CONFIG_HELP = (
    "config must be 0 (auto), 1 (large smem), 2 (small smem), 3 (small smem, 16 heads per CTA), "
    "4 (large smem, 16 heads per CTA), 5 (large smem, 32 heads per CTA), 6 (large smem, warp-specialized) or "
    "7 (warp-specialized, two CTAs per row block)"
)
MAX_HEADS = 128
MAX_SPLITS = 64

_loaded_so: Path | None = None


def op_is_registered() -> bool:
    """True once some .so has registered ``torch.ops.dsparkctl.sparse_mla_decode``."""
    import torch

    try:
        getattr(getattr(torch.ops, OP_NAMESPACE), OP_NAME)
    except (AttributeError, RuntimeError):
        return False
    return True


def load(so_path: str | os.PathLike[str] | None = None) -> Path | None:
    """Load the kernel library: ``so_path``, else ``$DSPARKCTL_KERNEL_SO``, else build one.

    The build is the one ``dsparkctl install-kernels`` makes (``~/.cache/dsparkctl/builds/<key>``
    and ``install/<key>``, keyed by dsparkctl version, source hash, arch, torch and CUDA), so a
    second call, process or command reuses it. Loading twice is a no-op: a
    process can hold only one registration of the op namespace. Returns the loaded path, or
    None when the op was already registered by someone else.
    """
    global _loaded_so
    import torch

    if _loaded_so is not None:
        return _loaded_so
    if op_is_registered():
        return None
    path: Path
    if so_path is not None:
        path = Path(so_path)
    elif os.environ.get(ENV_SO):
        path = Path(os.environ[ENV_SO])
    else:
        from dsparkctl.kernel import build

        path = build.build_cached()
    if not path.is_file():
        raise FileNotFoundError(
            f"kernel library {path} does not exist; build it with `dsparkctl install-kernels` "
            f"(or dsparkctl.kernel.build.build_extension()) or unset {ENV_SO}"
        )
    torch.ops.load_library(str(path))
    _loaded_so = path
    return path


def _op():
    import torch

    if not op_is_registered():
        load()
    return getattr(getattr(torch.ops, OP_NAMESPACE), OP_NAME)


def _check_index_tensor(
    name: str, idx: torch.Tensor, tokens: int
) -> None:
    import torch

    if not isinstance(idx, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(idx).__name__}")
    if idx.dtype != torch.int32:
        raise TypeError(f"{name} must be int32, got {idx.dtype}; convert with .to(torch.int32)")
    if idx.ndim == 3 and idx.shape[1] != 1:
        raise ValueError(f"{name} must be [T, topk] or [T, 1, topk], got {tuple(idx.shape)}")
    if idx.ndim not in (2, 3):
        raise ValueError(f"{name} must be [T, topk] or [T, 1, topk], got {tuple(idx.shape)}")
    if idx.shape[0] != tokens:
        raise ValueError(f"{name} has {idx.shape[0]} rows but q has T={tokens} tokens")
    if idx.shape[-1] < 1:
        raise ValueError(f"{name} must have topk >= 1 columns, got {idx.shape[-1]}")
    if idx.stride(-1) != 1:
        raise ValueError(f"{name} must have a contiguous last dim (stride 1); call .contiguous()")


def _check_length(name: str, length: torch.Tensor | None, tokens: int) -> None:
    import torch

    if length is None:
        return
    if not isinstance(length, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(length).__name__}")
    if length.dtype != torch.int32:
        raise TypeError(f"{name} must be int32, got {length.dtype}")
    if length.ndim != 1 or length.shape[0] != tokens:
        raise ValueError(f"{name} must be [T]=[{tokens}], got {tuple(length.shape)}")


def _check_cache(name: str, cache: torch.Tensor) -> None:
    import torch

    if not isinstance(cache, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(cache).__name__}")
    if cache.dtype not in (torch.uint8, torch.float8_e4m3fn):
        raise TypeError(
            f"{name} must be uint8 or float8_e4m3fn (raw MODEL1 page bytes), got {cache.dtype}"
        )
    if cache.ndim < 2 or cache.shape[0] < 1 or cache.shape[1] < 1:
        raise ValueError(
            f"{name} must be a (num_pages, page_block_size, ...) page view, got {tuple(cache.shape)}"
        )
    stride = layout.page_stride_bytes(cache)
    need = layout.logical_page_bytes(int(cache.shape[1]))
    if stride < need:
        raise ValueError(
            f"{name}: page stride {stride} bytes < {need} bytes needed by {cache.shape[1]} "
            "tokens per page (576 data + 8 scale bytes each); pass the page buffer view, "
            "not a compacted copy"
        )
    # A fake tensor (torch.compile's tracing, FakeTensorMode) has no address: the op's CUDA
    # kernel checks the real one at run time.
    if stride % 8 != 0 or (not _is_fake(cache) and cache.data_ptr() % 8 != 0):
        raise ValueError(
            f"{name}: page stride ({stride}) and base address must be multiples of 8 bytes"
        )


def _is_fake(t: torch.Tensor) -> bool:
    """FakeTensorMode's tensors outside Dynamo (torch.export, make_fx): Dynamo never gets
    here (``sparse_mla_decode`` skips validation while compiling)."""
    from torch._subclasses.fake_tensor import is_fake

    return bool(is_fake(t))


def validate(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    topk_length: torch.Tensor | None = None,
    attn_sink: torch.Tensor | None = None,
    extra_kv_cache: torch.Tensor | None = None,
    extra_indices: torch.Tensor | None = None,
    extra_topk_length: torch.Tensor | None = None,
) -> None:
    """Raise TypeError/ValueError naming the bad argument and the fix; device checked last."""
    import torch

    if not isinstance(q, torch.Tensor):
        raise TypeError(f"q must be a torch.Tensor, got {type(q).__name__}")
    if q.dtype != torch.bfloat16:
        raise TypeError(f"q must be bfloat16, got {q.dtype}")
    if q.ndim != 3 or q.shape[2] != layout.HEAD_DIM:
        raise ValueError(f"q must be [T, H, {layout.HEAD_DIM}], got {tuple(q.shape)}")
    tokens, heads = int(q.shape[0]), int(q.shape[1])
    if not 1 <= heads <= MAX_HEADS:
        raise ValueError(f"q has {heads} heads; the kernel serves 1..{MAX_HEADS}")
    if q.stride(2) != 1:
        raise ValueError("q must have a contiguous last dim (stride 1); call .contiguous()")
    _check_cache("kv_cache", kv_cache)
    _check_index_tensor("indices", indices, tokens)
    _check_length("topk_length", topk_length, tokens)
    if (extra_kv_cache is None) != (extra_indices is None):
        raise ValueError("extra_kv_cache and extra_indices must be given together")
    if extra_topk_length is not None and extra_indices is None:
        raise ValueError("extra_topk_length given without extra_kv_cache / extra_indices")
    if extra_kv_cache is not None and extra_indices is not None:
        _check_cache("extra_kv_cache", extra_kv_cache)
        _check_index_tensor("extra_indices", extra_indices, tokens)
        _check_length("extra_topk_length", extra_topk_length, tokens)
    if attn_sink is not None:
        if not isinstance(attn_sink, torch.Tensor):
            raise TypeError(f"attn_sink must be a torch.Tensor or None, got {type(attn_sink).__name__}")
        if attn_sink.dtype != torch.float32:
            raise TypeError(f"attn_sink must be float32, got {attn_sink.dtype}")
        if attn_sink.ndim != 1 or attn_sink.shape[0] != heads:
            raise ValueError(f"attn_sink must be [H]=[{heads}], got {tuple(attn_sink.shape)}")
    tensors = {
        "q": q,
        "kv_cache": kv_cache,
        "indices": indices,
        "topk_length": topk_length,
        "attn_sink": attn_sink,
        "extra_kv_cache": extra_kv_cache,
        "extra_indices": extra_indices,
        "extra_topk_length": extra_topk_length,
    }
    if q.device.type != "cuda":
        raise ValueError(f"q must be on a CUDA device, got {q.device}; move inputs with .cuda()")
    for name, t in tensors.items():
        if t is not None and t.device != q.device:
            raise ValueError(f"{name} is on {t.device} but q is on {q.device}; put all on one GPU")


def sparse_mla_decode(
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
    lse_base2_sink: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sparse-MLA decode on the MODEL1 cache: ``(out [T,H,512] bf16, lse [T,H] fp32)``.

    See the module docstring for the lse conventions and ``reference`` for the math.
    Under ``torch.compile`` the op's own checks stand in for ``validate`` (its Meta kernel at
    trace time, the CUDA kernel at run time): Dynamo cannot trace the Python-side checks and
    the library loader, and a graph break here would fail ``fullgraph=True``; the op must be
    loaded (one eager call, or ``load()``) before tracing.
    """
    import torch

    if torch.compiler.is_compiling():
        op = getattr(getattr(torch.ops, OP_NAMESPACE), OP_NAME)
    else:
        validate(
            q,
            kv_cache,
            indices,
            topk_length=topk_length,
            attn_sink=attn_sink,
            extra_kv_cache=extra_kv_cache,
            extra_indices=extra_indices,
            extra_topk_length=extra_topk_length,
        )
        op = _op()
    scale = float(sm_scale) if sm_scale is not None else layout.HEAD_DIM**-0.5
    return op(
        q,
        kv_cache,
        indices,
        topk_length,
        attn_sink,
        extra_kv_cache,
        extra_indices,
        extra_topk_length,
        scale,
        bool(lse_base2_sink),
    )


def _check_config(config: int, num_splits: int) -> None:
    if config not in CONFIGS:
        raise ValueError(f"{_CONFIG_HELP}, got {config}")
    if not 0 <= num_splits <= MAX_SPLITS:
        raise ValueError(f"num_splits must be in 0..{MAX_SPLITS}, got {num_splits}")


def plan_info(
    tokens: int,
    heads: int,
    topk: int,
    extra_topk: int = 0,
    *,
    config: int = CONFIG_AUTO,
    num_splits: int = 0,
    device: int | None = None,
) -> dict[str, int | bool]:
    """The launch plan the kernel library picks for a call of this shape on a CUDA device.

    Tests use it to know which kernel a case ran (the warp-specialized one is chosen by the
    plan, not by the caller); the bench records it per row. Needs the library and a GPU.
    """
    import torch

    _check_config(config, num_splits)
    if not 1 <= heads <= MAX_HEADS or topk < 1 or extra_topk < 0 or tokens < 0:
        raise ValueError(
            f"need 1 <= heads <= {MAX_HEADS}, topk >= 1, extra_topk >= 0, tokens >= 0; "
            f"got heads={heads}, topk={topk}, extra_topk={extra_topk}, tokens={tokens}"
        )
    _op()
    dev = torch.cuda.current_device() if device is None else int(device)
    r = torch.ops.dsparkctl.sparse_mla_decode_plan(dev, tokens, heads, topk, extra_topk, config, num_splits)
    keys = ("config", "heads_per_cta", "tile_n", "num_splits", "one_cta_per_sm", "cluster", "warp_specialized", "dims_split")
    values = list(r)
    if len(values) == len(keys) - 1:  # a library built before dims_split (an A/B's old side): one CTA per row block
        values.append(1)
    return {k: (bool(v) if k in ("one_cta_per_sm", "warp_specialized") else int(v)) for k, v in zip(keys, values, strict=True)}


def sparse_mla_decode_cfg(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    config: int = CONFIG_AUTO,
    num_splits: int = 0,
    topk_length: torch.Tensor | None = None,
    attn_sink: torch.Tensor | None = None,
    extra_kv_cache: torch.Tensor | None = None,
    extra_indices: torch.Tensor | None = None,
    extra_topk_length: torch.Tensor | None = None,
    sm_scale: float | None = None,
    lse_base2_sink: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same op with the tile configuration and split count pinned (0 = automatic).

    For tests and benchmarks: it lets the H200 exercise the small-shared-memory layout that
    SM120 GPUs use, and fixes the split count so results can be compared bit for bit.
    """
    import torch

    _check_config(config, num_splits)
    validate(
        q,
        kv_cache,
        indices,
        topk_length=topk_length,
        attn_sink=attn_sink,
        extra_kv_cache=extra_kv_cache,
        extra_indices=extra_indices,
        extra_topk_length=extra_topk_length,
    )
    _op()  # make sure the library is loaded
    scale = float(sm_scale) if sm_scale is not None else layout.HEAD_DIM**-0.5
    return torch.ops.dsparkctl.sparse_mla_decode_cfg(
        q,
        kv_cache,
        indices,
        topk_length,
        attn_sink,
        extra_kv_cache,
        extra_indices,
        extra_topk_length,
        scale,
        bool(lse_base2_sink),
        int(config),
        int(num_splits),
    )
