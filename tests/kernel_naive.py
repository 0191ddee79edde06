"""An independent, deliberately naive float64 model of the MODEL1 cache and sparse-MLA decode.

It decodes bytes by hand (its own FP8-E4M3 and UE8M0 decoders, its own page arithmetic) and
loops over tokens, heads and candidates in plain Python, sharing no code with
``dsparkctl.kernel.layout`` / ``reference``, so agreement between the two means something.
"""

from __future__ import annotations

import math
import struct


def e4m3_to_float(b: int) -> float:
    sign = -1.0 if b & 0x80 else 1.0
    exp = (b >> 3) & 0xF
    man = b & 0x7
    if exp == 0xF and man == 0x7:
        return math.nan
    if exp == 0:
        return sign * (man / 8.0) * 2.0**-6
    return sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7)


def raw_bytes(cache) -> tuple[bytes, int, int, int]:
    """(whole storage bytes, byte offset of page 0, page stride, pbs)."""
    storage = cache.untyped_storage()
    data = bytes(storage.cpu())
    off = cache.storage_offset() * cache.element_size()
    return data, off, cache.stride(0) * cache.element_size(), int(cache.shape[1])


def decode_slot(raw: tuple[bytes, int, int, int], slot: int) -> list[float]:
    data, off, stride, pbs = raw
    page, row = divmod(slot, pbs)
    base = off + page * stride
    row_bytes = data[base + row * 576 : base + row * 576 + 576]
    scales = data[base + pbs * 576 + row * 8 : base + pbs * 576 + row * 8 + 7]
    vals = [e4m3_to_float(row_bytes[i]) * 2.0 ** (scales[i // 64] - 127) for i in range(448)]
    for i in range(64):
        (bits,) = struct.unpack("<H", row_bytes[448 + 2 * i : 450 + 2 * i])
        (f,) = struct.unpack("<f", struct.pack("<I", bits << 16))
        vals.append(f)
    return vals


def naive_decode(q, caches, sm_scale: float, sink=None, base2_sink: bool = False):
    """caches: list of (cache, indices [T][k] list, lengths list|None). Returns (out, lse) lists."""
    t_n, h_n = len(q), len(q[0])
    raws = [(raw_bytes(c), idx, ln, int(c.shape[0]) * int(c.shape[1])) for c, idx, ln in caches]
    out, lse_all = [], []
    for t in range(t_n):
        rows = []
        for raw, idx, ln, nslots in raws:
            k = len(idx[t])
            length = k if ln is None else max(0, min(k, ln[t]))
            for j in range(k):
                s = idx[t][j]
                if j < length and 0 <= s < nslots:
                    rows.append(decode_slot(raw, s))
        o_t, l_t = [], []
        for h in range(h_n):
            scores = [sum(q[t][h][d] * r[d] for d in range(512)) * sm_scale for r in rows]
            if not scores:
                o_t.append([0.0] * 512)
                if base2_sink:
                    l_t.append(-math.inf if sink is None else sink[h] / math.log(2.0))
                else:
                    l_t.append(math.inf)
                continue
            m = max(scores)
            z = sum(math.exp(s - m) for s in scores)
            lse = m + math.log(z)
            o = [sum(math.exp(s - lse) * r[d] for s, r in zip(scores, rows, strict=True)) for d in range(512)]
            if sink is not None:
                g = 1.0 / (1.0 + math.exp(sink[h] - lse))
                o = [x * g for x in o]
            if base2_sink:
                if sink is not None:
                    mm = max(lse, sink[h])
                    lse = mm + math.log(math.exp(lse - mm) + math.exp(sink[h] - mm))
                lse = lse / math.log(2.0)
            o_t.append(o)
            l_t.append(lse)
        out.append(o_t)
        lse_all.append(l_t)
    return out, lse_all
