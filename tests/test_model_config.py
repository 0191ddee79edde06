"""Model config: the preset's facts, loading config.json files and folders, and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsparkctl.errors import UsageError
from dsparkctl.model_config import PRESET, load_model_config


def _flash_config() -> dict:
    """DeepSeek-V4-Flash config.json fields as published (see dsparkctl.model_config)."""
    return {
        "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
        "num_attention_heads": 64, "num_key_value_heads": 1, "head_dim": 512,
        "qk_rope_head_dim": 64, "sliding_window": 128, "index_topk": 512, "index_n_heads": 64,
        "index_head_dim": 128, "num_hidden_layers": 43, "max_position_embeddings": 1048576,
        "compress_ratios": [0, 0] + [4, 128] * 20 + [4, 0], "dspark_block_size": 5,
    }


def _write(tmp_path: Path, data: object, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def test_preset_is_deepseek_v4_flash() -> None:
    m = load_model_config(None)
    assert m is PRESET
    assert (m.num_attention_heads, m.head_dim, m.qk_rope_head_dim, m.sliding_window) == (64, 512, 64, 128)
    assert (m.index_topk, m.index_n_heads, m.index_head_dim, m.num_hidden_layers) == (512, 64, 128, 43)
    assert m.dspark_block_size == 5 and m.architecture == "DeepseekV4ForCausalLM"
    by_ratio = m.layers_by_ratio()
    assert by_ratio[0] == (0, 1)
    assert len(by_ratio[4]) == 21 and len(by_ratio[128]) == 20
    assert all(layer % 2 == 0 for layer in by_ratio[4]) and all(layer % 2 for layer in by_ratio[128])
    assert load_model_config("deepseek-v4-flash") is PRESET


def test_file_and_folder_load_the_same(tmp_path: Path) -> None:
    p = _write(tmp_path, _flash_config())
    a, b = load_model_config(str(p)), load_model_config(str(tmp_path))
    assert a.compress_ratios == b.compress_ratios == PRESET.compress_ratios
    assert a.layers_by_ratio() == PRESET.layers_by_ratio()
    assert a.source == str(p)


def test_file_values_win_over_preset(tmp_path: Path) -> None:
    cfg = _flash_config() | {"num_attention_heads": 128, "index_topk": 1024,
                             "num_hidden_layers": 4, "compress_ratios": [0, 4, 4, 128]}
    cfg.pop("dspark_block_size")
    cfg["dflash_config"] = {"block_size": 7}
    m = load_model_config(str(_write(tmp_path, cfg)))
    assert (m.num_attention_heads, m.index_topk, m.dspark_block_size) == (128, 1024, 7)
    assert m.layers_by_ratio() == {0: (0,), 4: (1, 2), 128: (3,)}


@pytest.mark.parametrize(("keys", "gamma"), [
    ({"dspark_block_size": 4, "dflash_config": {"block_size": 7}, "block_size": 6}, 4),
    ({"dflash_config": {"block_size": 3}, "block_size": 6}, 3),
    ({"block_size": 6}, 6),
    ({"dspark_config": {"block_size": 3}}, None),  # SGLang does not read gamma there
])
def test_gamma_keys_in_sglangs_order(tmp_path: Path, keys: dict, gamma: int | None) -> None:
    cfg = _flash_config()
    cfg.pop("dspark_block_size")
    m = load_model_config(str(_write(tmp_path, cfg | keys)))
    assert m.dspark_block_size == gamma


def test_index_topk_and_window_default_as_in_sglang(tmp_path: Path) -> None:
    cfg = _flash_config()
    for k in ("index_topk", "sliding_window"):
        cfg.pop(k, None)
    m = load_model_config(str(_write(tmp_path, cfg)))
    assert (m.index_topk, m.sliding_window) == (512, 128)


def test_window_size_alias_and_defaults(tmp_path: Path) -> None:
    cfg = _flash_config()
    cfg["window_size"] = cfg.pop("sliding_window")
    for k in ("qk_rope_head_dim", "max_position_embeddings", "dspark_block_size"):
        cfg.pop(k)
    m = load_model_config(str(_write(tmp_path, cfg)))
    assert m.sliding_window == 128 and m.qk_rope_head_dim == 64
    assert m.max_position_embeddings == 65536 and m.dspark_block_size is None


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda c: c.pop("num_attention_heads"), "num_attention_heads"),
        (lambda c: c.pop("compress_ratios"), "compress_ratios"),
        (lambda c: c.update(architectures=["LlamaForCausalLM"], model_type="llama"), "not DeepSeek-V4"),
        (lambda c: c.update(compress_ratios=[0, 8] * 22), "0, 4 or 128"),
        (lambda c: c.update(compress_ratios=[0, 4]), "2 entries for 43 layers"),
        (lambda c: c.update(num_attention_heads="64"), "positive integer"),
        (lambda c: c.update(index_topk=0), "positive integer"),
        (lambda c: c.update(architectures="DeepseekV4ForCausalLM"), "list of strings"),
    ],
)
def test_bad_configs_are_usage_errors(tmp_path: Path, mutate, needle: str) -> None:
    cfg = _flash_config()
    mutate(cfg)
    with pytest.raises(UsageError, match=needle):
        load_model_config(str(_write(tmp_path, cfg)))


def test_missing_path_malformed_json_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        load_model_config(str(tmp_path / "nope.json"))
    with pytest.raises(UsageError, match=r"no config\.json"):
        load_model_config(str(tmp_path))
    with pytest.raises(UsageError, match="not valid JSON"):
        load_model_config(str(_write(tmp_path, "{ broken", "bad.json")))
    with pytest.raises(UsageError, match="JSON object"):
        load_model_config(str(_write(tmp_path, [1, 2], "list.json")))
