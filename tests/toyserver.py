"""A loopback HTTP server speaking SGLang's native API over a deterministic toy generator.

The smoke client must be tested against real HTTP (timeouts, refused
connections, 5xx, garbage bodies), but a real SGLang server needs a GPU and a
model. This server answers ``/generate``, ``/server_info``,
``/get_server_info`` and ``/health`` with SGLang 0.5.23's shapes (``text``,
``output_ids``, ``meta_info`` with ``finish_reason``/``completion_tokens``/
``spec_*``; ``internal_states[*].avg_spec_accept_length``), and checks
requests the way SGLang does: ``sampling_params`` keys outside the allowed
set are a 400 (pass the set read from the real wheel to make that check
exact). What it generates is decided by ``ToyConfig.mode``:

healthy     varied prose from a generator seeded by the prompt
degenerate  healthy for ``after`` tokens, then " the," forever (seed 000's signature)
garbled     healthy for ``after`` tokens, then U+FFFD and single-letter spray
diverge     healthy for ``after`` tokens, then a different (still healthy) continuation
slow        healthy, after sleeping ``delay_s`` (past the client's timeout)
erroring    HTTP 500 for the first ``fail_first`` /generate calls, then healthy
malformed   HTTP 200 with an HTML body
wrongshape  HTTP 200 with JSON that is not SGLang's (OpenAI-style ``choices``)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Fields of sglang 0.5.23 api/v1/api_types.py::SamplingParams that our client may send;
# tests that have the real wheel replace this with the full set read from it.
DEFAULT_SAMPLING_KEYS = frozenset({"temperature", "max_new_tokens", "ignore_eos", "top_p",
                                   "top_k", "stop", "min_new_tokens"})

_ADJ = ("balanced", "narrow", "sorted", "recent", "hidden", "early", "quiet", "distant", "fresh",
        "steady", "broken", "careful", "simple", "heavy", "bright", "open", "minor", "usual")
_NOUN = ("tree", "node", "harbour", "ledger", "kernel", "river", "engine", "lantern", "market",
         "garden", "signal", "bridge", "archive", "window", "record", "letter", "tower", "field",
         "page", "cache", "island", "clock", "mill", "keeper")
_VERB = ("moves", "holds", "splits", "guards", "reaches", "follows", "crosses", "marks", "keeps",
         "carries", "finds", "joins", "fills", "turns", "measures", "warns")
_PREP = ("beside", "under", "across", "behind", "within", "toward", "beyond", "near")
_ADV = ("slowly", "again", "today", "carefully", "often", "later", "quietly", "soon")
_PUNCT = (",", ".", "\n\n")
_GARBAGE = ("\ufffd", " t", " h", " e", " r", " e", " i", " s", " a", "\ufffd", " n")

VOCAB: list[str] = (["<pad>", " the", " The", " a", " and", " of", " to"]
                    + [" " + w for w in _ADJ + _NOUN + _VERB + _PREP + _ADV]
                    + [" " + w.capitalize() for w in _ADJ + _NOUN]
                    + list(_PUNCT) + list(dict.fromkeys(_GARBAGE)))
TOKEN_ID = {t: i for i, t in enumerate(VOCAB)}


def _sentence(rng: random.Random) -> list[str]:
    adj1, noun1 = rng.choice(_ADJ), rng.choice(_NOUN)
    toks = [" The", " " + adj1, " " + noun1, " " + rng.choice(_VERB)]
    toks += [" the", " " + rng.choice(_ADJ), " " + rng.choice(_NOUN)]
    if rng.random() < 0.5:
        toks += [",", " " + rng.choice(_ADV)]
    if rng.random() < 0.6:
        toks += [" " + rng.choice(_PREP), " the", " " + rng.choice(_NOUN)]
    if rng.random() < 0.4:
        toks += [" and", " " + rng.choice(_VERB), " a", " " + rng.choice(_ADJ),
                 " " + rng.choice(_NOUN)]
    toks.append(".")
    if rng.random() < 0.2:
        toks.append("\n\n")
    return toks


def healthy_tokens(seed: str, n: int, *, start: int = 0) -> list[str]:
    """``n`` tokens of varied prose, deterministic in ``seed``; ``start`` skips a prefix."""
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    out: list[str] = []
    while len(out) < start + n:
        out.extend(_sentence(rng))
    return out[start:start + n]


_NEEDLE = re.compile(r"combination of the archivist's iron locker in the customs house is "
                     r"([\d-]+)")


def token_id(tok: str) -> int:
    """Vocabulary ids; tokens outside it (a retrieved needle) get a stable id past the vocab."""
    return TOKEN_ID.get(tok, len(VOCAB) + zlib.crc32(tok.encode()) % 100_000)


def generate_tokens(cfg: ToyConfig, prompt: str, n: int) -> list[str]:
    """The toy answers a needle prompt by quoting the needle first, like a healthy model.

    ``cfg.after`` counts every token from the start of the answer.
    """
    m = _NEEDLE.search(prompt)
    lead = [" The", " combination", " is", " " + m.group(1), "."] if m else []
    healthy = (lead + healthy_tokens(prompt, n))[:n]
    head = healthy[:min(n, cfg.after)]
    if cfg.mode == "degenerate":
        loop = [" the", ","] * ((n - len(head)) // 2 + 1)
        return (head + loop)[:n]
    if cfg.mode == "garbled":
        tail = healthy_tokens(prompt + "#tail", max(0, n - len(head)))
        for k in range(0, len(tail), 40):  # a burst of garbage every 40 tokens
            tail[k:k + len(_GARBAGE)] = list(_GARBAGE)
        return (head + tail)[:n]
    if cfg.mode == "diverge":
        return head + healthy_tokens(prompt + "#other", n - len(head))
    if cfg.mode == "paraloop":  # a whole ~100-token paragraph, repeated (period > 64)
        unit = healthy_tokens(prompt + "#para", 100)
        return (head + unit * (n // 100 + 1))[:n]
    if cfg.mode == "blank":  # the answer turns into line breaks
        return (head + ["\n"] * n)[:n]
    return healthy


@dataclass
class ToyConfig:
    mode: str = "healthy"
    after: int = 120  # tokens before degenerate/garbled/diverge kicks in
    delay_s: float = 0.0  # slow mode: sleep before answering /generate
    fail_first: int = 0  # erroring mode: this many /generate calls answer 500
    accept_length: float | None = 4.1  # None: a spec-off server (no spec_* in meta_info)
    server_info_404: bool = False  # only the pre-rename /get_server_info exists
    health_status: int = 200
    return_ids: bool = True
    allowed_sampling_keys: frozenset[str] = DEFAULT_SAMPLING_KEYS


@dataclass
class ToyState:
    generate_calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    accept_lengths: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _ToyHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet tests
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def do_GET(self) -> None:
        cfg, st = self.server.cfg, self.server.state
        with st.lock:
            st.paths.append(self.path)
        if self.path in ("/health", "/health_generate"):
            self._send(cfg.health_status, b"")
        elif self.path == "/server_info" and cfg.server_info_404:
            self._json(404, {"detail": "Not Found"})
        elif self.path in ("/server_info", "/get_server_info"):
            states: list[dict[str, Any]] = [{"last_gen_throughput": 123.4}]
            with st.lock:
                if cfg.accept_length is not None and st.accept_lengths:
                    states[0]["avg_spec_accept_length"] = (sum(st.accept_lengths)
                                                           / len(st.accept_lengths))
            self._json(200, {"model_path": "toy/DeepSeek-V4-Flash", "tp_size": 1,
                             "internal_states": states, "version": "0.5.23",
                             "frontend": "python"})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        cfg, st = self.server.cfg, self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with st.lock:
            st.paths.append(self.path)
        if self.path != "/generate":
            self._json(404, {"detail": "Not Found"})
            return
        with st.lock:
            st.generate_calls += 1
            call = st.generate_calls
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            self._generate(cfg, st, raw, call)
        finally:
            with st.lock:
                st.in_flight -= 1

    def _generate(self, cfg: ToyConfig, st: ToyState, raw: bytes, call: int) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, {"error": "body is not JSON"})
            return
        with st.lock:
            st.bodies.append(body)
        # The checks SGLang's api_contract makes before generating (HTTP 400).
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            self._json(400, {"error": "GenerateRequest.text: expected a string"})
            return
        sp = body.get("sampling_params") or {}
        unknown = sorted(set(sp) - cfg.allowed_sampling_keys) if isinstance(sp, dict) else ["?"]
        if unknown:
            self._json(400, {"error": f"SamplingParams: unknown field(s) {unknown}"})
            return
        if cfg.mode == "slow":
            time.sleep(cfg.delay_s)
        if cfg.mode == "trickle_headers":  # a header line every delay_s, never a body
            # the client gives up mid-way: stop quietly (socketserver would print a traceback
            # into whatever test captures stderr next)
            with contextlib.suppress(OSError):
                self.send_response(200)
                for k in range(90):
                    self.send_header(f"X-Slow-{k}", "x")
                    self.flush_headers()
                    time.sleep(cfg.delay_s)
                self.end_headers()
            return
        if cfg.mode == "erroring" and call <= cfg.fail_first:
            self._json(500, {"error": {"message": "CUDA error: an illegal memory access"}})
            return
        if cfg.mode == "malformed":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            return
        if cfg.mode == "wrongshape":
            self._json(200, {"choices": [{"text": "hello"}], "object": "text_completion"})
            return
        n = int(sp.get("max_new_tokens", 128))
        toks = generate_tokens(cfg, body["text"], n)
        text = "".join(toks).lstrip()
        meta: dict[str, Any] = {
            "id": f"toy-{call}",
            "finish_reason": {"type": "length", "length": n},
            "prompt_tokens": len(body["text"].split()),
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": len(toks),
            "cached_tokens": 0,
        }
        if cfg.accept_length is not None:
            verify_ct = max(1, math.ceil(len(toks) / cfg.accept_length))
            meta.update({"spec_accept_rate": (len(toks) / verify_ct - 1) / 4,
                         "spec_accept_length": len(toks) / verify_ct,
                         "spec_num_correct_drafts": len(toks) - verify_ct,
                         "spec_num_proposed_drafts": verify_ct * 4,
                         "spec_verify_ct": verify_ct})
            with st.lock:
                st.accept_lengths.append(len(toks) / verify_ct)
        if cfg.mode == "nan":  # Python's json writes NaN / Infinity; SGLang could too
            meta.update(completion_tokens=float("nan"), spec_verify_ct=float("inf"))
        out: dict[str, Any] = {"text": text, "meta_info": meta}
        if cfg.return_ids:
            out["output_ids"] = [token_id(t) for t in toks]
        if cfg.mode == "trickle":  # headers at once, then a few bytes every delay_s
            body = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up: stop quietly
                for k in range(0, len(body), 64):
                    self.wfile.write(body[k:k + 64])
                    self.wfile.flush()
                    time.sleep(cfg.delay_s)
            return
        self._json(200, out)


class _ToyHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cfg = cfg
        self.state = ToyState()


class ToyServer:
    """Start with ``start()``, stop with ``stop()``; ``cfg`` may be changed between requests."""

    def __init__(self, cfg: ToyConfig | None = None) -> None:
        self._srv = _ToyHTTPServer(cfg or ToyConfig())
        self._thread = threading.Thread(target=self._srv.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def cfg(self) -> ToyConfig:
        return self._srv.cfg

    @property
    def state(self) -> ToyState:
        return self._srv.state

    @property
    def url(self) -> str:
        host, port = self._srv.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ToyServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join(timeout=5)


def closed_port_url() -> str:
    """An address where nothing listens: connections are refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
