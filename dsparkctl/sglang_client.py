"""A small, dependency-free client for SGLang's native HTTP API.

``smoke --endpoint`` must run from any machine (a laptop, a CI runner, the
head node) against a server somewhere else, so this speaks plain HTTP with
the standard library: no ``requests``, no sglang import. It talks to the
native endpoints because only they return what a corruption hunt needs:
``/generate`` answers ``text``, ``output_ids`` (the exact token ids, for
token-exact comparison) and ``meta_info`` with the speculative counters
(``spec_accept_length``, ``spec_accept_rate``, ``spec_verify_ct``,
``completion_tokens``); ``/server_info`` (``/get_server_info`` before 0.5.20-ish,
still served as a deprecated alias in 0.5.23) carries
``internal_states[*].avg_spec_accept_length``. Shapes checked against
sglang 0.5.23 ``srt/entrypoints/http_server.py`` and
``srt/managers/tokenizer_manager.py``.

Every call is bounded: one deadline per request (headers and body included), a fixed number of
retries with capped exponential backoff for connection failures and 5xx
answers, and no retry for 4xx, timeouts or garbage (retrying a 1000-token
generation that already took the whole timeout would only double the wait).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dsparkctl.errors import UsageError

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
_MAX_BODY_BYTES = 64 * 2**20  # a 1000-token answer is kilobytes; this is a sanity bound


class EndpointError(Exception):
    """The server could not be used. ``kind`` says how, for the finding id."""

    kind = "error"

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class EndpointUnreachable(EndpointError):
    """No HTTP conversation at all: refused, reset, DNS, TLS."""

    kind = "unreachable"


class EndpointTimeout(EndpointError):
    """The server accepted the request but sent nothing for ``timeout`` seconds."""

    kind = "timeout"


class BadResponse(EndpointError):
    """The server answered, but not with what SGLang answers (non-JSON, wrong shape, 4xx/5xx)."""

    kind = "bad-response"


@dataclass(frozen=True)
class Generation:
    """One ``/generate`` answer, reduced to what the smoke checks read."""

    text: str
    output_ids: tuple[int, ...] | None
    meta_info: dict[str, Any]
    elapsed_s: float
    attempts: int = 1

    @property
    def completion_tokens(self) -> int | None:
        v = _finite(self.meta_info.get("completion_tokens"))
        return int(v) if v is not None else (
            len(self.output_ids) if self.output_ids is not None else None)

    @property
    def finish_reason(self) -> str | None:
        fr = self.meta_info.get("finish_reason")
        if isinstance(fr, dict):
            return str(fr.get("type")) if fr.get("type") is not None else None
        return str(fr) if fr is not None else None

    def _num(self, key: str) -> float | None:
        return _finite(self.meta_info.get(key))

    @property
    def spec_accept_length(self) -> float | None:
        return self._num("spec_accept_length")

    @property
    def spec_accept_rate(self) -> float | None:
        return self._num("spec_accept_rate")

    @property
    def spec_verify_ct(self) -> int | None:
        v = self._num("spec_verify_ct")
        return int(v) if v is not None else None


@dataclass(frozen=True)
class Endpoint:
    """A parsed server address: scheme, host, port and an optional path prefix."""

    scheme: str
    host: str
    port: int
    prefix: str = ""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"


def parse_endpoint(url: str) -> Endpoint:
    """``http://host:port[/prefix]``; a bare ``host:port`` means http. Bad input is a UsageError.

    Error messages echo the URL with credentials redacted: a key pasted into the URL must not
    land in CI logs; a URL with ``user:pass@`` is refused (this client would drop it silently).
    """
    from dsparkctl.envvars import redact_value

    raw = url.strip()
    shown = repr(redact_value(raw))
    if not raw:
        raise UsageError("--endpoint is empty; give the server's URL, e.g. http://10.0.0.5:30000")
    if "://" not in raw:
        raw = "http://" + raw
    try:
        parts = urllib.parse.urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"cannot parse endpoint URL {shown} ({exc}); "
                         f"expected e.g. http://10.0.0.5:30000") from None
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"endpoint URL {shown} has scheme {parts.scheme!r}; "
                         f"SGLang serves http:// (or https:// behind a proxy)")
    if parts.username or parts.password:
        raise UsageError(f"endpoint URL {shown} carries credentials; pass the key with --api-key "
                         f"or DSPARKCTL_SGLANG_API_KEY instead")
    if not parts.hostname:
        raise UsageError(f"endpoint URL {shown} has no host; expected e.g. http://10.0.0.5:30000")
    if parts.query or parts.fragment:
        raise UsageError(f"endpoint URL {shown} has a query or fragment; give only "
                         f"scheme://host:port[/prefix]")
    default_port = 443 if parts.scheme == "https" else 80
    return Endpoint(parts.scheme, parts.hostname, port or default_port, parts.path.rstrip("/"))


@dataclass
class SGLangClient:
    """Bounded calls to one SGLang server. Thread-safe: every call opens its own connection."""

    base_url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    api_key: str | None = field(default=None, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        self.endpoint = parse_endpoint(self.base_url)
        if self.timeout_s <= 0:
            raise UsageError(f"timeout must be positive, got {self.timeout_s}")
        if self.retries < 0:
            raise UsageError(f"retries must be >= 0, got {self.retries}")

    @property
    def url(self) -> str:
        return self.endpoint.url

    # ------------------------------------------------------------- transport

    def _once(self, method: str, path: str, body: bytes | None,
              timeout_s: float) -> tuple[int, bytes]:
        ep = self.endpoint
        conn_cls = (http.client.HTTPSConnection if ep.scheme == "https"
                    else http.client.HTTPConnection)
        conn = conn_cls(ep.host, ep.port, timeout=timeout_s)
        headers = {"Accept": "application/json", "User-Agent": "dsparkctl-smoke"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # The socket timeout bounds each read, not the answer: a server that trickles its
        # headers or body a byte now and then would hold a request for ever. One deadline
        # covers the whole exchange: a timer shuts the socket down when it passes.
        deadline = time.monotonic() + timeout_s
        expired = threading.Event()
        timer: threading.Timer | None = None
        try:
            conn.request(method, ep.prefix + path, body=body, headers=headers)
            sock = conn.sock  # the response reads through it even after conn lets it go
            if sock is not None:
                timer = threading.Timer(max(0.0, deadline - time.monotonic()),
                                        _shut_down, (sock, expired))
                timer.daemon = True
                timer.start()
            resp = conn.getresponse()
            chunks: list[bytes] = []
            size = 0
            while size <= _MAX_BODY_BYTES:
                chunk = resp.read1(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if expired.is_set():  # the shutdown ended the body early: not an answer
                raise TimeoutError
            return resp.status, b"".join(chunks)
        except (OSError, http.client.HTTPException):
            if expired.is_set():
                raise TimeoutError from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            conn.close()

    def request(self, method: str, path: str, payload: Any = None, *,
                timeout_s: float | None = None, retries: int | None = None
                ) -> tuple[int, bytes, int]:
        """(status, body, attempts). Retries refused/reset connections and 5xx, nothing else."""
        full = f"{self.url}{path}"
        body = json.dumps(payload).encode() if payload is not None else None
        tries = 1 + (self.retries if retries is None else retries)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        last: EndpointError | None = None
        for attempt in range(1, tries + 1):
            if attempt > 1:
                self.sleep(min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 2)))
            try:
                status, data = self._once(method, path, body, timeout)
            except TimeoutError:
                raise EndpointTimeout(
                    f"{method} {full}: no answer within {timeout:g} s (raise --timeout if the "
                    f"server is just slow, or check that it is not stuck)", url=full) from None
            except http.client.HTTPException as exc:
                if isinstance(exc, ConnectionError):  # RemoteDisconnected: closed mid-answer
                    last = EndpointUnreachable(
                        f"{method} {full}: the server closed the connection without an answer "
                        f"after {attempt} attempt(s)", url=full)
                    continue
                raise BadResponse(f"{method} {full}: not an HTTP answer ({_why(exc)}); is this "
                                  f"port an SGLang server?", url=full) from None
            except OSError as exc:
                # refused, reset, DNS, TLS, unreachable network
                last = EndpointUnreachable(
                    f"{method} {full}: cannot reach the server ({_why(exc)}) after "
                    f"{attempt} attempt(s); is it running, and is this the right host:port?",
                    url=full)
                continue
            if len(data) > _MAX_BODY_BYTES:
                raise BadResponse(f"{method} {full}: answer larger than "
                                  f"{_MAX_BODY_BYTES >> 20} MiB; not an SGLang server?", url=full)
            if status >= 500 or status == 429:
                last = BadResponse(
                    f"{method} {full}: HTTP {status} after {attempt} attempt(s): "
                    f"{_snippet(data)}", url=full, status=status)
                continue
            return status, data, attempt
        assert last is not None
        raise last

    def _json(self, method: str, path: str, payload: Any = None, **kw: Any) -> tuple[Any, int]:
        status, data, attempts = self.request(method, path, payload, **kw)
        full = f"{self.url}{path}"
        if status >= 400:
            raise BadResponse(f"{method} {full}: HTTP {status}: {_error_message(data)}",
                              url=full, status=status)
        try:
            # NaN / Infinity (Python's json writes them) read as missing values, so no metric
            # downstream is ever non-finite; a pathologically nested body is garbage too.
            return json.loads(data, parse_constant=lambda _c: None), attempts
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise BadResponse(f"{method} {full}: HTTP {status} but the body is not JSON "
                              f"({_snippet(data)}); is this an SGLang server?",
                              url=full, status=status) from None

    # ------------------------------------------------------------- endpoints

    def health(self, *, timeout_s: float = 30.0) -> None:
        """Raise unless ``/health`` answers 200 (SGLang answers 503 while starting)."""
        status, data, _ = self.request("GET", "/health", timeout_s=min(timeout_s, self.timeout_s))
        if status != 200:
            raise BadResponse(f"GET {self.url}/health: HTTP {status} "
                              f"({_snippet(data) or 'no body'}); the server is not ready",
                              url=f"{self.url}/health", status=status)

    def generate(self, prompt: str, *, max_new_tokens: int, temperature: float = 0.0,
                 ignore_eos: bool = True) -> Generation:
        """One greedy, non-streaming generation."""
        t0 = time.monotonic()
        obj, attempts = self._json("POST", "/generate",
                                   build_generate_body(prompt, max_new_tokens=max_new_tokens,
                                                       temperature=temperature,
                                                       ignore_eos=ignore_eos))
        gen = parse_generate_response(obj, url=f"{self.url}/generate")
        return Generation(gen.text, gen.output_ids, gen.meta_info, time.monotonic() - t0, attempts)

    def server_info(self) -> dict[str, Any]:
        """``/server_info``, or ``/get_server_info`` on servers that predate the rename."""
        try:
            obj, _ = self._json("GET", "/server_info", timeout_s=min(60.0, self.timeout_s))
        except BadResponse as exc:
            if exc.status != 404:
                raise
            obj, _ = self._json("GET", "/get_server_info", timeout_s=min(60.0, self.timeout_s))
        if not isinstance(obj, dict):
            raise BadResponse(f"GET {self.url}/server_info: expected a JSON object, got "
                              f"{type(obj).__name__}", url=f"{self.url}/server_info")
        return obj


def build_generate_body(prompt: str, *, max_new_tokens: int, temperature: float = 0.0,
                        ignore_eos: bool = True) -> dict[str, Any]:
    """The ``/generate`` request. SGLang rejects unknown ``sampling_params`` keys (HTTP 400)."""
    return {
        "text": prompt,
        "sampling_params": {
            "temperature": temperature,
            "max_new_tokens": max_new_tokens,
            "ignore_eos": ignore_eos,
        },
        "stream": False,
    }


def parse_generate_response(obj: Any, *, url: str = "/generate") -> Generation:
    """Check the answer has SGLang's shape; a clear BadResponse if it does not."""
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]  # a batch of one
    if not isinstance(obj, dict):
        raise BadResponse(f"{url}: expected a JSON object with 'text' and 'meta_info', got "
                          f"{type(obj).__name__}", url=url)
    if "error" in obj and "text" not in obj:
        raise BadResponse(f"{url}: server error: {_error_message(json.dumps(obj).encode())}",
                          url=url)
    text = obj.get("text")
    if not isinstance(text, str):
        raise BadResponse(f"{url}: answer has no string 'text' (keys: "
                          f"{', '.join(sorted(map(str, obj))) or 'none'}); not SGLang's "
                          f"native /generate?", url=url)
    meta = obj.get("meta_info", {})
    if not isinstance(meta, dict):
        raise BadResponse(f"{url}: 'meta_info' is {type(meta).__name__}, expected an object",
                          url=url)
    ids_raw = obj.get("output_ids")
    ids: tuple[int, ...] | None = None
    if ids_raw is not None:
        if not isinstance(ids_raw, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids_raw):
            raise BadResponse(f"{url}: 'output_ids' is not a list of integers", url=url)
        ids = tuple(ids_raw)
    fr = meta.get("finish_reason")
    if isinstance(fr, dict) and fr.get("type") == "abort":
        raise BadResponse(f"{url}: the server aborted the request: "
                          f"{fr.get('message') or 'no message'}", url=url)
    return Generation(text, ids, meta, 0.0)


def avg_spec_accept_length(server_info: dict[str, Any]) -> float | None:
    """Mean of ``internal_states[*].avg_spec_accept_length`` over DP ranks, if any report it."""
    states = server_info.get("internal_states")
    if isinstance(states, dict):
        states = [states]
    if not isinstance(states, list):
        return None
    vals = [v for s in states if isinstance(s, dict)
            for v in [_finite(s.get("avg_spec_accept_length"))] if v is not None]
    return sum(vals) / len(vals) if vals else None


def _shut_down(sock: socket.socket, expired: threading.Event) -> None:
    expired.set()
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _finite(v: Any) -> float | None:
    """A JSON number as a float, or None for anything else (bool, NaN, +-inf, text)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return f if math.isfinite(f) else None


def _why(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _snippet(data: bytes, n: int = 160) -> str:
    s = " ".join(data[: n * 4].decode("utf-8", "replace").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _error_message(data: bytes) -> str:
    """SGLang's error bodies: ``{"error": {"message": ...}}``, ``{"error": "..."}``, ``{"detail": ...}``."""
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return _snippet(data) or "no body"
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return _snippet(str(err).encode(), 300)
    return _snippet(data)
