"""dsparkctl's router for SGLang's SM120 sparse-MLA entry point.

Installed into the serving environment's site-packages by
``dsparkctl patches apply`` / ``dsparkctl install-kernels`` and removed by
``dsparkctl patches revert``. SGLang's ``flash_mla_with_kvcache_sm120`` calls
``maybe_route(kwargs)`` first; a non-None answer is the result of the call.

It must work where dsparkctl is not installed (a serving venv or container),
so it depends on nothing but the standard library, and on torch only when a
call is actually routed. Its settings are in ``_dsparkctl_route.json`` next to
it, written at apply time:

- ``mode``: ``missing`` routes only the DSV4 decode shapes the installed
  FlashInfer has no decode kernel for; ``all`` routes every decode-sized DSV4
  call; ``off`` routes nothing (prefill-sized calls: below). The environment variable ``DSPARKCTL_ROUTE``
  (off|missing|all) overrides it for one process.
- ``manifest``: the bundled kernels' install manifest, naming the library
  that registers ``torch.ops.dsparkctl.sparse_mla_decode``.
- ``flashinfer``: what the installed FlashInfer decode kernel serves
  (``kind`` pairs|envelope|none|unknown) and, under ``prefill``, what its
  prefill dispatcher serves (``null``: not known, so nothing is assumed served).

Calls of more than ``max_tokens`` (64) tokens go to FlashInfer's prefill
dispatcher, which rejects shapes its tables lack (``Unsupported sparse-MLA
prefill configuration``: DSpark's topk 192 before 0.6.18, an extra cache with
topk != 128 before 0.7.0). In every mode but ``off`` those shapes go to the
bundled kernel too, and so do the calls a release is known to answer wrongly
(``prefill.defects``: ``dual-reads-past-length``, 0.6.18's dual-cache prefill
reading index lanes past topk_length, flashinfer #5095); the other
prefill-sized calls stay with FlashInfer, in ``all`` mode as well (its prefill
kernel is built for long chunks). A settings file written before dsparkctl
knew this (no ``prefill`` key) routes no prefill-sized call, as then.

A shape FlashInfer cannot serve is never handed back to SGLang when the
bundled kernel is missing: that path dies in CUDA-graph capture or, with
padding workarounds, corrupts text. It raises instead, naming the fix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

CONFIG_PATH = Path(__file__).with_name("_dsparkctl_route.json")
CONFIG_SCHEMA = 1
MODES = ("off", "missing", "all")

# DeepSeek-V4 sparse MLA (FlashMLA "MODEL1" cache): d_qk = d_v = 512 and
# 448 fp8 + 64 bf16 + 8 scale bytes = 584 bytes per token.
DSV4_D_QK = 512
DSV4_D_V = 512
DSV4_BYTES_PER_TOKEN = 584
DECODE_MAX_TOKENS = 64
# flashinfer_tables.DUAL_READS_PAST_LENGTH (a test keeps the two equal)
DUAL_READS_PAST_LENGTH = "dual-reads-past-length"
# torch.ops.<namespace>.<name>, registered by the bundled kernel library.
OP_NAMESPACE = "dsparkctl"
OP_NAME = "sparse_mla_decode"

logger = logging.getLogger("dsparkctl.route")


class RouteError(RuntimeError):
    """The router cannot serve a call it must serve (or its settings are broken)."""


class RouteConfig:
    """The parsed ``_dsparkctl_route.json``."""

    def __init__(self, obj: dict[str, Any], source: Path) -> None:
        if not isinstance(obj, dict) or obj.get("schema") != CONFIG_SCHEMA:
            raise RouteError(f"{source}: not a dsparkctl route config of schema {CONFIG_SCHEMA}")
        mode = obj.get("mode")
        if mode not in MODES:
            raise RouteError(f"{source}: mode {mode!r} is not one of {MODES}")
        self.source = source
        self.mode: str = mode
        try:  # a hand-edited value must name this file, not surface as a bare TypeError
            self.manifest: Path | None = Path(obj["manifest"]) if obj.get("manifest") else None
            self.max_tokens = int(obj.get("max_tokens", DECODE_MAX_TOKENS))
            fi = obj.get("flashinfer") or {"kind": "none"}
            self.fi_version: str | None = fi.get("version")
            self.fi_kind: str = fi.get("kind", "unknown")
            self.fi_pairs = frozenset((int(h), int(k)) for h, k in fi.get("pairs") or ())
            self.fi_max_heads = int(fi.get("max_heads", 128))
            self.fi_min_topk = int(fi.get("min_topk", 1))
            # "legacy": settings from before prefill routing (route no prefill-sized call);
            # None: FlashInfer's prefill coverage is not known (it serves nothing for sure).
            self.fi_prefill: dict[str, Any] | str | None = (
                _prefill_coverage(fi["prefill"]) if "prefill" in fi else "legacy")
        except (TypeError, ValueError, AttributeError) as exc:
            raise RouteError(f"{source}: a malformed value ({type(exc).__name__}: {exc}); "
                             f"run `dsparkctl patches apply` again to rewrite it") from None
        if self.fi_kind not in ("pairs", "envelope", "none", "unknown"):
            raise RouteError(f"{source}: flashinfer.kind {self.fi_kind!r} is not understood")

    def flashinfer_serves(self, num_heads: int, topk: int) -> bool:
        """Whether the installed FlashInfer has a decode kernel for this shape."""
        if self.fi_kind == "pairs":
            return (num_heads, topk) in self.fi_pairs
        if self.fi_kind == "envelope":
            return 1 <= num_heads <= self.fi_max_heads and topk >= self.fi_min_topk
        return False

    def prefill_serves(self, num_heads: int, topk: int, extra_topk: int = 0,
                       extra_page_size: int = 64) -> bool:
        """Whether FlashInfer's prefill dispatcher takes this shape (same rule as
        dsparkctl's ``PrefillSupport.serves``; a test keeps the two equal)."""
        cov = self.fi_prefill
        if cov == "legacy":
            return True
        if not isinstance(cov, dict):
            return False
        heads = cov["pad_heads_to"].get(num_heads, num_heads)
        if cov["single_heads"] and heads not in cov["single_heads"]:
            return False
        if extra_topk > 0 and cov["dual_extra_page_sizes"] and (
                extra_page_size not in cov["dual_extra_page_sizes"]):
            return False
        if cov["any_topk_multiple"]:
            return 1 <= num_heads <= 128 and topk % cov["any_topk_multiple"] == 0
        if not cov["single_heads"]:
            return False
        if extra_topk > 0:
            return topk in cov["dual_topks"]
        return topk in cov["single_topks"]

    def routes(self, num_heads: int, topk: int, backend: str = "flashinfer",
               mode: str | None = None) -> bool:
        """The decision for a decode-sized call (at most ``max_tokens`` tokens)."""
        mode = mode or self.mode
        if mode == "all":
            return True
        if mode == "off":
            return False
        # SGLang's triton / torch backends serve every shape; only its
        # FlashInfer path has holes.
        return backend == "flashinfer" and not self.flashinfer_serves(num_heads, topk)

    def prefill_defective(self, extra_topk: int) -> bool:
        """Whether FlashInfer's prefill path takes such a call and answers it wrongly."""
        cov = self.fi_prefill
        return isinstance(cov, dict) and extra_topk > 0 and (
            DUAL_READS_PAST_LENGTH in cov["defects"])

    def routes_call(self, num_tokens: int, num_heads: int, topk: int, extra_topk: int = 0,
                    extra_page_size: int = 64, backend: str = "flashinfer",
                    mode: str | None = None) -> bool:
        """The decision for any call: decode-sized ones by ``routes``; prefill-sized ones
        only where FlashInfer's prefill dispatcher would reject them or answer them wrongly
        (any mode but off)."""
        mode = mode or self.mode
        if num_tokens <= self.max_tokens or mode == "off":
            return self.routes(num_heads, topk, backend, mode)
        return backend == "flashinfer" and (
            not self.prefill_serves(num_heads, topk, extra_topk, extra_page_size)
            or self.prefill_defective(extra_topk))

    def flashinfer_serves_call(self, num_tokens: int, num_heads: int, topk: int,
                               extra_topk: int = 0, extra_page_size: int = 64) -> bool:
        """Whether FlashInfer answers this call correctly (a defective path does not count:
        such a call is never handed back)."""
        if num_tokens <= self.max_tokens:
            return self.flashinfer_serves(num_heads, topk)
        return (self.prefill_serves(num_heads, topk, extra_topk, extra_page_size)
                and not self.prefill_defective(extra_topk))


