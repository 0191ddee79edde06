"""The environment variables that change how a DSpark server behaves, safe to print.

Reports get pasted into issues and chat, so two rules hold together:
only an allow-list of names is reported (``HOME``, ``PATH`` and the rest of a
shell's environment say nothing about the serving stack and leak user
details), and within it any name that looks like a credential has its value
replaced, because allow-listed prefixes (``HF_``, ``SGLANG_``...) also cover
tokens and API keys. Values of kept names still get credentials embedded in
URLs (``https://user:pass@host``, ``?token=...``) masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

REDACTED = "<redacted>"

# Names reported in full when set. Prefixes cover whole families whose
# members change between releases (SGLANG_*, NCCL_*...).
ALLOWED_PREFIXES: tuple[str, ...] = (
    "CUDA_",  # CUDA_VISIBLE_DEVICES, CUDA_HOME, CUDA_LAUNCH_BLOCKING, CUDA_MODULE_LOADING...
    "NCCL_",  # NCCL_P2P_DISABLE on PCIe-only boxes (KNOWLEDGE §5)
    "TORCH_",  # TORCH_CUDA_ARCH_LIST, TORCH_NCCL_*
    "TORCHINDUCTOR_",
    "PYTORCH_",  # PYTORCH_CUDA_ALLOC_CONF=expandable_segments breaks graph capture
    "SGLANG_",  # SGLANG_SM120_FLASHMLA_BACKEND...
    "SGL_",  # older SGLang spellings
    "FLASHINFER_",  # FLASHINFER_CUDA_ARCH_LIST, FLASHINFER_DISABLE_VERSION_CHECK...
    "TVM_FFI_",
    "TRITON_",
    "VLLM_",
    "CUTE_DSL_",
    "CUTLASS_",
    "NVIDIA_",  # container runtime: NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES
    "NVSHMEM_",
    "DG_",  # DeepGEMM JIT
    "HF_",  # HF_HOME, HF_HUB_OFFLINE (HF_TOKEN is redacted by name)
    "TRANSFORMERS_",
    "UCX_",
    "GLOO_",
    "NVCC_",  # NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS / NVCC_CCBIN reach every JIT build
    "DSPARKCTL_",  # DSPARKCTL_ROUTE overrides the installed router's mode in the server
)

ALLOWED_NAMES: frozenset[str] = frozenset({
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "MAX_JOBS",  # ninja parallelism of FlashInfer / torch extension JIT builds
    "CC",
    "CXX",
    "OMP_NUM_THREADS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "HUGGING_FACE_HUB_TOKEN",  # listed so that its presence shows, value redacted
})

# A name containing any of these is a secret, whatever its prefix.
_SECRET_SUBSTRINGS: tuple[str, ...] = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CRED",
    "AUTH", "PRIVATE", "SESSION", "COOKIE", "SIGNATURE", "BEARER",
)
# Short words that are secrets only as a whole ``_``-separated part
# (``PASS`` but not ``BYPASS``, ``PAT`` but not ``PATH``, ``PW`` but not ``PWR``).
_SECRET_PARTS: frozenset[str] = frozenset({"PASS", "PWD", "PW", "PAT", "SAS", "JWT", "CERT",
                                           "OTP"})

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_QUERY_SECRET = re.compile(
    r"(?P<key>[?&;](?:[A-Za-z0-9_.-]*(?:token|key|secret|password|passwd|sig|signature|auth|credential)"
    r"[A-Za-z0-9_.-]*)=)(?P<value>[^&;#\s]+)",
    re.IGNORECASE,
)


def is_secret_name(name: str) -> bool:
    """True when a variable's name says its value is a credential."""
    upper = name.upper()
    if any(s in upper for s in _SECRET_SUBSTRINGS):
        return True
    return any(part in _SECRET_PARTS for part in re.split(r"[^A-Z0-9]+", upper))


def is_allowed(name: str) -> bool:
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def redact_value(value: str) -> str:
    """Mask credentials embedded in a value (URL user:password, token query parameters)."""
    value = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", value)
    return _QUERY_SECRET.sub(lambda m: f"{m['key']}{REDACTED}", value)


def collect(environ: Mapping[str, str]) -> dict[str, str]:
    """Allow-listed variables, sorted by name, secrets redacted; safe to print or post."""
    out: dict[str, str] = {}
    for name in sorted(environ):
        if not is_allowed(name):
            continue
        value = environ[name]
        out[name] = REDACTED if is_secret_name(name) else redact_value(value)
    return out
