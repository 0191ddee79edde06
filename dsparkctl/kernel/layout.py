"""The DeepSeek-V4 "MODEL1" paged FP8 KV-cache layout (FlashMLA / FlashInfer SM120 / SGLang).

Per token: 448 FP8-E4M3 "nope" values then 64 bf16 "rope" values = 576 data bytes. Per page
of ``pbs`` tokens the data block (``pbs * 576`` bytes) is followed by a footer of ``pbs * 8``
bytes: for each token 7 UE8M0 scale bytes (one per 64 nope values, value ``2**(byte-127)``)
and one pad byte. Slot id ``s`` lives in page ``s // pbs``, row ``s % pbs``. The page stride
may be larger than ``pbs * 584`` (SGLang pads pages to a multiple of 576 bytes).

The tensor callers pass is SGLang's non-contiguous ``(num_pages, pbs, 1, 584)`` view of the
raw page buffer, whose row stride (584) does NOT describe where a row's bytes are: only
``shape[0]``, ``shape[1]`` and ``stride(0)`` carry information. Helpers here keep to that.

torch is imported inside functions so that importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

NOPE_DIM = 448
ROPE_DIM = 64
HEAD_DIM = NOPE_DIM + ROPE_DIM  # 512: d_qk == d_v
QUANT_GROUP = 64
NUM_SCALES = NOPE_DIM // QUANT_GROUP  # 7
DATA_BYTES = NOPE_DIM + 2 * ROPE_DIM  # 576
SCALE_BYTES = NUM_SCALES + 1  # 8 (7 scales + 1 pad)
TOKEN_BYTES = DATA_BYTES + SCALE_BYTES  # 584
FP8_E4M3_MAX = 448.0


def logical_page_bytes(page_block_size: int) -> int:
    """Bytes a page really uses; the page stride may be larger but never smaller."""
    return page_block_size * TOKEN_BYTES


def sglang_page_bytes(page_block_size: int) -> int:
    """SGLang's padded page stride: the logical page rounded up to a multiple of 576 bytes."""
    return -(-logical_page_bytes(page_block_size) // DATA_BYTES) * DATA_BYTES


def page_stride_bytes(cache: torch.Tensor) -> int:
    """Byte distance between pages of a cache view (stride(0) in elements x element size)."""
    return int(cache.stride(0)) * cache.element_size()


def num_slots(cache: torch.Tensor) -> int:
    """Addressable slot ids: ``num_pages * page_block_size``; larger ids are invalid."""
    return int(cache.shape[0]) * int(cache.shape[1])


def raw_pages(cache: torch.Tensor) -> torch.Tensor:
    """A ``(num_pages, pbs * 584)`` uint8 view of the bytes each page really uses.

    Built with ``as_strided`` over the cache's storage, so padding between pages is skipped
    and nothing is copied.
    """
    import torch

    pbs = int(cache.shape[1])
    flat = cache.view(torch.uint8) if cache.dtype != torch.uint8 else cache
    stride = page_stride_bytes(cache)
    if stride < logical_page_bytes(pbs):
        raise ValueError(
            f"kv cache page stride {stride} bytes is smaller than one page of {pbs} tokens "
            f"({logical_page_bytes(pbs)} bytes): the tensor is not a MODEL1 page buffer view"
        )
    return flat.as_strided(
        (int(cache.shape[0]), logical_page_bytes(pbs)),
        (stride, 1),
        flat.storage_offset(),
    )


def ue8m0_to_float(scale_bytes: torch.Tensor) -> torch.Tensor:
    """UE8M0 byte -> float32 ``2**(byte-127)``; 255 is NaN (OCP MX E8M0), as the kernel decodes it.

    The quantizer never writes 255 (exponents are clamped to [-127, 127]); a cache that holds
    one gives NaN in every row that references the candidate, here and in the kernel.
    """
    import torch

    b = scale_bytes.to(torch.float32)
    return torch.where(b == 255.0, torch.full_like(b, float("nan")), torch.exp2(b - 127.0))


def quantize_kv(
    kv: torch.Tensor, page_block_size: int, page_stride_pad: int = 0
) -> torch.Tensor:
    """Pack ``kv [num_tokens, 512]`` into a MODEL1 cache view ``(num_pages, pbs, 1, 584)``.

    Token ``i`` goes to slot ``i``. Nope values get one power-of-two scale per 64 values, the
    smallest with ``|x| / scale <= 448`` so the FP8 cast never saturates; rope values are
    stored as bf16. Slots past ``num_tokens`` in the last page are zero. ``page_stride_pad``
    extra bytes per page mimic padded page strides (SGLang rounds to 576).
    """
    import torch

    if kv.ndim != 2 or kv.shape[1] != HEAD_DIM:
        raise ValueError(f"kv must be [num_tokens, {HEAD_DIM}], got {tuple(kv.shape)}")
    if page_block_size < 1:
        raise ValueError(f"page_block_size must be >= 1, got {page_block_size}")
    if page_stride_pad < 0:
        raise ValueError(f"page_stride_pad must be >= 0, got {page_stride_pad}")
    n = int(kv.shape[0])
    pbs = int(page_block_size)
    num_pages = max(1, -(-n // pbs))
    stride = logical_page_bytes(pbs) + page_stride_pad
    dev = kv.device
    kvf = kv.to(torch.float32)

    nope = kvf[:, :NOPE_DIM].reshape(n, NUM_SCALES, QUANT_GROUP)
    amax = nope.abs().amax(dim=-1)  # [n, 7]
    # exponent e with amax / 2**e <= 448; amax == 0 -> e = 0 (scale 1)
    safe = torch.where(amax > 0, amax / FP8_E4M3_MAX, torch.ones_like(amax))
    exp = torch.ceil(torch.log2(safe))
    exp = torch.where(amax > 0, exp, torch.zeros_like(exp)).clamp(-127, 127)
    scale = torch.exp2(exp)
    q8 = (nope / scale.unsqueeze(-1)).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX)
    q8 = q8.to(torch.float8_e4m3fn).view(torch.uint8).reshape(n, NOPE_DIM)
    rope = kvf[:, NOPE_DIM:].to(torch.bfloat16).contiguous().view(torch.uint8)  # [n, 128]
    scale_b = (exp + 127).to(torch.uint8)  # [n, 7]

    buf = torch.zeros(num_pages * stride, dtype=torch.uint8, device=dev)
    pages = buf.view(num_pages, stride)
    slots = torch.arange(n, device=dev)
    page = slots // pbs
    row = slots % pbs
    data_off = (row * DATA_BYTES).unsqueeze(-1)
    ar_nope = torch.arange(NOPE_DIM, device=dev)
    ar_rope = torch.arange(2 * ROPE_DIM, device=dev) + NOPE_DIM
    ar_scale = torch.arange(NUM_SCALES, device=dev)
    pg = page.unsqueeze(-1)
    pages[pg, data_off + ar_nope] = q8
    pages[pg, data_off + ar_rope] = rope
    pages[pg, pbs * DATA_BYTES + (row * SCALE_BYTES).unsqueeze(-1) + ar_scale] = scale_b
    return buf.as_strided((num_pages, pbs, 1, TOKEN_BYTES), (stride, TOKEN_BYTES, TOKEN_BYTES, 1))


def gather_dequant(cache: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """Dequantized float32 rows ``[..., 512]`` for in-range slot ids (caller masks the rest).

    Every id must satisfy ``0 <= id < num_slots(cache)``; out-of-range ids are a caller bug
    here (the reference clamps and masks before calling).
    """
    import torch

    pbs = int(cache.shape[1])
    pages = raw_pages(cache)
    dev = pages.device
    flat = slots.reshape(-1).to(device=dev, dtype=torch.long)
    page = (flat // pbs).unsqueeze(-1)
    row = flat % pbs
    data_off = (row * DATA_BYTES).unsqueeze(-1)
    nope_b = pages[page, data_off + torch.arange(NOPE_DIM, device=dev)]
    rope_b = pages[page, data_off + NOPE_DIM + torch.arange(2 * ROPE_DIM, device=dev)]
    scale_b = pages[
        page,
        pbs * DATA_BYTES + (row * SCALE_BYTES).unsqueeze(-1) + torch.arange(NUM_SCALES, device=dev),
    ]
    nope = nope_b.view(torch.float8_e4m3fn).to(torch.float32).reshape(-1, NUM_SCALES, QUANT_GROUP)
    nope = (nope * ue8m0_to_float(scale_b).unsqueeze(-1)).reshape(-1, NOPE_DIM)
    rope = rope_b.contiguous().view(torch.bfloat16).to(torch.float32)
    return torch.cat([nope, rope], dim=-1).reshape(*slots.shape, HEAD_DIM)


def dequantize_kv(cache: torch.Tensor) -> torch.Tensor:
    """Every slot of a MODEL1 cache as float32 ``[num_pages * pbs, 512]`` (slot order)."""
    import torch

    return gather_dequant(cache, torch.arange(num_slots(cache), device=cache.device))


def fill_unused_slots(cache: torch.Tensor, used_slots: int, byte: int = 0xFF) -> None:
    """Overwrite every slot >= ``used_slots`` (data and scale bytes) with ``byte`` in place.

    0xFF is an FP8-E4M3 NaN and a UE8M0 NaN/inf scale: tests use it to prove that KV rows a
    call does not reference can never reach the output.
    """
    import torch

    pages = raw_pages(cache)
    pbs = int(cache.shape[1])
    dev = pages.device
    slots = torch.arange(used_slots, num_slots(cache), device=dev)
    if slots.numel() == 0:
        return
    page = (slots // pbs).unsqueeze(-1)
    row = (slots % pbs).unsqueeze(-1)
    pages[page, row * DATA_BYTES + torch.arange(DATA_BYTES, device=dev)] = byte
    pages[page, pbs * DATA_BYTES + row * SCALE_BYTES + torch.arange(SCALE_BYTES, device=dev)] = byte
