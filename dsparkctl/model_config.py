"""The model facts the planner needs: heads, window, index width, per-layer compression.

The planner never loads weights; it needs only the handful of ``config.json``
fields that decide the shape of every sparse-MLA call. The built-in preset is
DeepSeek-V4-Flash, so ``doctor`` works before the checkpoint is downloaded.

Preset source: the DeepSeek-V4-Flash(-Base) ``config.json`` as published on
Hugging Face, quoted verbatim in alibaba/rtp-llm's DeepSeek-V4 unit test
(``FLASH_BASE_CONFIG``): 43 layers, ``compress_ratios`` of 44 entries = layers
0-1 SWA-only (0), then 4 / 128 alternating from layer 2 (c4 on even layers up to
42), and a trailing 0 for the MTP layer; ``max_position_embeddings`` 1048576.
``dspark_block_size`` 5 is the DSpark checkpoint's (DeepSeek-V4-Flash-0731,
seed 000 and KNOWLEDGE §4). SGLang reads the same keys
(``sglang/srt/configs/deepseek_v4.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsparkctl.errors import UsageError

PRESET_NAME = "deepseek-v4-flash"

# Architectures SGLang runs through the DeepSeek-V4 attention code
# (model_hook: "DeepseekV4ForCausalLM"; DSpark draft and MTP heads share it).
DSV4_ARCHITECTURES = frozenset({
    "DeepseekV4ForCausalLM",
    "DeepseekV4ForCausalLMDSpark",
    "DeepseekV4ForCausalLMNextN",
})
DSV4_MODEL_TYPE = "deepseek_v4"
VALID_COMPRESS_RATIOS = frozenset({0, 4, 128})

# 43 target layers, then the MTP layer's placeholder 0 (kept: config.json has 44 entries).
_FLASH_RATIOS = (0, 0, *((4, 128) * 20), 4, 0)


@dataclass(frozen=True)
class ModelConfig:
    """The config.json fields that shape sparse-MLA calls (see module docstring)."""

    name: str
    architectures: tuple[str, ...]
    model_type: str
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    qk_rope_head_dim: int
    sliding_window: int
    index_topk: int
    index_n_heads: int
    index_head_dim: int
    num_hidden_layers: int
    compress_ratios: tuple[int, ...]
    dspark_block_size: int | None
    max_position_embeddings: int
    source: str

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else ""

    def layers_by_ratio(self) -> dict[int, tuple[int, ...]]:
        """Layer ids per compress ratio (0 SWA-only, 4 c4, 128 c128) of the target layers."""
        out: dict[int, list[int]] = {}
        for layer, ratio in enumerate(self.compress_ratios[: self.num_hidden_layers]):
            out.setdefault(ratio, []).append(layer)
        return {r: tuple(ls) for r, ls in sorted(out.items())}

    def to_json(self) -> dict[str, Any]:
        by_ratio = self.layers_by_ratio()
        return {
            "name": self.name,
            "source": self.source,
            "architecture": self.architecture,
            "num_attention_heads": self.num_attention_heads,
            "head_dim": self.head_dim,
            "sliding_window": self.sliding_window,
            "index_topk": self.index_topk,
            "num_hidden_layers": self.num_hidden_layers,
            "layers": {"swa-only": len(by_ratio.get(0, ())), "c4": len(by_ratio.get(4, ())),
                       "c128": len(by_ratio.get(128, ()))},
            "dspark_block_size": self.dspark_block_size,
            "max_position_embeddings": self.max_position_embeddings,
        }


PRESET = ModelConfig(
    name=PRESET_NAME,
    architectures=("DeepseekV4ForCausalLM",),
    model_type=DSV4_MODEL_TYPE,
    num_attention_heads=64,
    num_key_value_heads=1,
    head_dim=512,
    qk_rope_head_dim=64,
    sliding_window=128,
    index_topk=512,
    index_n_heads=64,
    index_head_dim=128,
    num_hidden_layers=43,
    compress_ratios=_FLASH_RATIOS,
    dspark_block_size=5,
    max_position_embeddings=1048576,
    source=f"preset:{PRESET_NAME}",
)


def load_model_config(path: str | None) -> ModelConfig:
    """``None`` -> the preset; else a ``config.json`` or a snapshot folder holding one."""
    if path is None or path == PRESET_NAME:
        return PRESET
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
        if not p.is_file():
            raise UsageError(f"--model {path}: the folder has no config.json; point --model at a "
                             "model snapshot folder or at its config.json")
    elif not p.is_file():
        raise UsageError(f"--model {path}: no such file or folder; give a config.json, a snapshot "
                         f"folder holding one, or leave --model out for the {PRESET_NAME} preset")
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--model {p}: cannot read it ({e})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--model {p}: not valid JSON (line {e.lineno}, column {e.colno}: "
                         f"{e.msg}); fix the file or use the built-in preset") from None
    if not isinstance(raw, dict):
        raise UsageError(f"--model {p}: expected a JSON object at the top level")
    return model_config_from_dict(raw, source=str(p))


def model_config_from_dict(raw: Mapping[str, Any], *, source: str) -> ModelConfig:
    """Validate the fields the planner relies on; anything odd is the user's file, so UsageError."""
    where = f"--model {source}"
    archs = raw.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise UsageError(f"{where}: 'architectures' must be a list of strings")
    model_type = raw.get("model_type")
    is_v4 = any(a in DSV4_ARCHITECTURES for a in archs) or (not archs and model_type == DSV4_MODEL_TYPE)
    if not is_v4:
        got = ", ".join(archs) if archs else f"model_type {model_type!r}"
        raise UsageError(f"{where}: architecture {got} is not DeepSeek-V4 "
                         f"(expected one of {', '.join(sorted(DSV4_ARCHITECTURES))}); dsparkctl plans "
                         "DeepSeek-V4 sparse-MLA calls only")

    def req_int(key: str, *alts: str) -> int:
        for k in (key, *alts):
            if k in raw:
                return _pos_int(raw[k], k, where)
        raise UsageError(f"{where}: required key '{key}' is missing from config.json")

    def opt_int(key: str, default: int | None) -> int | None:
        return _pos_int(raw[key], key, where) if raw.get(key) is not None else default

    layers = req_int("num_hidden_layers")
    ratios_raw = raw.get("compress_ratios")
    if ratios_raw is None:
        raise UsageError(f"{where}: required key 'compress_ratios' is missing from config.json")
    if not isinstance(ratios_raw, list) or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in ratios_raw):
        raise UsageError(f"{where}: 'compress_ratios' must be a list of integers")
    bad = sorted({r for r in ratios_raw if r not in VALID_COMPRESS_RATIOS})
    if bad:
        raise UsageError(f"{where}: 'compress_ratios' holds {bad}; DeepSeek-V4 layers are 0, 4 or 128")
    if len(ratios_raw) < layers:
        raise UsageError(f"{where}: 'compress_ratios' has {len(ratios_raw)} entries for "
                         f"{layers} layers (num_hidden_layers)")
    # SGLang's order (0.5.17-0.5.23 dspark_config.parse_dspark_draft_config over
    # dflash_utils.parse_dflash_draft_config): dspark_block_size, else dflash_config's
    # block_size (published DSpark drafts nest it there), else a top-level block_size.
    # dspark_config.block_size is not read for gamma.
    block = raw.get("dspark_block_size")
    if block is None and isinstance(raw.get("dflash_config"), dict):
        block = raw["dflash_config"].get("block_size")
    if block is None:
        block = raw.get("block_size")
    return ModelConfig(
        name=str(raw.get("_name_or_path") or Path(source).parent.name or source),
        architectures=tuple(archs),
        model_type=str(model_type or DSV4_MODEL_TYPE),
        num_attention_heads=req_int("num_attention_heads"),
        num_key_value_heads=opt_int("num_key_value_heads", 1) or 1,
        head_dim=req_int("head_dim"),
        qk_rope_head_dim=opt_int("qk_rope_head_dim", 64) or 64,
        # sglang's DeepSeekV4Config defaults (window_size 128, index_topk 512) when absent
        sliding_window=opt_int("sliding_window", None) or opt_int("window_size", 128) or 128,
        index_topk=opt_int("index_topk", 512) or 512,
        index_n_heads=opt_int("index_n_heads", 64) or 64,
        index_head_dim=opt_int("index_head_dim", 128) or 128,
        num_hidden_layers=layers,
        compress_ratios=tuple(ratios_raw),
        dspark_block_size=_pos_int(block, "dspark_block_size", where) if block is not None else None,
        # sglang's DeepSeekV4Config default when the key is absent.
        max_position_embeddings=opt_int("max_position_embeddings", 65536) or 65536,
        source=source,
    )


def _pos_int(value: object, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"{where}: '{key}' must be a positive integer, got {value!r}")
    return value