def _prefill_coverage(obj: Any) -> dict[str, Any] | None:
    """``flashinfer.prefill`` as sets (raises TypeError / ValueError / AttributeError on a
    malformed value, which ``RouteConfig`` turns into a RouteError naming the file)."""
    if obj is None:
        return None
    ints = ("single_heads", "single_topks", "dual_topks", "dual_extra_page_sizes")
    cov: dict[str, Any] = {k: frozenset(int(v) for v in obj.get(k) or ()) for k in ints}
    cov["pad_heads_to"] = {int(a): int(b) for a, b in (obj.get("pad_heads_to") or {}).items()}
    multiple = obj.get("any_topk_multiple")
    cov["any_topk_multiple"] = int(multiple) if multiple else None
    defects = obj.get("defects") or ()
    if isinstance(defects, str):
        raise ValueError(f"prefill.defects must be a list, got the string {defects!r}")
    cov["defects"] = frozenset(str(d) for d in defects)
    return cov


def load_config(path: Path = CONFIG_PATH) -> RouteConfig:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RouteError(f"{path} is missing: the dsparkctl routing patch is incomplete; "
                         f"run `dsparkctl patches apply` again (or `dsparkctl patches revert`)"
                         ) from None
    except (OSError, ValueError) as exc:
        raise RouteError(f"{path}: {exc}") from exc
    return RouteConfig(obj, path)


