"""The SGLang client over real HTTP on loopback: shapes, retries, timeouts, garbage.

The last tests read the real sglang 0.5.23 wheel to check that what the client
sends is accepted by SGLang's request contract and that the response fields it
reads are the ones SGLang writes.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from toyserver import ToyConfig, ToyServer, closed_port_url, healthy_tokens, token_id

from dsparkctl.errors import UsageError
from dsparkctl.sglang_client import (
    BadResponse,
    EndpointTimeout,
    EndpointUnreachable,
    SGLangClient,
    avg_spec_accept_length,
    build_generate_body,
    parse_endpoint,
    parse_generate_response,
)


@pytest.fixture
def toy() -> Iterator[ToyServer]:
    srv = ToyServer(ToyConfig()).start()
    yield srv
    srv.stop()


def client(url: str, **kw: object) -> SGLangClient:
    sleeps: list[float] = []
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("backoff_s", 0.01)
    c = SGLangClient(url, sleep=sleeps.append, **kw)  # type: ignore[arg-type]
    c.sleeps = sleeps  # type: ignore[attr-defined]
    return c


def test_generate_returns_text_ids_and_spec_metrics(toy: ToyServer) -> None:
    g = client(toy.url).generate("Explain B-trees.", max_new_tokens=64)
    toks = healthy_tokens("Explain B-trees.", 64)
    assert g.text == "".join(toks).lstrip()
    assert g.output_ids == tuple(token_id(t) for t in toks)
    assert g.completion_tokens == 64 and g.finish_reason == "length"
    assert g.spec_verify_ct == 16 and g.spec_accept_length == pytest.approx(4.0)
    assert g.attempts == 1 and g.elapsed_s > 0
    [body] = toy.state.bodies
    assert body == {"text": "Explain B-trees.", "stream": False,
                    "sampling_params": {"temperature": 0.0, "max_new_tokens": 64,
                                        "ignore_eos": True}}


def test_health_and_server_info(toy: ToyServer) -> None:
    c = client(toy.url)
    c.health()
    c.generate("x", max_new_tokens=42)
    info = c.server_info()
    assert avg_spec_accept_length(info) == pytest.approx(42 / 11)  # ceil(42 / 4.1) verifies
    assert toy.state.paths[-1] == "/server_info"


def test_server_info_falls_back_to_the_old_name(toy: ToyServer) -> None:
    toy.cfg.server_info_404 = True
    info = client(toy.url).server_info()
    assert info["version"] == "0.5.23"
    assert toy.state.paths[-2:] == ["/server_info", "/get_server_info"]


def test_health_503_is_a_clear_error(toy: ToyServer) -> None:
    toy.cfg.health_status = 503
    with pytest.raises(BadResponse, match="HTTP 503") as exc:
        client(toy.url, retries=1).health()
    assert exc.value.status == 503


def test_timeout_is_bounded_and_not_retried(toy: ToyServer) -> None:
    toy.cfg.mode, toy.cfg.delay_s = "slow", 3.0
    c = client(toy.url, timeout_s=0.4, retries=3)
    t0 = time.monotonic()
    with pytest.raises(EndpointTimeout, match=r"no answer within 0\.4 s"):
        c.generate("x", max_new_tokens=8)
    assert time.monotonic() - t0 < 2.0
    assert toy.state.generate_calls == 1


def test_5xx_is_retried_with_backoff_then_recovers(toy: ToyServer) -> None:
    toy.cfg.mode, toy.cfg.fail_first = "erroring", 2
    c = client(toy.url, retries=2, backoff_s=0.05)
    g = c.generate("x", max_new_tokens=8)
    assert g.attempts == 3 and g.completion_tokens == 8
    assert c.sleeps == [0.05, 0.1]  # type: ignore[attr-defined]


def test_5xx_forever_gives_up_after_the_retries(toy: ToyServer) -> None:
    toy.cfg.mode, toy.cfg.fail_first = "erroring", 10**6
    with pytest.raises(BadResponse, match="HTTP 500 after 3 attempt") as exc:
        client(toy.url, retries=2).generate("x", max_new_tokens=8)
    assert "illegal memory access" in str(exc.value)
    assert toy.state.generate_calls == 3


def test_4xx_is_not_retried_and_shows_the_server_message(toy: ToyServer) -> None:
    toy.cfg.allowed_sampling_keys = frozenset({"temperature", "max_new_tokens"})
    with pytest.raises(BadResponse, match=r"HTTP 400: SamplingParams: unknown field.*ignore_eos"):
        client(toy.url, retries=3).generate("x", max_new_tokens=8)
    assert toy.state.generate_calls == 1


@pytest.mark.parametrize(("mode", "match"), [
    ("malformed", "body is not JSON"),
    ("wrongshape", "no string 'text'"),
])
def test_garbage_answers(toy: ToyServer, mode: str, match: str) -> None:
    toy.cfg.mode = mode
    with pytest.raises(BadResponse, match=match):
        client(toy.url).generate("x", max_new_tokens=8)


def test_unreachable_is_bounded() -> None:
    c = client(closed_port_url(), retries=2, backoff_s=0.05)
    t0 = time.monotonic()
    with pytest.raises(EndpointUnreachable, match="connection refused"):
        c.generate("x", max_new_tokens=8)
    assert time.monotonic() - t0 < 2.0
    assert c.sleeps == [0.05, 0.1]  # type: ignore[attr-defined]


def test_non_http_listener_is_a_bad_response() -> None:
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        with pytest.raises(BadResponse, match="not an HTTP answer"):
            client(f"http://127.0.0.1:{port}", retries=0).generate("x", max_new_tokens=4)
    finally:
        srv.close()


def test_parse_generate_response_shapes() -> None:
    ok = {"text": "hi", "output_ids": [1, 2], "meta_info": {"completion_tokens": 2}}
    assert parse_generate_response([ok]).output_ids == (1, 2)
    assert parse_generate_response({"text": "hi"}).output_ids is None
    with pytest.raises(BadResponse, match="not a list of integers"):
        parse_generate_response({"text": "hi", "output_ids": ["a"]})
    with pytest.raises(BadResponse, match="aborted"):
        parse_generate_response({"text": "", "meta_info": {
            "finish_reason": {"type": "abort", "message": "out of memory"}}})
    with pytest.raises(BadResponse, match="server error"):
        parse_generate_response({"error": {"message": "boom"}})


def test_avg_spec_accept_length_over_dp_ranks() -> None:
    info = {"internal_states": [{"avg_spec_accept_length": 4.0},
                                {"avg_spec_accept_length": 3.0}, {"other": 1}]}
    assert avg_spec_accept_length(info) == pytest.approx(3.5)
    assert avg_spec_accept_length({"internal_states": [{}]}) is None
    assert avg_spec_accept_length({}) is None


@pytest.mark.parametrize(("url", "expect"), [
    ("127.0.0.1:30000", "http://127.0.0.1:30000"),
    ("http://gpu-node-3:30000/", "http://gpu-node-3:30000"),
    ("https://gw.example/sglang", "https://gw.example:443/sglang"),
    ("http://[::1]:8000", "http://[::1]:8000"),
])
def test_parse_endpoint(url: str, expect: str) -> None:
    assert parse_endpoint(url).url == expect


@pytest.mark.parametrize("url", ["", "ftp://h:1", "http://:30000", "http://h:99999",
                                 "http://h:1/?q=1"])
def test_parse_endpoint_rejects(url: str) -> None:
    with pytest.raises(UsageError):
        parse_endpoint(url)


# ------------------------------------------------------------ the real wheel


def _struct_fields(source: str, cls: str) -> set[str]:
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return {s.target.id for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


@pytest.mark.network
def test_request_and_response_match_real_sglang_0_5_23(wheels: object) -> None:
    root = Path(wheels.unpacked("sglang", "0.5.23"))  # type: ignore[attr-defined]
    api = (root / "sglang/api/v1/api_types.py").read_text()
    body = build_generate_body("x", max_new_tokens=8)
    assert set(body) <= _struct_fields(api, "GenerateRequest")
    sampling_keys = _struct_fields(api, "SamplingParams")
    assert set(body["sampling_params"]) <= sampling_keys
    # the fields the client reads are the ones SGLang writes
    tm = (root / "sglang/srt/managers/tokenizer_manager.py").read_text()
    for key in ('"output_ids"', '"meta_info"', '"text"', '"completion_tokens"',
                '"spec_accept_length"', '"spec_accept_rate"', '"spec_verify_ct"',
                '"finish_reason"'):
        assert key in tm, key
    http = (root / "sglang/srt/entrypoints/http_server.py").read_text()
    for route in ('@app.get("/health")', '@app.get("/server_info")',
                  '@app.get("/get_server_info")', '"/generate"'):
        assert route in http, route
    internal = (root / "sglang/srt/managers/scheduler_components/internal_state.py").read_text()
    assert 'state["avg_spec_accept_length"]' in internal
    # and the toy server, enforcing the real key set, accepts the client's request
    srv = ToyServer(ToyConfig(allowed_sampling_keys=frozenset(sampling_keys))).start()
    try:
        assert client(srv.url).generate("x", max_new_tokens=8).completion_tokens == 8
    finally:
        srv.stop()


def test_endpoint_errors_never_echo_credentials() -> None:
    import pytest as _pytest

    from dsparkctl.errors import UsageError
    from dsparkctl.sglang_client import parse_endpoint

    for url in ("http://h:1/?api_key=SECRET123", "http://user:SECRET123@h:1/"):
        with _pytest.raises(UsageError) as exc:
            parse_endpoint(url)
        assert "SECRET123" not in str(exc.value)


def test_numbers_no_float_holds_read_as_missing() -> None:
    """NaN, +-inf and an integer of hundreds of digits: a metric that is not a finite number
    is missing, never an exception in the middle of the smoke."""
    from dsparkctl.sglang_client import Generation

    for bad in (float("nan"), float("inf"), 10 ** 400, True, "12"):
        g = Generation(text="x", output_ids=(1, 2, 3), meta_info={
            "completion_tokens": bad, "spec_verify_ct": bad, "spec_accept_length": bad},
            elapsed_s=0.1)
        assert g.completion_tokens == 3  # from the ids
        assert g.spec_verify_ct is None and g.spec_accept_length is None
