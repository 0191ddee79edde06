"""What each SGLang release does to a DeepSeek-V4 sparse-MLA call, as data.

Every row was read from the published wheel (``pip download --no-deps
sglang==X``); file:line references are to those wheels:

- Target-layer heads. 0.5.16-0.5.19: ``MqaAttentionBase`` pads the per-rank
  query to 64 heads whenever ``attn_tp_size > 1`` and local heads <= 64
  (``padded_num_heads = 64 if self.n_local_heads <= 64 else self.n_heads``,
  sglang 0.5.17 ``srt/models/deepseek_v4.py:1205``, 0.5.19 ``:1580``).
  0.5.20+ (PR #36655) ``_kernel_num_heads`` (0.5.20 ``deepseek_v4.py:823``, 0.5.23
  ``:1215``): native heads when ``attn_tp_size == 1``, or on SM120 when
  ``num_tokens > 64``, or when ``SGLANG_SM120_FLASHMLA_BACKEND=flashinfer`` and
  ``flashinfer_dsv4_decode_supports_num_heads`` (the head appears in FlashInfer's
  ``_DECODE_DSV4_DISPATCH``, any topk; ``kernels/ops/attention/flash_mla_sm120.py:286``);
  else 64.
- DSpark draft heads: ``DSparkAttention`` pads to ``_PAD_NUM_HEADS = 64`` when
  local heads < 64, in every version (0.5.17 ``srt/models/deepseek_v4_dspark.py:56,193``,
  0.5.19 ``:70,258``, 0.5.23 ``:79,292``; 0.5.23's other branch is the trtllm
  uniform-FP8 pool, not SM120). The draft layer is ``compress_ratio=0``: no extra cache.
- Draft index width: ``ceil_align(SWA_WINDOW + block_size, PAGE_INDEX_ALIGNED_SIZE)``
  with ``SWA_WINDOW = 128`` and ``PAGE_INDEX_ALIGNED_SIZE = 64`` hard-coded in the
  backend (0.5.17 ``kernels/ops/speculative/dspark/dspark_attn_metadata.py:263``,
  ``srt/layers/attention/deepseek_v4_backend.py:89-91``; 0.5.23 ``:284``, ``:161-163``).
- Target main index width: the causal SWA window padded to 64 = 128
  (``dsv4_attn_metadata_kernels.py`` ``build_causal_swa_page_indices``).
- Extra caches: c4 layers pass ``c4_sparse_page_indices`` of width
  ``ceil_align(index_topk, 64)`` (asserted 512 or 1024), page ``page_size // 4``;
  c128 layers pass ``c128_page_indices`` of width ``ceil_align((page_size // 128) *
  max_pages, 64)`` with ``max_pages = ceil(max_seq_len / page_size)``, page
  ``page_size // 128`` (0.5.17 ``deepseek_v4_backend.py:1636-1665, 289-305, 369-375``;
  ``kernels/ops/attention/dsv4/metadata_kernel.py:126-133``). DSV4 ``page_size`` is 256
  on CUDA (``arg_groups/overrides.py:1092``), so c4 extra pages are 64 and c128 are 2.
- SM120 shim routing: 0.5.20+ sends ``q.shape[0] > 64`` straight to
  ``_flash_mla_sm120_prefill`` (0.5.23 ``flash_mla_sm120.py:317``); <= 0.5.19 lets
  FlashInfer decide. FlashInfer makes the same split, so the path is the same.
- ``max_running_requests``: the DeepSeek-V4 hook fills 256 when unset
  (0.5.17 ``srt/arg_groups/deepseek_v4_hook.py:141``; 0.5.23 ``:138``) and runs
  before the speculative hook's DSpark default of 48
  (0.5.17 ``server_args.py:3530`` vs ``:3592``; 0.5.23 ``arg_groups/pipeline.py:225`` vs
  ``:304``), so a DeepSeek-V4 DSpark server gets 256, not 48. Other targets get 48.
- Default ``cuda_graph_max_bs`` by GPU memory and tp (0.5.17 ``server_args.py:4635-4694``;
  0.5.23 ``arg_groups/memory_hook.py:90-188``): only the 20-35 GiB row changed
  (24/80 -> 48/160 in 0.5.20), and 0.5.23 clamps a default max_bs to an explicit
  ``--max-running-requests``.
- Flags: ``--cuda-graph-max-bs`` / ``--cuda-graph-bs`` are deprecated aliases in
  0.5.16-0.5.19 and gone in 0.5.20+ (an argparse prefix of both -decode and
  -prefill, so sglang rejects them as ambiguous); ``--attn-dp-size`` replaces
  ``--dp-size N --enable-dp-attention`` in 0.5.23.

0.5.21 and 0.5.22 were read too: 0.5.21 behaves as 0.5.20 (pins FlashInfer
0.6.18; no ``--attn-dp-size``, no clamp), 0.5.22 as 0.5.23 (pins 0.7.1;
``--attn-dp-size`` and the clamp, ``arg_groups/memory_hook.py:182-188``; its
``flash_mla_sm120.py`` is byte-identical to 0.5.23's). The tests check each
row's pin, shim routing, flags and clamp against the wheels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from dsparkctl.errors import UsageError

HeadRule = Literal["pad64-when-attn-tp", "native-if-flashinfer-supports"]

SWA_WINDOW = 128
PAGE_INDEX_ALIGNED_SIZE = 64
DSV4_PAGE_SIZE = 256
DECODE_MAX_TOKENS = 64
DRAFT_PAD_HEADS = 64
DSV4_DEFAULT_MAX_RUNNING_REQUESTS = 256
SPEC_DEFAULT_MAX_RUNNING_REQUESTS = 48
DEFAULT_DSPARK_GAMMA = 7  # dspark_config.DEFAULT_DSPARK_GAMMA in 0.5.17-0.5.23
# FlashInfer 0.7.1+ envelope iterates its dedicated head specializations
# (flashinfer/mla/_sparse_mla_sm120/_policy.py, _StaticFamilyEnvelope.dedicated_heads).
ENVELOPE_DEDICATED_HEADS = frozenset({8, 16, 32, 64, 128})

# (gpu memory below MiB, max_bs when tp < 4, max_bs when tp >= 4); above the last row: 512.
MaxBsRow = tuple[int, int, int]
_MAX_BS_OLD: tuple[MaxBsRow, ...] = (
    (20 * 1024, 8, 8), (35 * 1024, 24, 80), (60 * 1024, 32, 160),
    (90 * 1024, 256, 512), (160 * 1024, 256, 512),
)
_MAX_BS_NEW: tuple[MaxBsRow, ...] = (
    (20 * 1024, 8, 8), (35 * 1024, 48, 160), (60 * 1024, 32, 160),
    (90 * 1024, 256, 512), (160 * 1024, 256, 512),
)


@dataclass(frozen=True)
class SglangRule:
    """One SGLang version range and what it does (module docstring has the sources)."""

    versions: str
    verified: bool
    dspark: bool
    pinned_flashinfer: str | None
    head_rule: HeadRule
    shim_routes_large_to_prefill: bool
    iterates_decode_table: bool
    legacy_cuda_graph_flags: bool
    attn_dp_size_flag: bool
    max_bs_table: tuple[MaxBsRow, ...]
    max_bs_without_gpu: int = 160
    max_bs_above_table: int = 512
    clamp_default_max_bs_to_running: bool = False

    @property
    def spec(self) -> SpecifierSet:
        return SpecifierSet(self.versions)

    def default_max_bs(self, gpu_memory_mib: int | None, tp: int) -> int:
        if gpu_memory_mib is None:
            return self.max_bs_without_gpu
        for below, small_tp, big_tp in self.max_bs_table:
            if gpu_memory_mib < below:
                return small_tp if tp < 4 else big_tp
        return self.max_bs_above_table


def _row(versions: str, pin: str | None, *, verified: bool = True, dspark: bool = True,
         new: bool, attn_dp: bool = False, clamp: bool = False) -> SglangRule:
    return SglangRule(
        versions=versions, verified=verified, dspark=dspark, pinned_flashinfer=pin,
        head_rule="native-if-flashinfer-supports" if new else "pad64-when-attn-tp",
        shim_routes_large_to_prefill=new, iterates_decode_table=new,
        legacy_cuda_graph_flags=not new, attn_dp_size_flag=attn_dp,
        max_bs_table=_MAX_BS_NEW if new else _MAX_BS_OLD, clamp_default_max_bs_to_running=clamp,
    )


RULES: tuple[SglangRule, ...] = (
    _row("<0.5.16", None, verified=False, dspark=False, new=False),
    _row("==0.5.16.*", "0.6.14", new=False),
    _row("==0.5.17.*", "0.6.15.post1", new=False),
    _row("==0.5.18.*", "0.6.17", new=False),
    _row("==0.5.19.*", "0.6.18", new=False),
    _row("==0.5.20.*", "0.6.18", new=True),
    _row("==0.5.21.*", "0.6.18", new=True),
    _row("==0.5.22.*", "0.7.1", new=True, attn_dp=True, clamp=True),
    _row("==0.5.23.*", "0.7.2", new=True, attn_dp=True, clamp=True),
)
LATEST = RULES[-1]


@dataclass(frozen=True)
class RuleMatch:
    rule: SglangRule
    exact: bool  # the version falls in a row read from a wheel (not a fallback)
    note: str | None


def parse_version(version: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion:
        raise UsageError(f"SGLang version {version!r} is not a version number "
                         "(expected something like 0.5.19)") from None


def rule_for(version: str | None) -> RuleMatch:
    """The row for ``version``; unknown or newer versions fall back to the newest row, with a note."""
    if version is None:
        return RuleMatch(LATEST, False, "SGLang version unknown: assuming the newest release "
                         f"read ({LATEST.versions}); pass --sglang-version to be exact")
    v = parse_version(version)
    for rule in RULES:
        if rule.spec.contains(v, prereleases=True):
            note = None if rule.verified else (
                f"SGLang {version}: rules interpolated from neighbouring releases "
                f"({rule.versions} was not read from a wheel)")
            return RuleMatch(rule, rule.verified, note)
    return RuleMatch(LATEST, False, f"SGLang {version} is outside the releases dsparkctl has read "
                     f"(0.5.16-0.5.23): assuming {LATEST.versions} behaviour")


def ceil_align(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def draft_topk(gamma: int) -> int:
    """DSpark draft index width: window + block, padded to the page-index alignment."""
    return ceil_align(SWA_WINDOW + gamma, PAGE_INDEX_ALIGNED_SIZE)


def target_topk() -> int:
    return ceil_align(SWA_WINDOW, PAGE_INDEX_ALIGNED_SIZE)


def target_kernel_heads(rule: SglangRule, *, num_heads: int, attn_tp: int, num_tokens: int,
                        flashinfer_backend: bool, flashinfer_heads: frozenset[int] | None) -> int:
    """Heads the FlashMLA call sees for a target layer (per rank)."""
    local = num_heads // attn_tp
    if attn_tp == 1:
        return local
    padded = DRAFT_PAD_HEADS if local <= DRAFT_PAD_HEADS else num_heads
    if rule.head_rule == "pad64-when-attn-tp":
        return padded
    if num_tokens > DECODE_MAX_TOKENS:
        return local
    if flashinfer_backend and flashinfer_heads is not None and local in flashinfer_heads:
        return local
    return padded


def draft_kernel_heads(*, num_heads: int, attn_tp: int) -> int:
    local = num_heads // attn_tp
    return DRAFT_PAD_HEADS if local < DRAFT_PAD_HEADS else local


def extra_cache(ratio: int, *, index_topk: int, max_seq_len: int,
                page_size: int = DSV4_PAGE_SIZE) -> tuple[int, int]:
    """(extra_topk, extra_page_size) a target layer of this compress ratio passes."""
    if ratio == 4:
        return ceil_align(index_topk, PAGE_INDEX_ALIGNED_SIZE), page_size // 4
    if ratio == 128:
        max_pages = -(-max_seq_len // page_size)
        return ceil_align((page_size // 128) * max_pages, PAGE_INDEX_ALIGNED_SIZE), page_size // 128
    return 0, 0
