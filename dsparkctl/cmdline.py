"""Read a real SGLang launch line into a ServingConfig.

Operators paste what they run: ``NCCL_P2P_DISABLE=1 sglang serve --model-path
... --tp-size 4 ...`` or ``python3 -m sglang.launch_server ...``, often with
``\\``-continued lines and a trailing ``2>&1 | tee log``. The flag names are
SGLang's own (read from the argparse parsers of 0.5.17, 0.5.19 and 0.5.23);
``--tp``/``--dp`` work there as argparse prefixes of ``--tp-size``/``--dp-size``.
Flags this module does not model are kept in ``extra_flags`` under their
argparse destination name (``--kv-cache-dtype`` -> ``kv_cache_dtype``), never
rejected: SGLang has hundreds and gains more each release.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Literal

from dsparkctl.envvars import is_secret_name, redact_value
from dsparkctl.errors import UsageError
from dsparkctl.plan import ServingConfig

Kind = Literal["int", "float", "str", "bool", "ints", "json"]


@dataclass(frozen=True)
class Flag:
    dest: str
    names: tuple[str, ...]
    kind: Kind


FLAGS: tuple[Flag, ...] = (
    Flag("model_path", ("--model-path", "--model"), "str"),
    Flag("tp_size", ("--tp-size", "--tensor-parallel-size", "--tp"), "int"),
    Flag("dp_size", ("--dp-size", "--data-parallel-size", "--dp"), "int"),
    Flag("attn_dp_size", ("--attn-dp-size", "--attention-data-parallel-size"), "int"),
    Flag("enable_dp_attention", ("--enable-dp-attention",), "bool"),
    Flag("cuda_graph_max_bs_decode", ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"), "int"),
    Flag("cuda_graph_bs_decode", ("--cuda-graph-bs-decode", "--cuda-graph-bs"), "ints"),
    Flag("cuda_graph_config", ("--cuda-graph-config",), "json"),
    Flag("cuda_graph_backend_decode", ("--cuda-graph-backend-decode",), "str"),
    Flag("disable_cuda_graph", ("--disable-cuda-graph",), "bool"),
    Flag("disable_decode_cuda_graph", ("--disable-decode-cuda-graph",), "bool"),
    Flag("disable_cuda_graph_padding", ("--disable-cuda-graph-padding",), "bool"),
    Flag("disable_custom_all_reduce", ("--disable-custom-all-reduce",), "bool"),
    Flag("speculative_algorithm", ("--speculative-algorithm",), "str"),
    Flag("speculative_dspark_block_size", ("--speculative-dspark-block-size",), "int"),
    Flag("speculative_num_draft_tokens", ("--speculative-num-draft-tokens",), "int"),
    Flag("max_running_requests", ("--max-running-requests",), "int"),
    Flag("context_length", ("--context-length",), "int"),
    Flag("kv_cache_dtype", ("--kv-cache-dtype",), "str"),
    Flag("attention_backend", ("--attention-backend",), "str"),
    Flag("moe_runner_backend", ("--moe-runner-backend",), "str"),
    Flag("moe_a2a_backend", ("--moe-a2a-backend",), "str"),
    Flag("mem_fraction_static", ("--mem-fraction-static",), "float"),
    Flag("trust_remote_code", ("--trust-remote-code",), "bool"),
)
_BY_NAME = {name: f for f in FLAGS for name in f.names}
# Legacy spellings sglang 0.5.20+ no longer accepts (ambiguous prefix of -decode/-prefill).
LEGACY_NAMES = frozenset({"--cuda-graph-max-bs", "--cuda-graph-bs"})

NO_SPECULATION = frozenset({"NONE", "OFF", ""})
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON_RE = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")
_LAUNCH_MODULES = {"sglang.launch_server"}
_NUMBER_RE = re.compile(r"^-\d")


def tokenize(line: str) -> list[str]:
    """Shell words up to the first shell operator (pipe, redirect, ``&&``, ``;``)."""
    text = line.replace("\\\r\n", " ").replace("\\\n", " ")
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    words: list[str] = []
    stop = ""
    try:
        for tok in lex:
            if tok and set(tok) <= set("();<>|&"):
                stop = tok
                break
            words.append(tok)
    except ValueError as e:
        raise UsageError(f"launch line: cannot split it like a shell would ({e}); check the quotes"
                         ) from None
    # "2>&1" splits into "2", ">&", "1": the "2" is a file descriptor, not an argument.
    if stop and stop[0] in "<>" and words and words[-1].isdigit() and re.search(r"\d[<>]", text):
        words.pop()
    return words


def _launch_at(words: list[str], i: int) -> tuple[list[str], bool] | None:
    """(SGLang's argument words, positional model path allowed) if a launch starts at ``i``."""
    rest = words[i:]
    if len(rest) >= 2 and rest[0].rsplit("/", 1)[-1] == "sglang" and rest[1] == "serve":
        return rest[2:], True
    if rest and _PYTHON_RE.match(rest[0]):
        j = 1
        while j < len(rest) and rest[j].startswith("-") and rest[j] != "-m":
            j += 1  # interpreter options such as -u or -X dev
        if j + 1 < len(rest) and rest[j] == "-m" and rest[j + 1] in _LAUNCH_MODULES:
            return rest[j + 2:], False
    return None


def _shown(words: list[str]) -> str:
    """Words of the pasted line as an error may quote them: never an assignment's value nor
    the value of a secret-looking flag (``--api-key X``): the line is what gets pasted into
    issues."""
    out: list[str] = []
    for k, word in enumerate(words):
        name, eq, _value = word.partition("=")
        prev = words[k - 1] if k else ""
        if _ENV_RE.match(word) or (word.startswith("-") and eq and is_secret_name(name)):
            out.append(f"{name}=...")
        elif prev.startswith("-") and "=" not in prev and is_secret_name(prev):
            out.append("...")
        else:
            out.append(redact_value(word))
    return " ".join(out)


def _strip_launcher(words: list[str]) -> tuple[dict[str, str], list[str], bool]:
    """(env assignments, argv after the launcher, positional model path allowed).

    The launch may sit behind wrappers with options of their own (``sudo -E -u svc``,
    ``numactl -N 0``, ``env -u X``, ``taskset -c 0-15``): the first place where an SGLang
    launch starts is taken, and every ``NAME=value`` word before it is the launch's env.
    """
    for i in range(len(words)):
        found = _launch_at(words, i)
        if found is not None:
            env = dict(w.split("=", 1) for w in words[:i] if _ENV_RE.match(w))
            return env, *found
    # quote the command, not the assignments in front of it (their values are hidden anyway)
    command = next((i for i, w in enumerate(words) if not _ENV_RE.match(w)), len(words))
    shown = _shown(words[command:command + 3]) if words[command:] else (
        _shown(words[:3]) + " (no command after the assignments)" if words else "(nothing)")
    raise UsageError(
        f"launch line: {shown!r} is not an SGLang launch; expected 'sglang serve ...' or "
        "'python -m sglang.launch_server ...' (env assignments and wrappers such as sudo or "
        "numactl in front are fine)")


def _is_value(tok: str) -> bool:
    return not tok.startswith("-") or bool(_NUMBER_RE.match(tok))


def _convert(flag: Flag, name: str, values: list[str]) -> object:
    if flag.kind == "ints":
        try:
            out = [int(v) for v in values]
        except ValueError:
            raise UsageError(f"launch line: {name} takes integers, got {' '.join(values)!r}") from None
        if not out:
            raise UsageError(f"launch line: {name} is missing its value")
        return out
    if len(values) != 1:
        raise UsageError(f"launch line: {name} takes one value, got {' '.join(values)!r}")
    (v,) = values
    if flag.kind == "int":
        try:
            return int(v)
        except ValueError:
            raise UsageError(f"launch line: {name} takes an integer, got {v!r}") from None
    if flag.kind == "float":
        try:
            return float(v)
        except ValueError:
            raise UsageError(f"launch line: {name} takes a number, got {v!r}") from None
    if flag.kind == "json":
        try:
            return json.loads(v)
        except json.JSONDecodeError as e:
            raise UsageError(f"launch line: {name} is not valid JSON ({e.msg})") from None
    return v


def parse_argv(argv: list[str], *, positional_model: bool) -> tuple[dict[str, object], dict[str, object], list[str]]:
    """(known flags by dest, unknown flags by dest, spellings used) from the argument words."""
    known: dict[str, object] = {}
    extra: dict[str, object] = {}
    used: list[str] = []
    i = 0
    if positional_model and argv and not argv[0].startswith("-"):
        known["model_path"] = argv[0]
        i = 1
    while i < len(argv):
        tok = argv[i]
        if not tok.startswith("--"):
            raise UsageError(f"launch line: unexpected word {tok!r} (SGLang takes --flags only here)")
        name, eq, inline = tok.partition("=")
        flag = _BY_NAME.get(name)
        i += 1
        if flag is not None and flag.kind == "bool":
            if eq:
                raise UsageError(f"launch line: {name} is a switch and takes no value (got {tok!r})")
            known[flag.dest] = True
            used.append(name)
            continue
        if eq:
            values = [inline]
        else:
            values = []
            while i < len(argv) and _is_value(argv[i]):
                values.append(argv[i])
                i += 1
                if flag is not None and flag.kind != "ints":
                    break
        if flag is None:
            dest = name[2:].replace("-", "_")
            extra[dest] = " ".join(values) if values else True
            continue
        if not values:
            raise UsageError(f"launch line: {name} is missing its value")
        known[flag.dest] = _convert(flag, name, values)
        used.append(name)
    return known, extra, used


def parse_launch_line(line: str) -> tuple[ServingConfig, str | None]:
    """The serving config and model path a launch line asks for."""
    if not line or not line.strip():
        raise UsageError("launch line: empty; paste the full 'sglang serve ...' command")
    env, argv, positional = _strip_launcher(tokenize(line))
    known, extra, used = parse_argv(argv, positional_model=positional)

    tp = int(known.get("tp_size", 1))  # type: ignore[arg-type]
    dp = int(known.get("dp_size", 1))  # type: ignore[arg-type]
    dp_attention = bool(known.get("enable_dp_attention", False))
    if "attn_dp_size" in known:
        # 0.5.23 spelling of "--dp-size N --enable-dp-attention"; --dp-size then counts replicas.
        if "dp_size" in known:
            extra["dp_size"] = str(dp)
        dp, dp_attention = int(known["attn_dp_size"]), True  # type: ignore[arg-type]

    graph_cfg = known.get("cuda_graph_config")
    decode_cfg = graph_cfg.get("decode", {}) if isinstance(graph_cfg, dict) else {}
    if graph_cfg is not None and not isinstance(decode_cfg, dict):
        raise UsageError("launch line: --cuda-graph-config 'decode' must be a JSON object")
    max_bs = decode_cfg.get("max_bs", known.get("cuda_graph_max_bs_decode"))
    bs_list = decode_cfg.get("bs", known.get("cuda_graph_bs_decode"))
    backend = decode_cfg.get("backend", known.get("cuda_graph_backend_decode"))
    disabled = bool(known.get("disable_cuda_graph") or known.get("disable_decode_cuda_graph")
                    or backend == "disabled")

    algo = known.get("speculative_algorithm")
    for dest in ("kv_cache_dtype", "attention_backend", "moe_runner_backend", "moe_a2a_backend",
                 "mem_fraction_static", "disable_custom_all_reduce", "trust_remote_code",
                 "speculative_num_draft_tokens"):
        if dest in known:
            extra[dest] = known[dest]  # type: ignore[assignment]
    legacy = sorted(set(used) & LEGACY_NAMES)
    if legacy:
        extra["legacy_flags"] = " ".join(legacy)
    model_path = known.get("model_path")
    try:
        serving = ServingConfig(
            tp=tp, dp=dp, enable_dp_attention=dp_attention,
            gamma=known.get("speculative_dspark_block_size"),  # type: ignore[arg-type]
            # SGLang's own "no speculation" spellings plan as plain decode
            speculative_algorithm=(str(algo).upper() if algo is not None and str(algo).upper()
                                   not in NO_SPECULATION else None),
            cuda_graph_max_bs=int(max_bs) if max_bs is not None else None,
            cuda_graph_bs=tuple(int(b) for b in bs_list) if bs_list is not None else None,
            max_running_requests=known.get("max_running_requests"),  # type: ignore[arg-type]
            disable_cuda_graph=disabled,
            disable_cuda_graph_padding=bool(known.get("disable_cuda_graph_padding", False)),
            model_path=str(model_path) if model_path is not None else None,
            env=env,
            extra_flags={k: (v if isinstance(v, (str, bool)) else str(v)) for k, v in extra.items()},
            context_length=known.get("context_length"),  # type: ignore[arg-type]
        )
    except (TypeError, ValueError, OverflowError) as e:
        raise UsageError(f"launch line: --cuda-graph-config has a value of the wrong type ({e})"
                         ) from None
    return serving, serving.model_path