def library_from_manifest(manifest: Path) -> tuple[Path, str | None]:
    """The kernel library a manifest names, and its sha256 when the manifest has one.

    Accepted manifest shapes: ``{"library": "x.so", "library_sha256": ...}``
    or ``{"files": [{"path": "x.so", "sha256": ...}, ...]}`` (also plain
    strings); relative paths are relative to the manifest's folder.
    """
    try:
        obj = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RouteError(f"kernel manifest {manifest} does not exist") from None
    except (OSError, ValueError) as exc:
        raise RouteError(f"kernel manifest {manifest}: {exc}") from exc
    if not isinstance(obj, dict):
        raise RouteError(f"kernel manifest {manifest}: not a JSON object; run "
                         f"`dsparkctl install-kernels` again")
    lib: str | None = None
    sha: str | None = None
    if isinstance(obj.get("library"), str):
        lib, sha = obj["library"], obj.get("library_sha256")
    else:
        for entry in obj.get("files") or ():
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str) and path.endswith(".so"):
                lib = path
                sha = entry.get("sha256") if isinstance(entry, dict) else None
                break
    if lib is None:
        raise RouteError(f"kernel manifest {manifest} names no kernel library (.so)")
    p = Path(lib)
    if not p.is_absolute():
        p = manifest.parent / p
    return p, sha


def dsv4_decode_shape(kwargs: dict[str, Any]) -> tuple[int, int, int] | None:
    """``(num_tokens, num_heads, topk)`` when the call is a DSV4 sparse decode
    call the bundled kernel can take, else None (the call stays with SGLang)."""
    q = kwargs.get("q")
    k_cache = kwargs.get("k_cache")
    indices = kwargs.get("indices")
    if q is None or k_cache is None or indices is None:
        return None
    if q.dim() == 4:
        if q.shape[1] != 1:
            return None
        num_tokens, num_heads, d_qk = q.shape[0], q.shape[2], q.shape[3]
    elif q.dim() == 3:
        num_tokens, num_heads, d_qk = q.shape
    else:
        return None
    if d_qk != DSV4_D_QK or kwargs.get("head_dim_v", DSV4_D_V) != DSV4_D_V:
        return None
    if k_cache.dim() != 4 or k_cache.shape[-1] != DSV4_BYTES_PER_TOKEN:
        return None
    extra = kwargs.get("extra_k_cache")
    if extra is not None and (extra.dim() != 4 or extra.shape[-1] != DSV4_BYTES_PER_TOKEN):
        return None
    if indices.dim() == 3:
        if indices.shape[1] != 1:
            return None
    elif indices.dim() != 2:
        return None
    if indices.shape[0] != num_tokens:
        return None
    return int(num_tokens), int(num_heads), int(indices.shape[-1])


def extra_shape(kwargs: dict[str, Any]) -> tuple[int, int]:
    """``(extra_topk, extra page size)`` of a DSV4 call, ``(0, 64)`` without an extra cache:
    FlashInfer's prefill dispatcher decides on both."""
    extra = kwargs.get("extra_k_cache")
    eidx = kwargs.get("extra_indices_in_kvcache")
    if extra is None or eidx is None:
        return 0, 64
    return int(eidx.shape[-1]), int(extra.shape[1])


def _squeeze_token_dim(t: Any) -> Any:
    if t is not None and t.dim() == 3 and t.shape[1] == 1:
        return t.squeeze(1)
    return t


