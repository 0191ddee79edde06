"""Environment allow-list and redaction: reports get pasted into public issues."""

from __future__ import annotations

import pytest

from dsparkctl import envvars
from dsparkctl.envvars import REDACTED

ENV = {
    "HOME": "/root",
    "PATH": "/usr/bin",
    "USER": "root",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "HF_TOKEN": "hf_abcdefghijklmnop",
    "HF_HOME": "/data/hf",
    "SGLANG_API_KEY": "sk-live-123",
    "SGLANG_SM120_FLASHMLA_BACKEND": "flashinfer",
    "NCCL_P2P_DISABLE": "1",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    "FLASHINFER_CUDA_ARCH_LIST": "12.0f",
    "TORCH_CUDA_ARCH_LIST": "12.0",
    "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    "HUGGING_FACE_HUB_TOKEN": "hf_zzzz",
    "VLLM_ENDPOINT": "https://alice:s3cr3t@mirror.example.com/simple",
    "SGLANG_MODEL_URL": "https://hub.example.com/model?revision=main&token=abc123&x=1",
    "NVIDIA_VISIBLE_DEVICES": "all",
    "CUTE_DSL_ARCH": "sm_120a",
}


def test_collect_keeps_allow_listed_and_redacts_secrets() -> None:
    out = envvars.collect(ENV)
    # Secrets inside allow-listed families are listed (their presence matters) but masked.
    assert out["HF_TOKEN"] == REDACTED
    assert out["SGLANG_API_KEY"] == REDACTED
    assert out["HUGGING_FACE_HUB_TOKEN"] == REDACTED
    # Secrets outside the allow-list are not even named.
    assert "AWS_SECRET_ACCESS_KEY" not in out
    # The settings the doctor's rules read come through verbatim.
    for name in ("NCCL_P2P_DISABLE", "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
                 "FLASHINFER_CUDA_ARCH_LIST", "TORCH_CUDA_ARCH_LIST", "LD_LIBRARY_PATH",
                 "SGLANG_SM120_FLASHMLA_BACKEND", "HF_HOME", "NVIDIA_VISIBLE_DEVICES",
                 "CUTE_DSL_ARCH"):
        assert out[name] == ENV[name], name
    # Unrelated shell state is not reported.
    for name in ("HOME", "PATH", "USER"):
        assert name not in out
    assert list(out) == sorted(out)


def test_no_secret_value_survives_anywhere() -> None:
    text = repr(envvars.collect(ENV))
    for secret in ("wJalrXUtnFEMI", "hf_abcdefghijklmnop", "sk-live-123", "hf_zzzz", "s3cr3t",
                   "abc123"):
        assert secret not in text


def test_url_credentials_masked_but_url_kept() -> None:
    out = envvars.collect(ENV)
    assert out["VLLM_ENDPOINT"] == f"https://{REDACTED}@mirror.example.com/simple"
    assert out["SGLANG_MODEL_URL"] == (
        f"https://hub.example.com/model?revision=main&token={REDACTED}&x=1")


@pytest.mark.parametrize("name", [
    "HF_TOKEN", "SGLANG_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "DB_PASSWORD",
    "MYSQL_PWD", "SMTP_PASS", "OPENAI_APIKEY", "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_PRIVATE_KEY_PATH", "SGLANG_AUTH", "WANDB_SESSION", "huggingfacehub_api_token",
    "HF_CREDS", "SGLANG_ADMIN_CREDS", "SGLANG_DB_PW", "db_pw",
])
def test_secret_names(name: str) -> None:
    assert envvars.is_secret_name(name)


@pytest.mark.parametrize("name", [
    "NCCL_P2P_DISABLE", "CUDA_VISIBLE_DEVICES", "PATH", "LD_LIBRARY_PATH", "NCCL_BYPASS_X",
    "FLASHINFER_CUDA_ARCH_LIST", "PYTORCH_CUDA_ALLOC_CONF", "SGLANG_SM120_FLASHMLA_BACKEND",
    "HF_HOME", "NCCL_PWR_LIMIT", "NVIDIA_DRIVER_CAPABILITIES",
])
def test_not_secret_names(name: str) -> None:
    assert not envvars.is_secret_name(name)


def test_empty_environment() -> None:
    assert envvars.collect({}) == {}
