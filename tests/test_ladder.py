"""The ladder tables against SGLang's own code, extracted from the real wheels and executed.

The functions are pulled out of the published sources with ``ast`` and run in
isolation; only their accessors are bound (``resolving_view`` is the identity,
``get_exec()`` / ``model_runner`` are namespaces holding the inputs), so the
arithmetic under test is SGLang's, byte for byte.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dsparkctl.errors import UsageError
from dsparkctl.ladder import capture_batch_sizes, clamp_to_runner, ladder_rule

pytestmark = pytest.mark.network

VERSIONS = ("0.5.17", "0.5.19", "0.5.21", "0.5.22", "0.5.23")
MAX_BS = (*range(1, 70), 72, 80, 100, 128, 160, 255, 256, 257, 271, 272, 300, 511, 512, 513, 600)


def _function(path: Path, name: str, cls: str | None = None) -> ast.FunctionDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scope: list[ast.stmt] = tree.body
    if cls is not None:
        (klass,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
        scope = klass.body
    (fn,) = [n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def _compile(fn: ast.FunctionDef, env: dict[str, Any]) -> Any:
    fn = ast.FunctionDef(**{**fn.__dict__, "decorator_list": []})
    mod = ast.Module(body=[fn], type_ignores=[])
    ast.fix_missing_locations(mod)
    ns: dict[str, Any] = {"List": list, "Tuple": tuple, "Optional": Any, "Any": Any, **env}
    exec(compile(mod, f"<sglang {fn.name}>", "exec"), ns)
    return ns[fn.name]


@pytest.fixture(scope="module")
def sglang_ladder(wheels: Any) -> dict[str, Any]:
    """version -> callable(max_bs, speculative, disable_padding) running SGLang's ladder."""
    out = {}
    for v in VERSIONS:
        root = Path(wheels.unpacked("sglang", v))
        hook = root / "sglang/srt/arg_groups/cuda_graph_hook.py"
        if hook.exists() and "def generate_decode_cuda_graph_batch_sizes" in hook.read_text():
            f = _compile(_function(hook, "generate_decode_cuda_graph_batch_sizes"),
                         {"resolving_view": lambda sa: sa})

            def run(max_bs: int, spec: bool, pad_off: bool, f: Any = f) -> list[int]:
                sa = SimpleNamespace(disable_cuda_graph_padding=pad_off,
                                     speculative_algorithm="DSPARK" if spec else None)
                return f(sa, max_bs)
        else:  # 0.5.17: a ServerArgs method
            m = _compile(_function(root / "sglang/srt/server_args.py",
                                   "_generate_decode_cuda_graph_batch_sizes", cls="ServerArgs"), {})

            def run(max_bs: int, spec: bool, pad_off: bool, m: Any = m) -> list[int]:
                sa = SimpleNamespace(disable_cuda_graph_padding=pad_off,
                                     speculative_algorithm="DSPARK" if spec else None)
                return m(sa, max_bs)
        out[v] = run
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_ladder_matches_sglang(version: str, sglang_ladder: dict[str, Any]) -> None:
    real = sglang_ladder[version]
    for max_bs, spec, pad_off in itertools.product(MAX_BS, (True, False), (True, False)):
        ours = capture_batch_sizes(version, speculative=spec, max_bs=max_bs,
                                   disable_padding=pad_off, explicit=None)
        assert ours == real(max_bs, spec, pad_off), (version, max_bs, spec, pad_off)


def test_ladder_spot_values() -> None:
    # Independent of the wheels: the shape KNOWLEDGE §3 documents.
    assert capture_batch_sizes("0.5.19", speculative=True, max_bs=10, disable_padding=False,
                               explicit=None) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert capture_batch_sizes("0.5.19", speculative=True, max_bs=11, disable_padding=False,
                               explicit=None) == [1, 2, 3, 4, 5, 6, 7, 8, 10, 11]
    assert capture_batch_sizes("0.5.19", speculative=False, max_bs=20, disable_padding=False,
                               explicit=None) == [1, 2, 4, 8, 12, 16, 20]
    assert capture_batch_sizes("0.5.17", speculative=True, max_bs=5, disable_padding=True,
                               explicit=None) == [1, 2, 3, 4, 5]