def op_arguments(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """SGLang's keyword arguments as ``dsparkctl::sparse_mla_decode`` takes them.

    q ``(B,1,H,512)`` -> ``(B,H,512)``; indices ``(B,1,K)`` -> ``(B,K)``; the
    KV caches go AS IS (SGLang's 256-token pages, no page-split copy).
    """
    q = kwargs["q"]
    if q.dim() == 4:
        q = q.squeeze(1)
    sm_scale = kwargs.get("softmax_scale")
    if sm_scale is None:
        sm_scale = kwargs["q"].shape[-1] ** (-0.5)
    return (
        q,
        kwargs["k_cache"],
        _squeeze_token_dim(kwargs["indices"]),
        kwargs.get("topk_length"),
        kwargs.get("attn_sink"),
        kwargs.get("extra_k_cache"),
        _squeeze_token_dim(kwargs.get("extra_indices_in_kvcache")),
        kwargs.get("extra_topk_length"),
        float(sm_scale),
        False,
    )


class _Router:
    """Lazily loaded settings and kernel; one per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._config: RouteConfig | None = None
        self._op: Any = None
        self._op_error: str | None = None
        self._warned: set[tuple[int, int, bool]] = set()

    def config(self) -> RouteConfig:
        if self._config is None:
            with self._lock:
                if self._config is None:
                    self._config = load_config(CONFIG_PATH)
        return self._config

    def op(self, cfg: RouteConfig) -> Any:
        """The op, or None with ``_op_error`` saying why it is unavailable."""
        if self._op is None and self._op_error is None:
            with self._lock:
                if self._op is None and self._op_error is None:
                    try:
                        self._op = load_op(cfg)
                    except Exception as exc:
                        self._op_error = (str(exc) if isinstance(exc, RouteError)
                                          else f"{type(exc).__name__}: {exc}")
        return self._op


def load_op(cfg: RouteConfig) -> Any:
    """Load the bundled kernel library named by the manifest and return the op."""
    if cfg.manifest is None:
        raise RouteError("no bundled kernel is installed (the route config names no manifest)")
    lib, sha = library_from_manifest(cfg.manifest)
    if not lib.is_file():
        raise RouteError(f"kernel library {lib} (from {cfg.manifest}) does not exist")
    if sha:
        got = hashlib.sha256(lib.read_bytes()).hexdigest()
        if got != sha:
            raise RouteError(f"kernel library {lib} has sha256 {got}, its manifest says {sha}")
    import torch

    try:
        torch.ops.load_library(str(lib))
        return getattr(getattr(torch.ops, OP_NAMESPACE), OP_NAME)
    except (OSError, RuntimeError, AttributeError) as exc:
        raise RouteError(f"cannot load kernel library {lib}: {exc}") from exc


_ROUTER = _Router()


def maybe_route(kwargs: dict[str, Any], backend: str = "flashinfer") -> Any:
    """The routed result ``(out[B,1,H,512], None)`` or None to let SGLang run.

    The override and the shape come before the settings: DSPARKCTL_ROUTE=off, or a call the
    router never takes, must work even when the settings file is missing or broken (the
    error belongs to the calls it would route, not to every attention call).
    """
    override = os.environ.get("DSPARKCTL_ROUTE")
    if override == "off":
        return None
    shape = dsv4_decode_shape(kwargs)
    if shape is None:
        return None
    cfg = _ROUTER.config()
    mode = override or cfg.mode
    if mode == "off":
        return None
    if mode not in MODES:
        raise RouteError(f"DSPARKCTL_ROUTE={mode!r} is not one of {MODES}")
    num_tokens, num_heads, topk = shape
    extra_topk, extra_page = extra_shape(kwargs)
    if not cfg.routes_call(num_tokens, num_heads, topk, extra_topk, extra_page, backend, mode):
        return None
    op = _ROUTER.op(cfg)
    if op is None:
        if backend != "flashinfer" or cfg.flashinfer_serves_call(
                num_tokens, num_heads, topk, extra_topk, extra_page):
            key = (num_heads, topk, num_tokens > cfg.max_tokens)
            if key not in _ROUTER._warned:
                _ROUTER._warned.add(key)
                logger.warning("dsparkctl would route this call, but the bundled kernel is "
                               "unavailable (%s); SGLang's %s path serves heads=%d topk=%d "
                               "num_tokens=%d", _ROUTER._op_error, backend, num_heads, topk,
                               num_tokens)
            return None
        fi = f"FlashInfer {cfg.fi_version}" if cfg.fi_version else "FlashInfer"
        lacks = ("decode kernel" if num_tokens <= cfg.max_tokens else
                 f"correct prefill kernel (num_tokens={num_tokens}, extra_topk={extra_topk})")
        raise RouteError(
            f"dsparkctl routes DSV4 sparse-MLA calls (heads={num_heads}, topk={topk}) to its "
            f"bundled kernel because {fi} has no {lacks} for them, but the bundled kernel "
            f"is unavailable: {_ROUTER._op_error}. Run `dsparkctl install-kernels` (or "
            f"`dsparkctl patches revert` to remove the routing)."
        )
    out, _lse = op(*op_arguments(kwargs))
    return (out.unsqueeze(1), None)


def self_check() -> dict[str, Any]:
    """Used by dsparkctl's post-apply import check: settings parse, the named kernel library
    exists (a typo in the manifest path must fail the apply, not the first routed call), no
    torch import."""
    cfg = load_config(CONFIG_PATH)
    if cfg.manifest is not None:
        lib, _sha = library_from_manifest(cfg.manifest)
        if not lib.is_file():
            raise RouteError(f"kernel library {lib} (from {cfg.manifest}) does not exist")
    return {"mode": cfg.mode, "manifest": str(cfg.manifest) if cfg.manifest else None,
            "flashinfer": cfg.fi_kind}
