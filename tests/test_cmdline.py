"""Launch-line parsing: the forms operators paste, SGLang's real flag spellings, and refusals."""

from __future__ import annotations

import pytest

from dsparkctl.cmdline import FLAGS, parse_launch_line
from dsparkctl.errors import UsageError

SEED_000 = ("sglang serve --model-path /models/DeepSeek-V4-Flash-0731 --tp-size 4 "
            "--kv-cache-dtype fp8_e4m3 --max-running-requests 10 --cuda-graph-max-bs-decode 10 "
            "--speculative-algorithm DSPARK --speculative-dspark-block-size 5")


def test_seed_000_line() -> None:
    cfg, model = parse_launch_line(SEED_000)
    assert model == "/models/DeepSeek-V4-Flash-0731" == cfg.model_path
    assert (cfg.tp, cfg.dp, cfg.enable_dp_attention) == (4, 1, False)
    assert (cfg.gamma, cfg.speculative_algorithm) == (5, "DSPARK")
    assert (cfg.cuda_graph_max_bs, cfg.max_running_requests) == (10, 10)
    assert cfg.extra_flags["kv_cache_dtype"] == "fp8_e4m3"
    assert cfg.sglang_version is None and cfg.env == {}


@pytest.mark.parametrize("launcher", [
    "python -m sglang.launch_server", "python3 -m sglang.launch_server",
    "/opt/venv/bin/python3.12 -u -m sglang.launch_server", "sglang serve",
    "/usr/local/bin/sglang serve", "env FOO=1 sglang serve",
])
def test_launchers(launcher: str) -> None:
    cfg, model = parse_launch_line(f"{launcher} --model-path /m --tp 2")
    assert cfg.tp == 2 and model == "/m"


def test_env_prefix_aliases_and_equals_form() -> None:
    line = ("NCCL_P2P_DISABLE=1 SGLANG_SM120_FLASHMLA_BACKEND=flashinfer CUDA_VISIBLE_DEVICES=0,1 "
            "python3 -m sglang.launch_server --model=/m --tensor-parallel-size=8 --dp 2 "
            "--enable-dp-attention --cuda-graph-max-bs=16 --disable-custom-all-reduce "
            "--moe-runner-backend flashinfer_mxfp4 --mem-fraction-static 0.94 "
            "--speculative-num-draft-tokens 6 --disable-cuda-graph-padding")
    cfg, model = parse_launch_line(line)
    assert cfg.env == {"NCCL_P2P_DISABLE": "1", "SGLANG_SM120_FLASHMLA_BACKEND": "flashinfer",
                       "CUDA_VISIBLE_DEVICES": "0,1"}
    assert (cfg.tp, cfg.dp, cfg.enable_dp_attention, cfg.attn_tp) == (8, 2, True, 4)
    assert cfg.cuda_graph_max_bs == 16 and cfg.disable_cuda_graph_padding
    assert cfg.extra_flags["disable_custom_all_reduce"] is True
    assert cfg.extra_flags["moe_runner_backend"] == "flashinfer_mxfp4"
    assert cfg.extra_flags["speculative_num_draft_tokens"] == "6"
    assert cfg.extra_flags["legacy_flags"] == "--cuda-graph-max-bs"
    assert cfg.speculative_algorithm is None  # no --speculative-algorithm: speculation off
    assert model == "/m"


def test_lists_json_unknown_flags_and_shell_tail() -> None:
    line = ("sglang serve /snap/v4 --cuda-graph-bs-decode 1 2 4 8 --some-new-flag x "
            "--enable-something --cuda-graph-config '{\"decode\": {\"max_bs\": 32}}' "
            "--speculative-algorithm dspark \\\n  --attn-dp-size 2 --tp-size 4 2>&1 | tee log")
    cfg, model = parse_launch_line(line)
    assert model == "/snap/v4"
    assert cfg.cuda_graph_bs == (1, 2, 4, 8) and cfg.cuda_graph_max_bs == 32
    assert cfg.extra_flags["some_new_flag"] == "x" and cfg.extra_flags["enable_something"] is True
    assert cfg.speculative_algorithm == "DSPARK"
    assert (cfg.tp, cfg.dp, cfg.enable_dp_attention) == (4, 2, True)


def test_disabled_decode_graph_spellings() -> None:
    for flag in ("--disable-cuda-graph", "--disable-decode-cuda-graph",
                 "--cuda-graph-backend-decode disabled"):
        cfg, _ = parse_launch_line(f"sglang serve --model-path /m {flag}")
        assert cfg.disable_cuda_graph, flag
    cfg, _ = parse_launch_line("sglang serve --model-path /m --cuda-graph-backend-decode full")
    assert not cfg.disable_cuda_graph


@pytest.mark.parametrize(("line", "needle"), [
    ("", "empty"),
    ("vllm serve deepseek-ai/DeepSeek-V4-Flash --tp 4", "not an SGLang launch"),
    ("python -m vllm.entrypoints.openai.api_server --model x", "not an SGLang launch"),
    ("sglang serve --model-path '/m", "quotes"),
    ("sglang serve --model-path /m --tp-size", "missing its value"),
    ("sglang serve --model-path /m --tp-size --dp-size 2", "missing its value"),
    ("sglang serve --model-path /m --tp-size four", "integer"),
    ("sglang serve --model-path /m --tp-size 4 5", "unexpected word"),
    ("sglang serve --model-path /m --cuda-graph-bs-decode 1 two", "integers"),
    ("sglang serve --model-path /m --enable-dp-attention=yes", "takes no value"),
    ("sglang serve --model-path /m --cuda-graph-config '{bad'", "JSON"),
    ("sglang serve --model-path /m --mem-fraction-static lots", "number"),
])
def test_unparseable_lines(line: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        parse_launch_line(line)


def test_flag_table_uses_real_sglang_spellings(wheels) -> None:
    """Every canonical spelling in the table is an option string in the 0.5.23 or 0.5.19 sources."""
    from pathlib import Path
    found: set[str] = set()
    for v in ("0.5.19", "0.5.23"):
        root = Path(wheels.unpacked("sglang", v)) / "sglang" / "srt"
        text = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                         for p in [root / "server_args.py", *sorted((root / "arg_groups").rglob("*.py"))]
                         if p.exists())
        for f in FLAGS:
            for name in f.names:
                field = name[2:].replace("-", "_")
                if f'"{name}"' in text or f"    {field}: A[" in text:
                    found.add(name)
    prefixes = {"--tp", "--dp"}  # argparse prefixes of --tp-size / --dp-size
    missing = {n for f in FLAGS for n in f.names} - found - prefixes
    assert not missing, missing


def test_error_quotes_the_command_after_the_assignments() -> None:
    line = ("CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO SGLANG_ENABLE_JIT_DEEPGEMM=1 python3 -m "
            "sglang.launch_sever --model-path /m")
    with pytest.raises(UsageError, match=r"'python3 -m sglang\.launch_sever' is not an SGLang"):
        parse_launch_line(line)
    with pytest.raises(UsageError, match=r"HF_TOKEN=\.\.\. \(no command"):
        parse_launch_line("HF_TOKEN=hf_secret")


@pytest.mark.parametrize("off", ["NONE", "none", "OFF"])
def test_speculative_algorithm_none_on_the_launch_line_is_no_speculation(off: str) -> None:
    serving, _ = parse_launch_line(f"sglang serve --model-path /m --tp 8 "
                                   f"--speculative-algorithm {off}")
    assert serving.speculative_algorithm is None and not serving.speculative