def test_explicit_list_is_kept_and_bad_input_refused() -> None:
    assert capture_batch_sizes("0.5.17", speculative=True, max_bs=999, disable_padding=False,
                               explicit=[8, 2, 4]) == [8, 2, 4]
    with pytest.raises(UsageError, match="positive"):
        capture_batch_sizes("0.5.17", speculative=True, max_bs=8, disable_padding=False,
                            explicit=[0, 2])
    with pytest.raises(UsageError, match="positive"):
        capture_batch_sizes("0.5.17", speculative=True, max_bs=0, disable_padding=False,
                            explicit=None)
    with pytest.raises(UsageError, match="version"):
        capture_batch_sizes("not-a-version", speculative=True, max_bs=8, disable_padding=False,
                            explicit=None)


def test_unknown_versions_fall_back_to_newest_unverified() -> None:
    assert ladder_rule("0.5.17")[1] is True
    assert ladder_rule("0.5.22")[1] is True
    assert ladder_rule("0.5.15")[1] is False
    assert ladder_rule("0.9.0")[1] is False
    assert ladder_rule(None)[1] is False


@pytest.fixture(scope="module")
def sglang_runner_clamp(wheels: Any) -> dict[str, Any]:
    """version -> callable(sizes, max_requests, alignment, width) running get_batch_sizes_to_capture."""
    out = {}
    for v in VERSIONS:
        root = Path(wheels.unpacked("sglang", v))
        common = root / "sglang/srt/utils/common.py"
        ceil_div = _compile(_function(common, "ceil_div"), {})
        ceil_align = _compile(_function(common, "ceil_align"), {"ceil_div": ceil_div})
        fn = _function(root / "sglang/srt/model_executor/runner/base_cuda_graph_runner.py",
                       "get_batch_sizes_to_capture")

        def run(sizes: list[int], max_requests: int, alignment: int, width: int,
                fn: ast.FunctionDef = fn, ceil_align: Any = ceil_align) -> list[int]:
            decode = SimpleNamespace(bs=list(sizes))
            graph = SimpleNamespace(cuda_graph_config=SimpleNamespace(decode=decode),
                                    torch_compile_max_bs=0)
            exec_ = SimpleNamespace(graph=graph,
                                    overlap=SimpleNamespace(enable_two_batch_overlap=False))
            server_args = SimpleNamespace(cuda_graph_config=SimpleNamespace(decode=decode),
                                          enable_two_batch_overlap=False, torch_compile_max_bs=0)

            def align(*_a: Any, **_k: Any) -> int:
                return alignment

            env = {
                "get_exec": lambda: exec_, "ceil_align": ceil_align,
                "get_cuda_graph_batch_size_alignment": align,
                "get_cuda_graph_max_batch_size": lambda *a: ceil_align(a[-1], alignment),
                "get_flags": lambda: SimpleNamespace(
                    capture=SimpleNamespace(enable_torch_compile=False)),
                "DllmConfig": SimpleNamespace(from_server_args=lambda _sa: None),
            }
            f = _compile(fn, env)
            runner = SimpleNamespace(server_args=server_args,
                                     req_to_token_pool=SimpleNamespace(size=max_requests))
            capture, _ = f(runner, width)
            return capture
        out[v] = run
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_runner_clamp_matches_sglang(version: str, sglang_runner_clamp: dict[str, Any]) -> None:
    real = sglang_runner_clamp[version]
    for max_bs, mrr, alignment, width in itertools.product(
            (8, 10, 48, 64, 256), (1, 5, 10, 13, 48, 100, 256), (1, 2, 4), (1, 5, 6)):
        ladder = capture_batch_sizes(version, speculative=True, max_bs=max_bs,
                                     disable_padding=False, explicit=None)
        ours = clamp_to_runner(ladder, max_requests=mrr, alignment=alignment,
                               tokens_per_request=width)
        assert ours == real(ladder, mrr, alignment, width), (version, max_bs, mrr, alignment, width)


def test_clamp_refuses_zero_requests() -> None:
    with pytest.raises(UsageError):
        clamp_to_runner([1, 2], max_requests=0)
